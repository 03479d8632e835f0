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

/// Sends SIGCONT to a stopped process when dropped, whatever happened.
struct Stopped(u32);

impl Drop for Stopped {
    fn drop(&mut self) {
        kill(self.0, libc::SIGCONT);
    }
}

#[test]
fn a_trace_whose_recorder_is_still_storing_is_listed_as_finishing_and_export_waits_for_it() {
    let store = TempStore::new();
    let mut child = tee_command(&store.db, &[], &["cat"]).spawn().unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    let recorder = recorder_pid(&store.db);
    kill(recorder, libc::SIGSTOP);
    let _resume = Stopped(recorder);
    // Forwarded while the recorder cannot store anything.
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

    // An export started now waits for the recorder, which resumes only
    // after the export has begun: what it writes is the whole trace.
    let waiting = Command::new(bin())
        .args(["export", "--format", "ndjson", "--db"])
        .arg(&store.db)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // The export has read the trace's state at least once before the
    // recorder resumes when the store's file is open in it.
    let deadline = Instant::now() + Duration::from_secs(30);
    while !open_files(waiting.id()).iter().any(|f| f == &store.db) {
        assert!(Instant::now() < deadline, "the export never opened the store");
        std::thread::sleep(Duration::from_millis(5));
    }
    drop(_resume);
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
