//! One hand-made broken trace per rule: raw lines in a sacp-tee log, checked
//! as a file; each gives exactly its finding, on the frames it names (the
//! MCP rules' traces are MCP, known from their `initialize`).
//! (`check.limit` needs more than `MAX_IN_FLIGHT` requests: it is tested in
//! `analysis/src/check/tests.rs`.)

use super::{check_json, write_log};

/// `initialize` and `session/new` (session `s`): frames 1 to 4.
fn prelude() -> Vec<(bool, String)> {
    vec![
        c(
            r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":1,"clientCapabilities":{"fs":{"readTextFile":true,"writeTextFile":false},"terminal":false}}}"#,
        ),
        a(r#"{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":1,"agentCapabilities":{"loadSession":true}}}"#),
        c(r#"{"jsonrpc":"2.0","id":1,"method":"session/new","params":{"cwd":"/tmp","mcpServers":[]}}"#),
        a(r#"{"jsonrpc":"2.0","id":1,"result":{"sessionId":"s"}}"#),
    ]
}

/// MCP's initialization and a tool list of `git_status`: frames 1 to 5.
fn mcp_prelude() -> Vec<(bool, String)> {
    vec![
        c(
            r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"c","version":"1"}}}"#,
        ),
        a(MCP_INITIALIZE_ANSWER),
        c(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#),
        c(r#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#),
        a(r#"{"jsonrpc":"2.0","id":1,"result":{"tools":[{"name":"git_status","inputSchema":{"type":"object"}}]}}"#),
    ]
}

const MCP_INITIALIZE_ANSWER: &str = r#"{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":"2025-06-18","capabilities":{"tools":{}},"serverInfo":{"name":"s","version":"1"}}}"#;

/// The MCP prelude, then `lines`.
fn after_mcp_prelude(lines: &[(bool, String)]) -> Vec<(bool, String)> {
    let mut all = mcp_prelude();
    all.extend_from_slice(lines);
    all
}

/// A line the client sent.
fn c(line: &str) -> (bool, String) {
    (true, line.to_owned())
}

/// A line the agent sent.
fn a(line: &str) -> (bool, String) {
    (false, line.to_owned())
}

/// The prelude, then `lines`.
fn after_prelude(lines: &[(bool, String)]) -> Vec<(bool, String)> {
    let mut all = prelude();
    all.extend_from_slice(lines);
    all
}

const PROMPT_2: &str = r#"{"jsonrpc":"2.0","id":2,"method":"session/prompt","params":{"sessionId":"s","prompt":[{"type":"text","text":"hi"}]}}"#;
const PING_2: &str = r#"{"jsonrpc":"2.0","id":2,"method":"_x/ping"}"#;
const EMPTY_RESULT_2: &str = r#"{"jsonrpc":"2.0","id":2,"result":{}}"#;
const END_TURN_2: &str = r#"{"jsonrpc":"2.0","id":2,"result":{"stopReason":"end_turn"}}"#;

/// A rule's broken trace: the code it must give, its lines, the frames the finding must name.
type Case = (&'static str, Vec<(bool, String)>, &'static [i64]);

/// Each rule's trace.
fn cases() -> Vec<Case> {
    let long = format!(r#"{{"jsonrpc":"2.0","method":"_x/note","params":{{"pad":"{}"}}}}"#, "x".repeat(400));
    vec![
        ("transport.not-json", after_prelude(&[a("Loading ~/.bashrc ...")]), &[5]),
        ("rpc.not-a-message", after_prelude(&[a(r#"{"jsonrpc":"2.0","hello":1}"#)]), &[5]),
        ("rpc.jsonrpc-version", after_prelude(&[c(r#"{"method":"session/cancel","params":{"sessionId":"s"}}"#)]), &[5]),
        (
            "rpc.id-type",
            after_prelude(&[
                c(r#"{"jsonrpc":"2.0","id":1.5,"method":"_x/ping"}"#),
                a(r#"{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Invalid Request"}}"#),
            ]),
            &[5],
        ),
        (
            "rpc.result-and-error",
            after_prelude(&[c(PING_2), a(r#"{"jsonrpc":"2.0","id":2,"result":{},"error":{"code":1,"message":"m"}}"#)]),
            &[6],
        ),
        ("rpc.unknown-response", after_prelude(&[a(r#"{"jsonrpc":"2.0","id":77,"result":{}}"#)]), &[5]),
        ("rpc.answered-twice", after_prelude(&[c(PING_2), a(EMPTY_RESULT_2), a(EMPTY_RESULT_2)]), &[5, 6, 7]),
        (
            "rpc.duplicate-id",
            after_prelude(&[c(PING_2), c(r#"{"jsonrpc":"2.0","id":2,"method":"_x/pong"}"#), a(EMPTY_RESULT_2)]),
            &[5, 6],
        ),
        ("rpc.unanswered", after_prelude(&[c(PING_2)]), &[5]),
        (
            "rpc.cancel-request-answer",
            after_prelude(&[
                c(PING_2),
                c(r#"{"jsonrpc":"2.0","method":"$/cancel_request","params":{"requestId":2}}"#),
                a(r#"{"jsonrpc":"2.0","id":2,"error":{"code":-32603,"message":"internal"}}"#),
            ]),
            &[5, 6, 7],
        ),
        ("transport.line-too-large", after_prelude(&[c(&long)]), &[5]),
        (
            "lifecycle.before-initialize",
            vec![
                c(r#"{"jsonrpc":"2.0","id":0,"method":"session/new","params":{"cwd":"/","mcpServers":[]}}"#),
                a(r#"{"jsonrpc":"2.0","id":0,"result":{"sessionId":"s"}}"#),
            ],
            &[1],
        ),
        (
            "lifecycle.second-initialize",
            after_prelude(&[
                c(r#"{"jsonrpc":"2.0","id":2,"method":"initialize","params":{"protocolVersion":1}}"#),
                a(r#"{"jsonrpc":"2.0","id":2,"result":{"protocolVersion":1}}"#),
            ]),
            &[1, 5],
        ),
        (
            "session.unknown",
            after_prelude(&[c(r#"{"jsonrpc":"2.0","method":"session/cancel","params":{"sessionId":"nope"}}"#)]),
            &[5],
        ),
        (
            "session.prompt-in-flight",
            after_prelude(&[
                c(PROMPT_2),
                c(&PROMPT_2.replace(r#""id":2"#, r#""id":3"#)),
                a(END_TURN_2),
                a(&END_TURN_2.replace(r#""id":2"#, r#""id":3"#)),
            ]),
            &[5, 6],
        ),
        (
            "session.cancel-not-honoured",
            after_prelude(&[
                c(PROMPT_2),
                c(r#"{"jsonrpc":"2.0","method":"session/cancel","params":{"sessionId":"s"}}"#),
                a(END_TURN_2),
            ]),
            &[5, 6, 7],
        ),
        (
            "session.load-without-replay",
            after_prelude(&[
                c(
                    r#"{"jsonrpc":"2.0","id":2,"method":"session/load","params":{"sessionId":"old","cwd":"/tmp","mcpServers":[]}}"#,
                ),
                a(EMPTY_RESULT_2),
            ]),
            &[5, 6],
        ),
        (
            "session.unknown-tool-call",
            after_prelude(&[
                a(
                    r#"{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":{"sessionUpdate":"tool_call_update","toolCallId":"t","status":"completed"}}}"#,
                ),
                a(
                    r#"{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":{"sessionUpdate":"tool_call","toolCallId":"t","title":"Read"}}}"#,
                ),
                a(
                    r#"{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":{"sessionUpdate":"tool_call_update","toolCallId":"t","status":"completed"}}}"#,
                ),
            ]),
            &[5],
        ),
        (
            "capability.not-advertised",
            after_prelude(&[
                a(
                    r#"{"jsonrpc":"2.0","id":"w","method":"fs/write_text_file","params":{"sessionId":"s","path":"/tmp/a","content":"x"}}"#,
                ),
                c(r#"{"jsonrpc":"2.0","id":"w","result":{}}"#),
            ]),
            &[1, 5],
        ),
        (
            "permission.unknown-option",
            after_prelude(&[
                a(
                    r#"{"jsonrpc":"2.0","id":"p","method":"session/request_permission","params":{"sessionId":"s","toolCall":{"toolCallId":"t"},"options":[{"optionId":"allow","name":"Allow","kind":"allow_once"}]}}"#,
                ),
                c(r#"{"jsonrpc":"2.0","id":"p","result":{"outcome":{"outcome":"selected","optionId":"always"}}}"#),
            ]),
            &[5, 6],
        ),
        (
            "schema.params",
            after_prelude(&[c(r#"{"jsonrpc":"2.0","method":"session/cancel","params":{"sessionId":5}}"#)]),
            &[5],
        ),
        (
            "schema.result",
            after_prelude(&[c(PROMPT_2), a(r#"{"jsonrpc":"2.0","id":2,"result":{"stopReason":"tired"}}"#)]),
            &[5, 6],
        ),
        (
            "schema.error",
            after_prelude(&[c(PING_2), a(r#"{"jsonrpc":"2.0","id":2,"error":{"code":"bad","message":"m"}}"#)]),
            &[5, 6],
        ),
        (
            "schema.unknown-method",
            after_prelude(&[c(r#"{"jsonrpc":"2.0","method":"session/frobnicate","params":{"sessionId":"s"}}"#)]),
            &[5],
        ),
        (
            "rpc.error-shape",
            after_mcp_prelude(&[
                c(r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"git_status"}}"#),
                a(r#"{"jsonrpc":"2.0","id":2,"error":{"code":"bad","message":"m"}}"#),
            ]),
            &[6, 7],
        ),
        (
            "lifecycle.during-initialization",
            vec![
                mcp_prelude()[0].clone(),
                c(r#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#),
                a(MCP_INITIALIZE_ANSWER),
                a(r#"{"jsonrpc":"2.0","id":1,"result":{"tools":[]}}"#),
            ],
            &[1, 2],
        ),
        (
            "mcp.unlisted-tool",
            after_mcp_prelude(&[
                c(r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"git_nope"}}"#),
                a(r#"{"jsonrpc":"2.0","id":2,"error":{"code":-32602,"message":"Unknown tool: git_nope"}}"#),
            ]),
            &[5, 6],
        ),
        (
            "schema.version-unchecked",
            vec![
                c(r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":2}}"#),
                a(r#"{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":2}}"#),
            ],
            &[2],
        ),
    ]
}

#[test]
fn the_prelude_alone_is_clean() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("clean.log");
    write_log(&file, &prelude());
    let (code, traces) = check_json(&[file.to_str().unwrap()]);
    assert_eq!(traces[0].findings, Vec::new());
    assert_eq!((code, traces[0].frames), (0, 4));
}

#[test]
fn the_mcp_prelude_alone_is_clean() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("clean.log");
    write_log(&file, &mcp_prelude());
    let (code, traces) = check_json(&[file.to_str().unwrap()]);
    assert_eq!(traces[0].protocol, acp_tee_shared::Protocol::Mcp);
    assert_eq!(traces[0].findings, Vec::new());
    assert_eq!((code, traces[0].frames), (0, 5));
}

#[test]
fn each_broken_trace_gives_exactly_its_finding() {
    let dir = tempfile::tempdir().unwrap();
    let mut codes_tested = Vec::new();
    for (code, lines, seqs) in cases() {
        let file = dir.path().join(format!("{code}.log"));
        write_log(&file, &lines);
        let (exit, traces) = check_json(&["--max-line-bytes", "300", file.to_str().unwrap()]);
        let found: Vec<(&str, &[i64])> =
            traces[0].findings.iter().map(|f| (f.code.as_str(), f.seqs.as_slice())).collect();
        assert_eq!(found, [(code, seqs)], "{code}: {:#?}", traces[0].findings);
        let error = traces[0].findings[0].severity == acp_tee_shared::check::Severity::Error;
        assert_eq!(exit, i32::from(error), "{code}: the exit status says whether an error was found");
        assert!(!traces[0].findings[0].message.is_empty());
        codes_tested.push(code);
    }
    // Every code the guide's checks page lists is tested here but check.limit.
    let page = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../docs/checks.md")).unwrap();
    assert!(page.contains("| `rpc.unanswered`"), "docs/checks.md lists the codes in a table");
    for line in page.lines() {
        if let Some(code) = line.strip_prefix("| `").and_then(|l| l.split('`').next()) {
            assert!(code == "check.limit" || codes_tested.contains(&code), "{code} has no broken trace here");
        }
    }
}

/// The findings of `lines` (after the prelude) as (code, frames).
fn findings_of(name: &str, lines: &[(bool, String)]) -> Vec<(String, Vec<i64>)> {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join(format!("{name}.log"));
    write_log(&file, &after_prelude(lines));
    let (_, traces) = check_json(&[file.to_str().unwrap()]);
    traces[0].findings.iter().map(|f| (f.code.clone(), f.seqs.clone())).collect()
}

fn found(list: &[(&str, &[i64])]) -> Vec<(String, Vec<i64>)> {
    list.iter().map(|(c, s)| (c.to_string(), s.to_vec())).collect()
}

/// A prompt whose id is no JSON-RPC id (`3.5`) is still a request its
/// answer answers (ids compare by value): only the id's type is wrong, no
/// unknown answer and no prompt left in flight.
#[test]
fn a_request_with_an_id_of_the_wrong_type_is_still_answered() {
    let lines = [
        c(&PROMPT_2.replace(r#""id":2"#, r#""id":3.5"#)),
        a(&END_TURN_2.replace(r#""id":2"#, r#""id":3.50"#)),
        c(&PROMPT_2.replace(r#""id":2"#, r#""id":4"#)),
        a(&END_TURN_2.replace(r#""id":2"#, r#""id":4"#)),
    ];
    assert_eq!(findings_of("id-3.5", &lines), found(&[("rpc.id-type", &[5]), ("rpc.id-type", &[6])]));
}

/// A second answer to a request answered long ago (more answers since than
/// the checker keeps frames of) is still a second answer, not an answer to
/// an id never asked.
#[test]
fn a_second_answer_after_ten_thousand_others_is_answered_twice() {
    let mut lines = Vec::new();
    for id in 2..=10_200 {
        lines.push(c(&PING_2.replace(r#""id":2"#, &format!(r#""id":{id}"#))));
        lines.push(a(&EMPTY_RESULT_2.replace(r#""id":2"#, &format!(r#""id":{id}"#))));
    }
    lines.push(a(&EMPTY_RESULT_2.replace(r#""id":2"#, r#""id":100"#)));
    let last = 4 + lines.len() as i64;
    assert_eq!(findings_of("answered-twice-late", &lines), found(&[("rpc.answered-twice", &[last])]));
}

/// Option ids compare whole: a 90-character id that was not offered is an
/// unknown option even though its first 80 characters are one offered.
#[test]
fn option_ids_compare_whole() {
    let x = "x".repeat(90);
    let ask = format!(
        r#"{{"jsonrpc":"2.0","id":"p","method":"session/request_permission","params":{{"sessionId":"s","toolCall":{{"toolCallId":"t"}},"options":[{{"optionId":"{x}-allow","name":"Allow","kind":"allow_once"}}]}}}}"#
    );
    let pick = |o: &str| {
        format!(r#"{{"jsonrpc":"2.0","id":"p","result":{{"outcome":{{"outcome":"selected","optionId":"{x}-{o}"}}}}}}"#)
    };
    assert_eq!(findings_of("offered", &[a(&ask), c(&pick("allow"))]), found(&[]));
    assert_eq!(
        findings_of("not-offered", &[a(&ask), c(&pick("always"))]),
        found(&[("permission.unknown-option", &[5, 6])])
    );
}
