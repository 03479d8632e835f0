//! One session's turns, in full: prompt, the agent's message and
//! thoughts, tool calls with their statuses and permission waits, the work
//! the agent asked of the client, usage.
//!
//! A [`Builder`] is fed the frames of one session from its first turn's
//! prompt on (`pages.rs` says which, and until when).

use super::text::{add_block, count_kind, cut, json_text};
use super::wire::{self, Answer, ContentBlock, Params, ToolContent, Update};
use super::SHORT_MAX;
use crate::store::FrameRef;
use acp_tee_shared::session::{
    ClientCall, Message as TurnMessage, Part, Permission, StatusChange, StderrLine, TokenUsage, ToolCall, Turn,
    PENDING_MAX, PER_TOOL_MAX, PER_TURN_MAX, STDERR_LINES_MAX,
};
use acp_tee_shared::{Direction, FrameKind};
use std::collections::HashMap;

impl Awaits {
    /// The turn of the page it is for.
    fn turn(&self) -> Option<usize> {
        match self {
            Awaits::Prompt(t) => *t,
            Awaits::Permission { turn, .. } | Awaits::Client { turn, .. } => Some(*turn),
        }
    }
}

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

pub(super) struct Builder {
    first_index: u64,
    /// Turns it builds at most; prompts past them open turns it does not
    /// build.
    pub(super) want: usize,
    pub(super) turns: Vec<Turn>,
    /// Turns still open, in order: their place on the page, `None` for a
    /// turn past the page (updates then go to no turn of the page, as they
    /// go to that later turn in the whole session).
    open: Vec<Option<usize>>,
    /// Per turn, tool call id to its place.
    tools: Vec<HashMap<String, usize>>,
    /// Per turn, message id to its place.
    messages: Vec<HashMap<String, usize>>,
    /// Per turn, what happened since its last part began, when something
    /// did: the next chunk begins a new part.
    breaks: Vec<Option<(i64, String)>>,
    /// Per turn, the role of its last chunk (`agent` or `thought`).
    part_roles: Vec<Option<&'static str>>,
    /// The turn just answered with an error, which takes the stderr lines
    /// written while it was open ([`Builder::take_stderr`]).
    errored: Option<usize>,
    pending: HashMap<i64, Awaits>,
    /// Per turn, how many of `pending` await an answer for it.
    awaiting: HashMap<usize, u32>,
    /// Turns closed or answered for since [`Builder::take_touched`] was
    /// last asked (kept only when `track_touched`): only they can have
    /// become over.
    touched: Vec<usize>,
    pub(super) track_touched: bool,
    pub(super) v2: bool,
    /// What the page's lists left out, hashed with where it would have
    /// gone (tool calls, messages, paths), so each counts once; at most
    /// `PENDING_MAX`.
    left_out: std::collections::HashSet<u64>,
}

/// The agent's last [`STDERR_LINES_MAX`] lines on stderr, masked, as a
/// pass over the frames met them: one for every session built in the pass
/// (stderr names no session).
#[derive(Default)]
pub(super) struct StderrTail(std::collections::VecDeque<StderrLine>);

impl StderrTail {
    /// Keeps stderr frame `f`'s line (masked by `redact`), the oldest kept
    /// going when full.
    pub(super) fn push(&mut self, f: &FrameRef<'_>, redact: Option<&crate::redact::Redactor>) {
        let raw = match redact {
            Some(r) => r.redact(f.raw),
            None => std::borrow::Cow::Borrowed(f.raw),
        };
        if let Some(text) = acp_tee_wire::frame::text_preview(&raw) {
            if self.0.len() == STDERR_LINES_MAX {
                self.0.pop_front();
            }
            self.0.push_back(StderrLine { seq: f.seq, text });
        }
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

/// True for a streamed chunk, most of a trace, that masking would not
/// change what is read of: its text, block kind and message id are under
/// members no default rule masks, and no string in it can hold a URL.
fn plain_chunk(f: &FrameRef<'_>, redact: Option<&crate::redact::Redactor>) -> bool {
    redact.is_some_and(|r| r.masks_only_members(f.raw))
        && wire::plain_update_kind(f.raw).is_some_and(|k| wire::COUNTED_KINDS.contains(&k))
}

impl Builder {
    /// A builder of turns `first_index..first_index + want` of a session.
    pub(super) fn new(first_index: u64, want: usize, v2: bool) -> Builder {
        Builder {
            first_index,
            want,
            turns: Vec::new(),
            open: Vec::new(),
            tools: Vec::new(),
            messages: Vec::new(),
            breaks: Vec::new(),
            part_roles: Vec::new(),
            errored: None,
            pending: HashMap::new(),
            awaiting: HashMap::new(),
            touched: Vec::new(),
            track_touched: false,
            v2,
            left_out: Default::default(),
        }
    }

    /// Feeds `f`, masked by `redact` only when its contents are read.
    pub(super) fn feed_masked(&mut self, f: &FrameRef<'_>, redact: Option<&crate::redact::Redactor>) {
        let read = match f.kind {
            // What `request` reads: prompts, and the agent's requests in a turn.
            FrameKind::Request => {
                f.method == Some("session/prompt") || (f.dir == Direction::AgentToClient && self.current().is_some())
            }
            FrameKind::Notification => f.method == Some("session/update") && !plain_chunk(f, redact),
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
                if let Some(turn) = awaits.turn() {
                    if let Some(n) = self.awaiting.get_mut(&turn) {
                        *n -= 1;
                        if *n == 0 {
                            self.awaiting.remove(&turn);
                        }
                    }
                    if self.track_touched {
                        self.touched.push(turn);
                    }
                }
                let mut keep = None;
                let (answer, error) = wire::reply(f.raw, &mut keep);
                let data = error.as_ref().and_then(|e| e.data).filter(|d| d.get() != "null");
                let data = data.map(|d| cut(d.get(), SHORT_MAX));
                let error = error.map(|e| cut(&e.describe(), SHORT_MAX));
                if let (Awaits::Prompt(Some(turn)), Some(_)) = (&awaits, &error) {
                    self.turns[*turn].error_data = data;
                    self.errored = Some(*turn);
                }
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
    pub(super) fn waiting(&self) -> bool {
        self.open.iter().any(Option::is_some) || self.pending.values().any(|a| !matches!(a, Awaits::Prompt(None)))
    }

    /// Request `seq` now awaits its answer, for `awaits`.
    fn await_answer(&mut self, seq: i64, awaits: Awaits) {
        if let Some(turn) = awaits.turn() {
            *self.awaiting.entry(turn).or_default() += 1;
        }
        // A request id used again (a peer's mistake) replaces the first.
        if let Some(turn) = self.pending.insert(seq, awaits).and_then(|a| a.turn()) {
            if let Some(n) = self.awaiting.get_mut(&turn) {
                *n -= 1;
            }
        }
    }

    /// True once turn `k` is over: answered, and nothing it asked awaits an
    /// answer; no later frame changes it then.
    pub(super) fn is_over(&self, k: usize) -> bool {
        self.awaiting.get(&k).is_none_or(|n| *n == 0) && !self.open.contains(&Some(k))
    }

    /// The turns closed or answered for since last asked (see `touched`).
    pub(super) fn take_touched(&mut self) -> Vec<usize> {
        std::mem::take(&mut self.touched)
    }

    /// Turn `k`, taken out: its place stays, empty, so that the later
    /// turns' places keep their meaning.
    pub(super) fn take_turn(&mut self, k: usize) -> Turn {
        self.tools[k] = HashMap::new();
        self.messages[k] = HashMap::new();
        self.breaks[k] = None;
        std::mem::take(&mut self.turns[k])
    }

    /// Ends the open turn `turn`.
    fn close(&mut self, turn: Option<usize>) {
        if let Some(at) = self.open.iter().rposition(|&t| t == turn) {
            self.open.remove(at);
        }
        if self.track_touched {
            self.touched.extend(turn);
        }
    }

    fn request(&mut self, f: &FrameRef<'_>, params: Params<'_>) {
        let method = f.method.unwrap_or("");
        if method == "session/prompt" {
            if self.turns.len() >= self.want {
                self.open.push(None);
                self.await_answer(f.seq, Awaits::Prompt(None));
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
            self.breaks.push(None);
            self.part_roles.push(None);
            self.open.push(Some(self.turns.len() - 1));
            self.await_answer(f.seq, Awaits::Prompt(Some(self.turns.len() - 1)));
            return;
        }
        if f.dir != Direction::AgentToClient {
            return;
        }
        let Some(turn) = self.current() else { return };
        if method == "session/request_permission" {
            self.permission(turn, f, params);
        } else {
            self.client_call(turn, method, f, params);
        }
    }

    /// A permission request in turn `turn`, added to the tool call it names.
    fn permission(&mut self, turn: usize, f: &FrameRef<'_>, params: Params<'_>) {
        let fields = params.tool_call.unwrap_or_default();
        let Some(tool) = self.tool(turn, fields.tool_call_id.as_deref().unwrap_or(""), f, false) else { return };
        let call = &mut self.turns[turn].tool_calls[tool];
        if fields.title.is_some() && call.title.is_none() {
            call.title = fields.title.as_deref().map(|t| cut(t, SHORT_MAX));
        }
        if call.permissions.len() >= PER_TOOL_MAX {
            call.permissions_left_out += 1;
            return;
        }
        let options_left_out = params.options.as_ref().map_or(0, |o| o.len().saturating_sub(PER_TOOL_MAX)) as u64;
        let offered = || params.options.iter().flatten().take(PER_TOOL_MAX);
        let options = offered()
            .map(|o| {
                let id = cut(o.option_id.as_deref().unwrap_or("?"), SHORT_MAX);
                match &o.kind {
                    Some(k) => format!("{id}: {}", cut(k, 64)),
                    None => id,
                }
            })
            .collect();
        let mut option_names: Vec<String> =
            offered().map(|o| o.name.as_deref().map(|n| cut(n, SHORT_MAX)).unwrap_or_default()).collect();
        if option_names.iter().all(String::is_empty) {
            option_names.clear();
        }
        call.permissions.push(Permission {
            request_seq: f.seq,
            t_ns: f.t_ns,
            options,
            option_names,
            options_left_out,
            ..Permission::default()
        });
        let permission = call.permissions.len() - 1;
        self.breaks[turn] = Some((f.seq, "permission asked".into()));
        self.await_answer(f.seq, Awaits::Permission { turn, tool, permission });
    }

    /// A request the agent made of the client in turn `turn`.
    fn client_call(&mut self, turn: usize, method: &str, f: &FrameRef<'_>, params: Params<'_>) {
        let t = &mut self.turns[turn];
        if t.client_calls.len() >= PER_TURN_MAX {
            t.client_calls_left_out += 1;
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
        self.breaks[turn] = Some((f.seq, cut(method, SHORT_MAX)));
        // Made for the tool call in progress, when only one is.
        let mut running = t.tool_calls.iter().filter(|c| !matches!(c.status.as_deref(), Some("completed" | "failed")));
        let (first, more) = (running.next(), running.count());
        let (tool_call_id, tool_calls_in_progress) = match (first, more) {
            (Some(c), 0) => (Some(c.tool_call_id.clone()), 0),
            (Some(_), n) => (None, n as u64 + 1),
            (None, _) => (None, 0),
        };
        let calls = &mut t.client_calls;
        calls.push(ClientCall {
            method: cut(method, SHORT_MAX),
            request_seq: f.seq,
            t_ns: f.t_ns,
            subject,
            tool_call_id,
            tool_calls_in_progress,
            ..ClientCall::default()
        });
        let call = calls.len() - 1;
        self.await_answer(f.seq, Awaits::Client { turn, call });
    }

    /// The place of tool call `id` in turn `turn`, added when new (`None`
    /// past the turn's bound: counted as left out once, or, once
    /// `PENDING_MAX` such are told apart, when `announced` by `tool_call`).
    fn tool(&mut self, turn: usize, id: &str, f: &FrameRef<'_>, announced: bool) -> Option<usize> {
        if let Some(&i) = self.tools[turn].get(id) {
            return Some(i);
        }
        if self.turns[turn].tool_calls.len() >= PER_TURN_MAX {
            if self.first_left_out((turn, "tool", id), announced) {
                self.turns[turn].tool_calls_left_out += 1;
            }
            return None;
        }
        let calls = &mut self.turns[turn].tool_calls;
        calls.push(ToolCall {
            tool_call_id: cut(id, SHORT_MAX),
            first_seq: f.seq,
            first_t_ns: f.t_ns,
            last_seq: f.seq,
            last_t_ns: f.t_ns,
            ..ToolCall::default()
        });
        self.tools[turn].insert(id.to_owned(), calls.len() - 1);
        self.breaks[turn] = Some((f.seq, format!("tool call {} began", cut(id, SHORT_MAX))));
        Some(calls.len() - 1)
    }

    /// True the first time `key` is left out of a list, while up to
    /// `PENDING_MAX` keys are told apart; past that, when `otherwise`.
    fn first_left_out(&mut self, key: impl std::hash::Hash, otherwise: bool) -> bool {
        use std::hash::{BuildHasher, BuildHasherDefault, DefaultHasher};
        let h = BuildHasherDefault::<DefaultHasher>::default().hash_one(key);
        if self.left_out.len() < PENDING_MAX {
            self.left_out.insert(h)
        } else {
            !self.left_out.contains(&h) && otherwise
        }
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
            acp_tee_wire::acp::member(c, keep)
        }
        match kind {
            "agent_message_chunk" | "agent_message" => {
                let t = &mut self.turns[turn];
                t.first_chunk_ns.get_or_insert(f.t_ns - t.start_t_ns);
                if let Some(b) = read(update.content, &mut keep) {
                    let from = t.message.chars;
                    add_block(&mut t.message, &b, f.seq, true);
                    self.part(turn, "agent", from, &b, f.seq);
                    self.message(turn, update.message_id.as_deref(), "agent", &b, f.seq);
                }
            }
            "agent_thought_chunk" | "agent_thought" => {
                if let Some(b) = read(update.content, &mut keep) {
                    let from = self.turns[turn].thought.chars;
                    add_block(&mut self.turns[turn].thought, &b, f.seq, true);
                    self.part(turn, "thought", from, &b, f.seq);
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
            "plan" | "plan_update" => {
                self.turns[turn].plans += 1;
                self.breaks[turn] = Some((f.seq, "plan".into()));
            }
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

    /// Gives the turn the last frame answered with an error the lines of
    /// `tail` written while it was open; the caller calls it after each
    /// frame it feeds.
    pub(super) fn take_stderr(&mut self, tail: &StderrTail) {
        if let Some(turn) = self.errored.take() {
            let t = &mut self.turns[turn];
            t.stderr = tail.0.iter().filter(|l| l.seq > t.request_seq).cloned().collect();
        }
    }

    /// Adds a chunk of `role` (`agent` or `thought`) whose text begins at
    /// character `from` of that text to turn `turn`'s last part, or begins
    /// a part when the role changed or something happened since.
    fn part(&mut self, turn: usize, role: &'static str, from: u64, block: &ContentBlock<'_>, seq: i64) {
        let after = self.breaks[turn].take();
        let begins = after.is_some() || self.part_roles[turn] != Some(role);
        self.part_roles[turn] = Some(role);
        let t = &mut self.turns[turn];
        let text = if role == "thought" { &t.thought } else { &t.message };
        let chars = text.chars - from;
        let other = u64::from(!matches!((block.kind.as_deref(), &block.text), (Some("text") | None, Some(_))));
        if t.parts_left_out > 0 || (begins && t.parts.len() >= PER_TURN_MAX) {
            // Past the bound, parts are counted, not listed.
            t.parts_left_out += u64::from(begins);
            return;
        }
        match t.parts.last_mut() {
            Some(last) if !begins => {
                last.chars += chars;
                last.other_blocks += other;
                last.chunks += 1;
                last.last_seq = seq;
            }
            _ => t.parts.push(Part {
                role: role.into(),
                from,
                chars,
                other_blocks: other,
                chunks: 1,
                first_seq: seq,
                last_seq: seq,
                after,
            }),
        }
    }

    fn message(&mut self, turn: usize, id: Option<&str>, role: &str, block: &ContentBlock<'_>, seq: i64) {
        let Some(id) = id else { return };
        let key = format!("{role}\u{0}{id}");
        let at = match self.messages[turn].get(&key) {
            Some(&i) => i,
            None => {
                if self.turns[turn].messages.len() >= PER_TURN_MAX {
                    if self.first_left_out((turn, "message", &key), false) {
                        self.turns[turn].messages_left_out += 1;
                    }
                    return;
                }
                let list = &mut self.turns[turn].messages;
                list.push(TurnMessage { message_id: cut(id, SHORT_MAX), role: role.into(), ..TurnMessage::default() });
                self.messages[turn].insert(key, list.len() - 1);
                list.len() - 1
            }
        };
        add_block(&mut self.turns[turn].messages[at].text, block, seq, true);
    }

    fn tool_update(&mut self, turn: usize, f: &FrameRef<'_>, u: &Update<'_>) {
        let announced = u.session_update.as_deref() == Some("tool_call");
        let Some(tool) = self.tool(turn, u.tool_call_id.as_deref().unwrap_or(""), f, announced) else { return };
        self.locations(turn, tool, u);
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
            if call.status.as_deref() != Some(status) {
                if call.statuses.len() < PER_TOOL_MAX {
                    call.statuses.push(StatusChange { status: cut(status, 64), seq: f.seq, t_ns: f.t_ns });
                } else {
                    call.statuses_left_out += 1;
                }
            }
            call.status = Some(cut(status, 64));
        }
        if let Some(content) = u.content {
            let mut keep = None;
            let items: Vec<ToolContent> = acp_tee_wire::acp::items(Some(content), &mut keep);
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

    /// Adds the paths update `u` names to tool call `tool` of turn `turn`.
    fn locations(&mut self, turn: usize, tool: usize, u: &Update<'_>) {
        for path in u.locations.iter().flatten().filter_map(|l| l.path.as_deref()) {
            let listed = &self.turns[turn].tool_calls[tool].locations;
            if listed.iter().any(|p| p == path) {
                continue;
            }
            if listed.len() < PER_TOOL_MAX {
                self.turns[turn].tool_calls[tool].locations.push(cut(path, SHORT_MAX));
            } else if self.first_left_out((turn, tool, path), false) {
                self.turns[turn].tool_calls[tool].locations_left_out += 1;
            }
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
                        // The name the user saw beside the id chosen.
                        p.option_name = p.option_id.as_ref().and_then(|id| {
                            // `options` holds `id` or `id: kind`, and kinds
                            // have no ": " (one that does names no option).
                            let of_id = |o: &String| {
                                o == id
                                    || o.strip_prefix(id.as_str())
                                        .and_then(|rest| rest.strip_prefix(": "))
                                        .is_some_and(|kind| !kind.contains(": "))
                            };
                            let at = p.options.iter().position(of_id)?;
                            p.option_names.get(at).filter(|n| !n.is_empty()).cloned()
                        });
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
