//! `acp-tee diff` and `acp-tee replay`: the command lines over
//! `crate::replay`.

use super::args::{parse_duration, StoreArg};
use super::trace_ref::{self, TraceInput, TraceRef};
use crate::redact::JsonPath;
use crate::replay::diff::{self, DiffOptions};
use crate::replay::engine::{Outcome, Timing};
use crate::replay::{self, source, ClientReplay};
use clap::{Args, ValueEnum};
use std::io::Write;
use std::time::Duration;

pub const DIFF_ABOUT: &str = concat!(
    "\
Compare two traces message by message: A and B are stored traces (an id,
`latest` or a name, the newest trace of that name) or files `acp-tee import`
reads (imported into a temporary store; the store is not changed; `-` is
standard input, for one of them).

",
    trace_ref::input_rule!(),
    "

Messages are aligned per session (sessions matched by their order of
creation; messages of no session among themselves), then by direction, kind,
method (for session/update also the update's kind) and order, with the
fewest additions and removals. Contents
are compared without JSON-RPC ids, with the values a peer mints (sessionId,
toolCallId, terminalId) named by order of appearance, and without the values
--ignore selects (a JSONPath: $.result.agentInfo.version, $..timestamp).
Reports added, missing and changed messages (which values differ), changed
initialize capabilities, each turn's stop reason, and per method the p50 and
p95 latency of the answers with their ratio (latency never makes traces
different).

A trace whose recorder is still storing frames after acp-tee exited is
waited for (at most a minute); one still being recorded is not compared.

Exit status: 0 when the traces are equivalent, 1 when they differ, 2 when A
or B cannot be read or is not complete (still being recorded)."
);

/// Output formats of `diff`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum DiffFormat {
    /// Lines for a person.
    Text,
    /// One JSON document (`TraceDiff`).
    Json,
}

#[derive(Debug, Args)]
pub struct DiffArgs {
    #[command(flatten)]
    store: StoreArg,
    /// How to write the comparison
    #[arg(long, value_enum, default_value = "text")]
    format: DiffFormat,
    /// Leave the values at this JSONPath out of the comparison (repeatable)
    #[arg(long, value_name = "PATH")]
    ignore: Vec<String>,
    /// The first trace: an id, `latest`, a name, or a file (`-`: standard input)
    #[arg(value_name = "A")]
    a: TraceInput,
    /// The second trace: an id, `latest`, a name, or a file (`-`: standard input)
    #[arg(value_name = "B")]
    b: TraceInput,
}

/// Runs `acp-tee diff`: 0 equivalent, 1 different, 2 bad input.
pub fn diff_command(a: DiffArgs) -> anyhow::Result<i32> {
    match diff_inner(&a) {
        Ok(code) => Ok(code),
        Err(e) => {
            eprintln!("acp-tee: error: {}", super::error_text(&e));
            Ok(2)
        }
    }
}

fn diff_inner(a: &DiffArgs) -> anyhow::Result<i32> {
    let ignore = a
        .ignore
        .iter()
        .map(|p| JsonPath::parse(p).map_err(|e| anyhow::anyhow!("--ignore {p:?} is not a JSONPath: {e}")))
        .collect::<anyhow::Result<Vec<_>>>()?;
    if a.a == TraceInput::Stdin && a.b == TraceInput::Stdin {
        anyhow::bail!("A and B are both `-`: standard input can be read once; give one of them as a file or a trace");
    }
    let side_a = open_side(&a.a, &a.store)?;
    let side_b = open_side(&a.b, &a.store)?;
    for side in [&side_a, &side_b] {
        // A partial trace is never compared as if complete.
        let s = side.store().wait_while_finishing(side.trace_id, super::FINISH_WAIT)?;
        if s.live {
            anyhow::bail!(
                "trace {} {}: compare it once it has ended (`acp-tee list` shows when)",
                side.trace_id,
                super::state_of(&s)
            );
        }
    }
    let d = diff::diff((&side_a).into(), (&side_b).into(), &DiffOptions { ignore, redactor: None })?;
    let mut out = std::io::stdout().lock();
    match a.format {
        DiffFormat::Text => out.write_all(replay::text::render(&d, &side_a.label, &side_b.label).as_bytes())?,
        DiffFormat::Json => {
            serde_json::to_writer(&mut out, &d)?;
            out.write_all(b"\n")?;
        }
    }
    out.flush()?;
    Ok(if d.equivalent { 0 } else { 1 })
}

/// One side of a diff: a stored trace, a file, or standard input.
fn open_side(input: &TraceInput, store: &StoreArg) -> anyhow::Result<source::Opened> {
    match input {
        TraceInput::Trace(r) => {
            let reader = store.open_reader()?;
            let id = trace_ref::resolve(&reader, r).map_err(|e| trace_ref::nor_a_file(e, r))?.id;
            Ok(source::stored(reader, id))
        }
        TraceInput::File(path) => Ok(source::import_file(path, path)?),
        TraceInput::Stdin => {
            let (_dir, file) = trace_ref::stdin_to_file()?;
            Ok(source::import_file(&file, std::path::Path::new("stdin"))?)
        }
    }
}

pub const REPLAY_ABOUT: &str = "\
Replay a recorded trace against a live peer, without a model or an editor.

`acp-tee replay TRACE -- AGENT [ARGS]` plays the client: it starts AGENT
under `acp-tee record` (the run is stored as a new trace, linked to trace
ID), sends the recorded client messages, each once the agent has sent what it
had sent before it in the recording (or, with --timing recorded, at its
recorded time), and answers the agent's requests (session/request_permission,
fs/*, terminal/*) with the recorded answers, matched by method and params.
The values the agent mints (sessionId, toolCallId) are mapped to the live
ones. Compare the runs with `acp-tee diff ID NEW`.

`acp-tee replay --as-agent TRACE` plays the agent on stdio: usable as an
agent command in an editor, acpx or yopo. It answers the client's requests
as the recorded agent did and sends what it sent, in the same order.

Exit status: 0 when the replay completed, 1 when the agent diverged so far
that the script could not go on (the message says where), 2 when the trace
cannot be read or the agent not started.

TRACE is an id from `acp-tee list`, `latest`, or a name (the newest trace
of that name; name:NAME for any name); --trace TRACE is the same.";

/// When the replayed client's messages go.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum TimingArg {
    /// Each once the agent reached the point it had in the recording
    Reached,
    /// Each at its recorded time after the first
    Recorded,
}

#[derive(Debug, Args)]
pub struct ReplayArgs {
    #[command(flatten)]
    store: StoreArg,
    /// The trace to replay: an id, `latest`, or a name (the newest trace of that name)
    #[arg(value_name = "TRACE", required_unless_present = "trace_flag")]
    trace: Option<TraceRef>,
    /// The same as TRACE
    #[arg(long = "trace", value_name = "TRACE", conflicts_with = "trace")]
    trace_flag: Option<TraceRef>,
    /// Play the recorded agent on stdio instead of driving AGENT
    #[arg(long, conflicts_with_all = ["agent", "name"])]
    as_agent: bool,
    /// A name for the new trace (default: "replay of ID")
    #[arg(long)]
    name: Option<String>,
    /// When the client's messages go
    #[arg(long, value_enum, default_value = "reached")]
    timing: TimingArg,
    /// How long the agent may take to reach the next point of the recording
    #[arg(long, default_value = "30s", value_parser = parse_duration)]
    step_timeout: Duration,
    /// The recording relay's --grace: how long the agent may run on after the replay closed its input
    #[arg(long, default_value = "3s", value_parser = parse_duration)]
    grace: Duration,
    /// The agent's command line, after `--`
    #[arg(last = true, value_name = "AGENT")]
    agent: Vec<String>,
}

/// Runs `acp-tee replay`.
pub fn replay_command(a: ReplayArgs) -> anyhow::Result<i32> {
    // clap asks for one of the two.
    let Some(trace) = trace_ref::pick(a.trace.clone(), a.trace_flag.clone()) else {
        anyhow::bail!("replay needs a TRACE");
    };
    if !a.as_agent && a.agent.is_empty() {
        eprintln!("acp-tee: error: replay needs the agent's command line after `--`, or --as-agent");
        return Ok(2);
    }
    // The trace's id, found once the store is maintained.
    let id = match a.store.open_reader().and_then(|r| trace_ref::resolve(&r, &trace)) {
        Ok(t) => t.id,
        Err(e) => {
            eprintln!("acp-tee: error: {}", super::error_text(&e));
            return Ok(2);
        }
    };
    if a.as_agent {
        return as_agent(&a, id);
    }
    let opts = ClientReplay {
        db: a.store.path()?,
        trace_id: id,
        name: a.name.clone(),
        agent: a.agent.clone(),
        timing: match a.timing {
            TimingArg::Reached => Timing::Reached,
            TimingArg::Recorded => Timing::Recorded,
        },
        step_timeout: a.step_timeout,
        grace: a.grace,
    };
    let report = match replay::run_client(&opts) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("acp-tee: error: {}", super::error_text(&e.into()));
            return Ok(2);
        }
    };
    let t = &report.tally;
    let new = report.new_trace.map_or("an unknown trace".to_owned(), |id| format!("trace {id}"));
    let mut out = std::io::stdout().lock();
    let code = match &report.outcome {
        Outcome::Completed => {
            writeln!(out, "replayed trace {id} as {new}: completed")?;
            0
        }
        Outcome::Diverged(why) => {
            writeln!(out, "replayed trace {id} as {new}: diverged: {}", crate::text::printable(why))?;
            1
        }
    };
    writeln!(
        out,
        "{} messages sent, {} received, {} requests answered from the recording",
        t.sent, t.received, t.answered
    )?;
    if !t.unmatched.is_empty() {
        let methods: Vec<String> = t.unmatched.iter().map(|m| crate::text::printable(m).into_owned()).collect();
        writeln!(out, "requests without a recorded answer (answered with an error): {}", methods.join(", "))?;
    }
    if t.bad_lines > 0 {
        writeln!(out, "{} lines of the agent were no message", t.bad_lines)?;
    }
    Ok(code)
}

/// `--as-agent`: the recorded agent on our stdio; a summary on stderr.
fn as_agent(a: &ReplayArgs, id: i64) -> anyhow::Result<i32> {
    let script = (|| -> anyhow::Result<_> {
        let reader = a.store.open_reader()?;
        Ok(replay::script::load(&reader, id)?)
    })();
    let script = match script {
        Ok(s) => s,
        Err(e) => {
            eprintln!("acp-tee: error: {}", super::error_text(&e));
            return Ok(2);
        }
    };
    let tally = replay::run_agent(&script)?;
    if !tally.unmatched.is_empty() {
        let methods: Vec<String> = tally.unmatched.iter().map(|m| crate::text::printable(m).into_owned()).collect();
        eprintln!("acp-tee: note: requests without a recorded answer (answered with an error): {}", methods.join(", "));
    }
    Ok(0)
}
