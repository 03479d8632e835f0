//! `/api/traces/{id}/sessions` and `/sessions/{sid}`: the session model of
//! a trace (`crate::session`).
//!
//! The server keeps the whole-trace fold of the last [`MODELS_KEPT`] traces
//! asked about and feeds it only the frames stored since, so asking again
//! about a live trace costs its new frames. Pages of turns re-read only
//! their own frames.

use super::error::AppError;
use super::routes::{path, query};
use super::AppState;
use crate::session::{now_t_ns, Model};
use crate::store::{Store, StoreError};
use acp_tee_shared::session::{SessionDetail, TraceSessions, TurnQuery, TURNS_DEFAULT_LIMIT, TURNS_MAX_LIMIT};
use axum::extract::rejection::{PathRejection, QueryRejection};
use axum::extract::{Path, Query, State};
use axum::Json;
use std::sync::{Arc, Mutex};

/// Traces whose session models the server keeps between requests.
pub const MODELS_KEPT: usize = 4;

/// A trace's id and its model, shared with the requests using it.
type Kept = (i64, Arc<Mutex<Model>>);

/// The models kept, most recently used last.
#[derive(Clone, Default)]
pub struct Models(Arc<Mutex<Vec<Kept>>>);

impl Models {
    /// Runs `read` on trace `id`'s model, brought up to date with what
    /// `store` holds.
    pub(crate) fn with_current<T>(
        &self,
        store: &Store,
        id: i64,
        redactor: &crate::redact::Redactor,
        read: impl FnOnce(&Model) -> Result<T, StoreError>,
    ) -> Result<T, StoreError> {
        let model = {
            let mut kept = self.0.lock().unwrap_or_else(|e| e.into_inner());
            let model = match kept.iter().position(|(t, _)| *t == id) {
                Some(i) => kept.remove(i).1,
                None => Arc::default(),
            };
            kept.push((id, model.clone()));
            if kept.len() > MODELS_KEPT {
                kept.remove(0);
            }
            model
        };
        // One request at a time brings a trace's model up to date; the
        // others wait for it here rather than each reading the trace.
        let mut model = model.lock().unwrap_or_else(|e| e.into_inner());
        model.catch_up(store, id, (!redactor.is_noop()).then_some(redactor))?;
        read(&model)
    }
}

/// Trace `id`'s sessions, its model brought up to date first.
pub(super) fn overview(
    models: &Models,
    store: &Store,
    id: i64,
    redactor: &crate::redact::Redactor,
) -> Result<TraceSessions, StoreError> {
    let trace = store.trace_summary(id)?;
    models.with_current(store, id, redactor, |m| Ok(m.sessions(now_t_ns(&trace))))
}

/// `GET /api/traces/{id}/sessions`
pub async fn sessions(
    State(st): State<AppState>,
    id: Result<Path<i64>, PathRejection>,
) -> Result<Json<TraceSessions>, AppError> {
    let id = path(id)?;
    let (models, r) = (st.sessions.clone(), st.redactor());
    let view = st.db.run_scan(move |s| overview(&models, s, id, &r)).await?;
    Ok(Json(view))
}

/// `GET /api/traces/{id}/sessions/{sid}?offset=N&limit=N`
pub async fn session(
    State(st): State<AppState>,
    ids: Result<Path<(i64, String)>, PathRejection>,
    q: Result<Query<TurnQuery>, QueryRejection>,
) -> Result<Json<SessionDetail>, AppError> {
    let ((id, sid), q) = (path(ids)?, query(q)?);
    let limit = q.limit.unwrap_or(TURNS_DEFAULT_LIMIT);
    if !(1..=TURNS_MAX_LIMIT).contains(&limit) {
        return Err(AppError::BadRequest(format!("limit must be between 1 and {TURNS_MAX_LIMIT}")));
    }
    let offset = q.offset.unwrap_or(0);
    let (models, r) = (st.sessions.clone(), st.redactor());
    let missing = format!("trace {id} has no session {sid}");
    let detail = st
        .db
        .run_scan(move |s| {
            let trace = s.trace_summary(id)?;
            models.with_current(s, id, &r, |model| {
                let view = model.sessions(now_t_ns(&trace));
                let Some(summary) = view.sessions.into_iter().find(|x| x.session_id == sid) else { return Ok(None) };
                let redact = (!r.is_noop()).then_some(&r);
                let Some(turns) = model.turns_of(s, id, &sid, offset, limit, redact)? else { return Ok(None) };
                let (plan, commands, changes) = model.extras(&sid);
                let open_requests =
                    view.open_requests.into_iter().filter(|o| o.session_id.as_deref() == Some(sid.as_str())).collect();
                Ok(Some(SessionDetail { summary, turns, offset, open_requests, plan, commands, changes }))
            })
        })
        .await?;
    detail.map(Json).ok_or(AppError::NotFound(missing))
}
