//! The MCP rules on MCP conversations written line by line (`>` the client,
//! `<` the server), each breaking one rule or keeping to it.

use super::*;

/// The findings of `lines`, checked as an MCP trace.
fn findings(lines: &[&str]) -> Vec<Finding> {
    let frames = crate::testing::framed(lines);
    let mut checker = Checker::new(CheckOptions::default());
    checker.set_protocol(Protocol::Mcp);
    for f in &frames {
        checker.feed(&FrameRef::from(f));
    }
    checker.report(1).findings
}

/// (code, frames) of each finding of `lines`.
fn codes(lines: &[&str]) -> Vec<(String, Vec<i64>)> {
    findings(lines).into_iter().map(|f| (f.code, f.seqs)).collect()
}

/// The one finding of `lines`.
fn only(lines: &[&str]) -> Finding {
    let mut all = findings(lines);
    assert_eq!(all.len(), 1, "{all:#?}");
    all.remove(0)
}

fn owned(list: &[(&str, &[i64])]) -> Vec<(String, Vec<i64>)> {
    list.iter().map(|(c, s)| (c.to_string(), s.to_vec())).collect()
}

const INIT: &str = r#">{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"c","version":"1"}}}"#;
const INIT_ANSWER: &str = r#"<{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":"2025-06-18","capabilities":{"tools":{"listChanged":true}},"serverInfo":{"name":"s","version":"1"}}}"#;
const INITIALIZED: &str = r#">{"jsonrpc":"2.0","method":"notifications/initialized"}"#;
const LIST: &str = r#">{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#;
const LISTED: &str = r#"<{"jsonrpc":"2.0","id":1,"result":{"tools":[{"name":"git_status","inputSchema":{"type":"object"}},{"name":"git_log","inputSchema":{"type":"object"}}]}}"#;
const CHANGED: &str = r#"<{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}"#;

/// `tools/call` of `name` with id `id` and its answer.
fn call(id: u32, name: &str) -> [String; 2] {
    [
        format!(
            r#">{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"{name}","arguments":{{}}}}}}"#
        ),
        format!(r#"<{{"jsonrpc":"2.0","id":{id},"result":{{"content":[{{"type":"text","text":"ok"}}]}}}}"#),
    ]
}

/// Initialization and the tool list (frames 1 to 5), then `rest`.
fn after_list(rest: &[String]) -> Vec<String> {
    let mut lines: Vec<String> = [INIT, INIT_ANSWER, INITIALIZED, LIST, LISTED].map(str::to_owned).to_vec();
    lines.extend_from_slice(rest);
    lines
}

fn strs(lines: &[String]) -> Vec<&str> {
    lines.iter().map(String::as_str).collect()
}

#[test]
fn an_answer_to_an_id_never_asked_names_the_server() {
    let lines = after_list(&[r#"<{"jsonrpc":"2.0","id":9,"result":{}}"#.to_owned()]);
    let f = only(&strs(&lines));
    assert_eq!((f.code.as_str(), f.seqs.as_slice()), ("rpc.unknown-response", &[6][..]));
    assert_eq!(f.message, "the server answered the id `9`, which the client never asked");
}

#[test]
fn a_tool_the_list_has_is_no_finding() {
    let lines = after_list(&[call(2, "git_status"), call(3, "git_log")].concat());
    assert_eq!(codes(&strs(&lines)), []);
}

#[test]
fn a_tool_the_whole_list_lacks_is_unlisted_once() {
    let lines = after_list(&[call(2, "git_nope"), call(3, "git_nope"), call(4, "git_log")].concat());
    let f = only(&strs(&lines));
    assert_eq!((f.code.as_str(), f.seqs.as_slice()), ("mcp.unlisted-tool", &[5, 6][..]));
    assert_eq!(f.severity, acp_tee_shared::check::Severity::Warning);
    assert_eq!(
        f.message,
        "the client called the tool `git_nope`, which the tools/list answer of frame 5 did not list (it listed 2 \
         tools: `git_status`, `git_log`)"
    );
}

#[test]
fn the_names_a_finding_quotes_are_bounded() {
    let names: Vec<String> = (1..=7).map(|i| format!(r#"{{"name":"t{i}"}}"#)).collect();
    let listed = format!(r#"<{{"jsonrpc":"2.0","id":1,"result":{{"tools":[{}]}}}}"#, names.join(","));
    let mut lines: Vec<String> = [INIT, INIT_ANSWER, INITIALIZED, LIST, &listed].map(str::to_owned).to_vec();
    lines.extend(call(2, "t8"));
    let f = only(&strs(&lines));
    assert!(f.message.ends_with("(it listed 7 tools: `t1`, `t2`, `t3`, `t4`, `t5` and 2 more)"), "{}", f.message);
    // An empty list lists nothing.
    let mut lines: Vec<String> = [INIT, INIT_ANSWER, INITIALIZED, LIST].map(str::to_owned).to_vec();
    lines.push(r#"<{"jsonrpc":"2.0","id":1,"result":{"tools":[]}}"#.to_owned());
    lines.extend(call(2, "t"));
    assert!(only(&strs(&lines)).message.ends_with("(it listed no tools)"));
}

#[test]
fn tools_are_not_judged_without_a_whole_list() {
    // No tools/list at all.
    let mut lines: Vec<String> = [INIT, INIT_ANSWER, INITIALIZED].map(str::to_owned).to_vec();
    lines.extend(call(2, "anything"));
    assert_eq!(codes(&strs(&lines)), []);
    // Asked, not yet answered when the tool is called.
    let mut lines: Vec<String> = [INIT, INIT_ANSWER, INITIALIZED, LIST].map(str::to_owned).to_vec();
    lines.extend(call(2, "anything"));
    lines.push(LISTED.to_owned());
    assert_eq!(codes(&strs(&lines)), []);
    // Answered with an error.
    let mut lines: Vec<String> = [INIT, INIT_ANSWER, INITIALIZED, LIST].map(str::to_owned).to_vec();
    lines.push(r#"<{"jsonrpc":"2.0","id":1,"error":{"code":-32601,"message":"no tools"}}"#.to_owned());
    lines.extend(call(2, "anything"));
    assert_eq!(codes(&strs(&lines)), []);
    // An answer without a list of tools.
    let mut lines: Vec<String> = [INIT, INIT_ANSWER, INITIALIZED, LIST].map(str::to_owned).to_vec();
    lines.push(r#"<{"jsonrpc":"2.0","id":1,"result":{"tools":"many"}}"#.to_owned());
    lines.extend(call(2, "anything"));
    assert_eq!(codes(&strs(&lines)), []);
}

#[test]
fn a_paginated_list_is_judged_once_its_last_page_came() {
    let page1 = r#"<{"jsonrpc":"2.0","id":1,"result":{"tools":[{"name":"a"}],"nextCursor":"p2"}}"#;
    let ask2 = r#">{"jsonrpc":"2.0","id":2,"method":"tools/list","params":{"cursor":"p2"}}"#;
    let page2 = r#"<{"jsonrpc":"2.0","id":2,"result":{"tools":[{"name":"b"}]}}"#;
    let mut lines: Vec<String> = [INIT, INIT_ANSWER, INITIALIZED, LIST, page1].map(str::to_owned).to_vec();
    // The last page seen has a nextCursor: the list is not whole.
    lines.extend(call(3, "b"));
    assert_eq!(codes(&strs(&lines)), []);
    lines.extend([ask2.to_owned(), page2.to_owned()]);
    lines.extend([call(4, "a"), call(5, "b"), call(6, "c")].concat());
    let f = only(&strs(&lines));
    assert_eq!((f.code.as_str(), f.seqs.as_slice()), ("mcp.unlisted-tool", &[5, 9, 14][..]));
    assert_eq!(
        f.message,
        "the client called the tool `c`, which the 2 pages of the tools/list answer (frames 5 to 9) did not list \
         (it listed 2 tools: `a`, `b`)"
    );
    // A later page alone (the first page not seen) is not a whole list.
    let mut lines: Vec<String> = [INIT, INIT_ANSWER, INITIALIZED, ask2, page2].map(str::to_owned).to_vec();
    lines.extend(call(3, "c"));
    assert_eq!(codes(&strs(&lines)), []);
}

#[test]
fn a_list_changed_leaves_tools_unjudged_until_listed_again() {
    let mut rest = vec![CHANGED.to_owned()];
    rest.extend(call(2, "git_new"));
    let lines = after_list(&rest);
    assert_eq!(codes(&strs(&lines)), []);
    // Listed again after the change: judged by the new list.
    let mut lines = lines;
    lines.push(r#">{"jsonrpc":"2.0","id":3,"method":"tools/list"}"#.to_owned());
    lines.push(r#"<{"jsonrpc":"2.0","id":3,"result":{"tools":[{"name":"git_new"}]}}"#.to_owned());
    lines.extend([call(4, "git_new"), call(5, "git_status")].concat());
    let f = only(&strs(&lines));
    assert_eq!((f.code.as_str(), f.seqs.as_slice()), ("mcp.unlisted-tool", &[10, 13][..]));
    assert!(f.message.ends_with("(it listed only `git_new`)"), "{}", f.message);
}

#[test]
fn requests_while_initializing_are_told_once_per_peer() {
    let lines = [
        r#">{"jsonrpc":"2.0","id":"p","method":"ping"}"#,
        INIT,
        r#">{"jsonrpc":"2.0","id":1,"method":"ping"}"#,
        r#">{"jsonrpc":"2.0","id":2,"method":"tools/list"}"#,
        r#">{"jsonrpc":"2.0","id":3,"method":"resources/list"}"#,
        r#"<{"jsonrpc":"2.0","id":"s1","method":"roots/list"}"#,
        r#"<{"jsonrpc":"2.0","id":"s2","method":"ping"}"#,
        r#"<{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"starting"}}"#,
        r#"<{"jsonrpc":"2.0","id":"p","result":{}}"#,
        r#"<{"jsonrpc":"2.0","id":1,"result":{}}"#,
        INIT_ANSWER,
        r#"<{"jsonrpc":"2.0","id":2,"result":{"tools":[]}}"#,
        r#"<{"jsonrpc":"2.0","id":3,"result":{"resources":[]}}"#,
        r#">{"jsonrpc":"2.0","id":"s1","result":{"roots":[]}}"#,
        r#">{"jsonrpc":"2.0","id":"s2","result":{}}"#,
    ];
    let all = findings(&lines);
    let found: Vec<(&str, &[i64])> = all.iter().map(|f| (f.code.as_str(), f.seqs.as_slice())).collect();
    assert_eq!(found, [("lifecycle.during-initialization", &[2, 4][..]), ("lifecycle.during-initialization", &[2, 6])]);
    assert_eq!(
        all[0].message,
        "the client sent `tools/list` before the server answered its initialize (frame 2); the MCP lifecycle allows \
         only pings until then"
    );
    assert_eq!(
        all[1].message,
        "the server sent `roots/list` after the initialize of frame 2 but before the client's \
         notifications/initialized; the MCP lifecycle allows only pings and log messages until then"
    );
    assert_eq!(all[0].severity, acp_tee_shared::check::Severity::Warning);
}

#[test]
fn requests_after_initialization_are_no_finding() {
    let lines = [
        INIT,
        INIT_ANSWER,
        // Answered: the client may ask before it sends initialized.
        r#">{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#,
        INITIALIZED,
        r#"<{"jsonrpc":"2.0","id":"s1","method":"roots/list"}"#,
        r#"<{"jsonrpc":"2.0","id":1,"result":{"tools":[]}}"#,
        r#">{"jsonrpc":"2.0","id":"s1","result":{"roots":[]}}"#,
    ];
    assert_eq!(codes(&lines), []);
    // Before initialize itself: lifecycle.before-initialize, once, as before.
    let lines = [
        r#">{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#,
        r#"<{"jsonrpc":"2.0","id":1,"result":{"tools":[]}}"#,
        INIT,
        INIT_ANSWER,
        INITIALIZED,
    ];
    assert_eq!(codes(&lines), owned(&[("lifecycle.before-initialize", &[1])]));
}

#[test]
fn an_error_without_an_integer_code_or_a_string_message_is_told() {
    let ask = r#">{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"git_log"}}"#;
    let cases = [
        (r#"{"code":"bad","message":"m"}"#, "has the code `\"bad\"`, not an integer"),
        (r#"{"code":-32603.5,"message":"m"}"#, "has the code `-32603.5`, not an integer"),
        (r#"{"message":"m"}"#, "has no `code`"),
        (r#"{"code":null,"message":"m"}"#, "has the code `null`, not an integer"),
        (r#"{"code":-32603,"message":5}"#, "has the message `5`, not a string"),
        (r#"{"code":-32603}"#, "has no `message`"),
        (r#"{}"#, "has no `code` and has no `message`"),
        (r#""oops""#, "is `\"oops\"`, not an object"),
    ];
    for (error, said) in cases {
        let answer = format!(r#"<{{"jsonrpc":"2.0","id":2,"error":{error}}}"#);
        let lines = after_list(&[ask.to_owned(), answer]);
        let f = only(&strs(&lines));
        assert_eq!((f.code.as_str(), f.seqs.as_slice()), ("rpc.error-shape", &[6, 7][..]), "{error}");
        assert_eq!(
            f.message,
            format!(
                "the server sent an error answering frame 6 that {said}, where JSON-RPC asks for an integer `code` \
                 and a string `message`"
            )
        );
    }
    // An error answering nothing is told too, beside the unknown answer.
    let lines = after_list(&[r#"<{"jsonrpc":"2.0","id":8,"error":{"code":"x","message":"m"}}"#.to_owned()]);
    assert_eq!(codes(&strs(&lines)), owned(&[("rpc.error-shape", &[6]), ("rpc.unknown-response", &[6])]));
    // A whole error, with data, is fine.
    let answer = r#"<{"jsonrpc":"2.0","id":2,"error":{"code":-32602,"message":"Unknown tool","data":{"x":1}}}"#;
    assert_eq!(codes(&strs(&after_list(&[ask.to_owned(), answer.to_owned()]))), []);
}

#[test]
fn the_mcp_rules_do_not_judge_acp() {
    // ACP's errors are schema.error's; ACP has no tools/list.
    let lines = [
        r#">{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":1}}"#,
        r#">{"jsonrpc":"2.0","id":1,"method":"_x/y"}"#,
        r#"<{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":1}}"#,
        r#"<{"jsonrpc":"2.0","id":1,"error":{"message":"m"}}"#,
    ];
    let frames = crate::testing::framed(&lines);
    let mut checker = Checker::new(CheckOptions::default());
    for f in &frames {
        checker.feed(&FrameRef::from(f));
    }
    let report = checker.report(1);
    let found: Vec<&str> = report.findings.iter().map(|f| f.code.as_str()).collect();
    assert_eq!(found, ["schema.error"]);
}
