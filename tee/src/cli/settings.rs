//! `acp-tee config`: the effective settings and where each came from.

use super::args::StoreArg;
use crate::config::{self, Config, Key, Source};
use clap::{Args, ValueEnum};
use serde_json::{json, Value};
use std::io::Write;
use std::time::Duration;

pub(super) const CONFIG_ABOUT: &str = "\
Print the effective settings and where each came from: a flag (--db here),
an environment variable, a line of the config file, or the default.

The config file is $ACP_TEE_CONFIG when set (it must exist then), else
$XDG_CONFIG_HOME/acp-tee/config.toml, else ~/.config/acp-tee/config.toml; none
is needed. Each setting has an environment variable, shown in the last column.
Precedence: flag, then environment, then file, then default. A file that is
not TOML, or holds an unknown key or a bad value, is an error naming its line
(exit status 2); a recording warns about it and records without the file.
OTLP header values (OTEL_EXPORTER_OTLP_HEADERS) are never printed.
docs/config.md describes every setting.";

#[derive(Debug, Clone, Copy, ValueEnum)]
pub(super) enum ConfigFormat {
    /// A table
    Text,
    /// One JSON object
    Json,
}

/// Arguments of `acp-tee config`.
#[derive(Debug, Args)]
pub(crate) struct ConfigArgs {
    #[command(flatten)]
    store: StoreArg,
    /// Output format
    #[arg(long, value_enum, default_value = "text")]
    format: ConfigFormat,
}

/// One row: the setting, its value as shown and as JSON, and its source.
struct Row {
    key: Key,
    shown: String,
    value: Value,
    source: Source,
}

fn age(d: Duration) -> String {
    let s = d.as_secs();
    let (n, unit) = [(7 * 86_400, "w"), (86_400, "d"), (3600, "h"), (60, "m")]
        .into_iter()
        .find(|(u, _)| s > 0 && s / u * u == s)
        .map_or((s, "s"), |(u, name)| (s / u, name));
    format!("{n}{unit}")
}

fn rows(c: &Config, store: &StoreArg) -> anyhow::Result<Vec<Row>> {
    let db = store.setting()?;
    let redact = c.record_redact();
    let retention = c.retention();
    let onoff = |b: bool| if b { "on" } else { "off" }.to_owned();
    let unset = || "not set".to_owned();
    Ok(vec![
        Row {
            key: config::DB,
            shown: db.value.display().to_string(),
            value: json!(db.value.display().to_string()),
            source: db.source,
        },
        Row { key: config::REDACT, shown: onoff(redact.value), value: json!(redact.value), source: redact.source },
        Row {
            key: config::REDACT_RULES,
            shown: if c.redact_rules.value.is_empty() {
                "none".to_owned()
            } else {
                serde_json::to_string(&c.redact_rules.value)?
            },
            value: json!(c.redact_rules.value),
            source: c.redact_rules.source.clone(),
        },
        Row {
            key: config::OTLP_ENDPOINT,
            shown: c.otlp_endpoint.value.clone().unwrap_or_else(|| "off".to_owned()),
            value: json!(c.otlp_endpoint.value),
            source: c.otlp_endpoint.source.clone(),
        },
        Row {
            key: config::OTLP_CONTENT,
            shown: onoff(c.otlp_content.value),
            value: json!(c.otlp_content.value),
            source: c.otlp_content.source.clone(),
        },
        Row {
            key: config::OTLP_TRACE_PER,
            shown: c.otlp_trace_per.value.as_str().to_owned(),
            value: json!(c.otlp_trace_per.value.as_str()),
            source: c.otlp_trace_per.source.clone(),
        },
        Row {
            key: config::SERVE_BIND,
            shown: c.serve_bind.value.to_string(),
            value: json!(c.serve_bind.value.to_string()),
            source: c.serve_bind.source.clone(),
        },
        Row {
            key: config::SERVE_PORT,
            shown: c.serve_port.value.to_string(),
            value: json!(c.serve_port.value),
            source: c.serve_port.source.clone(),
        },
        Row {
            key: config::OLDER_THAN,
            shown: retention.older_than.map_or_else(unset, age),
            value: json!(retention.older_than.map(|d| d.as_secs())),
            source: c.older_than.source.clone(),
        },
        Row {
            key: config::KEEP,
            shown: retention.keep.map_or_else(unset, |k| format!("{k} traces")),
            value: json!(retention.keep),
            source: c.keep.source.clone(),
        },
        Row {
            key: config::MAX_SIZE,
            shown: retention.max_size.map_or_else(unset, |b| format!("{b} bytes")),
            value: json!(retention.max_size),
            source: c.max_size.source.clone(),
        },
    ])
}

/// The names of the OTLP headers the environment sets (never their values).
fn otlp_header_names() -> Vec<String> {
    ["OTEL_EXPORTER_OTLP_HEADERS", "OTEL_EXPORTER_OTLP_TRACES_HEADERS"]
        .into_iter()
        .filter_map(|var| std::env::var(var).ok())
        .flat_map(|v| {
            v.split(',').filter_map(|p| p.split_once('=').map(|(k, _)| k.trim().to_owned())).collect::<Vec<_>>()
        })
        .filter(|k| !k.is_empty())
        .collect()
}

/// Runs `acp-tee config` (a config that cannot be used stopped the command
/// before: see `load_config`).
pub(super) fn config_command(a: ConfigArgs) -> anyhow::Result<i32> {
    let c = config::current();
    let rows = rows(c, &a.store)?;
    debug_assert_eq!(rows.iter().map(|r| r.key).collect::<Vec<_>>(), config::KEYS);
    let file = &c.file;
    let file_state = match (file.exists, file.from_env) {
        (true, false) => "found",
        (true, true) => "found; named by ACP_TEE_CONFIG",
        (false, _) => "not found; none is needed",
    };
    let headers = otlp_header_names();
    let mut out = std::io::stdout().lock();
    match a.format {
        ConfigFormat::Json => {
            let doc = json!({
                "file": {
                    "path": file.path.as_ref().map(|p| p.display().to_string()),
                    "exists": file.exists,
                    "named_by": file.from_env.then_some(config::CONFIG_ENV),
                },
                "settings": rows.iter().map(|r| json!({
                    "key": r.key.toml,
                    "value": r.value,
                    "source": r.source.to_string(),
                    "env": r.key.env,
                    "flags": r.key.flags,
                })).collect::<Vec<_>>(),
                "otlp_headers": headers,
            });
            writeln!(out, "{}", serde_json::to_string_pretty(&doc)?)?;
        }
        ConfigFormat::Text => {
            let path = file.path.as_ref().map_or_else(
                || "none (neither HOME nor XDG_CONFIG_HOME is set)".to_owned(),
                |p| p.display().to_string(),
            );
            writeln!(out, "config file: {path} ({file_state})")?;
            writeln!(out)?;
            let head = ["SETTING", "VALUE", "FROM", "ENVIRONMENT"];
            let cells: Vec<[String; 4]> = rows
                .iter()
                .map(|r| [r.key.toml.to_owned(), r.shown.clone(), r.source.to_string(), r.key.env.to_owned()])
                .collect();
            let width = |i: usize| cells.iter().map(|c| c[i].chars().count()).chain([head[i].len()]).max().unwrap_or(0);
            let widths = [width(0), width(1), width(2)];
            let line = |c: [&str; 4]| {
                format!(
                    "{:w0$}  {:w1$}  {:w2$}  {}",
                    c[0],
                    c[1],
                    c[2],
                    c[3],
                    w0 = widths[0],
                    w1 = widths[1],
                    w2 = widths[2]
                )
            };
            writeln!(out, "{}", line(head))?;
            for c in &cells {
                writeln!(out, "{}", line([&c[0], &c[1], &c[2], &c[3]]))?;
            }
            if !headers.is_empty() {
                writeln!(out)?;
                writeln!(out, "OTLP headers from the environment: {} (values not shown)", headers.join(", "))?;
            }
        }
    }
    Ok(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ages_are_shown_in_their_largest_unit() {
        assert_eq!(age(Duration::from_secs(30 * 86_400)), "30d");
        assert_eq!(age(Duration::from_secs(14 * 86_400)), "2w");
        assert_eq!(age(Duration::from_secs(90 * 60)), "90m");
        assert_eq!(age(Duration::from_secs(45)), "45s");
        assert_eq!(age(Duration::ZERO), "0s");
    }
}
