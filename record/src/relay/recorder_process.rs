//! Starting the recorder process that the relay hands its chunks to, and
//! parting from it when the run ends.
//!
//! The recorder holds none of the client's stdio: its stdin is the handoff
//! pipe, its stdout a status pipe (one byte once its trace exists) and its
//! stderr a log pipe whose lines the relay passes on to its own stderr while
//! it runs. So once acp-tee exits, the client sees end-of-file on all three
//! streams, however long the recorder still needs to store the run.

use crate::handoff::{HandoffWriter, Replacement};
use std::fs::File;
use std::io::{ErrorKind, Read, Write};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// The handoff pipe is enlarged to this many bytes (Linux allows up to 1 MiB
/// without privileges), so the relay can run this far ahead of the recorder.
const PIPE_BYTES: libc::c_int = 1 << 20;

/// The descriptor numbers the recorder gets the data pipes' read ends on, in
/// [`acp_tee_shared::Direction::ALL`] order.
pub const DATA_FDS: [i32; 3] = [3, 4, 5];

/// How long a run waits, at most, before forwarding anything, for its
/// recorder to have created the trace in the store (a new store, a store
/// another process holds locked): so that no one reading the store right
/// after the run can miss a trace that was forwarded, and so that a store
/// that cannot be opened is warned about on our stderr (the recorder warns
/// before it answers). The relay never waits for the run to be stored.
pub const RECORDING_READY_WAIT: Duration = Duration::from_secs(2);

/// How long the relay waits at the end of the run, at most, for a recorder
/// that was killed to be replaced.
pub const REPLACEMENT_WAIT: Duration = Duration::from_secs(5);

/// Three pipes (read end, write end), close-on-exec, enlarged like the
/// handoff pipe.
fn data_pipes() -> std::io::Result<[(OwnedFd, OwnedFd); 3]> {
    Ok([pipe()?, pipe()?, pipe()?])
}

/// A pipe (read end, write end), close-on-exec, its write end enlarged to
/// [`PIPE_BYTES`] where the system allows.
fn pipe() -> std::io::Result<(OwnedFd, OwnedFd)> {
    let mut fds = [0; 2];
    // SAFETY: pipe2 fills two new descriptors, owned below.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: both descriptors are new and owned by nobody else.
    let (r, w) = unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
    // SAFETY: fcntl on a descriptor we own; failure only leaves the default size.
    unsafe { libc::fcntl(w.as_raw_fd(), libc::F_SETPIPE_SZ, PIPE_BYTES) };
    Ok((r, w))
}

/// The relay's side of its recorder process.
pub struct Recorder {
    /// Where the relay hands its chunks (or messages) to.
    pub handoff: Arc<HandoffWriter>,
    /// The recorder's stdout: one byte once its trace exists.
    status: Option<File>,
    /// Pass the recorders' warnings on to our stderr (one per recorder: a
    /// replacement has its own).
    logs: Arc<Mutex<Vec<Arc<LogRelay>>>>,
}

/// How to start a recorder process for this run.
#[derive(Clone)]
struct Spawner {
    db: PathBuf,
    redact: Option<Vec<String>>,
    agent_group: Option<u32>,
    otlp: Option<crate::otlp::LiveOptions>,
}

/// A recorder process just started.
struct Spawned {
    /// The process.
    child: std::process::Child,
    /// Its handoff pipe.
    handoff: std::process::ChildStdin,
    /// Its data pipes' write ends, when there are data pipes.
    data: Option<[OwnedFd; 3]>,
    /// Its stdout.
    status: Option<File>,
    /// Its stderr, passed on.
    log: Option<Arc<LogRelay>>,
}

impl Spawner {
    /// Starts `acp-tee __recorder --db DB` reading a new pipe (a replacement
    /// for one that died, with `resume`: it gets no data pipes).
    fn spawn(&self, resume: bool) -> std::io::Result<Spawned> {
        // Data pipes for chunks passed by reference; without them (and for a
        // replacement) chunks are copied through the handoff pipe.
        let data = match if resume { Ok(None) } else { data_pipes().map(Some) } {
            Ok(pipes) => pipes,
            Err(e) => {
                tracing::debug!("no data pipes for the recorder ({e}); chunks are copied");
                None
            }
        };
        let mut cmd = Command::new(std::env::current_exe()?);
        cmd.arg("__recorder").arg(crate::proc::option_arg("db", &self.db));
        if let Some(pgid) = self.agent_group {
            cmd.arg("--agent-group").arg(pgid.to_string());
        }
        if resume {
            cmd.arg("--resume");
        }
        if let Some(pipes) = &data {
            cmd.arg("--data-fds").arg(format!("{},{},{}", DATA_FDS[0], DATA_FDS[1], DATA_FDS[2]));
            pass_data_fds(&mut cmd, pipes.each_ref().map(|(r, _)| r.as_raw_fd()));
        }
        if let Some(rules) = &self.redact {
            cmd.arg("--redact");
            for rule in rules {
                cmd.arg(crate::proc::option_arg("redact-rule", rule));
            }
        }
        if let Some(otlp) = &self.otlp {
            cmd.args(otlp.recorder_args());
        }
        let mut child = cmd
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            // Its own process group: a Ctrl-C or a kill of our group must not
            // stop it before it has stored what we handed it.
            .process_group(0)
            .spawn()?;
        let handoff = child.stdin.take().expect("stdin was piped");
        // SAFETY: fcntl on a descriptor we own; failure only leaves the default size.
        unsafe { libc::fcntl(handoff.as_raw_fd(), libc::F_SETPIPE_SZ, PIPE_BYTES) };
        let status = child.stdout.take().map(|p| File::from(OwnedFd::from(p)));
        let log = child.stderr.take().and_then(|p| LogRelay::start(File::from(OwnedFd::from(p))));
        // Waited for on a thread of its own (see `watch`); the recorder
        // outlives us while it stores the run. Our copies of the data pipes'
        // read ends close here.
        Ok(Spawned { child, handoff, data: data.map(|pipes| pipes.map(|(_, w)| w)), status, log })
    }
}

impl Recorder {
    /// Starts `acp-tee __recorder --db DB` reading a pipe. If it cannot
    /// start, warns once and hands off to a writer that drops everything
    /// (forwarding goes on regardless). With `redact` (rules, possibly none)
    /// the recorder masks secrets in what it stores: the default rules and
    /// those given. With `otlp`, it sends spans live (docs/otlp.md). With `agent_group`, the recorder kills that process group
    /// should the relay be killed before the run ended. Should the recorder
    /// die mid-run, the handoff starts another that continues its trace
    /// ([`HandoffWriter::set_respawn`]).
    pub fn start(
        db: &Path,
        t0: Instant,
        redact: Option<&[String]>,
        agent_group: Option<u32>,
        otlp: Option<&crate::otlp::LiveOptions>,
    ) -> Recorder {
        let spawner =
            Spawner { db: db.to_owned(), redact: redact.map(<[String]>::to_vec), agent_group, otlp: otlp.cloned() };
        let logs = Arc::new(Mutex::new(Vec::new()));
        match spawner.spawn(false) {
            Ok(first) => {
                let writer = match first.data {
                    Some(data) => HandoffWriter::with_data_pipes(first.handoff, t0, data),
                    None => HandoffWriter::new(first.handoff, t0),
                };
                logs.lock().unwrap_or_else(|e| e.into_inner()).extend(first.log);
                let handoff = Arc::new(writer);
                let weak = Arc::downgrade(&handoff);
                let first_pid = first.child.id();
                watch(first.child, weak.clone());
                let respawn_logs = logs.clone();
                handoff.set_respawn(
                    first_pid,
                    Box::new(move || {
                        let spawned = spawner
                            .spawn(true)
                            .map_err(|e| tracing::warn!("cannot start a recorder to replace the one that died: {e}"))
                            .ok()?;
                        respawn_logs.lock().unwrap_or_else(|e| e.into_inner()).extend(spawned.log);
                        let pid = spawned.child.id();
                        watch(spawned.child, weak.clone());
                        let status = spawned.status;
                        let wait_until_recording = Box::new(move || {
                            if let Some(status) = status {
                                readable(&status, RECORDING_READY_WAIT);
                            }
                        });
                        Some(Replacement { out: Box::new(spawned.handoff), pid, wait_until_recording })
                    }),
                );
                Recorder { handoff, status: first.status, logs }
            }
            Err(e) => {
                tracing::warn!("cannot start the recorder ({e}); forwarding goes on without recording");
                Recorder { handoff: Arc::new(HandoffWriter::disconnected(t0)), status: None, logs }
            }
        }
    }

    /// Waits, at most [`RECORDING_READY_WAIT`], until the recorder says its
    /// trace exists in the store (or that it cannot be made): one byte on
    /// its stdout, written after it read the run's start. Call after
    /// [`HandoffWriter::start`].
    pub fn wait_until_recording(&mut self) {
        let Some(status) = self.status.take() else { return };
        if !readable(&status, RECORDING_READY_WAIT) {
            tracing::debug!("the recorder did not say within {RECORDING_READY_WAIT:?} that the trace exists; going on");
        }
        // Closing our end is all that is left to do: the byte (or end-of-file
        // of a recorder that died) needs no reading.
    }

    /// Parts from the recorder once the run is over and the handoff closed:
    /// passes on the warnings it wrote so far and stops doing so. The
    /// recorder goes on storing the run on its own; what it warns about from
    /// now on is not shown (the trace's missing count says what was lost).
    ///
    /// Should the recorder be dying (killed just before, its threads not all
    /// gone), the run's end went to it and is lost with it: waits (at most
    /// [`REPLACEMENT_WAIT`]) for it to be replaced, which tells the new one
    /// the run's end again.
    pub fn part(&mut self) {
        let deadline = Instant::now() + REPLACEMENT_WAIT;
        while !self.handoff.recorder_settled() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(10));
        }
        for log in self.logs.lock().unwrap_or_else(|e| e.into_inner()).drain(..) {
            log.stop();
        }
    }
}

/// Gives the recorder, once forked, the data pipes' read ends `reads` on
/// [`DATA_FDS`].
fn pass_data_fds(cmd: &mut Command, reads: [i32; 3]) {
    // SAFETY: runs in the forked child before exec and only makes
    // async-signal-safe calls (fcntl, dup2).
    unsafe {
        cmd.pre_exec(move || {
            // First out of the way (a source may sit on a target number),
            // then onto the agreed numbers; dup2 clears close-on-exec on the
            // copies.
            let mut high = [0; 3];
            for (h, fd) in high.iter_mut().zip(reads) {
                *h = libc::fcntl(fd, libc::F_DUPFD_CLOEXEC, 64);
                if *h < 0 {
                    return Err(std::io::Error::last_os_error());
                }
            }
            for (h, target) in high.into_iter().zip(DATA_FDS) {
                if libc::dup2(h, target) < 0 {
                    return Err(std::io::Error::last_os_error());
                }
            }
            Ok(())
        });
    }
}

/// Waits up to `timeout` for `file` to have something to read (or to end);
/// true when it has.
fn readable(file: &File, timeout: Duration) -> bool {
    let mut fd = libc::pollfd { fd: file.as_raw_fd(), events: libc::POLLIN, revents: 0 };
    let ms = timeout.as_millis().min(i32::MAX as u128) as libc::c_int;
    // SAFETY: one pollfd for a descriptor `file` keeps open.
    let n = unsafe { libc::poll(&mut fd, 1, ms) };
    n == 1
}

/// Copies what the recorder writes to its stderr onto ours, as it comes,
/// until [`LogRelay::stop`].
struct LogRelay {
    /// The read end of the recorder's stderr, non-blocking.
    pipe: File,
    /// Held while copying; true once stopped.
    stopped: Mutex<bool>,
}

impl LogRelay {
    /// Starts copying from `pipe` on a thread of its own.
    fn start(pipe: File) -> Option<Arc<LogRelay>> {
        // SAFETY: fcntl on a descriptor we own.
        unsafe {
            let flags = libc::fcntl(pipe.as_raw_fd(), libc::F_GETFL);
            libc::fcntl(pipe.as_raw_fd(), libc::F_SETFL, flags | libc::O_NONBLOCK);
        }
        let relay = Arc::new(LogRelay { pipe, stopped: Mutex::new(false) });
        let copier = relay.clone();
        std::thread::Builder::new()
            .name("recorder-log".into())
            .spawn(move || loop {
                readable(&copier.pipe, Duration::from_secs(3600));
                let stopped = copier.stopped.lock().unwrap_or_else(|e| e.into_inner());
                if *stopped || !copier.copy_available() {
                    return;
                }
            })
            .map_err(|e| tracing::debug!("the recorder's warnings are not passed on: {e}"))
            .ok()?;
        Some(relay)
    }

    /// Copies what the pipe holds now to our stderr; false once it ended.
    /// Errors writing our stderr are ignored: a warning never stops anything.
    fn copy_available(&self) -> bool {
        let mut buf = [0u8; 8192];
        loop {
            match (&self.pipe).read(&mut buf) {
                Ok(0) => return false,
                Ok(n) => {
                    let _ = std::io::stderr().write_all(&buf[..n]);
                }
                Err(e) if e.kind() == ErrorKind::WouldBlock => return true,
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(_) => return false,
            }
        }
    }

    /// Copies what was written so far and stops: nothing is copied after.
    fn stop(&self) {
        let mut stopped = self.stopped.lock().unwrap_or_else(|e| e.into_inner());
        if !*stopped {
            self.copy_available();
            *stopped = true;
        }
    }
}

/// Waits for recorder `child` on a thread of its own and tells `handoff`
/// when it exits (a recorder that dies mid-run is replaced).
fn watch(mut child: std::process::Child, handoff: std::sync::Weak<HandoffWriter>) {
    let _ = std::thread::Builder::new().name("recorder-watch".into()).spawn(move || {
        let pid = child.id();
        if let Ok(status) = child.wait() {
            if let Some(handoff) = handoff.upgrade() {
                handoff.recorder_exited(pid, status.signal().is_some());
            }
        }
    });
}
