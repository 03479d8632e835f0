//! The recorder's two per-frame costs, measured apart: framing (split,
//! classify, pair, preview) and storing (the store writer's inserts), on N
//! frames (default 600,000) of 300-byte `session/update` lines, half each
//! way. Prints wall time per frame for both and the writer's CPU time.
//!
//! For counts that do not move with machine load, run it under callgrind
//! and read the inclusive instructions of `Framer::chunk` and
//! `Store::insert_frames` (BENCHMARKS.md quotes them):
//!
//! ```sh
//! cargo build --release --example recorder_cost
//! valgrind --tool=callgrind target/release/examples/recorder_cost 60000
//! ```

use acp_tee::handoff::TraceStart;
use acp_tee::recorder::Framer;
use acp_tee::store::{NewFrame, Store};
use acp_tee_shared::Direction;
use std::time::Instant;

/// CPU seconds the calling thread has used.
fn thread_cpu() -> f64 {
    // SAFETY: getrusage fills the zeroed struct we own.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    unsafe { libc::getrusage(libc::RUSAGE_THREAD, &mut ru) };
    let secs = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    secs(ru.ru_utime) + secs(ru.ru_stime)
}

/// A `session/update` line of exactly `size` bytes.
fn line(size: usize) -> Vec<u8> {
    let head = r#"{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"sess-1","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":""#;
    let tail = "\"}}}}\n";
    let words = b"the quick brown fox jumps over the lazy dog ";
    let mut out = head.as_bytes().to_vec();
    out.extend((0..size - head.len() - tail.len()).map(|i| words[i % words.len()]));
    out.extend_from_slice(tail.as_bytes());
    out
}

fn main() {
    let n: usize = std::env::args().nth(1).map(|s| s.parse().expect("a frame count")).unwrap_or(600_000);
    let data = line(300).repeat(n / 2);

    let t = Instant::now();
    let mut framer = Framer::new();
    let mut frames: Vec<NewFrame> = Vec::with_capacity(n);
    for (i, chunk) in data.chunks(64 * 1024).enumerate() {
        framer.chunk(Direction::ClientToAgent, i as u64, chunk, |f| frames.push(f));
        framer.chunk(Direction::AgentToClient, i as u64, chunk, |f| frames.push(f));
    }
    let framing = t.elapsed();

    let dir = tempfile::tempdir().expect("a temporary directory");
    let store = Store::create_or_open(&dir.path().join("cost.db")).expect("a new store");
    store.tune_for_recording().expect("recording settings");
    let start = TraceStart {
        name: None,
        command: vec!["cat".into()],
        cwd: None,
        mode: "wrap".into(),
        started_at: "2026-01-01T00:00:00Z".into(),
    };
    let id = store.create_trace(&start, std::process::id()).expect("a trace");
    let mut store = store;
    let (cpu0, t) = (thread_cpu(), Instant::now());
    for batch in frames.chunks(4096) {
        store.insert_frames(id, batch).expect("stored");
    }
    let (storing, storing_cpu) = (t.elapsed(), thread_cpu() - cpu0);

    let per = |secs: f64| secs * 1e6 / frames.len() as f64;
    println!(
        "{} frames: framing {:.2} µs/frame; storing {:.2} µs/frame ({:.2} µs CPU)",
        frames.len(),
        per(framing.as_secs_f64()),
        per(storing.as_secs_f64()),
        per(storing_cpu)
    );
}
