//! The recorder's two per-frame costs, measured apart: framing (split,
//! classify, pair, preview) and storing (the recorder's store writer with
//! its checkpoint thread, fed from a queue), on N frames (default 600,000)
//! of 300-byte `session/update` lines, half each way. Prints wall time per
//! frame for both and the writer thread's CPU time.
//!
//! For counts that do not move with machine load, run it under callgrind
//! and read the inclusive instructions of `FrameSplitter::push` (framing;
//! `Framer::chunk` around it may be inlined) and `Recording::insert_frames`
//! (BENCHMARKS.md says how), divided by N:
//!
//! ```sh
//! cargo build --release --example recorder_cost
//! valgrind --tool=callgrind target/release/examples/recorder_cost 60000
//! ```

use acp_tee::bench::{ByteQueue, StoreWriter, QUEUE_BYTES};
use acp_tee::{Framer, NewFrame, TraceEnd, TraceStart};
use acp_tee_shared::Direction;
use std::sync::Arc;
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
    let start = TraceStart {
        protocol: None,
        name: None,
        command: vec!["cat".into()],
        cwd: None,
        mode: "wrap".into(),
        started_at: "2026-01-01T00:00:00Z".into(),
    };
    let queue = Arc::new(ByteQueue::new(QUEUE_BYTES));
    let t = Instant::now();
    let writer = {
        let (queue, path) = (queue.clone(), dir.path().join("cost.db"));
        std::thread::spawn(move || {
            let mut writer = StoreWriter::open(&path, &start, None);
            let cpu0 = thread_cpu();
            writer.drain(&queue, || {});
            writer.finish(
                &TraceEnd { exit_code: Some(0), exit_signal: None, end_reason: "done".into() },
                &acp_tee::bench::now_rfc3339(),
            );
            (writer.written(), thread_cpu() - cpu0)
        })
    };
    let n = frames.len();
    for f in frames {
        queue.push(f);
    }
    queue.close();
    let (written, storing_cpu) = writer.join().expect("the writer");
    let storing = t.elapsed();
    assert_eq!(written, n as u64, "every frame stored");

    let per = |secs: f64| secs * 1e6 / n as f64;
    println!(
        "{} frames: framing {:.2} µs/frame; storing {:.2} µs/frame ({:.2} µs CPU)",
        n,
        per(framing.as_secs_f64()),
        per(storing.as_secs_f64()),
        per(storing_cpu)
    );
}
