//! A page of one session's turns, in full: prompt, the agent's message and
//! thoughts, tool calls with their statuses and permission waits, the work
//! the agent asked of the client, usage.
//!
//! Built by a fold over the frames of just those turns: from the first
//! turn's prompt on, until every turn of the page has ended and every
//! request made in them is answered, or [`TURN_TAIL_FRAMES`] frames past the
//! next turn's prompt when one never is, and never past the session's last
//! frame. Tool call updates that come after
//! that are not on the page.

use super::text::{add_block, count_kind, cut, json_text};
use super::wire::{self, Answer, ContentBlock, SessionParams, ToolContent, Update};
use super::{Model, SHORT_MAX};
use crate::store::{FrameRef, Store, StoreError};
use acp_tee_shared::session::{
    ClientCall, Message as TurnMessage, Permission, StatusChange, TokenUsage, ToolCall, Turn,
};
use acp_tee_shared::{Direction, FrameKind};
use std::collections::HashMap;

/// Frames a page reads past the next turn's prompt for a turn of the page
/// still open or a request of one still unanswered.
pub const TURN_TAIL_FRAMES: i64 = 20_000;

/// Tool calls, client calls and messages one turn lists at most.
const PER_TURN_MAX: usize = 1000;

/// Statuses, locations and permission requests one tool call lists at most.
const PER_TOOL_MAX: usize = 64;

/// What a request of the page awaits its answer for.
enum Awaits {
    /// A prompt: its turn's place on the page, `None` for a turn past it.
    Prompt(Option<usize>),
    Permission {
        turn: usize,
        tool: usize,
        permission: usize,
    },
    Client {
        turn: usize,
        call: usize,
    },
}

struct Builder {
    first_index: u64,
    want: usize,
    turns: Vec<Turn>,
    /// Turns still open, in order: their place on the page, `None` for a
    /// turn past the page (updates then go to no turn of the page, as they
    /// go to that later turn in the whole session).
    open: Vec<Option<usize>>,
    /// Per turn, tool call id to its place.
    tools: Vec<HashMap<String, usize>>,
    /// Per turn, message id to its place.
    messages: Vec<HashMap<String, usize>>,
    pending: HashMap<i64, Awaits>,
    v2: bool,
}

/// What a pass over the frames holds of the turns it builds, counted as the
/// bytes of the frames fed into them plus this much per frame: a turn's
/// texts and lists come from those bytes (cut), and each frame adds at most
/// one entry to a list.
const HELD_PER_FRAME: u64 = 256;

/// Bytes of frames one pass over a trace holds at most in the turns it
/// builds for `show` and the MCP tools ([`Model::pages_of`]); the pages
/// past them are read by another pass.
pub const HELD_MAX_BYTES: u64 = 64 << 20;

/// A page of turns one pass builds: session `sid`'s turns
/// `offset..offset + limit`.
#[derive(Clone, Copy, Debug)]
pub struct Want<'a> {
    pub sid: &'a str,
    pub offset: u64,
    pub limit: u32,
}

/// What [`Model::each_turn_of`] calls back with: the session's place in
/// the list asked for.
#[derive(Debug)]
pub enum Step<'a> {
    Begin(usize),
    Turn(&'a Turn),
    End(usize),
}

/// One session's page being built in a pass.
struct Reading {
    b: Builder,
    /// The page's first prompt: the session's frames before it are not its.
    start: i64,
    /// No frame of the session comes after this one.
    until: i64,
    /// Frames from this seq on are past the page's reach.
    stop_at: i64,
    done: bool,
    /// Bytes of frames fed into its turns (see [`HELD_PER_FRAME`]).
    held: u64,
}

impl Model {
    /// Turns `offset..offset + limit` of session `sid` in full (an empty page
    /// past the last; `None` for a session the model does not know).
    pub fn turns_of(
        &self,
        reader: &Store,
        trace_id: i64,
        sid: &str,
        offset: u64,
        limit: u32,
        redact: Option<&crate::redact::Redactor>,
    ) -> Result<Option<Vec<Turn>>, StoreError> {
        if self.turn_starts(sid).is_none() {
            return Ok(None);
        }
        let want = Want { sid, offset, limit };
        Ok(self.pages_of(reader, trace_id, &[want], redact, u64::MAX)?.pop().flatten())
    }

    /// The pages `wants` asks for, from one pass over the frames: the pass
    /// begins at the first page's first prompt and ends once every page is
    /// built. What the pass holds stays within `held_max` bytes (counted
    /// as [`HELD_PER_FRAME`] says): past it, the pages last in `wants` are
    /// dropped (`None`: to be read in another pass) and, when only the
    /// first is left, it takes no more turns (a shorter page). A session the
    /// model does not know gets an empty page.
    pub fn pages_of(
        &self,
        reader: &Store,
        trace_id: i64,
        wants: &[Want<'_>],
        redact: Option<&crate::redact::Redactor>,
        held_max: u64,
    ) -> Result<Vec<Option<Vec<Turn>>>, StoreError> {
        let v2 = self.protocol_version() == Some(2);
        let mut readings: Vec<Option<Reading>> = Vec::with_capacity(wants.len());
        let mut by_sid: HashMap<&str, usize> = HashMap::with_capacity(wants.len());
        let mut from = i64::MAX;
        let mut horizon = i64::MIN;
        for w in wants {
            let starts = self.turn_starts(w.sid).unwrap_or(&[]);
            let first = (w.offset.min(starts.len() as u64)) as usize;
            let to = first.saturating_add(w.limit as usize).min(starts.len());
            let until = self.session_last_seq(w.sid).unwrap_or(i64::MAX);
            let stop_at = starts.get(to).map_or(i64::MAX, |next| next.saturating_add(TURN_TAIL_FRAMES));
            let b = Builder {
                first_index: first as u64,
                want: to - first,
                turns: Vec::new(),
                open: Vec::new(),
                tools: Vec::new(),
                messages: Vec::new(),
                pending: HashMap::new(),
                v2,
            };
            let done = first == to;
            if by_sid.contains_key(w.sid) {
                // A session asked for twice: its second page is left for
                // another pass.
                readings.push(None);
                continue;
            }
            if !done {
                from = from.min(starts[first]);
                horizon = horizon.max(until.min(stop_at - 1));
                by_sid.insert(w.sid, readings.len());
            }
            let start = starts.get(first).copied().unwrap_or(i64::MAX);
            readings.push(Some(Reading { b, start, until, stop_at, done, held: 0 }));
        }
        let mut left = by_sid.len();
        let mut held = 0u64;
        if left > 0 {
            reader.fold_frames_in_parallel(trace_id, from - 1, |f| {
                if f.seq > horizon {
                    return false;
                }
                let Some(&i) = f.session_id.and_then(|sid| by_sid.get(sid)) else { return true };
                {
                    let Some(r) = readings[i].as_mut().filter(|r| !r.done && f.seq >= r.start) else { return true };
                    if f.seq > r.until || f.seq >= r.stop_at {
                        r.done = true;
                        left -= 1;
                        return left > 0;
                    }
                    r.b.feed_masked(f, redact);
                    let cost = f.raw.len() as u64 + HELD_PER_FRAME;
                    r.held += cost;
                    held += cost;
                    // Done once every turn of the page began and ended and
                    // nothing they asked awaits an answer.
                    if r.b.turns.len() >= r.b.want && !r.b.waiting() {
                        r.done = true;
                        left -= 1;
                    }
                }
                while held > held_max {
                    let Some(last) = readings.iter().rposition(Option::is_some) else { break };
                    if last == 0 {
                        // The first page alone: it keeps what it began.
                        let first = readings[0].as_mut().expect("the first page is read");
                        first.b.want = first.b.turns.len().max(1);
                        break;
                    }
                    let dropped = readings[last].take().expect("a page being read");
                    held -= dropped.held;
                    if !dropped.done {
                        left -= 1;
                    }
                }
                left > 0
            })?;
        }
        Ok(readings.into_iter().map(|r| r.map(|r| r.b.turns)).collect())
    }

    /// Calls `each` for every session of `sids` in order: its start, each of
    /// its turns, its end. One pass over the frames builds the turns of
    /// every session ([`Model::pages_of`]) as far as `held_max` allows; the
    /// sessions past that are read by further passes, from the first one
    /// not finished.
    pub fn each_turn_of<E: From<StoreError>>(
        &self,
        reader: &Store,
        trace_id: i64,
        sids: &[&str],
        redact: Option<&crate::redact::Redactor>,
        held_max: u64,
        mut each: impl FnMut(Step<'_>) -> Result<(), E>,
    ) -> Result<(), E> {
        // The next session to finish, and its next turn.
        let (mut at, mut offset) = (0, 0u64);
        while at < sids.len() {
            let wants: Vec<Want<'_>> = sids[at..]
                .iter()
                .enumerate()
                .map(|(k, &sid)| Want { sid, offset: if k == 0 { offset } else { 0 }, limit: u32::MAX })
                .collect();
            for page in self.pages_of(reader, trace_id, &wants, redact, held_max)? {
                let Some(turns) = page else { break };
                if offset == 0 {
                    each(Step::Begin(at))?;
                }
                turns.iter().try_for_each(|t| each(Step::Turn(t)))?;
                offset += turns.len() as u64;
                let total = self.turn_starts(sids[at]).map_or(0, <[i64]>::len) as u64;
                if offset < total && !turns.is_empty() {
                    // The first page was cut to fit: its session goes on in
                    // the next pass (every later page was dropped).
                    break;
                }
                each(Step::End(at))?;
                (at, offset) = (at + 1, 0);
            }
        }
        Ok(())
    }

    /// Every page `wants` asks for, in as few passes as
    /// [`HELD_MAX_BYTES`] allows ([`Model::pages_of`]; a page cut to fit is
    /// shorter than asked).
    pub fn pages_in_passes(
        &self,
        reader: &Store,
        trace_id: i64,
        wants: &[Want<'_>],
        redact: Option<&crate::redact::Redactor>,
    ) -> Result<Vec<Vec<Turn>>, StoreError> {
        let mut out = Vec::with_capacity(wants.len());
        while out.len() < wants.len() {
            let pages = self.pages_of(reader, trace_id, &wants[out.len()..], redact, HELD_MAX_BYTES)?;
            // The first page of a pass is always built.
            out.extend(pages.into_iter().map_while(|p| p));
        }
        Ok(out)
    }
}

/// `PromptResponse.usage` as the API gives it.
pub fn token_usage(u: super::wire::Usage) -> TokenUsage {
    TokenUsage {
        total_tokens: u.total_tokens.unwrap_or(0),
        input_tokens: u.input_tokens.unwrap_or(0),
        output_tokens: u.output_tokens.unwrap_or(0),
        thought_tokens: u.thought_tokens,
        cached_read_tokens: u.cached_read_tokens,
        cached_write_tokens: u.cached_write_tokens,
    }
}

impl Builder {
    /// Feeds `f`, masked by `redact` only when its contents are read.
    fn feed_masked(&mut self, f: &FrameRef<'_>, redact: Option<&crate::redact::Redactor>) {
        let read = match f.kind {
            // What `request` reads: prompts, and the agent's requests in a turn.
            FrameKind::Request => {
                f.method == Some("session/prompt") || (f.dir == Direction::AgentToClient && self.current().is_some())
            }
            FrameKind::Notification => f.method == Some("session/update"),
            FrameKind::Response | FrameKind::Error => f.reply_to_seq.is_some_and(|r| self.pending.contains_key(&r)),
            _ => false,
        };
        match redact.filter(|_| read).map(|m| m.redact(f.raw)) {
            Some(std::borrow::Cow::Owned(masked)) => self.feed(&FrameRef { raw: &masked, ..*f }),
            _ if read || f.kind == FrameKind::Notification => self.feed(f),
            _ => {}
        }
    }

    fn feed(&mut self, f: &FrameRef<'_>) {
        match f.kind {
            FrameKind::Request => {
                let mut keep = None;
                self.request(f, wire::params(f.raw, &mut keep).unwrap_or_default());
            }
            FrameKind::Notification => match f.method {
                Some("session/update") => {
                    let mut keep = None;
                    if let Some(update) = wire::params(f.raw, &mut keep).unwrap_or_default().update {
                        self.update(f, update);
                    }
                }
                Some("session/cancel") => {
                    for &i in self.open.iter().flatten() {
                        self.turns[i].cancel_seq.get_or_insert(f.seq);
                    }
                }
                _ => {}
            },
            FrameKind::Response | FrameKind::Error => {
                let Some(awaits) = f.reply_to_seq.and_then(|r| self.pending.remove(&r)) else { return };
                let mut keep = None;
                let (answer, error) = wire::reply(f.raw, &mut keep);
                let error = error.map(|e| cut(&e.describe(), SHORT_MAX));
                self.response(f, awaits, answer, error);
            }
            _ => {}
        }
    }

    /// The turn updates go to: the last one still open, when it is on the
    /// page.
    fn current(&self) -> Option<usize> {
        self.open.last().copied().flatten()
    }

    /// True while a turn of the page is open or a request of one awaits
    /// its answer.
    fn waiting(&self) -> bool {
        self.open.iter().any(Option::is_some) || self.pending.values().any(|a| !matches!(a, Awaits::Prompt(None)))
    }

    /// Ends the open turn `turn`.
    fn close(&mut self, turn: Option<usize>) {
        if let Some(at) = self.open.iter().rposition(|&t| t == turn) {
            self.open.remove(at);
        }
    }

    fn request(&mut self, f: &FrameRef<'_>, params: SessionParams<'_>) {
        let method = f.method.unwrap_or("");
        if method == "session/prompt" {
            if self.turns.len() >= self.want {
                self.open.push(None);
                self.pending.insert(f.seq, Awaits::Prompt(None));
                return;
            }
            let mut turn = Turn {
                index: self.first_index + self.turns.len() as u64,
                request_seq: f.seq,
                start_t_ns: f.t_ns,
                ..Turn::default()
            };
            for block in params.prompt.iter().flatten() {
                add_block(&mut turn.prompt, block, f.seq, true);
            }
            self.turns.push(turn);
            self.tools.push(HashMap::new());
            self.messages.push(HashMap::new());
            self.open.push(Some(self.turns.len() - 1));
            self.pending.insert(f.seq, Awaits::Prompt(Some(self.turns.len() - 1)));
            return;
        }
        if f.dir != Direction::AgentToClient {
            return;
        }
        let Some(turn) = self.current() else { return };
        if method == "session/request_permission" {
            let fields = params.tool_call.unwrap_or_default();
            let Some(tool) = self.tool(turn, fields.tool_call_id.as_deref().unwrap_or(""), f) else { return };
            let call = &mut self.turns[turn].tool_calls[tool];
            if fields.title.is_some() && call.title.is_none() {
                call.title = fields.title.as_deref().map(|t| cut(t, SHORT_MAX));
            }
            if call.permissions.len() >= PER_TOOL_MAX {
                return;
            }
            let options = params
                .options
                .iter()
                .flatten()
                .take(PER_TOOL_MAX)
                .map(|o| {
                    let id = cut(o.option_id.as_deref().unwrap_or("?"), SHORT_MAX);
                    match &o.kind {
                        Some(k) => format!("{id}: {}", cut(k, 64)),
                        None => id,
                    }
                })
                .collect();
            call.permissions.push(Permission { request_seq: f.seq, t_ns: f.t_ns, options, ..Permission::default() });
            let permission = call.permissions.len() - 1;
            self.pending.insert(f.seq, Awaits::Permission { turn, tool, permission });
            return;
        }
        let calls = &mut self.turns[turn].client_calls;
        if calls.len() >= PER_TURN_MAX {
            return;
        }
        let subject = match method {
            "terminal/create" => params.command.as_deref().map(|c| {
                let args: Vec<&str> = params.args.iter().flatten().map(|a| a.as_ref()).collect();
                cut(&[c].into_iter().chain(args).collect::<Vec<_>>().join(" "), SHORT_MAX)
            }),
            _ => params
                .path
                .as_deref()
                .or(params.terminal_id.as_deref())
                .or(params.message.as_deref())
                .map(|s| cut(s, SHORT_MAX)),
        };
        calls.push(ClientCall {
            method: cut(method, SHORT_MAX),
            request_seq: f.seq,
            t_ns: f.t_ns,
            subject,
            ..ClientCall::default()
        });
        self.pending.insert(f.seq, Awaits::Client { turn, call: calls.len() - 1 });
    }

    /// The place of tool call `id` in turn `turn`, added when new (`None`
    /// past the turn's bound).
    fn tool(&mut self, turn: usize, id: &str, f: &FrameRef<'_>) -> Option<usize> {
        if let Some(&i) = self.tools[turn].get(id) {
            return Some(i);
        }
        let calls = &mut self.turns[turn].tool_calls;
        if calls.len() >= PER_TURN_MAX {
            return None;
        }
        calls.push(ToolCall {
            tool_call_id: cut(id, SHORT_MAX),
            first_seq: f.seq,
            first_t_ns: f.t_ns,
            last_seq: f.seq,
            last_t_ns: f.t_ns,
            ..ToolCall::default()
        });
        self.tools[turn].insert(id.to_owned(), calls.len() - 1);
        Some(calls.len() - 1)
    }

    fn update(&mut self, f: &FrameRef<'_>, update: Update<'_>) {
        let kind = update.session_update.as_deref().unwrap_or("unknown");
        let Some(turn) = self.current() else {
            // v2: a turn past the page ends here.
            if kind == "state_update" && self.v2 && update.stop_reason.is_some() {
                self.close(None);
            }
            return;
        };
        self.turns[turn].updates += 1;
        let mut keep = None;
        // A repeated member counts as its last, as everywhere.
        fn read<'a>(
            c: Option<&'a serde_json::value::RawValue>,
            keep: &'a mut Option<Vec<u8>>,
        ) -> Option<ContentBlock<'a>> {
            crate::frame::read_last(c?.get().as_bytes(), keep).ok()
        }
        match kind {
            "agent_message_chunk" | "agent_message" => {
                let t = &mut self.turns[turn];
                t.first_chunk_ns.get_or_insert(f.t_ns - t.start_t_ns);
                if let Some(b) = read(update.content, &mut keep) {
                    add_block(&mut t.message, &b, f.seq, true);
                    self.message(turn, update.message_id.as_deref(), "agent", &b, f.seq);
                }
            }
            "agent_thought_chunk" | "agent_thought" => {
                if let Some(b) = read(update.content, &mut keep) {
                    add_block(&mut self.turns[turn].thought, &b, f.seq, true);
                    self.message(turn, update.message_id.as_deref(), "thought", &b, f.seq);
                }
            }
            "user_message_chunk" | "user_message" => {
                if let Some(b) = read(update.content, &mut keep) {
                    add_block(&mut self.turns[turn].user, &b, f.seq, true);
                    self.message(turn, update.message_id.as_deref(), "user", &b, f.seq);
                }
            }
            "tool_call" | "tool_call_update" | "tool_call_content_chunk" => self.tool_update(turn, f, &update),
            "plan" | "plan_update" => self.turns[turn].plans += 1,
            "state_update" if self.v2 => {
                if let Some(reason) = update.stop_reason.as_deref() {
                    let t = &mut self.turns[turn];
                    t.stop_reason = Some(cut(reason, 64));
                    t.end_t_ns = Some(f.t_ns);
                    t.response_seq.get_or_insert(f.seq);
                    self.close(Some(turn));
                }
            }
            _ => {}
        }
    }

    fn message(&mut self, turn: usize, id: Option<&str>, role: &str, block: &ContentBlock<'_>, seq: i64) {
        let Some(id) = id else { return };
        let key = format!("{role}\u{0}{id}");
        let at = match self.messages[turn].get(&key) {
            Some(&i) => i,
            None => {
                let list = &mut self.turns[turn].messages;
                if list.len() >= PER_TURN_MAX {
                    return;
                }
                list.push(TurnMessage { message_id: cut(id, SHORT_MAX), role: role.into(), ..TurnMessage::default() });
                self.messages[turn].insert(key, list.len() - 1);
                list.len() - 1
            }
        };
        add_block(&mut self.turns[turn].messages[at].text, block, seq, true);
    }

    fn tool_update(&mut self, turn: usize, f: &FrameRef<'_>, u: &Update<'_>) {
        let Some(tool) = self.tool(turn, u.tool_call_id.as_deref().unwrap_or(""), f) else { return };
        let call = &mut self.turns[turn].tool_calls[tool];
        call.updates += 1;
        match u.session_update.as_deref() {
            Some("tool_call") => {
                call.announced_seq.get_or_insert(f.seq);
            }
            _ if call.announced_seq.is_none() => {
                call.unannounced_update.get_or_insert(f.seq);
            }
            _ => {}
        }
        call.last_seq = f.seq;
        call.last_t_ns = f.t_ns;
        if let Some(title) = &u.title {
            call.title = Some(cut(title, SHORT_MAX));
        }
        if let Some(kind) = &u.kind {
            call.kind = Some(cut(kind, 64));
        }
        // A new tool call with no status is pending.
        let status = u.status.as_deref().or((u.session_update.as_deref() == Some("tool_call")).then_some("pending"));
        if let Some(status) = status {
            if call.status.as_deref() != Some(status) && call.statuses.len() < PER_TOOL_MAX {
                call.statuses.push(StatusChange { status: cut(status, 64), seq: f.seq, t_ns: f.t_ns });
            }
            call.status = Some(cut(status, 64));
        }
        for path in u.locations.iter().flatten().filter_map(|l| l.path.as_deref()) {
            if call.locations.len() < PER_TOOL_MAX && !call.locations.iter().any(|p| p == path) {
                call.locations.push(cut(path, SHORT_MAX));
            }
        }
        if let Some(content) = u.content {
            let mut keep = None;
            let items: Vec<ToolContent> =
                crate::frame::read_last(content.get().as_bytes(), &mut keep).unwrap_or_default();
            for item in items {
                count_kind(&mut call.content, item.kind.as_deref().unwrap_or("unknown"));
            }
        }
        if let Some(input) = u.raw_input {
            call.raw_input = Some(json_text(input));
        }
        if let Some(output) = u.raw_output {
            call.raw_output = Some(json_text(output));
        }
    }

    fn response(&mut self, f: &FrameRef<'_>, awaits: Awaits, answer: Answer<'_>, error: Option<String>) {
        match awaits {
            Awaits::Prompt(None) => {
                if answer.stop_reason.is_some() || error.is_some() || !self.v2 {
                    self.close(None);
                }
            }
            Awaits::Prompt(Some(turn)) => {
                let t = &mut self.turns[turn];
                t.usage = answer.usage.map(token_usage);
                t.error = error.clone();
                if let Some(reason) = answer.stop_reason.as_deref() {
                    t.stop_reason = Some(cut(reason, 64));
                } else if self.v2 && error.is_none() {
                    // v2: the response only acknowledges the prompt.
                    return;
                }
                t.response_seq = Some(f.seq);
                t.end_t_ns = Some(f.t_ns);
                self.close(Some(turn));
            }
            Awaits::Permission { turn, tool, permission } => {
                let p = &mut self.turns[turn].tool_calls[tool].permissions[permission];
                p.response_seq = Some(f.seq);
                p.waited_ns = Some(f.t_ns.saturating_sub(p.t_ns).max(0));
                match (error, answer.outcome) {
                    (Some(_), _) => p.outcome = Some("error".into()),
                    (None, Some(o)) => {
                        p.outcome = o.outcome.as_deref().map(|s| cut(s, 64));
                        p.option_id = o.option_id.as_deref().map(|s| cut(s, SHORT_MAX));
                    }
                    (None, None) => {}
                }
            }
            Awaits::Client { turn, call } => {
                let c = &mut self.turns[turn].client_calls[call];
                c.response_seq = Some(f.seq);
                c.duration_ns = Some(f.t_ns.saturating_sub(c.t_ns).max(0));
                c.error = error;
                let mut result = Vec::new();
                if let Some(id) = answer.terminal_id.as_deref() {
                    result.push(format!("terminal {id}"));
                }
                if let Some(code) = answer.exit_code {
                    result.push(format!("exit {code}"));
                }
                if let Some(signal) = answer.signal.as_deref() {
                    result.push(format!("signal {signal}"));
                }
                if let Some(action) = answer.action.as_deref() {
                    result.push(action.to_owned());
                }
                c.result = (!result.is_empty()).then(|| cut(&result.join(", "), SHORT_MAX));
            }
        }
    }
}
