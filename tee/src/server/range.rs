//! `/api/traces/{id}/range?from=SEQ&to=SEQ`: what a range of a trace's seqs
//! holds, for the viewer's range panel (`crate::store::Store::range_summary`
//! reads it: one pass over the range, a few hundred milliseconds for a
//! million frames, so it waits for a scan slot).

use super::error::AppError;
use super::routes::{path, query};
use super::AppState;
use acp_tee_shared::api::{RangeQuery, RangeSummary};
use axum::extract::rejection::{PathRejection, QueryRejection};
use axum::extract::{Path, Query, State};
use axum::Json;

/// `GET /api/traces/{id}/range?from=SEQ&to=SEQ`
pub async fn range(
    State(st): State<AppState>,
    id: Result<Path<i64>, PathRejection>,
    q: Result<Query<RangeQuery>, QueryRejection>,
) -> Result<Json<RangeSummary>, AppError> {
    let (id, q) = (path(id)?, query(q)?);
    let (from, to) = q.range().map_err(AppError::BadRequest)?;
    // Method names counted as the rows show them: masked.
    let seen = st.redactor();
    let summary = st.db.run_scan(move |s| s.seen_by(&seen).run(|| s.range_summary(id, from, to))).await?;
    Ok(Json(summary))
}
