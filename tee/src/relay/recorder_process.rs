//! Starting the recorder process that the relay hands its chunks to.

use crate::handoff::HandoffWriter;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::Instant;

/// The handoff pipe is enlarged to this many bytes (Linux allows up to 1 MiB
/// without privileges), so the relay can run this far ahead of the recorder.
const PIPE_BYTES: libc::c_int = 1 << 20;

/// The descriptor numbers the recorder gets the data pipes' read ends on, in
/// [`acp_tee_shared::Direction::ALL`] order.
pub const DATA_FDS: [i32; 3] = [3, 4, 5];

/// Three pipes (read end, write end), close-on-exec, enlarged like the
/// handoff pipe.
fn data_pipes() -> std::io::Result<[(OwnedFd, OwnedFd); 3]> {
    let one = || -> std::io::Result<(OwnedFd, OwnedFd)> {
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
    };
    Ok([one()?, one()?, one()?])
}

/// How long a run waits, at most, before forwarding anything, for its
/// recorder to have created the trace in the store (a new store, a store
/// another process holds locked): so that no one reading the store right
/// after the run can miss a trace that was forwarded.
pub const RECORDING_READY_WAIT: std::time::Duration = std::time::Duration::from_secs(2);

/// Waits, at most [`RECORDING_READY_WAIT`], until `recorder` says its trace
/// exists in the store (or that it cannot be made): one byte on its stdout,
/// written after it read the run's start. Call after [`HandoffWriter::start`].
pub fn wait_until_recording(recorder: Option<&mut Child>) {
    let Some(out) = recorder.and_then(|r| r.stdout.take()) else { return };
    let mut poll = libc::pollfd { fd: out.as_raw_fd(), events: libc::POLLIN, revents: 0 };
    let ms = RECORDING_READY_WAIT.as_millis() as libc::c_int;
    // SAFETY: one pollfd for a descriptor we own, for the duration of the call.
    let ready = unsafe { libc::poll(&mut poll, 1, ms) };
    if ready <= 0 {
        tracing::debug!("the recorder did not say within {RECORDING_READY_WAIT:?} that the trace exists; going on");
    }
    // Closing our end is all that is left to do: the byte (or end-of-file
    // of a recorder that died) needs no reading.
}

/// Starts `acp-tee __recorder --db DB` reading a pipe; returns the process and
/// the writer for the pipe. If it cannot start, warns once and returns a
/// writer that drops everything (forwarding goes on regardless). With
/// `redact` (rules, possibly none) the recorder masks secrets in what it
/// stores: the default rules and those given.
pub fn start(db: &Path, t0: Instant, redact: Option<&[String]>) -> (Option<Child>, HandoffWriter) {
    // Data pipes for chunks passed by reference; without them chunks are
    // copied through the handoff pipe.
    let data = match data_pipes() {
        Ok(pipes) => Some(pipes),
        Err(e) => {
            tracing::debug!("no data pipes for the recorder ({e}); chunks are copied");
            None
        }
    };
    let spawned = std::env::current_exe().and_then(|exe| {
        let mut cmd = Command::new(exe);
        cmd.arg("__recorder").arg("--db").arg(db);
        if let Some(pipes) = &data {
            let reads = pipes.each_ref().map(|(r, _)| r.as_raw_fd());
            cmd.arg("--data-fds").arg(format!("{},{},{}", DATA_FDS[0], DATA_FDS[1], DATA_FDS[2]));
            // SAFETY: runs in the forked child before exec and only makes
            // async-signal-safe calls (fcntl, dup2).
            unsafe {
                cmd.pre_exec(move || {
                    // First out of the way (a source may sit on a target
                    // number), then onto the agreed numbers; dup2 clears
                    // close-on-exec on the copies.
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
        if let Some(rules) = redact {
            cmd.arg("--redact");
            for rule in rules {
                cmd.arg("--redact-rule").arg(rule);
            }
        }
        cmd.stdin(Stdio::piped())
            // One byte when the trace exists (see `wait_until_recording`).
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            // Its own process group: a Ctrl-C or a kill of our group must not
            // stop it before it has stored what we handed it.
            .process_group(0)
            .spawn()
    });
    match spawned {
        Ok(mut child) => {
            let pipe = child.stdin.take().expect("stdin was piped");
            // SAFETY: fcntl on a descriptor we own; failure only leaves the default size.
            unsafe { libc::fcntl(pipe.as_raw_fd(), libc::F_SETPIPE_SZ, PIPE_BYTES) };
            let writer = match data {
                // Our copies of the read ends close here; the recorder has its own.
                Some(pipes) => HandoffWriter::with_data_pipes(pipe, t0, pipes.map(|(_, w)| w)),
                None => HandoffWriter::new(pipe, t0),
            };
            (Some(child), writer)
        }
        Err(e) => {
            tracing::warn!("cannot start the recorder ({e}); forwarding goes on without recording");
            (None, HandoffWriter::disconnected(t0))
        }
    }
}
