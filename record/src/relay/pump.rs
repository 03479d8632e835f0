//! Moving bytes from one stream to another, handing a copy off first.

use crate::handoff::{Handed, HandoffWriter, HEADER_LEN};
use acp_tee_shared::Direction;
use std::fs::File;
use std::io::{self, ErrorKind, Read, Write};
use std::os::fd::{AsFd, AsRawFd, BorrowedFd};
use std::os::unix::fs::FileTypeExt;

/// Bytes moved per chunk at most. The agent's pipes hold 1 MiB, a client's
/// usually 64 KiB.
const CHUNK: usize = 256 * 1024;

/// Copies `from` to `to` until `from` ends, handing every chunk to the recorder
/// before forwarding it, so nothing reaches a peer that the recorder was not
/// given first. A destination that fails (peer gone) stops forwarding but not
/// reading: what still arrives is recorded. Once the run is over (the handoff
/// is closed) nothing more is forwarded: the pump stops.
///
/// When `from` is a pipe and the recorder has a data pipe for `dir`, chunks
/// are not copied through this process: `tee(2)` duplicates them into the
/// data pipe and `splice(2)` moves them on (see [`crate::handoff`]).
/// Otherwise each chunk is read, written to the handoff pipe, then forwarded.
///
/// The caller owns both descriptors, so it can report the end before the
/// receiving side sees end-of-file (and, for the agent, reacts to it).
///
/// When the client stops reading the agent's output (its end of our stdout
/// or stderr is closed), the agent's stream is cut there too: our read end
/// of its pipe is closed, so the agent's next write fails with a broken
/// pipe as it would, connected directly, instead of it writing on into the
/// recording for ever. Returns the bytes recorded that the client never
/// got (zero unless that happened).
pub fn pump(from: &File, to: &File, dir: Direction, handoff: &HandoffWriter) -> u64 {
    let mut buf = vec![0u8; HEADER_LEN + CHUNK];
    let mut out = Forward { forwarding: true, splicing: true, undelivered: 0 };
    let from_is_pipe = from.metadata().is_ok_and(|m| m.file_type().is_fifo());
    grow_pipe(from);
    grow_pipe(to);
    loop {
        if from_is_pipe {
            if let Some(data) = handoff.data_pipe(dir) {
                match tee(from.as_fd(), data, CHUNK) {
                    Ok(0) => break,
                    Ok(n) => match handoff.chunk_ref(dir, n) {
                        Handed::Yes => {
                            out.pass(from, to, n, dir, &mut buf[HEADER_LEN..]);
                            out.cut_when_unread(from, dir);
                            continue;
                        }
                        // A new recorder, which takes chunks by copy: the
                        // chunk is still in `from`.
                        Handed::Again => continue,
                        Handed::Closed => return out.undelivered,
                    },
                    Err(e) if e.kind() == ErrorKind::Interrupted => continue,
                    // The recorder died (it is replaced), or tee is not
                    // possible here: copy.
                    Err(e) => handoff.data_pipe_failed(dir, &e),
                }
            }
        }
        let n = match (&*from).read(&mut buf[HEADER_LEN..]) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == ErrorKind::Interrupted => continue,
            Err(e) => {
                tracing::debug!("{dir}: read failed: {e}");
                break;
            }
        };
        if !handoff.chunk(dir, &mut buf[..HEADER_LEN + n]) {
            return out.undelivered;
        }
        out.write(to, &buf[HEADER_LEN..HEADER_LEN + n], dir);
        out.cut_when_unread(from, dir);
    }
    handoff.eof(dir);
    out.undelivered
}

/// Pipes acp-tee reads or writes are enlarged to at least a chunk.
const PIPE_BYTES: libc::c_int = CHUNK as libc::c_int;

/// Enlarges `file` to [`PIPE_BYTES`] when it is a smaller pipe (the client's
/// stdin and stdout usually hold 64 KiB): a burst then moves in chunks of up
/// to [`CHUNK`], each one `tee`, one reference to the recorder and one
/// `splice`, not 64 KiB ones. Never shrinks a pipe; where the system refuses
/// (a per-user limit on pipe memory), the pipe keeps its size.
fn grow_pipe(file: &File) {
    if !file.metadata().is_ok_and(|m| m.file_type().is_fifo()) {
        return;
    }
    let fd = file.as_raw_fd();
    // SAFETY: fcntl on a descriptor we hold; failure changes nothing.
    unsafe {
        if libc::fcntl(fd, libc::F_GETPIPE_SZ) < PIPE_BYTES {
            libc::fcntl(fd, libc::F_SETPIPE_SZ, PIPE_BYTES);
        }
    }
}

/// The forwarding side of one pump.
struct Forward {
    /// False once the receiving side failed: chunks are still recorded.
    forwarding: bool,
    /// False once `splice` proved impossible for this destination.
    splicing: bool,
    /// Bytes handed off (so recorded) but not forwarded.
    undelivered: u64,
}

impl Forward {
    /// Moves the next `n` bytes of `from` (already handed off) to `to`, by
    /// `splice` when it can, else by reading them into `buf` and writing.
    fn pass(&mut self, from: &File, to: &File, mut n: usize, dir: Direction, buf: &mut [u8]) {
        while n > 0 {
            if self.forwarding && self.splicing {
                match splice(from.as_fd(), to.as_fd(), n) {
                    Ok(0) => self.splicing = false,
                    Ok(k) => n -= k,
                    Err(e) if e.kind() == ErrorKind::Interrupted => {}
                    // The destination does not take splice (a terminal, a file
                    // opened for appending): copy from now on.
                    Err(e) if e.raw_os_error() == Some(libc::EINVAL) => self.splicing = false,
                    Err(e) => self.fail(&e, dir),
                }
                continue;
            }
            let want = n.min(buf.len());
            match (&*from).read(&mut buf[..want]) {
                Ok(0) => {
                    // Cannot happen: the bytes were in the pipe when tee saw them.
                    tracing::debug!("{dir}: {n} duplicated bytes vanished from the pipe");
                    return;
                }
                Ok(k) => {
                    n -= k;
                    self.write(to, &buf[..k], dir);
                }
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(e) => {
                    tracing::debug!("{dir}: read failed: {e}");
                    return;
                }
            }
        }
    }

    /// Once the client stopped reading the agent's output (`dir` is one of
    /// the agent's streams and forwarding failed), closes our read end of
    /// the agent's pipe `from`: the agent's next write fails as it would
    /// without acp-tee, and `from` reads end-of-file from now on.
    fn cut_when_unread(&self, from: &File, dir: Direction) {
        if self.forwarding || dir == Direction::ClientToAgent {
            return;
        }
        if let Ok(null) = File::open("/dev/null") {
            // SAFETY: dup2 onto a descriptor `from` keeps open; it then
            // refers to /dev/null and the pipe's read end is closed.
            unsafe { libc::dup2(null.as_raw_fd(), from.as_raw_fd()) };
        }
    }

    /// Writes `bytes` to `to` while forwarding; counts what does not get there.
    fn write(&mut self, mut to: &File, mut bytes: &[u8], dir: Direction) {
        while self.forwarding && !bytes.is_empty() {
            match to.write(bytes) {
                Ok(0) => self.fail(&io::Error::from(ErrorKind::WriteZero), dir),
                Ok(k) => bytes = &bytes[k..],
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(e) => self.fail(&e, dir),
            }
        }
        self.undelivered += bytes.len() as u64;
    }

    fn fail(&mut self, e: &io::Error, dir: Direction) {
        tracing::debug!("{dir}: the receiving side closed ({e}); still recording");
        self.forwarding = false;
    }
}

/// `tee(2)`: duplicates up to `len` bytes at the front of pipe `from` into
/// pipe `to` without consuming them; waits for data, 0 at end-of-file.
fn tee(from: BorrowedFd, to: BorrowedFd, len: usize) -> io::Result<usize> {
    // SAFETY: tee on two descriptors that stay open for the call.
    let n = unsafe { libc::tee(from.as_raw_fd(), to.as_raw_fd(), len, 0) };
    if n < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(n as usize)
    }
}

/// `splice(2)` of up to `len` bytes from pipe `from` to `to`.
fn splice(from: BorrowedFd, to: BorrowedFd, len: usize) -> io::Result<usize> {
    // SAFETY: splice on two descriptors that stay open for the call; null
    // offsets mean "the descriptors' own positions".
    let n = unsafe {
        libc::splice(
            from.as_raw_fd(),
            std::ptr::null_mut(),
            to.as_raw_fd(),
            std::ptr::null_mut(),
            len,
            libc::SPLICE_F_MOVE,
        )
    };
    if n < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(n as usize)
    }
}
