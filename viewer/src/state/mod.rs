//! What a trace view knows and how it gets it. Nothing here draws.
//!
//! # Layout
//! - [`window`]: the fetched pages of the filtered frame list.
//! - [`layout`]: where each row sits on the rows or time axis; scroll mapping for huge traces.
//! - [`busy`]: the callee's busy spans of the rows in view.
//! - [`loader`]: the effects that fetch: the trace, its stats, pages in view, the live stream, jumps.

pub mod busy;
pub mod layout;
pub mod loader;
pub mod window;

use crate::api::ApiFailure;
use crate::route::{Nav, ViewQuery};
use acp_tee_shared::api::{FrameDetail, TraceStats, TraceSummary};
use layout::{Layout, Scroller};
use leptos::prelude::*;
use std::ops::Range;
use window::FrameWindow;

/// Pixels of rows drawn (and fetched) above and below the viewport: 8 rows.
/// Every drawn row costs the scroll handler when the drawn range moves;
/// with 800 px (20 rows) a fling at 400 px per frame spent 7 ms p50 / 22 ms p95
/// of script per scroll event and dropped frames, with 320 px 5 / 15 ms and
/// it kept up (BENCHMARKS.md).
const OVERSCAN_PX: f64 = 320.0;

/// The reactive state of one trace view, shared by its components through context.
#[derive(Clone, Copy)]
pub struct TraceState {
    /// The trace's id.
    pub id: i64,
    /// The address bar.
    pub nav: Nav,
    /// Filters, axis, tab and selection from the URL.
    pub query: Memo<ViewQuery>,
    /// The trace (`None` while loading).
    pub trace: RwSignal<Option<Result<TraceSummary, ApiFailure>>>,
    /// Its timing (`None` while loading).
    pub stats: RwSignal<Option<Result<TraceStats, ApiFailure>>>,
    /// The selected frame's detail, with the seq it is for.
    pub detail: RwSignal<Option<(i64, Result<FrameDetail, ApiFailure>)>>,
    /// The fetched frames of the current filters.
    pub window: RwSignal<FrameWindow>,
    /// The last failure fetching frames.
    pub window_error: RwSignal<Option<ApiFailure>>,
    /// Row positions.
    pub layout: Memo<Layout>,
    /// The diagram's scroll position and visible height.
    pub scroll_top: RwSignal<f64>,
    /// Visible height of the diagram.
    pub view_h: RwSignal<f64>,
    /// Rows drawn: those in view plus overscan.
    pub rows_in_view: Memo<Range<usize>>,
    /// Keep the newest frames in view while live.
    pub follow: RwSignal<bool>,
    /// A row the diagram should scroll into view; the diagram clears it.
    pub reveal: RwSignal<Option<usize>>,
    /// A frame to find and show; the loader clears it.
    pub jump: RwSignal<Option<i64>>,
}

impl TraceState {
    /// Fresh state for a trace; nothing is fetched until [`loader::start`].
    pub fn new(id: i64, nav: Nav) -> TraceState {
        let query = Memo::new(move |_| nav.query());
        let window = RwSignal::new(FrameWindow::default());
        let axis = Memo::new(move |_| query.with(|q| q.axis));
        let layout = Memo::new(move |_| window.with(|w| Layout::build(w, axis.get())));
        let scroll_top = RwSignal::new(0.0);
        let view_h = RwSignal::new(800.0);
        let rows_in_view = Memo::new(move |_| {
            let (st, vh) = (scroll_top.get(), view_h.get());
            layout.with(|l| {
                let top = Scroller::new(l.height(), vh).layout_top(st);
                l.rows_between(top - OVERSCAN_PX, top + vh + OVERSCAN_PX)
            })
        });
        TraceState {
            id,
            nav,
            query,
            trace: RwSignal::new(None),
            stats: RwSignal::new(None),
            detail: RwSignal::new(None),
            window,
            window_error: RwSignal::new(None),
            layout,
            scroll_top,
            view_h,
            rows_in_view,
            follow: RwSignal::new(true),
            reveal: RwSignal::new(None),
            jump: RwSignal::new(None),
        }
    }

    /// The trace summary once loaded (tracked).
    pub fn summary(&self) -> Option<TraceSummary> {
        self.trace.with(|t| t.as_ref().and_then(|r| r.as_ref().ok()).cloned())
    }

    /// True while the trace is being recorded (tracked).
    pub fn is_live(&self) -> bool {
        self.trace.with(|t| matches!(t, Some(Ok(t)) if t.live))
    }

    /// The scroll mapping for the current layout (tracked).
    pub fn scroller(&self) -> Scroller {
        Scroller::new(self.layout.with(|l| l.height()), self.view_h.get())
    }

    /// Selects a frame (in place in the history: selecting is not navigating).
    pub fn select(&self, seq: i64) {
        self.nav.update_query(false, |q| q.frame = Some(seq));
    }

    /// Selects a frame and brings it into view, fetching what is needed to find it.
    pub fn jump_to(&self, seq: i64) {
        self.select(seq);
        self.follow.set(false);
        self.jump.set(Some(seq));
    }
}
