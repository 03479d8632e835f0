//! Importing the JSONL traces of venikman/ACP-inspector (the F# one,
//! `docs/trace-format.md` there).
//!
//! One `{"ts","direction","json"}` per line: `direction` is `fromClient` or
//! `fromAgent` (case does not matter; its reader's aliases `client`, `c2a`,
//! `c->a`, `agent`, `a2c` and `a->c` are read too); `json` is the JSON-RPC
//! message, as the string of its wire text (what its recorder writes) or as
//! the message itself; `ts` is an RFC 3339 time or milliseconds since the
//! Unix epoch, and may be left out.
//!
//! The file is one trace. Times count from the first `ts`; a line without
//! one is at the time of the line before it (0 when no line had one, and the
//! trace is then pinned to the time the file was last written).

use super::{Context, ImportError, ImportFormat, Stamps, TraceSink};
use crate::model::{Mode, NewFrame};
use acp_tee_shared::Direction;
use serde::Deserialize;
use serde_json::value::RawValue;
use std::io::BufRead;

#[derive(Deserialize)]
struct Line<'a> {
    #[serde(borrow, default)]
    ts: Option<&'a RawValue>,
    direction: String,
    #[serde(borrow)]
    json: &'a RawValue,
}

/// Reads a trace into one trace.
pub fn read(ctx: &mut Context, input: impl BufRead) -> Result<(), ImportError> {
    let mut sink = TraceSink::start(ctx, Mode::Import.as_str())?;
    let mut stamps = Stamps::default();
    ctx.lines(input, |ctx, number, line| match frame(&mut sink, &mut stamps, line) {
        Ok(frame) => sink.push(ctx, frame),
        Err(why) => ctx.bad_line(number, why),
    })?;
    stamps.finish(ctx, sink, ImportFormat::AcpInspectorFsharp)
}

fn frame(sink: &mut TraceSink, stamps: &mut Stamps, line: &str) -> Result<NewFrame, String> {
    let l: Line = serde_json::from_str(line).map_err(|e| format!("not an ACP Inspector trace line: {e}"))?;
    let dir = match l.direction.to_ascii_lowercase().as_str() {
        "fromclient" | "client" | "c2a" | "c->a" => Direction::ClientToAgent,
        "fromagent" | "agent" | "a2c" | "a->c" => Direction::AgentToClient,
        other => return Err(format!("unknown direction `{other}`; expected fromClient or fromAgent")),
    };
    let t_ns = match l.ts.map(RawValue::get).filter(|t| *t != "null") {
        Some(ts) => stamps.t_ns(time(ts)?),
        None => sink.last_t_ns as u64,
    };
    let text = match serde_json::from_str::<String>(l.json.get()) {
        Ok(wire) => wire,
        Err(_) => l.json.get().to_owned(),
    };
    Ok(sink.framer.message(dir, t_ns, format!("{text}\n").into_bytes(), None))
}

/// A `ts`: an RFC 3339 string or milliseconds since the Unix epoch.
fn time(ts: &str) -> Result<chrono::DateTime<chrono::Utc>, String> {
    if let Ok(text) = serde_json::from_str::<String>(ts) {
        return chrono::DateTime::parse_from_rfc3339(&text)
            .map(|t| t.with_timezone(&chrono::Utc))
            .map_err(|e| format!("`ts` {text:?} is not RFC 3339: {e}"));
    }
    serde_json::from_str::<i64>(ts)
        .ok()
        .and_then(chrono::DateTime::from_timestamp_millis)
        .ok_or_else(|| format!("`ts` {ts} is neither an RFC 3339 time nor milliseconds since 1970"))
}
