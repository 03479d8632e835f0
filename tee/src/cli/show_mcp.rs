//! `show` on an MCP trace: its calls (method, tool, prompt or resource,
//! latency, error or tool error), not ACP sessions.

use crate::redact::Redactor;
use crate::store::Store;
use crate::text::printable;
use acp_tee_shared::{Direction, FrameKind};
use serde::Serialize;
use std::collections::HashMap;
use std::io::Write;

/// Calls listed at most; the rest are counted.
const CALLS_MAX: usize = 10_000;

/// Frames read per step.
const STEP: i64 = 1000;

/// One request of an MCP trace and its answer.
#[derive(Debug, Serialize)]
pub(super) struct Call {
    /// The request's frame.
    pub seq: i64,
    /// True when the server asked (sampling, roots, elicitation, ping).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub from_server: bool,
    pub method: Option<String>,
    /// The tool or prompt called, the resource read (the frame's preview).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub target: Option<String>,
    /// The answer's frame, when it came.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub answer_seq: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub latency_ns: Option<i64>,
    /// A JSON-RPC error answer's `code message`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// A `tools/call` result with `isError: true` (the tool failed, the call
    /// did not): its preview, `tool error: ` and the tool's text.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tool_error: Option<String>,
}

/// The calls of an MCP trace, in the order they were made.
#[derive(Debug, Default, Serialize)]
pub(super) struct Calls {
    pub calls: Vec<Call>,
    /// Calls made but not listed (past [`CALLS_MAX`]).
    pub left_out: u64,
    pub notifications: u64,
}

/// Reads trace `id`'s calls, masked by `redact`.
pub(super) fn calls(store: &Store, id: i64, redact: Option<&Redactor>) -> anyhow::Result<Calls> {
    let mask = |s: Option<String>| match (s, redact) {
        (Some(s), Some(r)) => Some(r.mask_value(&s).unwrap_or(s)),
        (s, _) => s,
    };
    let mut out = Calls::default();
    let mut at: HashMap<i64, usize> = HashMap::new();
    let mut after = 0;
    loop {
        let page = store.frames_after(id, after, STEP)?;
        let Some(last) = page.last() else { break };
        after = last.seq;
        for f in page {
            match f.kind {
                FrameKind::Request if out.calls.len() < CALLS_MAX => {
                    at.insert(f.seq, out.calls.len());
                    out.calls.push(Call {
                        seq: f.seq,
                        from_server: f.dir == Direction::AgentToClient,
                        method: mask(f.method),
                        target: mask(f.preview),
                        answer_seq: None,
                        latency_ns: None,
                        error: None,
                        tool_error: None,
                    });
                }
                FrameKind::Request => out.left_out += 1,
                FrameKind::Notification => out.notifications += 1,
                FrameKind::Response | FrameKind::Error => {
                    let Some(&i) = f.reply_to_seq.and_then(|s| at.get(&s)) else { continue };
                    let call = &mut out.calls[i];
                    call.answer_seq = Some(f.seq);
                    call.latency_ns = f.latency_ns;
                    if f.kind == FrameKind::Error {
                        call.error = Some(mask(f.preview).unwrap_or_else(|| "error".to_owned()));
                    } else if f.tool_error {
                        call.tool_error = mask(f.preview);
                    }
                }
                _ => {}
            }
        }
    }
    Ok(out)
}

/// The calls as text, a line each.
pub(super) fn calls_text(c: &Calls, out: &mut impl Write) -> anyhow::Result<()> {
    let answered = c.calls.iter().filter(|c| c.answer_seq.is_some()).count();
    let errors = c.calls.iter().filter(|c| c.error.is_some()).count();
    let tool_errors = c.calls.iter().filter(|c| c.tool_error.is_some()).count();
    writeln!(
        out,
        "MCP trace: {} requests ({answered} answered, {errors} with an error, {tool_errors} with a tool error), {} \
         notifications",
        c.calls.len() as u64 + c.left_out,
        c.notifications
    )?;
    for call in &c.calls {
        let who = if call.from_server { " (server asked)" } else { "" };
        let method = printable(call.method.as_deref().unwrap_or("?")).into_owned();
        let target = call.target.as_deref().map(|t| format!(" {}", printable(t))).unwrap_or_default();
        let answer = match (call.answer_seq, call.latency_ns) {
            (Some(seq), Some(ns)) => format!("{} (#{seq})", latency(ns)),
            (Some(seq), None) => format!("answered (#{seq})"),
            (None, _) => "never answered".to_owned(),
        };
        let error = match (&call.error, &call.tool_error) {
            (Some(e), _) => format!(", error {}", printable(e)),
            (None, Some(t)) => format!(", {}", printable(t)),
            (None, None) => String::new(),
        };
        writeln!(out, "  #{} {method}{target}{who}: {answer}{error}", call.seq)?;
    }
    if c.left_out > 0 {
        writeln!(out, "  ... {} more requests not listed", c.left_out)?;
    }
    Ok(())
}

fn latency(ns: i64) -> String {
    let ms = ns as f64 / 1e6;
    if ms < 1000.0 {
        format!("{ms:.1} ms")
    } else {
        format!("{:.2} s", ms / 1000.0)
    }
}
