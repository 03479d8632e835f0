//! Bounds the recorder keeps under load: the size of the store's log, and
//! what a stopped recorder does to forwarding. RELIABILITY.md lists each case.
//!
//! These depend on speed: the recorder of a debug build stores slowly, which
//! hides some races. `ACP_TEE_LIMITS_BIN=path/to/release/acp-tee` runs them
//! against another binary (the release build, say).

mod common;

use common::*;
use std::io::Write;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// The binary under test here: `ACP_TEE_LIMITS_BIN` or the debug build.
fn limits_bin() -> String {
    std::env::var("ACP_TEE_LIMITS_BIN").unwrap_or_else(|_| bin().to_owned())
}

/// `acp-tee --db DB -- agent...` with piped stdio, from [`limits_bin`].
fn tee(db: &std::path::Path, agent: &[&str]) -> Command {
    let mut cmd = Command::new(limits_bin());
    cmd.arg("--db").arg(db).arg("--").args(agent);
    cmd.stdin(Stdio::piped()).stdout(Stdio::null()).stderr(Stdio::inherit());
    cmd
}

#[test]
fn the_stores_log_stays_under_256_mib_while_a_burst_is_stored() {
    let store = TempStore::new();
    // 600 MB of 950-byte messages into an agent that reads and says nothing.
    let mut line =
        format!("{{\"jsonrpc\":\"2.0\",\"method\":\"session/update\",\"params\":{{\"t\":\"{}\"}}}}", "a".repeat(890));
    line.push('\n');
    let total = 600usize << 20;
    let mut child = tee(&store.db, &["sh", "-c", "cat >/dev/null"]).spawn().unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let feeder = std::thread::spawn(move || {
        let chunk = line.repeat((1 << 20) / line.len());
        let mut sent = 0;
        while sent < total {
            stdin.write_all(chunk.as_bytes()).unwrap();
            sent += chunk.len();
        }
    });
    let log = {
        let mut name = store.db.as_os_str().to_owned();
        name.push("-wal");
        std::path::PathBuf::from(name)
    };
    let recorder = recorder_of(child.id());
    let started = Instant::now();
    let mut peak = 0u64;
    while process_alive(recorder) {
        peak = peak.max(std::fs::metadata(&log).map_or(0, |m| m.len()));
        assert!(started.elapsed() < Duration::from_secs(600), "the recorder did not finish in 10 minutes");
        std::thread::sleep(Duration::from_millis(10));
    }
    feeder.join().unwrap();
    child.wait().unwrap();
    let trace = store.only_trace();
    eprintln!("{} frames stored; the log peaked at {} MiB", trace.frame_count, peak >> 20);
    assert_eq!(trace.missing_frames, 0);
    assert!(peak < 256 << 20, "the log grew to {} MiB", peak >> 20);
}
