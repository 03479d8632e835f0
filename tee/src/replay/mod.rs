//! Record once, test forever: `acp-tee diff` compares two traces
//! (`diff.rs`), `acp-tee replay` plays a trace's client against a live
//! agent, recording the run as a new trace linked to its source
//! (`run_client`), and `acp-tee replay --as-agent` plays its agent to a live
//! client on stdio (`run_agent`). Both replays run `engine.rs` over a
//! trace read by `script.rs`; `names.rs` has what differs between runs by
//! nature (minted values), `align.rs` the bounded alignment, `source.rs`
//! the opening of a trace id or a file.

pub use acp_tee_analysis::diff::{self, names, Key};
pub mod engine;
pub mod script;
pub mod source;
pub mod text;

#[cfg(test)]
mod fuzz;

use acp_tee_shared::Direction;
use engine::{Engine, Incoming, Live, Outcome, Timing};
use std::io::{BufRead, BufReader, Read, Write};
use std::path::PathBuf;
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// The longest line a replay reads from its peer (a longer one is counted
/// as bad and skipped).
pub const REPLAY_MAX_LINE_BYTES: usize = 64 << 20;

/// Reads `from` a line at a time into `tx` as [`Incoming`], each line at most
/// `max` bytes ([`REPLAY_MAX_LINE_BYTES`]); ends with [`Incoming::End`].
fn read_lines(from: impl Read, max: usize, tx: mpsc::Sender<Incoming>) {
    let mut from = BufReader::with_capacity(64 * 1024, from);
    let mut line = Vec::new();
    loop {
        line.clear();
        let read = (&mut from).take(max as u64 + 1).read_until(b'\n', &mut line);
        match read {
            Ok(0) | Err(_) => break,
            Ok(_) => {}
        }
        let event = if line.len() > max && !line.ends_with(b"\n") {
            // Skip the rest of the long line.
            loop {
                let buf = match from.fill_buf() {
                    Ok([]) | Err(_) => break,
                    Ok(buf) => buf,
                };
                let (n, end) = match memchr::memchr(b'\n', buf) {
                    Some(i) => (i + 1, true),
                    None => (buf.len(), false),
                };
                from.consume(n);
                if end {
                    break;
                }
            }
            Incoming::Bad
        } else if line.iter().all(u8::is_ascii_whitespace) {
            continue;
        } else {
            Live::read(std::mem::take(&mut line)).map_or(Incoming::Bad, Incoming::Message)
        };
        if tx.send(event).is_err() {
            return;
        }
    }
    let _ = tx.send(Incoming::End);
}

/// What `acp-tee replay` (against an agent) was asked.
pub struct ClientReplay {
    /// The store holding the trace, and to record into.
    pub db: PathBuf,
    /// The trace to replay.
    pub trace_id: i64,
    /// The new trace's name.
    pub name: Option<String>,
    /// The agent's command line.
    pub agent: Vec<String>,
    /// When our messages go.
    pub timing: Timing,
    /// How long one step may wait on the agent.
    pub step_timeout: Duration,
    /// The relay's `--grace`.
    pub grace: Duration,
}

/// What a replay against an agent did.
pub struct ClientReport {
    /// How it ended.
    pub outcome: Outcome,
    /// The trace that recorded it, when it could be found.
    pub new_trace: Option<i64>,
    /// What was counted.
    pub tally: engine::Tally,
}

/// Why a replay could not run.
#[derive(Debug, thiserror::Error)]
pub enum ReplayError {
    /// The trace could not be read.
    #[error(transparent)]
    Script(#[from] script::ScriptError),
    /// The store failed.
    #[error(transparent)]
    Store(#[from] crate::store::StoreError),
    /// The recording relay could not be started.
    #[error("cannot start acp-tee to record the replay: {0}")]
    Spawn(std::io::Error),
    /// Our own stdio failed.
    #[error("replay i/o failed: {0}")]
    Io(#[from] std::io::Error),
}

/// How long, at most, the replay waits for the relay to end after it closed
/// its input (the relay stops the agent within two `--grace` periods).
const RELAY_END_WAIT_EXTRA: Duration = Duration::from_secs(10);

/// Plays the client of the trace against `opts.agent`, run under `acp-tee
/// record` (the run is recorded as any other), and links the new trace to
/// its source.
pub fn run_client(opts: &ClientReplay) -> Result<ClientReport, ReplayError> {
    let script = {
        let reader = crate::store::Reader::open(&opts.db)?;
        reader.trace(opts.trace_id)?;
        script::load(&reader, opts.trace_id)?
    };
    let exe = std::env::current_exe().map_err(ReplayError::Spawn)?;
    let name = opts.name.clone().unwrap_or_else(|| format!("replay of {}", opts.trace_id));
    let mut relay = std::process::Command::new(exe)
        .arg("record")
        .arg(crate::proc::option_arg("db", &opts.db))
        .arg(crate::proc::option_arg("name", &name))
        .arg("--grace")
        .arg(format!("{}ms", opts.grace.as_millis()))
        .arg("--")
        .args(&opts.agent)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .map_err(ReplayError::Spawn)?;
    let relay_pid = relay.id();
    // The relay forwards nothing before its trace exists: waiting for it
    // starts the clock of `--timing recorded` when forwarding starts, and
    // links the trace to its source before anything can go wrong.
    let store = crate::store::Store::open_existing(&opts.db)?;
    let mut new_trace = wait_for_trace(&store, relay_pid, &mut relay)?;
    if let Some(id) = new_trace {
        store.link_replay(id, opts.trace_id)?;
    }
    let mut to_agent = std::io::BufWriter::new(relay.stdin.take().expect("stdin was piped"));
    let from_agent = relay.stdout.take().expect("stdout was piped");
    let (tx, rx) = mpsc::channel();
    std::thread::Builder::new()
        .name("replay-reader".into())
        .spawn(move || read_lines(from_agent, REPLAY_MAX_LINE_BYTES, tx))
        .map_err(ReplayError::Spawn)?;
    let mut engine = Engine::new(&script, Direction::ClientToAgent, opts.timing);
    let outcome = drive_client(&mut engine, &mut to_agent, &rx, opts.step_timeout);
    drop(to_agent);
    // The relay stops the agent once its input is closed; wait for that,
    // then for it.
    let deadline = Instant::now() + opts.grace * 2 + RELAY_END_WAIT_EXTRA;
    while Instant::now() < deadline {
        if relay.try_wait()?.is_some() {
            break;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    if relay.try_wait()?.is_none() {
        let _ = relay.kill();
        let _ = relay.wait();
    }
    if new_trace.is_none() {
        // A recorder slower than the relay's wait: its trace is there by now.
        new_trace = store.trace_of_relay(relay_pid)?;
        if let Some(id) = new_trace {
            store.link_replay(id, opts.trace_id)?;
        }
    }
    Ok(ClientReport { outcome, new_trace, tally: engine.tally })
}

/// How long the replay waits for the relay's trace to exist: as long as
/// the relay waits for it before it forwards anyway.
const TRACE_WAIT: Duration = crate::relay::recorder_process::RECORDING_READY_WAIT;

/// Waits until the relay `relay_pid` has created its trace (or has exited,
/// or [`TRACE_WAIT`] passed); its id, when it exists.
fn wait_for_trace(
    store: &crate::store::Store,
    relay_pid: u32,
    relay: &mut std::process::Child,
) -> Result<Option<i64>, ReplayError> {
    let deadline = Instant::now() + TRACE_WAIT;
    loop {
        if let Some(id) = store.trace_of_relay(relay_pid)? {
            return Ok(Some(id));
        }
        if relay.try_wait()?.is_some() || Instant::now() >= deadline {
            return Ok(None);
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Runs the engine as the client until it completes or diverges.
fn drive_client(
    engine: &mut Engine<'_>,
    out: &mut impl Write,
    rx: &mpsc::Receiver<Incoming>,
    step_timeout: Duration,
) -> Outcome {
    loop {
        if let Err(e) = engine.send_ready(out) {
            return Outcome::Diverged(format!("the agent stopped reading its input ({e})"));
        }
        if engine.done() {
            return Outcome::Completed;
        }
        let (waited, what) = engine.waiting();
        if waited >= step_timeout {
            // The timeout is per step, not an idle time: say what did come.
            let came = match engine.received_while_waiting() {
                0 => "nothing came".to_owned(),
                1 => "1 message came, not the one awaited".to_owned(),
                n => format!("{n} messages came, none the one awaited"),
            };
            return Outcome::Diverged(format!("{what}: {came} within {}", humantime(step_timeout)));
        }
        let mut wait = step_timeout - waited;
        if let Some(due) = engine.due_in() {
            wait = wait.min(due);
        }
        match rx.recv_timeout(wait) {
            Ok(Incoming::Message(v)) => {
                if let Err(e) = engine.receive(v, out) {
                    return Outcome::Diverged(format!("the agent stopped reading its input ({e})"));
                }
            }
            Ok(Incoming::Bad) => engine.tally.bad_lines += 1,
            Ok(Incoming::End) | Err(mpsc::RecvTimeoutError::Disconnected) => {
                let (_, what) = engine.waiting();
                return Outcome::Diverged(format!("{what}: the agent closed its output first"));
            }
            Err(mpsc::RecvTimeoutError::Timeout) => {}
        }
    }
}

fn humantime(d: Duration) -> String {
    if d.subsec_millis() == 0 {
        format!("{}s", d.as_secs())
    } else {
        format!("{}ms", d.as_millis())
    }
}

/// Plays the agent of `script` to the client on our stdin and stdout until
/// the client closes our stdin. Returns what was counted.
pub fn run_agent(script: &script::Script) -> Result<engine::Tally, ReplayError> {
    let (tx, rx) = mpsc::channel();
    std::thread::Builder::new()
        .name("replay-reader".into())
        .spawn(move || read_lines(std::io::stdin(), REPLAY_MAX_LINE_BYTES, tx))
        .map_err(ReplayError::Spawn)?;
    let mut out = std::io::BufWriter::new(std::io::stdout());
    let mut engine = Engine::new(script, Direction::AgentToClient, Timing::Reached);
    loop {
        engine.send_ready(&mut out)?;
        match rx.recv() {
            Ok(Incoming::Message(v)) => engine.receive(v, &mut out)?,
            Ok(Incoming::Bad) => engine.tally.bad_lines += 1,
            Ok(Incoming::End) | Err(_) => break,
        }
    }
    Ok(engine.tally)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_line_past_the_bound_is_skipped_whole_and_the_next_is_read() {
        let input = format!(
            "{{\"id\":1,\"result\":{{}}}}\n{}\n\n{{\"id\":2,\"result\":{{}}}}\nnot json\n{{\"id\":3,\"result\":{{}}}}",
            "x".repeat(100)
        );
        let (tx, rx) = mpsc::channel();
        read_lines(input.as_bytes(), 24, tx);
        let got: Vec<String> = rx
            .iter()
            .map(|e| match e {
                Incoming::Message(m) => m.value["id"].to_string(),
                Incoming::Bad => "bad".into(),
                Incoming::End => "end".into(),
            })
            .collect();
        assert_eq!(got, ["1", "bad", "2", "bad", "3", "end"]);
    }
}
