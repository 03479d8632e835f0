//! The thread that owns the store connection and commits frames in batches.

use super::checkpointer::{Checkpointer, CHECKPOINT_EVERY};
use super::queue::{ByteQueue, Popped, Weighted};
use crate::model::{NewFrame, TraceEnd, TraceStart};
use crate::store::{Store, StoreError};
use std::path::Path;
use std::time::Duration;

/// With a checkpointer, the writer's own checkpoint waits for this much log
/// (256 MiB); without, [`Store::tune_for_recording`]'s 64 MiB stays.
const BACKSTOP_PAGES: u32 = 65536;

/// Frames committed per transaction at most.
const MAX_BATCH: usize = 4096;

/// A batch smaller than this waits [`GROUP_COMMIT`] for more frames before
/// it is committed (group commit): messages a few microseconds apart share a
/// transaction, which is the recorder's main cost per message. It delays a
/// frame's visibility to the viewer by that much.
const GROUP_BELOW: usize = 64;
const GROUP_COMMIT: Duration = Duration::from_millis(2);

/// How long the queue must stay empty before the writer spends time on the
/// search index, and how many frames it indexes per transaction then.
const IDLE: Duration = Duration::from_millis(30);
const INDEX_CHUNK: i64 = 2000;

/// How long the writer pauses before trying again when another process has
/// held the store's write lock past SQLite's busy timeout (30 s).
const LOCKED_PAUSE: Duration = Duration::from_millis(100);

impl Weighted for NewFrame {
    fn weight(&self) -> usize {
        // The bytes plus a rough allowance for the parsed fields and the row.
        self.raw.len() + 128
    }
}

/// Writes one trace's frames; when the store fails, counts what it could not
/// write and warns once, so the relay goes on regardless.
pub struct StoreWriter {
    target: Option<(Store, i64)>,
    /// Copies the log into the database beside the writer, when it could start.
    checkpointer: Option<Checkpointer>,
    /// Bytes committed since the checkpointer was last asked to run.
    unfolded: usize,
    display_path: String,
    written: u64,
    missing: u64,
    warned: bool,
    /// Said once that the store stays locked.
    warned_locked: bool,
}

impl StoreWriter {
    /// Opens (or creates) the store at `path` and adds the trace for `start`.
    /// On failure the writer only counts frames, after one warning.
    pub fn open(path: &Path, start: &TraceStart) -> StoreWriter {
        let mut w = StoreWriter {
            target: None,
            checkpointer: None,
            unfolded: 0,
            display_path: path.display().to_string(),
            written: 0,
            missing: 0,
            warned: false,
            warned_locked: false,
        };
        // A lock held past the busy timeout (a long transaction of another
        // process) is waited out, however long: the handoff is spooled
        // meanwhile, and giving up would lose the whole recording.
        let relay = relay_pid();
        let client = relay.and_then(parent_of);
        let opened = w.while_locked(|| {
            Store::create_or_open(path).and_then(|store| store.tune_for_recording().map(|()| store)).and_then(|store| {
                store.create_relayed_trace(start, std::process::id(), relay, client).map(|id| (store, id))
            })
        });
        match opened {
            Ok(target) => {
                w.checkpointer = Checkpointer::start(path);
                if w.checkpointer.is_some() {
                    // Only a backstop now, should the checkpointer fall behind.
                    if let Err(e) = target.0.set_autocheckpoint(BACKSTOP_PAGES) {
                        tracing::debug!("autocheckpoint: {e}");
                    }
                }
                w.target = Some(target);
            }
            Err(e) => w.warn(&e.to_string()),
        }
        w
    }

    /// Runs `attempt` until the store is not locked by another process
    /// (SQLite's busy timeout ran out), saying so once.
    fn while_locked<T>(&mut self, mut attempt: impl FnMut() -> Result<T, StoreError>) -> Result<T, StoreError> {
        loop {
            match attempt() {
                Err(e) if e.is_busy() => {
                    if !self.warned_locked {
                        self.warned_locked = true;
                        tracing::warn!(
                            "{} is locked by another process; waiting for it (what crosses is kept meanwhile)",
                            self.display_path
                        );
                    }
                    std::thread::sleep(LOCKED_PAUSE);
                }
                other => return other,
            }
        }
    }

    /// The trace's id, when the store took it.
    pub fn trace_id(&self) -> Option<i64> {
        self.target.as_ref().map(|(_, id)| *id)
    }

    /// Frames stored so far.
    pub fn written(&self) -> u64 {
        self.written
    }

    /// Frames that crossed but could not be stored.
    pub fn missing(&self) -> u64 {
        self.missing
    }

    /// Drains `queue` until it is closed and empty, one transaction per
    /// batch, calling `pause` before each (it returns when writing may go
    /// on); while the queue is idle, indexes stored frames for search.
    pub fn drain(&mut self, queue: &ByteQueue<NewFrame>, pause: impl Fn()) {
        let mut index_done = false;
        loop {
            let wait = if index_done { Duration::from_secs(3600) } else { IDLE };
            match queue.pop_batch_within(MAX_BATCH, wait) {
                Popped::Items(mut batch) => {
                    if batch.len() < GROUP_BELOW {
                        // Interactive traffic: gather what comes in the next
                        // moments into the same transaction rather than
                        // committing (and waking) once per message.
                        std::thread::sleep(GROUP_COMMIT);
                        if let Popped::Items(more) | Popped::Closed(more) =
                            queue.pop_batch_within(MAX_BATCH - batch.len(), Duration::ZERO)
                        {
                            batch.extend(more);
                        }
                    }
                    pause();
                    self.write(&batch);
                    index_done = false;
                }
                Popped::Idle => index_done = self.index_some() == 0,
                Popped::Closed(_) => return,
            }
        }
    }

    /// Indexes one chunk of frames for search; returns how many. Failure only
    /// delays search indexing (searches scan unindexed frames), so it is
    /// logged at debug level, not warned about.
    fn index_some(&mut self) -> usize {
        let Some((store, _)) = self.target.as_mut() else { return 0 };
        match store.index_for_search(INDEX_CHUNK) {
            Ok(n) => n,
            Err(e) => {
                tracing::debug!("search indexing: {e}");
                0
            }
        }
    }

    fn write(&mut self, batch: &[NewFrame]) {
        let Some((mut store, trace_id)) = self.target.take() else {
            self.missing += batch.len() as u64;
            return;
        };
        if let Some(c) = self.checkpointer.as_ref().filter(|c| c.restart_due()) {
            // Copy the batches committed since the checkpointer's pass, so
            // that this transaction starts the log over.
            match store.checkpoint_passive() {
                Ok(Some(_)) => {}
                // The checkpointer is in a pass: try again next batch.
                Ok(None) => c.rearm(),
                Err(e) => tracing::debug!("checkpoint: {e}"),
            }
        }
        let stored = self.while_locked(|| store.insert_frames(trace_id, batch));
        self.target = Some((store, trace_id));
        match stored {
            Ok(()) => {
                self.written += batch.len() as u64;
                self.unfolded += batch.iter().map(Weighted::weight).sum::<usize>();
                if self.unfolded >= CHECKPOINT_EVERY {
                    self.unfolded = 0;
                    if let Some(c) = &self.checkpointer {
                        c.nudge();
                    }
                }
            }
            Err(e) => {
                self.missing += batch.len() as u64;
                let msg = e.to_string();
                self.warn(&msg);
            }
        }
    }

    /// Records how the run ended and how many frames are missing. Frames
    /// not yet in the search index are indexed by `acp-tee serve` or the next
    /// recorder's idle time; searches scan them meanwhile.
    pub fn finish(&mut self, end: &TraceEnd) {
        if let Some(c) = self.checkpointer.take() {
            c.stop();
        }
        self.record_end(end);
    }

    fn record_end(&mut self, end: &TraceEnd) {
        let missing = self.missing;
        let Some((store, trace_id)) = self.target.take() else { return };
        if missing > 0 {
            // Out of space? Folding the log into the database frees the
            // room the last update needs.
            let _ = store.checkpoint();
        }
        let ended_at = crate::clock::now_rfc3339();
        let ended = self.while_locked(|| store.finish_trace(trace_id, end, missing, &ended_at));
        self.target = Some((store, trace_id));
        if let Err(e) = ended {
            let msg = e.to_string();
            self.warn(&msg);
        }
    }

    fn warn(&mut self, why: &str) {
        if !self.warned {
            self.warned = true;
            tracing::warn!(
                "not recording to {}: {why}; forwarding goes on, unstored frames are counted as missing",
                self.display_path
            );
        }
    }
}

/// The relay that started this recorder: its parent, unless the relay is
/// gone already (the recorder then belongs to init or a subreaper).
fn relay_pid() -> Option<u32> {
    // SAFETY: getppid has no preconditions.
    let parent = unsafe { libc::getppid() };
    u32::try_from(parent).ok().filter(|&p| p > 1)
}

/// The parent of process `pid` (for the relay: the client that started it).
fn parent_of(pid: u32) -> Option<u32> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // After the parenthesised command name: state, then the parent's pid.
    let parent = stat.rsplit(')').next()?.split_whitespace().nth(1)?.parse().ok()?;
    Some(parent).filter(|&p: &u32| p > 1)
}
