//! Importing sacp-tee (10.x) logs, in either of its two forms:
//!
//! - raw (its default): `→ LINE` for what the client sent, `← LINE` for
//!   what the agent sent, each LINE exactly as it crossed. The log has no
//!   times: every frame is at `t_ns` 0, so latencies are 0, and the trace is
//!   pinned to the time the file was last written.
//! - `--json`: `{"timestamp":RFC3339,"direction":"downstream"|"upstream",
//!   "message":{...}}`, requests and notifications downstream (client to
//!   agent), replies upstream as `{"id","result"}` (sacp-tee logs a failed
//!   request as a result holding `{"error": "..."}`; it is kept as a result).
//!   Times are relative to the first entry.
//!
//! A file may not mix the two forms: the first line decides.

use super::{imported_meta, message_line, Context, ImportError, ImportFormat, TraceSink};
use crate::store::NewFrame;
use acp_tee_shared::Direction;
use serde::Deserialize;
use serde_json::value::RawValue;
use std::io::BufRead;

#[derive(Deserialize)]
struct Entry<'a> {
    timestamp: String,
    direction: String,
    #[serde(borrow)]
    message: Message<'a>,
}

#[derive(Deserialize)]
struct Message<'a> {
    #[serde(borrow, default)]
    id: Option<&'a RawValue>,
    #[serde(default)]
    method: Option<String>,
    #[serde(borrow, default)]
    params: Option<&'a RawValue>,
    #[serde(borrow, default)]
    result: Option<&'a RawValue>,
}

/// Reads a sacp-tee log into one trace.
pub fn read(ctx: &mut Context, input: impl BufRead) -> Result<(), ImportError> {
    let mut sink = TraceSink::start(ctx, "import")?;
    // The first entry's time, for `--json` logs.
    let mut first: Option<chrono::DateTime<chrono::FixedOffset>> = None;
    let mut json_form: Option<bool> = None;
    ctx.lines(input, |ctx, number, line| {
        let is_json = *json_form.get_or_insert_with(|| !(line.starts_with("→ ") || line.starts_with("← ")));
        let made = if is_json { json_frame(&mut sink, &mut first, line) } else { raw_frame(&mut sink, line) };
        match made {
            Ok(frame) => sink.push(ctx, frame),
            Err(why) => ctx.bad_line(number, why),
        }
    })?;
    if sink.frames == 0 {
        return Err(ImportError::Empty { path: ctx.path.clone() });
    }
    let started = match first {
        Some(t) => crate::clock::rfc3339(t.with_timezone(&chrono::Utc)),
        None => crate::clock::rfc3339(ctx.file_time()),
    };
    let meta = imported_meta(ctx, ImportFormat::SacpTee, started, sink.last_t_ns);
    sink.finish(ctx, meta, None)
}

fn raw_frame(sink: &mut TraceSink, line: &str) -> Result<NewFrame, String> {
    let (dir, text) = if let Some(rest) = line.strip_prefix("→ ") {
        (Direction::ClientToAgent, rest)
    } else if let Some(rest) = line.strip_prefix("← ") {
        (Direction::AgentToClient, rest)
    } else {
        return Err("a raw sacp-tee line starts with `→ ` or `← `".into());
    };
    Ok(sink.framer.message(dir, 0, format!("{text}\n").into_bytes(), None))
}

fn json_frame(
    sink: &mut TraceSink,
    first: &mut Option<chrono::DateTime<chrono::FixedOffset>>,
    line: &str,
) -> Result<NewFrame, String> {
    let e: Entry = serde_json::from_str(line).map_err(|e| format!("not a sacp-tee log entry: {e}"))?;
    let at = chrono::DateTime::parse_from_rfc3339(&e.timestamp)
        .map_err(|err| format!("`timestamp` {:?} is not RFC 3339: {err}", e.timestamp))?;
    let t0 = *first.get_or_insert(at);
    // Entries are written by several tasks and may be slightly out of order;
    // time before the first entry counts as 0.
    let t_ns = (at - t0).num_nanoseconds().unwrap_or(0).max(0) as u64;
    let dir = match e.direction.as_str() {
        "downstream" => Direction::ClientToAgent,
        "upstream" => Direction::AgentToClient,
        other => return Err(format!("unknown direction `{other}`; expected downstream or upstream")),
    };
    let m = e.message;
    let id = m.id.map(RawValue::get);
    let raw = match (m.method.as_deref(), m.result) {
        (Some(method), _) => message_line(id, Some(method), m.params.map(RawValue::get), None),
        (None, Some(result)) => message_line(Some(id.unwrap_or("null")), None, None, Some(("result", result.get()))),
        (None, None) => return Err("a message with neither `method` nor `result`".into()),
    };
    Ok(sink.framer.message(dir, t_ns, raw, None))
}
