//! A trace whose recorder is still storing frames after acp-tee went away
//! is never listed or exported as if it were complete: `list` says
//! `finishing`, `export` waits for it (or, with `--no-wait`, says what it
//! holds), so a script that records then exports gets every frame.

mod common;

use common::*;
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
