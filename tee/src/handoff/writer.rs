//! The relay's end of the handoff pipe.

use super::*;
use std::io::Write;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;
use std::time::Instant;

/// Writes messages for the recorder; shared by the relay's threads.
///
/// A write that fails (the recorder died) is reported once on stderr, after
/// which messages are dropped and counted: forwarding never stops because the
/// recorder did.
pub struct HandoffWriter {
    inner: Mutex<Inner>,
    start: Instant,
    /// Per direction, the data pipe that chunk references point into.
    data: [Option<DataPipe>; 3],
}

/// The relay's end of one direction's data pipe.
struct DataPipe {
    fd: OwnedFd,
    /// A `tee` into it failed (the recorder is gone): not used any more.
    failed: AtomicBool,
}

struct Inner {
    out: Option<Box<dyn Write + Send>>,
    lost_chunks: u64,
    /// [`HandoffWriter::close`] was called: the run is over.
    closed: bool,
}

impl HandoffWriter {
    /// Writes to `out`; timestamps count from `start`.
    pub fn new(out: impl Write + Send + 'static, start: Instant) -> Self {
        HandoffWriter {
            inner: Mutex::new(Inner { out: Some(Box::new(out)), lost_chunks: 0, closed: false }),
            start,
            data: [None, None, None],
        }
    }

    /// Like [`HandoffWriter::new`], with a data pipe per direction (in
    /// [`Direction::ALL`] order) for chunks passed by reference.
    pub fn with_data_pipes(out: impl Write + Send + 'static, start: Instant, data: [OwnedFd; 3]) -> Self {
        let mut w = Self::new(out, start);
        w.data = data.map(|fd| Some(DataPipe { fd, failed: AtomicBool::new(false) }));
        w
    }

    /// A writer that records nothing (no recorder could be started).
    pub fn disconnected(start: Instant) -> Self {
        HandoffWriter {
            inner: Mutex::new(Inner { out: None, lost_chunks: 0, closed: false }),
            start,
            data: [None, None, None],
        }
    }

    /// The data pipe for chunks going `dir`, while it works.
    pub fn data_pipe(&self, dir: Direction) -> Option<BorrowedFd<'_>> {
        let pipe = self.data[dir_code(dir) as usize].as_ref()?;
        (!pipe.failed.load(Ordering::Relaxed)).then(|| pipe.fd.as_fd())
    }

    /// Stops using the data pipe for `dir` (writing to it failed).
    pub fn data_pipe_failed(&self, dir: Direction, why: &std::io::Error) {
        if let Some(pipe) = &self.data[dir_code(dir) as usize] {
            if !pipe.failed.swap(true, Ordering::Relaxed) {
                tracing::debug!("{dir}: data pipe to the recorder failed ({why}); handing chunks off by copy");
            }
        }
    }

    /// Hands off a chunk of `len` bytes read from `dir` that was already
    /// duplicated into `dir`'s data pipe.
    ///
    /// False once the writer was closed (the run ended): the chunk was not
    /// recorded, and the caller must not forward it.
    #[must_use = "a chunk not handed off must not be forwarded"]
    pub fn chunk_ref(&self, dir: Direction, len: usize) -> bool {
        let mut inner = self.lock();
        if inner.closed {
            return false;
        }
        let t_ns = self.now_ns();
        inner.write(&encode_header(TAG_CHUNK_REF, dir_code(dir), t_ns, len));
        true
    }

    /// Nanoseconds since the run started.
    pub fn now_ns(&self) -> u64 {
        self.start.elapsed().as_nanos() as u64
    }

    /// Announces the run.
    pub fn start(&self, start: &TraceStart) {
        let json = serde_json::to_vec(start).expect("a TraceStart always serialises");
        self.send_owned(TAG_START, 0, &json);
    }

    /// Hands off a chunk read from `dir`. `buf` holds [`HEADER_LEN`] bytes of
    /// room followed by the chunk; the header is written into that room so the
    /// whole message goes out in one `write`.
    ///
    /// False once the writer was closed (the run ended): the chunk was not
    /// recorded, and the caller must not forward it.
    #[must_use = "a chunk not handed off must not be forwarded"]
    pub fn chunk(&self, dir: Direction, buf: &mut [u8]) -> bool {
        let len = buf.len() - HEADER_LEN;
        let mut inner = self.lock();
        if inner.closed {
            return false;
        }
        // The timestamp is taken under the lock so that the recorder's order
        // (sequence numbers) and the timestamps always agree.
        let t_ns = self.now_ns();
        buf[..HEADER_LEN].copy_from_slice(&encode_header(TAG_CHUNK, dir_code(dir), t_ns, len));
        inner.write(buf);
        true
    }

    /// Hands off one logical message going `dir` with the envelope it travelled
    /// in on the other side of the hop. Payload: `raw_len: u32 LE`, `raw`,
    /// then the envelope (an empty envelope means none).
    ///
    /// False when the writer was closed first (another thread ended the run):
    /// the caller must not forward the message then, as it was not recorded.
    /// A writer that records nothing (no recorder, or the recorder died)
    /// still answers true: forwarding never depends on recording.
    #[must_use = "a message not handed off must not be forwarded"]
    pub fn frame(&self, dir: Direction, raw: &[u8], envelope: Option<&[u8]>) -> bool {
        let envelope = envelope.unwrap_or_default();
        let mut payload = Vec::with_capacity(4 + raw.len() + envelope.len());
        payload.extend_from_slice(&(raw.len() as u32).to_le_bytes());
        payload.extend_from_slice(raw);
        payload.extend_from_slice(envelope);
        self.send_owned(TAG_FRAME, dir_code(dir), &payload)
    }

    /// Tells the recorder that the stream going `dir` ended.
    pub fn eof(&self, dir: Direction) {
        self.send_owned(TAG_EOF, dir_code(dir), &[]);
    }

    /// Tells the recorder how the run ended.
    pub fn end(&self, end: &TraceEnd) {
        let json = serde_json::to_vec(end).expect("a TraceEnd always serialises");
        self.send_owned(TAG_END, 0, &json);
    }

    /// How many chunks could not be handed off.
    pub fn lost_chunks(&self) -> u64 {
        self.lock().lost_chunks
    }

    /// Closes the pipe, so the recorder sees end-of-file. The run is over:
    /// from now on nothing is handed off, so nothing may be forwarded.
    pub fn close(&self) {
        let mut inner = self.lock();
        inner.out = None;
        inner.closed = true;
    }

    /// Sends one message; false (and nothing sent) once the writer is closed.
    fn send_owned(&self, tag: u8, dir: u8, payload: &[u8]) -> bool {
        let mut inner = self.lock();
        if inner.closed {
            inner.lost_chunks += 1;
            return false;
        }
        let t_ns = self.now_ns();
        let mut msg = Vec::with_capacity(HEADER_LEN + payload.len());
        msg.extend_from_slice(&encode_header(tag, dir, t_ns, payload.len()));
        msg.extend_from_slice(payload);
        inner.write(&msg);
        true
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        // A thread that panicked while holding the lock left no half-written
        // state we could repair; carry on with what is there.
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl Inner {
    fn write(&mut self, msg: &[u8]) {
        let Some(out) = self.out.as_mut() else {
            self.lost_chunks += 1;
            return;
        };
        if let Err(e) = out.write_all(msg) {
            tracing::warn!("the recorder stopped taking frames ({e}); forwarding goes on without recording");
            self.out = None;
            self.lost_chunks += 1;
        }
    }
}
