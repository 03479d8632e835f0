//! `acp-tee-bench`: measures acp-tee side by side with its baselines in one
//! run and writes a Markdown report (BENCHMARKS.md is made from it).
//!
//! Usage: `acp-tee-bench [--quick] [--only SECTIONS] [--reps N] [--out FILE]
//! [--acp-tee PATH] [--dist DIR] [--work DIR] [--strict]`; `scripts/bench` runs it.
//!
//! # Layout
//! - [`relay`]: the relays compared and their common topology; [`throughput`]
//!   and [`rtt`] drive them; [`relays_section`] reports sections 1–3.
//! - [`tracegen`]: the answering agent and the large traces; [`server`],
//!   [`webdriver`], [`viewer`], [`export`] and [`check`] measure on them;
//!   [`trace_section`] reports sections 4–7; [`show`] records traces of
//!   concurrent sessions and is section 8; [`http_memory`] is section 9,
//!   `acp-tee http-proxy`'s memory under large messages both ways; [`prune`]
//!   is section 10, `acp-tee prune` of a store of thousands of traces while
//!   a recording goes on.
//! - [`procs`]: `wait4`, `VmHWM` sampling; [`stats`]: medians, percentiles;
//!   [`report`]: tables and the machine description.

mod check;
mod export;
mod http_memory;
mod procs;
mod prune;
mod relay;
mod relays_section;
mod report;
mod rtt;
mod server;
mod show;
mod stats;
mod throughput;
mod trace_section;
mod tracegen;
mod viewer;

use anyhow::{bail, Context, Result};
use report::Report;
use std::path::PathBuf;

/// The sections, in the order they run.
const SECTIONS: [&str; 10] =
    ["throughput", "rtt", "ingest", "server", "viewer", "export", "check", "show", "http", "prune"];

/// What to run, and where.
#[derive(Debug, Clone)]
pub struct Config {
    /// A smoke run of a few seconds: small counts, one repetition.
    pub quick: bool,
    /// Repetitions of each relay measurement, and of `show` and `check`.
    pub reps: usize,
    /// The acp-tee binary under test.
    pub acp_tee: PathBuf,
    /// The built viewer app.
    pub dist: PathBuf,
    /// Scratch directory (stores, logs, exports); removed at the end.
    pub work: PathBuf,
    /// Sections to run.
    pub only: Vec<String>,
    /// Where the report goes.
    pub out: PathBuf,
    /// Exit non-zero when a target fails (loss always does).
    pub strict: bool,
}

/// What `--help` adds to the usage line.
const HELP: &str = "Measures acp-tee beside a direct pipe, a `cat` relay and sacp-tee (when on PATH)
in one run and writes a Markdown report. A lost message or frame fails the run (exit 1).

  --quick          smoke run (~20 s): small counts, one repetition; checks that
                   nothing is lost but judges no target
  --only SECTIONS  run only these sections, comma-separated
  --reps N         repetitions of the relay sections and of show/check
                   (default 3, 1 with --quick); the round trips run 4 × N
                   shorter ones
  --out FILE       where the report goes (default target/bench-report.md)
  --acp-tee PATH   the binary measured (default target/release/acp-tee)
  --dist DIR       the built viewer (default dist/)
  --work DIR       scratch directory, removed afterwards (default target/bench-work)
  --strict         also exit 1 when a target does not hold";

fn usage() -> &'static str {
    "usage: acp-tee-bench [--quick] [--only throughput,rtt,ingest,server,viewer,export,check,show,http,prune] [--reps N] \
     [--out FILE] [--acp-tee PATH] [--dist DIR] [--work DIR] [--strict]"
}

fn parse_args(args: &[String]) -> Result<Config> {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..");
    let root = root.canonicalize().unwrap_or(root);
    let mut cfg = Config {
        quick: false,
        reps: 0,
        acp_tee: root.join("target/release/acp-tee"),
        dist: root.join("dist"),
        work: root.join("target/bench-work"),
        only: SECTIONS.iter().map(|s| s.to_string()).collect(),
        out: root.join("target/bench-report.md"),
        strict: false,
    };
    let mut it = args.iter();
    while let Some(a) = it.next() {
        let mut value = || it.next().with_context(|| format!("{a} needs a value; {}", usage()));
        match a.as_str() {
            "--quick" => cfg.quick = true,
            "--strict" => cfg.strict = true,
            "--reps" => cfg.reps = value()?.parse().context("--reps takes a number")?,
            "--acp-tee" => cfg.acp_tee = value()?.into(),
            "--dist" => cfg.dist = value()?.into(),
            "--work" => cfg.work = value()?.into(),
            "--out" => cfg.out = value()?.into(),
            "--only" => {
                cfg.only = value()?.split(',').map(str::to_owned).collect();
                if let Some(bad) = cfg.only.iter().find(|s| !SECTIONS.contains(&s.as_str())) {
                    bail!("unknown section `{bad}`; {}", usage());
                }
            }
            "-h" | "--help" => {
                println!("{}\n\n{HELP}", usage());
                std::process::exit(0);
            }
            other => bail!("unknown argument `{other}`; {}", usage()),
        }
    }
    if cfg.reps == 0 {
        cfg.reps = if cfg.quick { 1 } else { 3 };
    }
    if !cfg.acp_tee.is_file() {
        bail!(
            "no acp-tee binary at {}; run `cargo build --release -p acp-tee` or pass --acp-tee",
            cfg.acp_tee.display()
        );
    }
    Ok(cfg)
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let result = if args.first().map(String::as_str) == Some("__agent") { tracegen::agent() } else { bench(&args) };
    if let Err(e) = result {
        eprintln!("acp-tee-bench: {e:#}");
        std::process::exit(1);
    }
}

fn bench(args: &[String]) -> Result<()> {
    let cfg = parse_args(args)?;
    let _ = std::fs::remove_dir_all(&cfg.work);
    std::fs::create_dir_all(&cfg.work).with_context(|| format!("cannot create {}", cfg.work.display()))?;
    let command = format!("scripts/bench {}", args.join(" "));
    let mut report = Report::default();
    report.smoke = cfg.quick;
    report.say(&format!("# acp-tee benchmark results{}\n", if cfg.quick { " (quick smoke run)" } else { "" }));
    report.say(&report::machine(command.trim(), &cfg.acp_tee));
    let started = std::time::Instant::now();
    let result = run_sections(&cfg, &mut report);
    report.say(&format!(
        "Run took {:.0} s; load average at the end (1/5/15 min): {}.\n",
        started.elapsed().as_secs_f64(),
        report::loadavg()
    ));
    let summary = report.summary();
    report.say(&format!("## Summary\n\n{summary}\n"));
    std::fs::write(&cfg.out, report.text()).with_context(|| format!("cannot write {}", cfg.out.display()))?;
    eprintln!("acp-tee-bench: report written to {}", cfg.out.display());
    let _ = std::fs::remove_dir_all(&cfg.work);
    result?;
    if cfg.strict && !report.failed.is_empty() {
        bail!("{} targets fail", report.failed.len());
    }
    Ok(())
}

fn run_sections(cfg: &Config, report: &mut Report) -> Result<()> {
    let on = |s: &str| cfg.only.iter().any(|o| o == s);
    let mut errors = Vec::new();
    // A section that fails is reported and the others still run; the run fails at the end.
    let mut attempt = |report: &mut Report, name: &str, r: Result<()>| {
        if let Err(e) = r {
            report.say(&format!("**ERROR in {name}: {e:#}**\n"));
            errors.push(name.to_owned());
        }
    };
    let mut acp = relays_section::AcpTeeRuns::new();
    if on("throughput") {
        let r = relays_section::throughput(cfg, report).map(|runs| acp = runs);
        attempt(report, "throughput", r);
    }
    if on("rtt") {
        let r = relays_section::round_trip(cfg, report);
        attempt(report, "rtt", r);
    }
    if on("ingest") {
        let r = relays_section::ingest(cfg, report, acp);
        attempt(report, "ingest", r);
    }
    if on("server") || on("viewer") || on("export") || on("check") {
        match trace_section::generate(cfg, report) {
            Ok(traces) => {
                for (name, run) in [
                    ("server", trace_section::server as fn(&Config, &mut Report, &trace_section::Traces) -> Result<()>),
                    ("viewer", trace_section::viewer),
                    ("export", trace_section::export),
                    ("check", trace_section::check),
                ] {
                    if on(name) {
                        let r = run(cfg, report, &traces);
                        attempt(report, name, r);
                    }
                }
            }
            Err(e) => attempt(report, "trace generation", Err(e)),
        }
    }
    if on("show") {
        let r = show::section(cfg, report);
        attempt(report, "show", r);
    }
    if on("http") {
        let r = http_memory::section(cfg, report);
        attempt(report, "http", r);
    }
    if on("prune") {
        let r = prune::section(cfg, report);
        attempt(report, "prune", r);
    }
    if !errors.is_empty() {
        bail!("sections failed: {}", errors.join(", "));
    }
    Ok(())
}
