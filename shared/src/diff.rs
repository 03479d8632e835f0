//! `acp-tee diff` and the viewer's compare view: what differs between two
//! traces, message by message, in `initialize`, in latency and in how turns
//! ended.

use crate::{Direction, FrameKind};
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// Two traces compared (`acp-tee diff A B`, `GET /api/diff/A/B`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TraceDiff {
    /// No message added, missing or changed, the same capabilities and the
    /// same stop reasons (latencies never count).
    pub equivalent: bool,
    /// The first trace.
    pub a: DiffSide,
    /// The second trace.
    pub b: DiffSide,
    /// How the messages were aligned: `edits` (fewest additions and
    /// removals), or `order` (the k-th message of each kind with the k-th,
    /// when the traces differ by too many to search the fewest).
    pub alignment: String,
    /// Messages aligned and equal.
    pub equal_messages: u64,
    /// Every added, missing or changed message, counted.
    pub changed_messages: u64,
    /// The first of them, in order.
    pub messages: Vec<MessageChange>,
    /// What differs in the first `initialize`: the client's capabilities
    /// (`clientCapabilities.…`) and the agent's (`agentCapabilities.…`).
    pub capabilities: Vec<ValueChange>,
    /// Per method, the latencies of its answers on each side.
    pub latency: Vec<MethodLatency>,
    /// How each prompt turn ended on each side, in order.
    pub turns: Vec<TurnEnd>,
    /// Each turn's assembled reply and tool calls compared.
    #[serde(default)]
    pub turn_changes: TurnDiffs,
    /// Every message that differs is a streamed chunk (`agent_message_chunk`,
    /// `agent_thought_chunk`, `user_message_chunk`) and every turn's
    /// assembled message and thoughts are the same: the runs said the same
    /// things, cut into chunks differently.
    #[serde(default)]
    pub only_chunking: bool,
}

/// The turns of two traces compared: paired by session (sessions in the
/// order they first appear) and by place in their session.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct TurnDiffs {
    /// Pairs compared (a turn one side lacks is a pair too).
    pub compared: u64,
    /// Pairs with the same message, thoughts and tool calls.
    pub equal: u64,
    /// Pairs that differ.
    pub changed: u64,
    /// The first of them, in session and turn order.
    pub turns: Vec<TurnChange>,
    /// Turns past the bound of turns read per side, not compared.
    pub left_out: u64,
}

/// How one turn differs.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TurnChange {
    /// The session, named by its order of appearance (`session-1`).
    pub session: String,
    /// The turn's place in its session, from 1.
    pub turn: u64,
    /// Its prompt's seq in the first trace (none: the first has no such turn).
    pub a_seq: Option<i64>,
    /// Its prompt's seq in the second trace.
    pub b_seq: Option<i64>,
    /// Characters of the assembled message in the first trace.
    pub a_chars: u64,
    /// And in the second.
    pub b_chars: u64,
    /// The assembled messages are the same.
    pub message_same: bool,
    /// When they are not: the first's words kept, removed and added to make
    /// the second's.
    pub message: Vec<TextOp>,
    /// A message was longer than the part kept of it; only that part is compared.
    pub message_cut: bool,
    /// The thoughts are the same.
    pub thought_same: bool,
    /// The tool calls that differ, by place in the turn.
    pub tools: Vec<ToolChange>,
    /// Tool calls of the turn in the first trace.
    pub tools_a: u64,
    /// And in the second.
    pub tools_b: u64,
}

/// A run of a word diff.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct TextOp {
    /// What happened to the run.
    pub op: TextOpKind,
    /// The run's text (for `left_out`, what was left out).
    pub text: String,
}

/// What happened to a run of words.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TextOpKind {
    /// In both.
    Same,
    /// In the first only.
    Removed,
    /// In the second only.
    Added,
    /// Past the runs listed, not shown.
    LeftOut,
}

/// A tool call that differs.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ToolChange {
    /// Its place among the turn's tool calls, from 1.
    pub place: u64,
    /// In the first trace (none: it has fewer).
    pub a: Option<ToolBrief>,
    /// In the second.
    pub b: Option<ToolBrief>,
}

/// What is compared of a tool call.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct ToolBrief {
    /// Its title.
    pub title: Option<String>,
    /// Its kind (`read`, `edit`, `execute`, ...).
    pub kind: Option<String>,
    /// Its last status.
    pub status: Option<String>,
}

/// One side of a comparison.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct DiffSide {
    /// The trace's id (in the store it was read from).
    pub trace_id: i64,
    /// The trace's name.
    pub name: Option<String>,
    /// Messages read (stderr lines are not messages).
    pub messages: u64,
    /// Whether the trace holds more messages than were compared.
    pub truncated: bool,
}

/// How a message differs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ChangeKind {
    /// In the first trace only.
    Missing,
    /// In the second trace only.
    Added,
    /// In both, with other contents.
    Changed,
}

/// A message added, missing or changed.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct MessageChange {
    /// Added, missing or changed.
    pub change: ChangeKind,
    /// Which way it went.
    pub dir: Direction,
    /// What it is.
    pub kind: FrameKind,
    /// Its method (for responses: their request's).
    pub method: Option<String>,
    /// For `session/update`: the update's kind (`agent_message_chunk`).
    pub update: Option<String>,
    /// Its seq in the first trace.
    pub a_seq: Option<i64>,
    /// Its seq in the second trace.
    pub b_seq: Option<i64>,
    /// For a changed message: the values that differ.
    pub values: Vec<ValueChange>,
    /// Whether more values differ than are listed.
    pub values_truncated: bool,
}

/// A value that differs: at `path` (`params.update.content.text`), `a` in
/// the first trace and `b` in the second (absent on one side: `None`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ValueChange {
    /// Where, from the message's root (`result.stopReason`, `params.prompt[0]`).
    pub path: String,
    /// The value in the first trace.
    pub a: Option<Value>,
    /// The value in the second trace.
    pub b: Option<Value>,
}

/// One method's answer latencies on both sides.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct MethodLatency {
    /// The method.
    pub method: String,
    /// Answers in the first trace.
    pub count_a: u64,
    /// Answers in the second trace.
    pub count_b: u64,
    /// Median latency in the first trace, ns.
    pub p50_a_ns: Option<i64>,
    /// Median latency in the second trace, ns.
    pub p50_b_ns: Option<i64>,
    /// 95th percentile in the first trace, ns.
    pub p95_a_ns: Option<i64>,
    /// 95th percentile in the second trace, ns.
    pub p95_b_ns: Option<i64>,
    /// `p50_b_ns / p50_a_ns`.
    pub p50_ratio: Option<f64>,
    /// `p95_b_ns / p95_a_ns`.
    pub p95_ratio: Option<f64>,
}

/// How the n-th prompt turn ended on each side: its stop reason, `error`
/// when it was answered with an error, none when it was not answered (or
/// the side has fewer turns).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TurnEnd {
    /// 1, 2, ... in the order the prompts were sent.
    pub turn: u64,
    /// The session, named by its order of appearance (`session-1`).
    pub session: String,
    /// The first trace's: its stop reason, `error`, `answered without a
    /// stop reason`, `past the messages read` (answered, if at all, after
    /// the last message compared); `None` when not ended, or no such turn.
    pub a: Option<String>,
    /// The second trace's.
    pub b: Option<String>,
}
