//! The conductor's trace format (`agent-client-protocol-conductor --trace`,
//! read by `agent-client-protocol-trace-viewer` 5.0): one event per line,
//! `request`, `response` or `notification`, `ts` in seconds since the start.
//!
//! Names are mapped honestly: frames going client to agent are from `Client`
//! to `Agent` and the other way round, unless the frame was imported with its
//! own component names (`sender`, `receiver`), which are kept. Params,
//! results and errors are copied as their exact (redacted) text. A batch
//! becomes one event per message. Stderr lines and invalid frames have no
//! place in the format: they are left out and counted.

use super::{each_frame, ExportError, ExportOptions, ExportSummary};
use crate::store::{Store, StoredFrame};
use acp_tee_shared::{Direction, FrameKind, TraceMeta};
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;
use std::io::{self, Write};

/// One event of a `.jsons` file, fields in the conductor's order.
#[derive(Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum Event<'a> {
    Request {
        ts: f64,
        protocol: &'a str,
        from: &'a str,
        to: &'a str,
        id: &'a RawValue,
        method: &'a str,
        #[serde(skip_serializing_if = "Option::is_none")]
        session: Option<&'a str>,
        params: &'a RawValue,
    },
    Response {
        ts: f64,
        from: &'a str,
        to: &'a str,
        id: &'a RawValue,
        is_error: bool,
        #[serde(skip_serializing_if = "Option::is_none")]
        error_domain: Option<&'a str>,
        payload: &'a RawValue,
    },
    Notification {
        ts: f64,
        protocol: &'a str,
        from: &'a str,
        to: &'a str,
        method: &'a str,
        #[serde(skip_serializing_if = "Option::is_none")]
        session: Option<&'a str>,
        params: &'a RawValue,
    },
}

/// The parts of a JSON-RPC message the events need, as exact text.
#[derive(Deserialize)]
struct Message<'a> {
    #[serde(borrow, default)]
    id: Option<&'a RawValue>,
    #[serde(borrow, default)]
    method: Option<&'a str>,
    #[serde(borrow, default)]
    params: Option<&'a RawValue>,
    #[serde(borrow, default)]
    result: Option<&'a RawValue>,
    #[serde(borrow, default)]
    error: Option<&'a RawValue>,
}

/// The component names of a frame: its own when imported with them, else
/// `Client` and `Agent` by its direction.
pub fn peers(f: &StoredFrame) -> (&str, &str) {
    let (from, to) = match f.dir {
        Direction::AgentToClient => ("Agent", "Client"),
        _ => ("Client", "Agent"),
    };
    (f.sender.as_deref().unwrap_or(from), f.receiver.as_deref().unwrap_or(to))
}

/// Writes `trace` as `.jsons`.
pub fn write(
    store: &Store,
    trace: &TraceMeta,
    opts: &ExportOptions,
    out: &mut dyn Write,
) -> Result<ExportSummary, ExportError> {
    let mut summary = ExportSummary::default();
    let mut left_out = 0;
    let null = RawValue::from_string("null".to_owned()).expect("null is JSON");
    each_frame(store, trace, opts, &mut summary, |f| {
        let Ok(text) = std::str::from_utf8(&f.raw) else {
            left_out += 1;
            return Ok(());
        };
        let messages: Vec<Message> = match f.kind {
            FrameKind::Stderr | FrameKind::Invalid => Vec::new(),
            FrameKind::Batch => serde_json::from_str(text).unwrap_or_default(),
            _ => serde_json::from_str(text).map(|m| vec![m]).unwrap_or_default(),
        };
        if messages.is_empty() {
            left_out += 1;
        }
        for m in &messages {
            // A single message's method is the logical one the recorder
            // found (proxy mode renames the conductor's `proxy/initialize`).
            let method = match f.kind {
                FrameKind::Batch => m.method,
                _ => f.method.as_deref().or(m.method),
            };
            if let Some(event) = event(&f, m, method, &null) {
                serde_json::to_writer(&mut *out, &event).map_err(io::Error::from)?;
                out.write_all(b"\n")?;
            }
        }
        Ok(())
    })?;
    summary.left_out = left_out;
    Ok(summary)
}

fn event<'a>(f: &'a StoredFrame, m: &Message<'a>, method: Option<&'a str>, null: &'a RawValue) -> Option<Event<'a>> {
    let ts = f.t_ns as f64 / 1e9;
    let (from, to) = peers(f);
    let protocol = if f.mcp { "mcp" } else { "acp" };
    let session = f.session_id.as_deref();
    let params = m.params.unwrap_or(null);
    if let Some(payload) = m.result.or(m.error) {
        let is_error = m.error.is_some();
        let id = m.id.unwrap_or(null);
        let error_domain = is_error.then_some(protocol);
        return Some(Event::Response { ts, from, to, id, is_error, error_domain, payload });
    }
    let method = method?;
    Some(match m.id {
        Some(id) => Event::Request { ts, protocol, from, to, id, method, session, params },
        None => Event::Notification { ts, protocol, from, to, method, session, params },
    })
}

#[cfg(test)]
mod tests {
    use super::super::{export, tests::store_with_trace, ExportFormat, ExportOptions, TraceSelection};

    #[test]
    fn requests_errors_and_left_out_stderr() {
        let mut out = Vec::new();
        let summary =
            export(&store_with_trace(), TraceSelection::Latest, &ExportOptions::new(ExportFormat::Jsons), &mut out)
                .unwrap();
        let expect = concat!(
            r#"{"type":"request","ts":1e-6,"protocol":"acp","from":"Client","to":"Agent","id":1,"method":"initialize","params":null}"#,
            "\n",
            r#"{"type":"response","ts":4e-6,"from":"Agent","to":"Client","id":1,"is_error":true,"error_domain":"acp","payload":{"code":-1,"message":"no"}}"#,
            "\n",
        );
        assert_eq!(String::from_utf8(out).unwrap(), expect);
        assert_eq!((summary.frames, summary.left_out), (3, 1));
    }
}
