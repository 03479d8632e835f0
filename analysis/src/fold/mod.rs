//! The one fold of a conversation: a single pass over a trace's frames, in
//! seq order, that says what happened in ACP terms, as [`Event`]s handed to
//! the caller as each frame is read.
//!
//! Every reading of a conversation builds on it, so they agree on what a
//! turn, a tool call or an answered request is: the session model
//! ([`crate::session::Model`]), the OTLP mapping ([`crate::otlp`]) and
//! `diff`'s turns. The rules live here once:
//! - a request is followed until its answer (at most [`PENDING_MAX`] at a
//!   time; past that, counted and not followed);
//! - a session is known from the first frame that names it (at most
//!   [`SESSIONS_MAX`], one more when asked to keep one; past that, counted);
//! - a turn starts with a `session/prompt` of a known session and ends with
//!   its answer: a stop reason, an error, or (ACP v2, the protocol version
//!   `initialize` was answered with) the `state_update` that carries the
//!   stop reason; `session/cancel` marks the session's open turns and
//!   prompts cancelled, `$/cancel_request` the request it names;
//! - a tool call is one id per session: a `tool_call` repeated for an id,
//!   or a `tool_call_update` after it, is the same call; an update for an
//!   id never announced announces it (at most [`PENDING_MAX`] ids kept in
//!   all; past that, a repeat may count twice, and the event says so);
//! - updates a `session/load` or `session/resume` replays before its answer
//!   (none of the session's turns open) are the past shown again: they say
//!   so ([`Update::replayed`]) and announce no tool call.
//!
//! Streamed chunks, most of a trace, are told by their bytes when that is
//! sure ([`acp::plain_update_kind`]) and then not parsed.

use crate::frame::id_key;
use crate::store::FrameRef;
use acp_tee_shared::{Direction, FrameKind};
use acp_tee_wire::acp::{self, Answer, Usage};
use std::collections::{HashMap, HashSet};
use std::hash::{BuildHasherDefault, Hasher};
use std::sync::Arc;

pub use acp_tee_shared::session::{PENDING_MAX, SESSIONS_MAX};

/// Characters kept of a stop reason (peers may send any length).
pub const REASON_MAX_CHARS: usize = 64;

/// Characters kept of a request's method and id.
pub const NAME_MAX_CHARS: usize = 500;

/// Distinct request methods the fold shares one copy of.
const METHODS_SHARED: usize = 1000;

/// How a session was opened.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Opening {
    New,
    Load,
    Resume,
    Fork,
}

impl Opening {
    /// `new`, `load`, `resume`, `fork`.
    pub fn as_str(self) -> &'static str {
        match self {
            Opening::New => "new",
            Opening::Load => "load",
            Opening::Resume => "resume",
            Opening::Fork => "fork",
        }
    }
}

/// What a request is, as the fold tells requests apart.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum What {
    Initialize,
    Open(Opening),
    Prompt,
    Permission,
    Other,
}

impl What {
    /// The kind of a request of `method`.
    pub fn of(method: &str) -> What {
        match method {
            "initialize" => What::Initialize,
            "session/new" => What::Open(Opening::New),
            "session/load" => What::Open(Opening::Load),
            "session/resume" => What::Open(Opening::Resume),
            "session/fork" => What::Open(Opening::Fork),
            "session/prompt" => What::Prompt,
            "session/request_permission" => What::Permission,
            _ => What::Other,
        }
    }
}

/// A request followed until its answer.
#[derive(Clone, Debug)]
pub struct Request {
    pub seq: i64,
    pub t_ns: i64,
    pub dir: Direction,
    pub what: What,
    /// Its method (cut to [`NAME_MAX_CHARS`]), one copy per method.
    pub method: Option<Arc<str>>,
    /// Its JSON-RPC id as written (cut to [`NAME_MAX_CHARS`]).
    pub rpc_id: Option<Box<str>>,
    /// The session it names, when that session is kept: its place and id.
    pub session: Option<(usize, Arc<str>)>,
    /// Its JSON-RPC id's key ([`id_key`]).
    pub id_key: Option<Box<str>>,
    /// The `session/cancel` or `$/cancel_request` that cancelled it.
    pub cancel_seq: Option<i64>,
}

/// How a turn ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TurnEnd {
    /// With this stop reason (cut to [`REASON_MAX_CHARS`]).
    Reason(String),
    /// With a JSON-RPC error.
    Error,
    /// Answered with neither.
    NoReason,
}

impl TurnEnd {
    /// The stop reason, `error`, or `None`.
    pub fn reason(&self) -> Option<&str> {
        match self {
            TurnEnd::Reason(r) => Some(r),
            TurnEnd::Error => Some("error"),
            TurnEnd::NoReason => None,
        }
    }
}

/// A session the fold keeps: its place (in the order sessions were first
/// named, from 0) and its id.
#[derive(Clone, Copy, Debug)]
pub struct Sid<'a> {
    pub at: usize,
    pub id: &'a Arc<str>,
}

/// A `session/update`, as far as the fold read it.
pub struct Update<'a, 'f> {
    pub session: Sid<'a>,
    /// Its `sessionUpdate`; `None` when the update could not be read.
    pub kind: Option<&'a str>,
    /// The update, parsed; `None` for a streamed chunk told by its bytes.
    pub update: Option<&'a acp::Update<'f>>,
    /// Shown again by a `session/load` or `session/resume` being answered.
    pub replayed: bool,
    /// A `tool_call` or `tool_call_update` (not replayed) that announces a
    /// tool call the session has not heard of (a `tool_call` without an id
    /// always does).
    pub new_tool_call: bool,
    /// A `tool_call` past the tool call ids kept: it may repeat one.
    pub tool_calls_unchecked: bool,
}

/// What one frame meant.
pub enum Event<'a, 'f> {
    /// A session was named for the first time (kept).
    SessionSeen { session: Sid<'a> },
    /// A frame named a session past [`SESSIONS_MAX`].
    SessionLeftOut { session: &'a str },
    /// A request was sent; `followed` is false past [`PENDING_MAX`].
    Request { what: What, session: Option<Sid<'a>>, followed: bool },
    /// A followed request was answered (`f.kind` says whether with an
    /// error). `answer` is the result, read for the requests whose result
    /// the fold reads (`initialize`, openings, prompts), else `None`;
    /// `replayed`, for a `session/load` or `session/resume` of a kept
    /// session, how many updates it replayed before this answer.
    Answer { request: Request, answer: Option<&'a Answer<'f>>, replayed: Option<u64> },
    /// An opening request was answered without an error, naming a session.
    Opened { session: Sid<'a>, opening: Opening, request: i64 },
    /// A turn began; `in_flight` is the session's turn still open then,
    /// if any (the latest).
    TurnStarted { session: Sid<'a>, prompt: i64, in_flight: Option<i64> },
    /// A turn ended; `usage` is its answer's.
    TurnEnded { session: Sid<'a>, prompt: i64, cancel: Option<i64>, end: TurnEnd, usage: Option<Usage> },
    /// A `session/update` of a kept session.
    Update(Update<'a, 'f>),
    /// `session/cancel` of a kept session.
    Cancel { session: Sid<'a> },
}

/// Hashes the seqs that key followed requests: one multiplication (seqs
/// are unique and not chosen by peers), where SipHash cost a tenth of the
/// fold.
#[derive(Default)]
pub struct SeqHasher(u64);

impl Hasher for SeqHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0 ^ u64::from(b)).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        }
    }

    fn write_i64(&mut self, n: i64) {
        self.0 = (n as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    }
}

/// What the fold keeps of a session.
#[derive(Clone, Debug, Default)]
struct Session {
    id: Arc<str>,
    /// Open turns (prompt seq), with the `session/cancel` sent for them.
    open_turns: Vec<(i64, Option<i64>)>,
    /// The `session/load` or `session/resume` being answered, and the
    /// updates it replayed so far.
    replaying: Option<(i64, u64)>,
    /// Its tool calls' ids, hashed.
    tool_call_ids: HashSet<u64>,
}

/// The fold's state: what it follows between frames.
#[derive(Clone, Debug, Default)]
pub struct Conversation {
    sessions: Vec<Session>,
    by_id: HashMap<Box<str>, usize>,
    /// The session the last lookup found: frames of one session come in
    /// runs, and comparing the id is cheaper than hashing it.
    last_session: usize,
    /// A session kept past [`SESSIONS_MAX`].
    keep: Option<Box<str>>,
    pending: HashMap<i64, Request, BuildHasherDefault<SeqHasher>>,
    /// Requests not followed, past [`PENDING_MAX`].
    pub pending_left_out: u64,
    /// Methods of requests, shared (at most [`METHODS_SHARED`]).
    methods: HashMap<Box<str>, Arc<str>>,
    /// Tool call ids kept, in all sessions.
    tool_call_ids_kept: usize,
    /// The protocol version `initialize` was answered with.
    pub protocol_version: Option<i64>,
}

impl Conversation {
    /// A fold that keeps session `sid` however many sessions come before it.
    pub fn keeping(sid: &str) -> Conversation {
        Conversation { keep: Some(sid.into()), ..Conversation::default() }
    }

    /// The place of session `sid` among the sessions kept.
    pub fn index_of(&self, sid: &str) -> Option<usize> {
        self.by_id.get(sid).copied()
    }

    /// The requests still awaiting answers, in seq order.
    pub fn pending(&self) -> Vec<&Request> {
        let mut open: Vec<&Request> = self.pending.values().collect();
        open.sort_by_key(|r| r.seq);
        open
    }

    /// `method`, cut to [`NAME_MAX_CHARS`], shared with the requests before it.
    fn shared_method(&mut self, method: &str) -> Arc<str> {
        if let Some(m) = self.methods.get(method) {
            return m.clone();
        }
        let shared: Arc<str> = cut(method, NAME_MAX_CHARS).into();
        if self.methods.len() < METHODS_SHARED {
            self.methods.insert(method.into(), shared.clone());
        }
        shared
    }

    /// Reads frame `f` (frames come in seq order) and tells `on` what it
    /// meant, in order. Returns the place of the kept session it names.
    pub fn feed(&mut self, f: &FrameRef<'_>, on: &mut impl FnMut(Event<'_, '_>)) -> Option<usize> {
        let at = f.session_id.and_then(|sid| self.session(sid, on));
        match f.kind {
            FrameKind::Request => self.request(f, at, on),
            FrameKind::Notification => self.notification(f, at, on),
            FrameKind::Response | FrameKind::Error => self.response(f, on),
            _ => {}
        }
        at
    }

    /// Session `sid`'s place, added when new (`None` past the bound).
    fn session(&mut self, sid: &str, on: &mut impl FnMut(Event<'_, '_>)) -> Option<usize> {
        if self.sessions.get(self.last_session).is_some_and(|s| &*s.id == sid) {
            return Some(self.last_session);
        }
        let i = match self.by_id.get(sid) {
            Some(&i) => i,
            None if self.sessions.len() >= SESSIONS_MAX && self.keep.as_deref() != Some(sid) => {
                on(Event::SessionLeftOut { session: sid });
                return None;
            }
            None => {
                let at = self.sessions.len();
                self.sessions.push(Session { id: sid.into(), ..Session::default() });
                self.by_id.insert(sid.into(), at);
                on(Event::SessionSeen { session: Sid { at, id: &self.sessions[at].id } });
                at
            }
        };
        self.last_session = i;
        Some(i)
    }

    fn request(&mut self, f: &FrameRef<'_>, at: Option<usize>, on: &mut impl FnMut(Event<'_, '_>)) {
        let what = What::of(f.method.unwrap_or(""));
        let followed = self.pending.len() < PENDING_MAX;
        let session = at.map(|at| Sid { at, id: &self.sessions[at].id });
        on(Event::Request { what, session, followed });
        if let Some(at) = at {
            let s = &mut self.sessions[at];
            match what {
                What::Open(Opening::Load | Opening::Resume) => s.replaying = Some((f.seq, 0)),
                What::Prompt => {
                    let in_flight = s.open_turns.last().map(|t| t.0);
                    s.open_turns.push((f.seq, None));
                    on(Event::TurnStarted { session: Sid { at, id: &s.id }, prompt: f.seq, in_flight });
                }
                _ => {}
            }
        }
        if !followed {
            self.pending_left_out += 1;
            return;
        }
        let request = Request {
            seq: f.seq,
            t_ns: f.t_ns,
            dir: f.dir,
            what,
            method: f.method.map(|m| self.shared_method(m)),
            rpc_id: f.rpc_id.map(|id| cut(id, NAME_MAX_CHARS).into()),
            session: at.map(|at| (at, self.sessions[at].id.clone())),
            id_key: f.rpc_id.map(|id| id_key(id).into()),
            cancel_seq: None,
        };
        self.pending.insert(f.seq, request);
    }

    fn response(&mut self, f: &FrameRef<'_>, on: &mut impl FnMut(Event<'_, '_>)) {
        let Some(request) = f.reply_to_seq.and_then(|seq| self.pending.remove(&seq)) else { return };
        let read = matches!(request.what, What::Initialize | What::Open(_) | What::Prompt);
        let mut keep = None;
        let (answer, error) = if read { acp::reply(f.raw, &mut keep) } else { Default::default() };
        let failed = f.kind == FrameKind::Error || error.is_some();
        let (what, seq) = (request.what, request.seq);
        let asked = request.session.as_ref().map(|(at, _)| *at);
        if what == What::Initialize {
            self.protocol_version = answer.protocol_version.or(self.protocol_version);
        }
        let replayed = asked.and_then(|at| self.sessions[at].replaying).filter(|r| r.0 == seq).map(|r| r.1);
        on(Event::Answer { request, answer: read.then_some(&answer), replayed });
        match what {
            What::Open(opening) => {
                let named = match answer.session_id.as_deref() {
                    Some(sid) => self.session(sid, on),
                    None => asked,
                };
                let Some(at) = named else { return };
                // The replay of a load or resume ends with its answer.
                self.sessions[at].replaying = None;
                if !failed {
                    on(Event::Opened { session: Sid { at, id: &self.sessions[at].id }, opening, request: seq });
                }
            }
            What::Prompt => {
                let Some(at) = asked else { return };
                let v2 = self.protocol_version == Some(2);
                let s = &mut self.sessions[at];
                let Some(i) = s.open_turns.iter().position(|t| t.0 == seq) else { return };
                let reason = answer.stop_reason.as_deref();
                // v2: a prompt's answer only acknowledges; the turn ends with
                // its `state_update`.
                if reason.is_none() && !failed && v2 {
                    return;
                }
                let (_, cancel_turn) = s.open_turns.remove(i);
                let end = match reason {
                    Some(r) => TurnEnd::Reason(r.chars().take(REASON_MAX_CHARS).collect()),
                    None if failed => TurnEnd::Error,
                    None => TurnEnd::NoReason,
                };
                // The turn is cancelled by `session/cancel`; a
                // `$/cancel_request` of the prompt is the request's
                // (`Request::cancel_seq`).
                let session = Sid { at, id: &s.id };
                on(Event::TurnEnded { session, prompt: seq, cancel: cancel_turn, end, usage: answer.usage });
            }
            _ => {}
        }
    }

    fn notification(&mut self, f: &FrameRef<'_>, at: Option<usize>, on: &mut impl FnMut(Event<'_, '_>)) {
        match f.method {
            Some("session/update") => {
                if let Some(at) = at {
                    self.update(f, at, on);
                }
            }
            Some("session/cancel") => {
                let Some(at) = at else { return };
                let s = &mut self.sessions[at];
                for turn in &mut s.open_turns {
                    turn.1.get_or_insert(f.seq);
                    if let Some(p) = self.pending.get_mut(&turn.0) {
                        p.cancel_seq.get_or_insert(f.seq);
                    }
                }
                on(Event::Cancel { session: Sid { at, id: &s.id } });
            }
            Some("$/cancel_request") => {
                let mut keep = None;
                let Some(id) = acp::params(f.raw, &mut keep).and_then(|p| p.request_id) else { return };
                let key = id_key(id.get());
                // The side that sent the request cancels it.
                if let Some(p) =
                    self.pending.values_mut().find(|p| p.dir == f.dir && p.id_key.as_deref() == Some(&*key))
                {
                    p.cancel_seq.get_or_insert(f.seq);
                }
            }
            _ => {}
        }
    }

    fn update(&mut self, f: &FrameRef<'_>, at: usize, on: &mut impl FnMut(Event<'_, '_>)) {
        let room = self.tool_call_ids_kept < PENDING_MAX;
        let s = &mut self.sessions[at];
        // An update while a turn is open belongs to the turn, even while a
        // load or resume is being answered.
        let replayed = s.open_turns.is_empty() && s.replaying.is_some();
        if let Some((_, n)) = s.replaying.as_mut().filter(|_| replayed) {
            *n += 1;
        }
        // Streamed chunks are told by their bytes, not parsed.
        if let Some(kind) = acp::plain_update_kind(f.raw).filter(|k| acp::COUNTED_KINDS.contains(k)) {
            on(Event::Update(Update {
                session: Sid { at, id: &s.id },
                kind: Some(kind),
                update: None,
                replayed,
                new_tool_call: false,
                tool_calls_unchecked: false,
            }));
            return;
        }
        let mut keep = None;
        let update = acp::params(f.raw, &mut keep).and_then(|p| p.update);
        let kind = update.as_ref().map(|u| u.session_update.as_deref().unwrap_or("unknown"));
        let id = update.as_ref().and_then(|u| u.tool_call_id.as_deref());
        let (mut new_tool_call, mut unchecked) = (false, false);
        match (replayed, kind, id) {
            (false, Some("tool_call"), None) => new_tool_call = true,
            (false, Some("tool_call" | "tool_call_update"), Some(id)) => {
                let h = hash(id);
                let known = s.tool_call_ids.contains(&h);
                if !known && room {
                    s.tool_call_ids.insert(h);
                    self.tool_call_ids_kept += 1;
                }
                // A `tool_call_update` past the ids kept cannot be told from
                // a repeat: it announces nothing.
                new_tool_call = !known && (room || kind == Some("tool_call"));
                unchecked = !known && !room && kind == Some("tool_call");
            }
            _ => {}
        }
        let ended = match (kind, update.as_ref().and_then(|u| u.stop_reason.as_deref())) {
            (Some("state_update"), Some(reason)) if !replayed => s.open_turns.pop().map(|(prompt, cancel)| {
                (prompt, cancel, TurnEnd::Reason(reason.chars().take(REASON_MAX_CHARS).collect()))
            }),
            _ => None,
        };
        let session = Sid { at, id: &s.id };
        on(Event::Update(Update {
            session,
            kind,
            update: update.as_ref(),
            replayed,
            new_tool_call,
            tool_calls_unchecked: unchecked,
        }));
        if let Some((prompt, cancel, end)) = ended {
            on(Event::TurnEnded { session, prompt, cancel, end, usage: None });
        }
    }
}

/// `s` cut to `max` characters.
pub fn cut(s: &str, max: usize) -> String {
    match s.char_indices().nth(max) {
        Some((at, _)) => s[..at].to_owned(),
        None => s.to_owned(),
    }
}

/// A string as the fold keeps it in sets: 8 bytes, whatever its length.
pub fn hash(s: &str) -> u64 {
    use std::hash::Hash;
    let mut h = std::collections::hash_map::DefaultHasher::new();
    s.hash(&mut h);
    h.finish()
}

#[cfg(test)]
mod tests;
