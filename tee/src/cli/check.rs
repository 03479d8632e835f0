//! `acp-tee check`: the protocol checks (`crate::check`) over a stored trace
//! or a trace file, printed for people or as JSON, with an exit status for CI.

use super::args::StoreArg;
use super::trace_ref::{self, TraceInput, TraceRef};
use crate::check::{check_trace, check_trace_of, CheckOptions, DEFAULT_MAX_LINE_BYTES};
use crate::import::{ImportFormat, ImportOptions};
use crate::store::Store;
use crate::text::printable;
use acp_tee_shared::check::{Severity, TraceFindings};
use clap::{Args, ValueEnum};
use std::io::Write;
use std::path::Path;

pub const CHECK_ABOUT: &str = concat!(
    "\
Check a trace against the ACP spec: JSON-RPC shape, every message against the
official ACP schema (agent-client-protocol-schema) for its method and
direction, requests and their answers, initialize, sessions, turns,
cancellation, capabilities and permission outcomes. An MCP trace is judged by
the JSON-RPC and lifecycle rules and MCP's own (tools called that its tool list
does not have). Each finding has a stable code (docs/checks.md), a severity and
the frames involved.

Checks a stored trace (TRACE: an id, `latest`, the default, `all`, or a
name, the newest trace of that name) or FILE, any file `acp-tee import` reads
(an acp-tee export, the conductor's .jsons, a sacp-tee log, ...; `-` is
standard input), read into a temporary store that is removed afterwards.

",
    trace_ref::input_rule!(),
    "

A trace whose recorder is still storing frames after acp-tee exited is
waited for (at most a minute; --no-wait does not wait). A trace that is not
complete (still being recorded) is judged on the frames stored so far, and
says so.

Exit status: 0 when no finding is an error, 1 when one is, 2 when the input
cannot be read (no such trace, a file that is no trace), 3 when no finding
is an error but a trace checked is not complete (still being recorded or
finishing): its verdict is not final."
);

/// How findings are printed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum CheckFormat {
    /// One line per finding, a summary per trace
    Text,
    /// One JSON document: {"traces": [findings of each trace]}
    Json,
}

/// The least severity printed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum MinSeverity {
    /// Everything
    Info,
    /// Warnings and errors
    Warning,
    /// Errors only
    Error,
}

impl MinSeverity {
    fn severity(self) -> Severity {
        match self {
            MinSeverity::Info => Severity::Info,
            MinSeverity::Warning => Severity::Warning,
            MinSeverity::Error => Severity::Error,
        }
    }
}

#[derive(Debug, Args)]
pub struct CheckArgs {
    #[command(flatten)]
    store: StoreArg,
    /// The same as a stored TRACE: an id, `latest`, `all` or a name (never a file)
    #[arg(long = "trace", value_name = "TRACE", conflicts_with = "input")]
    trace: Option<TraceRef>,
    /// Output format
    #[arg(long, value_enum, default_value = "text")]
    format: CheckFormat,
    /// Print only findings of this severity or worse (the exit status still counts every error)
    #[arg(long, value_enum, default_value = "info", value_name = "S")]
    min_severity: MinSeverity,
    /// Frames longer than this many bytes are transport.line-too-large
    #[arg(long, value_name = "BYTES", default_value_t = DEFAULT_MAX_LINE_BYTES)]
    max_line_bytes: usize,
    /// Do not wait for a trace whose recorder is still storing frames after
    /// acp-tee exited (it is judged on the frames stored, exit 3)
    #[arg(long)]
    no_wait: bool,
    /// What to check: a stored trace (an id, `latest`, the default, `all`, or a
    /// name: the newest trace of that name), or a trace file (any format
    /// `acp-tee import` reads; `-` is standard input). The rule is below
    #[arg(value_name = "TRACE|FILE")]
    input: Option<TraceInput>,
}

/// The exit status when no finding is an error but a trace checked is not
/// complete: its verdict is about the frames stored so far.
pub const EXIT_INCOMPLETE: i32 = 3;

/// Runs `acp-tee check`: 0 clean, 1 errors found, 2 bad input, 3 clean so
/// far but not complete.
pub fn check_command(a: CheckArgs) -> anyhow::Result<i32> {
    let opts = CheckOptions { max_line_bytes: a.max_line_bytes };
    let reports = match checked(&a, opts) {
        Ok(reports) => reports,
        Err(e) => {
            eprintln!("acp-tee: error: {}", super::error_text(&e));
            return Ok(2);
        }
    };
    let min = a.min_severity.severity();
    let mut out = std::io::stdout().lock();
    match a.format {
        CheckFormat::Json => {
            let traces: Vec<TraceFindings> = reports.iter().map(|r| shown(r, min)).collect();
            serde_json::to_writer(&mut out, &serde_json::json!({ "traces": traces }))?;
            writeln!(out)?;
        }
        CheckFormat::Text => {
            for (name, report) in names(&a, &reports).iter().zip(&reports) {
                out.write_all(render(name, &shown(report, min)).as_bytes())?;
            }
        }
    }
    Ok(if reports.iter().any(|r| r.counts.errors > 0) {
        1
    } else if reports.iter().any(|r| r.live) {
        EXIT_INCOMPLETE
    } else {
        0
    })
}

/// What `a` asks to check.
fn input_of(a: &CheckArgs) -> TraceInput {
    match (&a.input, &a.trace) {
        (Some(input), _) => input.clone(),
        (None, Some(r)) => TraceInput::Trace(r.clone()),
        (None, None) => TraceInput::Trace(TraceRef::Latest),
    }
}

/// The findings of each trace asked for.
fn checked(a: &CheckArgs, opts: CheckOptions) -> anyhow::Result<Vec<TraceFindings>> {
    let file = match input_of(a) {
        TraceInput::Trace(r) => {
            let store = a.store.open_reader()?;
            let mut reports = Vec::new();
            let traces = trace_ref::resolve_many(&store, std::slice::from_ref(&r));
            for trace in traces.map_err(|e| trace_ref::nor_a_file(e, &r))? {
                // Never a partial trace judged as if complete: a finishing one
                // is waited for, and one still live is reported as such.
                let before = super::settle(&store, trace.id, !a.no_wait, "the check judges")?;
                let report = check_trace_of(&store, trace.id, opts, before.live)?;
                reports.push(report);
            }
            return Ok(reports);
        }
        TraceInput::File(path) => return check_file(&path, &path, opts),
        TraceInput::Stdin => trace_ref::stdin_to_file()?,
    };
    check_file(&file.1, Path::new("stdin"), opts)
}

/// The findings of each trace of the file at `file` (called `path`),
/// imported into a temporary store.
fn check_file(file: &Path, path: &Path, opts: CheckOptions) -> anyhow::Result<Vec<TraceFindings>> {
    let dir = tempfile::tempdir()?;
    let mut store = Store::create_or_open(&dir.path().join("check.db"))?;
    store.maintain(0)?;
    let import = ImportOptions {
        format: ImportFormat::Auto,
        name: None,
        skip_bad: false,
        progress: indicatif::ProgressBar::hidden(),
    };
    let summary = crate::import::import_as(&mut store, file, path, &import)?;
    let mut reports = Vec::new();
    for id in summary.trace_ids {
        reports.push(check_trace(&store, id, opts)?);
    }
    Ok(reports)
}

/// What each report is called in the text output.
fn names(a: &CheckArgs, reports: &[TraceFindings]) -> Vec<String> {
    let input = input_of(a);
    reports
        .iter()
        .map(|r| match &input {
            TraceInput::Trace(_) => format!("trace {}", r.trace_id),
            file if reports.len() == 1 => file.label(r.trace_id),
            file => format!("{} (trace {} of it)", file.label(r.trace_id), r.trace_id),
        })
        .collect()
}

/// `report` with only the findings of severity `min` or worse listed.
fn shown(report: &TraceFindings, min: Severity) -> TraceFindings {
    let mut report = report.clone();
    report.findings.retain(|f| f.severity >= min);
    report.by_code.retain(|c| c.severity >= min);
    report
}

/// A report as text: a line per finding, then a summary line.
fn render(name: &str, r: &TraceFindings) -> String {
    let mut text = String::new();
    for f in &r.findings {
        let frames = f.seqs.iter().map(i64::to_string).collect::<Vec<_>>().join(",");
        // A finding of no frame (`check.limit`) says no frame part.
        let at = if frames.is_empty() { String::new() } else { format!(": frame {frames}") };
        text.push_str(&format!("{name}{at}: {} {}: {}\n", f.severity, f.code, printable(&f.message)));
    }
    let plural = |n: u64, one: &str, many: &str| format!("{n} {}", if n == 1 { one } else { many });
    text.push_str(&format!(
        "{name}: {}, {}, {} in {} frames{}{}\n",
        plural(r.counts.errors, "error", "errors"),
        plural(r.counts.warnings, "warning", "warnings"),
        plural(r.counts.infos, "info", "infos"),
        r.frames,
        match r.protocol {
            acp_tee_shared::Protocol::Mcp => " (an MCP trace: judged by the JSON-RPC, lifecycle and MCP rules)",
            acp_tee_shared::Protocol::Acp => "",
        },
        if r.live { " (not complete: the trace is still being recorded; this verdict is not final)" } else { "" }
    ));
    if r.left_out > 0 {
        text.push_str(&format!("{name}: {} more findings are counted but not listed\n", r.left_out));
    }
    text
}
