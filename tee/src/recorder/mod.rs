//! The recorder process (`acp-tee __recorder`): reads the relay's handoff pipe,
//! frames and classifies what crossed, and writes it to the store.
//!
//! It runs in its own process (and process group) so that everything the relay
//! handed off is stored even when the relay is killed with SIGKILL: it sees the
//! pipe close, stores the rest and marks the trace as ended abnormally.
//!
//! Two threads: the framer (this module's [`run`]) and the store writer
//! ([`StoreWriter`]), joined by a [`ByteQueue`] so memory stays bounded. When the
//! store is slow the queue fills, the framer stops reading, the pipe fills and
//! only then the relay waits: backpressure, never loss.
//!
//! Architecture Invariant: every frame read from the pipe is either stored or
//! counted in the trace's `missing_frames`.

mod framer;
mod queue;
mod writer;

pub use framer::Framer;
pub use queue::{ByteQueue, Weighted};
pub use writer::StoreWriter;

use crate::handoff::{HandoffReader, Message, TraceEnd};
use crate::redact::Redactor;
use crate::store::NewFrame;
use std::io::Read;
use std::path::Path;
use std::sync::Arc;

/// Bytes of frames the recorder holds between framer and store writer at most.
pub const QUEUE_BYTES: usize = 16 << 20;

/// What `end_reason` says when the relay vanished without saying how the run ended.
pub const RELAY_KILLED: &str = "acp-tee was killed before the run ended";

/// What a recorder run did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RecorderSummary {
    /// The trace written, if the store took it.
    pub trace_id: Option<i64>,
    /// Frames stored.
    pub written: u64,
    /// Frames that could not be stored.
    pub missing: u64,
}

/// Records one run read from `input` into the store at `db`, masking secrets
/// in what it stores when `redactor` is given. Returns `None` when the relay
/// went away before announcing a run (nothing is recorded).
pub fn run(db: &Path, input: impl Read, redactor: Option<Redactor>) -> Option<RecorderSummary> {
    let mut reader = HandoffReader::new(input);
    let start = match reader.read_message() {
        Ok(Some(Message::Start(start))) => start,
        Ok(None) => return None,
        Ok(Some(other)) => {
            tracing::error!("recorder: the relay spoke before announcing the run: {other:?}");
            return None;
        }
        Err(e) => {
            tracing::error!("recorder: unreadable handoff: {e}");
            return None;
        }
    };
    let mut writer = StoreWriter::open(db, &start);
    let queue = Arc::new(ByteQueue::new(QUEUE_BYTES));
    let writer_thread = {
        let queue = queue.clone();
        std::thread::Builder::new()
            .name("store-writer".into())
            .spawn(move || {
                writer.drain(&queue);
                writer
            })
            .expect("cannot start the store writer thread")
    };
    let queue = Masking { queue: &queue, redactor };

    let mut framer = Framer::new();
    let mut last_t = 0;
    let mut end = None;
    loop {
        match reader.read_message() {
            Ok(Some(Message::Chunk { dir, t_ns, data })) => {
                last_t = t_ns;
                framer.chunk(dir, t_ns, &data, |f| queue.push(f));
            }
            Ok(Some(Message::Frame { dir, t_ns, raw, envelope })) => {
                last_t = t_ns;
                queue.push(framer.message(dir, t_ns, raw, envelope));
            }
            Ok(Some(Message::Eof { dir, t_ns })) => {
                last_t = t_ns;
                framer.eof(dir, t_ns, |f| queue.push(f));
            }
            Ok(Some(Message::End { t_ns, end: e })) => {
                last_t = t_ns;
                end = Some(e);
                break;
            }
            Ok(Some(Message::Start(_))) => {
                tracing::warn!("recorder: a second run start was ignored")
            }
            Ok(None) => break,
            // A message cut short: the relay died while blocked writing it, so
            // its bytes were never forwarded either.
            Err(e) => {
                tracing::debug!("recorder: handoff ended: {e}");
                break;
            }
        }
    }
    framer.eof_all(last_t, |f| queue.push(f));
    let queue = queue.queue;
    queue.close();
    let mut writer = writer_thread.join().expect("the store writer thread panicked");
    let end =
        end.unwrap_or_else(|| TraceEnd { exit_code: None, exit_signal: None, end_reason: RELAY_KILLED.to_owned() });
    writer.finish(&end);
    Some(RecorderSummary { trace_id: writer.trace_id(), written: writer.written(), missing: writer.missing() })
}

/// The queue to the store writer, masking each frame's bytes on the way in
/// when record-time redaction is on. The frame was classified and paired
/// from its original bytes; its preview is made again from the masked ones.
struct Masking<'q> {
    queue: &'q ByteQueue<NewFrame>,
    redactor: Option<Redactor>,
}

impl Masking<'_> {
    fn push(&self, mut f: NewFrame) {
        if let Some(r) = &self.redactor {
            let mut changed = false;
            if let std::borrow::Cow::Owned(raw) = r.redact(&f.raw) {
                f.raw = raw;
                changed = true;
            }
            if let Some(env) = &f.envelope {
                if let std::borrow::Cow::Owned(new) = r.redact(env) {
                    f.envelope = Some(new);
                }
            }
            if changed {
                f.preview = crate::frame::preview(f.kind, f.method.as_deref(), &f.raw);
            }
        }
        self.queue.push(f);
    }
}
