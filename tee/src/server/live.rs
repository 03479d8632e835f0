//! Live updates: noticing other processes' commits cheaply, and the SSE
//! stream that pushes a trace's new frames.

use crate::read::Db;
use crate::store::Store;
use acp_tee_shared::api::TraceSummary;
use axum::response::sse::Event;
use futures_util::Stream;
use std::convert::Infallible;
use std::path::Path;
use std::time::Duration;
use tokio::sync::watch;

/// How often the store's `data_version` is checked. A check is one pragma on
/// an idle connection: it reads no frames.
const POLL: Duration = Duration::from_millis(15);

/// Frames the background maintenance indexes for search per step at most.
const INDEX_STEP: i64 = 2000;

/// Frames sent per `frames` event at most.
const BATCH: i64 = 256;

/// Starts a thread that bumps the returned counter whenever another process
/// commits to the store at `path`. It stops when every receiver is gone.
pub fn watch_store(path: &Path) -> watch::Receiver<u64> {
    let (tx, rx) = watch::channel(0u64);
    let path = path.to_owned();
    let _ = std::thread::Builder::new().name("store-watch".into()).spawn(move || {
        let Ok(store) = Store::open_existing(&path) else { return };
        let mut seen = store.data_version().unwrap_or(0);
        while !tx.is_closed() {
            std::thread::sleep(POLL);
            if let Ok(v) = store.data_version() {
                if v != seen {
                    seen = v;
                    tx.send_modify(|n| *n += 1);
                }
            }
        }
    });
    rx
}

/// Starts a thread that runs maintenance steps ([`Store::maintain`]) while the
/// server runs: it ends traces whose recorder died and adds frames recorded
/// under load (which recorders left out of the search index) to it, a chunk
/// at a time with pauses, so searches soon stop scanning. It stops once
/// `alive` can no longer be upgraded (the server state is gone).
pub fn maintain_behind_recorders(path: &Path, alive: std::sync::Weak<()>) {
    let path = path.to_owned();
    let _ = std::thread::Builder::new().name("search-index".into()).spawn(move || {
        // Below the request handlers and the browser the user is looking at.
        crate::proc::lower_priority();
        let Ok(mut store) = Store::open_existing(&path) else { return };
        if store.is_read_only() {
            // Searches scan what is not indexed; a read-only store stays so.
            tracing::debug!("{} is read-only here: not indexing it for search", path.display());
            return;
        }
        // The retention policy of the environment or the config file, in
        // bounded steps (the store's `retention.rs`).
        store.retain(crate::config::current().retention().into());
        while alive.upgrade().is_some() {
            let indexed = match store.maintain(INDEX_STEP) {
                Ok(report) => report.indexed + usize::from(report.removal_left),
                Err(e) => {
                    tracing::debug!("maintenance of {}: {e}", path.display());
                    0
                }
            };
            // Short pauses while catching up leave the write lock to
            // recorders most of the time; long ones once caught up.
            std::thread::sleep(if indexed > 0 { Duration::from_millis(20) } else { Duration::from_millis(500) });
        }
    });
}

struct LiveState {
    db: Db,
    trace_id: i64,
    after: i64,
    changes: watch::Receiver<u64>,
    last_summary: Option<(i64, i64, Option<String>, bool)>,
    finished: bool,
    /// What masks the frames sent.
    redactor: crate::redact::Redactor,
    /// With `sessions=true`: the models to send the sessions from, and
    /// whether frames sent since the last `sessions` event may change them.
    sessions: Option<(crate::read::Models, bool)>,
}

fn summary_key(s: &TraceSummary) -> (i64, i64, Option<String>, bool) {
    (s.meta.frame_count, s.meta.missing_frames, s.meta.ended_at.clone(), s.live)
}

/// The SSE events of trace `trace_id` from seq `after` on: `frames` with new
/// frames in order, `trace` when the trace's counts or state change, and
/// with `sessions` given, `sessions` (the trace's `TraceSessions`) once new
/// frames of a session were sent and no more are waiting. Once the
/// trace has ended and every frame was sent, the stream stays open without
/// events (only keep-alives), so browsers do not reconnect and replay it.
pub fn trace_events(
    db: Db,
    trace_id: i64,
    after: i64,
    changes: watch::Receiver<u64>,
    redactor: crate::redact::Redactor,
    sessions: Option<crate::read::Models>,
) -> impl Stream<Item = Result<Event, Infallible>> {
    let sessions = sessions.map(|m| (m, true));
    let state = LiveState { db, trace_id, after, changes, last_summary: None, finished: false, redactor, sessions };
    futures_util::stream::unfold(state, |mut st| async move {
        loop {
            if st.finished {
                std::future::pending::<()>().await;
            }
            let (id, after, seen) = (st.trace_id, st.after, st.redactor.clone());
            let frames = st.db.run(move |s| s.seen_by(&seen).run(|| s.frames_after(id, after, BATCH))).await;
            let Ok(mut frames) = frames else { return None };
            frames.iter_mut().for_each(|f| crate::read::mask::summary(&st.redactor, f));
            if let Some(last) = frames.last() {
                st.after = last.seq;
                if let Some((_, dirty)) = &mut st.sessions {
                    *dirty |= frames.iter().any(|f| f.session_id.is_some());
                }
                let event = Event::default().event("frames").json_data(&frames).ok()?;
                return Some((Ok(event), st));
            }
            if let Some((models, true)) = &st.sessions {
                let (models, redactor) = (models.clone(), st.redactor.clone());
                let view = st.db.run(move |s| super::sessions::overview(&models, s, id, &redactor)).await.ok()?;
                if let Some((_, dirty)) = &mut st.sessions {
                    *dirty = false;
                }
                let event = Event::default().event("sessions").json_data(&view).ok()?;
                return Some((Ok(event), st));
            }
            let Ok(summary) = st.db.run(move |s| s.trace_summary(id)).await else { return None };
            let summary = crate::read::mask::trace(&st.redactor, summary);
            let key = summary_key(&summary);
            if st.last_summary.as_ref() != Some(&key) {
                st.last_summary = Some(key);
                st.finished = !summary.live;
                let event = Event::default().event("trace").json_data(&summary).ok()?;
                return Some((Ok(event), st));
            }
            // Nothing new: sleep until another process commits (or a while,
            // so that a recorder that died is noticed).
            let _ = tokio::time::timeout(Duration::from_secs(2), st.changes.changed()).await;
        }
    })
}
