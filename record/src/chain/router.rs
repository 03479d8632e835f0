//! The proxy's routing state machine: one line in, at most one line out, and
//! the logical message to record.

use super::envelope::{self as env, Incoming};
use crate::frame::id_key;
use acp_tee_shared::Direction;
use serde_json::value::RawValue;
use std::collections::HashMap;

/// A logical message to record: what the client side saw, and the other side
/// of the hop.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Logical {
    /// Client to agent, or agent to client.
    pub dir: Direction,
    /// The message as the client side has it (a plain JSON-RPC line).
    pub raw: Vec<u8>,
    /// The same message on the successor side of the hop (usually inside a
    /// `proxy/successor` envelope); `None` when it went nowhere.
    pub envelope: Option<Vec<u8>>,
}

/// What to do with one incoming line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Routed {
    /// The line to send to the conductor, if any.
    pub send: Option<Vec<u8>>,
    /// What to record.
    pub record: Logical,
    /// A line we could not route answered by us (a JSON-RPC error, sent
    /// back as `send`): recorded after `record`, going the other way.
    pub reply: Option<Logical>,
}

/// A request we sent on and the id it must be answered with.
struct Forwarded {
    /// The id the request had when it reached us (exact text).
    original: Box<RawValue>,
}

/// Routes messages between the client side (plain) and the successor side
/// (`proxy/successor` envelopes) of one proxy hop.
///
/// Ids are compared by value ([`id_key`]). Every request we pass on gets a fresh id of ours (`"acp-tee-N"`), so
/// that the client's and the agent's id spaces never collide on our link; the
/// answer is sent back under the original id.
#[derive(Default)]
pub struct Router {
    next_id: u64,
    /// Our id (text) -> the client's request we forwarded to the successor.
    to_successor: HashMap<String, Forwarded>,
    /// Our id (text) -> the successor's request we forwarded to the client.
    to_client: HashMap<String, Forwarded>,
    /// Original id (text) -> our id, per side, for `$/cancel_request`.
    client_ids: HashMap<String, Box<RawValue>>,
    successor_ids: HashMap<String, Box<RawValue>>,
    /// The conductor speaks the SDK 2.x names (`_proxy/...`).
    legacy: bool,
}

impl Router {
    /// A router with nothing in flight.
    pub fn new() -> Self {
        Self::default()
    }

    /// How many requests wait for an answer.
    pub fn in_flight(&self) -> usize {
        self.to_successor.len() + self.to_client.len()
    }

    fn fresh_id(&mut self) -> Box<RawValue> {
        self.next_id += 1;
        RawValue::from_string(format!("\"acp-tee-{}\"", self.next_id)).expect("a quoted string is JSON")
    }

    fn successor_method(&self) -> &'static str {
        if self.legacy {
            env::LEGACY_SUCCESSOR
        } else {
            env::SUCCESSOR
        }
    }

    /// Routes one line read from the conductor (newline included).
    pub fn route(&mut self, line: &[u8]) -> Routed {
        let Some(msg) = env::parse(line) else {
            return rejected(line);
        };
        match msg {
            Incoming::Call { id, method, params } => match method.as_str() {
                env::SUCCESSOR | env::LEGACY_SUCCESSOR => self.successor_call(line, id, params),
                env::CANCEL_REQUEST => self.cancel(line, params),
                _ => self.client_call(line, id, &method, params),
            },
            Incoming::Response { id, result, error } => self.response(line, id, result, error),
        }
    }

    /// A plain request or notification from the client side: wrap it for the successor.
    fn client_call(&mut self, line: &[u8], id: Option<&RawValue>, method: &str, params: Option<&RawValue>) -> Routed {
        let inner_method = match method {
            env::PROXY_INITIALIZE => "initialize",
            env::LEGACY_PROXY_INITIALIZE => {
                self.legacy = true;
                "initialize"
            }
            other => other,
        };
        let our_id = id.map(|original| {
            let ours = self.fresh_id();
            self.client_ids.insert(id_key(original.get()).into_owned(), ours.clone());
            self.to_successor.insert(id_key(ours.get()).into_owned(), Forwarded { original: original.to_owned() });
            ours
        });
        let send = env::wrap(self.successor_method(), our_id.as_deref(), inner_method, params);
        Routed {
            send: Some(send.clone()),
            record: Logical { dir: Direction::ClientToAgent, raw: line.to_vec(), envelope: Some(send) },
            reply: None,
        }
    }

    /// A `proxy/successor` request or notification: unwrap it for the client.
    fn successor_call(&mut self, line: &[u8], id: Option<&RawValue>, params: Option<&RawValue>) -> Routed {
        let Some(inner) = env::unwrap_params(params) else {
            tracing::warn!("proxy: a {} envelope without an inner method was answered with an error", env::SUCCESSOR);
            let mut routed = unroutable(line);
            routed.record.dir = Direction::AgentToClient;
            if let Some(id) = id {
                let error = env::error_response(id, env::INVALID_PARAMS, "the envelope's params name no inner method");
                routed.reply = Some(Logical { dir: Direction::ClientToAgent, raw: error.clone(), envelope: None });
                routed.send = Some(error);
            }
            return routed;
        };
        let our_id = id.map(|envelope_id| {
            let ours = self.fresh_id();
            self.successor_ids.insert(id_key(envelope_id.get()).into_owned(), ours.clone());
            self.to_client.insert(id_key(ours.get()).into_owned(), Forwarded { original: envelope_id.to_owned() });
            ours
        });
        let send = env::call(our_id.as_deref(), &inner.method, inner.params);
        Routed {
            send: Some(send.clone()),
            record: Logical { dir: Direction::AgentToClient, raw: send, envelope: Some(line.to_vec()) },
            reply: None,
        }
    }

    /// A response: to a request we sent the successor, or one we sent the client.
    fn response(&mut self, line: &[u8], id: &RawValue, result: Option<&RawValue>, error: Option<&RawValue>) -> Routed {
        if let Some(f) = self.to_successor.remove(&*id_key(id.get())) {
            self.client_ids.remove(&*id_key(f.original.get()));
            let send = env::response(&f.original, result, error);
            return Routed {
                send: Some(send.clone()),
                record: Logical { dir: Direction::AgentToClient, raw: send, envelope: Some(line.to_vec()) },
                reply: None,
            };
        }
        if let Some(f) = self.to_client.remove(&*id_key(id.get())) {
            self.successor_ids.remove(&*id_key(f.original.get()));
            let send = env::response(&f.original, result, error);
            return Routed {
                send: Some(send.clone()),
                record: Logical { dir: Direction::ClientToAgent, raw: line.to_vec(), envelope: Some(send) },
                reply: None,
            };
        }
        tracing::warn!("proxy: dropped a response to unknown request {}", id.get());
        unroutable(line)
    }

    /// `$/cancel_request` names a request on this hop by the id it had when it
    /// reached us; pass it on under the id we gave that request.
    fn cancel(&mut self, line: &[u8], params: Option<&RawValue>) -> Routed {
        let Some(cancelled) = env::cancelled_id(params) else {
            return unroutable(line);
        };
        if let Some(ours) = self.client_ids.get(&*id_key(&cancelled)) {
            let send = env::cancel(ours);
            return Routed {
                send: Some(send.clone()),
                record: Logical { dir: Direction::ClientToAgent, raw: line.to_vec(), envelope: Some(send) },
                reply: None,
            };
        }
        if let Some(ours) = self.successor_ids.get(&*id_key(&cancelled)) {
            let send = env::cancel(ours);
            return Routed {
                send: Some(send.clone()),
                record: Logical { dir: Direction::AgentToClient, raw: send, envelope: Some(line.to_vec()) },
                reply: None,
            };
        }
        tracing::debug!("proxy: a cancel for {cancelled}, which is no longer in flight");
        unroutable(line)
    }
}

/// A line that goes nowhere is still recorded, as the client side's.
fn unroutable(line: &[u8]) -> Routed {
    Routed {
        send: None,
        record: Logical { dir: Direction::ClientToAgent, raw: line.to_vec(), envelope: None },
        reply: None,
    }
}

/// A line that is no message we can route, answered as JSON-RPC 2.0 says
/// (a peer waiting for an answer must get one): `-32700` with a null id for
/// what is not JSON, `-32600` for JSON that is no valid request (with the
/// request's id where it has one usable as an id), and for a batch (which
/// ACP does not use and the proxy does not route) an array of `-32600`s, one
/// per element but notifications. Responses and notifications are never
/// answered. The line is recorded as the client side's, the answer as the
/// agent side's.
fn rejected(line: &[u8]) -> Routed {
    let mut routed = unroutable(line);
    let answer = match env::reject(line) {
        env::Rejection::Silent => None,
        env::Rejection::Answer(answer) => Some(answer),
    };
    tracing::warn!(
        "proxy: a line that is not a JSON-RPC message we can route ({} bytes) was {}",
        line.len(),
        if answer.is_some() { "answered with an error" } else { "dropped" }
    );
    if let Some(answer) = answer {
        routed.reply = Some(Logical { dir: Direction::AgentToClient, raw: answer.clone(), envelope: None });
        routed.send = Some(answer);
    }
    routed
}
