//! A trace whose recorder is still storing frames after acp-tee went away
//! is never listed or exported as if it were complete: `list` says
//! `finishing`, `export` waits for it (or, with `--no-wait`, says what it
//! holds), so a script that records then exports gets every frame. `check`,
//! `diff` and the MCP tools wait the same way, and never judge a trace still
//! being recorded as if it were complete.

use crate::common::*;
use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Output};
use std::time::{Duration, Instant};

fn tee(db: &std::path::Path, args: &[&str]) -> Output {
    let out = Command::new(bin()).args(args).arg("--db").arg(db).output().unwrap();
    assert!(out.status.success(), "acp-tee {args:?} failed: {}", String::from_utf8_lossy(&out.stderr));
    out
}

/// The pid of the recorder of the store's one trace, once the trace exists.
fn recorder_pid(db: &std::path::Path) -> u32 {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        if db.exists() {
            let conn = rusqlite::Connection::open(db).unwrap();
            let pid: Option<u32> =
                conn.query_row("SELECT max(recorder_pid) FROM traces", [], |r| r.get(0)).unwrap_or(None);
            if let Some(pid) = pid {
                return pid;
            }
        }
        assert!(Instant::now() < deadline, "no trace within 30 s");
        std::thread::sleep(Duration::from_millis(10));
    }
}

#[test]
fn a_trace_whose_recorder_is_still_storing_is_listed_as_finishing_and_export_waits_for_it() {
    let store = TempStore::new();
    let mut child = tee_command(&store.db, &[], &["cat"]).spawn().unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    recorder_pid(&store.db);
    // The store's write lock, held here: the recorder can store nothing.
    // (Stopping the recorder would not do: when acp-tee dies, the kernel
    // wakes a stopped process group it leaves orphaned.)
    let lock = rusqlite::Connection::open(&store.db).unwrap();
    lock.execute_batch("BEGIN IMMEDIATE").unwrap();
    let lines = 50;
    for i in 0..lines {
        writeln!(stdin, r#"{{"jsonrpc":"2.0","id":{i},"method":"m"}}"#).unwrap();
        let mut echoed = String::new();
        stdout.read_line(&mut echoed).unwrap();
    }
    // acp-tee is killed, as yopo and editors do.
    child.kill().unwrap();
    child.wait().unwrap();

    let list = String::from_utf8(tee(&store.db, &["list"]).stdout).unwrap();
    assert!(list.lines().nth(1).is_some_and(|row| row.contains("finishing")), "{list}");
    let partial = tee(&store.db, &["export", "--no-wait", "--format", "ndjson"]);
    let note = String::from_utf8(partial.stderr).unwrap();
    assert!(note.contains("trace 1 is still finishing"), "{note}");

    // An export started now waits for the recorder, which can store only
    // after the export has begun: what it writes is the whole trace.
    let waiting = Command::new(bin())
        .args(["export", "--format", "ndjson", "--db"])
        .arg(&store.db)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(30);
    while !open_files(waiting.id()).iter().any(|f| f == &store.db) {
        assert!(Instant::now() < deadline, "the export never opened the store");
        std::thread::sleep(Duration::from_millis(5));
    }
    lock.execute_batch("ROLLBACK").unwrap();
    let out = waiting.wait_with_output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8(out.stdout).unwrap();
    let header: serde_json::Value = serde_json::from_str(text.lines().next().unwrap()).unwrap();
    assert!(header["trace"]["ended_at"].is_string(), "{header}");
    // Every line both ways.
    assert_eq!(text.lines().count() - 1, 2 * lines, "{text}");
    assert!(out.stderr.is_empty(), "{}", String::from_utf8_lossy(&out.stderr));
}

/// The files process `pid` has open.
fn open_files(pid: u32) -> Vec<std::path::PathBuf> {
    let Ok(dir) = std::fs::read_dir(format!("/proc/{pid}/fd")) else { return Vec::new() };
    dir.filter_map(|e| std::fs::read_link(e.ok()?.path()).ok()).collect()
}

/// What a script does: `yopo PROMPT -- ARGS...`, then `acp-tee export` the
/// moment yopo returns (it SIGKILLs what it ran once it has its answer).
/// Checks that first export is the whole trace: the same as one made after
/// the trace ended.
fn record_with_yopo_then_export(store: &TempStore, mode: &str, args: &[String]) {
    let marker = unique_marker(&format!("export right after, {mode}"));
    let out = Command::new(peer("yopo"))
        .arg("Hello there")
        .arg("--")
        .args(args)
        .env("ACP_TEE_TEST_MARK", &marker)
        .output()
        .unwrap();
    assert!(out.status.success(), "yopo failed: {}", String::from_utf8_lossy(&out.stderr));
    let first = tee(&store.db, &["export", "--format", "ndjson"]);
    kill_marked(&marker, "elizacp");
    let trace = store.only_trace();
    let again = tee(&store.db, &["export", "--format", "ndjson"]);
    let (first, again) = (String::from_utf8(first.stdout).unwrap(), String::from_utf8(again.stdout).unwrap());
    assert_eq!(first, again, "the first export was not the whole trace");
    assert!(trace.ended_at.is_some() && trace.frame_count >= 7, "{trace:?}");
}

#[test]
fn yopo_then_export_gives_every_frame_in_wrap_mode() {
    let store = TempStore::new();
    let db = store.db.to_str().unwrap().to_owned();
    let args =
        [bin().to_owned(), "--db".into(), db, "--".into(), peer("elizacp"), "--deterministic".into(), "acp".into()];
    record_with_yopo_then_export(&store, "wrap", &args);
}

#[test]
fn yopo_then_export_gives_every_frame_in_proxy_mode() {
    let store = TempStore::new();
    let proxy = format!("{} proxy --db {}", bin(), store.db.display());
    let eliza = format!("{} --deterministic acp", peer("elizacp"));
    let args = [peer("agent-client-protocol-conductor"), "agent".into(), proxy, eliza];
    record_with_yopo_then_export(&store, "proxy", &args);
}

/// Records 50 requests through `acp-tee -- cat` into `store` while holding
/// the store's write lock, then kills acp-tee: the trace is finishing, its
/// recorder unable to store anything until the returned lock is released.
fn finishing_trace(store: &TempStore) -> (rusqlite::Connection, usize) {
    let mut child = tee_command(&store.db, &[], &["cat"]).spawn().unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    recorder_pid(&store.db);
    let lock = rusqlite::Connection::open(&store.db).unwrap();
    lock.execute_batch("BEGIN IMMEDIATE").unwrap();
    let lines = 50;
    for i in 0..lines {
        writeln!(stdin, r#"{{"jsonrpc":"2.0","id":{i},"method":"m"}}"#).unwrap();
        let mut echoed = String::new();
        stdout.read_line(&mut echoed).unwrap();
    }
    child.kill().unwrap();
    child.wait().unwrap();
    (lock, 2 * lines)
}

/// Waits until process `pid` has the store open (or has already exited,
/// having judged what it read), then releases `lock`: the recorder can
/// store only after the reader began.
fn release_once_opened(pid: u32, db: &std::path::Path, lock: rusqlite::Connection) {
    let deadline = Instant::now() + Duration::from_secs(30);
    let exited = || {
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
        stat.rsplit_once(") ").is_none_or(|(_, rest)| rest.starts_with('Z'))
    };
    while !open_files(pid).iter().any(|f| f == db) && !exited() {
        assert!(Instant::now() < deadline, "process {pid} never opened the store");
        std::thread::sleep(Duration::from_millis(5));
    }
    lock.execute_batch("ROLLBACK").unwrap();
}

#[test]
fn check_waits_for_a_finishing_trace_and_judges_all_of_it() {
    let store = TempStore::new();
    let (lock, frames) = finishing_trace(&store);
    let checking = Command::new(bin())
        .args(["check", "--format", "json", "--db"])
        .arg(&store.db)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    release_once_opened(checking.id(), &store.db, lock);
    let out = checking.wait_with_output().unwrap();
    let doc: serde_json::Value =
        serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stderr)));
    let trace = &doc["traces"][0];
    assert_eq!(trace["frames"], frames, "{trace}");
    assert_eq!(trace["live"], false, "{trace}");
    // `cat` echoes each request as the agent's: errors, so 1, not 3.
    assert_eq!(out.status.code(), Some(1), "{}", String::from_utf8_lossy(&out.stderr));
}

/// A real MCP client (the Python SDK's) calling `calls` on `acp-tee mcp`;
/// `opened` runs with the server's pid once it has the store open.
fn mcp_calls(db: &std::path::Path, calls: serde_json::Value, opened: impl FnOnce(u32)) -> serde_json::Value {
    let script = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/peers/mcp_client.py");
    let mut client = Command::new(python_mcp())
        .arg(script)
        .args([bin(), "mcp", "--db", db.to_str().unwrap()])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::inherit())
        .spawn()
        .unwrap();
    client.stdin.take().unwrap().write_all(calls.to_string().as_bytes()).unwrap();
    let deadline = Instant::now() + Duration::from_secs(30);
    let server = loop {
        if let Some(pid) = child_of(client.id(), "acp-tee") {
            break pid;
        }
        assert!(Instant::now() < deadline, "the MCP client started no server");
        std::thread::sleep(Duration::from_millis(5));
    };
    opened(server);
    let out = client.wait_with_output().unwrap();
    assert!(out.status.success(), "the MCP client failed");
    serde_json::from_slice(&out.stdout).unwrap()
}

/// The pid of a child of `parent` named `comm`.
fn child_of(parent: u32, comm: &str) -> Option<u32> {
    std::fs::read_dir("/proc").ok()?.flatten().filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok()).find(|pid| {
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
        let Some((head, rest)) = stat.rsplit_once(") ") else { return false };
        head.ends_with(&format!("({comm}")) && rest.split(' ').nth(1) == Some(&parent.to_string())
    })
}

/// The JSON answer of call `i` of an MCP client's document.
fn mcp_answer(doc: &serde_json::Value, i: usize) -> serde_json::Value {
    let result = &doc["calls"][i]["result"];
    assert_eq!(result["isError"], false, "call {i}: {doc}");
    serde_json::from_str(result["content"][0]["text"].as_str().unwrap()).unwrap()
}

#[test]
fn the_mcp_tools_wait_for_a_finishing_trace() {
    let store = TempStore::new();
    let (lock, frames) = finishing_trace(&store);
    let calls = serde_json::json!([["method_stats", {"trace_id": 1}]]);
    let db = store.db.clone();
    let doc = mcp_calls(&store.db, calls, move |server| release_once_opened(server, &db, lock));
    let stats = mcp_answer(&doc, 0);
    let m = stats["methods"].as_array().unwrap().iter().find(|m| m["method"] == "m").cloned();
    assert_eq!(m.map(|m| m["count"].clone()), Some(serde_json::json!(frames)), "{stats}");
    assert_eq!(stats["live"], false, "{stats}");
}

#[test]
fn check_diff_and_mcp_say_a_live_trace_is_not_complete() {
    let store = TempStore::new();
    let mut child = tee_command(&store.db, &[], &["cat"]).spawn().unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    // A notification echoed: nothing for the checker to find.
    writeln!(stdin, r#"{{"jsonrpc":"2.0","method":"_x/note"}}"#).unwrap();
    let mut echoed = String::new();
    stdout.read_line(&mut echoed).unwrap();
    let check = || Command::new(bin()).args(["check", "--db"]).arg(&store.db).output().unwrap();
    let deadline = Instant::now() + Duration::from_secs(30);
    let out = loop {
        let out = check();
        if String::from_utf8_lossy(&out.stdout).contains(" in 2 frames") {
            break out;
        }
        assert!(Instant::now() < deadline, "the two frames were never stored");
        std::thread::sleep(Duration::from_millis(20));
    };
    let text = String::from_utf8(out.stdout).unwrap();
    assert_eq!(out.status.code(), Some(3), "{text}");
    assert!(text.contains("0 errors, 0 warnings, 0 infos in 2 frames (not complete: "), "{text}");
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert!(stderr.contains("trace 1 is still being recorded: the check judges the "), "{stderr}");

    let diff = Command::new(bin()).args(["diff", "--db"]).arg(&store.db).args(["1", "1"]).output().unwrap();
    let said = String::from_utf8_lossy(&diff.stderr);
    assert_eq!(diff.status.code(), Some(2), "{said}");
    assert!(said.contains("trace 1 is still being recorded"), "{said}");

    let calls = serde_json::json!([["compare_traces", {"a": 1, "b": 1}], ["method_stats", {"trace_id": 1}]]);
    let doc = mcp_calls(&store.db, calls, |_| {});
    let compare = &doc["calls"][0]["result"];
    assert_eq!(compare["isError"], true, "{doc}");
    assert!(compare["content"][0]["text"].as_str().unwrap().contains("still being recorded"), "{doc}");
    assert_eq!(mcp_answer(&doc, 1)["live"], true, "{doc}");
    drop(stdin);
    assert!(wait_within(&mut child, Duration::from_secs(30)).is_some());
}
