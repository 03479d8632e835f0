//! `/api/traces/{id}/findings`: what the protocol checks (`crate::check`)
//! find in a trace, and the counts the trace list shows.
//!
//! The server keeps the checkers of the last [`CHECKERS_KEPT`] traces asked
//! about and feeds them only the frames stored since, so asking again about
//! a live trace costs its new frames (a check cut off by the query time
//! limit goes on from where it stopped). The counts the trace list shows
//! come from those checks and from a background thread that checks ended
//! traces one at a time at low priority (`check_in_background`); the
//! counts of [`COUNTS_KEPT`] traces are remembered, and a trace not checked
//! yet is listed without a count.

use super::error::AppError;
use super::routes::path;
use super::AppState;
use crate::check::{CheckOptions, Checker};
use crate::read::Folds;
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

/// The background checks' pause after a trace, and when none is left.
const BACKGROUND_PAUSE_BUSY: std::time::Duration = std::time::Duration::from_millis(50);
const BACKGROUND_PAUSE_IDLE: std::time::Duration = std::time::Duration::from_millis(500);

/// Traces whose finding counts the server remembers.
pub const COUNTS_KEPT: usize = 10_000;

/// The checkers and counts kept.
#[derive(Clone)]
pub struct Checks {
    checkers: Folds<Checker>,
    /// Per trace: the frame count it was checked at, and its counts.
    counts: Arc<Mutex<LruCache<i64, (i64, FindingCounts)>>>,
}

impl Default for Checks {
    fn default() -> Self {
        Checks { checkers: Folds::new(CHECKERS_KEPT), counts: Arc::new(Mutex::new(LruCache::new(COUNTS_KEPT))) }
    }
}

impl Checks {
    /// Trace `id`'s findings, its checker brought up to date first.
    fn findings(&self, store: &Store, id: i64) -> Result<TraceFindings, StoreError> {
        let trace = store.trace_summary(id)?;
        let checker = self.checkers.of(id, || {
            let mut checker = Checker::new(CheckOptions::default());
            if let Some(protocol) = trace.meta.protocol {
                checker.set_protocol(protocol);
            }
            checker
        });
        // One request at a time brings a trace's checker up to date.
        let mut checker = checker.lock().unwrap_or_else(|e| e.into_inner());
        checker.catch_up(store, id)?;
        let report = checker.report_of(id, trace.live);
        if !trace.live {
            self.remember(id, trace.meta.frame_count, report.counts);
        }
        Ok(report)
    }

    /// The seq of each finding listed for trace `id` and how many were left
    /// out, when the checker kept here has read the trace up to seq `upto`;
    /// else why the findings are not known yet (never waits for a check).
    pub(super) fn placed(&self, id: i64, upto: i64, live: bool) -> Result<(Vec<i64>, u64), String> {
        let not_yet = "the protocol checks have not read this trace yet (the Findings tab or the diagram starts them)";
        let Some(checker) = self.checkers.peek(id) else { return Err(not_yet.to_owned()) };
        let Ok(checker) = checker.try_lock() else {
            return Err("the protocol checks are reading this trace now".to_owned());
        };
        if checker.last_seq() < upto {
            return Err(format!(
                "the protocol checks have read this trace up to frame {} of {upto}",
                checker.last_seq()
            ));
        }
        let report = checker.report_of(id, live);
        Ok((report.findings.iter().filter_map(|f| f.seq()).collect(), report.left_out))
    }

    fn remember(&self, id: i64, frames: i64, counts: FindingCounts) {
        self.counts.lock().unwrap_or_else(|e| e.into_inner()).insert(id, (frames, counts));
    }

    /// Fills in the counts of `traces` known: the list itself never checks
    /// (a trace of a million frames takes seconds).
    pub(super) fn fill_counts(&self, traces: &mut [TraceSummary]) {
        let mut counts = self.counts.lock().unwrap_or_else(|e| e.into_inner());
        for t in traces.iter_mut().filter(|t| !t.live) {
            t.findings = match counts.get(&t.meta.id) {
                Some(&(frames, c)) if frames == t.meta.frame_count => Some(c),
                _ => None,
            };
        }
    }

    /// Starts a thread that checks, at low priority and one at a time, the
    /// ended traces among the newest [`COUNTS_KEPT`] whose counts are not
    /// known, so the trace list can show them. It stops once `alive` can no
    /// longer be upgraded (the server state is gone).
    pub(super) fn check_in_background(&self, path: &std::path::Path, alive: std::sync::Weak<()>) {
        let (checks, path) = (self.clone(), path.to_owned());
        let _ = std::thread::Builder::new().name("checks".into()).spawn(move || {
            crate::proc::lower_priority();
            let Ok(reader) = crate::store::Reader::open(&path) else { return };
            while alive.upgrade().is_some() {
                let checked = checks.check_one(&reader).unwrap_or_else(|e| {
                    tracing::debug!("background checks of {}: {e}", path.display());
                    false
                });
                std::thread::sleep(if checked { BACKGROUND_PAUSE_BUSY } else { BACKGROUND_PAUSE_IDLE });
            }
        });
    }

    /// Checks the newest ended trace whose counts are not known; false when
    /// there is none.
    fn check_one(&self, store: &Store) -> Result<bool, StoreError> {
        let mut traces = store.trace_summaries()?;
        traces.truncate(COUNTS_KEPT);
        self.fill_counts(&mut traces);
        let Some(t) = traces.iter().find(|t| !t.live && t.findings.is_none()) else { return Ok(false) };
        let report = crate::check::check_trace(store, t.meta.id, CheckOptions::default())?;
        self.remember(t.meta.id, t.meta.frame_count, report.counts);
        Ok(true)
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
