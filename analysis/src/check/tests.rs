//! The checker on conversations written line by line.

use super::*;

/// Checks `lines`: `>` marks what the client sent, `<` what the agent sent.
fn check(lines: &[&str]) -> TraceFindings {
    let frames = crate::testing::framed(lines);
    let mut checker = Checker::new(CheckOptions::default());
    for f in &frames {
        checker.feed(&FrameRef::from(f));
    }
    checker.report(1)
}

const CLEAN: [&str; 8] = [
    r#">{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":1,"clientCapabilities":{"fs":{"readTextFile":true}}}}"#,
    r#"<{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":1,"agentCapabilities":{"loadSession":true}}}"#,
    r#">{"jsonrpc":"2.0","id":1,"method":"session/new","params":{"cwd":"/tmp","mcpServers":[]}}"#,
    r#"<{"jsonrpc":"2.0","id":1,"result":{"sessionId":"s1"}}"#,
    r#">{"jsonrpc":"2.0","id":2,"method":"session/prompt","params":{"sessionId":"s1","prompt":[{"type":"text","text":"hi"}]}}"#,
    r#"<{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s1","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"hello"}}}}"#,
    r#"<{"jsonrpc":"2.0","id":"r1","method":"fs/read_text_file","params":{"sessionId":"s1","path":"/tmp/a"}}"#,
    r#">{"jsonrpc":"2.0","id":"r1","result":{"content":"x"}}"#,
];

#[test]
fn a_clean_conversation_has_no_findings() {
    let mut lines = CLEAN.to_vec();
    lines.push(r#"<{"jsonrpc":"2.0","id":2,"result":{"stopReason":"end_turn"}}"#);
    let report = check(&lines);
    assert_eq!(report.findings, Vec::new());
    assert_eq!(report.frames, 9);
    assert_eq!(report.protocol_version, Some(1));
}

#[test]
fn an_open_prompt_is_unanswered_at_the_end() {
    let report = check(&CLEAN);
    let codes: Vec<(&str, Vec<i64>)> = report.findings.iter().map(|f| (f.code.as_str(), f.seqs.clone())).collect();
    assert_eq!(codes, [("rpc.unanswered", vec![5])]);
    assert_eq!(report.counts.warnings, 1);
}

#[test]
fn a_live_traces_open_request_is_not_yet_answered_not_never() {
    let mut checker = Checker::new(CheckOptions::default());
    for f in &crate::testing::framed(&CLEAN) {
        checker.feed(&FrameRef::from(f));
    }
    let ended = checker.report_of(1, false);
    let live = checker.report_of(1, true);
    assert!(!ended.live && live.live);
    assert!(ended.findings[0].message.ends_with("which the agent never answered by the end of the trace"));
    assert_eq!(
        live.findings[0].message,
        "the client sent `session/prompt` (id 2), which the agent has not answered yet (the trace is still being recorded)"
    );
    assert_eq!((live.findings[0].code.as_str(), live.counts), ("rpc.unanswered", ended.counts));
}

#[test]
fn requests_in_flight_are_bounded() {
    let mut checker = Checker::new(CheckOptions::default());
    let lines: Vec<String> =
        (0..MAX_IN_FLIGHT as i64 + 10).map(|i| format!(r#"{{"jsonrpc":"2.0","id":{i},"method":"_x/y"}}"#)).collect();
    for (i, raw) in lines.iter().enumerate() {
        checker.feed(&test_frame(i as i64 + 1, Direction::ClientToAgent, FrameKind::Request, raw.as_bytes()));
    }
    assert_eq!(checker.in_flight.len(), MAX_IN_FLIGHT);
    let report = checker.report(1);
    assert_eq!(report.counts.infos, 1, "one check.limit");
    assert!(report.findings.len() <= MAX_FINDINGS);
    assert_eq!(report.left_out + report.findings.len() as u64, report.counts.total());
}

#[test]
fn an_agent_may_name_the_session_it_makes_before_answering() {
    let report = check(&[
        CLEAN[0],
        CLEAN[1],
        CLEAN[2],
        r#"<{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s1","update":{"sessionUpdate":"available_commands_update","availableCommands":[]}}}"#,
        CLEAN[3],
        r#"<{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s2","update":{"sessionUpdate":"available_commands_update","availableCommands":[]}}}"#,
    ]);
    let codes: Vec<(&str, Vec<i64>)> = report.findings.iter().map(|f| (f.code.as_str(), f.seqs.clone())).collect();
    assert_eq!(codes, [("session.unknown", vec![6])], "once session/new is answered, other ids are unknown");
}

#[test]
fn a_prompt_turns_updates_are_no_replay_of_a_load() {
    let mut lines = CLEAN[..4].to_vec();
    lines.extend([
        r#">{"jsonrpc":"2.0","id":2,"method":"session/prompt","params":{"sessionId":"s1","prompt":[]}}"#,
        r#">{"jsonrpc":"2.0","id":3,"method":"session/load","params":{"sessionId":"s1","cwd":"/tmp","mcpServers":[]}}"#,
        r#"<{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s1","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"of the turn"}}}}"#,
        r#"<{"jsonrpc":"2.0","id":3,"result":{}}"#,
        r#"<{"jsonrpc":"2.0","id":2,"result":{"stopReason":"end_turn"}}"#,
    ]);
    let report = check(&lines);
    let codes: Vec<(&str, Vec<i64>)> = report.findings.iter().map(|f| (f.code.as_str(), f.seqs.clone())).collect();
    assert_eq!(codes, [("session.load-without-replay", vec![6, 8])]);
}

#[test]
fn an_mcp_trace_is_judged_by_the_json_rpc_rules_alone() {
    let lines = [
        r#">{"jsonrpc":"2.0","id":0,"method":"ping"}"#,
        r#"<{"jsonrpc":"2.0","id":0,"result":{}}"#,
        r#">{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"c","version":"1"}}}"#,
        r#"<{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":"2025-06-18","capabilities":{"tools":{}},"serverInfo":{"name":"s","version":"1"}}}"#,
        r#">{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
        r#">{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"t","arguments":{}}}"#,
        r#"<{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":1,"progress":1,"total":2}}"#,
        r#"<{"jsonrpc":"2.0","id":2,"result":{"content":[{"type":"text","text":"ok"}],"isError":false}}"#,
        r#"<{"jsonrpc":"2.0","id":"s1","method":"roots/list"}"#,
        r#">{"jsonrpc":"2.0","id":"s1","result":{"roots":[]}}"#,
    ];
    // Known from the initialize (the ping before it is then judged as ACP's
    // would be), or given as the trace's stored protocol.
    let report = check(&lines[2..]);
    assert_eq!(report.protocol, Protocol::Mcp);
    assert_eq!(report.findings, Vec::new());
    assert_eq!(report.protocol_version, None);
    let report = judged_as(Protocol::Mcp, &lines);
    assert_eq!(report.protocol, Protocol::Mcp);
    assert_eq!(report.findings, Vec::new());
    // JSON-RPC's rules still hold: an answer to nothing, a request never answered.
    let mut more = lines.to_vec();
    more.push(r#"<{"jsonrpc":"2.0","id":9,"result":{}}"#);
    more.push(r#">{"jsonrpc":"2.0","id":3,"method":"resources/read","params":{"uri":"file:///x"}}"#);
    let codes: Vec<String> = judged_as(Protocol::Mcp, &more).findings.iter().map(|f| f.code.clone()).collect();
    assert_eq!(codes, ["rpc.unknown-response", "rpc.unanswered"]);
    // The same messages judged as ACP break its rules.
    let report = judged_as(Protocol::Acp, &lines);
    assert_eq!(report.protocol, Protocol::Acp);
    assert!(report.counts.errors > 0, "{report:?}");
}

/// Checks `lines` as a trace of `protocol`.
fn judged_as(protocol: Protocol, lines: &[&str]) -> TraceFindings {
    let frames = crate::testing::framed(lines);
    let mut checker = Checker::new(CheckOptions::default());
    checker.set_protocol(protocol);
    for f in &frames {
        checker.feed(&FrameRef::from(f));
    }
    checker.report(1)
}
