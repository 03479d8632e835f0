//! The relay's end of the handoff pipe.

use super::*;
use std::io::Write;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;
use std::time::Instant;

/// How many times a run replaces a recorder that died, at most; past that,
/// forwarding goes on without recording.
pub const MAX_REPLACEMENTS: u32 = 3;

/// Writes messages for the recorder; shared by the relay's threads.
///
/// When the recorder dies mid-run (a write finds its pipe closed) and the
/// writer was given a way to start another ([`HandoffWriter::set_respawn`]),
/// a replacement is started and told what it continues ([`Resume`]); the
/// message is then sent to it. Otherwise (or past [`MAX_REPLACEMENTS`]) the
/// failure is reported once on stderr, after which messages are dropped and
/// counted: forwarding never stops because the recorder did.
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

/// A recorder process started to replace one that died. It has no data
/// pipes: chunks are copied to it through the handoff pipe (a chunk a pump
/// duplicated into the old data pipe is read again and copied).
pub struct Replacement {
    /// Its handoff pipe.
    pub out: Box<dyn Write + Send>,
    /// Its process id.
    pub pid: u32,
    /// Waits (bounded) until it has taken over the trace, once it was told
    /// what it continues: readers must not find the trace without a
    /// recorder meanwhile (they would end it as cut off).
    pub wait_until_recording: Box<dyn FnOnce() + Send>,
}

/// Starts a replacement recorder; `None` when it cannot.
pub type Respawn = Box<dyn FnMut() -> Option<Replacement> + Send>;

/// What became of a message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Sent {
    /// The recorder has it.
    Yes,
    /// The recorder was dead and is replaced; the message was not sent.
    Replaced,
    /// Dropped: no recorder.
    No,
}

struct Inner {
    out: Option<Box<dyn Write + Send>>,
    lost_chunks: u64,
    /// [`HandoffWriter::close`] was called: the run is over.
    closed: bool,
    /// The run's start message, for a replacement.
    start: Option<Vec<u8>>,
    /// Bytes of chunks handed off, per direction.
    handed: [u64; 3],
    /// Bytes of chunks that crossed, per direction, handed off or not (no
    /// recorder took them).
    crossed: [u64; 3],
    respawn: Option<Respawn>,
    /// Replacements left.
    replacements: u32,
    /// The recorder process handed to now, when known.
    recorder: Option<u32>,
    /// The run's end message, once sent, for a replacement.
    end: Option<Vec<u8>>,
    /// The last recorder process whose exit [`HandoffWriter::recorder_exited`] saw.
    exited: Option<u32>,
}

impl HandoffWriter {
    /// Writes to `out`; timestamps count from `start`.
    pub fn new(out: impl Write + Send + 'static, start: Instant) -> Self {
        HandoffWriter { inner: Mutex::new(Inner::new(Some(Box::new(out)))), start, data: [None, None, None] }
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
        HandoffWriter { inner: Mutex::new(Inner::new(None)), start, data: [None, None, None] }
    }

    /// The data pipe for chunks going `dir`, while it works.
    pub fn data_pipe(&self, dir: Direction) -> Option<BorrowedFd<'_>> {
        let pipe = self.data[dir_code(dir) as usize].as_ref()?;
        (!pipe.failed.load(Ordering::Relaxed)).then(|| pipe.fd.as_fd())
    }

    /// Gives the writer a way to start a replacement when the recorder
    /// (process `recorder`) dies.
    pub fn set_respawn(&self, recorder: u32, respawn: Respawn) {
        let mut inner = self.lock();
        inner.respawn = Some(respawn);
        inner.replacements = MAX_REPLACEMENTS;
        inner.recorder = Some(recorder);
    }

    /// Recorder process `pid` exited (`killed`: by a signal). A write finds
    /// a dead recorder's pipe closed only once all its threads are gone; what
    /// was written before that is lost with it, and when nothing is written
    /// after (the run was over) no write finds out at all. So the relay
    /// watches its recorder too: one that ends before the run was over, or
    /// killed, is replaced (and told the run's end again, when it was sent).
    pub fn recorder_exited(&self, pid: u32, killed: bool) {
        let mut inner = self.lock();
        inner.exited = Some(pid);
        if inner.recorder != Some(pid) || (inner.closed && !killed) {
            return;
        }
        if inner.replace(&self.data) && inner.closed {
            if let (Some(end), Some(out)) = (inner.end.clone(), inner.out.as_mut()) {
                let _ = out.write_all(&end);
            }
            inner.out = None;
        }
    }

    /// Stops using the data pipe for `dir`: a `tee` into it failed with
    /// `why`; chunks are handed off by copy from now on. When the recorder
    /// died (nothing reads the pipe), it is replaced first.
    pub fn data_pipe_failed(&self, dir: Direction, why: &std::io::Error) {
        let Some(pipe) = &self.data[dir_code(dir) as usize] else { return };
        if why.raw_os_error() == Some(libc::EPIPE) {
            let mut inner = self.lock();
            if !inner.closed && !pipe.failed.load(Ordering::Relaxed) {
                inner.replace(&self.data);
            }
        }
        if !pipe.failed.swap(true, Ordering::Relaxed) {
            tracing::debug!("{dir}: data pipe to the recorder failed ({why}); handing chunks off by copy");
        }
    }

    /// Hands off a chunk of `len` bytes read from `dir` that was already
    /// duplicated into `dir`'s data pipe.
    ///
    /// [`Handed::Closed`] once the writer was closed (the run ended): the
    /// chunk was not recorded, and the caller must not forward it.
    /// [`Handed::Again`] when the recorder had died and was replaced: the
    /// chunk's bytes went to the old data pipe, so the caller duplicates them
    /// again and hands them off anew.
    #[must_use = "a chunk not handed off must not be forwarded"]
    pub fn chunk_ref(&self, dir: Direction, len: usize) -> Handed {
        let mut inner = self.lock();
        if inner.closed {
            return Handed::Closed;
        }
        if self.data_pipe(dir).is_none() {
            // The recorder was replaced since the chunk was duplicated.
            return Handed::Again;
        }
        let t_ns = self.now_ns();
        match inner.try_write(&[&encode_header(TAG_CHUNK_REF, dir_code(dir), t_ns, len)], &self.data) {
            Sent::Yes => {
                inner.handed[dir_code(dir) as usize] += len as u64;
                inner.crossed[dir_code(dir) as usize] += len as u64;
                Handed::Yes
            }
            Sent::Replaced => Handed::Again,
            Sent::No => {
                inner.crossed[dir_code(dir) as usize] += len as u64;
                Handed::Yes
            }
        }
    }

    /// Nanoseconds since the run started.
    pub fn now_ns(&self) -> u64 {
        self.start.elapsed().as_nanos() as u64
    }

    /// Announces the run.
    pub fn start(&self, start: &TraceStart) {
        let json = serde_json::to_vec(start).expect("a TraceStart always serialises");
        let mut msg = encode_header(TAG_START, 0, 0, json.len()).to_vec();
        msg.extend_from_slice(&json);
        let mut inner = self.lock();
        inner.start = Some(msg.clone());
        inner.write(&[&msg], &self.data);
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
        if inner.write(&[buf], &self.data) == Sent::Yes {
            inner.handed[dir_code(dir) as usize] += len as u64;
        }
        inner.crossed[dir_code(dir) as usize] += len as u64;
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

    /// Like [`HandoffWriter::frame`], stamped `t_ns` (when the message
    /// crossed, taken by a caller that queued it; never later than now)
    /// rather than now. The caller keeps its stamps in the order it hands
    /// messages off (`http-proxy` takes them under one lock per connection).
    ///
    /// The message is written as it is, in parts, never copied: a message
    /// of `http-proxy` may be `MAX_MESSAGE_BYTES` large, and every copy
    /// counts in its memory bound.
    #[must_use = "a message not handed off must not be forwarded"]
    pub fn frame_at(&self, dir: Direction, t_ns: u64, raw: &[u8], envelope: Option<&[u8]>) -> bool {
        let envelope = envelope.unwrap_or_default();
        let Some((mut inner, t_ns)) = self.stamped(Some(t_ns)) else { return false };
        let header = encode_header(TAG_FRAME, dir_code(dir), t_ns, 4 + raw.len() + envelope.len());
        let len = (raw.len() as u32).to_le_bytes();
        inner.write(&[&header, &len, raw, envelope], &self.data);
        true
    }

    /// Hands off `data` read going `dir` at `t_ns` (as [`HandoffWriter::frame_at`]
    /// stamps), copied: `http-proxy` writes its notes on the stderr lane so.
    #[must_use = "a chunk not handed off must not be forwarded"]
    pub fn chunk_at(&self, dir: Direction, t_ns: u64, data: &[u8]) -> bool {
        let mut inner = self.lock();
        if inner.closed {
            return false;
        }
        let mut msg = Vec::with_capacity(HEADER_LEN + data.len());
        msg.extend_from_slice(&encode_header(TAG_CHUNK, dir_code(dir), t_ns.min(self.now_ns()), data.len()));
        msg.extend_from_slice(data);
        if inner.write(&[&msg], &self.data) == Sent::Yes {
            inner.handed[dir_code(dir) as usize] += data.len() as u64;
        }
        inner.crossed[dir_code(dir) as usize] += data.len() as u64;
        true
    }

    /// Tells the recorder that the stream going `dir` ended.
    pub fn eof(&self, dir: Direction) {
        self.send_owned(TAG_EOF, dir_code(dir), &[]);
    }

    /// Tells the recorder how the run ended.
    pub fn end(&self, end: &TraceEnd) {
        let json = serde_json::to_vec(end).expect("a TraceEnd always serialises");
        let mut inner = self.lock();
        if inner.closed {
            return;
        }
        let mut msg = encode_header(TAG_END, 0, self.now_ns(), json.len()).to_vec();
        msg.extend_from_slice(&json);
        inner.end = Some(msg.clone());
        inner.write(&[&msg], &self.data);
    }

    /// False while the recorder handed to is dying (killed, its threads
    /// not all gone yet: what was written to it since is lost, and it is
    /// about to be replaced), or dead and not yet seen exiting.
    pub fn recorder_settled(&self) -> bool {
        let inner = self.lock();
        match inner.recorder {
            None => true,
            Some(pid) => inner.exited == Some(pid) || running(pid),
        }
    }

    /// Bytes of chunks that crossed so far, per direction in
    /// [`Direction::ALL`] order, whether a recorder took them or not.
    pub fn crossed(&self) -> [u64; 3] {
        self.lock().crossed
    }

    /// How many chunks could not be handed off.
    #[cfg(test)]
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
        self.send_at(tag, dir, None, payload)
    }

    /// Sends one message stamped `t_ns` (at most now), or now.
    fn send_at(&self, tag: u8, dir: u8, t_ns: Option<u64>, payload: &[u8]) -> bool {
        let Some((mut inner, t_ns)) = self.stamped(t_ns) else { return false };
        // One buffer, so a small message is one write.
        let mut msg = Vec::with_capacity(HEADER_LEN + payload.len());
        msg.extend_from_slice(&encode_header(tag, dir, t_ns, payload.len()));
        msg.extend_from_slice(payload);
        inner.write(&[&msg], &self.data);
        true
    }

    /// The writer's lock and the stamp for a message: `t_ns` (never later
    /// than now) or now. `None`, the message counted lost, once the writer
    /// is closed.
    fn stamped(&self, t_ns: Option<u64>) -> Option<(std::sync::MutexGuard<'_, Inner>, u64)> {
        let mut inner = self.lock();
        if inner.closed {
            inner.lost_chunks += 1;
            return None;
        }
        let now = self.now_ns();
        Some((inner, t_ns.map_or(now, |t| t.min(now))))
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        // A thread that panicked while holding the lock left no half-written
        // state we could repair; carry on with what is there.
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// What became of a chunk handed off by reference.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Handed {
    /// Handed off (or dropped for want of a recorder): forward it.
    Yes,
    /// The recorder was replaced: duplicate the chunk again and retry.
    Again,
    /// The run is over: do not forward it.
    Closed,
}

impl Inner {
    fn new(out: Option<Box<dyn Write + Send>>) -> Self {
        Inner {
            out,
            lost_chunks: 0,
            closed: false,
            start: None,
            handed: [0; 3],
            crossed: [0; 3],
            respawn: None,
            replacements: 0,
            recorder: None,
            end: None,
            exited: None,
        }
    }

    /// Sends one message made of `parts` (their bytes one after another),
    /// to a replacement should the recorder have died.
    fn write(&mut self, parts: &[&[u8]], data: &[Option<DataPipe>; 3]) -> Sent {
        loop {
            match self.try_write(parts, data) {
                Sent::Replaced => continue,
                sent => return sent,
            }
        }
    }

    /// Sends one message made of `parts` (their bytes one after another);
    /// when the recorder is gone, replaces it if it may (and says so: the
    /// message was not sent) or drops the message.
    fn try_write(&mut self, parts: &[&[u8]], data: &[Option<DataPipe>; 3]) -> Sent {
        let Some(out) = self.out.as_mut() else {
            self.lost_chunks += 1;
            return Sent::No;
        };
        let Err(e) = parts.iter().try_for_each(|part| out.write_all(part)) else { return Sent::Yes };
        if e.raw_os_error() == Some(libc::EPIPE) && self.replace(data) {
            return Sent::Replaced;
        }
        tracing::warn!("the recorder stopped taking frames ({e}); forwarding goes on without recording");
        self.out = None;
        self.lost_chunks += 1;
        Sent::No
    }

    /// The recorder died: starts a replacement, moves its data pipes onto
    /// the descriptors of the old ones (the pumps keep using those), and
    /// tells it the run's start and what it continues. False when no
    /// replacement may or can be started.
    fn replace(&mut self, data: &[Option<DataPipe>; 3]) -> bool {
        if self.replacements == 0 {
            return false;
        }
        self.replacements -= 1;
        let Some(replacement) = self.respawn.as_mut().and_then(|respawn| respawn()) else { return false };
        let replaces = self.recorder.replace(replacement.pid).unwrap_or(0);
        tracing::warn!(
            "the recorder (process {replaces}) died mid-run; a new one records the rest, and the trace counts what was lost"
        );
        // The old data pipes are dead: chunks go by copy from now on.
        for pipe in data.iter().flatten() {
            pipe.failed.store(true, Ordering::Relaxed);
        }
        self.out = Some(replacement.out);
        let resume = Resume { recorder_pid: replaces, handed: self.handed };
        let json = serde_json::to_vec(&resume).expect("a Resume always serialises");
        let mut msg = self.start.clone().unwrap_or_default();
        msg.extend_from_slice(&encode_header(TAG_RESUME, 0, 0, json.len()));
        msg.extend_from_slice(&json);
        if let Some(out) = self.out.as_mut() {
            // Should this fail too, the next write finds out.
            if out.write_all(&msg).is_ok() {
                (replacement.wait_until_recording)();
            }
        }
        true
    }
}

/// True while process `pid` runs (it exists and its main thread is not a zombie).
fn running(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => {
            let state = stat.rsplit(')').next().and_then(|rest| rest.split_whitespace().next());
            !matches!(state, Some("Z") | Some("X"))
        }
        Err(_) => false,
    }
}
