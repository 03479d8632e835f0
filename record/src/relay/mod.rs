//! Wrap mode: spawns the agent and relays stdio between it and the client.
//!
//! Three pump threads move bytes (client -> agent, agent -> client, agent
//! stderr -> our stderr), each handing every chunk to the recorder process
//! before forwarding it. The main thread supervises: it passes signals on,
//! stops the agent a grace period after the client closed (noticed by a
//! watcher of our stdin, even while the pump is blocked on the agent),
//! waits for the agent's last output, ends the trace, kills what is left of
//! the agent's process group and exits with the agent's code. Once the trace
//! is ended nothing more is forwarded.
//!
//! Architecture Invariant: nothing in the relay waits on a database write; the
//! only way the recorder can slow forwarding is a full handoff or data pipe
//! (its spool is full, or the recorder process does not run).

mod agent;
mod pump;
pub mod recorder_process;
mod supervise;

pub use agent::SpawnError;

use crate::model::{TraceEnd, TraceStart};
use acp_tee_shared::Direction;
use recorder_process::Recorder;
use signal_hook::consts::{SIGHUP, SIGINT, SIGKILL, SIGTERM};
use std::fs::File;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::path::PathBuf;
use std::sync::{mpsc, Arc};
use std::time::{Duration, Instant};
use supervise::{Event, Output, Supervisor};

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
    /// Send spans live from the recorder (docs/otlp.md).
    pub otlp: Option<crate::otlp::LiveOptions>,
    /// `--protocol acp|mcp`: stored at the start (`None`: from `initialize`).
    pub protocol: Option<acp_tee_shared::Protocol>,
}

/// Runs the agent under the tee until it ends; returns the exit code to exit with.
///
/// Returns as soon as the run is over (the agent exited and its output was
/// forwarded, or stopped waiting for): the recorder stores what it was handed
/// on its own, however long that takes.
pub fn run(opts: &WrapOptions) -> Result<i32, SpawnError> {
    let t0 = Instant::now();
    let started_at = crate::clock::now_rfc3339();
    // Installed before the agent exists, so no signal can end us unrelayed.
    let mut signals =
        signal_hook::iterator::Signals::new([SIGINT, SIGTERM, SIGHUP]).expect("cannot install signal handlers");
    let mut child = agent::spawn(&opts.command)?;
    let pid = child.id();
    let mut recorder = Recorder::start(&opts.db, t0, opts.redact.as_deref(), Some(pid), opts.otlp.as_ref());
    let handoff = recorder.handoff.clone();
    handoff.start(&TraceStart {
        name: opts.name.clone(),
        command: opts.command.clone(),
        cwd: std::env::current_dir().ok().map(|p| p.display().to_string()),
        mode: "wrap".into(),
        started_at: started_at.clone(),
        protocol: opts.protocol,
    });
    recorder.wait_until_recording();
    let (tx, rx) = mpsc::channel();

    let agent_in = File::from(OwnedFd::from(child.stdin.take().expect("agent stdin was piped")));
    let outputs = [
        Output {
            from: Arc::new(File::from(OwnedFd::from(child.stdout.take().expect("agent stdout was piped")))),
            to: Arc::new(dup_fd(1)),
        },
        Output {
            from: Arc::new(File::from(OwnedFd::from(child.stderr.take().expect("agent stderr was piped")))),
            to: Arc::new(dup_fd(2)),
        },
    ];
    let spawn = |name: &str, job: Box<dyn FnOnce() + Send>| {
        std::thread::Builder::new().name(name.into()).spawn(job).expect("cannot start a relay thread");
    };
    {
        let (h, tx) = (handoff.clone(), tx.clone());
        spawn(
            "client-to-agent",
            Box::new(move || {
                // What an agent that closed its stdin did not take is
                // recorded as sent; the agent's end says why it stopped.
                let _ = pump::pump(&dup_fd(0), &agent_in, Direction::ClientToAgent, &h);
                // Reported before the agent can see EOF: an agent that exits on
                // EOF cannot have its exit reach the supervisor first.
                let _ = tx.send(Event::ClientClosed);
                drop(agent_in);
            }),
        );
    }
    {
        let tx = tx.clone();
        spawn("client-hangup", Box::new(move || watch_hangup(0, || drop(tx.send(Event::ClientClosed)))));
    }
    for (name, output, dir) in [
        ("agent-to-client", &outputs[0], Direction::AgentToClient),
        ("agent-stderr", &outputs[1], Direction::AgentStderr),
    ] {
        let (h, tx, from, to) = (handoff.clone(), tx.clone(), output.from.clone(), output.to.clone());
        spawn(
            name,
            Box::new(move || {
                let undelivered = pump::pump(&from, &to, dir, &h);
                if undelivered > 0 {
                    let _ = tx.send(Event::Undelivered(dir, undelivered));
                }
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

    let client_stdout = outputs[0].to.clone();
    let outcome = Supervisor::new(pid, opts.grace, outputs).run(&rx);
    // Nothing the agent started outlives the run.
    agent::signal_group(pid, SIGKILL);
    let end =
        TraceEnd { exit_code: Some(outcome.exit_code), exit_signal: outcome.agent_signal, end_reason: outcome.reason };
    // Left before the recorder is told, which removes it once it stored
    // the end: should no recorder survive, the store's next opener ends
    // the trace from it, not by guessing.
    crate::end_note::write(
        &opts.db,
        &crate::end_note::EndNote {
            relay_pid: std::process::id(),
            started_at,
            ended_at: crate::clock::now_rfc3339(),
            end: end.clone(),
            crossed: handoff.crossed(),
            masked: opts.redact.is_some(),
        },
    );
    handoff.end(&end);
    // From here on nothing is handed off, so the pumps forward nothing more;
    // the client sees end-of-file on our stdout now.
    handoff.close();
    release(&[&client_stdout]);
    recorder.part();
    Ok(outcome.exit_code)
}

/// A new descriptor for our fd `fd` (0, 1 or 2), owned by the returned file;
/// not inherited by the processes we start.
pub fn dup_fd(fd: i32) -> File {
    // SAFETY: duplicates a standard descriptor; the result is owned by the File.
    let new = unsafe { libc::fcntl(fd, libc::F_DUPFD_CLOEXEC, 0) };
    assert!(new >= 0, "cannot duplicate fd {fd}: {}", std::io::Error::last_os_error());
    // SAFETY: `new` is a fresh descriptor nobody else owns.
    unsafe { File::from_raw_fd(new) }
}

/// Points each of `files` (our stdout and the copies of it we hold) at
/// /dev/null, so that the client sees end-of-file on our stdout now.
fn release(files: &[&File]) {
    if let Ok(null) = File::options().write(true).open("/dev/null") {
        for file in files {
            // SAFETY: dup2 onto a descriptor `file` keeps open.
            unsafe { libc::dup2(null.as_raw_fd(), file.as_raw_fd()) };
        }
        // SAFETY: dup2 onto our own stdout descriptor.
        unsafe { libc::dup2(null.as_raw_fd(), 1) };
    }
}

/// Waits until nothing can write to our descriptor `fd` any more (the
/// client closed its end of our stdin pipe or socket), then calls
/// `closed`. A regular file has no writer to wait for: everything the
/// client will ever send is in it, so it counts as closed at once, as a
/// pipe does once the program writing it has exited. Waits for ever where
/// the end cannot be told (a terminal that stays): the pump reports the
/// end there when it reads it.
///
/// The pump cannot notice the close while it is blocked writing to an
/// agent that stopped reading; this thread can.
fn watch_hangup(fd: i32, closed: impl FnOnce()) {
    // SAFETY: a borrowed standard descriptor, left open.
    let input = std::mem::ManuallyDrop::new(unsafe { File::from_raw_fd(fd) });
    if input.metadata().is_ok_and(|m| m.file_type().is_file()) {
        closed();
        return;
    }
    loop {
        let mut p = libc::pollfd { fd, events: libc::POLLRDHUP, revents: 0 };
        // SAFETY: one pollfd for one of our standard descriptors.
        let n = unsafe { libc::poll(&mut p, 1, -1) };
        if n < 0 {
            if std::io::Error::last_os_error().kind() == std::io::ErrorKind::Interrupted {
                continue;
            }
            return;
        }
        if p.revents & libc::POLLNVAL != 0 {
            return;
        }
        if p.revents & (libc::POLLHUP | libc::POLLRDHUP | libc::POLLERR) != 0 {
            closed();
            return;
        }
    }
}
