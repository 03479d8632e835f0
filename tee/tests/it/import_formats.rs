//! `acp-tee import` of other tools' formats through the real binary: a
//! real acpx flow run recorded by acp-tee while acpx wrote its own events,
//! Zed and acp-inspector files written to their tools' shapes, and an
//! `acp-inspector-trace` export read back.

use crate::common::*;
use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::Duration;

fn import(db: &Path, args: &[&str]) -> Output {
    Command::new(bin()).arg("import").arg("--db").arg(db).args(args).output().unwrap()
}

fn stdout(out: &Output) -> String {
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout.clone()).unwrap()
}

/// The frames of `trace` that are messages (stderr left out), each as
/// (direction, kind, method, the message parsed, index of the frame it answers).
fn messages(frames: &[Value]) -> Vec<(String, String, Value, Value, Option<usize>)> {
    let frames: Vec<&Value> = frames.iter().filter(|f| f["dir"] != "agent_stderr").collect();
    frames
        .iter()
        .map(|f| {
            let answers = f["reply_to_seq"].as_i64().map(|seq| frames.iter().position(|r| r["seq"] == seq).unwrap());
            let message: Value = serde_json::from_str(f["raw"].as_str().unwrap()).unwrap();
            (
                f["dir"].as_str().unwrap().to_owned(),
                f["kind"].as_str().unwrap().to_owned(),
                f["method"].clone(),
                message,
                answers,
            )
        })
        .collect()
}

/// A flow of one ACP step, as acpx's flow files are written.
const FLOW: &str = r#"import { acp, defineFlow } from "acpx/flows";
export default defineFlow({
  name: "look",
  startAt: "ask",
  nodes: { ask: acp({ prompt: () => "please look at README.md" }) },
  edges: [],
});
"#;

/// The one `events.ndjson` acpx wrote under `home`.
fn acpx_events(home: &Path) -> PathBuf {
    let runs = home.join(".acpx/flows/runs");
    let mut found = Vec::new();
    for run in std::fs::read_dir(&runs).unwrap() {
        for session in std::fs::read_dir(run.unwrap().path().join("sessions")).unwrap() {
            let events = session.unwrap().path().join("events.ndjson");
            if events.is_file() {
                found.push(events);
            }
        }
    }
    assert_eq!(found.len(), 1, "{found:?}");
    found.pop().unwrap()
}

#[test]
fn a_real_acpx_flow_imports_as_acp_tee_recorded_the_same_run() {
    let home = tempfile::tempdir().unwrap();
    let work = tempfile::tempdir().unwrap();
    std::fs::write(work.path().join("look.flow.mjs"), FLOW).unwrap();
    let recorded = TempStore::new();
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/peers/py_agent.py");
    let agent = [bin().to_owned(), "--db".into(), recorded.db.display().to_string(), "--".into(), python_acp()]
        .into_iter()
        .chain([script.display().to_string()])
        .map(|a| format!("'{}'", a.replace('\'', r"'\''")))
        .collect::<Vec<_>>()
        .join(" ");
    let mut child = Command::new(acpx())
        .args(["--approve-all", "--agent", &agent, "flow", "run", "look.flow.mjs"])
        .current_dir(work.path())
        .env("HOME", home.path())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let status = wait_within(&mut child, Duration::from_secs(120)).expect("acpx flow run hung");
    assert!(status.success(), "acpx flow run failed: {status}");
    let events = acpx_events(home.path());

    let imported = TempStore::new();
    let out = stdout(&import(&imported.db, &[events.to_str().unwrap()]));
    assert!(out.contains("(acpx) as trace 1"), "{out}");
    let from_acpx = messages(&exported_frames(&imported.db, 1));
    let trace = recorded.ended_traces(1)[0].id;
    let from_wire = messages(&exported_frames(&recorded.db, trace));
    // acpx captures a turn from its `session/prompt` on.
    let start = from_wire.iter().position(|m| m.2 == "session/prompt").unwrap();
    let from_wire: Vec<_> = from_wire[start..]
        .iter()
        .cloned()
        .map(|(d, k, m, v, answers)| (d, k, m, v, answers.map(|i| i - start)))
        .collect();
    assert_eq!(from_acpx, from_wire);
    // The permission acpx granted went its way: asked by the agent, answered by acpx.
    let asked = from_acpx.iter().position(|m| m.2 == "session/request_permission").unwrap();
    assert_eq!((from_acpx[asked].0.as_str(), from_acpx[asked].1.as_str()), ("agent_to_client", "request"));
    assert!(from_acpx.iter().any(|m| m.0 == "client_to_agent" && m.4 == Some(asked)));
}

#[test]
fn zed_and_acp_inspector_files_are_told_apart_and_imported() {
    let dir = tempfile::tempdir().unwrap();
    let zed = dir.path().join("zed-copy.json");
    let entries = json!([
        {"_direction": "outgoing", "_type": "request", "id": 0, "method": "initialize", "params": {"protocolVersion": 1}},
        {"_direction": "stderr", "_type": "stderr", "id": null, "method": "stderr", "params": "loading config"},
        {"_direction": "incoming", "_type": "response", "id": 0, "method": "initialize", "params": {"code": -32602, "message": "Invalid params"}}
    ]);
    std::fs::write(&zed, serde_json::to_string_pretty(&entries).unwrap()).unwrap();
    let store = TempStore::new();
    let out = stdout(&import(&store.db, &[zed.to_str().unwrap()]));
    assert_eq!(out, format!("imported 3 frames from {} (zed) as trace 1\n", zed.display()));
    let frames = exported_frames(&store.db, 1);
    let kinds: Vec<&str> = frames.iter().map(|f| f["kind"].as_str().unwrap()).collect();
    assert_eq!(kinds, ["request", "stderr", "error"]);
    assert_eq!(frames[2]["reply_to_seq"], 1);

    let insp = dir.path().join("acp-trace-1785312000123.jsonl");
    let frame = |at: i64, conn: u64, dir: &str, text: &str| {
        json!({"type":"frame","at":at,"connection":conn,"direction":dir,"encoding":"utf8","frame":text}).to_string()
    };
    let text = [
        json!({"type":"header","format":"acp-inspector-trace","version":1,"at":1785312000123_i64,"frames":4,"dropped":0,"warning":"w"}).to_string(),
        frame(1785312000456, 1, "client -> agent", r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}"#),
        frame(1785312000512, 1, "agent -> client", r#"{"jsonrpc":"2.0","id":1,"result":{}}"#),
        frame(1785312000600, 2, "client -> agent", r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}"#),
        frame(1785312000900, 2, "agent -> client", r#"{"jsonrpc":"2.0","id":1,"result":{}}"#),
    ]
    .join("\n");
    std::fs::write(&insp, text + "\n").unwrap();
    let out = stdout(&import(&store.db, &[insp.to_str().unwrap()]));
    assert_eq!(out, format!("imported 4 frames from {} (acp-inspector) as trace 2, 3\n", insp.display()));
    for trace in [2, 3] {
        let frames = exported_frames(&store.db, trace);
        assert_eq!(frames.len(), 2);
        assert_eq!((frames[1]["reply_to_seq"].as_i64(), frames[1]["dir"].as_str()), (Some(1), Some("agent_to_client")));
    }
}

#[test]
fn an_acp_inspector_export_of_the_conductor_fixture_imports_back_to_the_same_frames() {
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/conductor-trace.jsons");
    let store = TempStore::new();
    stdout(&import(&store.db, &[fixture.to_str().unwrap()]));
    let out = Command::new(bin())
        .args(["export", "--db", store.db.to_str().unwrap(), "--format", "acp-inspector", "--no-redact"])
        .output()
        .unwrap();
    let text = stdout(&out);
    let header: Value = serde_json::from_str(text.lines().next().unwrap()).unwrap();
    assert_eq!((header["format"].as_str(), header["frames"].as_i64()), (Some("acp-inspector-trace"), Some(13)));
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("back.jsonl");
    std::fs::write(&file, &text).unwrap();
    let again = TempStore::new();
    assert!(stdout(&import(&again.db, &[file.to_str().unwrap()])).contains("(acp-inspector) as trace 1"));
    let key = |f: &Value| (f["raw"].clone(), f["dir"].clone(), f["kind"].clone(), f["reply_to_seq"].clone());
    let before: Vec<_> = exported_frames(&store.db, 1).iter().map(key).collect();
    let after: Vec<_> = exported_frames(&again.db, 1).iter().map(key).collect();
    assert_eq!(after, before);
}

/// Writes the start of a Zed copy whose first entry's `params` never ends,
/// until the reader goes away.
fn endless_zed_copy(mut stdin: std::process::ChildStdin) {
    use std::io::Write;
    let head = "[\n  {\n    \"_direction\": \"stderr\",\n    \"params\": \"";
    if stdin.write_all(head.as_bytes()).is_err() {
        return;
    }
    let chunk = vec![b'a'; 1 << 20];
    while stdin.write_all(&chunk).is_ok() {}
}

#[test]
fn a_zed_copy_that_never_ends_fails_at_the_limit_in_bounded_memory() {
    // (The line-based formats are read from /dev/zero in
    // import::hostile_files::input_without_line_ends_fails_at_the_limit_in_bounded_memory.)
    let store = TempStore::new();
    let db = store.db.to_str().unwrap();
    let r = run_bounded(&["import", "--db", db, "--format", "zed", "/dev/stdin"], 2 << 30, Some(endless_zed_copy));
    eprintln!("endless Zed copy: exit {:?}, peak RSS {} MiB", r.code, r.peak_kib / 1024);
    assert_eq!(
        (r.code, r.stderr.as_str()),
        (
            Some(1),
            &*format!("acp-tee: error: /dev/stdin:4: a value longer than {MAX_LINE} bytes; nothing was imported\n")
        )
    );
    assert!((r.peak_kib as u64) < MAX_LINE / 1024 * 3 / 2, "peak RSS {} KiB", r.peak_kib);
    assert!(store.open().list_traces().unwrap().is_empty());
}
