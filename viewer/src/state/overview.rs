//! The overview strip's data (`/api/traces/{id}/overview`): the whole trace's frames, errors, open requests,
//! sessions and findings per interval of equal time, fetched when the Diagram tab is first shown, again when the
//! protocol checks' findings arrive (the first answer may not know them yet), and while the trace is live at
//! most once per [`REFRESH_MS`]. Also the pure mapping between the strip and the diagram: which buckets the
//! rows in view cover, which bucket a point of the strip is.

use super::throttle::Throttle;
use super::TraceState;
use crate::api::{self, ApiFailure};
use crate::view_query::Tab;
use acp_tee_shared::api::TraceOverview;
use leptos::prelude::*;

/// The shortest time between two fetches of a live trace's overview, in milliseconds: the server adds the
/// whole trace up again for each (a few hundred milliseconds at a million frames).
pub const REFRESH_MS: u32 = 2000;

/// What the strip draws.
#[derive(Clone, Copy)]
pub struct OverviewData {
    /// The last answer (`None` while the first is awaited).
    pub overview: RwSignal<Option<Result<TraceOverview, ApiFailure>>>,
    /// Fetches at most once per [`REFRESH_MS`].
    throttle: Throttle,
}

impl OverviewData {
    /// Nothing fetched yet.
    pub fn new() -> OverviewData {
        OverviewData { overview: RwSignal::new(None), throttle: Throttle::new(f64::from(REFRESH_MS)) }
    }
}

impl Default for OverviewData {
    fn default() -> Self {
        OverviewData::new()
    }
}

/// Starts the strip's fetching: when the Diagram tab is first shown (a Session tab opening first should not
/// wait behind a read of the whole trace), and again once the findings are known when the overview did not
/// know them.
pub fn start(st: TraceState) {
    let asked = StoredValue::new(false);
    Effect::new(move |_| {
        if st.query.with(|q| q.tab == Tab::Diagram) && !asked.get_value() {
            asked.set_value(true);
            refresh(st);
        }
    });
    // Either may come first: an overview made while the checks were still reading knows no findings.
    Effect::new(move |_| {
        let checked = st.findings.report.with(|r| matches!(r, Some(Ok(_))));
        let unknown = st.overview.overview.with(|o| matches!(o, Some(Ok(o)) if !o.findings_checked));
        if checked && unknown {
            refresh(st);
        }
    });
}

/// New frames of a live trace (or its end): the overview is fetched again, coalesced, once it was fetched.
pub fn heard_frames(st: TraceState) {
    if st.overview.overview.with_untracked(Option::is_some) {
        refresh(st);
    }
}

/// Fetches the overview, not sooner than [`REFRESH_MS`] after the last fetch; calls while one waits are
/// folded into it.
fn refresh(st: TraceState) {
    let od = st.overview;
    od.throttle.run(move || async move {
        let result = api::overview(st.id).await;
        match result {
            Ok(o) => {
                if od.overview.with_untracked(|old| old.as_ref().and_then(|r| r.as_ref().ok()) != Some(&o)) {
                    od.overview.try_set(Some(Ok(o)));
                }
            }
            // A failed refresh keeps what is drawn; the header says when the server is gone.
            Err(e) if od.overview.with_untracked(|o| matches!(o, Some(Ok(_)))) => {
                leptos::logging::warn!("overview: {e}");
            }
            Err(e) => {
                od.overview.try_set(Some(Err(e)));
            }
        }
    });
}

/// The buckets (first and last, inclusive) holding the frames `first_seq..=last_seq`, the rows in view.
pub fn window_buckets(o: &TraceOverview, first_seq: i64, last_seq: i64) -> Option<(usize, usize)> {
    let lo = o.bucket_of_seq(first_seq)?;
    let hi = o.bucket_of_seq(last_seq).unwrap_or(o.buckets.len() - 1).max(lo);
    // A last seq that no bucket holds lies before the bucket found: the one before it holds the rows.
    let hi = if o.buckets[hi].first_seq.is_some_and(|f| f > last_seq) && hi > lo { hi - 1 } else { hi };
    Some((lo, hi))
}

/// The first and last seq of the frames in the buckets from `a` to `b` (either order, both included), when
/// any of them holds one: the range a shift+drag over them selects.
pub fn seqs_of_buckets(o: &TraceOverview, a: usize, b: usize) -> Option<(i64, i64)> {
    let hi = a.max(b).min(o.buckets.len().checked_sub(1)?);
    let inside = o.buckets.get(a.min(b)..=hi)?;
    Some((inside.iter().find_map(|b| b.first_seq)?, inside.iter().rev().find_map(|b| b.last_seq)?))
}

/// The bucket under a point `frac` (0..1) of the way across a strip of `count` buckets.
pub fn bucket_at(frac: f64, count: usize) -> usize {
    if count == 0 {
        return 0;
    }
    ((frac.clamp(0.0, 1.0) * count as f64) as usize).min(count - 1)
}

/// The height of a bar of `n` frames when the fullest bucket holds `max`, in a strip `h` px tall: log scale,
/// so one busy bucket does not flatten the rest, and at least 1 px for any frame.
pub fn bar_height(n: u64, max: u64, h: f64) -> f64 {
    if n == 0 || max == 0 {
        return 0.0;
    }
    let scaled = h * (n as f64).ln_1p() / (max as f64).ln_1p();
    scaled.clamp(1.0, h)
}

#[cfg(test)]
mod tests {
    use super::*;
    use acp_tee_shared::api::OverviewBucket;

    fn overview(ranges: &[Option<(i64, i64)>]) -> TraceOverview {
        let buckets = ranges
            .iter()
            .map(|r| OverviewBucket {
                frames: r.map_or(0, |(a, b)| (b - a + 1) as u64),
                first_seq: r.map(|r| r.0),
                last_seq: r.map(|r| r.1),
                ..OverviewBucket::default()
            })
            .collect();
        TraceOverview { buckets, bucket_ns: 10, ..TraceOverview::default() }
    }

    #[test]
    fn the_rows_in_view_map_to_the_buckets_holding_them_across_a_gap() {
        let o = overview(&[Some((1, 10)), Some((11, 20)), None, None, Some((21, 25))]);
        assert_eq!(window_buckets(&o, 1, 5), Some((0, 0)));
        assert_eq!(window_buckets(&o, 8, 12), Some((0, 1)));
        assert_eq!(window_buckets(&o, 18, 22), Some((1, 4)), "the gap lies between the rows in view");
        assert_eq!(window_buckets(&o, 25, 25), Some((4, 4)));
        assert_eq!(window_buckets(&o, 26, 30), None);
        // A click in the gap goes to the frame after it.
        assert_eq!(o.seq_at_bucket(bucket_at(0.5, 5)), Some(21));
        assert_eq!(o.seq_at_bucket(bucket_at(0.0, 5)), Some(1));
        assert_eq!(bucket_at(1.0, 5), 4);
        assert_eq!(bucket_at(-3.0, 5), 0);
        // A range over buckets holds the frames of those that hold any; the gap alone holds none.
        assert_eq!(seqs_of_buckets(&o, 1, 4), Some((11, 25)));
        assert_eq!(seqs_of_buckets(&o, 4, 1), Some((11, 25)));
        assert_eq!(seqs_of_buckets(&o, 2, 3), None);
        assert_eq!(seqs_of_buckets(&o, 3, 99), Some((21, 25)));
        assert_eq!(seqs_of_buckets(&overview(&[]), 0, 0), None);
    }

    #[test]
    fn bars_are_log_scaled_and_any_frame_shows() {
        assert_eq!(bar_height(0, 1000, 30.0), 0.0);
        assert!((1.0..2.0).contains(&bar_height(1, 1_000_000, 30.0)));
        assert!(bar_height(1, 1_000_000_000, 30.0) >= 1.0);
        assert_eq!(bar_height(1000, 1000, 30.0), 30.0);
        assert!(bar_height(10, 1000, 30.0) > 30.0 / 100.0 * 10.0, "log, not linear");
    }
}
