//! `show` (and its JSON) on hand-made traces, imported from raw sacp-tee
//! log lines through the real binary: what the session model reads out of
//! messages that are odd but readable.

mod common;

use common::{bin, TempStore};
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
