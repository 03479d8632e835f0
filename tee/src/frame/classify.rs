//! What a frame is: JSON-RPC kind, id, method and ACP session.

use super::preview;
use acp_tee_shared::FrameKind;
use serde::{Deserialize, Deserializer};
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

    /// How many JSON-RPC error responses the frame carries.
    pub fn error_count(&self) -> usize {
        match self.frame_kind() {
            FrameKind::Error => 1,
            FrameKind::Batch => self.elements.iter().map(Classified::error_count).sum(),
            _ => 0,
        }
    }
}

/// Keeps a field's raw text even when it is `null`, so that `"id": null` is
/// told apart from a missing id.
fn present<'de, D: Deserializer<'de>>(d: D) -> Result<Option<&'de RawValue>, D::Error> {
    <&RawValue>::deserialize(d).map(Some)
}

/// The members of a JSON-RPC message we look at; the rest is skipped unparsed.
/// The members of a JSON-RPC message that classification and routing look at,
/// as exact text; the rest is skipped unparsed. A member that is present but
/// `null` is `Some("null")`.
#[derive(Deserialize)]
pub(crate) struct MessageProbe<'a> {
    #[serde(default, borrow, deserialize_with = "present")]
    pub(crate) id: Option<&'a RawValue>,
    #[serde(default, borrow, deserialize_with = "present")]
    pub(crate) method: Option<&'a RawValue>,
    #[serde(default, borrow, deserialize_with = "present")]
    pub(crate) params: Option<&'a RawValue>,
    #[serde(default, borrow, deserialize_with = "present")]
    pub(crate) result: Option<&'a RawValue>,
    #[serde(default, borrow, deserialize_with = "present")]
    pub(crate) error: Option<&'a RawValue>,
}

/// The members of `params` (or `result`) we look at, all in one pass.
#[derive(Deserialize, Default)]
struct ParamsProbe<'a> {
    #[serde(rename = "sessionId")]
    session_id: Option<String>,
    #[serde(rename = "connectionId")]
    connection_id: Option<String>,
    #[serde(default, borrow)]
    method: Option<&'a RawValue>,
    #[serde(default, borrow)]
    update: Option<&'a RawValue>,
    #[serde(default, borrow)]
    prompt: Option<Vec<&'a RawValue>>,
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
    let Ok(probe) = serde_json::from_str::<MessageProbe>(text) else {
        return Classified::invalid();
    };
    let method = match probe.method {
        None => None,
        Some(m) => match serde_json::from_str::<String>(m.get()) {
            Ok(m) => Some(m),
            Err(_) => return Classified::invalid(),
        },
    };
    let id = probe.id.map(|id| id.get().to_owned());
    let (kind, session_source) = match (&method, &id) {
        (Some(_), Some(_)) => (FrameKind::Request, probe.params),
        (Some(_), None) => (FrameKind::Notification, probe.params),
        (None, Some(_)) if probe.error.is_some() => (FrameKind::Error, None),
        (None, Some(_)) if probe.result.is_some() => (FrameKind::Response, probe.result),
        _ => return Classified::invalid(),
    };
    let inner = session_source.map(probe_params).unwrap_or_default();
    let mcp_method = inner
        .method
        .filter(|_| method.as_deref() == Some("mcp/message"))
        .and_then(|m| serde_json::from_str::<String>(m.get()).ok());
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
    }
}

fn probe_params(value: &RawValue) -> ParamsProbe<'_> {
    if !value.get().starts_with('{') {
        return ParamsProbe::default();
    }
    serde_json::from_str(value.get()).unwrap_or_default()
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
    fn escaped_keys_and_methods() {
        let c = classify(br#"{"\u0069d":5,"method":"a\/b"}"#);
        assert_eq!(c.frame_kind(), Request);
        assert_eq!(c.id.as_deref(), Some("5"));
        assert_eq!(c.method.as_deref(), Some("a/b"));
    }
}
