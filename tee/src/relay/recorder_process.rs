//! Starting the recorder process that the relay hands its chunks to.

use crate::handoff::HandoffWriter;
use std::os::fd::AsRawFd;
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::Instant;

/// The handoff pipe is enlarged to this many bytes (Linux allows up to 1 MiB
/// without privileges), so the relay can run this far ahead of the recorder.
const PIPE_BYTES: libc::c_int = 1 << 20;

/// Starts `acp-tee __recorder --db DB` reading a pipe; returns the process and
/// the writer for the pipe. If it cannot start, warns once and returns a
/// writer that drops everything (forwarding goes on regardless). With
/// `redact` (rules, possibly none) the recorder masks secrets in what it
/// stores: the default rules and those given.
pub fn start(db: &Path, t0: Instant, redact: Option<&[String]>) -> (Option<Child>, HandoffWriter) {
    let spawned = std::env::current_exe().and_then(|exe| {
        let mut cmd = Command::new(exe);
        cmd.arg("__recorder").arg("--db").arg(db);
        if let Some(rules) = redact {
            cmd.arg("--redact");
            for rule in rules {
                cmd.arg("--redact-rule").arg(rule);
            }
        }
        cmd.stdin(Stdio::piped())
            .stdout(Stdio::null())
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
            (Some(child), HandoffWriter::new(pipe, t0))
        }
        Err(e) => {
            tracing::warn!("cannot start the recorder ({e}); forwarding goes on without recording");
            (None, HandoffWriter::disconnected(t0))
        }
    }
}
