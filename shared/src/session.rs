//! The session model: what a trace's frames say about its ACP sessions
//! (turns, tool calls, permission waits, client work, usage, open requests),
//! as `/api/traces/{id}/sessions`, `acp-tee show` and the viewer's Session
//! tab give it.
//!
//! Every item points at its frames by `seq`. Times are `t_ns` of the trace
//! (nanoseconds since it started). Texts are the text content blocks of
//! the messages, cut to [`TEXT_MAX_CHARS`] characters each (`*_chars` says
//! how long the whole was).

use crate::Direction;
use serde::{Deserialize, Serialize};

/// Characters of one assembled text (a prompt, an agent message, a thought,
/// a tool call's input or output) the model keeps; the rest is counted.
pub const TEXT_MAX_CHARS: usize = 16 * 1024;

/// Turns `/api/traces/{id}/sessions/{sid}` gives per page unless asked
/// otherwise (`?offset=N&limit=N`, limit at most [`TURNS_MAX_LIMIT`]).
pub const TURNS_DEFAULT_LIMIT: u32 = 50;

/// The largest page of turns one request may ask for.
pub const TURNS_MAX_LIMIT: u32 = 500;

/// The `sessionUpdate` kinds of streamed chunks: the session model counts
/// them without parsing, and the diagram can collapse runs of them.
pub const CHUNK_KINDS: [&str; 3] = ["agent_message_chunk", "agent_thought_chunk", "user_message_chunk"];

/// The sessions of one trace.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct TraceSessions {
    /// Each session, in the order it first appeared.
    pub sessions: Vec<SessionSummary>,
    /// Requests no response has answered yet (or ever, in an ended trace),
    /// both ways, oldest first, at most [`OPEN_REQUESTS_MAX`].
    pub open_requests: Vec<OpenRequest>,
    /// All open requests, including those past the list's bound.
    pub open_requests_total: u64,
    /// The trace's last frame this model has read.
    pub last_seq: i64,
    /// The time the ages of open requests are measured at: now for a live
    /// trace, its last frame for an ended one.
    pub now_t_ns: i64,
    /// True when the trace is still recorded (ages grow).
    pub live: bool,
    /// Frames of sessions beyond the first [`SESSIONS_MAX`], left out of
    /// the model.
    #[serde(default)]
    pub frames_left_out: u64,
    /// Sessions beyond the first [`SESSIONS_MAX`], left out of `sessions`
    /// (a session asked for by its id is kept however late it comes).
    /// Distinct ids are counted up to [`SESSIONS_LEFT_OUT_COUNTED`]; at
    /// that figure, there may be more.
    #[serde(default)]
    pub sessions_left_out: u64,
    /// Requests made while [`PENDING_MAX`] others awaited their answers:
    /// the model did not follow them, so whether and when they were
    /// answered is unknown. `open_requests_total` counts them as open.
    #[serde(default)]
    pub requests_not_followed: u64,
    /// The protocol version `initialize` settled on, when seen.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub protocol_version: Option<i64>,
    /// The agent's `agentInfo` from `initialize` (`name` and `version`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent: Option<String>,
    /// The client's `clientInfo` from `initialize`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client: Option<String>,
}

/// Sessions one trace's model keeps at most.
pub const SESSIONS_MAX: usize = 10_000;

/// Sessions left out (past [`SESSIONS_MAX`]) a model tells apart at most.
pub const SESSIONS_LEFT_OUT_COUNTED: u64 = 1_000_000;

/// Open requests a model lists at most.
pub const OPEN_REQUESTS_MAX: usize = 200;

/// Requests awaiting an answer a model follows at most; later ones are
/// counted in `requests_not_followed` while this many are open.
pub const PENDING_MAX: usize = 100_000;

/// Tool calls, client calls and messages one turn lists at most.
pub const PER_TURN_MAX: usize = 1000;

/// Statuses, locations and permission requests one tool call lists at
/// most, and options one permission request lists.
pub const PER_TOOL_MAX: usize = 64;

/// Setting changes, plan entries and commands one session lists at most.
pub const LIST_MAX: usize = 200;

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// One ACP session.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct SessionSummary {
    /// The `sessionId`.
    pub session_id: String,
    /// How it began: `new`, `load`, `resume` or `fork`; `unknown` when the
    /// trace holds no such request for it (it began before the recording).
    pub began: String,
    /// The request that began it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub began_seq: Option<i64>,
    /// The working directory the session was opened in.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cwd: Option<String>,
    /// Its title (`session_info_update`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// The mode it is in (`current_mode_update`, `session/set_mode`, or the
    /// `modes` of the answer that opened it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mode: Option<String>,
    /// `session/close` or `session/delete`, when seen.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub closed_seq: Option<i64>,
    /// First and last frame of the session.
    pub first_seq: i64,
    /// Last frame of the session.
    pub last_seq: i64,
    /// `t_ns` of its first frame.
    pub first_t_ns: i64,
    /// `t_ns` of its last frame.
    pub last_t_ns: i64,
    /// Prompt turns.
    pub turns: u64,
    /// Tool calls: distinct `toolCallId`s, announced by a `tool_call` or only
    /// updated (`tool_call_update` with no `tool_call` before it).
    pub tool_calls: u64,
    /// Permission requests, and how long the client took over them in all.
    pub permission_requests: u64,
    /// Nanoseconds spent waiting for the client's permission answers; one
    /// still open counts up to now (live) or the trace's last frame.
    pub permission_wait_ns: i64,
    /// `session/update` notifications.
    pub updates: u64,
    /// Updates that arrived while a `session/load` or `session/resume`
    /// was replaying the conversation.
    pub replayed_updates: u64,
    /// Token usage summed over the turns' `PromptResponse.usage`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage: Option<TokenUsage>,
    /// The last context window report (`usage_update`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context: Option<ContextUsage>,
    /// Requests of this session still open.
    pub open_requests: u64,
    /// Update kinds this model does not know, with how often each came.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub other_updates: Vec<KindCount>,
    /// What looks wrong (`load-replayed-nothing`, `replayed-twice`,
    /// `usage-looks-cumulative`, `cancel-not-honoured`), once per code:
    /// its first occurrence and how many there were.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<Note>,
}

/// A mode or configuration option set, by whom and when.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct SettingChange {
    /// `mode` or the config option's id.
    pub setting: String,
    /// The new value.
    pub value: String,
    /// The frame that says so.
    pub seq: i64,
    /// When.
    pub t_ns: i64,
}

/// A count of one kind of thing.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct KindCount {
    /// The kind.
    pub kind: String,
    /// How many.
    pub count: u64,
}

/// Something the model flags.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Note {
    /// A stable code.
    pub code: String,
    /// What it means here.
    pub message: String,
    /// The frame it is about, when one (the first, when it happened more
    /// than once).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seq: Option<i64>,
    /// How many times it happened.
    #[serde(default)]
    pub count: u64,
}

/// Tokens, as `PromptResponse.usage` reports them.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TokenUsage {
    /// `totalTokens`.
    pub total_tokens: u64,
    /// `inputTokens`.
    pub input_tokens: u64,
    /// `outputTokens`.
    pub output_tokens: u64,
    /// `thoughtTokens`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub thought_tokens: Option<u64>,
    /// `cachedReadTokens`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cached_read_tokens: Option<u64>,
    /// `cachedWriteTokens`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cached_write_tokens: Option<u64>,
}

/// A context window report (`usage_update`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ContextUsage {
    /// Tokens in the context.
    pub used: u64,
    /// The window's size.
    pub size: u64,
    /// Cost so far, as reported (`amount currency`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost: Option<String>,
    /// The frame.
    pub seq: i64,
}

/// One session with a page of its turns.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct SessionDetail {
    /// The session.
    pub summary: SessionSummary,
    /// Turns from `offset` on.
    pub turns: Vec<Turn>,
    /// Where this page starts.
    pub offset: u64,
    /// The session's open requests.
    pub open_requests: Vec<OpenRequest>,
    /// Its last plan (`plan`), when it has one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub plan: Option<Plan>,
    /// The commands the agent offered last (`available_commands_update`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub commands: Vec<String>,
    /// Mode and configuration changes, in order (the first [`LIST_MAX`]).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub changes: Vec<SettingChange>,
    /// What `commands` and `changes` leave out past their bound.
    #[serde(flatten)]
    pub left_out: ListsLeftOut,
}

/// How much of a session's bounded lists ([`LIST_MAX`]) was left out.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ListsLeftOut {
    /// Commands of the last `available_commands_update` not listed.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub commands_left_out: u64,
    /// Setting changes not listed (those after the first [`LIST_MAX`]).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub changes_left_out: u64,
}

/// Paging of `/api/traces/{id}/sessions/{sid}`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct TurnQuery {
    /// Skip this many turns.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub offset: Option<u64>,
    /// At most this many turns (1..=[`TURNS_MAX_LIMIT`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limit: Option<u32>,
    /// The session as it was when frame `to` had just arrived (a replay's
    /// cursor): no frame after it counts. A seq, 1 or more.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub to: Option<i64>,
}

/// What `/api/traces/{id}/sessions` folds.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct SessionsQuery {
    /// The sessions as they were when frame `to` had just arrived (a
    /// replay's cursor): no frame after it counts. A seq, 1 or more.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub to: Option<i64>,
}

/// One `session/prompt` turn.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Turn {
    /// Its place in the session, from 0.
    pub index: u64,
    /// The `session/prompt` request.
    pub request_seq: i64,
    /// When it was sent.
    pub start_t_ns: i64,
    /// Its response (or error), when it came.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub response_seq: Option<i64>,
    /// When the response came.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub end_t_ns: Option<i64>,
    /// From the prompt to the first `agent_message_chunk`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub first_chunk_ns: Option<i64>,
    /// The response's `stopReason`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stop_reason: Option<String>,
    /// The error that answered it instead.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// That error's `data` as written (JSON text, cut like `error`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error_data: Option<String>,
    /// `session/cancel` sent during the turn.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cancel_seq: Option<i64>,
    /// The prompt's text blocks, and the kinds of its other blocks.
    pub prompt: Text,
    /// The agent's reply, assembled from its chunks.
    pub message: Text,
    /// The agent's thoughts.
    pub thought: Text,
    /// User message chunks the agent echoed (or replayed).
    #[serde(default, skip_serializing_if = "Text::is_empty")]
    pub user: Text,
    /// Messages by `messageId`, when the agent gave ids, in order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub messages: Vec<Message>,
    /// Tool calls that began in the turn.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tool_calls: Vec<ToolCall>,
    /// What the agent asked the client to do (`fs/*`, `terminal/*`,
    /// `elicitation/*` and other client methods), in order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub client_calls: Vec<ClientCall>,
    /// `usage` of the response.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage: Option<TokenUsage>,
    /// `session/update` notifications in the turn.
    pub updates: u64,
    /// `plan` updates in the turn.
    #[serde(default)]
    pub plans: u64,
    /// Tool calls past the first [`PER_TURN_MAX`], not listed: distinct
    /// ids, up to [`PENDING_MAX`] of them; past that, each `tool_call`
    /// for an id not listed.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub tool_calls_left_out: u64,
    /// Client calls past the first [`PER_TURN_MAX`], not listed.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub client_calls_left_out: u64,
    /// Messages past the first [`PER_TURN_MAX`], not listed (counted as
    /// tool calls are).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub messages_left_out: u64,
    /// The agent's message and thoughts as they came between the other
    /// things that happened (a tool call began, a permission was asked, a
    /// plan was sent, the client was asked something): `message` and
    /// `thought` cut where those happened, in order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub parts: Vec<Part>,
    /// Parts past the first [`PER_TURN_MAX`], not listed: the message and
    /// thought text after the last listed part of each is not split.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub parts_left_out: u64,
    /// For a turn answered with an error: the agent's last lines on stderr
    /// (at most [`STDERR_LINES_MAX`], colour codes removed, each cut like a
    /// preview) written while it was open. Stderr names no session: while
    /// turns of several sessions were open, a line may be another's.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub stderr: Vec<StderrLine>,
}

/// Lines of the agent's stderr an error turn keeps.
pub const STDERR_LINES_MAX: usize = 5;

/// A line the agent wrote to stderr.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct StderrLine {
    /// Its frame.
    pub seq: i64,
    /// Its text.
    pub text: String,
}

impl Turn {
    /// The kept text of `part` (shorter than `part.chars` when its
    /// [`Text`] was cut at [`TEXT_MAX_CHARS`]; empty for a part of
    /// another turn).
    pub fn part_text(&self, part: &Part) -> &str {
        let text = if part.role == "thought" { &self.thought.text } else { &self.message.text };
        char_slice(text, part.from, part.chars)
    }

    /// What the turn tells in the order it happened, by first frame: its
    /// parts, the echoed user text, its tool calls (each with the requests
    /// made of the client for it, [`ClientCall::tool_call_id`]) and the
    /// other requests made of the client.
    pub fn in_order(&self) -> Vec<(i64, TurnItem<'_>)> {
        let mut items: Vec<(i64, TurnItem)> = self.parts.iter().map(|p| (p.first_seq, TurnItem::Part(p))).collect();
        items.extend(self.user.first_seq.map(|seq| (seq, TurnItem::User)));
        let made_for = |c: &ToolCall| -> Vec<&ClientCall> {
            self.client_calls.iter().filter(|cc| cc.tool_call_id.as_ref() == Some(&c.tool_call_id)).collect()
        };
        items.extend(self.tool_calls.iter().map(|c| (c.first_seq, TurnItem::Tool(c, made_for(c)))));
        let of_a_tool = |c: &ClientCall| {
            c.tool_call_id.as_ref().is_some_and(|id| self.tool_calls.iter().any(|tc| &tc.tool_call_id == id))
        };
        items.extend(self.client_calls.iter().filter(|c| !of_a_tool(c)).map(|c| (c.request_seq, TurnItem::Client(c))));
        items.sort_by_key(|(seq, _)| *seq);
        items
    }

    /// What came just before part `p`, when it is not itself one of
    /// `items` (as [`Turn::in_order`] gives them): a plan, a permission
    /// request.
    pub fn unshown_after<'a>(p: &'a Part, items: &[(i64, TurnItem<'_>)]) -> Option<&'a (i64, String)> {
        p.after.as_ref().filter(|(seq, _)| items.binary_search_by_key(seq, |(s, _)| *s).is_err())
    }

    /// What is kept of `role`'s text (`agent` or `thought`) after its last
    /// listed part, which no part holds when parts were left out.
    pub fn text_after_parts(&self, role: &str) -> &str {
        let text = if role == "thought" { &self.thought.text } else { &self.message.text };
        let from = self.parts.iter().filter(|p| p.role == role).map(|p| p.from + p.chars).max().unwrap_or(0);
        char_slice(text, from, u64::MAX)
    }
}

/// One thing a turn tells ([`Turn::in_order`]).
#[derive(Debug)]
pub enum TurnItem<'a> {
    /// A part of the reply or thoughts.
    Part(&'a Part),
    /// The user text the agent echoed.
    User,
    /// A tool call, with the requests made of the client for it.
    Tool(&'a ToolCall, Vec<&'a ClientCall>),
    /// A request made of the client for no tool call listed.
    Client(&'a ClientCall),
}

/// The characters `from..from + len` of `text`, as far as it has them.
fn char_slice(text: &str, from: u64, len: u64) -> &str {
    let at = |n: u64| text.char_indices().nth(n as usize).map_or(text.len(), |(i, _)| i);
    let start = at(from);
    let rest = &text[start..];
    let end = rest.char_indices().nth(len.min(rest.len() as u64) as usize).map_or(rest.len(), |(i, _)| i);
    &rest[..end]
}

/// A stretch of the agent's message or thoughts with nothing else
/// happening in the turn (see [`Turn::parts`]).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Part {
    /// `agent` (its message) or `thought`.
    pub role: String,
    /// Where it starts in that text, in characters.
    pub from: u64,
    /// Its characters.
    pub chars: u64,
    /// Blocks that were not text (`image`, ...).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub other_blocks: u64,
    /// Its chunks.
    pub chunks: u64,
    /// Its first frame.
    pub first_seq: i64,
    /// Its last frame.
    pub last_seq: i64,
    /// What happened just before it, when something other than the last
    /// part did (`tool call ID began`, `plan`, `permission asked`,
    /// `fs/read_text_file`, ...), and in which frame.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub after: Option<(i64, String)>,
}

/// An assembled text.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Text {
    /// The text, at most [`TEXT_MAX_CHARS`] characters.
    pub text: String,
    /// Characters of the whole text.
    pub chars: u64,
    /// Blocks that were not text (`image`, `resource_link`, ...), by kind.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub other_blocks: Vec<KindCount>,
    /// The frames it came in: the first and the last.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub first_seq: Option<i64>,
    /// The last frame it came in.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_seq: Option<i64>,
    /// How many chunks.
    #[serde(default)]
    pub chunks: u64,
}

impl Text {
    /// True when nothing came.
    pub fn is_empty(&self) -> bool {
        self.chunks == 0 && self.chars == 0 && self.other_blocks.is_empty()
    }
}

/// One message assembled from chunks sharing a `messageId`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Message {
    /// The `messageId`.
    pub message_id: String,
    /// `agent`, `thought` or `user`.
    pub role: String,
    /// Its text.
    pub text: Text,
}

/// A tool call, by `toolCallId`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ToolCall {
    /// The `toolCallId`.
    pub tool_call_id: String,
    /// Its latest title.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// `read`, `edit`, `execute`, ...
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
    /// Its latest status.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<String>,
    /// Each status it was given, with when.
    pub statuses: Vec<StatusChange>,
    /// The frame that began it.
    pub first_seq: i64,
    /// When it began.
    pub first_t_ns: i64,
    /// Its last update.
    pub last_seq: i64,
    /// When it was last updated.
    pub last_t_ns: i64,
    /// Paths it touches.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub locations: Vec<String>,
    /// Kinds of its content (`content`, `diff`, `terminal`), by count.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub content: Vec<KindCount>,
    /// `rawInput` as JSON text, cut to [`TEXT_MAX_CHARS`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub raw_input: Option<String>,
    /// `rawOutput` as JSON text, cut to [`TEXT_MAX_CHARS`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub raw_output: Option<String>,
    /// Permission requests that name it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub permissions: Vec<Permission>,
    /// Updates it got.
    pub updates: u64,
    /// The frame of its first `tool_call` (none when only updates came).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub announced_seq: Option<i64>,
    /// The frame of an update that came before any `tool_call` announced
    /// it (out of order: not a normal step of its statuses).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unannounced_update: Option<i64>,
    /// Status changes past the first [`PER_TOOL_MAX`], not listed.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub statuses_left_out: u64,
    /// Paths past the first [`PER_TOOL_MAX`], not listed (counted as tool
    /// calls are).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub locations_left_out: u64,
    /// Permission requests past the first [`PER_TOOL_MAX`], not listed.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub permissions_left_out: u64,
    /// The MCP requests of the trace's MCP children (servers its agent
    /// started, recorded by acp-tee) that served it: named by a hint in
    /// the request's `_meta`, or made while it was in progress
    /// (docs/mcp-servers.md says the rule).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub mcp_calls: Vec<McpCall>,
    /// MCP calls past the first [`PER_TOOL_MAX`], not listed.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub mcp_calls_left_out: u64,
}

/// An MCP request made for an ACP tool call, in a child trace.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct McpCall {
    /// The MCP trace.
    pub trace_id: i64,
    /// The server: its `serverInfo.name`, else the trace's name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server: Option<String>,
    /// The request's frame in the MCP trace.
    pub seq: i64,
    /// `tools/call`, `resources/read`, ...
    pub method: String,
    /// What it names: the tool (`tools/call`), prompt (`prompts/get`) or
    /// resource URI (`resources/read`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// When it was sent, on the ACP trace's clock (ns since it started).
    pub t_ns: i64,
    /// How long until its answer; `None`: not answered (yet).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub latency_ns: Option<i64>,
    /// Why it failed: a JSON-RPC error's message, or the text of a tool
    /// result with `isError`; `None`: it did not fail (or is not answered).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// How it was linked to the tool call.
    pub linked_by: LinkedBy,
    /// For [`LinkedBy::Time`]: how many tool calls of the session fit
    /// the rule as this one did (1: this one alone).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub candidates: u64,
}

/// How an [`McpCall`] was linked to its tool call.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LinkedBy {
    /// A value of the request's `_meta` is the tool call's id.
    Meta,
    /// It was sent while the tool call was in progress (or just before
    /// it was announced).
    #[default]
    Time,
}

/// A tool call's status at one moment.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct StatusChange {
    /// `pending`, `in_progress`, `completed`, `failed`.
    pub status: String,
    /// The frame.
    pub seq: i64,
    /// When.
    pub t_ns: i64,
}

/// A `session/request_permission` and its answer.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Permission {
    /// The request.
    pub request_seq: i64,
    /// When it was asked.
    pub t_ns: i64,
    /// The options offered (`optionId: kind`).
    pub options: Vec<String>,
    /// Each option's `name`, what the client showed the user, in the order
    /// of `options` (empty for one without); absent when none had one.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub option_names: Vec<String>,
    /// The answer, when it came.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub response_seq: Option<i64>,
    /// How long the client took to answer; absent while unanswered.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub waited_ns: Option<i64>,
    /// `selected` or `cancelled` (the outcome), or `error`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub outcome: Option<String>,
    /// The option chosen, when one was.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub option_id: Option<String>,
    /// The chosen option's `name`, when the request offered it with one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub option_name: Option<String>,
    /// Options past the first [`PER_TOOL_MAX`], not listed.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub options_left_out: u64,
}

/// A request the agent made of the client (`fs/*`, `terminal/*`,
/// `elicitation/*`, ...).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ClientCall {
    /// The method.
    pub method: String,
    /// The request.
    pub request_seq: i64,
    /// When it was made.
    pub t_ns: i64,
    /// What it was about: a path, a command line, a terminal id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub subject: Option<String>,
    /// The response, when it came.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub response_seq: Option<i64>,
    /// How long the client took.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub duration_ns: Option<i64>,
    /// The error that answered it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// Terminal exit status or other short result, when there is one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result: Option<String>,
    /// The tool call it was made for, by the rule that it was the only
    /// tool call of the turn in progress (not `completed` or `failed`)
    /// when the request was sent; ACP names none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_call_id: Option<String>,
    /// Tool calls of the turn in progress when it was sent, when more than
    /// one: which made it is unknown.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub tool_calls_in_progress: u64,
}

/// A plan as the agent last sent it.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Plan {
    /// Its entries.
    pub entries: Vec<PlanEntry>,
    /// The frame.
    pub seq: i64,
    /// How many times the plan was sent.
    pub updates: u64,
    /// Entries of the last plan past the first [`LIST_MAX`], not listed.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub entries_left_out: u64,
}

/// One entry of a plan.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct PlanEntry {
    /// What it says.
    pub content: String,
    /// `pending`, `in_progress`, `completed`.
    pub status: String,
    /// `high`, `medium`, `low`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub priority: Option<String>,
}

/// A request no response answered.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct OpenRequest {
    /// The request.
    pub seq: i64,
    /// Who sent it.
    pub dir: Direction,
    /// Its method.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub method: Option<String>,
    /// Its id, as JSON text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rpc_id: Option<String>,
    /// Its session.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_id: Option<String>,
    /// When it was sent.
    pub t_ns: i64,
    /// How long it has waited: to now for a live trace, to the trace's
    /// last frame for an ended one.
    pub age_ns: i64,
    /// Who it waits for: `client` or `agent`.
    pub waiting_for: String,
    /// A `$/cancel_request` or `session/cancel` was sent for it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cancel_seq: Option<i64>,
    /// How long nothing has come in its session (`quiet_of` = `session`)
    /// or, for a request naming no session, in the trace (`trace`): from
    /// the last frame (or the request, when later) to when `age_ns` is
    /// measured. Small while an agent streams; as long as `age_ns` when
    /// nothing has happened since the request.
    #[serde(default)]
    pub quiet_ns: i64,
    /// `session` or `trace`: whose last frame `quiet_ns` counts from.
    #[serde(default)]
    pub quiet_of: String,
}

impl OpenRequest {
    /// Whether its peer is still at work: `nothing came since it was sent`
    /// (in its session, or the trace for a request naming none), or when
    /// the last frame came (`last frame of its session 120 ms ago`; on an
    /// ended trace `... 2 s before the end`; `frames of its session came up to
    /// the end` when its last frame is the trace's). `quiet_ns` and `age_ns` are
    /// this request's, as measured now; `duration` writes a time.
    pub fn activity_text(&self, live: bool, quiet_ns: i64, age_ns: i64, duration: impl Fn(i64) -> String) -> String {
        let whose = if self.quiet_of == "trace" { "the trace" } else { "its session" };
        if quiet_ns >= age_ns {
            format!("nothing came in {whose} since it was sent")
        } else if quiet_ns == 0 && live {
            format!("last frame of {whose} just now")
        } else if quiet_ns == 0 {
            format!("frames of {whose} came up to the end")
        } else if live {
            format!("last frame of {whose} {} ago", duration(quiet_ns))
        } else {
            format!("last frame of {whose} {} before the end", duration(quiet_ns))
        }
    }
}

/// What `acp-tee show --format json` writes: one document.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ShowDocument {
    /// The trace.
    pub trace: crate::api::TraceSummary,
    /// Its sessions and open requests.
    pub overview: TraceSessions,
    /// Each session of `overview`, in the same order, with all its turns.
    pub sessions: Vec<ShowSession>,
}

/// One session's turns in [`ShowDocument`].
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ShowSession {
    /// The `sessionId`.
    pub session_id: String,
    /// Its last plan.
    #[serde(default)]
    pub plan: Option<Plan>,
    /// The commands the agent offered last.
    #[serde(default)]
    pub commands: Vec<String>,
    /// Mode and configuration changes, in order.
    #[serde(default)]
    pub changes: Vec<SettingChange>,
    /// What `commands` and `changes` leave out past their bound.
    #[serde(flatten)]
    pub left_out: ListsLeftOut,
    /// Every turn, in order.
    pub turns: Vec<Turn>,
}
