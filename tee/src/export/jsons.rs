//! The conductor's trace format (`agent-client-protocol-conductor --trace`,
//! read by `agent-client-protocol-trace-viewer` 5.0): one event per line,
//! `request`, `response` or `notification`, `ts` in seconds since the start.
//!
//! Names are mapped honestly: frames going client to agent are from `Client`
//! to `Agent` and the other way round, unless the frame was imported with its
//! own component names (`sender`, `receiver`), which are kept. Params,
//! results and errors are copied as their exact (redacted) text. A batch
//! becomes one event per message. Stderr lines, invalid frames and batch
//! elements that are no message have no place in the format: they are left
//! out and counted (each element on its own). Messages are read as the
//! classifier reads them: a member present but `null` counts, a repeated
//! member is its last occurrence, an array is never a message.

use super::{each_frame, ExportError, ExportOptions, ExportSummary};
use crate::store::{Store, StoredFrame};
use acp_tee_shared::{Direction, FrameKind, TraceMeta};
use acp_tee_wire::acp::Envelope;
use serde::Serialize;
use serde_json::value::RawValue;
use std::borrow::Cow;
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
        method: Cow<'a, str>,
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
        method: Cow<'a, str>,
        #[serde(skip_serializing_if = "Option::is_none")]
        session: Option<&'a str>,
        params: &'a RawValue,
    },
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
        let body = text.trim_end_matches(['\n', '\r', ' ', '\t']);
        let messages: Vec<&RawValue> = match f.kind {
            FrameKind::Stderr | FrameKind::Invalid => Vec::new(),
            FrameKind::Batch => serde_json::from_str(body).unwrap_or_default(),
            _ => serde_json::from_str(body).map(|m| vec![m]).unwrap_or_default(),
        };
        if messages.is_empty() {
            left_out += 1;
        }
        for m in messages {
            // A single message's method is the logical one the recorder
            // found (proxy mode renames the conductor's `proxy/initialize`).
            let logical = match f.kind {
                FrameKind::Batch => None,
                _ => f.method.as_deref(),
            };
            match event(&f, m, logical, &null) {
                Some(event) => {
                    serde_json::to_writer(&mut *out, &event).map_err(io::Error::from)?;
                    out.write_all(b"\n")?;
                }
                // A batch element that is no message (the frame itself is
                // a message or a batch, so this is the only way here).
                None => left_out += 1,
            }
        }
        Ok(())
    })?;
    summary.left_out = left_out;
    Ok(summary)
}

/// The event of one message, read as the classifier reads it (the same
/// probe: members present but `null` count, the last of a repeated member
/// wins, an array is no message). `logical` is the recorder's method for a
/// single message.
fn event<'a>(
    f: &'a StoredFrame,
    text: &'a RawValue,
    logical: Option<&'a str>,
    null: &'a RawValue,
) -> Option<Event<'a>> {
    let m: Envelope = serde_json::from_str(text.get()).ok()?;
    let (kind, method) = m.kind()?;
    let ts = f.t_ns as f64 / 1e9;
    let (from, to) = peers(f);
    let protocol = if f.mcp { "mcp" } else { "acp" };
    let session = f.session_id.as_deref();
    let params = m.params.unwrap_or(null);
    let id = m.id.unwrap_or(null);
    // Only calls carry a method; a call always has one of its own.
    let method: Cow<str> = logical.map(Cow::Borrowed).or_else(|| method.map(Cow::Owned)).unwrap_or_default();
    Some(match kind {
        FrameKind::Error | FrameKind::Response => {
            let is_error = kind == FrameKind::Error;
            let payload = if is_error { m.error } else { m.result }?;
            let error_domain = is_error.then_some(protocol);
            Event::Response { ts, from, to, id, is_error, error_domain, payload }
        }
        FrameKind::Request => Event::Request { ts, protocol, from, to, id, method, session, params },
        _ => Event::Notification { ts, protocol, from, to, method, session, params },
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

    /// The `.jsons` events of a trace made from `chunks`, and how many
    /// frames were left out.
    fn events_of(chunks: &[(acp_tee_shared::Direction, u64, &[u8])]) -> (Vec<serde_json::Value>, u64) {
        let store = super::super::tests::store_from(chunks);
        let mut out = Vec::new();
        let summary =
            export(&store, TraceSelection::Latest, &ExportOptions::new(ExportFormat::Jsons), &mut out).unwrap();
        let text = String::from_utf8(out).unwrap();
        (text.lines().map(|l| serde_json::from_str(l).unwrap()).collect(), summary.left_out)
    }

    /// (type, id, method, is_error, payload or params) of each event.
    fn shapes(events: &[serde_json::Value]) -> Vec<String> {
        events
            .iter()
            .map(|e| {
                let body = e.get("payload").or(e.get("params")).unwrap();
                format!("{} {} {} {} {}", e["type"], e["id"], e["method"], e["is_error"], body)
            })
            .collect()
    }

    #[test]
    fn one_event_per_message_as_the_classifier_reads_it() {
        use acp_tee_shared::Direction::{AgentToClient, ClientToAgent};
        let (events, left_out) = events_of(&[
            (ClientToAgent, 1000, b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"session/cancel\"}\n"),
            // An escaped method name is the same method.
            (ClientToAgent, 2000, b"{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"session\\/prompt\",\"params\":{}}\n"),
            // A paired `result: null` is a response, not a second request.
            (AgentToClient, 3000, b"{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":null}\n"),
            // Unpaired `result: null` and `error: null` are responses too.
            (AgentToClient, 4000, b"{\"id\":9,\"result\":null}\n{\"id\":10,\"error\":null}\n"),
            // Result and error: an error, as the classifier says; its payload is the error.
            (AgentToClient, 5000, b"{\"id\":2,\"result\":{\"a\":1},\"error\":{\"code\":1,\"message\":\"m\"}}\n"),
            // A request with a null id is a request.
            (ClientToAgent, 6000, b"{\"id\":null,\"method\":\"x\"}\n"),
            // A repeated member: the last one, as peers read it.
            (ClientToAgent, 7000, b"{\"id\":15,\"id\":16,\"method\":\"y\"}\n"),
            // An array is no message, not even inside a batch.
            (ClientToAgent, 8000, b"[11,\"session/prompt\",{}]\n[[30,\"m\",{}],{\"method\":\"n\"}]\n"),
        ]);
        assert_eq!(
            shapes(&events),
            vec![
                r#""request" 1 "session/cancel" null null"#,
                r#""request" 2 "session/prompt" null {}"#,
                r#""response" 1 null false null"#,
                r#""response" 9 null false null"#,
                r#""response" 10 null true null"#,
                r#""response" 2 null true {"code":1,"message":"m"}"#,
                r#""request" null "x" null null"#,
                r#""request" 16 "y" null null"#,
                r#""notification" null "n" null null"#,
            ]
        );
        // Each batch element that is no message is left out and counted:
        // three in the first batch, one in the second.
        assert_eq!(left_out, 4);
    }
}
