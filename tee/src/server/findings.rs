//! `/api/traces/{id}/findings`: what the protocol checks (`crate::check`)
//! find in a trace, and the counts the trace list shows.
//!
//! The server keeps the checkers of the last [`CHECKERS_KEPT`] traces asked
//! about and feeds them only the frames stored since, so asking again about
//! a live trace costs its new frames (a check cut off by the query time
//! limit goes on from where it stopped). The trace list checks ended traces
//! of at most [`LIST_CHECK_FRAMES`] frames, at most [`LIST_CHECK_BUDGET`]
//! frames per listing, and remembers the counts of [`COUNTS_KEPT`] traces;
//! a trace not checked yet is listed without a count.

use super::error::AppError;
use super::routes::path;
use super::AppState;
use crate::check::{CheckOptions, Checker};
use crate::redact::Redactor;
use crate::store::{Store, StoreError};
use acp_tee_shared::api::TraceSummary;
use acp_tee_shared::check::{FindingCounts, TraceFindings};
use axum::extract::rejection::PathRejection;
use axum::extract::{Path, State};
use axum::Json;
use hashlink::LruCache;
use std::sync::{Arc, Mutex};

/// Traces whose checkers the server keeps between requests.
pub const CHECKERS_KEPT: usize = 4;

/// Traces with at most this many frames are checked for the trace list.
pub const LIST_CHECK_FRAMES: i64 = 20_000;

/// Frames one listing checks at most (traces beyond wait for the next).
pub const LIST_CHECK_BUDGET: i64 = 100_000;

/// Traces whose finding counts the server remembers.
pub const COUNTS_KEPT: usize = 10_000;

/// A trace's id and its checker, shared with the requests using it.
type Kept = (i64, Arc<Mutex<Checker>>);

/// The checkers and counts kept.
#[derive(Clone)]
pub struct Checks {
    checkers: Arc<Mutex<Vec<Kept>>>,
    /// Per trace: the frame count it was checked at, and its counts.
    counts: Arc<Mutex<LruCache<i64, (i64, FindingCounts)>>>,
}

impl Default for Checks {
    fn default() -> Self {
        Checks { checkers: Arc::default(), counts: Arc::new(Mutex::new(LruCache::new(COUNTS_KEPT))) }
    }
}

impl Checks {
    /// Trace `id`'s findings, its checker brought up to date first.
    fn findings(&self, store: &Store, id: i64) -> Result<TraceFindings, StoreError> {
        let trace = store.trace_summary(id)?;
        let checker = {
            let mut kept = self.checkers.lock().unwrap_or_else(|e| e.into_inner());
            let checker = match kept.iter().position(|(t, _)| *t == id) {
                Some(i) => kept.remove(i).1,
                None => Arc::new(Mutex::new(Checker::new(CheckOptions::default()))),
            };
            kept.push((id, checker.clone()));
            if kept.len() > CHECKERS_KEPT {
                kept.remove(0);
            }
            checker
        };
        // One request at a time brings a trace's checker up to date.
        let mut checker = checker.lock().unwrap_or_else(|e| e.into_inner());
        checker.catch_up(store, id)?;
        let mut report = checker.report(id);
        report.live = trace.live;
        if !trace.live {
            self.remember(id, trace.meta.frame_count, report.counts);
        }
        Ok(report)
    }

    fn remember(&self, id: i64, frames: i64, counts: FindingCounts) {
        self.counts.lock().unwrap_or_else(|e| e.into_inner()).insert(id, (frames, counts));
    }

    /// Fills in the counts of `traces`: those known, and those of small
    /// ended traces checked now, within [`LIST_CHECK_BUDGET`]. A check cut
    /// off (the query time limit) leaves the rest without counts: the list
    /// itself never fails for them.
    pub(super) fn fill_counts(&self, store: &Store, traces: &mut [TraceSummary]) {
        let mut budget = LIST_CHECK_BUDGET;
        for t in traces.iter_mut().filter(|t| !t.live) {
            let known = self.counts.lock().unwrap_or_else(|e| e.into_inner()).get(&t.meta.id).copied();
            t.findings = match known {
                Some((frames, counts)) if frames == t.meta.frame_count => Some(counts),
                _ if t.meta.frame_count <= LIST_CHECK_FRAMES && t.meta.frame_count <= budget => {
                    budget -= t.meta.frame_count;
                    match crate::check::check_trace(store, t.meta.id, CheckOptions::default()) {
                        Ok(report) => {
                            self.remember(t.meta.id, t.meta.frame_count, report.counts);
                            Some(report.counts)
                        }
                        Err(e) => {
                            tracing::debug!("the trace list's checks stopped: {e}");
                            budget = 0;
                            None
                        }
                    }
                }
                _ => None,
            };
        }
    }
}

/// Masks the peers' texts quoted in findings as frames are masked.
fn mask(r: &Redactor, mut report: TraceFindings) -> TraceFindings {
    if !r.is_noop() {
        r.mask_values(report.findings.iter_mut().map(|f| &mut f.message));
    }
    report
}

/// `GET /api/traces/{id}/findings`
pub async fn findings(
    State(st): State<AppState>,
    id: Result<Path<i64>, PathRejection>,
) -> Result<Json<TraceFindings>, AppError> {
    let id = path(id)?;
    let (checks, r) = (st.checks.clone(), st.redactor());
    let report = st.db.run_scan(move |s| checks.findings(s, id)).await?;
    Ok(Json(mask(&r, report)))
}
