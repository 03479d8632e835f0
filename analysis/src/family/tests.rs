use super::*;
use acp_tee_shared::session::StatusChange;

const MS: i64 = 1_000_000;

/// A tool call `id` titled `title`, announced at `start` ms, completed at
/// `done` ms (if ever).
fn tool(id: &str, title: &str, start: i64, done: Option<i64>) -> ToolCall {
    let mut statuses = vec![StatusChange { status: "pending".into(), seq: 1, t_ns: start * MS }];
    if let Some(done) = done {
        statuses.push(StatusChange { status: "completed".into(), seq: 2, t_ns: done * MS });
    }
    ToolCall {
        tool_call_id: id.into(),
        title: Some(title.into()),
        first_t_ns: start * MS,
        statuses,
        ..ToolCall::default()
    }
}

fn turn(calls: Vec<ToolCall>, end: Option<i64>) -> Turn {
    Turn { tool_calls: calls, end_t_ns: end.map(|e| e * MS), ..Turn::default() }
}

/// `method name` sent at `at` ms, with `hints`.
fn request(seq: i64, method: &str, name: &str, at: i64, hints: &[&str]) -> McpRequest {
    McpRequest {
        call: McpCall {
            trace_id: 2,
            seq,
            method: method.into(),
            name: Some(name.into()),
            t_ns: at * MS,
            ..McpCall::default()
        },
        hints: hints.iter().map(|h| h.to_string()).collect(),
    }
}

/// (tool call id, request seq, linked by, candidates) of every link.
fn links(turns: &[Turn]) -> Vec<(String, i64, LinkedBy, u64)> {
    turns
        .iter()
        .flat_map(|t| &t.tool_calls)
        .flat_map(|c| c.mcp_calls.iter().map(|m| (c.tool_call_id.clone(), m.seq, m.linked_by, m.candidates)))
        .collect()
}

#[test]
fn a_request_sent_while_a_tool_call_is_in_progress_is_its() {
    let mut turns =
        [turn(vec![tool("a", "mcp: get_time", 10, Some(20)), tool("b", "Read x", 100, Some(140))], Some(150))];
    let requests = [
        request(3, "tools/call", "get_time", 15, &[]),
        request(5, "tools/call", "get_time", 30, &[]), // between the two: none
        request(7, "resources/read", "file:///x", 135, &[]),
    ];
    attach(&mut turns, "s", &["s"], &requests, 160 * MS);
    assert_eq!(links(&turns), [("a".into(), 3, LinkedBy::Time, 1), ("b".into(), 7, LinkedBy::Time, 1)]);
}

#[test]
fn a_request_just_before_its_tool_call_is_its_one_long_before_is_not() {
    let mut turns = [turn(vec![tool("a", "t", 100, Some(200))], Some(300))];
    let requests = [request(3, "tools/call", "t", 100 - 49, &[]), request(5, "tools/call", "t", 100 - 51, &[])];
    attach(&mut turns, "s", &["s"], &requests, 300 * MS);
    assert_eq!(links(&turns), [("a".into(), 3, LinkedBy::Time, 1)]);
}

#[test]
fn lists_initialize_and_pings_serve_no_tool_call() {
    let mut turns = [turn(vec![tool("a", "t", 10, Some(20))], Some(30))];
    let requests = [
        request(1, "initialize", "", 12, &[]),
        request(3, "tools/list", "", 13, &[]),
        request(5, "ping", "", 14, &[]),
        request(7, "notifications/progress", "", 15, &[]),
    ];
    attach(&mut turns, "s", &["s"], &requests, 30 * MS);
    assert_eq!(links(&turns), []);
}

#[test]
fn a_tool_call_still_in_progress_lasts_until_its_turn_ends_or_the_end() {
    let mut turns = [turn(vec![tool("a", "t", 10, None)], Some(30)), turn(vec![tool("b", "t", 200, None)], None)];
    let requests = [
        request(3, "tools/call", "t", 25, &[]),
        request(5, "tools/call", "t", 35, &[]),
        request(7, "tools/call", "t", 990, &[]),
    ];
    attach(&mut turns, "s", &["s"], &requests, 1000 * MS);
    assert_eq!(links(&turns), [("a".into(), 3, LinkedBy::Time, 1), ("b".into(), 7, LinkedBy::Time, 1)]);
}

#[test]
fn among_parallel_tool_calls_the_title_naming_the_tool_wins_else_each_lists_it_with_the_count() {
    let calls = vec![tool("a", "mcp: get_time", 10, Some(50)), tool("b", "mcp: convert_time", 10, Some(50))];
    let mut turns = [turn(calls, Some(60))];
    let requests = [request(3, "tools/call", "convert_time", 20, &[]), request(5, "tools/call", "other", 30, &[])];
    attach(&mut turns, "s", &["s"], &requests, 60 * MS);
    assert_eq!(
        links(&turns),
        [("a".into(), 5, LinkedBy::Time, 2), ("b".into(), 3, LinkedBy::Time, 1), ("b".into(), 5, LinkedBy::Time, 2)]
    );
}

#[test]
fn a_meta_hint_wins_over_time_and_keeps_the_request_from_other_tool_calls() {
    let calls = vec![tool("a", "t", 10, Some(50)), tool("b", "t", 10, Some(50))];
    let mut turns = [turn(calls, Some(60))];
    // Sent after both ended, yet named by its hint.
    let requests = [request(3, "tools/call", "t", 55, &["s", "b"]), request(5, "tools/call", "t", 20, &["b"])];
    attach(&mut turns, "s", &["s"], &requests, 60 * MS);
    // In time order.
    assert_eq!(links(&turns), [("b".into(), 5, LinkedBy::Meta, 0), ("b".into(), 3, LinkedBy::Meta, 0)]);
}

#[test]
fn a_hint_naming_another_session_keeps_the_request_out() {
    let mut turns = [turn(vec![tool("a", "t", 10, Some(50))], Some(60))];
    let requests = [request(3, "tools/call", "t", 20, &["other"]), request(5, "tools/call", "t", 30, &["unknown"])];
    attach(&mut turns, "s", &["s", "other"], &requests, 60 * MS);
    // A hint that names nothing of the trace is no hint: time decides.
    assert_eq!(links(&turns), [("a".into(), 5, LinkedBy::Time, 1)]);
}

#[test]
fn hints_are_the_strings_of_meta_bounded_in_depth_and_number() {
    let meta = serde_json::json!({"acp": {"sessionId": "s", "toolCallId": "c", "deep": {"deeper": {"x": "too deep"}}}, "n": 1});
    let mut found = hints_of(&meta);
    found.sort();
    assert_eq!(found, ["c", "s"]);
    let many = serde_json::Value::Array((0..100).map(|i| serde_json::Value::String(i.to_string())).collect());
    assert_eq!(hints_of(&many).len(), HINTS_MAX);
    let long = serde_json::json!({"id": "x".repeat(HINT_MAX_BYTES + 1), "ok": "y".repeat(HINT_MAX_BYTES)});
    assert_eq!(hints_of(&long), ["y".repeat(HINT_MAX_BYTES)]);
}
