//! The mapping from a trace's frames to OpenTelemetry spans
//! ([docs/otlp.md](../../../../docs/otlp.md) describes it for users).
//!
//! [`Mapper`] is a fold over frames in seq order, the same for a stored
//! trace (`export --format otlp`) and a recording (the recorder feeds it the
//! frames it stores): a span is handed out ([`Mapper::take_done`]) as soon as
//! what it stands for has ended (a JSON-RPC request answered, a tool call
//! completed, a turn's prompt answered); sessions and the recording's own
//! span end with [`Mapper::finish`]. Ids are derived from the trace's key, so
//! a second export gives the same ids, unless a `traceparent` in `_meta`
//! says which trace a session or turn belongs to. A member written twice
//! counts as its last, as the recorder reads it ([`wire::read_last`]).
//!
//! Memory is bounded whatever the trace holds: [`SESSIONS_MAX`] sessions
//! followed, [`PENDING_MAX`] open requests, [`TOOLS_PER_TURN_MAX`] tool
//! calls per turn, [`EVENTS_MAX`] events per span, [`CONTENT_MAX_BYTES`]
//! per content attribute; what is beyond is counted (`dropped_events_count`,
//! and `acp.left_out` on the recording's span).

mod spans;
mod tools;
use acp_tee_wire::acp as wire;

pub use spans::kv;
use spans::*;
use wire::*;

use super::ids::{span_id, trace_id, traceparent};
use crate::fold::{Conversation, Event, TurnEnd, What};
use crate::redact::Redactor;
use acp_tee_shared::{Direction, FrameKind};
use opentelemetry_proto::tonic::trace::v1::{span, status, Span, Status};
use std::borrow::Cow;
use std::collections::HashMap;

/// Sessions and open requests are followed as the one fold follows them
/// ([`crate::fold`]): frames of sessions past its bound, and requests past
/// its bound, count in `acp.left_out`.
pub use crate::fold::{PENDING_MAX, SESSIONS_MAX};

/// Tool calls one turn has spans for at most.
pub const TOOLS_PER_TURN_MAX: usize = 1000;

/// Events one span carries at most; more count in its
/// `dropped_events_count`.
pub const EVENTS_MAX: usize = 128;

/// Bytes of one content attribute (prompt, agent message, tool input or
/// output, stderr line) at most, cut at a character boundary.
pub const CONTENT_MAX_BYTES: usize = 16 * 1024;

/// One trace per ACP session, or one per recording.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum TraceScope {
    /// A trace per ACP session (the recording's own requests in one more).
    #[default]
    Session,
    /// One trace per recording, sessions as its root span's children.
    Recording,
}

impl TraceScope {
    /// The name on the command line.
    pub fn as_str(self) -> &'static str {
        match self {
            TraceScope::Session => "session",
            TraceScope::Recording => "recording",
        }
    }
}

/// What the mapping puts in spans beyond their structure.
#[derive(Debug, Clone, Default)]
pub struct MapOptions {
    /// A trace per session or per recording.
    pub scope: TraceScope,
    /// Carry content (prompts, agent messages, tool input and output,
    /// stderr lines), masked by the redactor.
    pub content: bool,
}

/// One frame as the mapper reads it: the store's borrowed frame, its bytes
/// masked as the store or export masks them.
pub use crate::store::FrameRef as FrameIn;

/// Where a span hangs: its trace and its parent (empty for a root).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Context {
    trace: [u8; 16],
    parent: Option<[u8; 8]>,
}

/// What a request awaiting its answer is.
enum Role {
    Rpc,
    Initialize,
    Open,
    Permission { tool: Option<String> },
}

struct Pending {
    span: Span,
    role: Role,
    session: Option<String>,
    /// `_meta.traceparent` of an opening request.
    traceparent: Option<([u8; 16], [u8; 8])>,
}

struct Turn {
    span: Span,
    request: i64,
    start_t: i64,
    first_chunk: bool,
    tools: HashMap<String, Span>,
    output: String,
    chunks: i64,
}

struct SessionSpans {
    root: Span,
    turn: Option<Turn>,
}

/// The fold from frames to spans.
pub struct Mapper {
    key: String,
    opts: MapOptions,
    /// Masks content read from frames not masked before (a recording without
    /// `--redact`); `None` when the frames come masked.
    redactor: Option<Redactor>,
    epoch_ns: u64,
    conn: Span,
    agent: Option<(String, Option<String>)>,
    sessions: HashMap<String, SessionSpans>,
    pending: HashMap<i64, Pending>,
    /// The one fold: which requests, sessions, turns and tool calls there are.
    conv: Conversation,
    done: Vec<Span>,
    last_t: i64,
    left_out: u64,
}

impl Mapper {
    /// A mapper for the trace that started at `started_at` (RFC 3339) named
    /// `name`: the two make its key, from which ids are derived. With
    /// `redactor`, content is masked before it goes into a span.
    pub fn new(started_at: &str, name: Option<&str>, opts: MapOptions, redactor: Option<Redactor>) -> Mapper {
        let key = format!("{started_at}\0{}", name.unwrap_or(""));
        let epoch_ns = chrono::DateTime::parse_from_rfc3339(started_at)
            .ok()
            .and_then(|t| t.timestamp_nanos_opt())
            .and_then(|n| u64::try_from(n).ok())
            .unwrap_or(0);
        let trace = trace_id(&key, "recording");
        let mut conn = new_span(Context { trace, parent: None }, span_id(&key, "recording", 0), "acp.recording");
        conn.kind = span::SpanKind::Internal as i32;
        conn.start_time_unix_nano = epoch_ns;
        if let Some(name) = name {
            conn.attributes.push(kv("acp.recording.name", name));
        }
        conn.attributes.push(kv("network.transport", "pipe"));
        Mapper {
            key,
            opts,
            redactor,
            epoch_ns,
            conn,
            agent: None,
            sessions: HashMap::new(),
            pending: HashMap::new(),
            conv: Conversation::default(),
            done: Vec::new(),
            last_t: 0,
            left_out: 0,
        }
    }

    /// The trace's start, Unix nanoseconds (0 when it does not parse).
    pub fn epoch_ns(&self) -> u64 {
        self.epoch_ns
    }

    /// The spans ended since the last call.
    pub fn take_done(&mut self) -> Vec<Span> {
        std::mem::take(&mut self.done)
    }

    /// Adds one frame (frames come in seq order).
    pub fn feed(&mut self, f: &FrameIn<'_>) {
        self.last_t = self.last_t.max(f.t_ns);
        let mut conv = std::mem::take(&mut self.conv);
        let kept = conv.feed(f, &mut |e| self.on(f, e));
        self.conv = conv;
        match f.kind {
            FrameKind::Notification if f.method != Some("session/update") => self.notification(f, kept),
            FrameKind::Stderr => self.stderr(f),
            FrameKind::Batch | FrameKind::Invalid => {
                let mut e = event(self.time(f.t_ns), "acp.frame");
                e.attributes.push(kv("acp.frame.kind", f.kind.as_str()));
                e.attributes.push(kv_int("acp.frame.seq", f.seq));
                push_event(&mut self.conn, e);
            }
            _ => {}
        }
    }

    /// What the fold said of frame `f`.
    fn on(&mut self, f: &FrameIn<'_>, e: Event<'_, '_>) {
        match e {
            Event::SessionSeen { session } => {
                // Made known by the answer to an opening request: the
                // session joins that request's `traceparent`, if it had one.
                let opening =
                    f.reply_to_seq.and_then(|r| self.pending.get(&r)).filter(|p| matches!(p.role, Role::Open));
                let parent = opening.and_then(|p| p.traceparent);
                self.ensure_session(session.id, f.t_ns, parent);
            }
            Event::SessionLeftOut { .. } => self.left_out += 1,
            Event::Request { followed: false, .. } => self.left_out += 1,
            Event::Request { what, session, followed: true } => {
                self.request(f, what, session.map(|s| &**s.id));
            }
            Event::TurnStarted { session, .. } => self.start_turn(session.id, f),
            Event::Answer { request, .. } => self.response(f, request.seq),
            Event::TurnEnded { session, prompt, end, usage, .. } => {
                self.end_turn_of(f, session.id, prompt, &end, usage)
            }
            Event::Update(u) => self.update(f, &u),
            Event::Opened { .. } | Event::Cancel { .. } => {}
        }
    }

    /// Ends every span still open at `end_t_ns` (the trace's end): requests
    /// never answered, turns never ended, sessions and the recording.
    pub fn finish(&mut self, end_t_ns: i64) {
        let end = self.time(end_t_ns.max(self.last_t));
        let mut pending: Vec<(i64, Pending)> = self.pending.drain().collect();
        pending.sort_by_key(|(seq, _)| *seq);
        for (_, mut p) in pending {
            p.span.end_time_unix_nano = end;
            p.span.attributes.push(kv_bool("acp.unanswered", true));
            self.done.push(p.span);
        }
        let mut sessions: Vec<(String, SessionSpans)> = self.sessions.drain().collect();
        sessions.sort_by_key(|(_, s)| s.root.start_time_unix_nano);
        for (_, mut s) in sessions {
            if let Some(turn) = s.turn.take() {
                let mut span = end_turn(turn, end, &mut self.done, self.opts.content);
                span.attributes.push(kv_bool("acp.turn.unfinished", true));
                self.done.push(span);
            }
            s.root.end_time_unix_nano = end;
            self.done.push(s.root);
        }
        let mut conn = std::mem::take(&mut self.conn);
        conn.end_time_unix_nano = end;
        if self.left_out > 0 {
            conn.attributes.push(kv_int("acp.left_out", self.left_out as i64));
        }
        self.done.push(conn);
    }

    /// Ends, at `end`, the spans of requests still awaiting answers whose
    /// parent (a tool call, a turn) ended then: a child ends within its
    /// parent. Such a span says it was still open (`acp.open_at_parent_end`);
    /// an answer coming later is not mapped.
    fn end_children(&mut self, parents: &[Vec<u8>], end: u64) {
        if self.pending.is_empty() {
            return;
        }
        let mut seqs: Vec<i64> = self
            .pending
            .iter()
            .filter(|(_, p)| parents.contains(&p.span.parent_span_id))
            .map(|(seq, _)| *seq)
            .collect();
        seqs.sort_unstable();
        for seq in seqs {
            let Some(mut p) = self.pending.remove(&seq) else { continue };
            p.span.end_time_unix_nano = end;
            p.span.attributes.push(kv_bool("acp.open_at_parent_end", true));
            self.done.push(p.span);
        }
    }

    /// Unix nanoseconds of `t_ns` since the trace started.
    fn time(&self, t_ns: i64) -> u64 {
        self.epoch_ns.saturating_add(t_ns.max(0) as u64)
    }

    /// The context of a new span of session `sid` (in its turn when one is
    /// open), or of the recording.
    fn context_in(&self, sid: Option<&str>) -> Context {
        match sid.and_then(|s| self.sessions.get(s)) {
            Some(SessionSpans { turn: Some(t), .. }) => child_of(&t.span),
            Some(s) => child_of(&s.root),
            None => child_of(&self.conn),
        }
    }

    fn masked<'b>(&self, raw: &'b [u8]) -> Cow<'b, [u8]> {
        match &self.redactor {
            Some(r) => r.redact(raw),
            None => Cow::Borrowed(raw),
        }
    }

    fn request(&mut self, f: &FrameIn<'_>, what: What, sid: Option<&str>) {
        if what == What::Prompt && sid.is_some() {
            // A turn of a kept session: its span is the turn's
            // (`start_turn`, which reads the prompt), not the request's.
            return;
        }
        let method = f.method.unwrap_or("");
        let mut keep = None;
        let params = wire::params(f.raw, &mut keep).unwrap_or_default();
        let parent = params.meta.as_ref().and_then(|m| m.traceparent.as_deref()).and_then(traceparent);
        let start = self.time(f.t_ns);
        let (role, ctx) = match what {
            What::Initialize => (Role::Initialize, child_of(&self.conn)),
            What::Open(_) => (Role::Open, self.context_in(sid)),
            What::Prompt => (Role::Rpc, child_of(&self.conn)),
            What::Permission => {
                let tool = params.tool_call.as_ref().and_then(|t| t.tool_call_id.as_deref()).map(str::to_owned);
                let ctx = match (sid, &tool) {
                    (Some(s), Some(id)) => {
                        self.tool_update(s, id, params.tool_call.as_ref(), f.t_ns);
                        self.tool_context(s, id).unwrap_or_else(|| self.context_in(Some(s)))
                    }
                    _ => self.context_in(sid),
                };
                (Role::Permission { tool }, ctx)
            }
            What::Other => (Role::Rpc, self.context_in(sid)),
        };
        let mut span = new_span(ctx, span_id(&self.key, "rpc", f.seq), method);
        span.start_time_unix_nano = start;
        span.kind = span::SpanKind::Client as i32;
        rpc_attributes(&mut span, f);
        if let Some(s) = sid {
            span.attributes.push(kv("gen_ai.conversation.id", s));
        }
        if method.starts_with("mcp/") {
            mcp_attributes(&mut span, method, &params);
        }
        let traceparent = if matches!(role, Role::Open) { parent } else { None };
        self.pending.insert(f.seq, Pending { span, role, session: sid.map(str::to_owned), traceparent });
    }

    fn start_turn(&mut self, sid: &str, f: &FrameIn<'_>) {
        let parent = {
            let mut keep = None;
            let params = wire::params(f.raw, &mut keep).unwrap_or_default();
            params.meta.as_ref().and_then(|m| m.traceparent.as_deref()).and_then(traceparent)
        };
        let content = self.opts.content.then(|| self.masked(f.raw)).and_then(|raw| prompt_messages(&raw));
        let start = self.time(f.t_ns);
        let agent = self.agent.clone();
        let key = self.key.clone();
        let end_old = self.sessions.get_mut(sid).and_then(|s| s.turn.take());
        if let Some(old) = end_old {
            let ended = turn_span_ids(&old);
            let mut span = end_turn(old, start, &mut self.done, self.opts.content);
            self.end_children(&ended, start);
            span.attributes.push(kv_bool("acp.turn.unfinished", true));
            self.done.push(span);
        }
        let Some(s) = self.sessions.get_mut(sid) else { return };
        let ctx = match parent {
            Some((trace, span)) => Context { trace, parent: Some(span) },
            None => child_of(&s.root),
        };
        let name = match &agent {
            Some((name, _)) => format!("invoke_agent {name}"),
            None => "invoke_agent".to_owned(),
        };
        let mut span = new_span(ctx, span_id(&key, "turn", f.seq), &name);
        span.kind = span::SpanKind::Client as i32;
        span.start_time_unix_nano = start;
        span.attributes.push(kv("gen_ai.operation.name", "invoke_agent"));
        span.attributes.push(kv("gen_ai.provider.name", "acp"));
        if let Some((name, version)) = &agent {
            span.attributes.push(kv("gen_ai.agent.name", name));
            if let Some(v) = version {
                span.attributes.push(kv("gen_ai.agent.version", v));
            }
        }
        span.attributes.push(kv("gen_ai.conversation.id", sid));
        rpc_attributes(&mut span, f);
        if let Some(messages) = content {
            span.attributes.push(kv("gen_ai.input.messages", &messages));
        }
        s.turn = Some(Turn {
            span,
            request: f.seq,
            start_t: f.t_ns,
            first_chunk: false,
            tools: HashMap::new(),
            output: String::new(),
            chunks: 0,
        });
    }

    /// The answer `f` to the request of seq `request`.
    fn response(&mut self, f: &FrameIn<'_>, request: i64) {
        let Some(p) = self.pending.remove(&request) else { return };
        let mut keep = None;
        let msg = wire::message(f.raw, &mut keep);
        let result = msg.result.unwrap_or_default();
        let end = self.time(f.t_ns);
        let Pending { mut span, role, session, .. } = p;
        if let Some(e) = &msg.error {
            set_error(&mut span, e);
        }
        match role {
            Role::Initialize => {
                if let Some(info) = &result.agent_info {
                    if let Some(name) = info.name.as_deref() {
                        self.agent = Some((name.to_owned(), info.version.as_deref().map(str::to_owned)));
                        span.attributes.push(kv("gen_ai.agent.name", name));
                    }
                }
                if let Some(v) = &result.protocol_version {
                    span.attributes.push(kv("acp.protocol.version", &v.to_string()));
                }
            }
            Role::Open => {
                let sid = result.session_id.as_deref().map(str::to_owned).or(session);
                if let (Some(sid), None) = (sid, &msg.error) {
                    span.attributes.push(kv("gen_ai.conversation.id", &sid));
                }
            }
            Role::Permission { tool } => {
                if let Some(o) = &result.outcome {
                    if let Some(outcome) = o.outcome.as_deref() {
                        span.attributes.push(kv("acp.permission.outcome", outcome));
                    }
                    if let Some(option) = o.option_id.as_deref() {
                        span.attributes.push(kv("acp.permission.option_id", option));
                    }
                }
                if let (Some(sid), Some(tool)) = (session.as_deref(), tool) {
                    let waited = end.saturating_sub(span.start_time_unix_nano);
                    if let Some(t) = self.tool_mut(sid, &tool) {
                        add_int(t, "acp.permission.wait_ns", waited as i64);
                    }
                }
            }
            Role::Rpc => {
                if let Some(id) = result.connection_id.as_deref() {
                    span.attributes.push(kv("mcp.session.id", id));
                }
            }
        }
        span.end_time_unix_nano = end;
        self.done.push(span);
    }

    /// A turn of session `sid` ended (frame `f`: the prompt's answer, or a
    /// v2 `state_update`).
    fn end_turn_of(&mut self, f: &FrameIn<'_>, sid: &str, prompt: i64, how: &TurnEnd, usage: Option<Usage>) {
        let end = self.time(f.t_ns);
        let Some(s) = self.sessions.get_mut(sid) else { return };
        if s.turn.as_ref().is_none_or(|t| t.request != prompt) {
            return;
        }
        let turn = s.turn.take().expect("checked above");
        let ended = turn_span_ids(&turn);
        let mut span = end_turn(turn, end, &mut self.done, self.opts.content);
        self.end_children(&ended, end);
        if f.kind == FrameKind::Error {
            let mut keep = None;
            if let Some(e) = wire::message(f.raw, &mut keep).error {
                set_error(&mut span, &e);
            }
        }
        if let TurnEnd::Reason(reason) = how {
            span.attributes.push(kv_array("gen_ai.response.finish_reasons", &[reason]));
        }
        if let Some(u) = usage {
            usage_attributes(&mut span, u);
        }
        self.done.push(span);
    }

    fn stderr(&mut self, f: &FrameIn<'_>) {
        let mut e = event(self.time(f.t_ns), "acp.stderr");
        if self.opts.content {
            let raw = self.masked(f.raw);
            let line = String::from_utf8_lossy(&raw);
            let mut text = String::new();
            push_cut(&mut text, line.trim_end_matches(['\n', '\r']));
            e.attributes.push(kv("acp.stderr.line", &text));
        } else {
            e.attributes.push(kv_int("acp.stderr.bytes", f.raw.len() as i64));
        }
        push_event(&mut self.conn, e);
    }

    /// Gives session `sid`, which the fold just made known, its spans.
    fn ensure_session(&mut self, sid: &str, t_ns: i64, parent: Option<([u8; 16], [u8; 8])>) {
        if self.sessions.contains_key(sid) {
            return;
        }
        let ctx = match (self.opts.scope, parent) {
            (_, Some((trace, span))) => Context { trace, parent: Some(span) },
            (TraceScope::Session, None) => Context { trace: trace_id(&self.key, sid), parent: None },
            (TraceScope::Recording, None) => child_of(&self.conn),
        };
        let mut root = new_span(ctx, span_id(&self.key, &format!("session\0{sid}"), 0), "acp.session");
        root.start_time_unix_nano = self.time(t_ns);
        root.attributes.push(kv("gen_ai.conversation.id", sid));
        if ctx.trace != self.conn.trace_id.as_slice() {
            // The recording's own requests (initialize, ...) are in another
            // trace: a link joins them.
            root.links.push(span::Link {
                trace_id: self.conn.trace_id.clone(),
                span_id: self.conn.span_id.clone(),
                ..Default::default()
            });
        }
        self.sessions.insert(sid.to_owned(), SessionSpans { root, turn: None });
    }
}

/// The ids of a turn's span and its open tool calls' spans.
fn turn_span_ids(turn: &Turn) -> Vec<Vec<u8>> {
    std::iter::once(turn.span.span_id.clone()).chain(turn.tools.values().map(|t| t.span_id.clone())).collect()
}

/// Ends `turn` at `end`: its tool calls still open end with it (pushed to
/// `done`); returns the turn's span.
fn end_turn(turn: Turn, end: u64, done: &mut Vec<Span>, content: bool) -> Span {
    let Turn { mut span, tools, output, chunks, .. } = turn;
    let mut tools: Vec<Span> = tools.into_values().collect();
    tools.sort_by_key(|t| t.start_time_unix_nano);
    for mut t in tools {
        t.end_time_unix_nano = end;
        done.push(t);
    }
    span.end_time_unix_nano = end;
    span.attributes.push(kv_int("acp.turn.chunks", chunks));
    if content && !output.is_empty() {
        let messages = serde_json::json!([{"role": "assistant", "parts": [{"type": "text", "content": output}]}]);
        span.attributes.push(kv("gen_ai.output.messages", &messages.to_string()));
    }
    span
}
