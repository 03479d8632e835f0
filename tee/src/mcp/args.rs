//! The arguments of each tool, as the client sends them: rmcp makes each
//! tool's input schema from these structs (`schema`), and `parse` reads a
//! call's arguments into them.

use rmcp::schemars::JsonSchema;
use serde::Deserialize;

/// Arguments of `list_traces`.
#[derive(Debug, Deserialize, JsonSchema)]
#[schemars(crate = "rmcp::schemars")]
pub struct ListTraces {
    /// Skip this many traces (newest first).
    pub offset: Option<i64>,
    /// At most this many traces (1..=100, default 20).
    pub limit: Option<i64>,
}

/// Arguments of `describe_trace`.
#[derive(Debug, Deserialize, JsonSchema)]
#[schemars(crate = "rmcp::schemars")]
pub struct DescribeTrace {
    /// The trace (an id from list_traces).
    pub trace_id: i64,
    /// Only this ACP session.
    pub session_id: Option<String>,
    /// Skip this many sessions.
    pub offset: Option<i64>,
    /// At most this many sessions (1..=100, default 10).
    pub limit: Option<i64>,
    /// Skip this many turns in each session shown.
    pub turns_offset: Option<i64>,
    /// At most this many turns of each session (0..=50, default 3).
    pub turns_limit: Option<i64>,
}

/// Arguments of `search_frames`.
#[derive(Debug, Deserialize, JsonSchema)]
#[schemars(crate = "rmcp::schemars")]
pub struct SearchFrames {
    /// The trace (an id from list_traces).
    pub trace_id: i64,
    /// Words that must all occur in the frame, as whole words, without case.
    pub q: Option<String>,
    /// Only this JSON-RPC method (responses carry their request's).
    pub method: Option<String>,
    /// Only this kind: request, response, notification, batch, invalid, stderr.
    pub kind: Option<String>,
    /// Only this direction: client_to_agent, agent_to_client, stderr.
    pub dir: Option<String>,
    /// Only this ACP session.
    pub session_id: Option<String>,
    /// Only error responses.
    pub errors: Option<bool>,
    /// Only responses slower than this many milliseconds.
    pub min_latency_ms: Option<f64>,
    /// Only frames after this seq.
    pub after: Option<i64>,
    /// Skip this many matching frames.
    pub offset: Option<i64>,
    /// At most this many frames (1..=100, default 20).
    pub limit: Option<i64>,
}

/// Arguments of `get_frame`.
#[derive(Debug, Deserialize, JsonSchema)]
#[schemars(crate = "rmcp::schemars")]
pub struct GetFrame {
    /// The trace (an id from list_traces).
    pub trace_id: i64,
    /// The frame's seq (from search_frames or describe_trace).
    pub seq: i64,
    /// The first byte of the frame's text to return (default 0); a cut answer's next_offset.
    pub offset: Option<i64>,
    /// Bytes of the frame's text to return (1..=32768, default 4096).
    pub max_bytes: Option<i64>,
}

/// Arguments of `method_stats`.
#[derive(Debug, Deserialize, JsonSchema)]
#[schemars(crate = "rmcp::schemars")]
pub struct MethodStatsArgs {
    /// The trace (an id from list_traces).
    pub trace_id: i64,
    /// At most this many methods, most frequent first (1..=200, default 50).
    pub limit: Option<i64>,
}

/// Arguments of `compare_traces`.
#[derive(Debug, Deserialize, JsonSchema)]
#[schemars(crate = "rmcp::schemars")]
pub struct CompareTraces {
    /// The first trace (the baseline).
    pub a: i64,
    /// The second trace; deltas are b minus a.
    pub b: i64,
}
