//! What a frame is: JSON-RPC kind, id, method and ACP session.

use super::preview;
use crate::acp::{Envelope, Routing};
use acp_tee_shared::FrameKind;
use serde_json::value::RawValue;

/// What could be read from one frame's bytes.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Classified {
    /// The frame's kind; `None` only while being built.
    pub kind: Option<FrameKind>,
    /// The JSON-RPC id exactly as written on the wire (`7`, `"abc"`, `null`).
    pub id: Option<String>,
    /// The method of a request or notification.
    pub method: Option<String>,
    /// `params.sessionId`, or `result.sessionId` of a response.
    pub session_id: Option<String>,
    /// MCP-over-ACP: `params.connectionId`, or `result.connectionId` of the
    /// response to `mcp/connect`.
    pub connection_id: Option<String>,
    /// For `mcp/message`: the inner MCP method (`params.method`).
    pub mcp_method: Option<String>,
    /// A short text for the viewer (see [`super::preview`]).
    pub preview: Option<String>,
    /// For a batch: each element, classified like a frame of its own.
    pub elements: Vec<Classified>,
    /// For a batch element that is a response: the request it answers,
    /// once pairing found it (a single message's pairing is returned by
    /// [`super::Pairer::observe`] instead).
    pub reply: super::Pairing,
}

impl Classified {
    fn invalid() -> Self {
        Classified { kind: Some(FrameKind::Invalid), ..Default::default() }
    }

    /// The kind, `invalid` if none was set.
    pub fn frame_kind(&self) -> FrameKind {
        self.kind.unwrap_or(FrameKind::Invalid)
    }

    /// True for MCP-over-ACP messages (`mcp/connect`, `mcp/message`, ...);
    /// for responses, once pairing has filled in the method.
    pub fn is_mcp(&self) -> bool {
        self.method.as_deref().is_some_and(|m| m.starts_with("mcp/"))
    }

    /// The conductor renames the client's `initialize` for proxies
    /// (`proxy/initialize`, SDK 2.x `_proxy/initialize`); the logical message
    /// is the client's `initialize` (the bytes keep the wire name).
    pub fn rename_proxy_initialize(&mut self) {
        if matches!(self.method.as_deref(), Some("proxy/initialize" | "_proxy/initialize")) {
            self.method = Some("initialize".to_owned());
        }
    }

    /// How many JSON-RPC error responses the frame carries.
    pub fn error_count(&self) -> usize {
        match self.frame_kind() {
            FrameKind::Error => 1,
            FrameKind::Batch => self.elements.iter().map(Classified::error_count).sum(),
            _ => 0,
        }
    }
}

/// Classifies one frame of client/agent traffic (not stderr).
///
/// Never fails: bytes that are not a JSON-RPC message (bad UTF-8, bad JSON, an
/// empty line, a JSON value of the wrong shape) are [`FrameKind::Invalid`].
pub fn classify(raw: &[u8]) -> Classified {
    classify_with(raw, true)
}

/// [`classify`], leaving out the preview unless `preview` is true (it is
/// half the work for a short frame).
pub fn classify_with(raw: &[u8], preview: bool) -> Classified {
    let Ok(text) = std::str::from_utf8(raw) else {
        return Classified::invalid();
    };
    let trimmed = text.trim_start_matches([' ', '\t', '\r', '\n']);
    if trimmed.starts_with('[') {
        match serde_json::from_str::<Vec<&RawValue>>(text) {
            Ok(items) if !items.is_empty() => Classified {
                kind: Some(FrameKind::Batch),
                elements: items.iter().map(|v| classify_message(v.get(), preview)).collect(),
                ..Default::default()
            },
            _ => Classified::invalid(),
        }
    } else {
        classify_message(text, preview)
    }
}

fn classify_message(text: &str, want_preview: bool) -> Classified {
    let Ok(probe) = serde_json::from_str::<Envelope<Routing>>(text) else {
        return Classified::invalid();
    };
    let Some((kind, method)) = probe.kind() else {
        return Classified::invalid();
    };
    let id = probe.id.map(|id| id.get().to_owned());
    let inner = match kind {
        FrameKind::Request | FrameKind::Notification => probe.params,
        FrameKind::Response => probe.result,
        _ => None,
    };
    let inner = inner.unwrap_or_default();
    let mcp_method = inner.method.filter(|_| method.as_deref() == Some("mcp/message"));
    // The preview comes from the parts this one parse already found.
    let preview = match (kind, method.as_deref()) {
        _ if !want_preview => None,
        (FrameKind::Error, _) => probe.error.and_then(preview::error_preview),
        (_, Some("session/update")) => inner.update.and_then(preview::update_preview),
        (FrameKind::Request, Some("session/prompt")) => inner.prompt.as_deref().and_then(preview::prompt_preview),
        _ => None,
    };
    Classified {
        kind: Some(kind),
        id,
        method,
        session_id: inner.session_id,
        connection_id: inner.connection_id,
        mcp_method,
        preview,
        elements: Vec::new(),
        reply: super::Pairing::default(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use FrameKind::*;

    type Summary = (FrameKind, Option<String>, Option<String>, Option<String>);

    fn kind_id_method_session(raw: &str) -> Summary {
        let c = classify(raw.as_bytes());
        (c.frame_kind(), c.id, c.method, c.session_id)
    }

    fn s(x: &str) -> Option<String> {
        Some(x.to_owned())
    }

    #[test]
    fn acp_messages() {
        let cases: &[(&str, Summary)] = &[
            (
                r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":1}}"#,
                (Request, s("0"), s("initialize"), None),
            ),
            (
                r#"{"jsonrpc":"2.0","id":"a-1","method":"session/prompt","params":{"sessionId":"s1","prompt":[]}}"#,
                (Request, s("\"a-1\""), s("session/prompt"), s("s1")),
            ),
            (
                r#"{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s1","update":{"sessionUpdate":"agent_message_chunk"}}}"#,
                (Notification, None, s("session/update"), s("s1")),
            ),
            (r#"{"jsonrpc":"2.0","id":1,"result":{"sessionId":"s9"}}"#, (Response, s("1"), None, s("s9"))),
            (r#"{"jsonrpc":"2.0","id":2,"result":null}"#, (Response, s("2"), None, None)),
            (r#"{"jsonrpc":"2.0","id":3,"error":{"code":-32800,"message":"cancelled"}}"#, (Error, s("3"), None, None)),
            (
                r#"{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"parse error"}}"#,
                (Error, s("null"), None, None),
            ),
            ("{\"id\":4,\"result\":{}}\r\n", (Response, s("4"), None, None)),
        ];
        for (raw, expect) in cases {
            assert_eq!(&kind_id_method_session(raw), expect, "{raw}");
        }
    }

    #[test]
    fn invalid_frames() {
        for raw in [
            "",
            "\n",
            "not json\n",
            "{\"id\":1}",
            "{\"method\":5}",
            "[]",
            "42",
            "{\"id\":1,\"result\":2} trailing",
            "{\"jsonrpc\":\"2.0\",\"id\":1,\"res",
        ] {
            assert_eq!(classify(raw.as_bytes()).frame_kind(), Invalid, "{raw:?}");
        }
        assert_eq!(classify(b"{\"method\":\"\xff\"}").frame_kind(), Invalid);
    }

    #[test]
    fn batches_classify_each_element() {
        let c = classify(br#"[{"id":1,"method":"a"},{"method":"b"},{"id":1,"error":{"code":1,"message":"x"}},7]"#);
        assert_eq!(c.frame_kind(), Batch);
        let kinds: Vec<FrameKind> = c.elements.iter().map(Classified::frame_kind).collect();
        assert_eq!(kinds, vec![Request, Notification, Error, Invalid]);
        assert_eq!(c.error_count(), 1);
    }

    #[test]
    fn mcp_over_acp() {
        let c = classify(
            br#"{"id":4,"method":"mcp/message","params":{"connectionId":"c1","method":"tools/call","params":{"name":"x"}}}"#,
        );
        assert!(c.is_mcp());
        assert_eq!(c.connection_id.as_deref(), Some("c1"));
        assert_eq!(c.mcp_method.as_deref(), Some("tools/call"));
        let c = classify(br#"{"id":5,"result":{"connectionId":"c2"}}"#);
        assert_eq!(c.connection_id.as_deref(), Some("c2"));
        assert!(!c.is_mcp(), "a response is MCP only once paired");
        let c = classify(br#"{"id":6,"method":"session/prompt","params":{"method":"nope"}}"#);
        assert_eq!(c.mcp_method, None);
    }

    #[test]
    fn params_are_read_member_by_member() {
        // A member of an unexpected type gives nothing for itself only.
        let c = classify(
            br#"{"id":1,"method":"mcp/message","params":{"sessionId":5,"connectionId":"c1","method":"tools/call"}}"#,
        );
        assert_eq!(
            (c.session_id, c.connection_id.as_deref(), c.mcp_method.as_deref()),
            (None, Some("c1"), Some("tools/call"))
        );
        let c = classify(
            br#"{"method":"session/update","params":{"sessionId":"s","prompt":"no","update":{"sessionUpdate":"plan"}}}"#,
        );
        assert_eq!((c.session_id.as_deref(), c.preview.as_deref()), (Some("s"), Some("plan")));
        // Params of any other shape: still a message, with nothing from them.
        for params in ["[1,{\"sessionId\":\"s\"}]", "\"s\"", "null", "7", "true"] {
            let raw = format!(r#"{{"id":2,"method":"session/new","params":{params}}}"#);
            let c = classify(raw.as_bytes());
            assert_eq!((c.frame_kind(), c.session_id), (Request, None), "{raw}");
        }
        // Escaped member names are read like plain ones; a repeated member: the last.
        let c = classify(br#"{"id":3,"result":{"s\u0065ssionId":"a","sessionId":"b"}}"#);
        assert_eq!((c.frame_kind(), c.session_id.as_deref()), (Response, Some("b")));
        // Bad JSON inside params still makes the whole frame invalid.
        assert_eq!(classify(br#"{"id":4,"method":"x","params":{"sessionId":"s",}}"#).frame_kind(), Invalid);
    }

    #[test]
    fn escaped_keys_and_methods() {
        let c = classify(br#"{"\u0069d":5,"method":"a\/b"}"#);
        assert_eq!(c.frame_kind(), Request);
        assert_eq!(c.id.as_deref(), Some("5"));
        assert_eq!(c.method.as_deref(), Some("a/b"));
    }
}
