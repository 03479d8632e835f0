//! The JSON-RPC envelope: the top-level members of a message, each as its
//! exact text, read in one pass with a member written twice counting as
//! its last; and [`Routing`], the few members of params or result that
//! classification reads in the same pass.

use super::lenient::{scalars_read_as_absent, RawItems, Text};
use acp_tee_shared::FrameKind;
use serde::de::{IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde::{Deserialize, Deserializer};
use serde_json::value::RawValue;
use std::borrow::Cow;

/// The members of a JSON-RPC message that classification and proxy routing
/// look at; the rest is skipped unparsed. `id`, `method` and `error` are
/// exact text; `params` and `result` are `P`: exact text for routing,
/// [`Routing`] for classification, which reads them in the same pass. A
/// member that is present but `null` is `Some`.
///
/// Only a JSON object is a message: an array is never read positionally.
/// A member written twice counts as its last occurrence, as the parsers
/// peers use read it (JavaScript's `JSON.parse`, Python's `json`);
/// `duplicate` says that it happened.
pub struct Envelope<'a, P = &'a RawValue> {
    pub jsonrpc: Option<&'a RawValue>,
    pub id: Option<&'a RawValue>,
    pub method: Option<&'a RawValue>,
    pub params: Option<P>,
    pub result: Option<P>,
    pub error: Option<&'a RawValue>,
    /// A top-level member was written more than once.
    pub duplicate: bool,
}

impl<'a, P> Envelope<'a, P> {
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

/// The top-level member names a [`Envelope`] keeps.
enum ProbeKey {
    Jsonrpc,
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
                    "jsonrpc" => ProbeKey::Jsonrpc,
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

impl<'de: 'a, 'a, P: Deserialize<'de>> Deserialize<'de> for Envelope<'a, P> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct ProbeVisitor<P>(std::marker::PhantomData<P>);
        impl<'de, P: Deserialize<'de>> Visitor<'de> for ProbeVisitor<P> {
            type Value = Envelope<'de, P>;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a JSON-RPC message (an object)")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
                let mut p = Envelope {
                    jsonrpc: None,
                    id: None,
                    method: None,
                    params: None,
                    result: None,
                    error: None,
                    duplicate: false,
                };
                fn set<T>(slot: &mut Option<T>, value: T, duplicate: &mut bool) {
                    *duplicate |= slot.is_some();
                    *slot = Some(value);
                }
                while let Some(key) = map.next_key::<ProbeKey>()? {
                    let dup = &mut p.duplicate;
                    match key {
                        ProbeKey::Jsonrpc => set(&mut p.jsonrpc, map.next_value()?, dup),
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
pub struct Routing<'a> {
    pub session_id: Option<String>,
    pub connection_id: Option<String>,
    pub method: Option<String>,
    pub update: Option<&'a RawValue>,
    pub prompt: Option<Vec<&'a RawValue>>,
}

/// The member names [`Routing`] keeps, read without allocating.
enum RoutingKey {
    SessionId,
    ConnectionId,
    Method,
    Update,
    Prompt,
    Other,
}

impl<'de> Deserialize<'de> for RoutingKey {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct KeyVisitor;
        impl Visitor<'_> for KeyVisitor {
            type Value = RoutingKey;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a member name")
            }
            fn visit_str<E: serde::de::Error>(self, key: &str) -> Result<RoutingKey, E> {
                Ok(match key {
                    "sessionId" => RoutingKey::SessionId,
                    "connectionId" => RoutingKey::ConnectionId,
                    "method" => RoutingKey::Method,
                    "update" => RoutingKey::Update,
                    "prompt" => RoutingKey::Prompt,
                    _ => RoutingKey::Other,
                })
            }
        }
        d.deserialize_identifier(KeyVisitor)
    }
}

impl<'de> Deserialize<'de> for Routing<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct RoutingVisitor;
        impl<'de> Visitor<'de> for RoutingVisitor {
            type Value = Routing<'de>;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("any JSON value")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Routing<'de>, A::Error> {
                let mut inner = Routing::default();
                while let Some(key) = map.next_key::<RoutingKey>()? {
                    match key {
                        RoutingKey::SessionId => inner.session_id = map.next_value::<Text>()?.0.map(Cow::into_owned),
                        RoutingKey::ConnectionId => {
                            inner.connection_id = map.next_value::<Text>()?.0.map(Cow::into_owned)
                        }
                        RoutingKey::Method => inner.method = map.next_value::<Text>()?.0.map(Cow::into_owned),
                        RoutingKey::Update => inner.update = Some(map.next_value()?),
                        RoutingKey::Prompt => inner.prompt = map.next_value::<RawItems>()?.0,
                        RoutingKey::Other => {
                            map.next_value::<IgnoredAny>()?;
                        }
                    }
                }
                Ok(inner)
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Routing<'de>, A::Error> {
                while seq.next_element::<IgnoredAny>()?.is_some() {}
                Ok(Routing::default())
            }
            scalars_read_as_absent!();
        }
        d.deserialize_any(RoutingVisitor)
    }
}
