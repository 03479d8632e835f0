//! `/api/traces/{id}/overview`: the whole trace's time at a glance, for the
//! viewer's overview strip (`crate::store::Store::overview` adds the frames
//! up; the findings come from the checkers [`super::findings`] keeps).
//!
//! Adding up a million frames takes a few hundred milliseconds, so the
//! answer is kept per trace ([`OVERVIEWS_KEPT`] traces, one bucket count
//! each) until the trace's frame count changes, and the server starts it in
//! the background when it serves a trace's diagram page ([`warm`]), so it is ready
//! or under way when the app asks. Requests for a trace's overview while it
//! is added up wait for that one pass rather than start their own.

use super::error::AppError;
use super::routes::{path, query};
use super::AppState;
use crate::read::Folds;
use crate::store::{Store, StoreError};
use acp_tee_shared::api::{OverviewQuery, TraceOverview, OVERVIEW_BUCKETS_DEFAULT};
use axum::extract::rejection::{PathRejection, QueryRejection};
use axum::extract::{Path, Query, State};
use axum::Json;

/// Traces whose overviews the server keeps between requests.
pub const OVERVIEWS_KEPT: usize = 8;

/// An overview kept: the bucket count asked and the trace's frame count
/// when it was made.
type Kept = Option<(usize, i64, TraceOverview)>;

/// The overviews kept.
#[derive(Clone)]
pub struct Overviews(Folds<Kept>);

impl Default for Overviews {
    fn default() -> Self {
        Overviews(Folds::new(OVERVIEWS_KEPT))
    }
}

impl Overviews {
    /// Trace `id`'s overview in `buckets` buckets, as the store holds it now
    /// (without findings).
    fn current(&self, store: &Store, id: i64, buckets: usize) -> Result<TraceOverview, StoreError> {
        let trace = store.trace_summary(id)?;
        let kept = self.0.of(id, || None);
        // One request at a time adds a trace up; the others wait for it here.
        let mut kept = kept.lock().unwrap_or_else(|e| e.into_inner());
        if let Some((n, frames, o)) = kept.as_ref() {
            if *n == buckets && *frames == trace.meta.frame_count && o.live == trace.live {
                return Ok(o.clone());
            }
        }
        let mut o = store.overview(id, buckets)?;
        o.live = trace.live;
        *kept = Some((buckets, trace.meta.frame_count, o.clone()));
        Ok(o)
    }
}

/// Starts adding up trace `id`'s overview (in the viewer's bucket count) in
/// the background when a scan slot is free.
pub(super) fn warm(st: &AppState, id: i64) {
    let Some(slot) = st.db.try_scan_slot() else { return };
    let (db, overviews) = (st.db.clone(), st.overviews.clone());
    tokio::spawn(async move {
        let _slot = slot;
        if let Err(e) = db.run(move |s| overviews.current(s, id, OVERVIEW_BUCKETS_DEFAULT)).await {
            tracing::debug!("overview of trace {id} not made ahead: {e}");
        }
    });
}

/// `GET /api/traces/{id}/overview?buckets=N`
pub async fn overview(
    State(st): State<AppState>,
    id: Result<Path<i64>, PathRejection>,
    q: Result<Query<OverviewQuery>, QueryRejection>,
) -> Result<Json<TraceOverview>, AppError> {
    let (id, q) = (path(id)?, query(q)?);
    let buckets = q.buckets().map_err(AppError::BadRequest)?;
    let (overviews, checks) = (st.overviews.clone(), st.checks.clone());
    let o = st
        .db
        .run_scan(move |s| {
            let mut o = overviews.current(s, id, buckets)?;
            place_findings(&checks, &mut o);
            Ok(o)
        })
        .await?;
    Ok(Json(o))
}

/// Counts in each bucket of `o` the findings at its frames, when the checks
/// kept for its trace have read it all; else says why not.
fn place_findings(checks: &super::findings::Checks, o: &mut TraceOverview) {
    match checks.placed(o.trace_id, o.last_seq, o.live) {
        Ok((seqs, left_out)) => {
            o.buckets.iter_mut().for_each(|b| b.findings = Some(0));
            for seq in seqs {
                let at = o.bucket_of_seq(seq).filter(|&i| o.buckets[i].first_seq.is_some_and(|f| f <= seq));
                if let Some(b) = at.and_then(|i| o.buckets[i].findings.as_mut()) {
                    *b += 1;
                }
            }
            o.findings_checked = true;
            o.findings_note =
                (left_out > 0).then(|| format!("{left_out} findings past those listed are not placed on the strip"));
        }
        Err(why) => o.findings_note = Some(why),
    }
}
