//! Sections 1–3 of the report: throughput, round trip, ingest and memory,
//! each relay measured by the same code in the same run.

use crate::procs::mib;
use crate::relay::Relay;
use crate::report::{f, n, Report};
use crate::stats::{median, Percentiles};
use crate::throughput::{self, size_name, Run};
use crate::{rtt, Config};
use anyhow::{Context, Result};
use std::collections::BTreeMap;

/// acp-tee's throughput runs by line size, reused by the ingest section.
pub type AcpTeeRuns = BTreeMap<usize, Vec<Run>>;

/// The successful run with the median delivered rate, if any succeeded.
fn median_run(runs: &[Run]) -> Option<&Run> {
    let mut ok: Vec<&Run> = runs.iter().filter(|r| r.failure.is_none()).collect();
    ok.sort_by(|a, b| a.mb_per_s().total_cmp(&b.mb_per_s()));
    ok.get(ok.len() / 2).copied()
}

/// acp-tee's throughput at least, as a share of the cat relay's (#21: a
/// relay that splices moves bytes with fewer copies than `cat`; what the
/// recorder's copy costs on two cores shows in the `cores busy` column).
const THROUGHPUT_AT_LEAST: f64 = 1.0;

/// Section 1: one-way throughput through every relay; returns acp-tee's runs.
pub fn throughput(cfg: &Config, report: &mut Report) -> Result<AcpTeeRuns> {
    report.say("## 1. One-way throughput\n");
    report.say(
        "Topology (identical for every row): bench client → [relay c→a] → agent `cat` → [relay a→c] → bench \
         client. `direct pipe` has no relay; `cat relay` is `sh -c 'cat | cat | cat'`. The clock runs from the \
         first byte written (after one handshake line went round) to the last line delivered. Recording relays \
         must store 2 × (N + 1) frames (both directions, handshake included); any loss aborts the run. \
         Median of the repetitions by delivered rate.\n",
    );
    let mut acp = AcpTeeRuns::new();
    let mut rows = Vec::new();
    for (size, full, quick) in throughput::SIZES {
        let count = if cfg.quick { quick } else { full };
        let payload = throughput::payload(size, count);
        let mut by_relay: Vec<(Relay, Vec<Run>)> = Relay::all().into_iter().map(|r| (r, Vec::new())).collect();
        // Interleave relays within each repetition so drifts in machine load hit all alike.
        for rep in 0..cfg.reps {
            for (relay, runs) in by_relay.iter_mut() {
                let dir = cfg.work.join(format!("tp-{size}-{}-{rep}", relay.name().replace(' ', "_")));
                let run = throughput::run(relay, &cfg.acp_tee, &dir, size, payload.clone())?;
                std::fs::remove_dir_all(&dir)?;
                runs.push(run);
            }
        }
        let cat = median_run(&by_relay.iter().find(|(r, _)| *r == Relay::Cat).expect("cat relay").1)
            .context("the cat relay failed every run")?
            .mb_per_s();
        for (relay, runs) in &by_relay {
            let Some(m) = median_run(runs) else {
                let why = runs[0].failure.clone().unwrap_or_default();
                rows.push(vec![
                    size_name(size),
                    n(count),
                    relay.name().into(),
                    why,
                    "".into(),
                    "".into(),
                    "".into(),
                    "".into(),
                    "".into(),
                    "".into(),
                    "".into(),
                    "".into(),
                ]);
                continue;
            };
            let ratio = m.mb_per_s() / cat;
            let stored = m.recorded.map_or("—".into(), |r| format!("{} / {}", n(r.frames), n(2 * (count + 1))));
            let (target, verdict) = if *relay == Relay::AcpTee {
                let ok = ratio >= THROUGHPUT_AT_LEAST;
                (
                    format!(">= {THROUGHPUT_AT_LEAST:.1} × cat, 100% stored"),
                    report.verdict(&format!("throughput {}", size_name(size)), ok),
                )
            } else {
                (String::new(), String::new())
            };
            let spread: Vec<String> =
                runs.iter().map(|r| r.failure.clone().unwrap_or_else(|| f(r.mb_per_s(), 0))).collect();
            let busy = |r: &Run| r.cpu.values().sum::<f64>() / r.deliver.as_secs_f64();
            let cpu: Vec<String> = m
                .cpu
                .iter()
                .filter(|(_, s)| **s >= 0.005)
                .map(|(role, s)| format!("{role} {}", f(s / m.deliver.as_secs_f64(), 2)))
                .collect();
            rows.push(vec![
                size_name(size),
                n(count),
                relay.name().into(),
                f(m.mb_per_s(), 1),
                n(m.msgs_per_s() as u64),
                f(ratio, 2),
                spread.join(", "),
                f(m.exit.as_secs_f64() / m.deliver.as_secs_f64(), 2),
                format!("{} ({})", f(busy(m), 2), cpu.join(", ")),
                stored,
                target,
                verdict,
            ]);
        }
        if let Some((_, runs)) = by_relay.into_iter().find(|(r, _)| *r == Relay::AcpTee) {
            acp.insert(size, runs);
        }
    }
    report.table(
        &[
            "line",
            "N",
            "relay",
            "MB/s",
            "msgs/s",
            "× cat relay",
            "each rep MB/s",
            "exit / delivered",
            "cores busy (by process)",
            "stored",
            "target",
            "",
        ],
        &rows,
    );
    report.say(
        "`exit / delivered`: the relay's exit time (acp-tee: its recorder has ended the trace) over the delivery \
         time; above 1 means recording finished after the last line was delivered. `cores busy`: CPU seconds \
         used from the first byte written to the last line delivered, over that time (the machine has 2 \
         cores), in all and per process: `client` is this benchmark's writer and reader, `relay` the relay \
         (for the cat relay, its `sh`), `recorder` acp-tee's recorder, `cat` the agent (and the cat relay's \
         copying processes).\n",
    );
    Ok(acp)
}

/// Round-trip repetitions per repetition of the other relay sections (they
/// are short: 2,000 round trips).
const RTT_REPS_PER_REP: usize = 4;

/// Round trips per relay pooled for the judged percentiles, at least (a full
/// run; `--quick` judges nothing).
const RTT_POOLED_AT_LEAST: usize = 20_000;

/// Section 2: request/response ping-pong through every relay.
pub fn round_trip(cfg: &Config, report: &mut Report) -> Result<()> {
    report.say("## 2. Round-trip latency\n");
    let iters = if cfg.quick { 300 } else { 2_000 };
    // Short repetitions, the relays taking turns, so that a moment of load on
    // this shared machine falls on every relay alike. The figures judged are
    // pooled over every round trip of a relay: the tail a user sees, which a
    // median of per-repetition percentiles would hide.
    let reps =
        (RTT_REPS_PER_REP * cfg.reps).max(RTT_POOLED_AT_LEAST.div_ceil(iters as usize) * usize::from(!cfg.quick));
    report.say(&format!(
        "One 200-byte request line, then wait for its echo from the `cat` agent, {iters} times after {} untimed \
         warm-up round trips; same topology as section 1. {reps} repetitions, the relays taking turns. Per relay: \
         p50/p99/p99.9/max pooled over all {} round trips, in µs (judged), and each repetition's p99 \
         (shown, not judged).\n",
        rtt::WARMUP,
        reps * iters as usize,
    ));
    let relays = Relay::all();
    let mut samples: Vec<Vec<f64>> = vec![Vec::new(); relays.len()];
    let mut runs: Vec<Vec<Percentiles>> = vec![Vec::new(); relays.len()];
    for rep in 0..reps {
        for (i, relay) in relays.iter().enumerate() {
            let dir = cfg.work.join(format!("rtt-{}-{rep}", relay.name().replace(' ', "_")));
            let times = rtt::run(relay, &cfg.acp_tee, &dir, iters)?;
            runs[i].push(Percentiles::of(&times));
            samples[i].extend(times);
            std::fs::remove_dir_all(&dir)?;
        }
    }
    let pooled: Vec<Percentiles> = samples.iter().map(|s| Percentiles::of(s)).collect();
    let cat = pooled[relays.iter().position(|r| *r == Relay::Cat).expect("cat relay")];
    let mut rows = Vec::new();
    for (i, relay) in relays.iter().enumerate() {
        let m = pooled[i];
        let each99: Vec<String> = runs[i].iter().map(|p| f(p.p99, 0)).collect();
        let (target, verdict) = if *relay == Relay::AcpTee {
            let ok50 = m.p50 <= cat.p50 + 10.0;
            let ok99 = m.p99 <= 1.5 * cat.p99;
            let v50 = report.verdict("round trip p50", ok50);
            let v99 = report.verdict("round trip p99", ok99);
            (format!("p50 <= cat + 10 µs: {v50}; p99 <= 1.5 × cat: {v99}"), String::new())
        } else {
            (String::new(), String::new())
        };
        rows.push(vec![
            relay.name().into(),
            f(m.p50, 1),
            f(m.p99, 1),
            f(m.p999, 1),
            f(m.max, 0),
            each99.join(", "),
            format!("{:+.1}", m.p50 - cat.p50),
            f(m.p99 / cat.p99, 2),
            target + &verdict,
        ]);
    }
    report.table(
        &["relay", "p50 µs", "p99 µs", "p99.9 µs", "max µs", "each rep p99", "p50 − cat", "p99 / cat", "target"],
        &rows,
    );
    Ok(())
}

/// Section 3: the recorder's ingest rate and peak memory at maximum rate.
pub fn ingest(cfg: &Config, report: &mut Report, mut acp: AcpTeeRuns) -> Result<()> {
    report.say("## 3. Store ingest and memory at maximum rate\n");
    report.say(
        "acp-tee -- cat fed as fast as it takes lines (section 1's runs for 300 B and 64 KiB, new runs for \
         1, 8 and 32 MiB). Ingest = frames stored / time from the first byte written to the trace's end (acp-tee exits \
         when the run ends; its recorder ends the trace once all is stored). Peak RSS: `VmHWM` of the relay process and of the \
         `acp-tee __recorder` process, sampled every 5 ms (the maximum over repetitions). Targets: both under 64 MiB; \
         for lines of 1 MiB and more, the recorder at most 64 MiB plus one line (it holds a line once: `cat` echoes \
         each, so two frames of that size cross).\n",
    );
    let mut rows = Vec::new();
    for (size, full, quick) in throughput::INGEST_SIZES {
        let count = if cfg.quick { quick } else { full };
        if let std::collections::btree_map::Entry::Vacant(slot) = acp.entry(size) {
            let payload = throughput::payload(size, count);
            let mut runs = Vec::new();
            for rep in 0..cfg.reps {
                let dir = cfg.work.join(format!("ingest-{size}-{rep}"));
                runs.push(throughput::run(&Relay::AcpTee, &cfg.acp_tee, &dir, size, payload.clone())?);
                std::fs::remove_dir_all(&dir)?;
            }
            slot.insert(runs);
        }
        let runs = &acp[&size];
        let rates: Vec<f64> = runs.iter().map(Run::frames_per_s).collect();
        let rate = median(&rates);
        let frames = runs[0].recorded.map_or(0, |r| r.frames);
        let mbs = median(&runs.iter().map(|r| 2.0 * r.bytes as f64 / 1e6 / r.exit.as_secs_f64()).collect::<Vec<_>>());
        let peak = |role: &str| runs.iter().filter_map(|r| r.peaks.get(role).copied()).max().unwrap_or(0);
        let (relay_rss, rec_rss) = (peak("relay"), peak("recorder"));
        let mut target = if size < throughput::LARGE_LINE {
            let rss_ok = relay_rss.max(rec_rss) < 64 << 20;
            format!("RSS < 64 MiB: {}", report.verdict(&format!("peak RSS {}", size_name(size)), rss_ok))
        } else {
            let relay_ok = report.verdict(&format!("relay peak RSS {}", size_name(size)), relay_rss < 64 << 20);
            let rec_ok = rec_rss <= (64 << 20) + size as u64;
            let rec_ok = report.verdict(&format!("recorder peak RSS {}", size_name(size)), rec_ok);
            format!("relay < 64 MiB: {relay_ok}; recorder <= 64 MiB + line: {rec_ok}")
        };
        if size == 300 {
            let v = report.verdict("ingest >= 300,000 frames/s", rate >= 300_000.0);
            target = format!("ingest >= 300,000/s: {v}; {target}");
        }
        rows.push(vec![
            size_name(size),
            n(frames),
            n(rate as u64),
            rates.iter().map(|r| n(*r as u64)).collect::<Vec<_>>().join(", "),
            f(mbs, 0),
            f(mib(relay_rss), 1),
            f(mib(rec_rss), 1),
            target,
        ]);
    }
    report.table(
        &["line", "frames / run", "ingest frames/s", "each rep", "stored MB/s", "relay MiB", "recorder MiB", "target"],
        &rows,
    );
    Ok(())
}
