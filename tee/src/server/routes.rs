//! The API's handlers. Read-only: nothing here writes to the store.

use super::error::AppError;
use super::live::trace_events;
use super::AppState;
use crate::export::{self, ExportFormat, ExportOptions, TraceSelection};
use crate::read::mask;
use acp_tee_shared::api::{
    FrameDetail, FrameDetailQuery, FramePage, FrameQuery, TraceFamily, TraceStats, TraceSummary,
};
use axum::body::Body;
use axum::extract::rejection::{PathRejection, QueryRejection};
use axum::extract::{Path, Query, State};
use axum::http::header::{CONTENT_DISPOSITION, CONTENT_TYPE};
use axum::response::sse::{KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use axum::Json;
use bytes::Bytes;
use serde::Deserialize;
use std::io::Write;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::mpsc;

pub(super) fn path<T>(p: Result<Path<T>, PathRejection>) -> Result<T, AppError> {
    p.map(|Path(v)| v).map_err(|e| AppError::BadRequest(e.body_text()))
}

pub(super) fn query<T>(q: Result<Query<T>, QueryRejection>) -> Result<T, AppError> {
    q.map(|Query(v)| v).map_err(|e| AppError::BadRequest(e.body_text()))
}

/// `GET /api/traces`
pub async fn list_traces(State(st): State<AppState>) -> Result<Json<Vec<TraceSummary>>, AppError> {
    let r = st.redactor();
    let mut traces = st.db.run(|s| s.trace_summaries()).await?;
    st.checks.fill_counts(&mut traces);
    Ok(Json(traces.into_iter().map(|t| mask::trace(&r, t)).collect()))
}

/// `GET /api/traces/{id}`
pub async fn one_trace(
    State(st): State<AppState>,
    id: Result<Path<i64>, PathRejection>,
) -> Result<Json<TraceSummary>, AppError> {
    let id = path(id)?;
    Ok(Json(mask::trace(&st.redactor(), st.db.run(move |s| s.trace_summary(id)).await?)))
}

/// `GET /api/traces/{id}/frames`
pub async fn frames(
    State(st): State<AppState>,
    id: Result<Path<i64>, PathRejection>,
    q: Result<Query<FrameQuery>, QueryRejection>,
) -> Result<Json<FramePage>, AppError> {
    let (id, q) = (path(id)?, query(q)?);
    crate::read::query::validate(&q).map_err(AppError::BadRequest)?;
    // Searched and sized as the page shows the frames: masked.
    let r = st.redactor();
    let seen = r.clone();
    let mut page = if filtered(&q) {
        let counts = st.search_counts.clone();
        st.db.run_scan(move |s| s.seen_by(&seen).run(|| s.frame_page_counted(id, &q, &counts))).await?
    } else {
        st.db.run(move |s| s.seen_by(&seen).run(|| s.frame_page(id, &q))).await?
    };
    page.frames.iter_mut().for_each(|f| mask::summary(&r, f));
    Ok(Json(page))
}

/// True when a page of `q` may have to scan the trace (any filter), so it
/// waits for a scan slot.
fn filtered(q: &FrameQuery) -> bool {
    let FrameQuery { after: _, offset: _, limit: _, dir, kind, method, session, errors, min_latency_ms, q, from, to } =
        q;
    dir.is_some()
        || kind.is_some()
        || method.is_some()
        || session.is_some()
        || errors.is_some()
        || min_latency_ms.is_some()
        || q.is_some()
        || from.is_some()
        || to.is_some()
}

/// `GET /api/traces/{id}/frames/{seq}?max_bytes=N`: masked (unless
/// `--no-redact`), its texts cut to [`acp_tee_shared::api::DETAIL_MAX_BYTES`]
/// (or `N`; `0` for no limit). Masking and cutting run on the query's
/// blocking thread.
pub async fn frame(
    State(st): State<AppState>,
    ids: Result<Path<(i64, i64)>, PathRejection>,
    q: Result<Query<FrameDetailQuery>, QueryRejection>,
) -> Result<Json<FrameDetail>, AppError> {
    let ((id, seq), q) = (path(ids)?, query(q)?);
    let (r, max) = (st.redactor(), mask::detail_limit(q.max_bytes));
    st.db
        .run(move |s| Ok(s.seen_by(&r).run(|| s.frame_detail(id, seq))?.map(|d| mask::detail(&r, d, max))))
        .await?
        .map(Json)
        .ok_or_else(|| AppError::NotFound(format!("trace {id} has no frame {seq}")))
}

/// `GET /api/traces/{id}/frames/{seq}/raw`: the frame's bytes whole, masked
/// as its detail is, as a download.
pub async fn frame_raw(
    State(st): State<AppState>,
    ids: Result<Path<(i64, i64)>, PathRejection>,
) -> Result<Response, AppError> {
    let (id, seq) = path(ids)?;
    let r = st.redactor();
    let bytes = st
        .db
        .run(move |s| Ok(s.frame_detail(id, seq)?.map(|d| mask::raw_bytes(&r, d))))
        .await?
        .ok_or_else(|| AppError::NotFound(format!("trace {id} has no frame {seq}")))?;
    Ok((
        [
            (CONTENT_TYPE, "application/octet-stream".to_owned()),
            (CONTENT_DISPOSITION, format!("attachment; filename=\"acp-tee-trace-{id}-frame-{seq}.raw\"")),
        ],
        bytes,
    )
        .into_response())
}

/// `GET /api/traces/{id}/family`: the trace's parent and its children (the
/// MCP servers its agent started), their fields masked as a trace's are.
pub async fn family(
    State(st): State<AppState>,
    id: Result<Path<i64>, PathRejection>,
) -> Result<Json<TraceFamily>, AppError> {
    let id = path(id)?;
    let r = st.redactor();
    let family = st.db.run(move |s| s.seen_by(&r).run(|| crate::read::family::members(s, &s.trace(id)?, &r))).await?;
    Ok(Json(family))
}

/// `GET /api/traces/{id}/stats`
pub async fn stats(
    State(st): State<AppState>,
    id: Result<Path<i64>, PathRejection>,
) -> Result<Json<TraceStats>, AppError> {
    let id = path(id)?;
    let r = st.redactor();
    let seen = r.clone();
    let mut stats = st.db.run(move |s| s.seen_by(&seen).run(|| s.trace_stats(id))).await?;
    stats.slowest.iter_mut().for_each(|f| mask::summary(&r, f));
    Ok(Json(stats))
}

/// `GET /api/diff/{a}/{b}`: trace `b` compared with trace `a`, as `acp-tee
/// diff` compares them, from messages masked as the API masks them, within
/// [`crate::read::DIFF_TIME_LIMIT`].
pub async fn diff(
    State(st): State<AppState>,
    ids: Result<Path<(i64, i64)>, PathRejection>,
) -> Result<Json<acp_tee_shared::diff::TraceDiff>, AppError> {
    let (a, b) = path(ids)?;
    let redactor = st.redactor();
    let report = st
        .db
        .clone()
        .with_time_limit(crate::read::DIFF_TIME_LIMIT)
        .run_scan(move |s| {
            let opts = crate::replay::diff::DiffOptions { ignore: Vec::new(), redactor: Some(redactor) };
            let side = |trace_id| crate::replay::diff::SideRef { store: s, trace_id };
            crate::replay::diff::diff(side(a), side(b), &opts)
        })
        .await?;
    Ok(Json(report))
}

/// Query of the live stream.
#[derive(Deserialize)]
pub struct LiveQuery {
    /// Send frames with seq greater than this (default 0: all).
    after: Option<i64>,
    /// Also send `sessions` events.
    sessions: Option<bool>,
}

/// `GET /api/traces/{id}/live` (Server-Sent Events)
pub async fn live(
    State(st): State<AppState>,
    id: Result<Path<i64>, PathRejection>,
    q: Result<Query<LiveQuery>, QueryRejection>,
) -> Result<Response, AppError> {
    let (id, q) = (path(id)?, query(q)?);
    st.db.run(move |s| s.trace(id)).await?;
    let models = q.sessions.unwrap_or(false).then(|| st.sessions.clone());
    let events =
        trace_events(st.db.clone(), id, q.after.unwrap_or(0).max(0), st.changes.clone(), st.redactor(), models);
    Ok(Sse::new(events).keep_alive(KeepAlive::default()).into_response())
}

/// Query of the export route.
#[derive(Deserialize)]
pub struct ExportQuery {
    /// `json` (default), `ndjson`, `jsons` or `perfetto`.
    format: Option<String>,
    /// `false` turns the default redaction off.
    redact: Option<bool>,
}

/// How long an export waits for its client to take the next chunk before
/// it stops (and the download fails): a client that reads nothing holds an
/// export's thread and connection no longer than this.
pub const EXPORT_STALL: Duration = Duration::from_secs(30);

/// Bytes an export gathers before it sends them as a body chunk.
const EXPORT_CHUNK: usize = 64 * 1024;

/// Buffers writes and sends them as body chunks; blocks when the client is
/// slower than the store (the channel is small), so memory stays flat, for
/// at most `stall` a chunk.
struct ChannelWriter {
    tx: mpsc::Sender<Result<Bytes, std::io::Error>>,
    buf: Vec<u8>,
    runtime: tokio::runtime::Handle,
    stall: Duration,
}

impl Write for ChannelWriter {
    fn write(&mut self, data: &[u8]) -> std::io::Result<usize> {
        self.buf.extend_from_slice(data);
        if self.buf.len() >= EXPORT_CHUNK {
            self.flush()?;
        }
        Ok(data.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        if self.buf.is_empty() {
            return Ok(());
        }
        let chunk = Bytes::from(std::mem::take(&mut self.buf));
        let sent = self.runtime.block_on(tokio::time::timeout(self.stall, self.tx.send(Ok(chunk))));
        match sent {
            Ok(Ok(())) => Ok(()),
            Ok(Err(_)) => Err(std::io::Error::other("the client went away")),
            Err(_) => Err(std::io::Error::new(
                std::io::ErrorKind::TimedOut,
                format!("the client read nothing for {} s", self.stall.as_secs_f64()),
            )),
        }
    }
}

/// The body of a download written by another thread: the chunks it sends,
/// and then, unless it said it finished (`done`), an error, so the
/// connection is cut instead of ended (a chunked body then lacks its last
/// chunk and clients report the download as failed).
fn download_body(rx: mpsc::Receiver<Result<Bytes, std::io::Error>>, done: Arc<AtomicBool>) -> Body {
    let chunks = futures_util::stream::unfold(Some((rx, done)), |state| async move {
        let (mut rx, done) = state?;
        match rx.recv().await {
            Some(chunk) => Some((chunk, Some((rx, done)))),
            None if done.load(Ordering::Acquire) => None,
            None => Some((Err(std::io::Error::other("the export stopped before its end")), None)),
        }
    });
    Body::from_stream(chunks)
}

/// `GET /api/traces/{id}/export?format=json|ndjson|jsons|perfetto&redact=false`:
/// secrets are masked unless `redact=false`. At most [`crate::read::MAX_EXPORTS`]
/// run at once (503 beyond); an export that fails half-way (a read error,
/// a client that stopped reading for [`EXPORT_STALL`]) cuts the connection.
pub async fn export_trace(
    State(st): State<AppState>,
    id: Result<Path<i64>, PathRejection>,
    q: Result<Query<ExportQuery>, QueryRejection>,
) -> Result<Response, AppError> {
    let (id, q) = (path(id)?, query(q)?);
    let format: ExportFormat = q.format.as_deref().unwrap_or("json").parse().map_err(AppError::BadRequest)?;
    let (ext, mime) = (format.extension(), format.mime());
    let redactor = crate::read::mask::redactor(q.redact != Some(false));
    let opts = ExportOptions { format, redactor, progress: indicatif::ProgressBar::hidden(), otlp: Default::default() };
    let slot = st.db.export_slot().ok_or_else(|| {
        AppError::Unavailable(format!(
            "{} exports are running, as many as this server runs at once; try again when one has finished",
            crate::read::MAX_EXPORTS
        ))
    })?;
    st.db.run(move |s| s.trace(id)).await?;
    let (tx, rx) = mpsc::channel(4);
    let done = Arc::new(AtomicBool::new(false));
    let finished = done.clone();
    let (db, runtime, stall) = (st.db.clone(), tokio::runtime::Handle::current(), EXPORT_STALL);
    tokio::spawn(async move {
        let result = db
            .run_export(move |s| {
                let _slot = slot;
                let mut out = ChannelWriter { tx, buf: Vec::new(), runtime, stall };
                match export::export(s, TraceSelection::Id(id), &opts, &mut out) {
                    Ok(_) => finished.store(true, Ordering::Release),
                    Err(e) => tracing::warn!("serve: export of trace {id} stopped: {e}"),
                }
                Ok(())
            })
            .await;
        if let Err(e) = result {
            tracing::warn!("serve: export of trace {id}: {e}");
        }
    });
    Ok((
        [
            (CONTENT_TYPE, mime.to_owned()),
            (CONTENT_DISPOSITION, format!("attachment; filename=\"acp-tee-trace-{id}.{ext}\"")),
        ],
        download_body(rx, done),
    )
        .into_response())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn an_export_whose_client_reads_nothing_stops_after_the_stall_time() {
        let (tx, _rx) = mpsc::channel(4);
        let (runtime, stall) = (tokio::runtime::Handle::current(), Duration::from_millis(200));
        let started = std::time::Instant::now();
        let result = tokio::task::spawn_blocking(move || {
            let mut out = ChannelWriter { tx, buf: Vec::new(), runtime, stall };
            // Four chunks fill the channel; the fifth waits for a reader.
            (0..5).try_for_each(|_| out.write_all(&vec![b'x'; EXPORT_CHUNK]))
        })
        .await
        .unwrap();
        let err = result.unwrap_err();
        assert_eq!(err.kind(), std::io::ErrorKind::TimedOut, "{err}");
        assert!(started.elapsed() >= stall && started.elapsed() < stall * 10, "{:?}", started.elapsed());
    }

    #[tokio::test]
    async fn a_download_that_did_not_finish_ends_in_an_error() {
        use http_body_util::BodyExt;
        for finished in [true, false] {
            let (tx, rx) = mpsc::channel(4);
            tx.send(Ok(Bytes::from_static(b"part"))).await.unwrap();
            drop(tx);
            let mut body = download_body(rx, Arc::new(AtomicBool::new(finished)));
            let first = body.frame().await.unwrap().unwrap().into_data().unwrap();
            assert_eq!(&first[..], b"part");
            let end = body.frame().await;
            assert_eq!(end.is_none(), finished, "{end:?}");
            assert_eq!(end.is_some_and(|e| e.is_err()), !finished);
        }
    }
}
