//! Traces that belong together: the MCP requests of an ACP trace's MCP
//! children (servers its agent started, each recorded by acp-tee) put
//! under the ACP tool calls they served.
//!
//! # The rule
//! An MCP request is one the agent sends to its server, other than
//! `initialize`, `ping` and the `*/list` requests (which serve the agent,
//! not one tool call). It goes under a tool call of the session when
//! 1. a string in its `_meta` (at most [`HINT_DEPTH`] levels down) is that
//!    tool call's id (and, should `_meta` also name a session of the trace,
//!    it is that one's): [`LinkedBy::Meta`]; a request with such a hint goes
//!    nowhere else;
//! 2. otherwise, by time: it was sent while the tool call was in progress,
//!    from [`EARLY_NS`] before its `tool_call` (agents may send the MCP
//!    request first) to its first `completed` or `failed` status (or the
//!    turn's end; or now, while neither came). Where several tool calls of
//!    the session fit, those whose title names the request's tool are
//!    kept, when any does; each one kept lists it, with how many there
//!    are ([`McpCall::candidates`]): time tells only that it was made
//!    while they were in progress, not for which.
//!
//! Both traces' clocks are the same: their wall-clock starts and the
//! monotonic offsets of their frames (a wall clock stepped between the two
//! starts shifts the child by the step).

#[cfg(test)]
mod tests;

use acp_tee_shared::session::{LinkedBy, McpCall, ToolCall, Turn, PER_TOOL_MAX};

/// How long before its ACP `tool_call` an MCP request still counts as made
/// for it.
pub const EARLY_NS: i64 = 50_000_000;

/// How deep in `_meta` a hint is looked for.
pub const HINT_DEPTH: usize = 3;

/// How many strings of one request's `_meta` are kept as hints.
pub const HINTS_MAX: usize = 16;

/// The longest string of `_meta` taken as a hint (ids are short; a longer
/// string names no tool call and is not kept).
pub const HINT_MAX_BYTES: usize = 256;

/// An MCP request of a child trace, read for linking.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct McpRequest {
    /// The call as a tool call lists it (`linked_by` and `candidates` are
    /// set when it is linked).
    pub call: McpCall,
    /// The strings of its `_meta`, up to [`HINTS_MAX`].
    pub hints: Vec<String>,
}

/// Whether an MCP request of `method` can serve one tool call.
pub fn serves_tool_calls(method: &str) -> bool {
    !matches!(method, "initialize" | "ping") && !method.ends_with("/list") && !method.starts_with("notifications/")
}

/// The strings in `meta` (a request's `_meta`) of at most
/// [`HINT_MAX_BYTES`], up to [`HINT_DEPTH`] levels down and [`HINTS_MAX`]
/// of them.
pub fn hints_of(meta: &serde_json::Value) -> Vec<String> {
    fn walk(v: &serde_json::Value, depth: usize, out: &mut Vec<String>) {
        if out.len() >= HINTS_MAX {
            return;
        }
        match v {
            serde_json::Value::String(s) if s.len() <= HINT_MAX_BYTES => out.push(s.clone()),
            serde_json::Value::Object(o) if depth < HINT_DEPTH => o.values().for_each(|v| walk(v, depth + 1, out)),
            serde_json::Value::Array(a) if depth < HINT_DEPTH => a.iter().for_each(|v| walk(v, depth + 1, out)),
            _ => {}
        }
    }
    let mut out = Vec::new();
    walk(meta, 0, &mut out);
    out
}

/// Puts each of `requests` under the tool calls of `turns` (session
/// `session_id`'s) the rule picks, in time order; `sessions` are every
/// session id of the trace (a hint naming another session keeps a request
/// out of this one); a tool call that neither a status nor its turn's end
/// closed lasts until `end_t_ns` (the trace's last frame, or now while it
/// is live).
pub fn attach(turns: &mut [Turn], session_id: &str, sessions: &[&str], requests: &[McpRequest], end_t_ns: i64) {
    let spans: Vec<Span> = turns
        .iter()
        .enumerate()
        .flat_map(|(ti, turn)| turn.tool_calls.iter().enumerate().map(move |(ci, call)| (ti, ci, turn, call)))
        .map(|(turn_idx, call_idx, turn, call)| Span {
            turn: turn_idx,
            call: call_idx,
            start: call.first_t_ns,
            end: done_at(call).or(turn.end_t_ns).unwrap_or(end_t_ns),
        })
        .collect();
    for request in requests {
        if !serves_tool_calls(&request.call.method) {
            continue;
        }
        // A hint naming another session of the trace says the request is
        // not this session's.
        if request.hints.iter().any(|h| h != session_id && sessions.contains(&h.as_str())) {
            continue;
        }
        let named: Vec<&Span> = spans
            .iter()
            .filter(|s| request.hints.iter().any(|h| *h == turns[s.turn].tool_calls[s.call].tool_call_id))
            .collect();
        if !named.is_empty() {
            for s in named {
                push(&mut turns[s.turn].tool_calls[s.call], request, LinkedBy::Meta, 0);
            }
            continue;
        }
        let t = request.call.t_ns;
        let fits: Vec<&Span> = spans.iter().filter(|s| s.start - EARLY_NS <= t && t <= s.end).collect();
        let titled: Vec<&Span> = match &request.call.name {
            Some(name) => fits
                .iter()
                .copied()
                .filter(|s| {
                    turns[s.turn].tool_calls[s.call].title.as_deref().is_some_and(|title| title.contains(name.as_str()))
                })
                .collect(),
            None => Vec::new(),
        };
        let chosen = if titled.is_empty() { fits } else { titled };
        let n = chosen.len() as u64;
        for s in chosen {
            push(&mut turns[s.turn].tool_calls[s.call], request, LinkedBy::Time, n);
        }
    }
    for s in &spans {
        turns[s.turn].tool_calls[s.call].mcp_calls.sort_by_key(|c| (c.t_ns, c.trace_id, c.seq));
    }
}

/// One tool call's span in time.
struct Span {
    turn: usize,
    call: usize,
    start: i64,
    end: i64,
}

/// When the tool call was first `completed` or `failed`.
fn done_at(call: &ToolCall) -> Option<i64> {
    call.statuses.iter().find(|s| matches!(s.status.as_str(), "completed" | "failed")).map(|s| s.t_ns)
}

fn push(call: &mut ToolCall, request: &McpRequest, by: LinkedBy, candidates: u64) {
    if call.mcp_calls.len() >= PER_TOOL_MAX {
        call.mcp_calls_left_out += 1;
        return;
    }
    call.mcp_calls.push(McpCall { linked_by: by, candidates, ..request.call.clone() });
}
