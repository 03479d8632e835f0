//! What a frame is: JSON-RPC kind, id, method and ACP session.

use super::preview;
use acp_tee_shared::FrameKind;
use serde::de::{IgnoredAny, MapAccess, SeqAccess, Visitor};
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

/// The members of a JSON-RPC message that classification and proxy routing
/// look at; the rest is skipped unparsed. `id`, `method` and `error` are
/// exact text; `params` and `result` are `P`: exact text for routing,
/// [`Inner`] for classification, which reads them in the same pass. A
/// member that is present but `null` is `Some`.
///
/// Only a JSON object is a message: an array is never read positionally.
/// A member written twice counts as its last occurrence, as the parsers
/// peers use read it (JavaScript's `JSON.parse`, Python's `json`);
/// `duplicate` says that it happened.
pub struct MessageProbe<'a, P = &'a RawValue> {
    pub id: Option<&'a RawValue>,
    pub method: Option<&'a RawValue>,
    pub params: Option<P>,
    pub result: Option<P>,
    pub error: Option<&'a RawValue>,
    /// A top-level member was written more than once.
    pub duplicate: bool,
}

impl<'a, P> MessageProbe<'a, P> {
    /// The JSON-RPC kind the members make, with the method decoded; `None`
    /// when they make no message (no method and neither result nor error,
    /// or a method that is not a string).
    pub fn kind(&self) -> Option<(FrameKind, Option<String>)> {
        let method = match self.method {
            None => None,
            Some(m) => Some(serde_json::from_str::<String>(m.get()).ok()?),
        };
        let kind = match (&method, self.id) {
            (Some(_), Some(_)) => FrameKind::Request,
            (Some(_), None) => FrameKind::Notification,
            (None, Some(_)) if self.error.is_some() => FrameKind::Error,
            (None, Some(_)) if self.result.is_some() => FrameKind::Response,
            _ => return None,
        };
        Some((kind, method))
    }
}

/// The top-level member names a [`MessageProbe`] keeps.
enum ProbeKey {
    Id,
    Method,
    Params,
    Result,
    Error,
    Other,
}

impl<'de> Deserialize<'de> for ProbeKey {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct KeyVisitor;
        impl Visitor<'_> for KeyVisitor {
            type Value = ProbeKey;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a member name")
            }
            fn visit_str<E: serde::de::Error>(self, key: &str) -> Result<ProbeKey, E> {
                Ok(match key {
                    "id" => ProbeKey::Id,
                    "method" => ProbeKey::Method,
                    "params" => ProbeKey::Params,
                    "result" => ProbeKey::Result,
                    "error" => ProbeKey::Error,
                    _ => ProbeKey::Other,
                })
            }
        }
        d.deserialize_identifier(KeyVisitor)
    }
}

impl<'de: 'a, 'a, P: Deserialize<'de>> Deserialize<'de> for MessageProbe<'a, P> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct ProbeVisitor<P>(std::marker::PhantomData<P>);
        impl<'de, P: Deserialize<'de>> Visitor<'de> for ProbeVisitor<P> {
            type Value = MessageProbe<'de, P>;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a JSON-RPC message (an object)")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
                let mut p =
                    MessageProbe { id: None, method: None, params: None, result: None, error: None, duplicate: false };
                fn set<T>(slot: &mut Option<T>, value: T, duplicate: &mut bool) {
                    *duplicate |= slot.is_some();
                    *slot = Some(value);
                }
                while let Some(key) = map.next_key::<ProbeKey>()? {
                    let dup = &mut p.duplicate;
                    match key {
                        ProbeKey::Id => set(&mut p.id, map.next_value()?, dup),
                        ProbeKey::Method => set(&mut p.method, map.next_value()?, dup),
                        ProbeKey::Params => set(&mut p.params, map.next_value()?, dup),
                        ProbeKey::Result => set(&mut p.result, map.next_value()?, dup),
                        ProbeKey::Error => set(&mut p.error, map.next_value()?, dup),
                        ProbeKey::Other => {
                            map.next_value::<IgnoredAny>()?;
                        }
                    }
                }
                Ok(p)
            }
        }
        d.deserialize_map(ProbeVisitor(std::marker::PhantomData))
    }
}

/// The members of `params` (or `result`) classification and previews look
/// at. Any other shape (an array, `null`, a string) or a member of another
/// type gives nothing for it, never an error: the message is still a
/// request, a notification or a response.
#[derive(Default)]
struct Inner<'a> {
    session_id: Option<String>,
    connection_id: Option<String>,
    method: Option<String>,
    update: Option<&'a RawValue>,
    prompt: Option<Vec<&'a RawValue>>,
}

/// The member names [`Inner`] keeps, read without allocating.
enum InnerKey {
    SessionId,
    ConnectionId,
    Method,
    Update,
    Prompt,
    Other,
}

impl<'de> Deserialize<'de> for InnerKey {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct KeyVisitor;
        impl Visitor<'_> for KeyVisitor {
            type Value = InnerKey;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a member name")
            }
            fn visit_str<E: serde::de::Error>(self, key: &str) -> Result<InnerKey, E> {
                Ok(match key {
                    "sessionId" => InnerKey::SessionId,
                    "connectionId" => InnerKey::ConnectionId,
                    "method" => InnerKey::Method,
                    "update" => InnerKey::Update,
                    "prompt" => InnerKey::Prompt,
                    _ => InnerKey::Other,
                })
            }
        }
        d.deserialize_identifier(KeyVisitor)
    }
}

impl<'de> Deserialize<'de> for Inner<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct InnerVisitor;
        impl<'de> Visitor<'de> for InnerVisitor {
            type Value = Inner<'de>;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("any JSON value")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Inner<'de>, A::Error> {
                let mut inner = Inner::default();
                while let Some(key) = map.next_key::<InnerKey>()? {
                    match key {
                        InnerKey::SessionId => inner.session_id = map.next_value::<Lenient<String>>()?.0,
                        InnerKey::ConnectionId => inner.connection_id = map.next_value::<Lenient<String>>()?.0,
                        InnerKey::Method => inner.method = map.next_value::<Lenient<String>>()?.0,
                        InnerKey::Update => inner.update = Some(map.next_value()?),
                        InnerKey::Prompt => inner.prompt = map.next_value::<Lenient<Vec<&'de RawValue>>>()?.0,
                        InnerKey::Other => {
                            map.next_value::<IgnoredAny>()?;
                        }
                    }
                }
                Ok(inner)
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Inner<'de>, A::Error> {
                while seq.next_element::<IgnoredAny>()?.is_some() {}
                Ok(Inner::default())
            }
            fn visit_unit<E>(self) -> Result<Inner<'de>, E> {
                Ok(Inner::default())
            }
            fn visit_bool<E>(self, _: bool) -> Result<Inner<'de>, E> {
                Ok(Inner::default())
            }
            fn visit_i64<E>(self, _: i64) -> Result<Inner<'de>, E> {
                Ok(Inner::default())
            }
            fn visit_u64<E>(self, _: u64) -> Result<Inner<'de>, E> {
                Ok(Inner::default())
            }
            fn visit_f64<E>(self, _: f64) -> Result<Inner<'de>, E> {
                Ok(Inner::default())
            }
            fn visit_str<E>(self, _: &str) -> Result<Inner<'de>, E> {
                Ok(Inner::default())
            }
        }
        d.deserialize_any(InnerVisitor)
    }
}

/// A `T` when the value is one, `None` for any other JSON value (which is
/// read and skipped, never an error).
struct Lenient<T>(Option<T>);

impl<'de, T: Deserialize<'de>> Deserialize<'de> for Lenient<T> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let value = <&'de RawValue>::deserialize(d)?;
        Ok(Lenient(serde_json::from_str(value.get()).ok()))
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
    let Ok(probe) = serde_json::from_str::<MessageProbe<Inner>>(text) else {
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
