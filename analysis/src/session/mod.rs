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

use crate::fold::{Conversation, Event, Opening, Request, What};
use crate::redact::Redactor;
use crate::store::{FrameRef, Store, StoreError};
use acp_tee_shared::session::{
    ListsLeftOut, Note, Plan, PlanEntry, SessionSummary, SettingChange, LIST_MAX, PENDING_MAX,
    SESSIONS_LEFT_OUT_COUNTED,
};
use acp_tee_shared::FrameKind;
use std::borrow::Cow;
use std::collections::HashMap;
use text::cut;
use wire::{Answer, Params};

/// How a turn answered with neither a stop reason nor an error ended.
pub const ANSWERED_WITHOUT_REASON: &str = "answered without a stop reason";

/// Characters kept of short strings (titles, plan entries, command names).
const SHORT_MAX: usize = 500;

/// What the model keeps per session besides its summary.
#[derive(Clone, Debug, Default)]
struct Session {
    summary: SessionSummary,
    /// Seq of each turn's `session/prompt`, in order.
    turn_starts: Vec<i64>,
    /// While a `session/load` or `session/resume` is answered: the ids of
    /// the tool calls its replay showed (one shown twice means the
    /// conversation is replayed twice).
    replay_seen: Option<std::collections::HashSet<String>>,
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
}

/// The whole-trace fold: what the one fold of the conversation
/// ([`crate::fold`]) tells, added up per session.
#[derive(Clone, Debug, Default)]
pub struct Model {
    /// The one fold: requests, sessions, turns, tool calls.
    conv: Conversation,
    /// The sessions the fold keeps, in the same order.
    sessions: Vec<Session>,
    frames_left_out: u64,
    /// The sessions left out, hashed (at most
    /// `SESSIONS_LEFT_OUT_COUNTED`).
    left_out: std::collections::HashSet<u64>,
    /// The cwd of each opening request awaiting its answer (as many as the
    /// fold follows).
    cwds: HashMap<i64, String>,
    /// The cwd of the opening request the frame being read answers.
    answered_cwd: Option<String>,
    agent: Option<String>,
    client: Option<String>,
    last_seq: i64,
    last_t_ns: i64,
}

impl Model {
    /// A model that keeps session `sid` however many sessions come
    /// before it (the others past `SESSIONS_MAX` are left out as usual).
    pub fn keeping(sid: &str) -> Model {
        Model { conv: Conversation::keeping(sid), ..Model::default() }
    }

    /// The model of trace `trace_id`'s frames after seq `self.last_seq()`
    /// added to this one; `redact` masks what the model shows of a frame
    /// as the server masks the frames it serves.
    pub fn catch_up(&mut self, reader: &Store, trace_id: i64, redact: Option<&Redactor>) -> Result<(), StoreError> {
        self.catch_up_to(reader, trace_id, i64::MAX, redact)
    }

    /// [`Model::catch_up`] with no frame after seq `to`: the model of the
    /// trace as it was when frame `to` had just arrived (a replay's cursor).
    /// A model already past `to` is left as it is.
    pub fn catch_up_to(
        &mut self,
        reader: &Store,
        trace_id: i64,
        to: i64,
        redact: Option<&Redactor>,
    ) -> Result<(), StoreError> {
        if self.last_seq >= to {
            return Ok(());
        }
        reader.fold_frames_in_parallel(trace_id, self.last_seq, |f| {
            if f.seq > to {
                return false;
            }
            self.feed(f, redact);
            true
        })
    }

    /// The last frame fed.
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
        let mut conv = std::mem::take(&mut self.conv);
        let at = conv.feed(f, &mut |e| self.on(f, e, redact));
        self.conv = conv;
        self.answered_cwd = None;
        match (at, f.session_id) {
            (Some(at), _) => {
                let s = &mut self.sessions[at].summary;
                s.last_seq = f.seq;
                s.last_t_ns = f.t_ns;
            }
            (None, Some(sid)) => {
                self.frames_left_out += 1;
                if (self.left_out.len() as u64) < SESSIONS_LEFT_OUT_COUNTED {
                    self.left_out.insert(hash(sid));
                }
            }
            (None, None) => {}
        }
        at
    }

    /// The place of session `sid` among the sessions kept.
    pub fn index_of(&self, sid: &str) -> Option<usize> {
        self.conv.index_of(sid)
    }

    /// What the fold said of frame `f`.
    fn on(&mut self, f: &FrameRef<'_>, e: Event<'_, '_>, redact: Option<&Redactor>) {
        match e {
            Event::SessionSeen { session } => {
                let summary = SessionSummary {
                    session_id: session.id.to_string(),
                    began: "unknown".into(),
                    first_seq: f.seq,
                    last_seq: f.seq,
                    first_t_ns: f.t_ns,
                    last_t_ns: f.t_ns,
                    ..SessionSummary::default()
                };
                self.sessions.push(Session { summary, ..Session::default() });
            }
            Event::Request { what, session, followed } => {
                self.request(f, what, session.map(|s| s.at), followed, redact)
            }
            Event::TurnStarted { session, prompt, .. } => {
                let s = &mut self.sessions[session.at];
                s.summary.turns += 1;
                s.turn_starts.push(prompt);
            }
            Event::Answer { request, answer, replayed } => self.answer(f, &request, answer, replayed, redact),
            Event::Opened { session, opening, request } => self.opened(f, session.at, opening, request, redact),
            Event::TurnEnded { session, cancel, end, usage, .. } => {
                let s = &mut self.sessions[session.at];
                let reason = end.reason();
                end_turn(&mut s.summary, cancel, reason, f.seq);
                text::count_kind(&mut s.ends, reason.unwrap_or(ANSWERED_WITHOUT_REASON));
                if let Some(u) = usage {
                    add_usage(s, turns::token_usage(u), f.seq);
                }
            }
            Event::Update(u) => self.update(f, &u, redact),
            Event::SessionLeftOut { .. } | Event::Cancel { .. } => {}
        }
    }

    fn request(&mut self, f: &FrameRef<'_>, what: What, at: Option<usize>, followed: bool, redact: Option<&Redactor>) {
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
        match what {
            What::Initialize => {
                self.client = params.client_info.as_ref().and_then(|i| i.describe()).map(|s| cut(&s, SHORT_MAX));
            }
            What::Open(opening) => {
                if let (Some(at), Opening::Load | Opening::Resume) = (at, opening) {
                    self.sessions[at].replay_seen = Some(Default::default());
                }
                if let (true, Some(cwd)) = (followed, params.cwd.as_deref()) {
                    self.cwds.insert(f.seq, cut(cwd, SHORT_MAX));
                }
            }
            What::Permission => {
                if let Some(at) = at {
                    self.sessions[at].summary.permission_requests += 1;
                }
            }
            What::Prompt => {}
            What::Other => {
                let Some(s) = at.map(|at| &mut self.sessions[at]) else { return };
                match method {
                    "session/set_mode" | "session/set_config_option" => {
                        let (setting, value) = match method {
                            "session/set_mode" => ("mode".to_owned(), params.mode_id.as_deref().map(str::to_owned)),
                            _ => (
                                params.config_id.as_deref().unwrap_or("config").to_owned(),
                                params.value.map(|v| v.get().trim_matches('"').to_owned()),
                            ),
                        };
                        let Some(value) = value else { return };
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
                    "session/close" | "session/delete" => s.summary.closed_seq = Some(f.seq),
                    _ => {}
                }
            }
        }
    }

    /// The answer `f` to a followed `request`; `answer` is its result as
    /// the fold read it (initialize, openings, prompts).
    fn answer(
        &mut self,
        f: &FrameRef<'_>,
        request: &Request,
        answer: Option<&Answer<'_>>,
        replayed: Option<u64>,
        redact: Option<&Redactor>,
    ) {
        match request.what {
            What::Initialize => {
                // The agent's name is shown: read from the masked bytes.
                let masked = redact.map(|r| r.redact(f.raw));
                let mut keep = None;
                let read;
                let answer = match &masked {
                    Some(raw) => {
                        read = wire::reply(raw, &mut keep).0;
                        Some(&read)
                    }
                    None => answer,
                };
                if let Some(agent) = answer.and_then(|a| a.agent_info.as_ref()).and_then(|i| i.describe()) {
                    self.agent = Some(cut(&agent, SHORT_MAX));
                }
            }
            What::Open(opening) => {
                self.answered_cwd = self.cwds.remove(&request.seq);
                // The replay of a load or resume ends with its answer.
                let Some(at) = request.session.as_ref().map(|(at, _)| *at) else { return };
                let s = &mut self.sessions[at];
                s.replay_seen = None;
                if opening == Opening::Load && replayed == Some(0) && f.kind != FrameKind::Error {
                    note(
                        &mut s.summary,
                        "load-replayed-nothing",
                        "session/load answered without replaying the conversation",
                        Some(f.seq),
                    );
                }
            }
            What::Permission => {
                if let Some((at, _)) = &request.session {
                    let s = &mut self.sessions[*at].summary;
                    s.permission_wait_ns += f.t_ns.saturating_sub(request.t_ns).max(0);
                }
            }
            What::Prompt | What::Other => {}
        }
    }

    /// An opening request `request` answered without an error: session
    /// `at` began (or was loaded, resumed).
    fn opened(&mut self, f: &FrameRef<'_>, at: usize, opening: Opening, request: i64, redact: Option<&Redactor>) {
        let cwd = self.answered_cwd.take();
        let raw = masked(f.raw, redact);
        let mut keep = None;
        let (answer, _) = wire::reply(&raw, &mut keep);
        let s = &mut self.sessions[at];
        s.summary.last_seq = f.seq;
        s.summary.last_t_ns = f.t_ns;
        // A later load or resume of a known session does not change how it
        // began.
        if matches!(opening, Opening::New | Opening::Fork) || s.summary.began_seq.is_none() {
            s.summary.began = opening.as_str().into();
            s.summary.began_seq = Some(request);
        }
        if cwd.is_some() {
            s.summary.cwd = cwd;
        }
        if let Some(mode) = answer.modes.as_ref().and_then(|m| m.current_mode_id.as_deref()) {
            s.summary.mode = Some(cut(mode, SHORT_MAX));
        }
    }
}

/// The present as a `t_ns` of a live trace (its wall-clock start to when
/// the store read it, `TraceSummary::now_t_ns`); `None` once it has ended.
pub fn now_t_ns(trace: &acp_tee_shared::api::TraceSummary) -> Option<i64> {
    trace.now_t_ns.filter(|_| trace.live)
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

use crate::fold::hash;

#[cfg(test)]
mod tests;
