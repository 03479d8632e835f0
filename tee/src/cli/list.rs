//! `acp-tee list`: the traces as a text table or JSON, filtered by name and
//! start time and limited in number (in SQL: `Store::trace_page`), with the
//! store's size. Stored strings are shown [`printable`] (`crate::text`), as
//! every terminal message quoting a stored or imported string is.

use super::args::StoreArg;
use crate::model::Mode;
use crate::store::api::TraceFilter;
use crate::text::printable;
use acp_tee_shared::api::TraceSummary;
use acp_tee_shared::{format_bytes, TraceMeta};
use chrono::{DateTime, NaiveDate, NaiveDateTime, Utc};
use clap::{Args, ValueEnum};
use std::io::Write;

pub const LIST_ABOUT: &str = "\
List the traces in the store, newest first: id, name, start (UTC), duration,
frames, size (the bytes of its frames as stored), errors and exit, and the
store's size (the database file and its
write-ahead log) on stderr.

A trace's NAME is its --name (by default the agent program's file name; an
import's file name), else its command's program: what a TRACE names (`show`,
`check`, `export`, `diff`, `replay`, `serve`, `rm`, `rename`, `pin`). --name lists the traces of
one name, --since those started since a time, --limit the newest so many (20
by default; 0 lists all); when more match, stderr says how many.

--format json writes one JSON document (docs/export.md):
  {\"store\": {\"path\", \"bytes\", \"file_bytes\", \"wal_bytes\"},
   \"traces\": [each trace as GET /api/traces writes it],
   \"matching\": traces the filters select, \"more\": matching ones not listed}";

/// How `list` writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ListFormat {
    /// An aligned table for a person (also `text`)
    #[value(alias = "text")]
    Table,
    /// One JSON document
    Json,
}

/// How many traces `list` shows by default: a screenful.
pub const DEFAULT_LIMIT: u64 = 20;

#[derive(Debug, Args)]
pub struct ListArgs {
    #[command(flatten)]
    store: StoreArg,
    /// List at most N traces, the newest (0: all)
    #[arg(long, value_name = "N", default_value_t = DEFAULT_LIMIT)]
    limit: u64,
    /// Only the traces of this name (as the NAME column shows it; exact)
    #[arg(long)]
    name: Option<String>,
    /// Only traces started since WHEN: that long ago (30m, 12h, 2d, 1w) or a
    /// date or time (2026-01-31, 2026-01-31T09:00:00Z; UTC without an offset)
    #[arg(long, value_name = "WHEN", value_parser = parse_since)]
    since: Option<DateTime<Utc>>,
    /// Output format
    #[arg(long, value_enum, default_value = "table")]
    format: ListFormat,
}

/// Runs `acp-tee list`.
pub fn list_command(a: ListArgs) -> anyhow::Result<i32> {
    let path = a.store.path()?;
    let store = a.store.open_reader()?;
    let filter = TraceFilter {
        name: a.name.clone(),
        since: a.since.map(|t| t.to_rfc3339_opts(chrono::SecondsFormat::Micros, true)),
        limit: (a.limit > 0).then_some(a.limit),
    };
    let page = store.trace_page(&filter)?;
    let more = page.matching.saturating_sub(page.traces.len() as u64);
    let sizes = crate::store::on_disk(&path);
    let mut out = std::io::stdout().lock();
    match a.format {
        ListFormat::Json => {
            let doc = serde_json::json!({
                "store": {
                    "path": path.display().to_string(),
                    "bytes": sizes.file + sizes.wal,
                    "file_bytes": sizes.file,
                    "wal_bytes": sizes.wal,
                },
                "traces": page.traces.iter().map(listed).collect::<Vec<_>>(),
                "matching": page.matching,
                "more": more,
            });
            serde_json::to_writer(&mut out, &doc)?;
            writeln!(out)?;
        }
        ListFormat::Table => {
            out.write_all(render(&page.traces).as_bytes())?;
            out.flush()?;
            let mut err = std::io::stderr().lock();
            if more > 0 {
                let traces = if more == 1 { "trace" } else { "traces" };
                writeln!(err, "{more} more {traces}; --limit 0 lists all")?;
            }
            writeln!(
                err,
                "store {}: {} (file {}, write-ahead log {})",
                printable(&path.display().to_string()),
                format_bytes(sizes.file + sizes.wal),
                format_bytes(sizes.file),
                format_bytes(sizes.wal)
            )?;
        }
    }
    Ok(0)
}

/// A trace as `list --format json` writes it: as `GET /api/traces` does,
/// with `bytes` and `pinned` always present.
fn listed(t: &TraceSummary) -> serde_json::Value {
    let mut v = serde_json::to_value(t).unwrap_or_default();
    if let Some(o) = v.as_object_mut() {
        o.insert("bytes".into(), t.meta.bytes.into());
        o.insert("pinned".into(), t.meta.pinned.into());
    }
    v
}

/// `--since`: a time ago (`30m`, `12h`, `2d`, `1w`, `45s`), an RFC 3339
/// time, a date (midnight UTC) or a date and time without an offset (UTC).
fn parse_since(s: &str) -> Result<DateTime<Utc>, String> {
    since_at(s, Utc::now())
}

fn since_at(s: &str, now: DateTime<Utc>) -> Result<DateTime<Utc>, String> {
    let bad = || {
        format!("`{s}` is neither a time ago (30m, 12h, 2d, 1w) nor a date or time (2026-01-31, 2026-01-31T09:00:00Z)")
    };
    if let Some(unit) = s.chars().last().filter(|c| c.is_ascii_alphabetic()) {
        let number = &s[..s.len() - 1];
        if !number.is_empty() && number.bytes().all(|b| b.is_ascii_digit()) {
            let n: i64 = number.parse().map_err(|_| bad())?;
            let seconds = match unit {
                's' => Some(n),
                'm' => n.checked_mul(60),
                'h' => n.checked_mul(3600),
                'd' => n.checked_mul(86_400),
                'w' => n.checked_mul(7 * 86_400),
                _ => None,
            };
            let ago = seconds.and_then(chrono::TimeDelta::try_seconds).ok_or_else(bad)?;
            return now.checked_sub_signed(ago).ok_or_else(bad);
        }
    }
    if let Ok(t) = DateTime::parse_from_rfc3339(s) {
        return Ok(t.with_timezone(&Utc));
    }
    if let Ok(d) = NaiveDate::parse_from_str(s, "%Y-%m-%d") {
        return Ok(d.and_hms_opt(0, 0, 0).ok_or_else(bad)?.and_utc());
    }
    for format in ["%Y-%m-%dT%H:%M:%S%.f", "%Y-%m-%d %H:%M:%S%.f", "%Y-%m-%dT%H:%M", "%Y-%m-%d %H:%M"] {
        if let Ok(t) = NaiveDateTime::parse_from_str(s, format) {
            return Ok(t.and_utc());
        }
    }
    Err(bad())
}

/// `traces` (newest first) with each child right under its parent (when
/// both are listed), oldest child first, and how deep it sits.
fn families(traces: &[TraceSummary]) -> Vec<(&TraceSummary, usize)> {
    let listed: std::collections::HashSet<i64> = traces.iter().map(|t| t.meta.id).collect();
    let under_listed = |t: &TraceSummary| t.meta.parent_trace.is_some_and(|p| p != t.meta.id && listed.contains(&p));
    let mut out = Vec::with_capacity(traces.len());
    let mut placed = std::collections::HashSet::new();
    // Depth first from each trace whose parent is not listed; `placed`
    // guards against a cycle a hand-edited store could hold.
    let mut stack: Vec<(&TraceSummary, usize)> =
        traces.iter().rev().filter(|t| !under_listed(t)).map(|t| (t, 0)).collect();
    while let Some((t, depth)) = stack.pop() {
        if !placed.insert(t.meta.id) {
            continue;
        }
        out.push((t, depth));
        // Pushed newest first, so the oldest child comes out first.
        stack.extend(
            traces
                .iter()
                .filter(|c| c.meta.parent_trace == Some(t.meta.id) && c.meta.id != t.meta.id)
                .map(|c| (c, depth + 1)),
        );
    }
    // Whatever a cycle kept out, in its own order.
    out.extend(traces.iter().filter(|t| !placed.contains(&t.meta.id)).map(|t| (t, 0)));
    out
}

/// Renders `traces` as an aligned table with a header row, each child
/// trace under its parent (`└`), or saying its parent when that is not
/// listed; stored strings are shown [`printable`].
pub fn render(traces: &[TraceSummary]) -> String {
    let mut rows =
        vec![["ID", "NAME", "STARTED (UTC)", "DURATION", "FRAMES", "SIZE", "ERRORS", "EXIT"].map(String::from)];
    for (TraceSummary { meta: t, live, finishing, .. }, depth) in families(traces) {
        let name = match (depth, t.parent_trace) {
            (0, Some(parent)) => format!("{} (under {parent})", name(t)),
            (0, None) => name(t),
            (depth, _) => format!("{}└ {}", "  ".repeat(depth - 1), name(t)),
        };
        rows.push([
            t.id.to_string(),
            name,
            printable(t.started_at.get(..19).unwrap_or(&t.started_at)).replace('T', " "),
            duration(t, *live, *finishing),
            frames(t),
            format_bytes(t.bytes.max(0) as u64),
            t.error_count.to_string(),
            exit(t),
        ]);
    }
    let widths: Vec<usize> = (0..8).map(|c| rows.iter().map(|r| r[c].chars().count()).max().unwrap_or(0)).collect();
    let mut out = String::new();
    for row in &rows {
        let cells: Vec<String> = row.iter().zip(&widths).map(|(cell, w)| format!("{cell:<w$}")).collect();
        out.push_str(cells.join("  ").trim_end());
        out.push('\n');
    }
    out
}

/// The trace's name, `[mcp]` after it for an MCP trace.
fn name(t: &TraceMeta) -> String {
    let name = printable(t.name.as_deref().or(t.command.first().map(String::as_str)).unwrap_or_default());
    match t.protocol {
        Some(acp_tee_shared::Protocol::Mcp) => format!("{name} [mcp]"),
        _ => name.into_owned(),
    }
}

fn duration(t: &TraceMeta, live: bool, finishing: bool) -> String {
    let Some(end) = &t.ended_at else {
        // No end and no recorder: both acp-tee processes were killed. No
        // end, a recorder and no relay: the recorder is storing the rest.
        return match (live, finishing) {
            (true, true) => "finishing",
            (true, false) => "live",
            (false, _) => "cut off",
        }
        .into();
    };
    let (Ok(a), Ok(b)) = (DateTime::parse_from_rfc3339(&t.started_at), DateTime::parse_from_rfc3339(end)) else {
        return "?".into();
    };
    let ms = (b - a).num_milliseconds().max(0);
    match ms {
        0..=59_999 => format!("{}.{:03}s", ms / 1000, ms % 1000),
        60_000..=3_599_999 => format!("{}m{:02}s", ms / 60_000, ms / 1000 % 60),
        _ => format!("{}h{:02}m", ms / 3_600_000, ms / 60_000 % 60),
    }
}

fn frames(t: &TraceMeta) -> String {
    if t.missing_unknown {
        // No recorder survived to count them.
        format!("{} (+{} or more missing)", t.frame_count, t.missing_frames)
    } else if t.missing_frames > 0 {
        format!("{} (+{} missing)", t.frame_count, t.missing_frames)
    } else {
        t.frame_count.to_string()
    }
}

fn exit(t: &TraceMeta) -> String {
    match (t.exit_code, t.exit_signal, &t.ended_at) {
        (Some(code), Some(sig), _) => format!("{code} (signal {sig})"),
        (Some(code), None, _) => code.to_string(),
        // Imports ran nowhere here: there is no exit to tell.
        (None, _, Some(_)) if Mode::parse(&t.mode) == Some(Mode::Import) => "imported".into(),
        (None, _, Some(_)) => "killed".into(),
        (None, _, None) => String::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn trace(id: i64, ended: Option<&str>, exit_code: Option<i32>, missing: i64) -> TraceSummary {
        let meta = TraceMeta {
            protocol: None,
            parent_trace: None,
            id,
            name: Some(format!("agent{id}")),
            command: vec!["agent".into()],
            cwd: None,
            mode: "wrap".into(),
            started_at: "2026-11-30T16:00:00.000000Z".into(),
            ended_at: ended.map(String::from),
            exit_code,
            exit_signal: None,
            end_reason: None,
            frame_count: 12,
            error_count: 1,
            missing_frames: missing,
            missing_unknown: false,
            pinned: false,
            bytes: id * 700,
        };
        TraceSummary {
            live: id == 3,
            finishing: false,
            meta,
            last_t_ns: 0,
            now_t_ns: None,
            imported_from: None,
            findings: None,
        }
    }

    #[test]
    fn children_sit_under_their_parent_oldest_first_and_a_cycle_is_listed_once() {
        let with_parent = |id, parent: Option<i64>| {
            let mut t = trace(id, Some("2026-11-30T16:00:01.250000Z"), Some(0), 0);
            t.meta.parent_trace = parent;
            t
        };
        // Newest first, as the store lists them: 6 (child of 1), 5 (child
        // of 99, not listed), 4 (child of 2), 3 (child of 1), 2 (child of
        // 1), 1; 7 and 8 are each other's parent.
        let listed = [
            with_parent(8, Some(7)),
            with_parent(7, Some(8)),
            with_parent(6, Some(1)),
            with_parent(5, Some(99)),
            with_parent(4, Some(2)),
            with_parent(3, Some(1)),
            with_parent(2, Some(1)),
            with_parent(1, None),
        ];
        let order: Vec<(i64, usize)> = families(&listed).iter().map(|(t, d)| (t.meta.id, *d)).collect();
        assert_eq!(order, [(5, 0), (1, 0), (2, 1), (4, 2), (3, 1), (6, 1), (8, 0), (7, 0)]);
        let table = render(&listed);
        let header = table.lines().next().unwrap();
        let (from, to) = (header.find("NAME").unwrap(), header.find("STARTED").unwrap());
        let names: Vec<String> = table
            .lines()
            .skip(1)
            .map(|l| l.chars().skip(from).take(to - from).collect::<String>().trim_end().to_owned())
            .collect();
        assert_eq!(names[..5], ["agent5 (under 99)", "agent1", "└ agent2", "  └ agent4", "└ agent3"]);
    }

    #[test]
    fn table() {
        let out = render(&[
            trace(4, None, None, 0),
            trace(3, None, None, 0),
            trace(2, Some("2026-11-30T16:02:03.500000Z"), Some(0), 2),
            trace(1, Some("2026-11-30T16:00:01.250000Z"), None, 0),
        ]);
        let expect = "\
ID  NAME    STARTED (UTC)        DURATION  FRAMES           SIZE      ERRORS  EXIT
4   agent4  2026-11-30 16:00:00  cut off   12               2.73 KiB  1
3   agent3  2026-11-30 16:00:00  live      12               2.05 KiB  1
2   agent2  2026-11-30 16:00:00  2m03s     12 (+2 missing)  1.37 KiB  1       0
1   agent1  2026-11-30 16:00:00  1.250s    12               700 B     1       killed
";
        assert_eq!(out, expect);
    }

    #[test]
    fn since_takes_a_time_ago_or_a_date_or_time() {
        let now = DateTime::parse_from_rfc3339("2026-03-10T12:00:00Z").unwrap().with_timezone(&Utc);
        let at = |s: &str| since_at(s, now).map(|t| t.to_rfc3339_opts(chrono::SecondsFormat::Secs, true));
        assert_eq!(at("2d").unwrap(), "2026-03-08T12:00:00Z");
        assert_eq!(at("12h").unwrap(), "2026-03-10T00:00:00Z");
        assert_eq!(at("30m").unwrap(), "2026-03-10T11:30:00Z");
        assert_eq!(at("45s").unwrap(), "2026-03-10T11:59:15Z");
        assert_eq!(at("1w").unwrap(), "2026-03-03T12:00:00Z");
        assert_eq!(at("2026-01-31").unwrap(), "2026-01-31T00:00:00Z");
        assert_eq!(at("2026-01-31T09:30:00+02:00").unwrap(), "2026-01-31T07:30:00Z");
        assert_eq!(at("2026-01-31T09:30:00").unwrap(), "2026-01-31T09:30:00Z", "UTC without an offset");
        assert_eq!(at("2026-01-31 09:30").unwrap(), "2026-01-31T09:30:00Z");
        for bad in ["", "yesterday", "2x", "d", "-2d", "99999999999999999999d", "2026-13-01"] {
            assert!(at(bad).unwrap_err().contains("neither a time ago"), "{bad}");
        }
    }
}
