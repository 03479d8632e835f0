//! Round-trip latency: the client sends one request line and waits for its
//! echo (the `cat` agent's) before sending the next, through each relay.

use crate::procs;
use crate::relay::{self, Relay};
use crate::stats::us;
use anyhow::{bail, Context, Result};
use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::time::Instant;

/// Bytes per request line.
const LINE: usize = 200;

/// Round trips not timed at the start (page faults, first allocations).
pub const WARMUP: u64 = 200;

/// Runs `iters` timed round trips through `relay` in the new directory `dir`;
/// returns each one's time in microseconds, in order. Fails on any loss.
pub fn run(relay: &Relay, acp_tee: &Path, dir: &Path, iters: u64) -> Result<Vec<f64>> {
    std::fs::create_dir_all(dir)?;
    let (mut cmd, record) = relay::command(relay, acp_tee, dir);
    let mut child = cmd.spawn().with_context(|| format!("cannot start {}", relay.name()))?;
    let mut stdin = child.stdin.take().context("stdin")?;
    let mut stdout = BufReader::new(child.stdout.take().context("stdout")?);
    let mut samples = Vec::with_capacity(iters as usize);
    let mut echo = Vec::with_capacity(LINE);
    for i in 0..WARMUP + iters {
        let req = relay::line(LINE, Some(i));
        let t = Instant::now();
        stdin.write_all(&req)?;
        stdin.flush()?;
        echo.clear();
        stdout.read_until(b'\n', &mut echo)?;
        let elapsed = t.elapsed();
        if echo != req {
            bail!("LOSS through {}: round trip {i} came back as {} bytes", relay.name(), echo.len());
        }
        if i >= WARMUP {
            samples.push(us(elapsed));
        }
    }
    drop(stdin);
    let mut rest = Vec::new();
    std::io::Read::read_to_end(&mut stdout, &mut rest)?;
    let exit = procs::wait4(&mut child)?;
    if exit.code != 0 || !rest.is_empty() {
        bail!("{} exited with {} after {} unexpected bytes", relay.name(), exit.code, rest.len());
    }
    // acp-tee exits when the run ends; its recorder may still be storing.
    if let relay::Record::Store(db) = &record {
        relay::wait_trace_end(db, None)?;
    }
    relay::check_recorded(&record, 2 * (WARMUP + iters))?;
    Ok(samples)
}
