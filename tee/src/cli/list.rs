//! `acp-tee list`: the traces as a text table. Stored strings are shown
//! [`printable`] (`crate::text`), as every terminal message quoting a stored
//! or imported string is.

use crate::model::Mode;
use crate::text::printable;
use acp_tee_shared::api::TraceSummary;
use acp_tee_shared::TraceMeta;
use chrono::DateTime;

/// Renders `traces` as an aligned table with a header row; stored strings
/// are shown [`printable`].
pub fn render(traces: &[TraceSummary]) -> String {
    let mut rows = vec![["ID", "NAME", "STARTED (UTC)", "DURATION", "FRAMES", "ERRORS", "EXIT"].map(String::from)];
    for TraceSummary { meta: t, live, finishing, .. } in traces {
        rows.push([
            t.id.to_string(),
            printable(t.name.as_deref().or(t.command.first().map(String::as_str)).unwrap_or_default()).into_owned(),
            printable(t.started_at.get(..19).unwrap_or(&t.started_at)).replace('T', " "),
            duration(t, *live, *finishing),
            frames(t),
            t.error_count.to_string(),
            exit(t),
        ]);
    }
    let widths: Vec<usize> = (0..7).map(|c| rows.iter().map(|r| r[c].chars().count()).max().unwrap_or(0)).collect();
    let mut out = String::new();
    for row in &rows {
        let cells: Vec<String> = row.iter().zip(&widths).map(|(cell, w)| format!("{cell:<w$}")).collect();
        out.push_str(cells.join("  ").trim_end());
        out.push('\n');
    }
    out
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
            bytes: 0,
        };
        TraceSummary { live: id == 3, finishing: false, meta, last_t_ns: 0, imported_from: None, findings: None }
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
ID  NAME    STARTED (UTC)        DURATION  FRAMES           ERRORS  EXIT
4   agent4  2026-11-30 16:00:00  cut off   12               1
3   agent3  2026-11-30 16:00:00  live      12               1
2   agent2  2026-11-30 16:00:00  2m03s     12 (+2 missing)  1       0
1   agent1  2026-11-30 16:00:00  1.250s    12               1       killed
";
        assert_eq!(out, expect);
    }
}
