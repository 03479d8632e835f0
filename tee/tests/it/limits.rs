//! Bounds the recorder keeps under load: the size of the store's log, and
//! what a stopped recorder does to forwarding. docs/reliability.md lists each case.
//!
//! These depend on speed: the recorder of a debug build stores slowly, which
//! hides some races. `ACP_TEE_LIMITS_BIN=path/to/release/acp-tee` runs them
//! against another binary (the release build, say).

use crate::common::*;
use acp_tee_shared::FrameKind;
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

#[test]
fn a_stopped_recorder_stalls_forwarding_after_about_a_mib_and_loses_nothing() {
    use std::io::Read;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;
    let store = TempStore::new();
    let lines = 200_000;
    let input: Vec<u8> = (0..lines)
        .flat_map(|i| {
            format!("{{\"jsonrpc\":\"2.0\",\"id\":{i},\"method\":\"m\",\"params\":{{\"pad\":\"{:040}\"}}}}\n", i)
                .into_bytes()
        })
        .collect();
    let mut cmd = tee(&store.db, &["cat"]);
    cmd.stdout(Stdio::piped());
    let mut child = cmd.spawn().unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut stdout = child.stdout.take().unwrap();
    // The first line alone, so the trace exists and the recorder is caught up.
    let first = input.iter().position(|&b| b == b'\n').unwrap() + 1;
    stdin.write_all(&input[..first]).unwrap();
    let mut echo = vec![0u8; first];
    stdout.read_exact(&mut echo).unwrap();
    store.wait_for_frames(2);
    let recorder = recorder_of(child.id());
    kill(recorder, libc::SIGSTOP);
    let received = Arc::new(AtomicUsize::new(0));
    let reader = {
        let received = received.clone();
        std::thread::spawn(move || {
            let mut out = echo;
            let mut buf = vec![0u8; 1 << 16];
            loop {
                match stdout.read(&mut buf) {
                    Ok(0) | Err(_) => return out,
                    Ok(n) => {
                        out.extend_from_slice(&buf[..n]);
                        received.fetch_add(n, Ordering::Relaxed);
                    }
                }
            }
        })
    };
    let rest = input[first..].to_vec();
    let feeder = std::thread::spawn(move || {
        let _ = stdin.write_all(&rest);
    });
    // Forwarding goes on until the pipes to the stopped recorder are full,
    // then waits: nothing crosses unrecorded.
    let deadline = Instant::now() + Duration::from_secs(60);
    let mut last = (usize::MAX, Instant::now());
    let stalled_at = loop {
        let now = received.load(Ordering::Relaxed);
        if now != last.0 {
            last = (now, Instant::now());
        } else if last.1.elapsed() > Duration::from_secs(2) {
            break now;
        }
        assert!(Instant::now() < deadline, "forwarding never stalled");
        std::thread::sleep(Duration::from_millis(20));
    };
    resume(recorder);
    feeder.join().unwrap();
    let out = reader.join().unwrap();
    child.wait().unwrap();
    eprintln!("with the recorder stopped, {stalled_at} bytes were forwarded to the client");
    assert!(stalled_at >= 1 << 20, "forwarding stopped after {stalled_at} bytes");
    assert!(stalled_at < input.len() / 2, "forwarding did not wait for the stopped recorder");
    assert!(out == input, "the echo differs");
    let trace = store.only_trace();
    assert_eq!((trace.frame_count, trace.missing_frames), (2 * lines as i64, 0));
}

/// The most resident memory `pid` had (`VmHWM`), in bytes, while it lives.
fn peak_rss(pid: u32) -> Option<u64> {
    status_bytes(pid, "VmHWM:")
}

/// A `/proc/PID/status` figure, in bytes.
fn status_bytes(pid: u32, field: &str) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = status.lines().find(|l| l.starts_with(field))?;
    line.split_whitespace().nth(1)?.parse::<u64>().ok().map(|kb| kb << 10)
}

/// The memory a process holds for its data (`RssAnon` + `RssShmem`): its
/// resident size without the pages of its binary, which depend on how it
/// was built (a debug build's code alone is some 18 MiB of `RssFile`).
fn data_rss(pid: u32) -> Option<u64> {
    Some(status_bytes(pid, "RssAnon:")? + status_bytes(pid, "RssShmem:").unwrap_or(0))
}

#[test]
fn the_recorders_memory_stays_under_64_mib_for_requests_nobody_answers() {
    let store = TempStore::new();
    // 300,000 requests echoed by `cat`: 600,000 frames, every one a request
    // nobody answers, so the pairer holds its limit of 100,000 and forgets
    // the oldest; plus bursts for the spool and the queue.
    let lines = 300_000;
    let input: Vec<u8> = (0..lines)
        .flat_map(|i| {
            format!("{{\"jsonrpc\":\"2.0\",\"id\":{i},\"method\":\"burst/item\",\"params\":{{\"n\":{i}}}}}\n")
                .into_bytes()
        })
        .collect();
    let mut cmd = tee(&store.db, &["cat"]);
    let mut child = cmd.spawn().unwrap();
    let recorder = recorder_of(child.id());
    let mut stdin = child.stdin.take().unwrap();
    let feeder = std::thread::spawn(move || {
        stdin.write_all(&input).unwrap();
    });
    let started = Instant::now();
    let (mut peak, mut hwm) = (0, 0);
    while let Some(rss) = data_rss(recorder).filter(|_| process_alive(recorder)) {
        peak = peak.max(rss);
        hwm = peak_rss(recorder).unwrap_or(hwm).max(hwm);
        assert!(started.elapsed() < Duration::from_secs(600), "the recorder did not finish in 10 minutes");
        std::thread::sleep(Duration::from_millis(20));
    }
    feeder.join().unwrap();
    child.wait().unwrap();
    let trace = store.only_trace();
    eprintln!(
        "{} frames; the recorder's data peaked at {} MiB (sampled every 20 ms), its whole RSS at {} MiB",
        trace.frame_count,
        peak >> 20,
        hwm >> 20
    );
    assert_eq!((trace.frame_count, trace.missing_frames), (2 * lines, 0));
    assert!(peak < 64 << 20, "the recorder's data peaked at {} MiB", peak >> 20);
}

/// A `session/prompt` request of exactly `size` bytes (newline included)
/// whose one text block fills it: lines of words, `\n` escapes between them.
fn prompt_line(size: usize) -> Vec<u8> {
    let head = br#"{"jsonrpc":"2.0","id":1,"method":"session/prompt","params":{"sessionId":"s1","prompt":[{"type":"text","text":""#;
    let tail = b"\"}]}}\n";
    let words = br"the quick brown fox jumps over the lazy dog\n";
    let mut line = head.to_vec();
    line.extend(words.iter().cycle().take(size - head.len() - tail.len()));
    // Never end the text inside an escape.
    if line.ends_with(b"\\") {
        *line.last_mut().unwrap() = b'.';
    }
    line.extend_from_slice(tail);
    line
}

#[test]
fn a_32_mib_line_is_stored_exactly_with_the_recorder_under_64_mib_plus_the_line() {
    let store = TempStore::new();
    let line = prompt_line(32 << 20);
    let mut cmd = tee(&store.db, &["cat"]);
    cmd.stdout(Stdio::piped());
    let mut child = cmd.spawn().unwrap();
    let recorder = recorder_of(child.id());
    let echoed = read_to_end_on_thread(child.stdout.take().unwrap());
    let mut stdin = child.stdin.take().unwrap();
    let feeder = {
        let line = line.clone();
        std::thread::spawn(move || stdin.write_all(&line).unwrap())
    };
    let started = Instant::now();
    let (mut hwm, mut code) = (0, 0);
    while let Some(peak) = peak_rss(recorder).filter(|_| process_alive(recorder)) {
        hwm = peak;
        code = status_bytes(recorder, "RssFile:").unwrap_or(0).max(code);
        assert!(started.elapsed() < Duration::from_secs(300), "the recorder did not finish in 5 minutes");
        std::thread::sleep(Duration::from_millis(5));
    }
    feeder.join().unwrap();
    child.wait().unwrap();
    let (out, _) = echoed.recv().unwrap();
    assert!(out == line, "the echo differs from the line");
    // The peak of the whole RSS (VmHWM, as the benchmark judges a release
    // build) without the binary's own pages, which depend on the build (a
    // debug build's are some 24 MiB, a release build's a few).
    let data = hwm.saturating_sub(code);
    let bound = (64 << 20) + line.len() as u64;
    eprintln!(
        "a {} MiB line: the recorder's VmHWM was {} MiB, {} MiB of it beyond its binary's pages",
        line.len() >> 20,
        hwm >> 20,
        data >> 20
    );
    assert!(data <= bound, "the recorder's data peaked at {} MiB, above 64 MiB + the line", data >> 20);
    let trace = store.only_trace();
    assert_eq!((trace.frame_count, trace.missing_frames), (2, 0));
    let frames = store.frames(trace.id);
    assert_eq!(frames.len(), 2);
    for frame in frames {
        assert!(frame.raw == line, "frame {} is not the line, byte for byte", frame.seq);
        assert_eq!((frame.kind, frame.method.as_deref()), (FrameKind::Request, Some("session/prompt")));
    }
}
