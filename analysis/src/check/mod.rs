//! Protocol checks: what in a trace breaks JSON-RPC, the ACP spec or MCP's,
//! found by reading its frames after the fact (`acp-tee check`, the API's
//! `/api/traces/{id}/findings`), never while recording.
//!
//! [`Checker`] is a fold over a trace's frames in seq order. Each message is
//! read once: its JSON-RPC shape (`wire.rs`), its params, result or error
//! against the official ACP schema for its method and direction
//! (`schema.rs`), and the sequence rules: requests and their answers,
//! `initialize`, sessions, turns, cancellation, capabilities, permissions.
//! Each [`Rule`] (`rules.rs`) has a stable code, a severity and one sentence
//! per finding, naming the frames involved. An MCP trace gets the JSON-RPC
//! rules and MCP's own (`mcp.rs`) instead of ACP's.
//!
//! Memory is bounded whatever the trace holds: at most [`MAX_IN_FLIGHT`]
//! requests awaiting answers are followed, [`ANSWERED_REMEMBERED`] answered
//! ids remembered with their frames and [`ANSWERED_HASHED`] as hashes (to
//! tell a second answer from an unknown one), the one fold's bounds on
//! sessions, turns and tool calls ([`crate::fold`]; [`MAX_SESSIONS`] is its
//! `SESSIONS_MAX`), MCP's tool names ([`mcp::TOOLS_MAX`]) and
//! [`MAX_FINDINGS`] findings listed; past a bound the checker says so once
//! (`check.limit`) and counts.

mod answers;
mod conformance;
mod mcp;
mod report;
mod rules;
mod schema;
mod sessions;

#[cfg(test)]
mod fuzz;
#[cfg(test)]
mod mcp_tests;
#[cfg(test)]
mod tests;

/// A frame of the tests: `raw` as frame `seq` of `kind` going `dir`, its
/// stored columns (id, method, session) left empty for the checker to read
/// from the bytes.
#[cfg(test)]
fn test_frame(
    seq: i64,
    dir: acp_tee_shared::Direction,
    kind: acp_tee_shared::FrameKind,
    raw: &[u8],
) -> crate::store::FrameRef<'_> {
    crate::store::FrameRef {
        seq,
        t_ns: 0,
        dir,
        kind,
        rpc_id: None,
        method: None,
        session_id: None,
        reply_to_seq: None,
        raw,
    }
}

pub use rules::Rule;

use crate::fold::Conversation;
use crate::frame::id_key;
use crate::store::{FrameRef, Store, StoreError};
use acp_tee_shared::check::{CodeCount, Finding, FindingCounts, TraceFindings};
use acp_tee_shared::{Direction, FrameKind, Protocol};
use acp_tee_wire::acp::{self as wire, Envelope};
use hashlink::LruCache;
use serde::de::IgnoredAny;
use serde_json::value::RawValue;
use std::borrow::Cow;
use std::collections::{HashMap, HashSet};

/// Requests awaiting an answer the checker follows at most; past this, new
/// requests are not followed (and answers to them not judged).
pub const MAX_IN_FLIGHT: usize = 100_000;

/// Answered requests remembered with their frames, the latest, to name
/// both when one is answered a second time.
pub const ANSWERED_REMEMBERED: usize = 10_000;

/// Answered requests remembered at all (by a 64-bit hash of sender and id),
/// to tell a second answer from an answer to an id never asked; past this
/// the checker says so (`check.limit`) and no longer judges answers it
/// cannot place.
pub const ANSWERED_HASHED: usize = 1 << 20;

/// Sessions followed at most; past this, `session.unknown` is not judged.
pub const MAX_SESSIONS: usize = crate::fold::SESSIONS_MAX;

/// Findings listed at most; the rest are counted.
pub const MAX_FINDINGS: usize = 10_000;

/// The default of `--max-line-bytes`: a frame longer than this is
/// `transport.line-too-large`.
pub const DEFAULT_MAX_LINE_BYTES: usize = 10 * 1024 * 1024;

/// Options kept per permission request (each as a hash of its whole id).
const OPTIONS_MAX: usize = 64;

/// Characters of a peer's text (a method, an id) quoted in a finding.
const QUOTE_MAX_CHARS: usize = 80;

/// What the checker is told beyond the frames.
#[derive(Clone, Copy, Debug)]
pub struct CheckOptions {
    /// Frames longer than this many bytes are `transport.line-too-large`.
    pub max_line_bytes: usize,
}

impl Default for CheckOptions {
    fn default() -> Self {
        CheckOptions { max_line_bytes: DEFAULT_MAX_LINE_BYTES }
    }
}

/// Checks trace `trace_id` of `store`, every frame stored.
pub fn check_trace(store: &Store, trace_id: i64, opts: CheckOptions) -> Result<TraceFindings, StoreError> {
    check_trace_of(store, trace_id, opts, false)
}

/// [`check_trace`] of a trace that is `live` or not ([`Checker::report_of`]).
pub fn check_trace_of(
    store: &Store,
    trace_id: i64,
    opts: CheckOptions,
    live: bool,
) -> Result<TraceFindings, StoreError> {
    let mut checker = Checker::new(opts);
    if let Some(protocol) = store.trace(trace_id)?.protocol {
        checker.set_protocol(protocol);
    }
    checker.catch_up(store, trace_id)?;
    Ok(checker.report_of(trace_id, live))
}

/// A request's id and who sent it: ids are scoped per direction.
type Key = (bool, Box<str>);

/// What a request awaiting its answer is, as far as the rules care.
#[derive(Debug)]
enum What {
    Other,
    Initialize,
    /// `session/new` or `session/fork`: the result names a new session.
    Open,
    /// Hashes of the whole option ids offered (`None`: too many to keep).
    Permission(Option<Vec<u64>>),
    /// MCP's `tools/list`: its first page (no `cursor`), or a later one.
    ToolList {
        first_page: bool,
    },
}

/// A request no answer has come for yet.
#[derive(Debug)]
struct Request {
    seq: i64,
    from_client: bool,
    method: Box<str>,
    /// The id as written, cut.
    id: Box<str>,
    /// A `$/cancel_request` naming it.
    cancel_request: Option<i64>,
    what: What,
}

/// The fold: feed frames in seq order, then ask for [`Checker::report`].
pub struct Checker {
    opts: CheckOptions,
    frames: u64,
    last_seq: i64,
    findings: Vec<Finding>,
    counts: [u64; Rule::ALL.len()],
    left_out: u64,
    in_flight: HashMap<Key, Request>,
    answered: LruCache<Key, (i64, i64)>,
    /// Hashes of every answered request's key, up to [`ANSWERED_HASHED`].
    answered_hashes: HashSet<u64>,
    /// More requests were answered than [`ANSWERED_HASHED`].
    answered_forgotten: bool,
    /// Requests in flight whose id is no JSON-RPC id, oldest first, of the
    /// agent and of the client (some may have been answered since).
    bad_ids: [std::collections::VecDeque<Key>; 2],
    /// Requests not followed past [`MAX_IN_FLIGHT`].
    unfollowed: u64,
    initialize: Option<i64>,
    before_initialize_told: bool,
    client_caps: Option<(i64, wire::ClientCapabilities)>,
    load_session: Option<(i64, bool)>,
    protocol_version: Option<i64>,
    /// The sessions a session/new, load, resume or fork made.
    made: HashSet<Box<str>>,
    sessions_full: bool,
    /// The one fold ([`crate::fold`]): turns, cancels, replays and tool
    /// calls, which the session rules judge.
    conv: Conversation,
    /// Turns, tool calls and permission requests, as the fold told them.
    conversation: acp_tee_shared::check::ConversationCounts,
    /// `session/new` and `session/fork` requests awaiting their answers.
    opening: u32,
    unknown_sessions_told: HashSet<Box<str>>,
    limits_told: bool,
    /// The protocol judged by: given ([`Checker::set_protocol`]), else
    /// from the first `initialize`; `None` (not known) is judged as ACP.
    protocol: Option<Protocol>,
    /// What the MCP rules follow: the lifecycle, the tools listed.
    mcp_state: mcp::McpState,
}

impl Checker {
    /// A checker for one trace.
    pub fn new(opts: CheckOptions) -> Self {
        Checker {
            opts,
            frames: 0,
            last_seq: 0,
            findings: Vec::new(),
            counts: [0; Rule::ALL.len()],
            left_out: 0,
            in_flight: HashMap::new(),
            answered: LruCache::new(ANSWERED_REMEMBERED),
            answered_hashes: HashSet::new(),
            answered_forgotten: false,
            bad_ids: Default::default(),
            unfollowed: 0,
            initialize: None,
            before_initialize_told: false,
            client_caps: None,
            load_session: None,
            protocol_version: None,
            made: HashSet::new(),
            sessions_full: false,
            conv: Conversation::default(),
            conversation: Default::default(),
            opening: 0,
            unknown_sessions_told: HashSet::new(),
            limits_told: false,
            protocol: None,
            mcp_state: Default::default(),
        }
    }

    /// Judges the trace as one of `protocol` (the trace's stored protocol),
    /// whatever its `initialize` says.
    pub fn set_protocol(&mut self, protocol: Protocol) {
        self.protocol = Some(protocol);
    }

    /// An MCP trace: judged by the JSON-RPC, lifecycle and MCP rules
    /// (`mcp.rs`), none of ACP's (schema, sessions, capabilities,
    /// permissions).
    fn mcp(&self) -> bool {
        self.protocol == Some(Protocol::Mcp)
    }

    /// Checks trace `trace_id`'s frames after the last one fed.
    pub fn catch_up(&mut self, store: &Store, trace_id: i64) -> Result<(), StoreError> {
        store.fold_frames_after(trace_id, self.last_seq, |f| {
            self.feed(f);
            true
        })
    }

    /// The last seq checked (0 before any frame).
    pub fn last_seq(&self) -> i64 {
        self.last_seq
    }

    /// Checks one frame (frames come in seq order).
    pub fn feed(&mut self, f: &FrameRef<'_>) {
        self.frames += 1;
        self.last_seq = self.last_seq.max(f.seq);
        if f.dir == Direction::AgentStderr || f.kind == FrameKind::Stderr {
            return;
        }
        let from_client = f.dir == Direction::ClientToAgent;
        if f.raw.len() > self.opts.max_line_bytes {
            let message = format!(
                "{} sent a line of {} bytes, more than the limit of {} (--max-line-bytes)",
                self.who(from_client),
                f.raw.len(),
                self.opts.max_line_bytes
            );
            self.find(Rule::LineTooLarge, vec![f.seq], message);
        }
        let text = f.raw.trim_ascii();
        if text.is_empty() {
            return;
        }
        if text[0] == b'[' {
            if let Ok(elements) = serde_json::from_slice::<Vec<&RawValue>>(text) {
                if elements.is_empty() {
                    self.find(Rule::NotAMessage, vec![f.seq], format!("{} sent an empty batch", self.who(from_client)));
                }
                for e in elements {
                    self.message(f.seq, from_client, e.get().as_bytes());
                }
                return;
            }
        }
        self.message(f.seq, from_client, text);
        if !self.mcp() {
            self.fold(f);
        }
    }

    /// Checks one message (a frame, or an element of a batch).
    fn message(&mut self, seq: i64, from_client: bool, text: &[u8]) {
        // A repeated member counts as its last, as the recorder reads it
        // (the envelope keeps the last itself).
        let envelope = match text.first() {
            Some(b'{') => serde_json::from_slice::<Envelope>(text),
            _ => Err(serde::de::Error::custom("not an object")),
        };
        let env = match envelope {
            Ok(env) => env,
            Err(e) => return self.unreadable(seq, from_client, text, &e),
        };
        match env.jsonrpc.map(RawValue::get) {
            Some("\"2.0\"") => {}
            None => self.find(
                Rule::JsonrpcVersion,
                vec![seq],
                format!("{} sent a message without the `jsonrpc` member JSON-RPC 2.0 requires", self.who(from_client)),
            ),
            Some(other) => self.find(
                Rule::JsonrpcVersion,
                vec![seq],
                format!("{} sent a message whose `jsonrpc` is {}, not \"2.0\"", self.who(from_client), quote(other)),
            ),
        }
        let method = match env.method.map(|m| serde_json::from_str::<Cow<str>>(m.get())) {
            None => None,
            Some(Ok(m)) => Some(m),
            Some(Err(_)) => {
                let message = format!("{} sent a message whose `method` is not a string", self.who(from_client));
                return self.find(Rule::NotAMessage, vec![seq], message);
            }
        };
        let mut id_ok = true;
        if let Some(id) = env.id {
            let response_to_unreadable = method.is_none() && env.error.is_some() && id.get() == "null";
            if !is_string_or_integer(id.get()) && !response_to_unreadable {
                id_ok = false;
                let message =
                    format!("{} used the id {}, not a string or an integer", self.who(from_client), quote(id.get()));
                self.find(Rule::IdType, vec![seq], message);
            }
        }
        match (method, env.id) {
            // A request whose id is no JSON-RPC id is followed all the
            // same: its peer may answer it (ids compare by value, `id_key`).
            (Some(m), Some(id)) => self.request(seq, from_client, &m, id, !id_ok, env.params),
            (Some(m), None) => self.notification(seq, from_client, &m, env.params),
            (None, Some(id)) if env.result.is_some() || env.error.is_some() => {
                if env.result.is_some() && env.error.is_some() {
                    let message = format!("{} sent a response with both `result` and `error`", self.who(from_client));
                    self.find(Rule::ResultAndError, vec![seq], message);
                }
                self.response(seq, from_client, id, env.result, env.error);
            }
            (None, None) if env.result.is_some() || env.error.is_some() => {
                let message = format!("{} sent a response without an `id`", self.who(from_client));
                self.find(Rule::NotAMessage, vec![seq], message);
            }
            _ => {
                let message = format!(
                    "{} sent an object with neither a `method` nor a `result` or `error`",
                    self.who(from_client)
                );
                self.find(Rule::NotAMessage, vec![seq], message);
            }
        }
    }

    /// A message that is not a JSON object with distinct members.
    fn unreadable(&mut self, seq: i64, from_client: bool, text: &[u8], e: &serde_json::Error) {
        if serde_json::from_slice::<IgnoredAny>(text).is_err() {
            let peer = self.who(!from_client);
            let place = if from_client { format!("{peer}'s stdin") } else { "its stdout".to_owned() };
            let message = format!(
                "{} wrote a line that is not JSON to {place}, which {peer} cannot read: {}",
                self.who(from_client),
                quote(&String::from_utf8_lossy(text))
            );
            return self.find(Rule::NotJson, vec![seq], message);
        }
        let what = match text.first() {
            Some(b'{') => format!("an object JSON-RPC cannot read ({})", schema_said(e)),
            Some(b'[') => "an array that is not a batch of messages".to_owned(),
            _ => "a JSON value that is not an object".to_owned(),
        };
        self.find(Rule::NotAMessage, vec![seq], format!("{} sent {what}", self.who(from_client)));
    }

    /// A request; `id_bad` when its id is no JSON-RPC id.
    fn request(
        &mut self,
        seq: i64,
        from_client: bool,
        method: &str,
        id: &RawValue,
        id_bad: bool,
        params: Option<&RawValue>,
    ) {
        let is_initialize = matches!(method, "initialize" | "proxy/initialize" | "_proxy/initialize");
        if is_initialize && self.protocol.is_none() {
            self.protocol = acp_tee_wire::frame::protocol_of_initialize_members(params);
        }
        if self.mcp() {
            return self.mcp_request(seq, from_client, method, id, id_bad, params);
        }
        if is_initialize {
            if let Some(first) = self.initialize {
                let message =
                    format!("{} sent a second initialize (the first was frame {first})", self.who(from_client));
                self.find(Rule::SecondInitialize, vec![first, seq], message);
            } else {
                self.initialize = Some(seq);
                let mut keep = None;
                let caps = wire::member::<wire::Params>(params, &mut keep).and_then(|p| p.client_capabilities);
                self.client_caps = Some((seq, caps.unwrap_or_default()));
            }
        } else if self.initialize.is_none() && !self.before_initialize_told {
            self.before_initialize_told = true;
            let message = format!("{} sent {} before initialize", self.who(from_client), quote(method));
            self.find(Rule::BeforeInitialize, vec![seq], message);
        }
        self.schema_request(seq, from_client, method, params);
        self.capability(seq, from_client, method);
        self.session_of(seq, from_client, method, params);
        let what = match method {
            _ if is_initialize => What::Initialize,
            "session/new" | "session/fork" => {
                self.opening += 1;
                What::Open
            }
            "session/request_permission" => What::Permission(offered(params)),
            _ => What::Other,
        };
        self.follow(seq, from_client, method, id, id_bad, what);
    }

    /// Follows a request until its answer.
    fn follow(&mut self, seq: i64, from_client: bool, method: &str, id: &RawValue, id_bad: bool, what: What) {
        let key = (from_client, id_key(id.get()).into_owned().into_boxed_str());
        if let Some(earlier) = self.in_flight.get(&key) {
            let message = format!(
                "{} reused the id {} of its request in frame {}, which is still unanswered",
                self.who(from_client),
                quote(id.get()),
                earlier.seq
            );
            let earlier = earlier.seq;
            self.find(Rule::DuplicateId, vec![earlier, seq], message);
        } else if self.in_flight.len() >= MAX_IN_FLIGHT {
            self.unfollowed += 1;
            self.limit(seq, &format!("more than {MAX_IN_FLIGHT} requests were awaiting answers"));
            return;
        }
        let request = Request {
            seq,
            from_client,
            method: cut(method).into(),
            id: cut(id.get()).into(),
            cancel_request: None,
            what,
        };
        if id_bad {
            // An error answering it may have the id `null`.
            let queue = &mut self.bad_ids[usize::from(from_client)];
            if queue.len() >= 2 * MAX_IN_FLIGHT {
                let in_flight = &self.in_flight;
                queue.retain(|k| in_flight.contains_key(k));
            }
            queue.push_back(key.clone());
        }
        self.in_flight.insert(key, request);
    }

    fn notification(&mut self, seq: i64, from_client: bool, method: &str, params: Option<&RawValue>) {
        if self.mcp() {
            return self.mcp_notification(seq, from_client, method);
        }
        self.schema_notification(seq, from_client, method, params);
        self.session_of(seq, from_client, method, params);
        if method == "$/cancel_request" {
            let mut keep = None;
            if let Some(request_id) = wire::member::<wire::Params>(params, &mut keep).and_then(|p| p.request_id) {
                let key = (from_client, id_key(request_id.get()).into_owned().into_boxed_str());
                if let Some(r) = self.in_flight.get_mut(&key) {
                    r.cancel_request.get_or_insert(seq);
                }
            }
        }
    }

    /// The trace negotiated v2, whose prompt answers only acknowledge and
    /// whose schema is a draft: schema and turn rules are left out.
    fn v2(&self) -> bool {
        self.protocol_version == Some(2)
    }

    /// The peer that sent a message, as a finding names it: the client, and
    /// the agent of ACP or the server of MCP.
    fn who(&self, from_client: bool) -> &'static str {
        match (from_client, self.mcp()) {
            (true, _) => "the client",
            (false, false) => "the agent",
            (false, true) => "the server",
        }
    }

    /// Says once that a bound was reached.
    fn limit(&mut self, seq: i64, what: &str) {
        if self.limits_told {
            return;
        }
        self.limits_told = true;
        let message = format!("{what}: the checker stopped following more, and judges less from here on");
        let seqs = if seq > 0 { vec![seq] } else { Vec::new() };
        self.find(Rule::CheckLimit, seqs, message);
    }

    fn find(&mut self, rule: Rule, seqs: Vec<i64>, message: String) {
        self.counts[rule.index()] += 1;
        if self.findings.len() >= MAX_FINDINGS {
            self.left_out += 1;
            return;
        }
        self.findings.push(Finding { code: rule.code().to_owned(), severity: rule.severity(), seqs, message });
    }
}

/// JSON-RPC ids: strings, or numbers without a fractional part.
fn is_string_or_integer(id: &str) -> bool {
    match id.as_bytes().first() {
        Some(b'"') => true,
        Some(b'-' | b'0'..=b'9') => !id.contains(['.', 'e', 'E']),
        _ => false,
    }
}

/// The option ids a permission request offers, as hashes of the whole ids
/// (`None` past [`OPTIONS_MAX`]).
fn offered(params: Option<&RawValue>) -> Option<Vec<u64>> {
    let mut keep = None;
    let options = wire::member::<wire::Params>(params, &mut keep).and_then(|p| p.options).unwrap_or_default();
    if options.len() > OPTIONS_MAX {
        return None;
    }
    Some(options.iter().filter_map(|o| o.option_id.as_deref()).map(hash_of).collect())
}

/// A 64-bit hash of `value`, the same in every run: what the checker keeps
/// of ids it must recognise but need not quote.
fn hash_of(value: &(impl std::hash::Hash + ?Sized)) -> u64 {
    use std::hash::{BuildHasher, BuildHasherDefault};
    BuildHasherDefault::<std::collections::hash_map::DefaultHasher>::default().hash_one(value)
}

/// A peer's text cut to [`QUOTE_MAX_CHARS`].
fn cut(s: &str) -> Cow<'_, str> {
    match s.char_indices().nth(QUOTE_MAX_CHARS) {
        Some((i, _)) => Cow::Owned(format!("{}…", &s[..i])),
        None => Cow::Borrowed(s),
    }
}

/// A peer's text as a finding quotes it: cut, in backquotes.
fn quote(s: &str) -> String {
    format!("`{}`", cut(s))
}

/// What serde said of an object it could not read as a message.
fn schema_said(e: &serde_json::Error) -> String {
    let text = e.to_string();
    text.split(" at line ").next().unwrap_or(&text).to_owned()
}
