//! `acp-tee check` of a large trace: time, frames per second and peak
//! memory (`VmHWM` of the check process, sampled, as for exports).

use crate::procs;
use anyhow::{bail, Context, Result};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// One check run.
#[derive(Debug, Clone)]
pub struct Checked {
    /// Wall time of the process.
    pub took: Duration,
    /// Its peak RSS, bytes.
    pub max_rss: u64,
    /// Findings by severity: errors, warnings, infos.
    pub counts: (u64, u64, u64),
}

/// Checks trace `id` of `db`; fails unless every one of its `frames` frames
/// was read.
pub fn run(acp_tee: &Path, db: &Path, id: i64, frames: u64) -> Result<Checked> {
    let t = Instant::now();
    let child = Command::new(acp_tee)
        .arg("check")
        .arg("--db")
        .arg(db)
        .args(["--trace", &id.to_string(), "--format", "json", "--min-severity", "error"])
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .context("cannot start acp-tee check")?;
    let sampler = procs::RssSampler::start(child.id());
    let out = child.wait_with_output()?;
    let took = t.elapsed();
    let max_rss = sampler.finish().values().copied().max().unwrap_or(0);
    if !matches!(out.status.code(), Some(0 | 1)) {
        bail!("acp-tee check exited with {:?}", out.status);
    }
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).context("acp-tee check printed no JSON")?;
    let trace = &doc["traces"][0];
    let read = trace["frames"].as_u64().unwrap_or(0);
    if read != frames {
        bail!("LOSS: acp-tee check read {read} frames of trace {id}, which holds {frames}");
    }
    let count = |k: &str| trace["counts"][k].as_u64().unwrap_or(0);
    Ok(Checked { took, max_rss, counts: (count("errors"), count("warnings"), count("infos")) })
}
