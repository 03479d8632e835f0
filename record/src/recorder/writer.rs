//! The thread that owns the store connection and commits frames in batches.

use super::checkpointer::{Checkpointer, CHECKPOINT_EVERY, LOG_LIMIT_BYTES, RESTART_PAGES};
use super::queue::{ByteQueue, Popped, Weighted};
use super::reserve::Reserve;
use crate::handoff::Resume;
use crate::model::{NewFrame, TraceEnd, TraceStart};
use crate::store::{Recording, Relay, Resumed, Store, StoreError};
use std::path::Path;
use std::time::Duration;

/// With a checkpointer, the writer's own checkpoint waits for this much log
/// (256 MiB); without, [`Recording::tune_for_recording`]'s 64 MiB stays.
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
/// How many idle steps try to find the trace's parent (its recorder adds
/// it within moments of its run's start; the steps come after each batch
/// of frames).
const LINK_TRIES: u32 = 100;

impl Weighted for NewFrame {
    /// The memory a frame holds: the struct, its bytes and strings, and what
    /// the allocator adds to each (small frames are mostly the struct: a
    /// 100-byte message holds about 500 bytes).
    fn weight(&self) -> usize {
        const PER_ALLOCATION: usize = 24;
        let text = |t: &Option<String>| t.as_ref().map_or(0, |t| t.len() + PER_ALLOCATION);
        std::mem::size_of::<NewFrame>()
            + self.raw.len()
            + PER_ALLOCATION
            + self.envelope.as_ref().map_or(0, |e| e.len() + PER_ALLOCATION)
            + [
                &self.rpc_id,
                &self.method,
                &self.session_id,
                &self.mcp_method,
                &self.preview,
                &self.sender,
                &self.receiver,
            ]
            .into_iter()
            .map(text)
            .sum::<usize>()
            + self.batch.len() * 128
    }
}

/// Writes one trace's frames; when the store fails, counts what it could not
/// write and warns once, so the relay goes on regardless.
pub struct StoreWriter {
    target: Option<(Recording, i64)>,
    /// Copies the log into the database beside the writer, when it could start.
    checkpointer: Option<Checkpointer>,
    /// Bytes committed since the checkpointer was last asked to run.
    unfolded: usize,
    /// The store's write-ahead log file.
    log_path: std::path::PathBuf,
    /// The log file's size from which the writer truncates it itself.
    log_limit: u64,
    display_path: String,
    written: u64,
    missing: u64,
    /// Frames of the batch being written, until they are counted.
    in_flight: u64,
    /// What a recorder before this one lost, for the trace's end reason.
    lost_note: Option<String>,
    /// Tries left to find the trace's parent ([`Recording::link_parent`]):
    /// set while an acp-tee is among the relay's ancestors and its trace
    /// is not found yet (its recorder may still be adding it).
    link_tries: u32,
    /// Room on the store's filesystem for the run's end, should it fill up.
    reserve: Reserve,
    warned: bool,
    /// Said once that the store stays locked.
    warned_locked: bool,
}

impl StoreWriter {
    /// Opens (or creates) the store at `path` and adds the trace for `start`
    /// (whose agent, in wrap mode, is the process `agent_key` names).
    /// On failure the writer only counts frames, after one warning.
    pub fn open(path: &Path, start: &TraceStart, agent_key: Option<String>) -> StoreWriter {
        let mut w = StoreWriter::new(path);
        // A lock held past the busy timeout (a long transaction of another
        // process) is waited out, however long: the handoff is spooled
        // meanwhile, and giving up would lose the whole recording.
        let relay = Relay { agent_key, ..relay() };
        let opened = w.while_locked(|| {
            let store = opened_and_maintained(path)?;
            store.tune_for_recording()?;
            let id = store.create_relayed_trace(start, std::process::id(), &relay)?;
            Ok((store, id))
        });
        w.attach(path, opened);
        w.start_linking(&relay);
        w
    }

    /// Like [`StoreWriter::open`], for a recorder that replaces one that
    /// died mid-run: takes over the trace that one was writing (adds it, if
    /// it had not yet), and counts what it had been handed but not stored as
    /// missing. Returns the writer, the last seq stored before and the
    /// trace's protocol when it is known.
    pub fn resume(
        path: &Path,
        start: &TraceStart,
        resume: &Resume,
    ) -> (StoreWriter, i64, Option<acp_tee_shared::Protocol>) {
        let mut w = StoreWriter::new(path);
        let relay = relay();
        let own = std::process::id();
        let opened = w.while_locked(|| {
            let store = opened_and_maintained(path)?;
            store.tune_for_recording()?;
            let resumed = match store.resume_trace(start, resume.recorder_pid, own)? {
                Some(resumed) => resumed,
                None => {
                    let trace_id = store.create_relayed_trace(start, own, &relay)?;
                    Resumed { trace_id, last_seq: 0, stored_bytes: [0; 3], protocol: start.protocol }
                }
            };
            Ok((store, resumed))
        });
        let last_seq = opened.as_ref().map_or(0, |(_, r)| r.last_seq);
        let protocol = opened.as_ref().ok().and_then(|(_, r)| r.protocol);
        let lost: Vec<u64> = match &opened {
            Ok((_, r)) => resume.handed.iter().zip(r.stored_bytes).map(|(h, s)| h.saturating_sub(s)).collect(),
            Err(_) => resume.handed.to_vec(),
        };
        if lost.iter().any(|&l| l > 0) {
            // How many frames those bytes held is not known (the recorder
            // that had them is gone): each direction that lost bytes
            // counts one, at least.
            w.missing = lost.iter().filter(|&&l| l > 0).count() as u64;
            w.lost_note = Some(format!(
                "a recorder was killed mid-run: {} bytes it had not stored are lost (client to agent {}, agent to \
                 client {}, agent stderr {})",
                lost.iter().sum::<u64>(),
                lost[0],
                lost[1],
                lost[2]
            ));
        }
        w.attach(path, opened.map(|(store, r)| (store, r.trace_id)));
        w.start_linking(&relay);
        (w, last_seq, protocol)
    }

    fn new(path: &Path) -> StoreWriter {
        StoreWriter {
            target: None,
            checkpointer: None,
            unfolded: 0,
            log_path: crate::store::wal_path(path),
            log_limit: LOG_LIMIT_BYTES,
            display_path: path.display().to_string(),
            written: 0,
            missing: 0,
            in_flight: 0,
            lost_note: None,
            link_tries: 0,
            reserve: Reserve::hold(path.parent().filter(|d| !d.as_os_str().is_empty()).unwrap_or(Path::new("."))),
            warned: false,
            warned_locked: false,
        }
    }

    /// Writes into `opened`'s trace from now on (or only counts, after a
    /// warning, when the store failed).
    fn attach(&mut self, path: &Path, opened: Result<(Recording, i64), StoreError>) {
        match opened {
            Ok(target) => {
                self.checkpointer = Checkpointer::start(path);
                if self.checkpointer.is_some() {
                    // Only a backstop now, should the checkpointer fall behind.
                    if let Err(e) = target.0.set_autocheckpoint(BACKSTOP_PAGES) {
                        tracing::debug!("autocheckpoint: {e}");
                    }
                }
                self.target = Some(target);
            }
            Err(e) => self.warn(&e.to_string()),
        }
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

    /// Links the trace to its parent now, or keeps trying in idle steps
    /// while an acp-tee is among the relay's ancestors.
    fn start_linking(&mut self, relay: &Relay) {
        if relay.ancestors_end_at_acp_tee {
            self.link_tries = LINK_TRIES;
            self.link();
        }
    }

    /// One try to link the trace to its parent.
    fn link(&mut self) {
        if self.link_tries == 0 {
            return;
        }
        self.link_tries -= 1;
        let Some((store, id)) = self.target.as_ref() else { return };
        match store.link_parent(*id) {
            Ok(Some(_)) => self.link_tries = 0,
            Ok(None) => {}
            Err(e) => tracing::debug!("linking the trace to its parent: {e}"),
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
    /// on), and tells the queue when a batch is stored (its room is free
    /// only then); while the queue is idle, indexes stored frames for
    /// search, holding the queue's room meanwhile ([`ByteQueue::hold_idle`]).
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
                    drop(batch);
                    queue.done();
                    index_done = false;
                }
                // Indexing reads stored frames back, a large one whole: it
                // waits while the framer gathers a large line, and the
                // framer gathers no more while it runs.
                Popped::Idle if queue.hold_idle() => {
                    index_done = self.index_some() == 0;
                    queue.done();
                }
                Popped::Idle => {}
                Popped::Closed(_) => return,
            }
        }
    }

    /// Runs a maintenance step that indexes one chunk of frames for search
    /// (and does a bounded part of the retention policy's removals, when
    /// one is set); returns how many, plus one while removals are left. Failure only delays search indexing (searches scan
    /// unindexed frames), so it is logged at debug level, not warned about.
    fn index_some(&mut self) -> usize {
        self.link();
        let Some((store, _)) = self.target.as_mut() else { return 0 };
        match store.maintain(INDEX_CHUNK) {
            // Removing traces (retention) is work as indexing is: the
            // writer comes back for more while either is left.
            Ok(report) => report.indexed + usize::from(report.removal_left),
            Err(e) => {
                tracing::debug!("maintenance: {e}");
                0
            }
        }
    }

    /// After a panic in [`StoreWriter::drain`] (a bug): counts the batch it
    /// was writing and everything still to come as missing, so the framer
    /// is never left blocked on a full queue and the count stays true.
    pub fn count_the_rest_missing(&mut self, queue: &ByteQueue<NewFrame>) {
        self.missing += std::mem::take(&mut self.in_flight);
        self.warn("the store writer failed");
        loop {
            queue.done();
            let batch = queue.pop_batch(MAX_BATCH);
            if batch.is_empty() {
                return;
            }
            self.missing += batch.len() as u64;
        }
    }

    fn write(&mut self, batch: &[NewFrame]) {
        self.in_flight = batch.len() as u64;
        self.insert(batch);
        self.in_flight = 0;
    }

    fn insert(&mut self, batch: &[NewFrame]) {
        let Some((mut store, trace_id)) = self.target.take() else {
            self.missing += batch.len() as u64;
            return;
        };
        if let Some(c) = self.checkpointer.as_ref().filter(|c| c.restart_due()) {
            // Copy the batches committed since the checkpointer's pass, so
            // that this transaction starts the log over.
            match store.checkpoint_passive() {
                Ok(Some((log, copied))) if copied == log => c.restarted(),
                // The checkpointer's last pass is still running: try again
                // next batch (it starts no other meanwhile).
                Ok(_) => {}
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
                self.keep_the_log_bounded();
            }
            Err(e) => {
                self.missing += batch.len() as u64;
                let msg = e.to_string();
                self.warn(&msg);
            }
        }
    }

    /// Truncates the log when its file reached the limit: the checkpointer
    /// fell behind or could not finish (it is held meanwhile; the truncation
    /// waits for its pass, and for readers, up to the busy timeout). Should
    /// that fail (a reader keeps an old snapshot), the next attempt waits
    /// until the log grew by another [`RESTART_PAGES`]' worth.
    fn keep_the_log_bounded(&mut self) {
        let Some((store, _)) = self.target.as_ref() else { return };
        let size = std::fs::metadata(&self.log_path).map_or(0, |m| m.len());
        if size < self.log_limit {
            return;
        }
        if let Some(c) = &self.checkpointer {
            c.hold();
        }
        let truncated = store.checkpoint_truncate();
        if let Some(c) = &self.checkpointer {
            c.restarted();
        }
        match truncated {
            Ok(true) => self.log_limit = LOG_LIMIT_BYTES,
            Ok(false) => self.log_limit = size + (RESTART_PAGES as u64) * 4096,
            Err(e) => {
                tracing::debug!("checkpoint: {e}");
                self.log_limit = size + (RESTART_PAGES as u64) * 4096;
            }
        }
    }

    /// Records how the run ended, when (`ended_at`, RFC 3339: the run's end,
    /// not the moment storing caught up) and how many frames are missing.
    /// Frames not yet in the search index are indexed by `acp-tee serve` or
    /// the next recorder's idle time; searches scan them meanwhile.
    /// True when the end is stored.
    pub fn finish(&mut self, end: &TraceEnd, ended_at: &str) -> bool {
        if let Some(c) = self.checkpointer.take() {
            c.stop();
        }
        // A last chance for a parent that appeared late.
        self.link_tries = self.link_tries.min(1);
        self.link();
        self.record_end(end, ended_at)
    }

    fn record_end(&mut self, end: &TraceEnd, ended_at: &str) -> bool {
        let missing = self.missing;
        let Some((store, trace_id)) = self.target.take() else { return false };
        if missing > 0 {
            // Out of space? Folding the log into the database frees the
            // room the last update needs.
            let _ = store.checkpoint();
        }
        let mut end = end.clone();
        if let Some(note) = &self.lost_note {
            end.end_reason = format!("{}; {note}", end.end_reason);
        }
        let mut ended = self.while_locked(|| store.finish_trace(trace_id, &end, missing, ended_at));
        if ended.is_err() && self.reserve.release() {
            // A full filesystem is the likely cause (SQLite reports it as a
            // full database or as an I/O error): with the room kept for
            // this, the end is written, however full it is now.
            ended = self.while_locked(|| store.finish_trace(trace_id, &end, missing, ended_at));
        }
        self.target = Some((store, trace_id));
        if let Err(e) = &ended {
            let msg = e.to_string();
            self.warn(&msg);
        }
        ended.is_ok()
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

/// Opens (or creates) the store at `path`, runs the maintenance step a
/// recorder runs when it starts (migrations and traces left without an end;
/// no search indexing and no retention, which wait for an idle queue, so
/// the run starts now), and records into it.
fn opened_and_maintained(path: &Path) -> Result<Recording, StoreError> {
    let mut store = Store::create_or_open(path)?;
    store.maintain(0)?;
    // Applied by the idle steps only ([`StoreWriter::index_some`]), so the
    // run starts now.
    if let Some(policy) = super::retention() {
        store.retain(policy);
    }
    Recording::new(store)
}

/// The relay that started this recorder (its parent, unless the relay is
/// gone already: the recorder then belongs to init or a subreaper), the
/// client that started the relay and the relay's ancestors.
fn relay() -> Relay {
    // SAFETY: getppid has no preconditions.
    let parent = unsafe { libc::getppid() };
    match u32::try_from(parent).ok().filter(|&p| p > 1) {
        Some(pid) => Relay::of(pid),
        None => Relay::default(),
    }
}
