//! The session model: turns, tool calls, permission waits, client work,
//! usage and open requests, derived from a trace's stored frames on read.
//!
//! [`Model`] is a fold over frames in seq order. Fed a whole trace it keeps
//! what every session adds up to (`TraceSessions`) and where each turn
//! starts, never the turns themselves: its memory grows with the sessions
//! and turns (a few words each) and the requests still open, each bounded
//! (`SESSIONS_MAX`, `PENDING_MAX`), what is past a bound counted. Turns are
//! built by `turns::Builder`s fed the frames of their session, in the
//! same pass ([`Model::catch_up_building`], for `show`) or in a later one
//! over just a page's frames ([`Model::turns_of`]), keeping texts (cut to
//! `TEXT_MAX_CHARS`) and tool calls. The server keeps the whole-trace fold
//! of the traces it was asked about and feeds it only new frames
//! (`server/sessions.rs`); nothing of this runs while recording.
//!
//! ACP v1 is the reference; v2 turns that end with a `state_update` are
//! read too. Unknown update kinds are counted, never dropped silently.

mod notify;
mod pages;
mod text;
mod turns;
mod view;
use acp_tee_wire::acp as wire;

pub use pages::{Built, Step, Want, HELD_MAX_BYTES};

use crate::redact::Redactor;
use crate::store::{FrameRef, Store, StoreError};
use acp_tee_shared::session::{
    ListsLeftOut, Note, Plan, PlanEntry, SessionSummary, SettingChange, LIST_MAX, PENDING_MAX,
    SESSIONS_LEFT_OUT_COUNTED, SESSIONS_MAX,
};
use acp_tee_shared::{Direction, FrameKind};
use std::borrow::Cow;
use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};
use std::sync::Arc;
use text::cut;
use wire::Params;

/// Distinct request methods the model shares one copy of.
const METHODS_SHARED: usize = 1000;

/// Hashes the seqs that key requests awaiting answers: one multiplication
/// (seqs are unique and not chosen by peers), where SipHash cost a tenth of
/// the fold.
#[derive(Default)]
struct SeqHasher(u64);

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

/// How a turn answered with neither a stop reason nor an error ended.
pub const ANSWERED_WITHOUT_REASON: &str = "answered without a stop reason";

/// Characters kept of short strings (titles, plan entries, command names).
const SHORT_MAX: usize = 500;

/// What a request awaiting its answer is, as far as the model cares.
#[derive(Clone, Debug)]
enum Awaiting {
    Initialize,
    /// `session/new|load|resume|fork`: how, the cwd and (load, resume) the
    /// session named.
    Open {
        how: &'static str,
        cwd: Option<String>,
    },
    Prompt,
    Permission,
    Other,
}

/// A request no response has answered yet.
#[derive(Clone, Debug)]
struct Pending {
    dir: Direction,
    method: Option<Arc<str>>,
    rpc_id: Option<Box<str>>,
    session: Option<Arc<str>>,
    t_ns: i64,
    what: Awaiting,
    cancel_seq: Option<i64>,
}

/// What the model keeps per session besides its summary.
#[derive(Clone, Debug, Default)]
struct Session {
    summary: SessionSummary,
    /// Its id, shared with the requests of it awaiting answers.
    id: Arc<str>,
    /// Seq of each turn's `session/prompt`, in order.
    turn_starts: Vec<i64>,
    /// The `session/load` or `session/resume` being answered, and the ids
    /// of messages and tool calls its replay has shown (a repeat means the
    /// conversation is replayed twice).
    replaying: Option<(i64, u64, std::collections::HashSet<String>)>,
    /// Open turns (request seq), with a cancel sent for them.
    open_turns: Vec<(i64, Option<i64>)>,
    plan: Option<Plan>,
    commands: Vec<String>,
    changes: Vec<SettingChange>,
    /// What `commands` and `changes` left out.
    left_out: ListsLeftOut,
    /// Usage of the last turn that reported it, and how many turns in a row
    /// grew in every figure.
    last_usage: Option<acp_tee_shared::session::TokenUsage>,
    growing: u32,
    /// How its turns ended: stop reasons, `error`, `answered without a
    /// stop reason` (bounded as `text::count_kind` bounds kinds).
    ends: Vec<acp_tee_shared::session::KindCount>,
    /// The ids of its tool calls (hashed), so a repeated `tool_call`
    /// counts once; all sessions together keep at most [`PENDING_MAX`].
    tool_call_ids: std::collections::HashSet<u64>,
}

/// The whole-trace fold.
#[derive(Clone, Debug, Default)]
pub struct Model {
    sessions: Vec<Session>,
    by_id: HashMap<String, usize>,
    /// The session the last lookup found: frames of one session come in
    /// runs, and comparing the id is cheaper than hashing it.
    last_session: usize,
    frames_left_out: u64,
    /// The session kept past `SESSIONS_MAX` (the one `show --session`
    /// asks for).
    keep: Option<Box<str>>,
    /// The sessions left out, hashed (at most
    /// `SESSIONS_LEFT_OUT_COUNTED`).
    left_out: std::collections::HashSet<u64>,
    /// Requests awaiting answers, by seq.
    pending: HashMap<i64, Pending, BuildHasherDefault<SeqHasher>>,
    /// Methods of requests, shared (at most [`METHODS_SHARED`]).
    methods: HashMap<Box<str>, Arc<str>>,
    /// Open requests not followed (past [`PENDING_MAX`]).
    pending_left_out: u64,
    protocol_version: Option<i64>,
    agent: Option<String>,
    client: Option<String>,
    last_seq: i64,
    last_t_ns: i64,
    /// Tool call ids the sessions keep, in all.
    tool_call_ids_kept: usize,
}

impl Model {
    /// A model that keeps session `sid` however many sessions come
    /// before it (the others past `SESSIONS_MAX` are left out as usual).
    pub fn keeping(sid: &str) -> Model {
        Model { keep: Some(sid.into()), ..Model::default() }
    }

    /// The model of trace `trace_id`'s frames after seq `self.last_seq()`
    /// added to this one; `redact` masks what the model shows of a frame
    /// as the server masks the frames it serves.
    pub fn catch_up(&mut self, reader: &Store, trace_id: i64, redact: Option<&Redactor>) -> Result<(), StoreError> {
        reader.fold_frames_in_parallel(trace_id, self.last_seq, |f| {
            self.feed(f, redact);
            true
        })
    }

    /// The last frame fed.
    #[cfg(test)]
    pub fn last_seq(&self) -> i64 {
        self.last_seq
    }

    /// Adds one frame (frames come in seq order). Only frames the model
    /// shows text of (settings, titles, plans, peers' names) are masked
    /// with `redact`: the streamed chunks that make up most traces are
    /// counted, not shown, and cost no masking.
    /// Returns the place of the frame's session among the sessions kept.
    pub fn feed(&mut self, f: &FrameRef<'_>, redact: Option<&Redactor>) -> Option<usize> {
        self.last_seq = self.last_seq.max(f.seq);
        self.last_t_ns = self.last_t_ns.max(f.t_ns);
        let mut at = None;
        if let Some(sid) = f.session_id {
            match self.session(sid, f) {
                Some(s) => {
                    s.summary.last_seq = f.seq;
                    s.summary.last_t_ns = f.t_ns;
                    at = Some(self.last_session);
                }
                None => {
                    self.frames_left_out += 1;
                    if (self.left_out.len() as u64) < SESSIONS_LEFT_OUT_COUNTED {
                        self.left_out.insert(hash(sid));
                    }
                }
            }
        }
        match f.kind {
            FrameKind::Request => self.request(f, redact),
            FrameKind::Notification => self.notification(f, redact),
            FrameKind::Response | FrameKind::Error => self.response(f, redact),
            _ => {}
        }
        at
    }

    /// The place of session `sid` among the sessions kept.
    pub fn index_of(&self, sid: &str) -> Option<usize> {
        self.by_id.get(sid).copied()
    }

    /// The session `sid`, added when new (`None` past `SESSIONS_MAX`).
    fn session(&mut self, sid: &str, f: &FrameRef<'_>) -> Option<&mut Session> {
        if self.sessions.get(self.last_session).is_some_and(|s| s.summary.session_id == sid) {
            return Some(&mut self.sessions[self.last_session]);
        }
        let i = match self.by_id.get(sid) {
            Some(&i) => i,
            None if self.sessions.len() >= SESSIONS_MAX && self.keep.as_deref() != Some(sid) => return None,
            None => {
                let summary = SessionSummary {
                    session_id: sid.to_owned(),
                    began: "unknown".into(),
                    first_seq: f.seq,
                    last_seq: f.seq,
                    first_t_ns: f.t_ns,
                    last_t_ns: f.t_ns,
                    ..SessionSummary::default()
                };
                self.sessions.push(Session { summary, id: sid.into(), ..Session::default() });
                self.by_id.insert(sid.to_owned(), self.sessions.len() - 1);
                self.sessions.len() - 1
            }
        };
        self.last_session = i;
        Some(&mut self.sessions[i])
    }

    fn request(&mut self, f: &FrameRef<'_>, redact: Option<&Redactor>) {
        let method = f.method.unwrap_or("");
        let shown = matches!(
            method,
            "initialize"
                | "session/new"
                | "session/load"
                | "session/resume"
                | "session/fork"
                | "session/set_mode"
                | "session/set_config_option"
        );
        // Only those methods' params are read here: the rest count by their
        // stored columns, unparsed.
        let raw = if shown { masked(f.raw, redact) } else { Cow::Borrowed(f.raw) };
        let mut keep = None;
        let params = if shown { wire::params(&raw, &mut keep).unwrap_or_default() } else { Params::default() };
        let what = match method {
            "initialize" => {
                self.client = params.client_info.as_ref().and_then(|i| i.describe()).map(|s| cut(&s, SHORT_MAX));
                Awaiting::Initialize
            }
            "session/new" | "session/load" | "session/resume" | "session/fork" => {
                let how = match method {
                    "session/new" => "new",
                    "session/load" => "load",
                    "session/resume" => "resume",
                    _ => "fork",
                };
                if how == "load" || how == "resume" {
                    if let Some(s) = f.session_id.and_then(|sid| self.session(sid, f)) {
                        s.replaying = Some((f.seq, 0, Default::default()));
                    }
                }
                Awaiting::Open { how, cwd: params.cwd.as_deref().map(|c| cut(c, SHORT_MAX)) }
            }
            "session/prompt" => {
                if let Some(s) = f.session_id.and_then(|sid| self.session(sid, f)) {
                    s.summary.turns += 1;
                    s.turn_starts.push(f.seq);
                    s.open_turns.push((f.seq, None));
                }
                Awaiting::Prompt
            }
            "session/set_mode" | "session/set_config_option" => {
                let (setting, value) = match method {
                    "session/set_mode" => ("mode".to_owned(), params.mode_id.as_deref().map(str::to_owned)),
                    _ => (
                        params.config_id.as_deref().unwrap_or("config").to_owned(),
                        params.value.map(|v| v.get().trim_matches('"').to_owned()),
                    ),
                };
                if let (Some(value), Some(s)) = (value, f.session_id.and_then(|sid| self.session(sid, f))) {
                    if setting == "mode" {
                        s.summary.mode = Some(cut(&value, SHORT_MAX));
                    }
                    push_bounded(
                        &mut s.changes,
                        &mut s.left_out.changes_left_out,
                        SettingChange {
                            setting: cut(&setting, SHORT_MAX),
                            value: cut(&value, SHORT_MAX),
                            seq: f.seq,
                            t_ns: f.t_ns,
                        },
                    );
                }
                Awaiting::Other
            }
            "session/close" | "session/delete" => {
                if let Some(s) = f.session_id.and_then(|sid| self.session(sid, f)) {
                    s.summary.closed_seq = Some(f.seq);
                }
                Awaiting::Other
            }
            "session/request_permission" => {
                if let Some(s) = f.session_id.and_then(|sid| self.session(sid, f)) {
                    s.summary.permission_requests += 1;
                }
                Awaiting::Permission
            }
            _ => Awaiting::Other,
        };
        if self.pending.len() >= PENDING_MAX {
            self.pending_left_out += 1;
            return;
        }
        let session = f.session_id.and_then(|sid| self.session(sid, f)).map(|s| s.id.clone());
        let method = f.method.map(|m| self.shared_method(m));
        self.pending.insert(
            f.seq,
            Pending {
                dir: f.dir,
                method,
                rpc_id: f.rpc_id.map(|i| cut(i, SHORT_MAX).into_boxed_str()),
                session,
                t_ns: f.t_ns,
                what,
                cancel_seq: None,
            },
        );
    }

    /// `method`, cut to `SHORT_MAX`, shared with the requests before it.
    fn shared_method(&mut self, method: &str) -> Arc<str> {
        if let Some(m) = self.methods.get(method) {
            return m.clone();
        }
        let shared: Arc<str> = cut(method, SHORT_MAX).into();
        if self.methods.len() < METHODS_SHARED {
            self.methods.insert(method.into(), shared.clone());
        }
        shared
    }

    fn response(&mut self, f: &FrameRef<'_>, redact: Option<&Redactor>) {
        let Some(request) = f.reply_to_seq else { return };
        let Some(p) = self.pending.remove(&request) else { return };
        let shown = matches!(p.what, Awaiting::Initialize | Awaiting::Open { .. });
        let raw = if shown { masked(f.raw, redact) } else { Cow::Borrowed(f.raw) };
        // Answers to other requests are timed, not read.
        let read = shown || matches!(p.what, Awaiting::Prompt);
        let mut keep = None;
        let (answer, error) = if read { wire::reply(&raw, &mut keep) } else { Default::default() };
        let error = error.map(|e| e.describe());
        match p.what {
            Awaiting::Initialize => {
                self.protocol_version = answer.protocol_version.or(self.protocol_version);
                if let Some(agent) = answer.agent_info.as_ref().and_then(|i| i.describe()) {
                    self.agent = Some(cut(&agent, SHORT_MAX));
                }
            }
            Awaiting::Open { how, cwd } => {
                let sid = answer.session_id.as_deref().map(str::to_owned).or(p.session.as_deref().map(str::to_owned));
                let Some(sid) = sid.filter(|_| error.is_none()) else { return };
                let Some(s) = self.session(&sid, f) else { return };
                s.summary.last_seq = f.seq;
                s.summary.last_t_ns = f.t_ns;
                // A later load or resume of a known session does not change
                // how it began.
                if how == "new" || how == "fork" || s.summary.began_seq.is_none() {
                    s.summary.began = how.into();
                    s.summary.began_seq = Some(request);
                }
                if cwd.is_some() {
                    s.summary.cwd = cwd;
                }
                if let Some(mode) = answer.modes.as_ref().and_then(|m| m.current_mode_id.as_deref()) {
                    s.summary.mode = Some(cut(mode, SHORT_MAX));
                }
                if let Some((load, replayed, _)) = s.replaying.take() {
                    if how == "load" && replayed == 0 && load == request {
                        note(
                            &mut s.summary,
                            "load-replayed-nothing",
                            "session/load answered without replaying the conversation",
                            Some(f.seq),
                        );
                    }
                }
            }
            Awaiting::Prompt => {
                let v2 = self.protocol_version == Some(2);
                let Some(s) = p.session.as_deref().and_then(|sid| self.session(sid, f)) else { return };
                let Some(at) = s.open_turns.iter().position(|t| t.0 == request) else { return };
                let (_, cancel) = s.open_turns.remove(at);
                let reason = answer.stop_reason.as_deref().map(|r| cut(r, 64));
                // v2: a prompt's response only acknowledges; the turn ends
                // with its `state_update`.
                if reason.is_none() && error.is_none() && v2 {
                    s.open_turns.insert(at, (request, cancel));
                    return;
                }
                let end = reason.as_deref().or(error.as_ref().map(|_| "error"));
                end_turn(&mut s.summary, cancel, end, f.seq);
                text::count_kind(&mut s.ends, end.unwrap_or(ANSWERED_WITHOUT_REASON));
                if let Some(u) = answer.usage {
                    add_usage(s, turns::token_usage(u), f.seq);
                }
            }
            Awaiting::Permission => {
                if let Some(s) = p.session.as_deref().and_then(|sid| self.session(sid, f)) {
                    s.summary.permission_wait_ns += f.t_ns.saturating_sub(p.t_ns).max(0);
                }
            }
            Awaiting::Other => {}
        }
    }
}

/// The present as a `t_ns` of a live trace (its wall-clock start to now);
/// `None` once it has ended.
pub fn now_t_ns(trace: &acp_tee_shared::api::TraceSummary) -> Option<i64> {
    if !trace.live {
        return None;
    }
    let started = chrono::DateTime::parse_from_rfc3339(&trace.meta.started_at).ok()?;
    (chrono::Utc::now() - started.with_timezone(&chrono::Utc)).num_nanoseconds()
}

/// `raw` masked by `redact`, when given.
fn masked<'a>(raw: &'a [u8], redact: Option<&Redactor>) -> Cow<'a, [u8]> {
    match redact {
        Some(r) => r.redact(raw),
        None => Cow::Borrowed(raw),
    }
}

/// Counts a turn's end in `summary`, noting a cancel it did not honour.
fn end_turn(summary: &mut SessionSummary, cancel: Option<i64>, reason: Option<&str>, seq: i64) {
    if cancel.is_some() && reason != Some("cancelled") {
        let message = format!(
            "the turn was cancelled (frame {}) but ended with {}",
            cancel.unwrap_or_default(),
            reason.unwrap_or("no stop reason")
        );
        note(summary, "cancel-not-honoured", &message, Some(seq));
    }
}

/// Adds a turn's usage to its session's totals; flags a run of turns whose
/// every figure keeps growing, the sign of cumulative totals sent as
/// per-turn ones.
fn add_usage(s: &mut Session, u: acp_tee_shared::session::TokenUsage, seq: i64) {
    let total = s.summary.usage.get_or_insert_with(Default::default);
    total.total_tokens = total.total_tokens.saturating_add(u.total_tokens);
    total.input_tokens = total.input_tokens.saturating_add(u.input_tokens);
    total.output_tokens = total.output_tokens.saturating_add(u.output_tokens);
    for (sum, v) in [
        (&mut total.thought_tokens, u.thought_tokens),
        (&mut total.cached_read_tokens, u.cached_read_tokens),
        (&mut total.cached_write_tokens, u.cached_write_tokens),
    ] {
        if let Some(v) = v {
            *sum = Some(sum.unwrap_or(0).saturating_add(v));
        }
    }
    let grew = s.last_usage.is_some_and(|last| {
        u.output_tokens > last.output_tokens && u.input_tokens > last.input_tokens && u.total_tokens > last.total_tokens
    });
    s.growing = if grew { s.growing + 1 } else { 0 };
    if s.growing == 3 {
        note(
            &mut s.summary,
            "usage-looks-cumulative",
            "four turns in a row reported more tokens of every kind than the turn before: the agent may send \
             running totals where PromptResponse.usage is per turn",
            Some(seq),
        );
    }
    s.last_usage = Some(u);
}

/// Notes `code` once: later occurrences are counted.
fn note(summary: &mut SessionSummary, code: &str, message: &str, seq: Option<i64>) {
    match summary.notes.iter_mut().find(|n| n.code == code) {
        Some(n) => n.count += 1,
        None => summary.notes.push(Note { code: code.into(), message: message.into(), seq, count: 1 }),
    }
}

/// Adds `item` to `list` when it holds fewer than `LIST_MAX`; else
/// counts it in `left_out`.
fn push_bounded<T>(list: &mut Vec<T>, left_out: &mut u64, item: T) {
    if list.len() < LIST_MAX {
        list.push(item);
    } else {
        *left_out += 1;
    }
}

/// A string as the model keeps it in sets: 8 bytes, whatever its length.
fn hash(s: &str) -> u64 {
    use std::hash::Hash;
    let mut h = std::collections::hash_map::DefaultHasher::new();
    s.hash(&mut h);
    h.finish()
}

#[cfg(test)]
mod tests;
