//! A fold over a trace's frames on two threads: this one reads rows from
//! SQLite into batches, a second one hands them to the fold, so that on two
//! cores reading and folding overlap. For folds over many frames (a session
//! model built from a whole trace); [`Store::fold_frames_after`] is the
//! same on one thread.
//!
//! Memory stays flat: at most [`BATCHES`] batches of [`BATCH_FRAMES`]
//! frames or about [`BATCH_BYTES`] bytes each exist, passed back and forth.

use super::queries::{frame_ref, FrameRef, FRAME_REFS_SQL};
use super::{Store, StoreError};
use acp_tee_shared::{Direction, FrameKind};
use rusqlite::params;
use std::ops::Range;
use std::sync::mpsc::{channel, sync_channel};

/// Rowids from which [`Store::fold_frames_in_parallel`] uses a second
/// thread; fewer are read on this one (a thread costs more than they do).
pub const PARALLEL_FROM_FRAMES: i64 = 20_000;

/// Frames per batch at most.
const BATCH_FRAMES: usize = 1024;

/// Bytes after which a batch is passed on before it holds [`BATCH_FRAMES`].
const BATCH_BYTES: usize = 4 << 20;

/// Batches in flight at most: one being read, one being folded, one queued.
const BATCHES: usize = 3;

/// A frame of a batch: its columns, the texts as ranges of the batch's bytes.
struct Slot {
    seq: i64,
    t_ns: i64,
    dir: Direction,
    kind: FrameKind,
    rpc_id: Option<Range<usize>>,
    method: Option<Range<usize>>,
    session_id: Option<Range<usize>>,
    reply_to_seq: Option<i64>,
    raw: Range<usize>,
}

/// Frames read, owned, to be folded on another thread.
#[derive(Default)]
struct Batch {
    bytes: Vec<u8>,
    slots: Vec<Slot>,
}

impl Batch {
    fn clear(&mut self) {
        self.bytes.clear();
        self.slots.clear();
    }

    fn put(&mut self, b: &[u8]) -> Range<usize> {
        let start = self.bytes.len();
        self.bytes.extend_from_slice(b);
        start..self.bytes.len()
    }

    fn push(&mut self, f: &FrameRef<'_>) {
        let slot = Slot {
            seq: f.seq,
            t_ns: f.t_ns,
            dir: f.dir,
            kind: f.kind,
            rpc_id: f.rpc_id.map(|s| self.put(s.as_bytes())),
            method: f.method.map(|s| self.put(s.as_bytes())),
            session_id: f.session_id.map(|s| self.put(s.as_bytes())),
            reply_to_seq: f.reply_to_seq,
            raw: self.put(f.raw),
        };
        self.slots.push(slot);
    }

    fn full(&self) -> bool {
        self.slots.len() >= BATCH_FRAMES || self.bytes.len() >= BATCH_BYTES
    }

    /// The frames, borrowed from the batch.
    fn frames(&self) -> impl Iterator<Item = FrameRef<'_>> {
        // The texts were `&str`s when they were copied in whole.
        let text = |r: &Option<Range<usize>>| r.clone().map(|r| std::str::from_utf8(&self.bytes[r]).unwrap_or(""));
        self.slots.iter().map(move |s| FrameRef {
            seq: s.seq,
            t_ns: s.t_ns,
            dir: s.dir,
            kind: s.kind,
            rpc_id: text(&s.rpc_id),
            method: text(&s.method),
            session_id: text(&s.session_id),
            reply_to_seq: s.reply_to_seq,
            raw: &self.bytes[s.raw.clone()],
        })
    }
}

impl Store {
    /// [`Store::fold_frames_after`], with the rows read on this thread and
    /// `each` called on another one when there are [`PARALLEL_FROM_FRAMES`]
    /// or more to read.
    pub fn fold_frames_in_parallel(
        &self,
        trace_id: i64,
        after: i64,
        mut each: impl FnMut(&FrameRef<'_>) -> bool + Send,
    ) -> Result<(), StoreError> {
        let Some(last) = super::last_frame_id(&self.conn, trace_id)? else { return Ok(()) };
        let from = super::frame_id(trace_id, after.max(0));
        if last - from < PARALLEL_FROM_FRAMES {
            return self.fold_frames_after(trace_id, after, each);
        }
        let (full_tx, full_rx) = sync_channel::<Batch>(1);
        let (empty_tx, empty_rx) = channel::<Batch>();
        for _ in 0..BATCHES {
            empty_tx.send(Batch::default()).expect("the receiver is here");
        }
        std::thread::scope(|scope| {
            scope.spawn(move || {
                for batch in full_rx {
                    let go_on = batch.frames().all(|f| each(&f));
                    // Dropping the channel's end stops the reader.
                    if !go_on || empty_tx.send(batch).is_err() {
                        return;
                    }
                }
            });
            // `full_tx` goes with the reading: its end ends the folding thread's loop.
            self.read_batches(from, last, &empty_rx, full_tx)
        })
    }

    /// Reads rowids `from + 1 ..= last` into batches taken from `empty` and
    /// sends each on `full`; stops early when the folding thread has gone.
    fn read_batches(
        &self,
        mut from: i64,
        last: i64,
        empty: &std::sync::mpsc::Receiver<Batch>,
        full: std::sync::mpsc::SyncSender<Batch>,
    ) -> Result<(), StoreError> {
        let mut stmt = self.conn.prepare_cached(FRAME_REFS_SQL)?;
        while from < last {
            let Ok(mut batch) = empty.recv() else { return Ok(()) };
            batch.clear();
            let mut rows = stmt.query(params![from, last, BATCH_FRAMES as i64])?;
            let mut count = 0;
            while let Some(row) = rows.next()? {
                count += 1;
                from = row.get(0)?;
                batch.push(&frame_ref(row)?);
                if batch.full() {
                    break;
                }
            }
            drop(rows);
            let done = count == 0 || (count < BATCH_FRAMES && !batch.full());
            if full.send(batch).is_err() || done {
                return Ok(());
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use crate::frame::Framer;
    use crate::{create_maintained, test_start};
    use acp_tee_shared::Direction;

    #[test]
    fn the_parallel_fold_sees_what_the_plain_one_sees_and_stops_when_told() {
        let dir = tempfile::tempdir().unwrap();
        let mut store = create_maintained(&dir.path().join("t.db"));
        let id = store.create_trace(&test_start(), 1).unwrap();
        let mut framer = Framer::new();
        let n = super::PARALLEL_FROM_FRAMES as usize + 3 * super::BATCH_FRAMES + 7;
        let mut frames = Vec::new();
        for i in 0..n {
            // Some large enough to end batches by their bytes.
            let pad = if i % 5000 == 0 { "x".repeat(super::BATCH_BYTES) } else { String::new() };
            let line = format!(
                "{{\"jsonrpc\":\"2.0\",\"id\":{i},\"method\":\"m/{}\",\"params\":{{\"p\":\"{pad}\"}}}}\n",
                i % 7
            );
            framer.chunk(Direction::ClientToAgent, i as u64, line.as_bytes(), |f| frames.push(f));
        }
        store.insert_frames(id, &frames).unwrap();
        type Seen = (i64, i64, Option<String>, Option<String>, usize);
        let see = |f: &crate::FrameRef<'_>| -> Seen {
            (f.seq, f.t_ns, f.method.map(str::to_owned), f.rpc_id.map(str::to_owned), f.raw.len())
        };
        for after in [0, 5, n as i64 - 10] {
            let (mut plain, mut parallel) = (Vec::new(), Vec::new());
            store
                .fold_frames_after(id, after, |f| {
                    plain.push(see(f));
                    true
                })
                .unwrap();
            store
                .fold_frames_in_parallel(id, after, |f| {
                    parallel.push(see(f));
                    true
                })
                .unwrap();
            assert_eq!(plain.len(), n - after as usize);
            assert!(plain == parallel, "after {after}");
        }
        let mut seen = 0;
        store
            .fold_frames_in_parallel(id, 0, |_| {
                seen += 1;
                seen < 3000
            })
            .unwrap();
        assert_eq!(seen, 3000);
    }
}
