//! One-way throughput: the client writes N lines of one size as fast as the
//! relay takes them, the `cat` agent echoes them, the client counts what comes
//! back. The clock starts after one handshake line went round (every process
//! is up) and stops when the N-th line is delivered; the relay's exit (for
//! acp-tee: after its recorder ended the trace) is timed too.

use crate::procs::{self, Peaks, RssSampler};
use crate::relay::{self, Record, Recorded, Relay};
use anyhow::{bail, Context, Result};
use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Bytes of the handshake line.
const HANDSHAKE: usize = 300;

/// A relay that delivers nothing for this long is stuck and killed.
const STALL: Duration = Duration::from_secs(10);

/// Kills a process when the bytes it delivered stop growing for [`STALL`].
struct Watchdog {
    progress: Arc<AtomicU64>,
    done: Arc<AtomicBool>,
    fired: Arc<AtomicBool>,
    thread: std::thread::JoinHandle<()>,
}

impl Watchdog {
    fn start(pid: u32) -> Watchdog {
        let progress = Arc::new(AtomicU64::new(0));
        let (done, fired) = (Arc::new(AtomicBool::new(false)), Arc::new(AtomicBool::new(false)));
        let (p, d, f) = (progress.clone(), done.clone(), fired.clone());
        let thread = std::thread::spawn(move || {
            let (mut last, mut since) = (0, Instant::now());
            while !d.load(Ordering::Relaxed) {
                std::thread::sleep(Duration::from_millis(50));
                let now = p.load(Ordering::Relaxed);
                if now != last {
                    (last, since) = (now, Instant::now());
                } else if since.elapsed() > STALL {
                    f.store(true, Ordering::Relaxed);
                    // SAFETY: kill has no memory-safety preconditions; the pid is our unreaped child.
                    unsafe { libc::kill(pid as i32, libc::SIGKILL) };
                    return;
                }
            }
        });
        Watchdog { progress, done, fired, thread }
    }

    fn progress(&self, bytes: u64) {
        self.progress.store(bytes, Ordering::Relaxed);
    }

    /// Stops watching; true if the process was killed as stuck.
    fn finish(self) -> bool {
        self.done.store(true, Ordering::Relaxed);
        let _ = self.thread.join();
        self.fired.load(Ordering::Relaxed)
    }
}

/// The outcome of one throughput run.
#[derive(Debug, Clone)]
pub struct Run {
    /// Why a baseline's run does not count (stalled, lost lines); acp-tee
    /// runs never have one: they fail the benchmark instead.
    pub failure: Option<String>,
    /// Lines delivered back to the client (excluding the handshake).
    pub delivered: u64,
    /// Bytes delivered (excluding the handshake).
    pub bytes: u64,
    /// First byte written to last line delivered.
    pub deliver: Duration,
    /// First byte written to the relay's exit (acp-tee exits after its
    /// recorder has ended the trace).
    pub exit: Duration,
    /// What the relay recorded, if it records.
    pub recorded: Option<Recorded>,
    /// Peak RSS per process role, sampled.
    pub peaks: Peaks,
    /// CPU seconds per process role from the first byte written to the
    /// last line delivered (see [`procs::cpu_by_role`]).
    pub cpu: BTreeMap<String, f64>,
}

impl Run {
    /// Delivered megabytes (10^6) per second.
    pub fn mb_per_s(&self) -> f64 {
        self.bytes as f64 / 1e6 / self.deliver.as_secs_f64()
    }

    /// Delivered messages per second.
    pub fn msgs_per_s(&self) -> f64 {
        self.delivered as f64 / self.deliver.as_secs_f64()
    }

    /// Frames recorded per second, first byte to the end of the trace.
    pub fn frames_per_s(&self) -> f64 {
        self.recorded.map_or(0.0, |r| r.frames as f64 / self.exit.as_secs_f64())
    }
}

/// `count` lines of `size` bytes, concatenated.
pub fn payload(size: usize, count: u64) -> Arc<Vec<u8>> {
    let line = relay::line(size, None);
    let mut out = Vec::with_capacity(size * count as usize);
    for _ in 0..count {
        out.extend_from_slice(&line);
    }
    Arc::new(out)
}

/// Runs `payload` (whole lines of `size` bytes) through `relay` once, in a
/// new directory `dir`; fails on any loss.
pub fn run(relay: &Relay, acp_tee: &Path, dir: &Path, size: usize, payload: Arc<Vec<u8>>) -> Result<Run> {
    std::fs::create_dir_all(dir)?;
    let (mut cmd, record) = relay::command(relay, acp_tee, dir);
    let mut child = cmd.spawn().with_context(|| format!("cannot start {}", relay.name()))?;
    let sampler = RssSampler::start(child.id());
    let mut stdin = child.stdin.take().context("stdin")?;
    let mut stdout = child.stdout.take().context("stdout")?;
    let expected = (payload.len() / size) as u64;

    // Handshake: one short line round trip, so that start-up is not timed.
    let handshake = relay::line(HANDSHAKE, None);
    stdin.write_all(&handshake)?;
    stdin.flush()?;
    let mut buf = vec![0u8; 1 << 20];
    let mut seen = 0usize;
    while seen < HANDSHAKE {
        let n = stdout.read(&mut buf)?;
        if n == 0 {
            bail!("{} closed before echoing the handshake line", relay.name());
        }
        seen += n;
    }

    // stdin is closed only once every line is back: some relays (sacp-tee)
    // drop what the agent had not yet answered when the client closes first.
    let (close_tx, close_rx) = std::sync::mpsc::channel::<()>();
    let cpu_at_start = procs::cpu_by_role(child.id());
    let t0 = Instant::now();
    let writer = std::thread::spawn(move || -> std::io::Result<()> {
        stdin.write_all(&payload)?;
        let _ = close_rx.recv();
        drop(stdin);
        Ok(())
    });
    let mut close_tx = Some(close_tx);
    let watchdog = Watchdog::start(child.id());
    let (mut lines, mut bytes, mut delivered_at) = (0u64, 0u64, None);
    let mut cpu = BTreeMap::new();
    loop {
        let n = match stdout.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e.into()),
        };
        bytes += n as u64;
        watchdog.progress(bytes);
        lines += memchr::memchr_iter(b'\n', &buf[..n]).count() as u64;
        if lines >= expected && delivered_at.is_none() {
            delivered_at = Some(t0.elapsed());
            let now = procs::cpu_by_role(child.id());
            cpu = now.iter().map(|(role, s)| (role.clone(), s - cpu_at_start.get(role).unwrap_or(&0.0))).collect();
            close_tx.take();
        }
    }
    drop(close_tx);
    let exit = procs::wait4(&mut child)?;
    // The run is recorded once its trace ended (the recorder may still be
    // storing when acp-tee exits); its memory is sampled until then.
    if let Record::Store(db) = &record {
        relay::wait_trace_end(db, None)?;
    }
    let exit_t = t0.elapsed();
    let peaks = sampler.finish();
    let stalled = watchdog.finish();
    let written = writer.join().expect("writer thread");
    let mut failure = None;
    let mut recorded = None;
    if stalled {
        failure = Some(format!("STALLED: no byte for {} s after {lines} of {expected} lines; killed", STALL.as_secs()));
    } else if lines != expected || bytes != expected * size as u64 {
        failure = Some(format!("LOSS: {lines} of {expected} lines, {bytes} bytes delivered"));
    } else if let Err(e) = written {
        failure = Some(format!("writing to it failed: {e}"));
    } else if exit.code != 0 {
        failure = Some(format!("exited with {}", exit.code));
    } else {
        // Both directions: the handshake and every line, each way.
        match relay::check_recorded(&record, 2 * (expected + 1)) {
            Ok(r) => recorded = r,
            Err(e) => failure = Some(format!("{e:#}")),
        }
    }
    if let (Some(f), Relay::AcpTee) = (&failure, relay) {
        bail!("acp-tee, {} lines of {}: {f}", expected, size_name(size));
    }
    Ok(Run {
        failure,
        delivered: lines,
        bytes,
        deliver: delivered_at.unwrap_or(exit_t),
        exit: exit_t,
        recorded,
        peaks,
        cpu,
    })
}

/// Line counts per size: (size, lines in full mode, lines in quick mode).
pub const SIZES: [(usize, u64, u64); 2] = [(300, 300_000, 20_000), (64 * 1024, 2_000, 100)];

/// Sizes for the ingest and memory runs (acp-tee only), including lines of
/// 1, 8 and 32 MiB (from [`LARGE_LINE`] the recorder's bound is 64 MiB plus
/// the line).
pub const INGEST_SIZES: [(usize, u64, u64); 5] =
    [(300, 300_000, 20_000), (64 * 1024, 2_000, 100), (1 << 20, 150, 10), (8 << 20, 12, 3), (32 << 20, 4, 2)];

/// Lines from this size on are judged by the recorder's bound for large
/// lines: peak RSS at most 64 MiB plus the line (it holds a line once).
pub const LARGE_LINE: usize = 1 << 20;

/// A size for humans.
pub fn size_name(size: usize) -> String {
    match size {
        s if s >= 1 << 20 => format!("{} MiB", s >> 20),
        s if s >= 1024 => format!("{} KiB", s >> 10),
        s => format!("{s} B"),
    }
}
