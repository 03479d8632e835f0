//! `acp-tee export` of a large trace: time and peak memory (`VmHWM` of the
//! export process, sampled; `wait4`'s `maxrss` is no use here: Linux folds
//! the spawning process's own peak into it at `exec`).

use crate::procs;
use anyhow::{bail, Context, Result};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// One export run.
#[derive(Debug, Clone, Copy)]
pub struct Exported {
    /// Wall time of the process.
    pub took: Duration,
    /// Its peak RSS, bytes.
    pub max_rss: u64,
    /// Bytes written.
    pub bytes: u64,
}

/// Exports trace `id` of `db` in `format` (`json` or `ndjson`) to `out`; for
/// ndjson checks that it holds one header and `frames` frame lines.
pub fn run(acp_tee: &Path, db: &Path, id: i64, format: &str, out: &Path, frames: u64) -> Result<Exported> {
    let t = Instant::now();
    let mut child = Command::new(acp_tee)
        .arg("export")
        .arg("--db")
        .arg(db)
        .args(["--trace", &id.to_string(), "--format", format, "-o"])
        .arg(out)
        .stdout(Stdio::null())
        .stderr(Stdio::inherit())
        .spawn()
        .context("cannot start acp-tee export")?;
    let sampler = procs::RssSampler::start(child.id());
    let exit = procs::wait4(&mut child)?;
    let took = t.elapsed();
    let max_rss = sampler.finish().values().copied().max().unwrap_or(0);
    if exit.code != 0 {
        bail!("acp-tee export --format {format} exited with {}", exit.code);
    }
    let bytes = std::fs::metadata(out)?.len();
    if format == "ndjson" {
        let data = std::fs::read(out)?;
        let lines = memchr::memchr_iter(b'\n', &data).count() as u64;
        if lines != frames + 1 {
            bail!("LOSS: the ndjson export of trace {id} has {lines} lines, expected {} (header + frames)", frames + 1);
        }
    }
    std::fs::remove_file(out)?;
    Ok(Exported { took, max_rss, bytes })
}
