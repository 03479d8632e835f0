//! MCP as a recorded protocol: which protocol a trace speaks (from its first
//! `initialize`), and the previews of MCP messages (a tool's failure
//! among them).
//!
//! Both protocols open with `initialize`; MCP's `protocolVersion` is a date
//! string (`"2025-06-18"`), ACP's an integer. Failing that, the members
//! beside it tell: ACP's `clientCapabilities` / `agentCapabilities`, MCP's
//! `capabilities` / `clientInfo` / `serverInfo`.

use super::preview::{one_line, text_line};
use crate::acp::lenient::leaf;
use crate::acp::{self, Envelope, Str};
use acp_tee_shared::Protocol;
use serde::Deserialize;
use serde_json::value::RawValue;

/// The members of `initialize`'s params or result that tell the protocol.
#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase")]
struct Init<'a> {
    #[serde(borrow, default)]
    protocol_version: Option<&'a RawValue>,
    #[serde(borrow, default)]
    client_capabilities: Option<&'a RawValue>,
    #[serde(borrow, default)]
    agent_capabilities: Option<&'a RawValue>,
    #[serde(borrow, default)]
    capabilities: Option<&'a RawValue>,
    #[serde(borrow, default)]
    server_info: Option<&'a RawValue>,
}

/// The protocol an `initialize` request (its params) or the response to one
/// (its result) speaks; `None` when neither can be told from it.
pub fn protocol_of_initialize(raw: &[u8]) -> Option<Protocol> {
    let env: Envelope = serde_json::from_slice(raw).ok()?;
    protocol_of_initialize_members(env.params.or(env.result))
}

/// [`protocol_of_initialize`] from the params or result already read.
pub fn protocol_of_initialize_members(members: Option<&RawValue>) -> Option<Protocol> {
    let mut keep = None;
    let init: Init = acp::member(members, &mut keep)?;
    match init.protocol_version.map(|v| v.get().as_bytes()[0]) {
        Some(b'"') => return Some(Protocol::Mcp),
        Some(b'0'..=b'9') => return Some(Protocol::Acp),
        _ => {}
    }
    if init.client_capabilities.is_some() || init.agent_capabilities.is_some() {
        Some(Protocol::Acp)
    } else if init.capabilities.is_some() || init.server_info.is_some() {
        Some(Protocol::Mcp)
    } else {
        None
    }
}

/// The params of the MCP requests and notifications previews read.
#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase")]
struct Params<'a> {
    #[serde(borrow, default, deserialize_with = "leaf")]
    name: Option<Str<'a>>,
    #[serde(borrow, default, deserialize_with = "leaf")]
    uri: Option<Str<'a>>,
    #[serde(default, deserialize_with = "leaf")]
    progress: Option<f64>,
    #[serde(default, deserialize_with = "leaf")]
    total: Option<f64>,
    #[serde(borrow, default)]
    message: Option<&'a RawValue>,
    #[serde(borrow, default, deserialize_with = "leaf")]
    level: Option<Str<'a>>,
    #[serde(borrow, default, deserialize_with = "leaf")]
    logger: Option<Str<'a>>,
    #[serde(borrow, default)]
    data: Option<&'a RawValue>,
    #[serde(borrow, default)]
    reason: Option<&'a RawValue>,
}

/// The preview of an MCP request or notification `method` whose bytes are
/// `raw`: the tool or prompt called (`tools/call`, `prompts/get`), the
/// resource read (`resources/read`, `resources/subscribe`, ...), a
/// progress's `3/10 message`, a log message's `level logger: text`, a
/// cancellation's reason. `None` for the rest.
pub fn mcp_preview(method: &str, raw: &[u8]) -> Option<String> {
    let env: Envelope = serde_json::from_slice(raw).ok()?;
    let mut keep = None;
    let p: Params = acp::member(env.params, &mut keep)?;
    let text = match method {
        "tools/call" | "prompts/get" => p.name?.into_owned(),
        "resources/read" | "resources/subscribe" | "resources/unsubscribe" | "notifications/resources/updated" => {
            p.uri?.into_owned()
        }
        "notifications/progress" => {
            let number =
                |n: f64| if n.fract() == 0.0 && n.abs() < 1e15 { format!("{}", n as i64) } else { n.to_string() };
            let mut text = number(p.progress?);
            if let Some(total) = p.total {
                text = format!("{text}/{}", number(total));
            }
            if let Some(message) = p.message.and_then(text_line) {
                text = format!("{text} {message}");
            }
            text
        }
        "notifications/message" => {
            let data = p.data.map(|d| text_line(d).unwrap_or_else(|| one_line(d.get()))).unwrap_or_default();
            match (p.level, p.logger) {
                (Some(level), Some(logger)) => format!("{level} {logger}: {data}"),
                (Some(level), None) => format!("{level} {data}"),
                (None, _) => data,
            }
        }
        "notifications/cancelled" => p.reason.and_then(text_line)?,
        _ => return None,
    };
    Some(one_line(&text)).filter(|s| !s.is_empty())
}

/// What the preview of a tool's failure begins with: an MCP `tools/call`
/// result with `isError: true`. As JSON-RPC goes the call succeeded (the
/// frame is a response, which no error count counts); the tool failed.
const TOOL_ERROR: &str = "tool error";

/// The members of a `tools/call` result a preview reads.
#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase")]
struct CallResult<'a> {
    #[serde(default, deserialize_with = "leaf")]
    is_error: Option<bool>,
    #[serde(borrow, default)]
    content: Option<&'a RawValue>,
}

/// The preview of an MCP response to `method` whose bytes are `raw`: for a
/// `tools/call` result with `isError: true`, [`TOOL_ERROR`] and the text of
/// its first text block (`tool error: Ref 'x' did not resolve`). `None` for
/// the rest: a result that is no failure has no preview.
pub fn mcp_result_preview(method: &str, raw: &[u8]) -> Option<String> {
    if method != "tools/call" {
        return None;
    }
    let env: Envelope = serde_json::from_slice(raw).ok()?;
    let mut keep = None;
    let result: CallResult = acp::member(env.result, &mut keep)?;
    if result.is_error != Some(true) {
        return None;
    }
    let mut keep = None;
    let blocks = acp::items::<acp::RawText>(result.content, &mut keep);
    let text = blocks.into_iter().find_map(|b| text_line(b.text?)).filter(|t| !t.is_empty());
    Some(match text {
        Some(text) => one_line(&format!("{TOOL_ERROR}: {text}")),
        None => TOOL_ERROR.to_owned(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_first_initialize_tells_the_protocol() {
        let cases: [(&str, Option<Protocol>); 8] = [
            (
                r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"c","version":"1"}}}"#,
                Some(Protocol::Mcp),
            ),
            (
                r#"{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":"2025-06-18","capabilities":{},"serverInfo":{"name":"s","version":"1"}}}"#,
                Some(Protocol::Mcp),
            ),
            (
                r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":1,"clientCapabilities":{}}}"#,
                Some(Protocol::Acp),
            ),
            (r#"{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":1,"agentCapabilities":{}}}"#, Some(Protocol::Acp)),
            (
                r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"clientCapabilities":{}}}"#,
                Some(Protocol::Acp),
            ),
            (r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"capabilities":{}}}"#, Some(Protocol::Mcp)),
            (r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{}}"#, None),
            (r#"not json"#, None),
        ];
        for (raw, want) in cases {
            assert_eq!(protocol_of_initialize(raw.as_bytes()), want, "{raw}");
        }
    }

    #[test]
    fn previews_speak_mcp() {
        let p = |m: &str, params: &str| {
            mcp_preview(m, format!(r#"{{"jsonrpc":"2.0","method":"{m}","params":{params}}}"#).as_bytes())
        };
        assert_eq!(
            p("tools/call", r#"{"name":"get_current_time","arguments":{}}"#).as_deref(),
            Some("get_current_time")
        );
        assert_eq!(p("resources/read", r#"{"uri":"file:///x"}"#).as_deref(), Some("file:///x"));
        assert_eq!(p("prompts/get", r#"{"name":"review"}"#).as_deref(), Some("review"));
        assert_eq!(
            p("notifications/progress", r#"{"progressToken":1,"progress":3,"total":10}"#).as_deref(),
            Some("3/10")
        );
        assert_eq!(
            p("notifications/progress", r#"{"progressToken":1,"progress":0.5,"message":"half"}"#).as_deref(),
            Some("0.5 half")
        );
        assert_eq!(
            p("notifications/message", r#"{"level":"info","logger":"git","data":"cloned\nrepo"}"#).as_deref(),
            Some("info git: cloned repo")
        );
        assert_eq!(
            p("notifications/message", r#"{"level":"error","data":{"a":1}}"#).as_deref(),
            Some(r#"error {"a":1}"#)
        );
        assert_eq!(p("notifications/cancelled", r#"{"requestId":3,"reason":"user"}"#).as_deref(), Some("user"));
        assert_eq!(p("tools/list", r#"{}"#), None);
        assert_eq!(p("tools/call", r#"{"name":7}"#), None);
    }

    #[test]
    fn a_tool_failure_is_told_by_its_result_preview() {
        let r = |m: &str, result: &str| {
            mcp_result_preview(m, format!(r#"{{"jsonrpc":"2.0","id":3,"result":{result}}}"#).as_bytes())
        };
        assert_eq!(
            r(
                "tools/call",
                r#"{"content":[{"type":"image","data":"AA=="},{"text":"Ref 'nope'\ndid not resolve","type":"text"}],"isError":true}"#
            )
            .as_deref(),
            Some("tool error: Ref 'nope' did not resolve")
        );
        assert_eq!(r("tools/call", r#"{"content":[],"isError":true}"#).as_deref(), Some("tool error"));
        assert_eq!(r("tools/call", r#"{"isError":true}"#).as_deref(), Some("tool error"));
        // A tool that did not fail, or a result of another method, has none.
        assert_eq!(r("tools/call", r#"{"content":[{"type":"text","text":"ok"}],"isError":false}"#), None);
        assert_eq!(r("tools/call", r#"{"content":[{"type":"text","text":"ok"}]}"#), None);
        assert_eq!(r("tools/call", r#"{"content":[],"isError":"true"}"#), None);
        assert_eq!(r("prompts/get", r#"{"messages":[],"isError":true}"#), None);
        // An error response is no result.
        let error = br#"{"jsonrpc":"2.0","id":3,"error":{"code":-32602,"message":"Unknown tool"}}"#;
        assert_eq!(mcp_result_preview("tools/call", error), None);
        let long = format!(r#"{{"content":[{{"type":"text","text":"{}"}}],"isError":true}}"#, "x ".repeat(300));
        let preview = r("tools/call", &long).unwrap();
        assert!(preview.starts_with("tool error: x x") && preview.ends_with('…'), "{preview}");
        assert!(preview.chars().count() <= super::super::preview::PREVIEW_CHARS + 1, "{preview}");
    }
}
