//! The Session tab: turns read as a conversation, links to the frames, the open-requests banner, paging,
//! the session picker, a trace without sessions, and a live session.

use super::fixtures::*;
use crate::common::webdriver::Browser;
use crate::common::*;
use serde_json::{json, Value};
use std::io::Write;

/// A `session/update` of session `sid` from the agent at `t` ms.
fn update(t: f64, sid: &str, update: Value) -> Msg {
    a2c(t, json!({"jsonrpc": "2.0", "method": "session/update", "params": {"sessionId": sid, "update": update}}))
}

/// initialize, session/new (`s1`), a turn whose tool call asks permission (answered after 50 ms) and
/// writes a file, a plan, usage; then a second turn whose permission request nobody answers, and a
/// cancel 3 s later, the trace's last frame.
fn conversation() -> Vec<Msg> {
    vec![
        c2a(
            0.0,
            json!({"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":1,"clientInfo":{"name":"ed","version":"1"}}}),
        ),
        a2c(
            1.0,
            json!({"jsonrpc":"2.0","id":0,"result":{"protocolVersion":1,"agentInfo":{"name":"ag","version":"2"}}}),
        ),
        c2a(2.0, json!({"jsonrpc":"2.0","id":1,"method":"session/new","params":{"cwd":"/w","mcpServers":[]}})),
        a2c(3.0, json!({"jsonrpc":"2.0","id":1,"result":{"sessionId":"s1"}})),
        c2a(
            10.0,
            json!({"jsonrpc":"2.0","id":2,"method":"session/prompt","params":{"sessionId":"s1","prompt":[{"type":"text","text":"fix "},{"type":"text","text":"the parser"}]}}),
        ),
        update(
            15.0,
            "s1",
            json!({"sessionUpdate":"agent_thought_chunk","content":{"type":"text","text":"look at the tests first"}}),
        ),
        update(25.0, "s1", json!({"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"Sure, "}})),
        update(
            26.0,
            "s1",
            json!({"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"it is fixed."}}),
        ),
        update(
            27.0,
            "s1",
            json!({"sessionUpdate":"tool_call","toolCallId":"t1","title":"Edit parser.rs","kind":"edit","status":"pending","locations":[{"path":"/w/parser.rs"}]}),
        ),
        a2c(
            28.0,
            json!({"jsonrpc":"2.0","id":"p1","method":"session/request_permission","params":{"sessionId":"s1","toolCall":{"toolCallId":"t1"},"options":[{"optionId":"allow","name":"Allow","kind":"allow_once"},{"optionId":"no","name":"No","kind":"reject_once"}]}}),
        ),
        c2a(78.0, json!({"jsonrpc":"2.0","id":"p1","result":{"outcome":{"outcome":"selected","optionId":"allow"}}})),
        update(79.0, "s1", json!({"sessionUpdate":"tool_call_update","toolCallId":"t1","status":"in_progress"})),
        a2c(
            80.0,
            json!({"jsonrpc":"2.0","id":"f1","method":"fs/write_text_file","params":{"sessionId":"s1","path":"/w/parser.rs","content":"x"}}),
        ),
        c2a(82.0, json!({"jsonrpc":"2.0","id":"f1","result":null})),
        update(83.0, "s1", json!({"sessionUpdate":"tool_call_update","toolCallId":"t1","status":"completed"})),
        update(
            84.0,
            "s1",
            json!({"sessionUpdate":"plan","entries":[{"content":"fix the parser","priority":"high","status":"completed"}]}),
        ),
        a2c(
            90.0,
            json!({"jsonrpc":"2.0","id":2,"result":{"stopReason":"end_turn","usage":{"totalTokens":30,"inputTokens":20,"outputTokens":10}}}),
        ),
        c2a(
            1000.0,
            json!({"jsonrpc":"2.0","id":3,"method":"session/prompt","params":{"sessionId":"s1","prompt":[{"type":"text","text":"run the tests"}]}}),
        ),
        update(
            1001.0,
            "s1",
            json!({"sessionUpdate":"tool_call","toolCallId":"t2","title":"Run cargo test","kind":"execute","status":"pending"}),
        ),
        a2c(
            1002.0,
            json!({"jsonrpc":"2.0","id":"p2","method":"session/request_permission","params":{"sessionId":"s1","toolCall":{"toolCallId":"t2"},"options":[{"optionId":"allow","kind":"allow_once"}]}}),
        ),
        c2a(4002.0, json!({"jsonrpc":"2.0","method":"session/cancel","params":{"sessionId":"s1"}})),
    ]
}

/// The seq (1-based) of the `i`th frame of a made-up trace.
fn seq_of(i: usize) -> i64 {
    i as i64 + 1
}

fn text_of(b: &Browser, css: &str) -> String {
    b.texts(css).join("\n")
}

#[test]
fn the_session_tab_reads_a_turn_as_a_conversation_and_links_each_part_to_its_frames() {
    let store = TempStore::new();
    import_trace(&store, "conversation", &conversation());
    let server = Server::start(&store.db);
    let b = Browser::start();

    b.goto(&format!("{}/traces/1", server.url));
    b.wait_for("the diagram", |b| !b.find_all(".frame").is_empty());
    b.click("#tab-session");
    b.wait_for("the first turn", |b| !b.find_all("#turn-0").is_empty());
    assert!(b.current_url().contains("tab=session"), "{}", b.current_url());
    let turn = text_of(&b, "#turn-0");
    for part in ["fix the parser", "look at the tests first", "Sure, it is fixed.", "Edit parser.rs"] {
        assert!(turn.contains(part), "turn 1 lacks {part:?}: {turn}");
    }
    assert_eq!(text_of(&b, "#turn-0 .msg.agent .msg-text"), "Sure, it is fixed.");
    assert_eq!(text_of(&b, "#turn-0 .msg.prompt .msg-text"), "fix the parser");
    // The tool call: its statuses in order, the permission's options, answer and wait, the file write.
    let statuses = b.js(
        "return Array.from(document.querySelectorAll('#turn-0 .tool[data-tool-call-id=t1] .timeline li'), li => li.dataset.status);",
        json!([]),
    );
    assert_eq!(statuses, json!(["pending", "in_progress", "completed"]));
    let permission = text_of(&b, "#turn-0 .tool[data-tool-call-id=t1] .permission");
    // The names the user saw, with the ids and kinds the agent sent.
    assert!(permission.contains("Allow (allow: allow_once), No (no: reject_once)"), "{permission}");
    assert!(permission.contains("selected Allow (allow) after 50.0 ms"), "{permission}");
    // The file write, made while t1 was the only tool call in progress, is in t1's card.
    assert!(text_of(&b, "#turn-0 .tool[data-tool-call-id=t1] .tool-client-calls")
        .contains("fs/write_text_file /w/parser.rs"));
    assert!(b.find_all("#turn-0 > .client-calls").is_empty(), "the write is also listed apart from its tool call");
    assert_eq!(text_of(&b, "#turn-0 .turn-end .stop"), "end_turn");
    assert!(text_of(&b, "#turn-0 .turn-end").contains("30 tokens (20 in, 10 out)"));
    // The session's facts and plan; the waterfall has the turns and tool calls.
    let facts = text_of(&b, "#session-summary");
    // 50 ms for p1, and p2 open from 1002 ms to the trace's end at 4002 ms.
    assert!(facts.contains("/w") && facts.contains("waited 3.05 s for the client's answers"), "{facts}");
    assert!(text_of(&b, "#session-plan").contains("fix the parser"));
    assert_eq!(b.find_all("#waterfall .wf-row.wf-turn").len(), 2);
    assert_eq!(b.find_all("#waterfall .wf-row.wf-tool .wf-wait").len(), 2);
    assert!(text_of(&b, ".session-bar").contains("agent ag 2"));
    // The trace has ended with the second turn's permission request unanswered: the banner says so.
    let banner = text_of(&b, "#open-requests");
    assert!(
        banner.contains("session/request_permission never answered by the client: open 3 s when the trace ended"),
        "{banner}"
    );
    assert!(banner.contains("session/prompt never answered by the agent"), "{banner}");
    assert!(text_of(&b, "#turn-1 .turn-end").contains("no answer yet"));
    b.screenshot("session-tab");
    b.js("document.getElementById('turn-0').scrollIntoView();", json!([]));
    b.screenshot("session-turn");

    // One click on the tool call opens the diagram with the frame that began it selected.
    let began = seq_of(8);
    b.click("#turn-0 .tool[data-tool-call-id=t1] .tool-title a");
    b.wait_for("the tool call's frame selected in the diagram", |b| {
        !b.find_all(&format!("#diagram-scroll .frame.selected[data-seq=\"{began}\"]")).is_empty()
    });
    assert_eq!(selected_in_url(&b), Some(began));
    assert!(!b.current_url().contains("tab="), "{}", b.current_url());
    assert!(text_of(&b, "#detail").contains("tool_call"), "the detail shows the frame");
    // Back: the Session tab again; the turn's link selects the prompt.
    b.js("history.back();", json!([]));
    b.wait_for("the Session tab after going back", |b| !b.find_all("#turn-0").is_empty());
    b.click("#turn-0 .turn-head h2 a");
    b.wait_for("the prompt selected in the diagram", |b| {
        !b.find_all(&format!("#diagram-scroll .frame.selected[data-seq=\"{}\"]", seq_of(4))).is_empty()
    });
    // The banner's link to the permission request.
    b.goto(&format!("{}/traces/1?tab=session", server.url));
    b.wait_for("the banner", |b| !b.find_all("#open-requests").is_empty());
    let asked = seq_of(19);
    b.click(&format!("#open-requests li[data-seq=\"{asked}\"] a.frame-link"));
    b.wait_for("the unanswered permission request selected", |b| selected_in_url(b) == Some(asked));
}

/// Session `sid` opened at `t` ms, then `turns` prompts, each answered with one message 2 ms later.
fn session_with_turns(msgs: &mut Vec<Msg>, sid: &str, t: f64, turns: usize) {
    let id = msgs.len() as i64 + 1;
    msgs.push(c2a(t, json!({"jsonrpc":"2.0","id":id,"method":"session/new","params":{"cwd":"/w","mcpServers":[]}})));
    msgs.push(a2c(t + 1.0, json!({"jsonrpc":"2.0","id":id,"result":{"sessionId":sid}})));
    for n in 0..turns {
        let (t, id) = (t + 2.0 + n as f64 * 4.0, msgs.len() as i64 + 1);
        let prompt = json!([{"type":"text","text":format!("{sid} question {n}")}]);
        msgs.push(c2a(
            t,
            json!({"jsonrpc":"2.0","id":id,"method":"session/prompt","params":{"sessionId":sid,"prompt":prompt}}),
        ));
        msgs.push(update(
            t + 1.0,
            sid,
            json!({"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":format!("{sid} answer {n}")}}),
        ));
        msgs.push(a2c(t + 2.0, json!({"jsonrpc":"2.0","id":id,"result":{"stopReason":"end_turn"}})));
    }
}

#[test]
fn turns_come_a_page_at_a_time_and_a_picker_chooses_the_session() {
    let store = TempStore::new();
    let mut msgs = Vec::new();
    session_with_turns(&mut msgs, "first", 0.0, 120);
    session_with_turns(&mut msgs, "second", 600.0, 1);
    import_trace(&store, "many-turns", &msgs);
    let server = Server::start(&store.db);
    let b = Browser::start();
    let turn_numbers = |b: &Browser| {
        b.js("return Array.from(document.querySelectorAll('.turn'), t => +t.dataset.turn);", json!([]))
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_u64().unwrap())
            .collect::<Vec<_>>()
    };

    b.goto(&format!("{}/traces/1?tab=session", server.url));
    b.wait_for("the first page", |b| turn_numbers(b) == (0..50).collect::<Vec<_>>());
    assert_eq!(text_of(&b, ".turn-pager .pager-range").lines().next(), Some("turns 1–50 of 120"));
    assert!(text_of(&b, "#turn-49 .msg.agent").contains("first answer 49"));
    assert_eq!(b.find_all("#waterfall .wf-row.wf-turn").len(), 50);
    b.click(".turn-pager .pager-next");
    b.wait_for("the second page", |b| turn_numbers(b) == (50..100).collect::<Vec<_>>());
    assert!(b.current_url().contains("turn=51"), "{}", b.current_url());
    b.click(".turn-pager .pager-last");
    b.wait_for("the last page", |b| turn_numbers(b) == (100..120).collect::<Vec<_>>());
    assert_eq!(text_of(&b, ".turn-pager .pager-range").lines().next(), Some("turns 101–120 of 120"));
    assert!(text_of(&b, "#turn-119 .msg.prompt").contains("first question 119"));
    // A turn in the URL (numbered as shown) opens its page; a page past the end says so.
    b.goto(&format!("{}/traces/1?tab=session&turn=76", server.url));
    b.wait_for("the page of turn 76", |b| turn_numbers(b) == (50..100).collect::<Vec<_>>());
    assert!(text_of(&b, "#turn-75 .turn-head h2").contains("Turn 76"));
    b.goto(&format!("{}/traces/1?tab=session&turn=500", server.url));
    b.wait_for("the empty page", |b| {
        text_of(b, "#no-turns").contains("No turns on this page: the session has 120 turns.")
    });

    // The picker: the second session, on its own first page.
    b.click("#session-picker option[value=\"second\"]");
    b.wait_for("the second session's turn", |b| {
        turn_numbers(b) == vec![0] && text_of(b, "#turn-0 .msg.agent").contains("second answer 0")
    });
    assert!(b.current_url().contains("sid=second") && !b.current_url().contains("turn="), "{}", b.current_url());
    assert!(b.find_all(".turn-pager .pager-next:disabled").len() == 1);
    assert!(b.find_all("#open-requests").is_empty(), "every request was answered");
}

#[test]
fn a_trace_without_sessions_says_so_on_the_session_tab() {
    let store = TempStore::new();
    import_trace(
        &store,
        "no-sessions",
        &[
            c2a(0.0, json!({"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":1}})),
            a2c(1.0, json!({"jsonrpc":"2.0","id":0,"result":{"protocolVersion":1}})),
        ],
    );
    let server = Server::start(&store.db);
    let b = Browser::start();
    b.goto(&format!("{}/traces/1?tab=session", server.url));
    b.wait_for("the sentence", |b| !b.find_all("#no-sessions").is_empty());
    assert!(text_of(&b, "#no-sessions").contains("No ACP session in this trace"));
    assert!(b.find_all(".turn").is_empty() && b.find_all("#open-requests").is_empty());
}

#[test]
fn a_live_session_shows_its_waiting_permission_request_growing_and_then_answered() {
    let store = TempStore::new();
    // The agent asks permission as soon as a prompt comes, then waits for the answer and ends the turn.
    let ask = json!({"jsonrpc":"2.0","id":"p1","method":"session/request_permission","params":{"sessionId":"s1","toolCall":{"toolCallId":"t1"},"options":[{"optionId":"allow","kind":"allow_once"}]}});
    let done = json!({"jsonrpc":"2.0","id":1,"result":{"stopReason":"end_turn"}});
    let agent = sh(&format!("read prompt; echo '{ask}'; read answer; echo '{done}'; cat >/dev/null"));
    let mut tee = tee_command(&store.db, &["--name", "live-session"], &as_strs(&agent)).spawn().unwrap();
    let mut tee_in = tee.stdin.take().unwrap();
    let prompt = json!({"jsonrpc":"2.0","id":1,"method":"session/prompt","params":{"sessionId":"s1","prompt":[{"type":"text","text":"go"}]}});
    writeln!(tee_in, "{prompt}").unwrap();
    assert!(!read_exact_from(&mut tee, ask.to_string().len() + 1).is_empty());
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    while store.open().list_traces().unwrap().is_empty() {
        assert!(std::time::Instant::now() < deadline, "the live trace never showed in the store");
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let server = Server::start(&store.db);
    let b = Browser::start();

    b.goto(&format!("{}/traces/1?tab=session", server.url));
    b.wait_for("the waiting permission request", |b| {
        text_of(b, "#open-requests").contains("session/request_permission waiting")
    });
    let banner = text_of(&b, "#open-requests");
    assert!(banner.contains("for the client"), "{banner}");
    // The wait grows while nothing happens.
    let asked = "#open-requests li[data-seq=\"2\"] .open-text";
    let first = text_of(&b, asked);
    b.wait_for("the wait counted on", |b| {
        let now = text_of(b, asked);
        now.starts_with("session/request_permission waiting ") && now != first
    });
    assert!(text_of(&b, "#turn-0 .turn-end").contains("no answer yet"));
    // Stuck or streaming: nothing came after the permission request; the prompt's session had that frame since.
    let activity =
        |seq: i64| text_of(&b, &format!("#open-requests li[data-seq=\"{seq}\"] .activity")).trim().to_owned();
    assert_eq!(activity(2), "· nothing came in its session since it was sent");
    let prompt = activity(1);
    assert!(prompt.starts_with("· last frame of its session ") && prompt.ends_with(" ago"), "{prompt}");
    b.wait_for("the session's quiet time counted on", |b| {
        text_of(b, "#open-requests li[data-seq=\"1\"] .activity") != prompt
    });
    // The header: how long the run has gone on and how long nothing has come, counting on.
    b.wait_for("idle 2 s in the header", |b| {
        text_of(b, "#idle").starts_with("idle ") && seconds_in(&text_of(b, "#idle")) >= 2.0
    });
    let (running, idle) = (seconds_in(&text_of(&b, "#running")), seconds_in(&text_of(&b, "#idle")));
    assert!(text_of(&b, "#running").starts_with("running ") && running >= idle, "running {running} s, idle {idle} s");
    b.screenshot("session-live");
    // The Diagram tab asks for the findings: on a live trace the header says they are of the frames read.
    b.click("#tab-diagram");
    b.wait_for("the findings count", |b| !b.find_all("#findings-count").is_empty());
    let found = text_of(&b, "#findings-count");
    assert!(found.ends_with(" in the first 2 frames so far"), "{found}");
    b.click("#tab-session");

    // The client answers: the banner empties and the turn ends, without a reload.
    writeln!(
        tee_in,
        r#"{{"jsonrpc":"2.0","id":"p1","result":{{"outcome":{{"outcome":"selected","optionId":"allow"}}}}}}"#
    )
    .unwrap();
    b.wait_for("the answered turn", |b| text_of(b, "#turn-0 .turn-end .stop") == "end_turn");
    b.wait_for("no open requests", |b| b.find_all("#open-requests").is_empty());
    assert!(text_of(&b, "#turn-0 .permission").contains("selected allow"));
    drop(tee_in);
    tee.wait().unwrap();
}

#[test]
fn hostile_session_content_is_shown_as_text_on_the_session_tab() {
    let store = TempStore::new();
    let sid = r#"<img src=x onerror="window.__pwned=1">"#;
    let markup = r#"<b onmouseover="window.__pwned=2">bold</b><script>window.__pwned=3</script>"#;
    import_trace(
        &store,
        "hostile-session",
        &[
            c2a(
                0.0,
                json!({"jsonrpc":"2.0","id":1,"method":"session/prompt","params":{"sessionId":sid,"prompt":[{"type":"text","text":markup}]}}),
            ),
            update(1.0, sid, json!({"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":markup}})),
            update(
                2.0,
                sid,
                json!({"sessionUpdate":"tool_call","toolCallId":markup,"title":markup,"kind":markup,"status":markup,"rawInput":{"x":markup}}),
            ),
            a2c(
                3.0,
                json!({"jsonrpc":"2.0","id":"p","method":"session/request_permission","params":{"sessionId":sid,"toolCall":{"toolCallId":markup},"options":[{"optionId":markup,"kind":markup}]}}),
            ),
            a2c(4.0, json!({"jsonrpc":"2.0","id":1,"result":{"stopReason":markup}})),
        ],
    );
    let server = Server::start(&store.db);
    let b = Browser::start();
    b.goto(&format!("{}/traces/1?tab=session", server.url));
    b.wait_for("the hostile turn", |b| !b.find_all("#turn-0 .tool").is_empty());
    assert_eq!(text_of(&b, "#turn-0 .msg.agent .msg-text"), markup);
    assert!(text_of(&b, "#session-summary").contains(sid));
    assert!(text_of(&b, "#turn-0 .tool-title").contains(markup));
    assert!(text_of(&b, "#open-requests").contains("session/request_permission never answered by the client"));
    let injected = b.js(
        "return document.querySelectorAll('.tab-session img, .tab-session script, .tab-session b').length;",
        json!([]),
    );
    assert_eq!(injected, json!(0), "recorded markup became elements");
    assert_eq!(b.js("return window.__pwned === undefined ? null : window.__pwned;", json!([])), Value::Null);
}

#[test]
fn a_real_yopo_and_elizacp_session_reads_as_one_turn() {
    let store = TempStore::new();
    record_eliza(&store, "I would like to see my messages");
    let server = Server::start(&store.db);
    let b = Browser::start();
    b.goto(&format!("{}/traces/1?tab=session", server.url));
    b.wait_for("the recorded turn", |b| !b.find_all("#turn-0 .turn-end .stop").is_empty());
    assert_eq!(text_of(&b, "#turn-0 .msg.prompt .msg-text"), "I would like to see my messages");
    assert!(!text_of(&b, "#turn-0 .msg.agent .msg-text").trim().is_empty(), "the agent's reply is assembled");
    assert_eq!(text_of(&b, "#turn-0 .turn-end .stop"), "end_turn");
    assert!(text_of(&b, "#session-summary").contains("new"), "the session began with session/new");
    assert!(b.find_all("#open-requests").is_empty(), "yopo and elizacp answer everything");
    b.screenshot("session-eliza");
}

#[test]
fn a_real_python_sdk_agents_tool_call_shows_its_statuses_and_its_permission_answer() {
    let store = TempStore::new();
    let agent = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/peers/py_agent.py");
    let out = std::process::Command::new(peer("yopo"))
        .args(["please look at README.md", "--", bin(), "--db", store.db.to_str().unwrap(), "--"])
        .args([python_acp().as_str(), agent.to_str().unwrap()])
        .current_dir(store.dir.path())
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    store.only_trace();
    let server = Server::start(&store.db);
    let b = Browser::start();
    b.goto(&format!("{}/traces/1?tab=session", server.url));
    b.wait_for("the recorded turn", |b| !b.find_all("#turn-0 .turn-end .stop").is_empty());
    assert_eq!(text_of(&b, "#turn-0 .msg.prompt .msg-text"), "please look at README.md");
    assert_eq!(text_of(&b, "#turn-0 .turn-end .stop"), "end_turn");
    // The tool call went pending → in_progress → completed, after yopo
    // allowed it once.
    let statuses = b.texts("#turn-0 .tool .status .status-name");
    assert_eq!(statuses, ["pending", "in_progress", "completed"]);
    let answer = text_of(&b, "#turn-0 .tool .permission .outcome");
    assert!(answer.starts_with("→ selected Allow (allow-once) after "), "{answer}");
    assert!(b.find_all("#open-requests").is_empty(), "yopo answered everything");
}

/// An age as the Session tab writes it (`850 ms`, `48 s`, `3m 05s`, `+12.34 s`), in seconds.
fn seconds_in(text: &str) -> f64 {
    let words: Vec<&str> = text.split_whitespace().map(|w| w.trim_start_matches('+')).collect();
    for pair in words.windows(2) {
        let n = pair[0].parse::<f64>().ok();
        let minutes = pair[0].strip_suffix('m').and_then(|m| m.parse::<f64>().ok());
        let secs = pair[1].strip_suffix('s').and_then(|s| s.parse::<f64>().ok());
        match (n, pair[1], minutes, secs) {
            (Some(n), "s", _, _) => return n,
            (Some(n), "ms", _, _) => return n / 1e3,
            (Some(n), "µs", _, _) => return n / 1e6,
            (_, _, Some(m), Some(s)) => return m * 60.0 + s,
            _ => {}
        }
    }
    panic!("no age in {text:?}")
}

#[test]
fn ages_on_the_session_tab_count_on_while_a_live_permission_waits_and_no_frame_arrives() {
    // A real open permission: the official Python SDK agent asks, acpx on a terminal waits for a person.
    let wait = crate::sessions::record::start_permission_wait(&[]);
    let server = Server::start(&wait.store.db);
    let b = Browser::start();
    b.goto(&format!("{}/traces/{}?tab=session", server.url, wait.trace_id));
    let (turn, asked, axis) = (
        "#turn-0 .turn-head .took",
        "#turn-0 .permission .outcome.unanswered",
        "#waterfall .wf-axis .wf-tick:last-child",
    );
    b.wait_for("the open turn and its unanswered permission", |b| {
        text_of(b, turn).starts_with("open ") && text_of(b, asked).starts_with("→ no answer after ")
    });
    b.wait_for("the waterfall", |b| !b.find_all(axis).is_empty());
    let frames = wait.frames().len();
    let since = std::time::Instant::now();
    let (turn0, asked0, axis0) =
        (seconds_in(&text_of(&b, turn)), seconds_in(&text_of(&b, asked)), seconds_in(&text_of(&b, axis)));
    let facts = "#permission-wait";
    b.wait_for("the facts card's permission wait", |b| text_of(b, facts).contains("(1 still open)"));
    let facts0 = seconds_in(text_of(&b, facts).split("waited ").nth(1).unwrap());

    // Nothing arrives, yet the ages count on.
    b.wait_for("the turn's age counted on by 2 s", |b| {
        since.elapsed().as_secs_f64() >= 2.0 && seconds_in(&text_of(b, turn)) >= turn0 + 2.0
    });
    let (turn1, asked1, axis1) =
        (seconds_in(&text_of(&b, turn)), seconds_in(&text_of(&b, asked)), seconds_in(&text_of(&b, axis)));
    let facts1 = seconds_in(text_of(&b, facts).split("waited ").nth(1).unwrap());
    let elapsed = since.elapsed().as_secs_f64();
    assert_eq!(wait.frames().len(), frames, "a frame arrived: the ages may have come from a refresh");
    // Whole seconds on the cards, read a tick apart: within 1.5 s of the time that passed.
    for (what, before, after) in [
        ("the turn's open age", turn0, turn1),
        ("the permission's wait", asked0, asked1),
        ("the facts card's total wait", facts0, facts1),
    ] {
        let grew = after - before;
        assert!((grew - elapsed).abs() <= 1.5, "{what} grew {grew} s in {elapsed:.2} s ({before} → {after})");
    }
    assert!(axis1 - axis0 >= elapsed - 1.5, "the waterfall's axis grew {} s in {elapsed:.2} s", axis1 - axis0);
    let banner = text_of(&b, "#open-requests");
    assert!(banner.contains("session/request_permission waiting"), "{banner}");
    b.screenshot("session-live-ages");
}

/// Broken 2 of the time machine: 60 chunks of the reply, a tool call (#62–#68), 30 more chunks. The reply was
/// one block "90 chunks" above the tool card; now it is two, the tool card between them, in time order.
#[test]
fn the_reply_is_split_around_the_tool_call_that_came_between_its_chunks() {
    let store = TempStore::new();
    let chunk = |t: f64, text: String| {
        update(t, "s1", json!({"sessionUpdate":"agent_message_chunk","content":{"type":"text","text": text}}))
    };
    let mut msgs = vec![c2a(
        0.0,
        json!({"jsonrpc":"2.0","id":1,"method":"session/prompt","params":{"sessionId":"s1","prompt":[{"type":"text","text":"go"}]}}),
    )];
    msgs.extend((0..60).map(|i| chunk(1.0 + f64::from(i), format!("a{i} "))));
    msgs.push(update(
        70.0,
        "s1",
        json!({"sessionUpdate":"tool_call","toolCallId":"t1","title":"Run tests","kind":"execute"}),
    ));
    msgs.push(a2c(
        71.0,
        json!({"jsonrpc":"2.0","id":"p1","method":"session/request_permission","params":{"sessionId":"s1","toolCall":{"toolCallId":"t1"},"options":[{"optionId":"ok","name":"Allow","kind":"allow_once"}]}}),
    ));
    msgs.push(c2a(
        72.0,
        json!({"jsonrpc":"2.0","id":"p1","result":{"outcome":{"outcome":"selected","optionId":"ok"}}}),
    ));
    msgs.push(update(73.0, "s1", json!({"sessionUpdate":"tool_call_update","toolCallId":"t1","status":"completed"})));
    msgs.extend((0..30).map(|i| chunk(80.0 + f64::from(i), format!("b{i} "))));
    msgs.push(update(120.0, "s1", json!({"sessionUpdate":"plan","entries":[]})));
    msgs.push(chunk(121.0, "after the plan".into()));
    msgs.push(a2c(130.0, json!({"jsonrpc":"2.0","id":1,"result":{"stopReason":"end_turn"}})));
    import_trace(&store, "split", &msgs);
    let server = Server::start(&store.db);
    let b = Browser::start();
    b.goto(&format!("{}/traces/1?tab=session", server.url));
    b.wait_for("the turn", |b| !b.find_all("#turn-0 .msg.part").is_empty());
    let order = b.js(
        "return Array.from(document.querySelectorAll('#turn-0 .msg.part, #turn-0 .tool'), e =>
            e.classList.contains('tool') ? 'tool ' + e.dataset.toolCallId
                : e.querySelector('.msg-head').textContent.replace(/\\s+/g, ' ').trim());",
        json!([]),
    );
    // (The label and the frames are apart by the label's margin, not a space.) Frames: the prompt #1, chunks #2–#61, the tool call #62, permission #63/#64, update #65, chunks #66–#95,
    // the plan #96, a chunk #97.
    assert_eq!(
        order,
        json!([
            "Agent#2–#61 · 60 chunks",
            "tool t1",
            "Agent#66–#95 · 30 chunks · after permission asked #63",
            "Agent#97 · after plan #96"
        ])
    );
    let texts = b.texts("#turn-0 .msg.part .msg-text");
    let first: String = (0..60).map(|i| format!("a{i} ")).collect();
    let second: String = (0..30).map(|i| format!("b{i} ")).collect();
    assert_eq!(texts, [first.as_str(), second.as_str(), "after the plan"]);
    b.screenshot("session-split-reply");
}

/// A turn answered with an error shows the error's data and what the agent wrote to stderr while the turn was
/// open, on the Session tab and in `acp-tee show`.
#[test]
fn a_failed_turn_shows_its_errors_data_and_the_agents_stderr_beside_it() {
    let store = TempStore::new();
    let msgs = vec![
        stderr_line(0.0, "starting up"),
        c2a(1.0, json!({"jsonrpc":"2.0","id":1,"method":"session/prompt","params":{"sessionId":"s1","prompt":[]}})),
        stderr_line(2.0, "\u{1b}[31mERROR\u{1b}[0m model refused: quota exceeded"),
        a2c(
            3.0,
            json!({"jsonrpc":"2.0","id":1,"error":{"code":-32603,"message":"Internal error","data":{"retry_after":30}}}),
        ),
    ];
    import_trace(&store, "failed", &msgs);
    let server = Server::start(&store.db);
    let b = Browser::start();
    b.goto(&format!("{}/traces/1?tab=session", server.url));
    b.wait_for("the failed turn", |b| !b.find_all("#turn-0 .turn-end .stop.err").is_empty());
    assert_eq!(text_of(&b, "#turn-0 .turn-end .error-data"), r#"{"retry_after":30}"#);
    let stderr = text_of(&b, "#turn-0 .turn-stderr li");
    assert_eq!(stderr, "#3 ERROR model refused: quota exceeded", "only the line written while the turn was open");
    b.screenshot("session-failed-turn");
    let out = std::process::Command::new(bin()).args(["show", "--db", store.db.to_str().unwrap()]).output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("    error data: {\"retry_after\":30}\n    stderr #3: ERROR model refused: quota exceeded\n"),
        "{text}"
    );
    assert!(!text.contains("starting up"), "{text}");
}
