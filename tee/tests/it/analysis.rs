//! `show` (and its JSON) on hand-made traces, imported from raw sacp-tee
//! log lines through the real binary: what the session model reads out of
//! messages that are odd but readable.

use crate::common::{bin, TempStore};
use std::process::Command;

/// Imports `lines` (`true`: the client sent it) as a sacp-tee log into
/// `store`.
fn import(store: &TempStore, lines: &[(bool, &str)]) {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("trace.log");
    let text: String = lines.iter().map(|(c, l)| format!("{} {l}\n", if *c { "→" } else { "←" })).collect();
    std::fs::write(&file, text).unwrap();
    let out = Command::new(bin()).arg("import").arg("--db").arg(&store.db).arg(&file).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
}

/// `acp-tee show ARGS` on the store's latest trace: its stdout.
fn show(store: &TempStore, args: &[&str]) -> String {
    let out = Command::new(bin()).arg("show").arg("--db").arg(&store.db).args(args).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).unwrap()
}

const INIT: &str = r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":1}}"#;
const INIT_OK: &str = r#"{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":1}}"#;
const NEW: &str = r#"{"jsonrpc":"2.0","id":1,"method":"session/new","params":{"cwd":"/tmp","mcpServers":[]}}"#;
const NEW_OK: &str = r#"{"jsonrpc":"2.0","id":1,"result":{"sessionId":"s"}}"#;
const PROMPT: &str = r#"{"jsonrpc":"2.0","id":2,"method":"session/prompt","params":{"sessionId":"s","prompt":[{"type":"text","text":"hi"}]}}"#;

/// A `tool_call_update` before its `tool_call` is not shown as a step of
/// the tool call's statuses (it read `completed #6 → pending #7`).
#[test]
fn an_update_before_its_tool_call_is_set_apart_in_show() {
    let store = TempStore::new();
    import(
        &store,
        &[
            (true, INIT),
            (false, INIT_OK),
            (true, NEW),
            (false, NEW_OK),
            (true, PROMPT),
            (
                false,
                r#"{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":{"sessionUpdate":"tool_call_update","toolCallId":"t","status":"completed"}}}"#,
            ),
            (
                false,
                r#"{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":{"sessionUpdate":"tool_call","toolCallId":"t","title":"Read"}}}"#,
            ),
            (false, r#"{"jsonrpc":"2.0","id":2,"result":{"stopReason":"end_turn"}}"#),
        ],
    );
    let text = show(&store, &[]);
    let line = text.lines().find(|l| l.contains("tool call t")).unwrap_or_else(|| panic!("no tool call: {text}"));
    assert!(!line.contains("completed #6 → pending #7"), "{line}");
    assert!(line.ends_with("completed #6 (updated at #6 before its tool_call #7); then pending #7"), "{line}");
}

/// Imports `lines` as [`import`] does, from owned strings.
fn import_owned(store: &TempStore, lines: &[(bool, String)]) {
    let refs: Vec<(bool, &str)> = lines.iter().map(|(c, l)| (*c, l.as_str())).collect();
    import(store, &refs);
}

/// `acp-tee show --format json ARGS` on the store's latest trace.
fn show_json(store: &TempStore, args: &[&str]) -> serde_json::Value {
    let args: Vec<&str> = ["--format", "json"].iter().chain(args).copied().collect();
    serde_json::from_str(&show(store, &args)).unwrap()
}

fn update(sid: &str, body: &str) -> String {
    format!(r#"{{"jsonrpc":"2.0","method":"session/update","params":{{"sessionId":"{sid}","update":{body}}}}}"#)
}

/// A prompt (id `id`) in session `sid` saying `text`, and its answer.
fn answered_prompt(id: usize, sid: &str, text: &str) -> [(bool, String); 2] {
    [
        (
            true,
            format!(
                r#"{{"jsonrpc":"2.0","id":{id},"method":"session/prompt","params":{{"sessionId":"{sid}","prompt":[{{"type":"text","text":"{text}"}}]}}}}"#
            ),
        ),
        (false, format!(r#"{{"jsonrpc":"2.0","id":{id},"result":{{"stopReason":"end_turn"}}}}"#)),
    ]
}

/// More sessions than the model keeps (`SESSIONS_MAX`, 10,000): `show`
/// says how many it left out, in its text and its JSON, and `--session`
/// finds one of them (#30 item 12: the text listed 10,000 with no note and
/// `--session` said the session did not exist).
#[test]
fn show_says_which_sessions_it_left_out_and_finds_any_of_them() {
    let store = TempStore::new();
    let sessions = 12_000;
    let lines: Vec<(bool, String)> =
        (0..sessions).flat_map(|i| answered_prompt(i + 1, &format!("s{i}"), &format!("hello {i}"))).collect();
    import_owned(&store, &lines);

    let text = show(&store, &[]);
    assert_eq!(text.matches("\nsession s").count(), 10_000, "the first SESSIONS_MAX are listed");
    let note = text.lines().find(|l| l.contains("left out")).unwrap_or_else(|| panic!("no note: {}", &text[..400]));
    assert!(note.contains("2000 sessions") && note.contains("4000 frames") && note.contains("--session"), "{note}");
    let doc = show_json(&store, &[]);
    assert_eq!(doc["overview"]["sessions_left_out"], 2000, "{}", doc["overview"]);
    assert_eq!(doc["overview"]["frames_left_out"], 4000);

    let one = show(&store, &["--session", "s11000"]);
    assert!(one.contains("session s11000 ") && one.contains("prompt: hello 11000"), "{one}");
    assert!(!one.contains("left out"), "the session asked for is all there: {one}");
    let doc = show_json(&store, &["--session", "s11000"]);
    assert_eq!(doc["sessions"][0]["turns"][0]["prompt"]["text"], "hello 11000", "{doc}");
    assert_eq!(doc["overview"]["sessions"][0]["turns"], 1);

    let out =
        Command::new(bin()).arg("show").arg("--db").arg(&store.db).args(["--session", "s12000"]).output().unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("has no session s12000"));

    // The server's sessions say so too, and its page of a session left out
    // does not say the session does not exist.
    let served = crate::common::Served::start(&store.db, &[]);
    let overview: serde_json::Value = served.get("/api/traces/1/sessions");
    assert_eq!(
        (overview["sessions_left_out"].as_u64(), overview["frames_left_out"].as_u64()),
        (Some(2000), Some(4000))
    );
    let err = ureq::get(&format!("{}/api/traces/1/sessions/s11000", served.url)).call().unwrap_err();
    let ureq::Error::Status(404, resp) = err else { panic!("{err}") };
    let body = resp.into_string().unwrap();
    assert!(body.contains("among the first 10000 it keeps; 2000 sessions past them are left out"), "{body}");
}

/// A turn with more tool calls and client calls than it lists (1,000 of
/// each): the text and the JSON say how many more there were (#30 item 12:
/// 1,000 listed under a header of 1,000,000, with no marker).
#[test]
fn a_turn_says_how_many_tool_calls_and_client_calls_it_does_not_list() {
    let store = TempStore::new();
    let mut lines = vec![(true, INIT.to_owned()), (false, INIT_OK.to_owned()), (true, NEW.to_owned())];
    lines.push((false, NEW_OK.to_owned()));
    lines.push((true, PROMPT.to_owned()));
    for i in 0..1_200 {
        let call =
            format!(r#"{{"sessionUpdate":"tool_call","toolCallId":"t{i}","title":"Read {i}","status":"pending"}}"#);
        lines.push((false, update("s", &call)));
    }
    // Announced again (as Claude Code does): still one tool call each.
    for i in [5, 1_100] {
        lines.push((false, update("s", &format!(r#"{{"sessionUpdate":"tool_call","toolCallId":"t{i}"}}"#))));
    }
    for i in 0..1_005 {
        let read = format!(
            r#"{{"jsonrpc":"2.0","id":"r{i}","method":"fs/read_text_file","params":{{"sessionId":"s","path":"/f{i}"}}}}"#
        );
        lines.push((false, read));
        lines.push((true, format!(r#"{{"jsonrpc":"2.0","id":"r{i}","result":{{"content":"x"}}}}"#)));
    }
    lines.push((false, r#"{"jsonrpc":"2.0","id":2,"result":{"stopReason":"end_turn"}}"#.to_owned()));
    import_owned(&store, &lines);

    let text = show(&store, &[]);
    assert!(text.contains("1200 tool calls"), "{}", &text[..300]);
    assert_eq!(text.matches("    tool call t").count(), 1_000);
    assert_eq!(text.matches("    fs/read_text_file #").count(), 1_000);
    assert!(text.contains("    … 200 more tool calls not listed (a turn lists at most 1000)"), "{}", tail(&text));
    assert!(text.contains("    … 5 more client calls not listed (a turn lists at most 1000)"), "{}", tail(&text));
    let doc = show_json(&store, &[]);
    let turn = &doc["sessions"][0]["turns"][0];
    assert_eq!((turn["tool_calls_left_out"].as_u64(), turn["client_calls_left_out"].as_u64()), (Some(200), Some(5)));
}

/// More open requests than the list holds (200): the text says how many it
/// does not list.
#[test]
fn show_says_how_many_open_requests_it_does_not_list() {
    let store = TempStore::new();
    let mut lines = vec![(true, INIT.to_owned()), (false, INIT_OK.to_owned())];
    for i in 0..250 {
        lines.push((true, format!(r#"{{"jsonrpc":"2.0","id":{},"method":"_x/wait"}}"#, i + 10)));
    }
    import_owned(&store, &lines);
    let text = show(&store, &[]);
    assert!(text.contains("open requests (250):"), "{text}");
    assert_eq!(text.matches(" _x/wait: never answered").count(), 200, "{text}");
    assert!(text.contains("  … 50 more not listed (the list holds the oldest 200)"), "{}", tail(&text));
}

/// The last lines of `text`.
fn tail(text: &str) -> &str {
    &text[text.len().saturating_sub(1500)..]
}

/// A session's lists (setting changes, commands, plan entries: 200 each)
/// and a tool call's (statuses, paths, permission requests: 64 each; a
/// permission's options: 64) say what they leave out, in the JSON and,
/// for what the text prints, in the text (#30 item 12).
#[test]
fn lists_past_their_bounds_say_how_much_they_leave_out() {
    let store = TempStore::new();
    let mut lines = vec![(true, INIT.to_owned()), (false, INIT_OK.to_owned()), (true, NEW.to_owned())];
    lines.push((false, NEW_OK.to_owned()));
    for i in 0..205 {
        let id = 100 + i;
        let set = format!(
            r#"{{"jsonrpc":"2.0","id":{id},"method":"session/set_mode","params":{{"sessionId":"s","modeId":"m{i}"}}}}"#
        );
        lines.push((true, set));
        lines.push((false, format!(r#"{{"jsonrpc":"2.0","id":{id},"result":{{}}}}"#)));
    }
    let commands: Vec<String> = (0..203).map(|i| format!(r#"{{"name":"c{i}","description":"d"}}"#)).collect();
    let commands =
        format!(r#"{{"sessionUpdate":"available_commands_update","availableCommands":[{}]}}"#, commands.join(","));
    lines.push((false, update("s", &commands)));
    let entries: Vec<String> =
        (0..201).map(|i| format!(r#"{{"content":"e{i}","priority":"low","status":"pending"}}"#)).collect();
    lines.push((false, update("s", &format!(r#"{{"sessionUpdate":"plan","entries":[{}]}}"#, entries.join(",")))));
    lines.push((true, PROMPT.to_owned()));
    lines.push((false, update("s", r#"{"sessionUpdate":"tool_call","toolCallId":"t","title":"Edit"}"#)));
    // 71 statuses with the first (pending), 70 paths each named twice.
    for i in 0..70 {
        let status = if i % 2 == 0 { "in_progress" } else { "pending" };
        let body = format!(
            r#"{{"sessionUpdate":"tool_call_update","toolCallId":"t","status":"{status}","locations":[{{"path":"/p{i}"}},{{"path":"/p{i}"}}]}}"#
        );
        lines.push((false, update("s", &body)));
    }
    let options: Vec<String> = (0..65).map(|i| format!(r#"{{"optionId":"o{i}","kind":"allow_once"}}"#)).collect();
    for i in 0..66 {
        let ask = format!(
            r#"{{"jsonrpc":"2.0","id":"p{i}","method":"session/request_permission","params":{{"sessionId":"s","toolCall":{{"toolCallId":"t"}},"options":[{}]}}}}"#,
            options.join(",")
        );
        lines.push((false, ask));
        let answer = format!(
            r#"{{"jsonrpc":"2.0","id":"p{i}","result":{{"outcome":{{"outcome":"selected","optionId":"o0"}}}}}}"#
        );
        lines.push((true, answer));
    }
    lines.push((false, r#"{"jsonrpc":"2.0","id":2,"result":{"stopReason":"end_turn"}}"#.to_owned()));
    import_owned(&store, &lines);

    let doc = show_json(&store, &[]);
    let session = &doc["sessions"][0];
    assert_eq!(session["changes"].as_array().map(Vec::len), Some(200));
    assert_eq!((session["changes_left_out"].as_u64(), session["commands_left_out"].as_u64()), (Some(5), Some(3)));
    assert_eq!(session["plan"]["entries_left_out"], 1);
    let call = &session["turns"][0]["tool_calls"][0];
    assert_eq!(call["statuses"].as_array().map(Vec::len), Some(64));
    assert_eq!((call["statuses_left_out"].as_u64(), call["locations_left_out"].as_u64()), (Some(7), Some(6)));
    assert_eq!(
        (call["permissions_left_out"].as_u64(), call["permissions"][0]["options_left_out"].as_u64()),
        (Some(2), Some(1))
    );

    let text = show(&store, &[]);
    assert!(text.contains("(… 7 more status changes not listed)"), "{}", tail(&text));
    assert!(
        text.contains("      … 2 more permission requests not listed (a tool call lists at most 64)"),
        "{}",
        tail(&text)
    );
    assert!(text.contains("o63: allow_once, … 1 more)"), "{}", tail(&text));
}
