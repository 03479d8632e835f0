//! `/api/traces/{id}/requests` and `/api/traces/{id}/in_flight`: the
//! request table (one row per JSON-RPC request with its answer, sorted and
//! paged by the store) and the requests in flight over a frame (the
//! diagram's busy bars that neither begin nor end among the rows drawn).

use super::error::AppError;
use super::routes::{path, query};
use super::AppState;
use crate::redact::Redactor;
use acp_tee_shared::api::{
    InFlight, InFlightQuery, RequestPage, RequestQuery, RequestRow, RequestSort, RequestStatus, REQUESTS_MAX_LIMIT,
};
use axum::extract::rejection::{PathRejection, QueryRejection};
use axum::extract::{Path, Query, State};
use axum::Json;

/// Checks a request table query's numbers before they reach SQL.
pub fn validate(q: &RequestQuery) -> Result<(), String> {
    if q.limit.is_some_and(|l| !(1..=REQUESTS_MAX_LIMIT).contains(&l)) {
        return Err(format!("limit must be between 1 and {REQUESTS_MAX_LIMIT}"));
    }
    if q.offset.is_some_and(|o| o < 0) {
        return Err("offset must not be negative".to_owned());
    }
    Ok(())
}

/// A request row's stored values masked as a frame summary's are: method,
/// session, a string id, and the error's message (a peer's text).
fn mask_row(r: &Redactor, row: &mut RequestRow) {
    if r.is_noop() {
        return;
    }
    let message = match &mut row.status {
        RequestStatus::Error { message, .. } => message.as_mut(),
        _ => None,
    };
    let id = match &mut row.id {
        Some(serde_json::Value::String(id)) => Some(id),
        _ => None,
    };
    for value in [row.method.as_mut(), row.session_id.as_mut(), message, id].into_iter().flatten() {
        if let Some(masked) = r.mask_value(value) {
            *value = masked;
        }
    }
}

/// `GET /api/traces/{id}/requests?sort=COLUMN&desc=true&offset=N&limit=N`
/// (see [`RequestQuery`]): sizes as served (masked unless `--no-redact`).
/// A sort other than by seq sorts every request of the trace, so it waits
/// for a scan slot.
pub async fn requests(
    State(st): State<AppState>,
    id: Result<Path<i64>, PathRejection>,
    q: Result<Query<RequestQuery>, QueryRejection>,
) -> Result<Json<RequestPage>, AppError> {
    let (id, q) = (path(id)?, query(q)?);
    validate(&q).map_err(AppError::BadRequest)?;
    let (r, seen) = (st.redactor(), st.redactor());
    let scan = q.sort.unwrap_or_default() != RequestSort::Seq;
    let read = move |s: &crate::store::Store| s.seen_by(&seen).run(|| s.request_page(id, &q));
    let mut page = if scan { st.db.run_scan(read).await? } else { st.db.run(read).await? };
    page.requests.iter_mut().for_each(|row| mask_row(&r, row));
    Ok(Json(page))
}

/// `GET /api/traces/{id}/in_flight?at=SEQ`: the requests sent before frame
/// `at` and answered after it or never (newest first, at most
/// [`acp_tee_shared::api::IN_FLIGHT_MAX`], the rest counted).
pub async fn in_flight(
    State(st): State<AppState>,
    id: Result<Path<i64>, PathRejection>,
    q: Result<Query<InFlightQuery>, QueryRejection>,
) -> Result<Json<InFlight>, AppError> {
    let (id, q) = (path(id)?, query(q)?);
    if q.at < 0 {
        return Err(AppError::BadRequest("at must be a frame's seq (not negative)".to_owned()));
    }
    let r = st.redactor();
    let mut answer = st.db.run(move |s| s.in_flight(id, q.at)).await?;
    if !r.is_noop() {
        for method in answer.requests.iter_mut().filter_map(|q| q.method.as_mut()) {
            if let Some(masked) = r.mask_value(method) {
                *method = masked;
            }
        }
    }
    Ok(Json(answer))
}
