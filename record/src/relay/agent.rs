//! Starting the agent and signalling it.

use std::io;
use std::os::fd::AsRawFd;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::process::{Child, Command, ExitStatus, Stdio};

/// Why the agent could not be started.
#[derive(Debug, thiserror::Error)]
pub enum SpawnError {
    /// No such program.
    #[error("cannot start agent `{program}`: no such program (is it on PATH?)")]
    NotFound {
        /// The program named on the command line.
        program: String,
    },
    /// The program exists but may not be run.
    #[error("cannot start agent `{program}`: permission denied (is it executable?)")]
    NotExecutable {
        /// The program named on the command line.
        program: String,
    },
    /// Anything else `exec` reported.
    #[error("cannot start agent `{program}`: {source}")]
    Other {
        /// The program named on the command line.
        program: String,
        /// Why.
        source: io::Error,
    },
}

impl SpawnError {
    /// The exit code a shell uses for the same failure (127 not found, 126 not executable).
    pub fn exit_code(&self) -> i32 {
        match self {
            SpawnError::NotFound { .. } => 127,
            SpawnError::NotExecutable { .. } | SpawnError::Other { .. } => 126,
        }
    }
}

/// Starts `command` with piped stdio, in a process group of its own, set to be
/// killed (SIGKILL) if acp-tee dies first, even by SIGKILL.
///
/// Must be called from the thread that lives as long as the process (main):
/// Linux sends the parent-death signal when the *thread* that forked exits.
pub fn spawn(command: &[String]) -> Result<Child, SpawnError> {
    let program = command[0].clone();
    let parent = std::process::id() as libc::pid_t;
    let mut cmd = Command::new(&program);
    cmd.args(&command[1..]).stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped()).process_group(0);
    // SAFETY: the closure runs in the forked child before exec and only makes
    // async-signal-safe calls (prctl, getppid, _exit).
    unsafe {
        cmd.pre_exec(move || {
            if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL, 0, 0, 0) != 0 {
                return Err(io::Error::last_os_error());
            }
            // acp-tee may have died between fork and prctl.
            if libc::getppid() != parent {
                libc::_exit(1);
            }
            Ok(())
        });
    }
    let child = cmd.spawn().map_err(|source| match source.kind() {
        io::ErrorKind::NotFound => SpawnError::NotFound { program },
        io::ErrorKind::PermissionDenied => SpawnError::NotExecutable { program },
        _ => SpawnError::Other { program, source },
    })?;
    let fds = [
        child.stdin.as_ref().map(|p| p.as_raw_fd()),
        child.stdout.as_ref().map(|p| p.as_raw_fd()),
        child.stderr.as_ref().map(|p| p.as_raw_fd()),
    ];
    for fd in fds.into_iter().flatten() {
        // SAFETY: fcntl on a pipe we own; failure only leaves the default size.
        unsafe { libc::fcntl(fd, libc::F_SETPIPE_SZ, AGENT_PIPE_BYTES) };
    }
    Ok(child)
}

/// The agent's pipes are enlarged to this many bytes (the most Linux allows
/// without privileges): fewer, larger reads and writes in a burst.
const AGENT_PIPE_BYTES: libc::c_int = 1 << 20;

/// Sends `signal` to the agent's process group (the agent and what it started).
pub fn signal_group(pid: u32, signal: i32) {
    // SAFETY: kill has no memory-safety preconditions.
    let rc = unsafe { libc::kill(-(pid as libc::pid_t), signal) };
    if rc != 0 {
        tracing::debug!("signal {signal} to agent group {pid}: {}", io::Error::last_os_error());
    }
}

/// The code a shell would report for `status`: the exit code, or 128 + signal.
pub fn shell_code(status: ExitStatus) -> i32 {
    status.code().or_else(|| status.signal().map(|s| 128 + s)).unwrap_or(1)
}
