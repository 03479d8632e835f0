//! The main thread's part of wrap mode: deciding when the run is over.

use super::agent::{self, shell_code};
use acp_tee_shared::Direction;
use signal_hook::consts::{SIGINT, SIGKILL, SIGTERM};
use std::fs::File;
use std::os::fd::AsRawFd;
use std::os::unix::process::ExitStatusExt;
use std::process::ExitStatus;
use std::sync::mpsc::{Receiver, RecvTimeoutError};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The shortest wait for the agent's last output after it exited.
pub const DRAIN_AT_LEAST: Duration = Duration::from_secs(3);

/// What the relay's threads report to the supervisor.
#[derive(Debug)]
pub enum Event {
    /// The client closed our stdin (reported by the watcher of our stdin as
    /// soon as it hangs up, and by the pump once it read everything).
    ClientClosed,
    /// The agent closed its stdout or stderr and everything read was forwarded.
    OutputClosed(Direction),
    /// The client stopped reading this stream of the agent's: so many bytes
    /// of it were recorded but not delivered (sent before `OutputClosed`).
    Undelivered(Direction, u64),
    /// The agent process ended.
    AgentExited(ExitStatus),
    /// acp-tee received a signal.
    Signal(i32),
}

/// How the run ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Outcome {
    /// What acp-tee exits with.
    pub exit_code: i32,
    /// The signal that ended the agent, if one did.
    pub agent_signal: Option<i32>,
    /// Why the run ended, in words.
    pub reason: String,
}

/// One of the agent's output streams as its pump moves it: where from, where to.
pub struct Output {
    /// The agent's end of the stream (our read end of its pipe).
    pub from: Arc<File>,
    /// Where the pump writes it (our stdout or stderr).
    pub to: Arc<File>,
}

/// Drives the run to its end from the events of the relay's threads.
pub struct Supervisor {
    pid: u32,
    grace: Duration,
    /// The agent's stdout and stderr.
    outputs: [Output; 2],
    client_closed: bool,
    stopped_by_us: bool,
    /// The signals passed on to the agent, each once, in the order first received.
    passed_on: Vec<i32>,
    term_at: Option<Instant>,
    kill_at: Option<Instant>,
    stdout_open: bool,
    stderr_open: bool,
    /// Bytes of the agent's stdout and stderr recorded but not delivered:
    /// the client stopped reading them.
    undelivered: [u64; 2],
}

impl Supervisor {
    /// Supervises the agent with process id `pid`, whose stdout and stderr
    /// are `outputs`.
    pub fn new(pid: u32, grace: Duration, outputs: [Output; 2]) -> Self {
        Supervisor {
            pid,
            grace,
            outputs,
            client_closed: false,
            stopped_by_us: false,
            passed_on: Vec::new(),
            term_at: None,
            kill_at: None,
            stdout_open: true,
            stderr_open: true,
            undelivered: [0; 2],
        }
    }

    /// Waits for the agent to exit, then for its last output to be forwarded.
    pub fn run(mut self, events: &Receiver<Event>) -> Outcome {
        let status = self.wait_for_exit(events);
        self.drain(events);
        self.outcome(status)
    }

    fn wait_for_exit(&mut self, events: &Receiver<Event>) -> ExitStatus {
        loop {
            let deadline = [self.term_at, self.kill_at].into_iter().flatten().min();
            let event = match deadline {
                Some(d) => events.recv_timeout(d.saturating_duration_since(Instant::now())),
                None => events.recv().map_err(|_| RecvTimeoutError::Disconnected),
            };
            match event {
                Ok(Event::AgentExited(status)) => return status,
                // Reported twice (watcher and pump): the first one counts.
                Ok(Event::ClientClosed) if !self.client_closed => {
                    self.client_closed = true;
                    self.term_at = Some(Instant::now() + self.grace);
                }
                Ok(Event::ClientClosed) => {}
                Ok(Event::Signal(sig)) => {
                    tracing::debug!("forwarding signal {sig} to the agent");
                    agent::signal_group(self.pid, sig);
                    if !self.passed_on.contains(&sig) {
                        self.passed_on.push(sig);
                    }
                    // INT may mean "cancel" to an agent; TERM and HUP mean "go".
                    if sig != SIGINT && self.kill_at.is_none() {
                        self.kill_at = Some(Instant::now() + self.grace);
                    }
                }
                Ok(Event::OutputClosed(dir)) => self.note_closed(dir),
                Ok(Event::Undelivered(dir, bytes)) => self.note_undelivered(dir, bytes),
                Err(RecvTimeoutError::Timeout) => self.on_deadline(),
                Err(RecvTimeoutError::Disconnected) => {
                    unreachable!("the waiter thread always reports the agent's exit")
                }
            }
        }
    }

    fn on_deadline(&mut self) {
        let now = Instant::now();
        if self.term_at.is_some_and(|t| t <= now) {
            self.term_at = None;
            tracing::debug!("the client closed {:?} ago; stopping the agent", self.grace);
            agent::signal_group(self.pid, SIGTERM);
            self.stopped_by_us = true;
            self.kill_at.get_or_insert(now + self.grace);
        } else if self.kill_at.is_some_and(|t| t <= now) {
            self.kill_at = None;
            tracing::debug!("the agent outlived SIGTERM by {:?}; killing it", self.grace);
            agent::signal_group(self.pid, SIGKILL);
            self.stopped_by_us = true;
        }
    }

    fn note_undelivered(&mut self, dir: Direction, bytes: u64) {
        let slot = if dir == Direction::AgentStderr { 1 } else { 0 };
        self.undelivered[slot] += bytes;
    }

    fn note_closed(&mut self, dir: Direction) {
        match dir {
            Direction::AgentToClient => self.stdout_open = false,
            Direction::AgentStderr => self.stderr_open = false,
            Direction::ClientToAgent => {}
        }
    }

    /// Waits until everything the agent wrote has been forwarded: at most a
    /// grace period, and at least [`DRAIN_AT_LEAST`] (something the agent
    /// started may hold its pipes open for ever; a short `--grace` must not cut
    /// off our own pumps, which a busy machine or recorder can slow).
    fn drain(&mut self, events: &Receiver<Event>) {
        let deadline = Instant::now() + self.grace.max(DRAIN_AT_LEAST);
        while self.stdout_open || self.stderr_open {
            match events.recv_timeout(deadline.saturating_duration_since(Instant::now())) {
                Ok(Event::OutputClosed(dir)) => self.note_closed(dir),
                Ok(Event::Undelivered(dir, bytes)) => self.note_undelivered(dir, bytes),
                Ok(_) => {}
                Err(_) => {
                    tracing::warn!("{}; not waiting for it", self.why_output_is_open());
                    return;
                }
            }
        }
    }

    /// Why the agent's output is still being forwarded after the drain's
    /// deadline: something the agent started still writes to it, or our own
    /// pump is blocked: writing to a client that does not read, or handing
    /// off to a recorder that does not take (stopped, or far behind).
    fn why_output_is_open(&self) -> &'static str {
        let open: Vec<&Output> =
            self.outputs.iter().zip([self.stdout_open, self.stderr_open]).filter(|(_, o)| *o).map(|(o, _)| o).collect();
        // No writer is left on the agent's side: the pump itself is blocked.
        if !open.iter().all(|o| hung_up(&o.from)) {
            "the agent exited but something it started still holds its output open"
        } else if open.iter().all(|o| !writable(&o.to)) {
            "the client is not reading acp-tee's output"
        } else {
            "acp-tee's recorder is not taking what it is handed (it is stopped or far behind), so the agent's last \
             output is not forwarded"
        }
    }

    fn outcome(&self, status: ExitStatus) -> Outcome {
        let agent_signal = status.signal();
        // Stopping the agent after the client left is the normal end of a
        // session, not the agent's failure.
        let exit_code = if self.stopped_by_us && self.passed_on.is_empty() { 0 } else { shell_code(status) };
        Outcome { exit_code, agent_signal, reason: self.reason(agent_signal) }
    }

    /// Why the run ended, in words: what was passed on to the agent or
    /// noticed of the client, then what ended the agent, so that the words
    /// never name a signal other than the one that ended it as its end.
    fn reason(&self, agent_signal: Option<i32>) -> String {
        let before = if !self.passed_on.is_empty() {
            format!("{} passed on to the agent", signal_list(&self.passed_on))
        } else if self.client_closed {
            "the client closed".to_owned()
        } else {
            String::new()
        };
        let ended = match agent_signal {
            _ if self.stopped_by_us => "the agent was stopped after the grace period".to_owned(),
            // The signal passed on ended it: said already.
            Some(sig) if self.passed_on.contains(&sig) => String::new(),
            Some(sig) => format!("the agent was ended by signal {sig}, which acp-tee did not send"),
            None => "the agent exited".to_owned(),
        };
        let unread = match self.undelivered {
            [0, 0] => String::new(),
            [out, 0] => format!("the client stopped reading acp-tee's stdout: the last {out} bytes of the agent's stdout recorded were not delivered, and the agent's stdout was closed (a broken pipe, as without acp-tee)"),
            [0, err] => format!("the client stopped reading acp-tee's stderr: the last {err} bytes of the agent's stderr recorded were not delivered, and the agent's stderr was closed (a broken pipe, as without acp-tee)"),
            [out, err] => format!("the client stopped reading acp-tee's output: the last {out} bytes of the agent's stdout and {err} of its stderr recorded were not delivered, and both were closed (a broken pipe, as without acp-tee)"),
        };
        [before, ended, unread].into_iter().filter(|part| !part.is_empty()).collect::<Vec<_>>().join("; ")
    }
}

/// "signal 2", "signals 2 and 15", "signals 2, 15 and 1".
fn signal_list(signals: &[i32]) -> String {
    match signals {
        [one] => format!("signal {one}"),
        [rest @ .., last] => {
            let rest: Vec<String> = rest.iter().map(i32::to_string).collect();
            format!("signals {} and {last}", rest.join(", "))
        }
        [] => String::new(),
    }
}

/// True when nothing can write to pipe `file` any more (`POLLHUP` on its read end).
fn hung_up(file: &File) -> bool {
    poll_now(file, 0) & libc::POLLHUP != 0
}

/// True when `file` takes a write without blocking.
fn writable(file: &File) -> bool {
    poll_now(file, libc::POLLOUT) & (libc::POLLOUT | libc::POLLERR) != 0
}

/// The events `poll(2)` reports on `file` at once (`POLLHUP` and `POLLERR`
/// always, besides `events`).
fn poll_now(file: &File, events: libc::c_short) -> libc::c_short {
    let mut fd = libc::pollfd { fd: file.as_raw_fd(), events, revents: 0 };
    // SAFETY: one pollfd for a descriptor the Arc keeps open; no waiting.
    let n = unsafe { libc::poll(&mut fd, 1, 0) };
    if n == 1 {
        fd.revents
    } else {
        0
    }
}
