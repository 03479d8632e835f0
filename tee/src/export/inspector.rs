//! The `acp-inspector-trace` v1 export (sagikazarmark/acp-inspector's trace
//! format; read back by [`crate::import::inspector`]).
//!
//! A header `{"type":"header","format":"acp-inspector-trace","version":1,
//! "at","frames","dropped","warning"}`, then one `{"type":"frame","at",
//! "connection","direction","encoding","frame"}` per frame. Each selected
//! trace is one connection, numbered from 1 in the order written. A
//! frame's `at` is its trace's start plus its `t_ns`, in whole milliseconds
//! since the Unix epoch; `frame` is its stored bytes without the line end
//! they end in, as `utf8` text, or `base64` when they are not UTF-8 (the
//! inspector itself only writes `utf8`). The format carries the wire only:
//! stderr lines are left out (counted). The header's `frames` counts the
//! frame records that follow, as stored when the export began; `dropped` is
//! the traces' missing frames; `at` is when the export was taken.

use super::{each_frame, ExportError, ExportOptions, ExportSummary};
use crate::import::inspector::{FORMAT, VERSION};
use crate::store::Store;
use acp_tee_shared::{Direction, TraceMeta};
use base64::Engine;
use serde::Serialize;
use std::io::{self, Write};

/// What the header says about the file, as the inspector's own exports do.
const WARNING: &str = "ACP frames may contain prompts, file contents, and tool output; secrets are masked unless \
                       --no-redact was given";

#[derive(Serialize)]
struct Header<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    format: &'static str,
    version: u32,
    at: i64,
    frames: i64,
    dropped: i64,
    warning: &'a str,
}

#[derive(Serialize)]
struct Record<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    at: i64,
    connection: usize,
    direction: &'static str,
    encoding: &'static str,
    frame: &'a str,
}

/// Writes `traces`, one connection each.
pub fn write(
    store: &Store,
    traces: &[TraceMeta],
    opts: &ExportOptions,
    out: &mut dyn Write,
) -> Result<ExportSummary, ExportError> {
    let mut frames = 0;
    for t in traces {
        let per_direction = store.trace_stats(t.id)?.per_direction;
        let stderr = Direction::ALL.iter().position(|d| *d == Direction::AgentStderr).expect("stderr is a direction");
        frames += per_direction.iter().enumerate().filter(|(i, _)| *i != stderr).map(|(_, n)| n).sum::<i64>();
    }
    let header = Header {
        kind: "header",
        format: FORMAT,
        version: VERSION,
        at: chrono::Utc::now().timestamp_millis(),
        frames,
        dropped: traces.iter().map(|t| t.missing_frames).sum(),
        warning: WARNING,
    };
    line(out, &header)?;
    let mut summary = ExportSummary::default();
    for (i, trace) in traces.iter().enumerate() {
        let start_ms = chrono::DateTime::parse_from_rfc3339(&trace.started_at).map_or(0, |t| t.timestamp_millis());
        let mut left_out = 0;
        each_frame(store, trace, opts, &mut summary, |f| {
            let direction = match f.dir {
                Direction::ClientToAgent => "client -> agent",
                Direction::AgentToClient => "agent -> client",
                Direction::AgentStderr => {
                    left_out += 1;
                    return Ok(());
                }
            };
            let bytes = f.raw.strip_suffix(b"\n").unwrap_or(&f.raw);
            let base64;
            let (encoding, frame) = match std::str::from_utf8(bytes) {
                Ok(text) => ("utf8", text),
                Err(_) => {
                    base64 = base64::engine::general_purpose::STANDARD.encode(bytes);
                    ("base64", base64.as_str())
                }
            };
            let at = start_ms.saturating_add(f.t_ns / 1_000_000);
            let record = Record { kind: "frame", at, connection: i + 1, direction, encoding, frame };
            line(out, &record)
        })?;
        summary.left_out += left_out;
    }
    Ok(summary)
}

fn line(out: &mut dyn Write, record: &impl Serialize) -> Result<(), ExportError> {
    serde_json::to_writer(&mut *out, record).map_err(io::Error::from)?;
    out.write_all(b"\n")?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::super::tests::store_with_trace;
    use super::super::{export, ExportFormat, ExportOptions, TraceSelection};
    use crate::import::{import, ImportFormat, ImportOptions};
    use crate::store::Store;

    fn export_text(store: &Store) -> (String, super::ExportSummary) {
        let mut out = Vec::new();
        let opts = ExportOptions::new(ExportFormat::AcpInspector);
        let summary = export(store, TraceSelection::All, &opts, &mut out).unwrap();
        (String::from_utf8(out).unwrap(), summary)
    }

    #[test]
    fn frames_are_the_wire_text_at_their_wall_clock_millisecond() {
        let (text, summary) = export_text(&store_with_trace());
        let lines: Vec<&str> = text.lines().collect();
        let header: serde_json::Value = serde_json::from_str(lines[0]).unwrap();
        assert_eq!(
            (&header["type"], &header["format"], &header["version"], &header["frames"], &header["dropped"]),
            (&"header".into(), &"acp-inspector-trace".into(), &1.into(), &2.into(), &0.into())
        );
        assert!(header["at"].as_i64().unwrap() > 1_785_312_000_000);
        // 2026-11-30T10:00:00Z is 1796032800000 ms; the frames are at 1 and 4 µs.
        assert_eq!(
            &lines[1..],
            [
                r#"{"type":"frame","at":1796032800000,"connection":1,"direction":"client -> agent","encoding":"utf8","frame":"{\"id\":1,\"method\":\"initialize\"}"}"#,
                r#"{"type":"frame","at":1796032800000,"connection":1,"direction":"agent -> client","encoding":"utf8","frame":"{\"id\":1,\"error\":{\"code\":-1,\"message\":\"no\"}}"}"#,
            ]
        );
        assert_eq!((summary.frames, summary.left_out), (3, 1));
    }

    #[test]
    fn an_export_imports_back_to_the_same_frames() {
        let store = store_with_trace();
        let (first, _) = export_text(&store);
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.jsonl");
        std::fs::write(&path, &first).unwrap();
        let mut again = Store::in_memory().unwrap();
        let opts = ImportOptions {
            format: ImportFormat::Auto,
            name: None,
            skip_bad: false,
            progress: indicatif::ProgressBar::hidden(),
        };
        let s = import(&mut again, &path, &opts).unwrap();
        assert_eq!((s.format, s.frames), (ImportFormat::AcpInspector, 2));
        let (second, _) = export_text(&again);
        assert_eq!(first.lines().skip(1).collect::<Vec<_>>(), second.lines().skip(1).collect::<Vec<_>>());
    }
}
