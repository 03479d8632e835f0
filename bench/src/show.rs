//! `acp-tee show` of a trace of many concurrent sessions beside `acp-tee
//! check` of the same trace, in the same run: `show` must cost no more than
//! `check` (#32), one pass over the trace, not one per session.

use crate::procs::{self, mib};
use crate::report::{f, n, Report};
use crate::tracegen::{self, Sessions};
use crate::Config;
use anyhow::{bail, Context, Result};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// `show` on the most concurrent trace within this many times `check`'s
/// time: no dearer than `check` (#32).
pub const SHOW_OVER_CHECK_AT_MOST: f64 = 1.0;

/// One `show` run.
struct Shown {
    took: Duration,
    max_rss: u64,
}

/// `acp-tee show --format json` of trace `g` (`sessions` concurrent ones,
/// some of which only `session/new` opens, under one id); fails unless the
/// document has every turn of every session (`g.prompts` in all).
fn show(acp_tee: &Path, db: &Path, g: &tracegen::Generated, sessions: u64) -> Result<Shown> {
    let t = Instant::now();
    let child = Command::new(acp_tee)
        .arg("show")
        .arg("--db")
        .arg(db)
        .args(["--trace", &g.trace_id.to_string(), "--format", "json"])
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .context("cannot start acp-tee show")?;
    let sampler = procs::RssSampler::start(child.id());
    let out = child.wait_with_output()?;
    let took = t.elapsed();
    let max_rss = sampler.finish().values().copied().max().unwrap_or(0);
    if !out.status.success() {
        bail!("acp-tee show exited with {:?}", out.status);
    }
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).context("acp-tee show printed no JSON")?;
    // Every session of the overview, each with all of its turns.
    let summaries = doc["overview"]["sessions"].as_array().cloned().unwrap_or_default();
    let listed = doc["sessions"].as_array().cloned().unwrap_or_default();
    let mut turns = 0;
    for (summary, s) in summaries.iter().zip(&listed) {
        let have = s["turns"].as_array().map_or(0, Vec::len) as u64;
        if have != summary["turns"].as_u64().unwrap_or(0) || s["session_id"] != summary["session_id"] {
            bail!("LOSS: acp-tee show gave session {} {have} of its {} turns", summary["session_id"], summary["turns"]);
        }
        turns += have;
    }
    if listed.len() != summaries.len() || (listed.len() as u64) < sessions * 9 / 10 || turns != g.prompts {
        bail!(
            "LOSS: acp-tee show listed {} of {} sessions and {turns} turns; the trace has {} turns",
            listed.len(),
            summaries.len(),
            g.prompts
        );
    }
    Ok(Shown { took, max_rss })
}

/// The section: for each count of concurrent sessions, a trace recorded
/// through acp-tee, then `show` and `check` of it, timed.
pub fn section(cfg: &Config, report: &mut Report) -> Result<()> {
    report.say("## 8. Show on concurrent sessions\n");
    let (target, counts): (u64, &[u64]) = if cfg.quick { (20_000, &[10, 100]) } else { (200_000, &[10, 100, 1000]) };
    report.say(&format!(
        "A trace of {} frames per row, recorded as in \"Generated traces\" but with request `i` in session \
         `sess-{{i % N}}`: N sessions at once, their turns interleaved. `acp-tee show --format json` (every \
         turn of every session; the run fails unless the document holds them all) and `acp-tee check --format \
         json` of the same trace, taking turns {} times, wall time and sampled peak `VmHWM`; the ratio is all \
         the `show` time over all the `check` time.\n",
        n(target),
        cfg.reps
    ));
    let db = cfg.work.join("sessions.db");
    let mut rows = Vec::new();
    let mut last_ratio = f64::NAN;
    for &sessions in counts {
        let g = tracegen::generate(
            &cfg.acp_tee,
            &db,
            &format!("concurrent-{sessions}"),
            target,
            Sessions::Concurrent(sessions),
        )?;
        // Taking turns, so that a change in the machine's load falls on both.
        let (mut shows, mut checks, mut rss) = (Vec::new(), Vec::new(), 0);
        for _ in 0..cfg.reps {
            let s = show(&cfg.acp_tee, &db, &g, sessions).with_context(|| format!("show of {sessions} sessions"))?;
            let c = crate::check::run(&cfg.acp_tee, &db, g.trace_id, g.frames)
                .with_context(|| format!("check of {sessions} sessions"))?;
            shows.push(s.took.as_secs_f64());
            checks.push(c.took.as_secs_f64());
            rss = rss.max(s.max_rss);
        }
        // Pooled: all the runs' show time over all the runs' check time.
        let ratio = shows.iter().sum::<f64>() / checks.iter().sum::<f64>();
        last_ratio = ratio;
        let each = |v: &[f64]| v.iter().map(|x| f(*x, 2)).collect::<Vec<_>>().join(" / ");
        rows.push(vec![
            n(sessions),
            n(g.frames),
            n(g.prompts),
            each(&shows),
            each(&checks),
            f(ratio, 2),
            f(mib(rss), 1),
        ]);
    }
    report.table(
        &[
            "sessions",
            "frames",
            "turns",
            "show s, each run",
            "check s, each run",
            "show / check, pooled",
            "show peak RSS MiB",
        ],
        &rows,
    );
    let most = counts.last().copied().unwrap_or(0);
    let v = report.verdict(
        &format!("show on {most} sessions ≤ {SHOW_OVER_CHECK_AT_MOST} × check"),
        last_ratio <= SHOW_OVER_CHECK_AT_MOST,
    );
    report.say(&format!(
        "Target: `show` on {} concurrent sessions within {SHOW_OVER_CHECK_AT_MOST} × `check`'s time on the same trace: {} ×: {v}\n",
        n(most),
        f(last_ratio, 2)
    ));
    Ok(())
}
