//! The checker's answers: a response or error matched to its request, and
//! what answering it means for the sequence rules (a turn's end, a
//! session's start, `initialize`'s capabilities).

use super::rules::Rule;
use super::{hash_of, quote, schema, wire, Checker, Request, What, ANSWERED_HASHED, ANSWERED_REMEMBERED};
use crate::frame::id_key;
use serde_json::value::RawValue;

impl Checker {
    pub(super) fn response(
        &mut self,
        seq: i64,
        from_client: bool,
        id: &RawValue,
        result: Option<&RawValue>,
        error: Option<&RawValue>,
    ) {
        let mut key = (!from_client, id_key(id.get()).into_owned().into_boxed_str());
        if id.get() == "null" && error.is_some() && !self.in_flight.contains_key(&key) {
            // An error answering a request whose id could not be read:
            // the oldest such request of the other peer still in flight.
            if let Some(bad) = self.oldest_bad_id(!from_client) {
                key = bad;
            }
        }
        if let (true, Some(e), None) = (self.mcp(), error, result) {
            // ACP's error objects are judged by its schema (`schema.error`).
            let asked = self.in_flight.get(&key).map(|r| r.seq);
            self.error_shape(seq, from_client, asked, e);
        }
        let Some(request) = self.in_flight.remove(&key) else {
            if let Some(&(asked, answered)) = self.answered.get(&key) {
                let message = format!(
                    "{} answered the request of frame {asked} a second time (the first answer was frame {answered})",
                    self.who(from_client)
                );
                self.find(Rule::AnsweredTwice, vec![asked, answered, seq], message);
            } else if self.answered_hashes.contains(&hash_of(&key)) {
                let message = format!(
                    "{} answered the id {} a second time (its first answer is older than the last \
                     {ANSWERED_REMEMBERED} answers, whose frames are kept)",
                    self.who(from_client),
                    quote(id.get())
                );
                self.find(Rule::AnsweredTwice, vec![seq], message);
            } else if self.unfollowed == 0 && !self.answered_forgotten && id.get() != "null" {
                let message = format!(
                    "{} answered the id {}, which {} never asked",
                    self.who(from_client),
                    quote(id.get()),
                    self.who(!from_client)
                );
                self.find(Rule::UnknownResponse, vec![seq], message);
            }
            return;
        };
        if self.answered_hashes.len() < ANSWERED_HASHED {
            self.answered_hashes.insert(hash_of(&key));
        } else if !self.answered_hashes.contains(&hash_of(&key)) && !self.answered_forgotten {
            // From here an answer to an id not known may answer a request
            // no longer remembered: such answers are not judged.
            self.answered_forgotten = true;
            self.limit(seq, &format!("more than {ANSWERED_HASHED} requests were answered"));
        }
        self.answered.insert(key, (request.seq, seq));
        if self.mcp() {
            // ACP's schema and the rules of what was answered do not apply.
            return self.mcp_answered(seq, request, result.filter(|_| error.is_none()));
        }
        let both = result.is_some() && error.is_some();
        if let Some(e) = error {
            if !both {
                if let Err(problem) = schema::error(e) {
                    self.schema_problem(
                        Rule::SchemaError,
                        vec![request.seq, seq],
                        from_client,
                        "error",
                        &request.method,
                        problem,
                    );
                }
            }
            let mut keep = None;
            let code = wire::member::<wire::RpcError>(Some(e), &mut keep).and_then(|e| e.code);
            if let (Some(cancel), true) = (request.cancel_request, code != Some(-32800)) {
                let code = code.map_or("no code".to_owned(), |c| format!("error {c}"));
                let message = format!(
                    "the request of frame {} was cancelled with $/cancel_request (frame {cancel}) and answered with \
                     {code}, where the spec asks for error -32800 or its result",
                    request.seq
                );
                self.find(Rule::CancelRequestAnswer, vec![request.seq, cancel, seq], message);
            }
        }
        if let (Some(r), false) = (result, both) {
            if !self.v2() {
                if let Err(problem) = schema::result(!from_client, &request.method, r) {
                    self.schema_problem(
                        Rule::SchemaResult,
                        vec![request.seq, seq],
                        from_client,
                        "result",
                        &request.method,
                        problem,
                    );
                }
            }
        }
        let ok = result.filter(|_| error.is_none());
        self.answered_what(seq, request, ok);
    }

    /// The rules that depend on what the answered request was.
    pub(super) fn answered_what(&mut self, seq: i64, request: Request, ok: Option<&RawValue>) {
        match request.what {
            What::Initialize => {
                let mut keep = None;
                if let Some(init) = wire::member::<wire::Answer>(ok, &mut keep) {
                    let load = init.agent_capabilities.and_then(|c| c.load_session).unwrap_or(false);
                    self.load_session = Some((seq, load));
                    self.protocol_version = init.protocol_version;
                    if let Some(v) = init.protocol_version.filter(|v| *v != 1) {
                        let message = format!(
                            "the agent answered initialize with protocol version {v}; only version 1 is checked \
                             against the schema"
                        );
                        self.find(Rule::VersionUnchecked, vec![seq], message);
                    }
                }
            }
            What::Open => {
                self.opening = self.opening.saturating_sub(1);
                let mut keep = None;
                if let Some(sid) = wire::member::<wire::Answer>(ok, &mut keep).and_then(|r| r.session_id) {
                    self.made(&sid);
                }
            }
            What::Permission(Some(options)) => {
                let mut keep = None;
                let Some(outcome) = wire::member::<wire::Answer>(ok, &mut keep).and_then(|a| a.outcome) else { return };
                let Some(chosen) = outcome.option_id.filter(|_| outcome.outcome.as_deref() == Some("selected")) else {
                    return;
                };
                if !options.contains(&hash_of(&*chosen)) {
                    let message = format!(
                        "the client selected the option {}, which the permission request of frame {} did not offer",
                        quote(&chosen),
                        request.seq
                    );
                    self.find(Rule::PermissionUnknownOption, vec![request.seq, seq], message);
                }
            }
            What::Permission(None) | What::Other | What::ToolList { .. } => {}
        }
    }
}

impl Checker {
    /// The oldest request `from_client` sent with an id that is no JSON-RPC
    /// id and that is still in flight, taken from the queue.
    fn oldest_bad_id(&mut self, from_client: bool) -> Option<super::Key> {
        let queue = &mut self.bad_ids[usize::from(from_client)];
        // Requests answered since are dropped on the way.
        while let Some(key) = queue.pop_front() {
            if self.in_flight.contains_key(&key) {
                return Some(key);
            }
        }
        None
    }
}
