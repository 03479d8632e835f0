//! The range tools' state: the range selected by dragging on the diagram's time column or shift+dragging on
//! the overview strip (`sel=A-B` in the URL, so it survives a reload and Back undoes it), what it holds
//! (`/api/traces/{id}/range`, fetched when the selection changes), and the zoom of the linear axis: to a
//! range, or by ctrl+wheel (a trackpad's pinch) around the pointer, the time under the pointer staying
//! under it. Also the pure mapping between the view's pixels and the layout that these need.

use super::layout::{Layout, Scroller, ROW_H};
use super::TraceState;
use crate::api::{self, ApiFailure};
use acp_tee_shared::api::RangeSummary;
use leptos::prelude::*;
use leptos::task::spawn_local;

/// The finest scale zoom goes to: milliseconds per 100 px (10 µs).
pub const SCALE_MIN_MS: f64 = 0.01;
/// The coarsest: an hour per 100 px.
pub const SCALE_MAX_MS: f64 = 3_600_000.0;
/// How much a pixel of ctrl+wheel changes the scale: a mouse's notch (about 100 px) by a fifth, a
/// trackpad's pinch (a few px per event, many events) smoothly.
const WHEEL_ZOOM_PER_PX: f64 = 0.002;

/// What a range holds, as the server answered, with the range (first and last seq) it is for.
pub type Summary = ((i64, i64), Result<RangeSummary, ApiFailure>);

/// What the range tools keep.
#[derive(Clone, Copy)]
pub struct RangeData {
    /// What the selected range holds, with the range it is for (`None` until asked).
    pub summary: RwSignal<Option<Summary>>,
    /// While the pointer drags on the time column: the seqs of the rows where it went down and where it
    /// is now.
    pub drag: RwSignal<Option<(i64, i64)>>,
    /// A frame kept at a height of the view while the layout changes after a zoom (pages arriving above it
    /// move it otherwise), until the user scrolls, clicks or types in the diagram.
    pub pin: RwSignal<Option<Pin>>,
}

impl RangeData {
    /// Nothing selected, nothing fetched.
    pub fn new() -> RangeData {
        RangeData { summary: RwSignal::new(None), drag: RwSignal::new(None), pin: RwSignal::new(None) }
    }
}

impl Default for RangeData {
    fn default() -> Self {
        RangeData::new()
    }
}

/// A point of the layout kept at a height of the view: `at` frame `seq`'s row, `view_dy` px below the top of
/// the rows in view, once the linear axis has scale `scale`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Pin {
    /// The frame.
    pub seq: i64,
    /// Where from its row.
    pub at: Within,
    /// Where in the view, px from the top of the rows.
    pub view_dy: f64,
    /// The linear scale the pin waits for (the layout is built for the old one until the URL changes).
    pub scale: f64,
}

/// Fetches what the selected range holds whenever the selection changes.
pub fn start(st: TraceState) {
    let sel = Memo::new(move |_| st.query.with(|q| q.sel));
    Effect::new(move |_| {
        let Some((from, to)) = sel.get() else {
            st.range.summary.set(None);
            return;
        };
        spawn_local(async move {
            let result = api::range(st.id, from, to).await;
            // A later selection may have been answered first.
            if st.query.try_with_untracked(|q| q.sel) == Some(Some((from, to))) {
                st.range.summary.try_set(Some(((from, to), result)));
            }
        });
    });
}

/// Where a point is from the row above it: on the row itself, so many px below its top (the row stays under
/// the pointer whatever the scale), or in the gap below it, a fraction of the way from its top to the next
/// row's (on the linear axis, the time there: it stays under the pointer).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Within {
    /// Px below the row's top, less than a row's height.
    Row(f64),
    /// The fraction of the way to the next row's top.
    Gap(f64),
}

/// The layout's height at `view_dy` px below the top of the rows in view, scrolled to `scroll_top`.
pub fn layout_y(scroller: Scroller, scroll_top: f64, view_dy: f64) -> f64 {
    scroller.layout_top(scroll_top) + view_dy
}

/// Where a height of the layout is: the row at it, and where from that row.
pub fn spot(l: &Layout, total: usize, y: f64) -> (usize, Within) {
    let idx = l.index_at(y);
    let (top, next) = (l.y_of(idx), next_y(l, total, idx));
    if y - top < ROW_H {
        return (idx, Within::Row((y - top).max(0.0)));
    }
    (idx, Within::Gap(((y - top) / (next - top)).clamp(0.0, 1.0)))
}

/// The height of a spot ([`spot`]) in a layout.
pub fn y_of_spot(l: &Layout, total: usize, idx: usize, at: Within) -> f64 {
    let top = l.y_of(idx);
    match at {
        Within::Row(dy) => top + dy,
        Within::Gap(frac) => top + frac * (next_y(l, total, idx) - top),
    }
}

/// The top of the row after `idx`, or a row's height below the last one.
fn next_y(l: &Layout, total: usize, idx: usize) -> f64 {
    if idx + 1 < total {
        l.y_of(idx + 1).max(l.y_of(idx) + 1.0)
    } else {
        l.y_of(idx) + ROW_H
    }
}

/// A scale within [`SCALE_MIN_MS`]..=[`SCALE_MAX_MS`], to four significant digits (a short URL).
pub fn clamp_scale(ms: f64) -> f64 {
    let ms = if ms.is_finite() { ms.clamp(SCALE_MIN_MS, SCALE_MAX_MS) } else { SCALE_MAX_MS };
    let digits = 10f64.powi(3 - ms.log10().floor() as i32);
    ((ms * digits).round() / digits).clamp(SCALE_MIN_MS, SCALE_MAX_MS)
}

/// The scale at which a range `duration_ns` long fills a view `view_h` px tall (its last row showing whole).
/// With the gaps between its rows (`gaps_ns`, when they are all fetched), the rows' own height counts too:
/// a gap shorter than a row still takes a row, so the scale is the one whose laid-out height fits, found by
/// halving (the height only shrinks as the scale grows); without them, or when even the rows alone do not
/// fit, the time alone fills the view.
pub fn scale_to_fill(duration_ns: i64, gaps_ns: Option<&[i64]>, view_h: f64) -> f64 {
    let room = (view_h - ROW_H).max(ROW_H);
    let by_time = clamp_scale(duration_ns.max(1) as f64 / 1e6 * 100.0 / room);
    let Some(gaps) = gaps_ns.filter(|g| (g.len() as f64) * ROW_H < room) else { return by_time };
    let height =
        |scale_ms: f64| gaps.iter().map(|&g| (g.max(0) as f64 * 100.0 / (scale_ms * 1e6)).max(ROW_H)).sum::<f64>();
    // In log space: the height is below `room` at `hi` and above it at `lo`.
    let (mut lo, mut hi) = (SCALE_MIN_MS.ln(), SCALE_MAX_MS.ln());
    if height(SCALE_MIN_MS) <= room {
        return SCALE_MIN_MS;
    }
    for _ in 0..60 {
        let mid = (lo + hi) / 2.0;
        if height(mid.exp()) > room {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    // Rounded up, so that the rounding never pushes the last row out of view.
    let s = clamp_scale(hi.exp());
    if height(s) > room {
        clamp_scale(s * 1.001)
    } else {
        s
    }
}

/// The scale after a ctrl+wheel of `delta_px` (down, positive, zooms out) from `scale`.
pub fn wheel_scale(scale: f64, delta_px: f64) -> f64 {
    clamp_scale(scale * (delta_px * WHEEL_ZOOM_PER_PX).exp())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::state::testing::summary;
    use crate::state::window::FrameWindow;
    use crate::view_query::Axis;
    use acp_tee_shared::api::FramePage;
    use acp_tee_shared::{Direction, FrameKind};

    fn window(times_ms: &[f64]) -> FrameWindow {
        let frames = times_ms
            .iter()
            .enumerate()
            .map(|(i, t)| summary(i as i64 + 1, (t * 1e6) as i64, Direction::ClientToAgent, FrameKind::Notification))
            .collect::<Vec<_>>();
        let mut w = FrameWindow::default();
        w.insert_page(0, FramePage { total: frames.len() as i64, frames, has_more: false });
        w
    }

    #[test]
    fn a_point_of_the_view_maps_to_the_layout_also_when_the_scroll_area_is_shortened() {
        let plain = Scroller::new(10_000.0, 500.0);
        assert_eq!(layout_y(plain, 300.0, 40.0), 340.0);
        // Content 10x taller than the scroll area can be: a scrolled pixel is 10 of the layout's.
        let huge = Scroller { layout_h: 80_000_500.0, scroll_h: 8_000_500.0, view_h: 500.0 };
        assert_eq!(layout_y(huge, 1_000.0, 40.0), 10_040.0);
    }

    #[test]
    fn the_time_under_the_pointer_stays_under_it_when_the_scale_changes() {
        // Rows at 0, 100 and 1100 ms: at 100 ms per 100 px, 100 px and 1000 px apart.
        let w = window(&[0.0, 100.0, 1100.0]);
        let before = Layout::build(&w, Axis::Linear, Some(100.0), false);
        assert_eq!((before.y_of(1), before.y_of(2)), (100.0, 1100.0));
        // 600 ms in: between rows 2 and 3, half way.
        let (idx, at) = spot(&before, 3, 600.0);
        assert_eq!((idx, at), (1, Within::Gap(0.5)));
        // Ten times finer: the gap is 10,000 px; the same time is half way along it.
        let after = Layout::build(&w, Axis::Linear, Some(10.0), false);
        assert_eq!(y_of_spot(&after, 3, idx, at), 1000.0 + 5000.0);
        // On a row: the row stays under the pointer, however far the next one goes.
        assert_eq!(spot(&before, 3, 120.0), (1, Within::Row(20.0)));
        assert!((y_of_spot(&after, 3, 1, Within::Row(20.0)) - 1020.0).abs() < 1e-6);
        // The last row too.
        assert_eq!(spot(&before, 3, 1120.0), (2, Within::Row(20.0)));
        assert_eq!(y_of_spot(&after, 3, 2, Within::Row(20.0)), after.y_of(2) + 20.0);
    }

    #[test]
    fn zoom_scales_are_bounded_and_short_and_a_range_fills_the_view() {
        // 60 s in 640 px (600 px of room for its last row to show): 10 s per 100 px.
        assert_eq!(scale_to_fill(60_000_000_000, None, 640.0), 10_000.0);
        assert_eq!(scale_to_fill(0, None, 640.0), SCALE_MIN_MS);
        assert_eq!(scale_to_fill(i64::MAX, None, 640.0), SCALE_MAX_MS);
        // Two rows 1 ms apart, then the 60 s: the rows take 80 px, the gap the other 520.
        let gaps = [1_000_000, 1_000_000, 60_000_000_000];
        let s = scale_to_fill(60_002_000_000, Some(&gaps), 640.0);
        assert!((s - 60_000.0 * 100.0 / 520.0).abs() < 15.0, "{s}");
        let w = window(&[0.0, 1.0, 2.0, 60_002.0]);
        let l = Layout::build(&w, Axis::Linear, Some(s), false);
        assert!(l.y_of(3) <= 600.0 && l.y_of(3) > 598.0, "the last row's top at {}", l.y_of(3));
        // Rows alone taller than the view: the time alone sets the scale.
        assert_eq!(scale_to_fill(60_000_000_000, Some(&[1; 20]), 640.0), 10_000.0);
        assert_eq!(clamp_scale(123.456789), 123.5);
        assert_eq!(clamp_scale(0.0123456), 0.01235);
        assert_eq!(clamp_scale(f64::NAN), SCALE_MAX_MS);
        // A notch down zooms out, up zooms in by as much; many small pinch steps move it too.
        let out = wheel_scale(100.0, 100.0);
        assert!(out > 120.0 && out < 125.0, "{out}");
        assert!((wheel_scale(out, -100.0) - 100.0).abs() < 0.1);
        let pinched = (0..10).fold(100.0, |s, _| wheel_scale(s, -3.0));
        assert!(pinched < 95.0, "{pinched}");
        assert_eq!(wheel_scale(SCALE_MIN_MS, -1000.0), SCALE_MIN_MS);
    }
}
