//! The API's handlers. Read-only: nothing here writes to the store.

use super::error::AppError;
use super::live::trace_events;
use super::AppState;
use crate::export::{self, ExportFormat, ExportOptions, TraceSelection};
use crate::redact::Redactor;
use acp_tee_shared::api::{FrameDetail, FramePage, FrameQuery, TraceStats, TraceSummary};
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
use tokio::sync::mpsc;

fn path<T>(p: Result<Path<T>, PathRejection>) -> Result<T, AppError> {
    p.map(|Path(v)| v).map_err(|e| AppError::BadRequest(e.body_text()))
}

fn query<T>(q: Result<Query<T>, QueryRejection>) -> Result<T, AppError> {
    q.map(|Query(v)| v).map_err(|e| AppError::BadRequest(e.body_text()))
}

/// `GET /api/traces`
pub async fn list_traces(State(st): State<AppState>) -> Result<Json<Vec<TraceSummary>>, AppError> {
    Ok(Json(st.db.run(|s| s.trace_summaries()).await?))
}

/// `GET /api/traces/{id}`
pub async fn one_trace(
    State(st): State<AppState>,
    id: Result<Path<i64>, PathRejection>,
) -> Result<Json<TraceSummary>, AppError> {
    let id = path(id)?;
    Ok(Json(st.db.run(move |s| s.trace_summary(id)).await?))
}

/// Checks a frame query's numbers before it reaches SQL.
pub fn validate(q: &FrameQuery) -> Result<(), AppError> {
    let bad = |m: &str| Err(AppError::BadRequest(m.to_owned()));
    if q.limit.is_some_and(|l| !(1..=1000).contains(&l)) {
        return bad("limit must be between 1 and 1000");
    }
    if q.offset.is_some_and(|o| o < 0) {
        return bad("offset must not be negative");
    }
    if q.min_latency_ms.is_some_and(|ms| !(0.0..=1e12).contains(&ms)) {
        return bad("min_latency_ms must be a number of milliseconds, 0 or more");
    }
    if q.q.as_ref().is_some_and(|t| t.len() > 1000) {
        return bad("the search text must be at most 1000 bytes");
    }
    Ok(())
}

/// `GET /api/traces/{id}/frames`
pub async fn frames(
    State(st): State<AppState>,
    id: Result<Path<i64>, PathRejection>,
    q: Result<Query<FrameQuery>, QueryRejection>,
) -> Result<Json<FramePage>, AppError> {
    let (id, q) = (path(id)?, query(q)?);
    validate(&q)?;
    Ok(Json(st.db.run(move |s| s.frame_page(id, &q)).await?))
}

/// `GET /api/traces/{id}/frames/{seq}`
pub async fn frame(
    State(st): State<AppState>,
    ids: Result<Path<(i64, i64)>, PathRejection>,
) -> Result<Json<FrameDetail>, AppError> {
    let (id, seq) = path(ids)?;
    st.db
        .run(move |s| s.frame_detail(id, seq))
        .await?
        .map(Json)
        .ok_or_else(|| AppError::NotFound(format!("trace {id} has no frame {seq}")))
}

/// `GET /api/traces/{id}/stats`
pub async fn stats(
    State(st): State<AppState>,
    id: Result<Path<i64>, PathRejection>,
) -> Result<Json<TraceStats>, AppError> {
    let id = path(id)?;
    Ok(Json(st.db.run(move |s| s.trace_stats(id)).await?))
}

/// Query of the live stream.
#[derive(Deserialize)]
pub struct LiveQuery {
    /// Send frames with seq greater than this (default 0: all).
    after: Option<i64>,
}

/// `GET /api/traces/{id}/live` (Server-Sent Events)
pub async fn live(
    State(st): State<AppState>,
    id: Result<Path<i64>, PathRejection>,
    q: Result<Query<LiveQuery>, QueryRejection>,
) -> Result<Response, AppError> {
    let (id, q) = (path(id)?, query(q)?);
    st.db.run(move |s| s.trace(id)).await?;
    let events = trace_events(st.db.clone(), id, q.after.unwrap_or(0).max(0), st.changes.clone());
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

/// Buffers writes and sends them as body chunks; blocks when the client is
/// slower than the store (the channel is small), so memory stays flat.
struct ChannelWriter {
    tx: mpsc::Sender<Result<Bytes, std::io::Error>>,
    buf: Vec<u8>,
}

impl Write for ChannelWriter {
    fn write(&mut self, data: &[u8]) -> std::io::Result<usize> {
        self.buf.extend_from_slice(data);
        if self.buf.len() >= 64 * 1024 {
            self.flush()?;
        }
        Ok(data.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        if self.buf.is_empty() {
            return Ok(());
        }
        let chunk = Bytes::from(std::mem::take(&mut self.buf));
        self.tx.blocking_send(Ok(chunk)).map_err(|_| std::io::Error::other("the client went away"))
    }
}

/// `GET /api/traces/{id}/export?format=json|ndjson|jsons|perfetto&redact=false`:
/// secrets are masked unless `redact=false`.
pub async fn export_trace(
    State(st): State<AppState>,
    id: Result<Path<i64>, PathRejection>,
    q: Result<Query<ExportQuery>, QueryRejection>,
) -> Result<Response, AppError> {
    let (id, q) = (path(id)?, query(q)?);
    let format: ExportFormat = q.format.as_deref().unwrap_or("json").parse().map_err(AppError::BadRequest)?;
    let (ext, mime) = (format.extension(), format.mime());
    let redactor =
        if q.redact == Some(false) { Redactor::without_defaults(Vec::new()) } else { Redactor::new(Vec::new()) };
    let opts = ExportOptions { format, redactor, progress: indicatif::ProgressBar::hidden() };
    st.db.run(move |s| s.trace(id)).await?;
    let (tx, rx) = mpsc::channel(4);
    let db = st.db.clone();
    tokio::spawn(async move {
        let result = db
            .run(move |s| {
                let mut out = ChannelWriter { tx, buf: Vec::new() };
                if let Err(e) = export::export(s, TraceSelection::Id(id), &opts, &mut out) {
                    tracing::warn!("serve: export of trace {id} stopped: {e}");
                }
                Ok(())
            })
            .await;
        if let Err(e) = result {
            tracing::warn!("serve: export of trace {id}: {e}");
        }
    });
    let body = Body::from_stream(tokio_stream::wrappers::ReceiverStream::new(rx));
    Ok((
        [
            (CONTENT_TYPE, mime.to_owned()),
            (CONTENT_DISPOSITION, format!("attachment; filename=\"acp-tee-trace-{id}.{ext}\"")),
        ],
        body,
    )
        .into_response())
}
