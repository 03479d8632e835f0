//! Tests of the settings: parsing, precedence and errors.

use super::*;
use std::collections::HashMap;

/// Loads with exactly `vars` as the environment.
fn load(vars: &[(&str, &str)]) -> (Config, Vec<ConfigError>) {
    let vars: HashMap<String, String> = vars.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
    Config::load(&move |k| vars.get(k).cloned())
}

/// A config file holding `text`, in a temporary directory.
fn file(text: &str) -> (tempfile::TempDir, String) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("acp-tee").join("config.toml");
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(&path, text).unwrap();
    let p = path.to_str().unwrap().to_owned();
    (dir, p)
}

fn file_error(text: &str) -> (usize, String) {
    match parse_file(Path::new("/c.toml"), text).unwrap_err() {
        ConfigError::File { line, message, .. } => (line, message),
        other => panic!("{other:?}"),
    }
}

#[test]
fn every_variable_is_listed() {
    let listed: Vec<&str> = ENV_VARS[1..].to_vec();
    assert_eq!(listed, KEYS.map(|k| k.env));
    assert_eq!(ENV_VARS[0], CONFIG_ENV);
}

#[test]
fn ages() {
    assert_eq!(parse_age("30d").unwrap(), Duration::from_secs(30 * 86_400));
    assert_eq!(parse_age("12h").unwrap(), Duration::from_secs(12 * 3600));
    assert_eq!(parse_age("90m").unwrap(), Duration::from_secs(90 * 60));
    assert_eq!(parse_age("2w").unwrap(), Duration::from_secs(14 * 86_400));
    assert_eq!(parse_age(" 45 s ").unwrap(), Duration::from_secs(45));
    for bad in ["30", "d", "", "1.5d", "30 days", "-1d", "99999999999999999999d"] {
        let e = parse_age(bad).unwrap_err();
        assert!(e.contains(&format!("`{bad}`")) && e.contains("age"), "{bad}: {e}");
    }
    assert!(parse_age("99999999999999999w").unwrap_err().contains("too long"));
}

#[test]
fn sizes() {
    assert_eq!(parse_size("200MB").unwrap(), 200_000_000);
    assert_eq!(parse_size("1GiB").unwrap(), 1 << 30);
    assert_eq!(parse_size("500k").unwrap(), 500_000);
    assert_eq!(parse_size("4096").unwrap(), 4096);
    assert_eq!(parse_size("10 B").unwrap(), 10);
    assert_eq!(parse_size("1.5gb").unwrap(), 1_500_000_000);
    assert_eq!(parse_size("2TiB").unwrap(), 2 << 40);
    for bad in ["", "MB", "2 GBs", "-1", "1e3", "x"] {
        let e = parse_size(bad).unwrap_err();
        assert!(e.contains("not a size"), "{bad}: {e}");
    }
    assert!(parse_size("99999999999TB").unwrap_err().contains("too large"));
}

#[test]
fn nothing_set_gives_the_defaults() {
    let (c, errors) = load(&[]);
    assert!(errors.is_empty());
    assert_eq!(c, Config::default());
    let (c, errors) = load(&[("HOME", "/nonexistent-home")]);
    assert!(errors.is_empty());
    assert_eq!(c.file.path.as_deref(), Some(Path::new("/nonexistent-home/.config/acp-tee/config.toml")));
    assert!(!c.file.exists);
    assert_eq!(c.serve_port, Setting { value: DEFAULT_PORT, source: Source::Default });
    assert!(!c.record_redact().value);
}

#[test]
fn the_file_is_found_under_xdg_config_home() {
    let (dir, path) = file("db = \"/x/traces.db\"\n");
    let xdg = dir.path().to_str().unwrap();
    let (c, errors) = load(&[("XDG_CONFIG_HOME", xdg), ("HOME", "/nonexistent-home")]);
    assert!(errors.is_empty(), "{errors:?}");
    assert_eq!(c.file, FileInfo { path: Some(path.clone().into()), from_env: false, exists: true });
    assert_eq!(c.db.value.as_deref(), Some(Path::new("/x/traces.db")));
    assert_eq!(c.db.source.to_string(), format!("file {path}:1"));
}

#[test]
fn environment_beats_file_beats_default_and_flag_beats_all() {
    let text = "# settings\ndb = \"/from/file.db\"\n\n[record]\nredact_rules = [\"$.params.cwd\"]\n\n[serve]\nport = 9000\nbind = \"0.0.0.0\"\n\n[otlp]\nendpoint = \"http://collector:4318\"\ntrace_per = \"recording\"\n\n[retention]\nolder_than = \"30d\"\nkeep = 1000\nmax_size = \"2GB\"\n";
    let (_dir, path) = file(text);
    let (c, errors) = load(&[(CONFIG_ENV, &path), ("ACP_TEE_DB", "/from/env.db"), ("ACP_TEE_SERVE_PORT", "9100")]);
    assert!(errors.is_empty(), "{errors:?}");
    assert_eq!(c.db, Setting { value: Some("/from/env.db".into()), source: Source::Env("ACP_TEE_DB") });
    assert_eq!(c.serve_port, Setting { value: 9100, source: Source::Env("ACP_TEE_SERVE_PORT") });
    let at = |line| Source::File { path: path.clone().into(), line };
    assert_eq!(c.serve_bind, Setting { value: "0.0.0.0".parse::<IpAddr>().unwrap(), source: at(9) });
    assert_eq!(c.redact_rules, Setting { value: vec!["$.params.cwd".to_owned()], source: at(5) });
    // Rules without `redact` turn redaction on.
    assert_eq!(c.record_redact(), Setting { value: true, source: at(5) });
    assert_eq!(c.otlp_endpoint.value.as_deref(), Some("http://collector:4318"));
    assert_eq!(c.otlp_trace_per.value, TraceScope::Recording);
    assert_eq!(
        c.retention(),
        Retention {
            older_than: Some(Duration::from_secs(30 * 86_400)),
            keep: Some(1000),
            max_size: Some(2_000_000_000)
        }
    );
    assert_eq!(c.keep.source, at(17));
    let flag = c.db.or_flag(Some(Some("/from/flag.db".into())));
    assert_eq!(flag, Setting { value: Some("/from/flag.db".into()), source: Source::Flag });
    assert_eq!(c.db.or_flag(None), c.db);
    // The environment turns off what the file turned on.
    let (c, errors) = load(&[(CONFIG_ENV, &path), ("ACP_TEE_REDACT", "off"), ("ACP_TEE_OTLP_ENDPOINT", "off")]);
    assert!(errors.is_empty(), "{errors:?}");
    assert_eq!(c.record_redact(), Setting { value: false, source: Source::Env("ACP_TEE_REDACT") });
    assert_eq!(c.otlp_endpoint, Setting { value: None, source: Source::Env("ACP_TEE_OTLP_ENDPOINT") });
}

#[test]
fn the_environment_alone() {
    let (c, errors) = load(&[
        ("ACP_TEE_REDACT_RULES", "$.params.cwd\n\nsk-[a-z]+\n"),
        ("ACP_TEE_OTLP_CONTENT", "yes"),
        ("ACP_TEE_OTLP_TRACE_PER", "recording"),
        ("ACP_TEE_RETENTION_MAX_SIZE", "1GiB"),
        ("ACP_TEE_DB", "~/t.db"),
        ("HOME", "/h"),
        ("ACP_TEE_SERVE_BIND", ""),
    ]);
    assert!(errors.is_empty(), "{errors:?}");
    assert_eq!(c.redact_rules.value, ["$.params.cwd", "sk-[a-z]+"]);
    assert!(c.otlp_content.value);
    assert_eq!(c.otlp_trace_per.value, TraceScope::Recording);
    assert_eq!(c.max_size.value, Some(1 << 30));
    assert_eq!(c.db.value.as_deref(), Some(Path::new("/h/t.db")));
    // Empty is unset.
    assert_eq!(c.serve_bind.source, Source::Default);
}

#[test]
fn a_bad_variable_is_an_error_and_left_out_alone() {
    let (c, errors) = load(&[("ACP_TEE_SERVE_PORT", "http"), ("ACP_TEE_REDACT", "maybe"), ("ACP_TEE_DB", "/ok.db")]);
    assert_eq!(errors.len(), 2, "{errors:?}");
    assert_eq!(
        errors[0].to_string(),
        "ACP_TEE_REDACT=\"maybe\": not a boolean; write 1, true, yes or on, or 0, false, no or off"
    );
    assert_eq!(errors[1].to_string(), "ACP_TEE_SERVE_PORT=\"http\": `http` is not a port (0 to 65535)");
    assert_eq!(c.serve_port.source, Source::Default);
    assert_eq!(c.db.source, Source::Env("ACP_TEE_DB"));
    let (_, errors) = load(&[("ACP_TEE_REDACT_RULES", "$.params[")]);
    assert_eq!(errors.len(), 1, "{errors:?}");
}

#[test]
fn a_file_error_names_its_line() {
    let (line, message) = file_error("db = \"/x.db\"\n[record]\nredact = true\nredcat_rules = []\n");
    assert_eq!(line, 4);
    assert!(message.contains("unknown field `redcat_rules`"), "{message}");
    let (line, message) = file_error("[serve]\n\nport = 99999\n");
    assert_eq!(line, 3);
    assert!(message.starts_with("port: ") && message.contains("u16"), "{message}");
    let (line, message) = file_error("[serve]\nport = \"x\"\n");
    assert_eq!((line, message.as_str()), (2, "port: invalid type: string \"x\", expected u16"));
    let (line, message) = file_error("db = \"/a\"\ndb = \"/b\"\n");
    assert_eq!(line, 2);
    assert!(message.starts_with("db: "), "{message}");
    let (line, message) = file_error("db = \"/x.db\"\n[otlp\n");
    assert_eq!(line, 2, "{message}");
    let (line, message) = file_error("[otlp]\ntrace_per = \"turn\"\n");
    assert_eq!((line, message.as_str()), (2, "otlp.trace_per: `turn` is neither session nor recording"));
    let (line, message) = file_error("[retention]\nkeep = 3\nolder_than = \"a month\"\n");
    assert_eq!(line, 3);
    assert!(message.starts_with("retention.older_than: `a month` is not an age"), "{message}");
    let (line, message) = file_error("[retention]\nmax_size = true\n");
    assert_eq!(line, 2, "{message}");
    assert!(message.starts_with("max_size: expected a size"), "{message}");
    let (line, message) = file_error("[record]\nredact_rules = [\n  \"$.ok\",\n  \"$.params[\",\n]\n");
    assert_eq!(line, 4, "{message}");
    let (line, message) = file_error("db = \"traces.db\"\n");
    assert_eq!(line, 1);
    assert!(message.contains("neither absolute nor under ~/"), "{message}");
    let (line, message) = file_error("[otlp]\nendpoint = \"https://x\"\n");
    assert_eq!(line, 2);
    assert!(message.contains("not an http:// URL"), "{message}");
    let e = ConfigError::File { path: "/c.toml".into(), line: 4, message: "m".into() };
    assert_eq!(e.to_string(), "config /c.toml line 4: m");
}

#[test]
fn a_bad_file_is_left_out_whole() {
    let (_dir, path) = file("db = \"/x.db\"\n[serve]\nport = \"eighty\"\n");
    let (c, errors) = load(&[(CONFIG_ENV, &path), ("ACP_TEE_SERVE_BIND", "::1")]);
    assert_eq!(errors.len(), 1);
    assert!(errors[0].to_string().starts_with(&format!("config {path} line 3: ")), "{}", errors[0]);
    assert_eq!(c.db.source, Source::Default);
    assert_eq!(c.serve_bind.source, Source::Env("ACP_TEE_SERVE_BIND"));
}

#[test]
fn a_missing_file_is_an_error_only_when_named() {
    let (c, errors) = load(&[(CONFIG_ENV, "/nonexistent/acp-tee.toml")]);
    assert_eq!(errors.len(), 1);
    assert_eq!(errors[0].to_string(), "config /nonexistent/acp-tee.toml: no such file (named by ACP_TEE_CONFIG)");
    assert!(c.file.from_env && !c.file.exists);
    let (_, errors) = load(&[("XDG_CONFIG_HOME", "/nonexistent")]);
    assert!(errors.is_empty());
}
