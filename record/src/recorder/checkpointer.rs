//! Folds the store's write-ahead log into the database file on a thread of
//! its own, so that the store writer only appends to the log.
//!
//! Copying committed pages from the log into the database (a checkpoint),
//! with its two fsyncs, was a third of the store writer's time per frame.
//! Here a second connection does it while the writer goes on; SQLite lets
//! one checkpoint run beside one writer.
//!
//! The log only starts over from its beginning when a write transaction
//! begins with all of it copied, which never happens while the writer
//! commits batch after batch. So once the log is [`RESTART_PAGES`] long and
//! this thread has copied it, it tells the writer, which then checkpoints
//! the few batches committed since (cheap: the rest is copied and synced)
//! and its next transaction restarts the log. Until the writer did, this
//! thread starts no pass: a pass of ours would make the writer's checkpoint
//! find the log busy and the restart wait, while the log grows.
//!
//! Should the log still grow past [`LOG_LIMIT_BYTES`] (this thread starved
//! of CPU, a reader holding an old snapshot), the writer stops this thread's
//! passes and truncates the log itself, waiting for the pass in progress.

#[cfg(test)]
use crate::store::StoreError;
use crate::store::{Recording, Store};
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;

/// Bytes of frames committed between two checkpoints.
pub const CHECKPOINT_EVERY: usize = 16 << 20;

/// Log pages (of 4 KiB) after which the writer is asked to let the log
/// start over (64 MiB).
pub const RESTART_PAGES: i64 = 16384;

/// The log file's size from which the writer truncates it itself, before
/// its next transaction: the log stays under 256 MiB but for the one batch
/// committed last (a batch holds at most 4 MiB of frames, unless a single
/// frame is larger).
pub const LOG_LIMIT_BYTES: u64 = 224 << 20;

#[derive(Default)]
struct Wanted {
    /// A checkpoint is due.
    due: bool,
    /// The writer is done: stop.
    closed: bool,
    /// The thread is in a pass (or deciding whether to run one).
    running: bool,
}

/// The checkpoint thread of one recorder.
pub struct Checkpointer {
    wanted: Arc<(Mutex<Wanted>, Condvar)>,
    restart: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl Checkpointer {
    /// Opens a second connection to the store at `path` and starts the
    /// thread (at the recorder's lower priority); `None` when either fails,
    /// and the writer's automatic checkpoints do all the work as before.
    pub fn start(path: &Path) -> Option<Checkpointer> {
        let store = match Store::open_existing(path).and_then(Recording::new) {
            Ok(store) => store,
            Err(e) => {
                tracing::debug!("no checkpoint thread: {e}");
                return None;
            }
        };
        let wanted = Arc::new((Mutex::new(Wanted::default()), Condvar::new()));
        let restart = Arc::new(AtomicBool::new(false));
        let thread = {
            let (wanted, restart) = (wanted.clone(), restart.clone());
            std::thread::Builder::new()
                .name("checkpointer".into())
                .spawn(move || {
                    super::lower_priority();
                    while next(&wanted) {
                        // The writer is about to restart the log (or
                        // truncating it): a pass now would only be in its way.
                        if !restart.load(Ordering::Relaxed) {
                            fold(&store, &restart, RESTART_PAGES);
                        }
                        let (lock, cond) = &*wanted;
                        lock.lock().unwrap_or_else(|p| p.into_inner()).running = false;
                        cond.notify_all();
                    }
                })
                .map_err(|e| tracing::debug!("no checkpoint thread: {e}"))
                .ok()?
        };
        Some(Checkpointer { wanted, restart, thread: Some(thread) })
    }

    /// Asks for a checkpoint (the writer committed [`CHECKPOINT_EVERY`]
    /// bytes since it last asked); asking while one is running makes one
    /// more run after it.
    pub fn nudge(&self) {
        let (lock, cond) = &*self.wanted;
        lock.lock().unwrap_or_else(|p| p.into_inner()).due = true;
        cond.notify_all();
    }

    /// True after this thread copied a log of [`RESTART_PAGES`] or more,
    /// until [`Checkpointer::restarted`]: the writer should checkpoint the
    /// rest before its next batch. Meanwhile this thread starts no pass.
    pub fn restart_due(&self) -> bool {
        self.restart.load(Ordering::Relaxed)
    }

    /// Stops this thread from starting passes (the writer is about to
    /// checkpoint the log itself), until [`Checkpointer::restarted`], and
    /// waits for the pass in progress, if any, to end: SQLite refuses a
    /// second checkpoint while one runs, without waiting.
    pub fn hold(&self) {
        self.restart.store(true, Ordering::Relaxed);
        let (lock, cond) = &*self.wanted;
        let mut w = lock.lock().unwrap_or_else(|p| p.into_inner());
        while w.running {
            w = cond.wait(w).unwrap_or_else(|p| p.into_inner());
        }
    }

    /// The writer checkpointed the whole log: its next transaction restarts
    /// it, and this thread may run passes again.
    pub fn restarted(&self) {
        self.restart.store(false, Ordering::Relaxed);
    }

    /// Stops the thread, after the checkpoint it is running, if any.
    pub fn stop(mut self) {
        self.close();
    }

    fn close(&mut self) {
        let (lock, cond) = &*self.wanted;
        lock.lock().unwrap_or_else(|p| p.into_inner()).closed = true;
        cond.notify_all();
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

impl Drop for Checkpointer {
    fn drop(&mut self) {
        self.close();
    }
}

/// Log pages the writer may have left to copy and sync when it is asked to
/// restart the log (8 MiB): while more came in during a pass, another pass
/// runs first, so that the writer's share (and its wait for the disk) is small.
const WRITER_SHARE_PAGES: i64 = 2048;

/// Checkpoints; once the log is `restart_pages` long or more, checkpoints
/// again until the pages added meanwhile are few, then tells the writer.
fn fold(store: &Recording, restart: &AtomicBool, restart_pages: i64) {
    let mut before = None;
    for _ in 0..4 {
        match store.checkpoint_passive() {
            Err(e) => {
                tracing::debug!("checkpoint: {e}");
                return;
            }
            // The writer is checkpointing: it restarts the log itself.
            Ok(None) => return,
            Ok(Some((log, copied))) => {
                if log < restart_pages || copied < log {
                    return;
                }
                if before.is_some_and(|b| log - b <= WRITER_SHARE_PAGES) {
                    restart.store(true, Ordering::Relaxed);
                    return;
                }
                before = Some(log);
            }
        }
    }
    restart.store(true, Ordering::Relaxed);
}

/// Waits until a checkpoint is due (true) or the writer is done (false).
fn next(wanted: &(Mutex<Wanted>, Condvar)) -> bool {
    let (lock, cond) = wanted;
    let mut w = lock.lock().unwrap_or_else(|p| p.into_inner());
    loop {
        if w.closed {
            return false;
        }
        if w.due {
            w.due = false;
            w.running = true;
            return true;
        }
        w = cond.wait(w).unwrap_or_else(|p| p.into_inner());
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::frame::Framer;
    use acp_tee_shared::Direction;

    #[test]
    fn a_folded_log_starts_over_after_the_writer_copies_its_share() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.db");
        let mut writer = Recording::new(crate::store::create_maintained(&path)).unwrap();
        writer.set_autocheckpoint(0).unwrap();
        let id = writer.create_trace(&crate::store::test_start(), 1).unwrap();
        let mut framer = Framer::new();
        let line = format!("{{\"method\":\"session/update\",\"params\":{{\"text\":\"{}\"}}}}\n", "x".repeat(900));
        let mut batch = |n: usize, writer: &mut Recording| {
            let mut frames = Vec::new();
            framer.chunk(Direction::AgentToClient, 1, line.repeat(n).as_bytes(), |f| frames.push(f));
            writer.insert_frames(id, &frames).unwrap();
        };
        batch(500, &mut writer);

        let checkpointer = Recording::new(Store::open_existing(&path).unwrap()).unwrap();
        let restart = AtomicBool::new(false);
        // A log shorter than the threshold is copied, and the writer is not asked.
        fold(&checkpointer, &restart, 1 << 20);
        assert!(!restart.load(Ordering::Relaxed));
        // Long enough: copied in full, and the writer is asked.
        fold(&checkpointer, &restart, 100);
        assert!(restart.load(Ordering::Relaxed));
        let (log, copied) = checkpointer.checkpoint_passive().unwrap().unwrap();
        assert!(log >= 100 && copied == log, "{log} {copied}");

        // The writer's checkpoint copies what came after the pass (here
        // nothing came), and the next transactions write the log from its
        // beginning again instead of making it longer.
        assert_eq!(writer.checkpoint_passive().unwrap().map(|(l, c)| l == c), Some(true));
        batch(10, &mut writer);
        batch(10, &mut writer);
        let (after, _) = writer.checkpoint_passive().unwrap().unwrap();
        assert!(after < log, "the log went on from {log} pages to {after}");

        let mut stored = 0;
        writer
            .for_each_frame::<StoreError>(id, |_| {
                stored += 1;
                Ok(())
            })
            .unwrap();
        assert_eq!(stored, 520);
    }

    #[test]
    fn stopping_waits_for_the_pass_and_ends_the_thread() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.db");
        let _store = crate::store::create_maintained(&path);
        let c = Checkpointer::start(&path).expect("a checkpointer");
        for _ in 0..3 {
            c.nudge();
        }
        assert!(!c.restart_due());
        c.hold();
        assert!(c.restart_due());
        c.restarted();
        assert!(!c.restart_due());
        c.stop();
        assert!(Checkpointer::start(&dir.path().join("missing.db")).is_none());
    }
}
