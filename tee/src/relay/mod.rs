//! Wrap mode: spawns the agent and relays stdio between it and the client.
//!
//! Three pump threads move bytes (client -> agent, agent -> client, agent
//! stderr -> our stderr), each handing every chunk to the recorder process
//! before forwarding it. The main thread supervises: it passes signals on,
//! stops the agent a grace period after the client closed, waits for the
//! agent's last output and exits with the agent's code.
//!
//! Architecture Invariant: nothing in the relay waits on a database write; the
//! only way the recorder can slow forwarding is a full handoff pipe.

mod agent;
mod pump;
pub(crate) mod recorder_process;
mod supervise;

pub use agent::SpawnError;

use crate::model::{TraceEnd, TraceStart};
use acp_tee_shared::Direction;
use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM};
use std::fs::File;
use std::os::fd::{AsRawFd, FromRawFd};
use std::path::PathBuf;
use std::sync::{mpsc, Arc};
use std::time::{Duration, Instant};
use supervise::{Event, Supervisor};

/// What `acp-tee record` was asked to do.
#[derive(Debug, Clone)]
pub struct WrapOptions {
    /// The agent's command line (program first); never empty.
    pub command: Vec<String>,
    /// The trace's name.
    pub name: Option<String>,
    /// The store to record into.
    pub db: PathBuf,
    /// How long to wait after the client closed before stopping the agent, and
    /// after SIGTERM before SIGKILL.
    pub grace: Duration,
    /// Mask secrets in what is stored (default rules plus these); forwarded
    /// bytes are never changed.
    pub redact: Option<Vec<String>>,
}

/// Runs the agent under the tee until it ends; returns the exit code to exit with.
pub fn run(opts: &WrapOptions) -> Result<i32, SpawnError> {
    let t0 = Instant::now();
    let started_at = crate::clock::now_rfc3339();
    // Installed before the agent exists, so no signal can end us unrelayed.
    let mut signals =
        signal_hook::iterator::Signals::new([SIGINT, SIGTERM, SIGHUP]).expect("cannot install signal handlers");
    let mut child = agent::spawn(&opts.command)?;
    let pid = child.id();
    let (recorder, handoff) = recorder_process::start(&opts.db, t0, opts.redact.as_deref());
    handoff.start(&TraceStart {
        name: opts.name.clone(),
        command: opts.command.clone(),
        cwd: std::env::current_dir().ok().map(|p| p.display().to_string()),
        mode: "wrap".into(),
        started_at,
    });
    let mut recorder = recorder;
    recorder_process::wait_until_recording(recorder.as_mut());
    let handoff = Arc::new(handoff);
    let (tx, rx) = mpsc::channel();

    let agent_in = child.stdin.take().expect("agent stdin was piped");
    let agent_out = child.stdout.take().expect("agent stdout was piped");
    let agent_err = child.stderr.take().expect("agent stderr was piped");
    let spawn = |name: &str, job: Box<dyn FnOnce() + Send>| {
        std::thread::Builder::new().name(name.into()).spawn(job).expect("cannot start a relay thread");
    };
    {
        let (h, tx) = (handoff.clone(), tx.clone());
        spawn(
            "client-to-agent",
            Box::new(move || {
                let agent_in = pump::pump(
                    dup_fd(0),
                    File::from(std::os::fd::OwnedFd::from(agent_in)),
                    Direction::ClientToAgent,
                    &h,
                );
                // Reported before the agent can see EOF: an agent that exits on
                // EOF cannot have its exit reach the supervisor first.
                let _ = tx.send(Event::ClientClosed);
                drop(agent_in);
            }),
        );
    }
    for (name, from, fd, dir) in [
        ("agent-to-client", File::from(std::os::fd::OwnedFd::from(agent_out)), 1, Direction::AgentToClient),
        ("agent-stderr", File::from(std::os::fd::OwnedFd::from(agent_err)), 2, Direction::AgentStderr),
    ] {
        let (h, tx) = (handoff.clone(), tx.clone());
        spawn(
            name,
            Box::new(move || {
                // Our copy of stdout/stderr is closed before the report.
                drop(pump::pump(from, dup_fd(fd), dir, &h));
                let _ = tx.send(Event::OutputClosed(dir));
            }),
        );
    }
    {
        let tx = tx.clone();
        spawn(
            "agent-waiter",
            Box::new(move || {
                let status = child.wait().expect("waiting for our own child cannot fail");
                let _ = tx.send(Event::AgentExited(status));
            }),
        );
    }
    {
        let tx = tx.clone();
        let _ = std::thread::Builder::new().name("signals".into()).spawn(move || {
            for sig in signals.forever() {
                if tx.send(Event::Signal(sig)).is_err() {
                    break;
                }
            }
        });
    }
    drop(tx);

    let outcome = Supervisor::new(pid, opts.grace).run(&rx);
    handoff.end(&TraceEnd {
        exit_code: Some(outcome.exit_code),
        exit_signal: outcome.agent_signal,
        end_reason: outcome.reason.clone(),
    });
    handoff.close();
    release_stdout();
    if let Some(mut recorder) = recorder {
        // The client already has everything (stdout is closed); waiting here
        // only makes `acp-tee ...; acp-tee list` see the finished trace.
        let _ = recorder.wait();
    }
    Ok(outcome.exit_code)
}

/// A new descriptor for our fd `fd` (0, 1 or 2), owned by the returned file.
pub(crate) fn dup_fd(fd: i32) -> File {
    // SAFETY: dup of a standard descriptor; the result is owned by the File.
    let new = unsafe { libc::dup(fd) };
    assert!(new >= 0, "cannot duplicate fd {fd}: {}", std::io::Error::last_os_error());
    // SAFETY: `new` is a fresh descriptor nobody else owns.
    unsafe { File::from_raw_fd(new) }
}

/// Points fd 1 at /dev/null so the client sees end-of-file on our stdout now,
/// while we wait for the recorder.
fn release_stdout() {
    if let Ok(null) = File::options().write(true).open("/dev/null") {
        // SAFETY: dup2 onto our own stdout descriptor.
        unsafe { libc::dup2(null.as_raw_fd(), 1) };
    }
}
