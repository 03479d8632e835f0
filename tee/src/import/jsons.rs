//! Importing the conductor's `.jsons` trace.
//!
//! Each event becomes the JSON-RPC message it describes (`params`,
//! `payload` copied as exact text), going client to agent when it moves
//! toward the agent in the chain (`Client` < `Proxy(0)` < `Proxy(1)` < ...
//! < `Agent`) and agent to client otherwise; `from` and `to` are kept as the
//! frame's `sender` and `receiver`, `protocol: "mcp"` as its protocol.
//! `ts` (seconds) becomes `t_ns`. The file has no wall clock: the trace is
//! taken to have ended when the file was last written.

use super::{imported_meta, message_line, Context, ImportError, ImportFormat, TraceSink};
use acp_tee_shared::Direction;
use serde::Deserialize;
use serde_json::value::RawValue;
use std::io::BufRead;

#[derive(Deserialize)]
struct Event<'a> {
    #[serde(rename = "type")]
    kind: String,
    ts: f64,
    #[serde(default)]
    protocol: Option<String>,
    from: String,
    to: String,
    #[serde(borrow, default)]
    id: Option<&'a RawValue>,
    #[serde(default)]
    method: Option<String>,
    #[serde(borrow, default)]
    params: Option<&'a RawValue>,
    #[serde(default)]
    is_error: bool,
    #[serde(borrow, default)]
    payload: Option<&'a RawValue>,
}

/// Where a component sits in the chain: `Client` first, `Agent` last.
fn rank(name: &str) -> Option<u64> {
    let lower = name.to_ascii_lowercase();
    match lower.as_str() {
        "client" => Some(0),
        "agent" => Some(u64::MAX),
        _ => lower.strip_prefix("proxy(")?.strip_suffix(')')?.parse::<u64>().ok().map(|n| n + 1),
    }
}

/// Reads a `.jsons` file into one trace.
pub fn read(ctx: &mut Context, input: impl BufRead) -> Result<(), ImportError> {
    let mut sink = TraceSink::start(ctx, "import")?;
    ctx.lines(input, |ctx, number, line| match frame(&mut sink, line) {
        Ok(frame) => sink.push(ctx, frame),
        Err(why) => ctx.bad_line(number, why),
    })?;
    if sink.frames == 0 {
        return Err(ImportError::Empty { path: ctx.path.clone() });
    }
    let started = ctx.file_time() - chrono::Duration::nanoseconds(sink.last_t_ns);
    let meta = imported_meta(ctx, ImportFormat::Jsons, crate::clock::rfc3339(started), sink.last_t_ns);
    sink.finish(ctx, meta, None)
}

fn frame(sink: &mut TraceSink, line: &str) -> Result<crate::store::NewFrame, String> {
    let e: Event = serde_json::from_str(line).map_err(|e| format!("not a conductor trace event: {e}"))?;
    let (from, to) = (rank(&e.from), rank(&e.to));
    let (Some(from), Some(to)) = (from, to) else {
        return Err(format!("unknown component `{}` or `{}`; expected Client, Proxy(N) or Agent", e.from, e.to));
    };
    let dir = if from < to { Direction::ClientToAgent } else { Direction::AgentToClient };
    if !(e.ts.is_finite() && e.ts >= 0.0) {
        return Err(format!("`ts` must be seconds, 0 or more, not {}", e.ts));
    }
    let t_ns = (e.ts * 1e9).round() as u64;
    let id = e.id.map(RawValue::get);
    let params = e.params.map(RawValue::get);
    let raw = match e.kind.as_str() {
        "request" => {
            let method = e.method.as_deref().ok_or("a request without `method`")?;
            message_line(Some(id.ok_or("a request without `id`")?), Some(method), params, None)
        }
        "notification" => {
            let method = e.method.as_deref().ok_or("a notification without `method`")?;
            message_line(None, Some(method), params, None)
        }
        "response" => {
            let payload = e.payload.map(RawValue::get).unwrap_or("null");
            let key = if e.is_error { "error" } else { "result" };
            message_line(Some(id.unwrap_or("null")), None, None, Some((key, payload)))
        }
        other => return Err(format!("unknown event type `{other}`; expected request, response or notification")),
    };
    let mut frame = sink.framer.message(dir, t_ns, raw, None);
    frame.sender = Some(e.from);
    frame.receiver = Some(e.to);
    if e.protocol.as_deref() == Some("mcp") {
        frame.mcp = true;
    }
    Ok(frame)
}
