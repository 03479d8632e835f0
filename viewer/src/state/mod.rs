//! What a trace view knows and how it gets it. Nothing here draws.
//!
//! # Layout
//! - [`window`]: the fetched pages of the filtered frame list.
//! - [`layout`]: where each row sits on the rows or time axes; scroll mapping for huge traces.
//! - [`busy`]: the callee's busy spans of the rows in view.
//! - [`family`]: the trace's MCP children (lanes of the diagram) and their frames, refreshed while live.
//! - [`mcp`]: where the MCP lanes' frames and busy spans sit between the rows in view.
//! - [`loader`]: the effects that fetch: the trace's stats, pages in view, the live stream, jumps.
//! - [`sessions`]: the Session tab's sessions and page of turns, refreshed as a live trace grows.
//! - [`find`]: find (`find=`): the next or previous frame holding some words, and the rows drawn that do.
//! - [`findings`]: the protocol checks' findings, fetched once the Diagram or Findings tab is shown (and on demand).
//! - [`requests`]: the Requests tab's page of the request table, refreshed as a live trace grows.
//! - [`in_flight`]: the requests in flight over the rows drawn, for the busy bars of long turns.
//! - [`overview`]: the overview strip's counts per interval of the whole trace, refreshed as a live trace grows.
//! - [`range`]: the range tools: the selected range and what it holds, the linear axis's zoom around a point.
//! - [`replay`]: a replay's cursor (no frame past it shows), played on the trace's clock.

pub mod busy;
pub mod family;
pub mod find;
pub mod findings;
pub mod in_flight;
pub mod layout;
pub mod loader;
pub mod mcp;
pub mod overview;
pub mod range;
pub mod replay;
pub mod requests;
pub mod sessions;
#[cfg(test)]
pub mod testing;
pub mod throttle;
pub mod window;

use crate::api::ApiFailure;
use crate::view_query::{last_seq_shown, ViewQuery, ViewUrl};
use acp_tee_shared::api::{FrameDetail, FrameQuery, InFlight, TraceStats, TraceSummary};
use layout::{Layout, Scroller};
use leptos::prelude::*;
use sessions::SessionData;
use std::ops::Range;
use window::FrameWindow;

/// Pixels of rows drawn (and fetched) above and below the viewport: 8 rows.
/// Every drawn row costs the scroll handler when the drawn range moves;
/// with 800 px (20 rows) a fling at 400 px per frame spent 7 ms p50 / 22 ms p95
/// of script per scroll event and dropped frames, with 320 px 5 / 15 ms and
/// it kept up (`scripts/bench --only viewer`).
pub const OVERSCAN_PX: f64 = 320.0;

/// Where a selected frame that the filters hide would be.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HiddenFrame {
    /// Its seq.
    pub seq: i64,
    /// The position of the first shown frame after it (the list's length when none follows).
    pub before_idx: usize,
}

/// Two frames whose time apart is being measured (shift+click).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Measure {
    /// The earlier frame's seq and time.
    pub from: (i64, i64),
    /// The later frame's seq and time.
    pub to: (i64, i64),
}

/// The reactive state of one trace view, shared by its components through context.
#[derive(Clone, Copy)]
pub struct TraceState {
    /// The trace's id.
    pub id: i64,
    /// The URL: filters, axis, tab, selection.
    pub url: ViewUrl,
    /// Filters, axis, tab and selection from the URL.
    pub query: Memo<ViewQuery>,
    /// The trace, as last heard from the server.
    pub trace: RwSignal<TraceSummary>,
    /// Its timing (`None` while loading).
    pub stats: RwSignal<Option<Result<TraceStats, ApiFailure>>>,
    /// The selected frame's detail, with the seq it is for.
    pub detail: RwSignal<Option<(i64, Result<FrameDetail, ApiFailure>)>>,
    /// The fetched frames of the current filters.
    pub window: RwSignal<FrameWindow>,
    /// The last failure fetching frames.
    pub window_error: RwSignal<Option<ApiFailure>>,
    /// Set while the server cannot be reached during a live trace: since when, as text.
    pub connection_lost: RwSignal<Option<String>>,
    /// Row positions.
    pub layout: Memo<Layout>,
    /// The diagram's scroll position.
    pub scroll_top: RwSignal<f64>,
    /// Visible height of the diagram's rows (0 while its tab is hidden).
    pub view_h: RwSignal<f64>,
    /// Visible width of the diagram.
    pub view_w: RwSignal<f64>,
    /// Rows drawn: those in view plus overscan.
    pub rows_in_view: Memo<Range<usize>>,
    /// Keep the newest frames in view while live.
    pub follow: RwSignal<bool>,
    /// A row the diagram should scroll into view; the diagram clears it once it has a height.
    pub reveal: RwSignal<Option<usize>>,
    /// A frame to find and show; the loader clears it.
    pub jump: RwSignal<Option<i64>>,
    /// The selected frame, when the filters hide it.
    pub hidden: RwSignal<Option<HiddenFrame>>,
    /// The time between the selected frame and another one, when measured.
    pub measure: RwSignal<Option<Measure>>,
    /// What the Session tab shows.
    pub sessions: SessionData,
    /// Find: the words marked, the last step's answer, the rows drawn that match.
    pub find: find::FindData,
    /// What the protocol checks found: the Findings tab and the diagram's markers.
    pub findings: findings::FindingsData,
    /// The MCP children drawn as lanes, and the picked MCP frame's detail.
    pub family: family::FamilyData,
    /// When `trace` was last heard from the server, on the browser's clock (ms).
    pub trace_at_ms: StoredValue<f64>,
    /// The present on the trace's clock (a `t_ns`): for a live trace the server's `now_t_ns` plus the time
    /// the browser has counted since (counting on once a second: the view's one timer, gone when the trace
    /// ends or the view closes); for an ended one its last frame. Counted from the server's present, not
    /// from `started_at` and the browser's clock, which may be off by any amount on another machine.
    pub clock: Memo<i64>,
    /// What the Requests tab shows.
    pub requests: requests::RequestsData,
    /// The requests in flight over the first row drawn, as last heard.
    pub in_flight: RwSignal<Option<InFlight>>,
    /// What the overview strip draws.
    pub overview: overview::OverviewData,
    /// The range tools' selection, its summary, and a frame kept in place while zooming.
    pub range: range::RangeData,
    /// A replay: its cursor and playing.
    pub replay: replay::ReplayData,
}

impl TraceState {
    /// Fresh state for a trace that exists; nothing more is fetched until [`loader::start`].
    pub fn new(trace: TraceSummary, url: ViewUrl) -> TraceState {
        let query = url.query;
        let window = RwSignal::new(FrameWindow::default());
        let axis = Memo::new(move |_| query.with(|q| (q.axis, q.scale, q.collapse)));
        let layout = Memo::new(move |_| {
            let (axis, scale, collapse) = axis.get();
            window.with(|w| Layout::build(w, axis, scale, collapse))
        });
        let scroll_top = RwSignal::new(0.0);
        let view_h = RwSignal::new(0.0);
        let rows_in_view = Memo::new(move |_| {
            let (st, vh) = (scroll_top.get(), view_h.get());
            layout.with(|l| {
                let top = Scroller::new(l.height(), vh).layout_top(st);
                l.rows_between(top - OVERSCAN_PX, top + vh + OVERSCAN_PX)
            })
        });
        let (trace_at_ms, id) = (StoredValue::new(js_sys::Date::now()), trace.meta.id);
        let trace = RwSignal::new(trace);
        TraceState {
            id,
            url,
            query,
            trace,
            stats: RwSignal::new(None),
            detail: RwSignal::new(None),
            window,
            window_error: RwSignal::new(None),
            connection_lost: RwSignal::new(None),
            layout,
            scroll_top,
            view_h,
            view_w: RwSignal::new(0.0),
            rows_in_view,
            // A shared link to a frame shows that frame, not the newest ones.
            follow: RwSignal::new(query.with_untracked(|q| q.frame.is_none())),
            reveal: RwSignal::new(None),
            jump: RwSignal::new(None),
            hidden: RwSignal::new(None),
            measure: RwSignal::new(None),
            sessions: SessionData::new(query),
            find: find::FindData::new(query),
            findings: findings::FindingsData::new(),
            family: family::FamilyData::new(),
            trace_at_ms,
            clock: clock(trace, trace_at_ms),
            requests: requests::RequestsData::new(query),
            in_flight: RwSignal::new(None),
            overview: overview::OverviewData::new(),
            range: range::RangeData::new(),
            replay: replay::ReplayData::new(),
        }
    }

    /// Sets the trace as just heard from the server.
    pub fn heard_trace(&self, t: TraceSummary) {
        self.trace_at_ms.set_value(js_sys::Date::now());
        self.trace.set(t);
    }

    /// A replay's cursor: no frame past it is shown (not tracked).
    pub fn replay_cursor(&self) -> Option<i64> {
        self.replay.cursor.get_untracked()
    }

    /// The API query for one window of this view's frames (not tracked): its filters, and no frame past a
    /// replay's cursor. Every page of the diagram is asked for through this.
    pub fn frame_query(&self, offset: usize, limit: usize) -> FrameQuery {
        let mut q = self.query.with_untracked(|q| q.filters.frame_query(offset, limit));
        q.to = last_seq_shown(q.to, self.replay_cursor());
        q
    }

    /// True while the trace is being recorded (tracked).
    pub fn is_live(&self) -> bool {
        self.trace.with(|t| t.live)
    }

    /// The scroll mapping for the current layout, not tracked (for event handlers).
    pub fn scroller_untracked(&self) -> Scroller {
        Scroller::new(self.layout.with_untracked(|l| l.height()), self.view_h.get_untracked())
    }

    /// The scroll mapping for the current layout (tracked).
    pub fn scroller(&self) -> Scroller {
        Scroller::new(self.layout.with(|l| l.height()), self.view_h.get())
    }

    /// Measures the time from the selected frame to another one (`seq` at `t_ns`); false when nothing is
    /// selected or the selected frame's time is not known yet.
    pub fn measure_to(&self, seq: i64, t_ns: i64) -> bool {
        let Some(selected) = self.query.with_untracked(|q| q.frame) else { return false };
        let known =
            self.window.with_untracked(|w| w.place_of_seq(selected).ok().and_then(|i| w.get(i)).map(|f| f.t_ns));
        let detail = self.detail.with_untracked(|d| match d {
            Some((s, Ok(d))) if *s == selected => Some(d.frame.t_ns),
            _ => None,
        });
        let Some(t_sel) = known.or(detail) else { return false };
        let (a, b) = if selected <= seq { ((selected, t_sel), (seq, t_ns)) } else { ((seq, t_ns), (selected, t_sel)) };
        self.measure.set(Some(Measure { from: a, to: b }));
        true
    }

    /// Selects a frame the user picked: a history entry, and following a live trace stops so the frame
    /// stays where it is.
    pub fn select(&self, seq: i64) {
        self.measure.set(None);
        self.follow.set(false);
        self.url.update(true, |q| {
            q.accept("frame");
            q.frame = Some(seq);
        });
    }

    /// Selects a frame and brings it into view, fetching what is needed to find it; `push` adds a history
    /// entry (a click), else the entry is replaced (stepping with the keyboard).
    pub fn jump_to(&self, seq: i64, push: bool) {
        self.follow.set(false);
        self.url.update(push, |q| {
            q.accept("frame");
            q.frame = Some(seq);
        });
        self.jump.set(Some(seq));
    }

    /// Opens the Diagram tab with frame `seq` selected and in view (from another tab: a history entry).
    pub fn show_in_diagram(&self, seq: i64) {
        self.url.update(true, |q| q.tab = crate::view_query::Tab::Diagram);
        self.jump_to(seq, false);
    }

    /// Clears the selection, or the picked frame of an MCP lane (in place).
    pub fn unselect(&self) {
        self.hidden.set(None);
        self.url.update(false, |q| q.pick_mcp(None));
    }

    /// Picks a frame of an MCP lane (child trace `trace`, frame `seq`): the detail panel shows it; no frame
    /// of this trace stays selected. A history entry, as selecting a frame is.
    pub fn pick_mcp(&self, trace: i64, seq: i64) {
        self.measure.set(None);
        self.follow.set(false);
        self.hidden.set(None);
        self.url.update(true, |q| q.pick_mcp(Some((trace, seq))));
    }
}

/// The present on the trace's clock (see [`TraceState::clock`]).
fn clock(trace: RwSignal<TraceSummary>, at: StoredValue<f64>) -> Memo<i64> {
    let live = Memo::new(move |_| trace.with(|t| t.live));
    let tick = RwSignal::new(js_sys::Date::now());
    Effect::new(move |_| {
        if live.get() {
            tick.set(js_sys::Date::now());
            let ticking =
                set_interval_with_handle(move || tick.set(js_sys::Date::now()), std::time::Duration::from_secs(1));
            if let Ok(handle) = ticking {
                on_cleanup(move || handle.clear());
            }
        }
    });
    Memo::new(move |_| {
        let (now, last) = trace.with(|t| (t.now_t_ns.filter(|_| t.live), t.last_t_ns));
        match now {
            Some(base) => base + ((tick.get() - at.get_value()).max(0.0) * 1e6) as i64,
            None => last,
        }
    })
}
