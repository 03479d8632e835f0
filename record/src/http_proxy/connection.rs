//! One ACP connection seen by the proxy, recorded as one trace: its own
//! recorder process (as `acp-tee proxy` starts one), fed by a thread of its
//! own from a queue the forwarding tasks fill.
//!
//! A forwarding task takes a place in the queue ([`Connection::poll_record`]:
//! the message's bytes out of [`RECORD_QUEUE_BYTES`]; waiting when the queue
//! is full, which holds the message back, never drops it), stamps and queues
//! the message under one lock, and only then forwards it. The recording
//! thread hands the queue on to the recorder process through the handoff
//! pipe: a write into a pipe, never SQL, and never on a forwarding task.
//!
//! The trace ends when the last holder of the connection lets go of it: the
//! registry (until `DELETE`, a WebSocket's close, an upstream that does not
//! know the connection, or the proxy's stop) and every stream or exchange
//! still under way.

use super::memory::{ConnectionShare, Held};
use super::RECORD_QUEUE_BYTES;
use crate::model::{Mode, TraceEnd, TraceStart};
use crate::relay::recorder_process::Recorder;
use acp_tee_shared::Direction;
use axum::body::Bytes;
use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{mpsc, Arc, Mutex};
use std::task::{Context, Poll, Waker};
use std::time::Instant;

/// What every connection's recording shares: where and how to record.
#[derive(Debug, Clone)]
pub struct RecordTo {
    /// The store.
    pub db: PathBuf,
    /// The traces' name.
    pub name: String,
    /// The upstream URL (the trace's command).
    pub upstream: String,
    /// Mask secrets in what is stored (default rules plus these).
    pub redact: Option<Vec<String>>,
}

/// One item for the recording thread.
enum Item {
    /// A message going `dir`, with its transport facts (JSON), and its
    /// room in [`super::LIVE_BYTES`], given back once it is in the pipe.
    Frame { dir: Direction, t_ns: u64, message: Message, facts: Arc<[u8]>, places: usize },
    /// A line of the proxy's own on the stderr lane.
    Note { t_ns: u64, text: String, places: usize },
    /// The connection is over: end the trace so.
    End(TraceEnd),
}

/// A byte budget shared by a connection's forwarding tasks and its
/// recording thread.
struct Budget {
    state: Mutex<(usize, Vec<Waker>)>,
}

impl Budget {
    fn new(bytes: usize) -> Self {
        Budget { state: Mutex::new((bytes, Vec::new())) }
    }

    /// Takes `n` places, or registers the task to be woken when some are given back.
    fn poll_take(&self, cx: &mut Context<'_>, n: usize) -> Poll<()> {
        let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        if state.0 >= n {
            state.0 -= n;
            return Poll::Ready(());
        }
        if !state.1.iter().any(|w| w.will_wake(cx.waker())) {
            state.1.push(cx.waker().clone());
        }
        Poll::Pending
    }

    /// Takes `n` places if they are free now.
    fn try_take(&self, n: usize) -> bool {
        let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        let free = state.0 >= n;
        if free {
            state.0 -= n;
        }
        free
    }

    fn give_back(&self, n: usize) {
        let wakers = {
            let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
            state.0 += n;
            std::mem::take(&mut state.1)
        };
        wakers.into_iter().for_each(Waker::wake);
    }
}

/// The places a message of `len` bytes takes: a message larger than the
/// whole queue takes all of it (it waits for an empty queue).
fn places(len: usize) -> usize {
    len.clamp(1, RECORD_QUEUE_BYTES)
}

/// A message on its way to the recorder: its bytes (never copied on the
/// way) and the room it holds in [`super::LIVE_BYTES`].
pub struct Message {
    pub raw: Bytes,
    pub held: Held,
}

/// Connections being recorded now, in and out of the registry.
static LIVE: AtomicUsize = AtomicUsize::new(0);

/// The recording threads started, to wait for at the proxy's end.
static THREADS: Mutex<Vec<std::thread::JoinHandle<()>>> = Mutex::new(Vec::new());

/// One ACP connection's recording.
pub struct Connection {
    t0: Instant,
    /// Stamping and queueing happen under this lock, so the queue's order
    /// and its times agree.
    queue: Mutex<mpsc::Sender<Item>>,
    budget: Arc<Budget>,
    /// Why the trace ends, once that is known, and whether it failed.
    end_reason: Mutex<Option<(String, bool)>>,
    /// Notes dropped because the queue was full when they were written.
    notes_dropped: AtomicU64,
    /// When something of the connection last crossed (ns since `t0`).
    last_ns: AtomicU64,
    /// What the connection holds of [`super::LIVE_BYTES`].
    share: Arc<ConnectionShare>,
}

impl Connection {
    /// Starts recording a new connection as a trace of its own; `None` when
    /// [`super::MAX_CONNECTIONS`] are recorded already.
    pub fn start(to: &RecordTo) -> Option<Arc<Connection>> {
        if LIVE.fetch_add(1, Ordering::SeqCst) >= super::MAX_CONNECTIONS {
            LIVE.fetch_sub(1, Ordering::SeqCst);
            return None;
        }
        let t0 = Instant::now();
        let started_at = crate::clock::now_rfc3339();
        let (tx, rx) = mpsc::channel();
        let budget = Arc::new(Budget::new(RECORD_QUEUE_BYTES));
        let conn = Arc::new(Connection {
            t0,
            queue: Mutex::new(tx),
            budget: budget.clone(),
            end_reason: Mutex::new(None),
            notes_dropped: AtomicU64::new(0),
            last_ns: AtomicU64::new(0),
            share: Arc::default(),
        });
        let start = TraceStart {
            protocol: None,
            name: Some(to.name.clone()),
            command: vec![to.upstream.clone()],
            cwd: std::env::current_dir().ok().map(|p| p.display().to_string()),
            mode: Mode::Http.to_string(),
            started_at,
        };
        let (db, redact) = (to.db.clone(), to.redact.clone());
        let spawned = std::thread::Builder::new()
            .name("http-recording".into())
            .spawn(move || record(&db, redact.as_deref(), t0, &start, &rx, &budget));
        match spawned {
            Ok(handle) => {
                let mut threads = THREADS.lock().unwrap_or_else(|e| e.into_inner());
                threads.retain(|t| !t.is_finished());
                threads.push(handle);
            }
            Err(e) => tracing::warn!("cannot start a recording thread ({e}); this connection is not recorded"),
        }
        Some(conn)
    }

    /// Nanoseconds since the connection's trace started; marks the
    /// connection active now.
    fn now_ns(&self) -> u64 {
        let now = self.t0.elapsed().as_nanos() as u64;
        self.last_ns.store(now, Ordering::Relaxed);
        now
    }

    /// How long nothing of the connection crossed the proxy.
    fn idle_for(&self) -> std::time::Duration {
        let now = self.t0.elapsed().as_nanos() as u64;
        std::time::Duration::from_nanos(now.saturating_sub(self.last_ns.load(Ordering::Relaxed)))
    }

    /// A hold in [`super::LIVE_BYTES`] for this connection, for a client at `addr`.
    pub fn hold(&self, addr: std::net::IpAddr) -> Held {
        Held::new(self.share.clone(), addr)
    }

    /// Queues the message in `message` going `dir` with its transport
    /// `facts` once the queue has room for it, taking it out of `message`;
    /// `Ready` once it is queued (or when `message` is empty). Call again
    /// with the same `message` after `Pending`.
    pub fn poll_record(
        &self,
        cx: &mut Context<'_>,
        dir: Direction,
        message: &mut Option<Message>,
        facts: &Arc<[u8]>,
    ) -> Poll<()> {
        let Some(len) = message.as_ref().map(|m| m.raw.len()) else { return Poll::Ready(()) };
        let places = places(len);
        if self.budget.poll_take(cx, places).is_pending() {
            return Poll::Pending;
        }
        let Some(message) = message.take() else { return Poll::Ready(()) };
        let queue = self.queue.lock().unwrap_or_else(|e| e.into_inner());
        let item = Item::Frame { dir, t_ns: self.now_ns(), message, facts: facts.clone(), places };
        if queue.send(item).is_err() {
            self.budget.give_back(places);
        }
        Poll::Ready(())
    }

    /// Queues `message` (see [`Connection::poll_record`]).
    pub async fn record(&self, dir: Direction, message: Message, facts: &Arc<[u8]>) {
        let mut message = Some(message);
        std::future::poll_fn(|cx| self.poll_record(cx, dir, &mut message, facts)).await
    }

    /// Queues a line of the proxy's own (`http-proxy: TEXT`) if the queue has
    /// room now; otherwise it is counted, and the count given at the end.
    pub fn note(&self, text: impl Into<String>) {
        let text = format!("http-proxy: {}\n", text.into());
        let places = places(text.len());
        if !self.budget.try_take(places) {
            self.notes_dropped.fetch_add(1, Ordering::Relaxed);
            return;
        }
        let queue = self.queue.lock().unwrap_or_else(|e| e.into_inner());
        if queue.send(Item::Note { t_ns: self.now_ns(), text, places }).is_err() {
            self.budget.give_back(places);
        }
    }

    /// Says why the trace ends, as a connection ends (exit code 0); the
    /// first reason given wins.
    pub fn end_because(&self, reason: impl Into<String>) {
        self.set_end(reason.into(), false);
    }

    /// Says why the trace ends, as a connection fails (exit code 1); the
    /// first reason given wins.
    pub fn fail_because(&self, reason: impl Into<String>) {
        self.set_end(reason.into(), true);
    }

    fn set_end(&self, reason: String, failed: bool) {
        let mut end = self.end_reason.lock().unwrap_or_else(|e| e.into_inner());
        if end.is_none() {
            *end = Some((reason, failed));
        }
    }
}

impl Drop for Connection {
    fn drop(&mut self) {
        LIVE.fetch_sub(1, Ordering::SeqCst);
        let (mut reason, failed) = self
            .end_reason
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take()
            .unwrap_or_else(|| ("the connection's last exchange ended".to_owned(), false));
        let dropped = self.notes_dropped.load(Ordering::Relaxed);
        if dropped > 0 {
            reason.push_str(&format!(" ({dropped} proxy notes were dropped: the recording queue was full)"));
        }
        let end = TraceEnd { exit_code: Some(i32::from(failed)), exit_signal: None, end_reason: reason };
        // The recording thread ends the trace once it has handed on what
        // is queued before this.
        let _ = self.queue.lock().unwrap_or_else(|e| e.into_inner()).send(Item::End(end));
    }
}

/// The recording thread: starts the recorder process, hands it what is
/// queued, and ends the trace.
fn record(
    db: &std::path::Path,
    redact: Option<&[String]>,
    t0: Instant,
    start: &TraceStart,
    rx: &mpsc::Receiver<Item>,
    budget: &Budget,
) {
    let mut recorder = Recorder::start(db, t0, redact, None, None);
    let handoff = recorder.handoff.clone();
    handoff.start(start);
    recorder.wait_until_recording();
    let mut end = TraceEnd { exit_code: None, exit_signal: None, end_reason: "the proxy stopped".to_owned() };
    while let Ok(item) = rx.recv() {
        match item {
            Item::Frame { dir, t_ns, message, facts, places } => {
                let Message { raw, held } = message;
                let _ = handoff.frame_at(dir, t_ns, &raw, Some(&facts));
                // The message's bytes and its room go here, once in the pipe.
                drop((raw, held));
                budget.give_back(places);
            }
            Item::End(e) => {
                end = e;
                break;
            }
            Item::Note { t_ns, text, places } => {
                let _ = handoff.chunk_at(Direction::AgentStderr, t_ns, text.as_bytes());
                budget.give_back(places);
            }
        }
    }
    handoff.end(&end);
    handoff.close();
    recorder.part();
}

/// Waits, at most `limit`, for every recording thread to have handed on its
/// queue and ended its trace (the proxy is stopping).
pub fn wait_for_recordings(limit: std::time::Duration) {
    let deadline = Instant::now() + limit;
    let threads = std::mem::take(&mut *THREADS.lock().unwrap_or_else(|e| e.into_inner()));
    for thread in threads {
        while !thread.is_finished() && Instant::now() < deadline {
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        if thread.is_finished() {
            let _ = thread.join();
        }
    }
}

/// The connections known by their `Acp-Connection-Id`.
#[derive(Default)]
pub struct Registry {
    by_id: Mutex<HashMap<String, Arc<Connection>>>,
}

impl Registry {
    /// The connection with id `id`, if it is known.
    pub fn get(&self, id: &str) -> Option<Arc<Connection>> {
        self.lock().get(id).cloned()
    }

    /// Knows `conn` as `id` from now on.
    pub fn insert(&self, id: String, conn: Arc<Connection>) {
        self.lock().insert(id, conn);
    }

    /// Forgets connection `id`, whose trace ends (once its last exchange
    /// does) for `reason`.
    pub fn forget(&self, id: &str, reason: impl Into<String>) {
        if let Some(conn) = self.lock().remove(id) {
            conn.end_because(reason);
        }
    }

    /// Forgets connection `id`, which failed for `reason`.
    pub fn forget_failed(&self, id: &str, reason: impl Into<String>) {
        if let Some(conn) = self.lock().remove(id) {
            conn.fail_because(reason);
        }
    }

    /// Forgets the connections with no exchange under way (no stream open,
    /// no request in flight) and nothing crossed for `idle`: their clients
    /// went away without `DELETE`.
    pub fn forget_idle(&self, idle: std::time::Duration) {
        self.lock().retain(|_, conn| {
            let keep = Arc::strong_count(conn) > 1 || conn.idle_for() < idle;
            if !keep {
                conn.note(format!("no exchange for {} s: the client went away without DELETE", idle.as_secs()));
                conn.end_because(format!("the connection was idle for {} s with no stream open", idle.as_secs()));
            }
            keep
        });
    }

    /// Forgets every connection: the proxy stops.
    pub fn forget_all(&self, reason: &str) {
        for (_, conn) in self.lock().drain() {
            conn.end_because(reason);
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Arc<Connection>>> {
        self.by_id.lock().unwrap_or_else(|e| e.into_inner())
    }
}
