//! The recorder process (`acp-tee __recorder`): reads the relay's handoff pipe,
//! frames and classifies what crossed, and writes it to the store.
//!
//! It runs in its own process (and process group) so that everything the relay
//! handed off is stored even when the relay is killed with SIGKILL: it sees the
//! pipe close, stores the rest and marks the trace as ended abnormally.
//!
//! Three threads. The intake (the thread that calls [`run`]) moves the pipe's
//! bytes into a [`Spool`]: memory, then an unnamed file beside the store. The
//! framer reads the spool and hands frames through a [`ByteQueue`] to the
//! store writer ([`StoreWriter`]); both run at a lower priority than the
//! relay. A burst therefore passes the relay at pipe speed and is stored
//! afterwards; only a backlog beyond the spool's file makes the pipe fill and
//! the relay wait: backpressure, never loss.
//!
//! Architecture Invariant: every frame read from the pipe is either stored or
//! counted in the trace's `missing_frames`.

mod checkpointer;
mod intake;
mod pace;
mod queue;
mod reserve;
mod spool;
mod writer;

pub use queue::ByteQueue;
pub use spool::Spool;
pub use writer::StoreWriter;

use crate::frame::Framer;
use crate::handoff::{HandoffReader, Message};
use crate::model::TraceEnd;
use crate::model::RELAY_KILLED;
use crate::otlp::{LiveExport, LiveOptions};
use crate::proc::lower_priority;
use crate::redact::Redactor;
use std::fs::File;
use std::io::Read;
use std::os::fd::FromRawFd;
use std::path::Path;
use std::sync::{Arc, OnceLock};

/// The retention policy this process's store writers apply while idle
/// (`acp-tee prune`'s rules from the environment or the config file); none
/// until [`retain`] sets it.
static RETENTION: OnceLock<acp_tee_store::Policy> = OnceLock::new();

/// Has every store writer of this process apply `policy` in its idle
/// maintenance steps (bounded: see the store's `retention.rs`). Set once,
/// before recording starts; later calls change nothing.
pub fn retain(policy: acp_tee_store::Policy) {
    let _ = RETENTION.set(policy);
}

/// The policy [`retain`] set.
fn retention() -> Option<acp_tee_store::Policy> {
    RETENTION.get().cloned()
}

/// Bytes of frames (their memory, as [`Weighted`] counts it) the recorder
/// holds between framer and store writer at most, the batch the writer is
/// storing included (it counts until stored: [`ByteQueue::done`]). Before
/// reading more of the spool the framer waits until what it holds of an
/// unfinished line fits beside them too ([`ByteQueue::wait_for_room`]),
/// so a line larger than this is held once: gathered only after the frames
/// before it are stored, and the next one only after it is. With 8 MiB the
/// recorder's peak RSS is about 46 MiB for 1 MiB messages, and 100-byte
/// frames are stored as fast (8 MiB holds about 16,000 of them: four full
/// batches).
pub const QUEUE_BYTES: usize = 8 << 20;

/// Bytes read from the pipe that wait for the framer in memory, at most;
/// more wait in the spool's file, up to [`SPOOL_FILE_BYTES`].
pub const SPOOL_MEMORY_BYTES: usize = 8 << 20;

/// Bytes the spool's file (beside the store) holds at most before the relay
/// is made to wait.
pub const SPOOL_FILE_BYTES: u64 = 2 << 30;

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

/// Records one run read from the handoff pipe `input` (and the data pipes
/// `data`, one per direction, that chunk references point into) into the
/// store at `db`, masking secrets in what it stores when `redactor` is given.
/// With `resume`, this recorder replaces one that died mid-run: the handoff's
/// second message says which, and its trace is continued. With `otlp`, the
/// frames are mapped to spans and sent live (`crate::otlp::LiveExport`).
/// Returns `None` when the relay went away before announcing a run (nothing
/// is recorded).
///
/// When the relay vanishes without ending the run (it was killed), the
/// process group `agent_group` (the agent and what it started) is killed:
/// nothing else is left to stop it.
///
/// The calling thread only moves the pipes' bytes into the [`Spool`]; a
/// framer thread and a store-writer thread, both at a lower priority, turn
/// them into stored frames.
pub fn run(
    db: &Path,
    input: impl Read,
    data: [Option<File>; 3],
    redactor: Option<Redactor>,
    agent_group: Option<u32>,
    resume: bool,
    otlp: Option<LiveOptions>,
) -> Option<RecorderSummary> {
    let dir = db.parent().filter(|d| !d.as_os_str().is_empty()).unwrap_or(Path::new(".")).to_owned();
    let spool = Spool::new(dir, SPOOL_MEMORY_BYTES, SPOOL_FILE_BYTES);
    let input_ended = Arc::new(OnceLock::new());
    // Read now, while the agent surely runs: its key names it in the trace.
    let agent_key = agent_group.and_then(crate::proc::process_key);
    let recording = {
        let (db, spool, input_ended) = (db.to_owned(), spool.clone(), input_ended.clone());
        std::thread::Builder::new()
            .name("framer".into())
            .spawn(move || record(&db, &spool, redactor, &input_ended, resume, otlp, agent_key))
            .expect("cannot start the framer thread")
    };
    let ended = match intake::intake(input, &data, &spool) {
        Ok(ended) => ended,
        Err(e) => {
            // A message cut short: the relay died while blocked writing it, so
            // its bytes were never forwarded either.
            tracing::debug!("recorder: handoff ended: {e}");
            false
        }
    };
    let _ = input_ended.set(crate::clock::now_rfc3339());
    if !ended {
        if let Some(pgid) = agent_group {
            kill_group(pgid);
        }
    }
    spool.close();
    let summary = recording.join().expect("the framer thread panicked");
    if spool.file_peak() > 0 {
        tracing::debug!("recorder: the backlog reached {} bytes in the spool file", spool.file_peak());
    }
    summary
}

/// Kills process group `pgid` (the agent of a relay that was killed: its
/// parent-death signal reached the agent alone, not what it started).
fn kill_group(pgid: u32) {
    let Ok(pgid) = libc::pid_t::try_from(pgid) else { return };
    if pgid > 1 {
        // SAFETY: kill has no memory-safety preconditions.
        unsafe { libc::kill(-pgid, libc::SIGKILL) };
    }
}

/// The data pipes passed on descriptors `fds` (none when empty).
pub fn data_pipes_from(fds: &[i32]) -> [Option<File>; 3] {
    let mut pipes = [None, None, None];
    for (slot, &fd) in pipes.iter_mut().zip(fds) {
        // SAFETY: the relay opened these descriptors for this process alone
        // (dup2 before exec) and nothing else here uses them.
        *slot = Some(unsafe { File::from_raw_fd(fd) });
    }
    pipes
}

/// Frames, classifies and stores the handoff messages read from `input`,
/// which start with the run's start message. The trace ends when the relay's
/// end message says (its time), or, when the relay vanished, at
/// `input_ended`: when the handoff's end-of-file was read.
fn record(
    db: &Path,
    spool: &Arc<Spool>,
    redactor: Option<Redactor>,
    input_ended: &OnceLock<String>,
    resume: bool,
    otlp: Option<LiveOptions>,
    agent_key: Option<String>,
) -> Option<RecorderSummary> {
    lower_priority();
    // The relay, read while it is surely alive: its end note is named by it.
    // SAFETY: getppid has no preconditions.
    let relay = u32::try_from(unsafe { libc::getppid() }).unwrap_or(0);
    let mut reader = HandoffReader::new(spool.reader());
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
    let mut start = start;
    if let Some(r) = &redactor {
        // The command line may carry a token as well as a message may.
        r.mask_values(start.name.iter_mut().chain(start.cwd.iter_mut()).chain(start.command.iter_mut()));
    }
    let (mut writer, last_seq, protocol) = match resume.then(|| reader.read_message()) {
        Some(Ok(Some(Message::Resume(resume)))) => StoreWriter::resume(db, &start, &resume),
        Some(other) => {
            tracing::error!("recorder: a replacement recorder was not told what it continues: {other:?}");
            return None;
        }
        None => (StoreWriter::open(db, &start, agent_key), 0, start.protocol),
    };
    say_recording();
    let mut live =
        otlp.map(|o| LiveExport::start(o.endpoint, o.map, &start.started_at, start.name.as_deref(), redactor.clone()));
    let queue = Arc::new(ByteQueue::new(QUEUE_BYTES));
    let writer_thread = {
        let (queue, spool) = (queue.clone(), spool.clone());
        std::thread::Builder::new()
            .name("store-writer".into())
            .spawn(move || {
                lower_priority();
                let drained = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                    writer.drain(&queue, || spool.wait_out_burst())
                }));
                if drained.is_err() {
                    writer.count_the_rest_missing(&queue);
                }
                writer
            })
            .expect("cannot start the store writer thread")
    };
    let queue = &*queue;
    let mut framer = Framer::with_redactor(redactor);
    // Spans are made from each frame before it is stored (never waiting).
    let mut push = |f: crate::model::NewFrame| {
        if let Some(live) = live.as_mut() {
            live.feed(&f);
        }
        queue.push(f)
    };
    framer.continue_after(last_seq);
    if let Some(protocol) = protocol.or(start.protocol) {
        framer.set_protocol(protocol);
    }
    let mut last_t = 0;
    let mut end = None;
    let mut ended_at = None;
    loop {
        // The trace exists already (the viewer lists it); its frames wait
        // while a burst is coming in.
        spool.wait_out_burst();
        queue.wait_for_room(framer.pending_bytes());
        match reader.read_message() {
            Ok(Some(Message::Chunk { dir, t_ns, data })) => {
                last_t = t_ns;
                framer.chunk(dir, t_ns, &data, &mut push);
            }
            Ok(Some(Message::Frame { dir, t_ns, raw, envelope })) => {
                last_t = t_ns;
                push(framer.message(dir, t_ns, raw, envelope));
            }
            Ok(Some(Message::Eof { dir, t_ns })) => {
                last_t = t_ns;
                framer.eof(dir, t_ns, &mut push);
            }
            Ok(Some(Message::End { t_ns, end: e })) => {
                last_t = t_ns;
                ended_at = Some(time_after(&start.started_at, t_ns));
                end = Some(e);
                break;
            }
            Ok(Some(Message::Start(_) | Message::Resume(_))) => {
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
    framer.eof_all(last_t, &mut push);
    queue.close();
    let mut writer = writer_thread.join().expect("the store writer thread panicked");
    let told = end.is_some();
    let end =
        end.unwrap_or_else(|| TraceEnd { exit_code: None, exit_signal: None, end_reason: RELAY_KILLED.to_owned() });
    let ended_at = ended_at.or_else(|| input_ended.get().cloned()).unwrap_or_else(crate::clock::now_rfc3339);
    if writer.finish(&end, &ended_at) && told {
        // The end the relay left for want of a recorder is stored now.
        crate::end_note::remove(db, relay, &start.started_at);
    }
    // The trace is complete in the store; the exporter gets what time is
    // left to send the rest.
    if let Some(live) = live {
        live.finish(i64::try_from(last_t).unwrap_or(i64::MAX));
    }
    Some(RecorderSummary { trace_id: writer.trace_id(), written: writer.written(), missing: writer.missing() })
}

/// Tells the relay that the trace exists in the store (or cannot be made):
/// one byte on stdout, which is then pointed at /dev/null for good.
fn say_recording() {
    // SAFETY: plain writes and descriptor moves on fd 1, which this process
    // uses for nothing else.
    unsafe {
        let _ = libc::write(1, b"r".as_ptr().cast(), 1);
        let null = libc::open(c"/dev/null".as_ptr(), libc::O_WRONLY | libc::O_CLOEXEC);
        if null >= 0 {
            libc::dup2(null, 1);
            libc::close(null);
        }
    }
}

/// The wall-clock time `t_ns` nanoseconds after `started_at` (RFC 3339).
fn time_after(started_at: &str, t_ns: u64) -> String {
    match chrono::DateTime::parse_from_rfc3339(started_at) {
        Ok(start) => {
            let t = start + chrono::Duration::nanoseconds(i64::try_from(t_ns).unwrap_or(i64::MAX));
            crate::clock::rfc3339(t.with_timezone(&chrono::Utc))
        }
        Err(_) => crate::clock::now_rfc3339(),
    }
}
