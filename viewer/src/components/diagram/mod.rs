//! The sequence diagram: lanes Client | acp-tee | Agent | MCP servers | stderr, one row per frame (or real
//! time with idle gaps folded), the callees' busy spans, windowed so only the rows in view exist in the
//! DOM; the MCP servers' frames are drawn between the rows their times fall between.
//!
//! # Layout
//! - [`geometry`]: lane positions and colours.
//! - [`row`]: a frame's row, a loading row, a busy bar.
//! - [`mcp`]: the MCP lanes: headings, arrows, busy bars, what they leave out.
//! - [`idle`]: the note shown inside an idle gap taller than the view.

pub mod geometry;
pub mod idle;
pub mod mcp;
pub mod row;

use crate::components::trace_state;
use crate::state::busy::{busy_spans, BusySpan};
use crate::state::layout::{joined_preview, Layout, Scroller, DEFAULT_SCALE_MS, ROW_H};
use crate::state::mcp::{place, spans as mcp_spans, tail_room, Anchor, McpSpan, Placement};
use crate::state::range::{layout_y, spot, wheel_scale, y_of_spot, Pin};
use crate::state::TraceState;
use crate::view_query::Axis;
use acp_tee_shared::api::FrameSummary;
use geometry::*;
use leptos::html;
use leptos::prelude::*;
use mcp::{head_views, lane_heads, lane_lines, LaneHead, McpArrow, McpBusyBar, McpItem, McpNotes};
use row::{px, BusyBar, FrameRow, HiddenMark, LoadingRow, MeasureBand, RangeBand};
use wasm_bindgen::closure::Closure;
use wasm_bindgen::JsCast;

/// One drawn row of the window.
#[derive(Clone, Debug, PartialEq)]
enum Item {
    /// A frame's row; `run` is how many rows of streamed chunks it stands for (1: itself alone).
    Frame {
        y: f64,
        gap: Option<i64>,
        run: u32,
        frame: Box<FrameSummary>,
    },
    Loading {
        idx: usize,
        y: f64,
    },
}

impl Item {
    fn key(&self) -> (i64, u64, Option<i64>, u32) {
        match self {
            Item::Frame { y, frame, gap, run } => (frame.seq, y.to_bits(), *gap, *run),
            Item::Loading { idx, y } => (-(*idx as i64) - 1, y.to_bits(), None, 0),
        }
    }
}

/// The rows in view, with their positions; rows under a collapsed run are not drawn.
fn items_in_view(st: TraceState) -> Vec<Item> {
    let rows = st.rows_in_view.get();
    st.window.with(|w| {
        st.layout.with(|l| {
            rows.filter(|&idx| l.is_shown(idx))
                .map(|idx| match w.get(idx) {
                    Some(f) => {
                        let run = l.run_of(idx);
                        let mut frame = Box::new(f.clone());
                        // A collapsed run reads as its chunks' text joined, not its first chunk's alone.
                        if run > 1 {
                            let frames = (idx..idx + run as usize).filter_map(|i| w.get(i));
                            frame.preview = joined_preview(frames);
                        }
                        Item::Frame { y: l.y_of(idx), gap: l.gap_before(idx), run, frame }
                    }
                    None => Item::Loading { idx, y: l.y_of(idx) },
                })
                .collect()
        })
    })
}

/// The rows the MCP frames are placed against: those drawn, and one more on each side, so that frames
/// inside a gap taller than the view (the linear axis) have rows to be placed between.
fn anchors(st: TraceState) -> Vec<Anchor> {
    let rows = st.rows_in_view.get();
    st.window.with(|w| {
        st.layout.with(|l| {
            let folds = l.axis() == Axis::Time;
            (rows.start.saturating_sub(1)..(rows.end + 1).min(w.total()))
                .filter(|&idx| l.is_shown(idx))
                .filter_map(|idx| {
                    let f = w.get(idx)?;
                    Some(Anchor { t_ns: f.t_ns, y: l.y_of(idx), folded: folds && l.gap_before(idx).is_some() })
                })
                .collect()
        })
    })
}

/// Where the MCP lanes' frames go among the rows in view, and their busy spans.
fn mcp_placement(st: TraceState) -> (Memo<Placement>, Memo<Vec<McpSpan>>) {
    let anchors = Memo::new(move |_| if st.family.lanes.with(Vec::is_empty) { Vec::new() } else { anchors(st) });
    let placement = Memo::new(move |_| {
        let rows = st.rows_in_view.get();
        let total = st.window.with(|w| w.total());
        let at_end = rows.end == total && total > 0 && st.window.with(|w| w.get(total - 1).is_some());
        anchors.with(|a| st.family.events.with(|e| place(a, at_end, e)))
    });
    let spans = Memo::new(move |_| {
        let live = st.is_live();
        st.family.lanes.with(|l| anchors.with(|a| placement.with(|p| mcp_spans(l, a, p, live))))
    });
    (placement, spans)
}

/// The diagram: its scroll area (`#diagram-scroll`) holds the lane headings, which stay at the top and
/// move sideways with the lanes, and the rows.
#[component]
pub fn Diagram() -> impl IntoView {
    let st = trace_state();
    let scroll_ref = NodeRef::<html::Div>::new();
    let heads = Memo::new(move |_| st.family.lanes.with(|l| lane_heads(l)));
    let geo = Memo::new(move |_| Geometry::for_width(st.view_w.get(), heads.with(Vec::len)));
    // Rows are placed relative to the first drawn row, so that positions stay small on huge traces.
    let base = Memo::new(move |_| {
        let rows = st.rows_in_view.get();
        st.layout.with(|l| if rows.is_empty() { 0.0 } else { l.y_of(rows.start) })
    });
    let layer_top = Memo::new(move |_| {
        let top = st.scroll_top.get();
        top - st.scroller().layout_top(top) + base.get()
    });
    let items = Memo::new(move |_| items_in_view(st));
    let axis = Memo::new(move |_| st.layout.with(|l| l.axis()));
    let (placement, mcp_bars) = mcp_placement(st);
    // Frames of a server after the trace's last row are drawn below it: the rows get that much taller.
    let tail = Memo::new(move |_| placement.with(|p| tail_room(p, st.layout.with(|l| l.height()))));
    let mcp_items = move || {
        let g = geo.get();
        st.family.lanes.with(|lanes| {
            placement.with(|p| {
                p.placed
                    .iter()
                    .filter_map(|pl| {
                        let lane = lanes.get(pl.event.lane)?;
                        let frame = lane.frames.get(pl.event.idx)?.clone();
                        Some((McpItem { placed: *pl, trace_id: lane.trace_id, server: lane.name.clone(), frame }, g))
                    })
                    .collect::<Vec<_>>()
            })
        })
    };
    let mcp_bar_list = move || mcp_bars.get().into_iter().map(|s| (s, geo.get())).collect::<Vec<_>>();
    let spans = Memo::new(move |_| {
        let (rows, live) = (st.rows_in_view.get(), st.is_live());
        st.in_flight.with(|f| st.window.with(|w| st.layout.with(|l| busy_spans(w, l, rows, live, f.as_ref()))))
    });
    let hidden_mark = move || {
        let h = st.hidden.get()?;
        let rows = st.rows_in_view.get();
        let total = st.window.with(|w| w.total());
        let in_view = rows.contains(&h.before_idx) || (h.before_idx == total && rows.end == total);
        in_view.then(|| {
            let y = st.layout.with(|l| if h.before_idx >= total { l.height() } else { l.y_of(h.before_idx) });
            view! { <HiddenMark seq=h.seq y=y base=base geo=geo.get() /> }
        })
    };
    let bars = move || spans.get().into_iter().map(|s| (s, geo.get())).collect::<Vec<_>>();
    let sessions = Memo::new(move |_| st.window.with(session_count));
    let rows = move || {
        let (g, a, n) = (geo.get(), axis.get(), sessions.get());
        items.get().into_iter().map(|i| (i, g, a, n)).collect::<Vec<_>>()
    };
    let measure_band = move || {
        let m = st.measure.get()?;
        let (y0, y1) = st.window.with(|w| {
            let a = w.place_of_seq(m.from.0).ok()?;
            let b = w.place_of_seq(m.to.0).ok()?;
            st.layout.with(|l| Some((l.y_of(a), l.y_of(b))))
        })?;
        let text = measure_text(m);
        Some(view! { <MeasureBand y0=y0 y1=y1 text=text base=base geo=geo.get() /> })
    };
    let range_band = move || {
        let (y0, y1, text) = range_band(st)?;
        Some(view! { <RangeBand y0=y0 y1=y1 text=text base=base geo=geo.get() /> })
    };
    let drag = range_drag(st, scroll_ref, geo);
    track_size(st, scroll_ref);
    keep_pinned(st, scroll_ref);
    focus_follows_selection(st, items);
    keep_following(st, scroll_ref, tail);
    reveal_rows(st, scroll_ref);
    wheel_by_rows(st, scroll_ref);
    let anchor = keep_anchored(st, scroll_ref);
    let on_scroll = move |_| {
        on_scroll(st, scroll_ref);
        anchor.set_value(view_anchor(st));
    };
    view! {
        <div class="diagram">
            <McpNotes />
            <crate::components::overview::OverviewStrip />
            <div id="diagram-scroll" node_ref=scroll_ref on:scroll=on_scroll
                on:pointerdown=move |ev| drag.down(&ev) on:pointermove=move |ev| drag.moved(&ev)
                on:pointerup=move |_| drag.up() on:pointercancel=move |_| drag.cancel()>
                <LaneHeads geo=geo mcp=heads />
                <div class="spacer" style:height=move || px(st.scroller().scroll_h + tail.get()) style:width=move || px(geo.get().width)
                    data-layout-h=move || st.layout.with(|l| l.height().round())>
                    {move || {
                        let g = geo.get();
                        view! {
                            <div class="lane-line" style:left=px(g.client_x)></div>
                            <div class="lane-line tee" style:left=px(g.tee_x)></div>
                            <div class="lane-line" style:left=px(g.agent_x)></div>
                            {lane_lines(g)}
                            <div class="stderr-band" style:left=px(g.stderr_x) style:width=px(g.width - g.stderr_x)></div>
                        }
                    }}
                    <div class="layer" role="listbox" aria-label="frames" style:top=move || px(layer_top.get())>
                        <For each=bars key=bar_key let:pair>
                            <BusyBar span=pair.0 base=base geo=pair.1 />
                        </For>
                        <For each=mcp_bar_list key=mcp_bar_key let:pair>
                            <McpBusyBar span=pair.0 base=base geo=pair.1 />
                        </For>
                        <For each=rows key=row_key let:entry>
                            {match entry {
                                (Item::Frame { y, gap, run, frame }, g, a, n) => view! { <FrameRow frame=*frame y=y gap=gap run=run axis=a base=base geo=g sessions=n /> }.into_any(),
                                (Item::Loading { y, .. }, g, _, _) => view! { <LoadingRow y=y base=base geo=g /> }.into_any(),
                            }}
                        </For>
                        <For each=mcp_items key=mcp_key let:pair>
                            <McpArrow item=pair.0 base=base geo=pair.1 />
                        </For>
                        {hidden_mark}
                        <idle::IdleNote base=base width=Signal::derive(move || geo.get().width) />
                        {measure_band}
                        {range_band}
                    </div>
                </div>
                <Notice />
            </div>
        </div>
    }
}

type BarKey = (i64, u64, u64, usize, String, (bool, bool), u64);

fn bar_key((s, g): &(BusySpan, Geometry)) -> BarKey {
    let flags = (s.hidden_start, s.open_start);
    (s.req_seq, s.y0.to_bits(), s.y1.to_bits(), s.column, s.label.clone(), flags, g.width.to_bits())
}

type McpKey = (i64, i64, u64, bool, u64);

fn mcp_key((i, g): &(McpItem, Geometry)) -> McpKey {
    (i.trace_id, i.frame.seq, i.placed.y.to_bits(), i.placed.labelled, g.width.to_bits())
}

fn mcp_bar_key((s, g): &(McpSpan, Geometry)) -> (usize, i64, u64, u64, usize, String, u64) {
    (s.lane, s.req_seq, s.y0.to_bits(), s.y1.to_bits(), s.column, s.label.clone(), g.width.to_bits())
}

fn row_key((i, g, a, n): &(Item, Geometry, Axis, usize)) -> ((i64, u64, Option<i64>, u32), u64, Axis, bool) {
    (i.key(), g.width.to_bits(), *a, *n > 1)
}

/// Most fetched frames looked at to count sessions.
const SESSION_SCAN: usize = 5_000;

/// How many ACP sessions the fetched frames belong to (2 means "more than one").
fn session_count(w: &crate::state::window::FrameWindow) -> usize {
    let mut first: Option<&str> = None;
    for f in w.fetched().take(SESSION_SCAN) {
        match (first, f.session_id.as_deref()) {
            (None, Some(s)) => first = Some(s),
            (Some(a), Some(b)) if a != b => return 2,
            _ => {}
        }
    }
    usize::from(first.is_some())
}

/// The lane headings, aligned with the lanes below.
#[component]
fn LaneHeads(geo: Memo<Geometry>, mcp: Memo<Vec<LaneHead>>) -> impl IntoView {
    move || {
        let g = geo.get();
        view! {
            <div class="lane-heads" style:width=px(g.width)>
                <div class="lane-head time-head" style:left="8px"
                    title="drag down the time column to select a range; ctrl+wheel (or pinch) to zoom the time">"time"</div>
                <div class="lane-head" data-lane="client" style:left=px(g.client_x)>"Client"</div>
                <div class="lane-head tee" data-lane="tee" style:left=px(g.tee_x)>"acp-tee"</div>
                <div class="lane-head" data-lane="agent" style:left=px(g.agent_x)>"Agent"</div>
                {mcp.with(|h| head_views(h, g))}
                <div class="lane-head stderr" data-lane="stderr" style:left=px(g.stderr_x + 8.0)>"stderr"</div>
            </div>
        }
    }
}

/// The selected range, or the one being dragged, over the rows in view: the top of its first row there, the
/// bottom of its last, and what it says (its ends, and its duration when both ends are fetched).
fn range_band(st: TraceState) -> Option<(f64, f64, String)> {
    let (a, b) = st.range.drag.get().or_else(|| st.query.with(|q| q.sel))?;
    let (a, b) = (a.min(b), a.max(b));
    let rows = st.rows_in_view.get();
    st.window.with(|w| {
        let inside = |i: &usize| w.get(*i).is_some_and(|f| (a..=b).contains(&f.seq));
        let first = rows.clone().find(inside)?;
        let last = rows.rev().find(inside)?;
        let t = |seq| w.index_of_seq(seq).and_then(|i| w.get(i)).map(|f| f.t_ns);
        let text = match (t(a), t(b)) {
            (Some(ta), Some(tb)) => format!("#{a} – #{b}: {}", crate::format::duration_ns(tb - ta)),
            _ => format!("#{a} – #{b}"),
        };
        st.layout.with(|l| Some((l.y_of(first), l.y_of(last) + ROW_H, text)))
    })
}

/// A drag down the time column (left of the Client lane) selects the frames from the row it starts on to
/// the row it ends on as a range (`sel`); a click there stays a click on the row. Any press in the diagram
/// lets go of a frame kept in place after a zoom.
#[derive(Clone, Copy)]
struct RangeDrag {
    st: TraceState,
    scroll_ref: NodeRef<html::Div>,
    geo: Memo<Geometry>,
    /// The seq of the row the press began on, while it lasts.
    anchor: StoredValue<Option<i64>>,
}

fn range_drag(st: TraceState, scroll_ref: NodeRef<html::Div>, geo: Memo<Geometry>) -> RangeDrag {
    RangeDrag { st, scroll_ref, geo, anchor: StoredValue::new(None) }
}

impl RangeDrag {
    /// The seq of the row under the pointer (above or below the rows in view: the first or last there), and
    /// whether the pointer is over the time column.
    fn seq_at(&self, ev: &web_sys::PointerEvent) -> Option<(i64, bool)> {
        let el = self.scroll_ref.get_untracked()?;
        let r = el.get_bounding_client_rect();
        let x = ev.client_x() as f64 - r.left() + el.scroll_left() as f64;
        let dy = (ev.client_y() as f64 - r.top() - LANE_HEAD_H).clamp(0.0, self.st.view_h.get_untracked());
        let y = layout_y(self.st.scroller_untracked(), el.scroll_top() as f64, dy);
        let idx = self.st.layout.with_untracked(|l| l.index_at(y));
        let seq = self.st.window.with_untracked(|w| w.get(idx).map(|f| f.seq))?;
        Some((seq, x < TIME_COL_W.min(self.geo.get_untracked().client_x)))
    }

    fn down(&self, ev: &web_sys::PointerEvent) {
        if self.st.range.pin.with_untracked(Option::is_some) {
            self.st.range.pin.set(None);
        }
        let on_column = ev.button() == 0 && ev.client_y() as f64 - self.top() >= LANE_HEAD_H;
        let start = self.seq_at(ev).filter(|(_, in_column)| on_column && *in_column);
        self.anchor.set_value(start.map(|(seq, _)| seq));
    }

    /// The top of the scroll area on the page.
    fn top(&self) -> f64 {
        self.scroll_ref.get_untracked().map_or(0.0, |el| el.get_bounding_client_rect().top())
    }

    fn moved(&self, ev: &web_sys::PointerEvent) {
        let Some(anchor) = self.anchor.get_value() else { return };
        let Some((seq, _)) = self.seq_at(ev) else { return };
        let dragging = self.st.range.drag.get_untracked();
        if dragging.is_none() && seq == anchor {
            return;
        }
        if dragging.is_none() {
            // From here the pointer belongs to the drag: releasing it over another row is no click on that row.
            if let Some(el) = self.scroll_ref.get_untracked() {
                let _ = el.set_pointer_capture(ev.pointer_id());
            }
        }
        if dragging != Some((anchor, seq)) {
            self.st.range.drag.set(Some((anchor, seq)));
        }
    }

    fn up(&self) {
        self.anchor.set_value(None);
        let Some((a, b)) = self.st.range.drag.get_untracked() else { return };
        self.st.range.drag.set(None);
        self.st.url.update(true, |q| {
            q.accept("sel");
            q.sel = Some((a.min(b), a.max(b)));
        });
    }

    fn cancel(&self) {
        self.anchor.set_value(None);
        self.st.range.drag.set(None);
    }
}

/// Keeps a pinned frame ([`Pin`]) where it was put in the view whenever the layout changes (the new scale
/// arriving from the URL, pages arriving around it), until something lets go of it.
fn keep_pinned(st: TraceState, scroll_ref: NodeRef<html::Div>) {
    Effect::new(move |_| {
        let Some(pin) = st.range.pin.get() else { return };
        st.layout.track();
        st.view_h.track();
        if !st.query.with_untracked(|q| q.axis == Axis::Linear && q.scale == Some(pin.scale)) {
            return;
        }
        request_animation_frame(move || {
            let Some(el) = scroll_ref.get_untracked() else { return };
            let Some((idx, total)) = st.window.with_untracked(|w| Some((w.index_of_seq(pin.seq)?, w.total()))) else {
                return;
            };
            let y = st.layout.with_untracked(|l| y_of_spot(l, total, idx, pin.at));
            let top = st.scroller_untracked().scroll_for((y - pin.view_dy).max(0.0)).round() as i32;
            if el.scroll_top() != top {
                el.set_scroll_top(top);
            }
        });
    });
}

/// Ctrl+wheel (a trackpad's pinch arrives as one) zooms the time: the linear axis's scale changes around
/// the pointer, the row (and the time between rows) under it staying under it. On the rows or time axis
/// it switches to the linear axis, at the scale zoomed from the current one.
fn wheel_zoom(st: TraceState, el: &web_sys::HtmlDivElement, ev: &web_sys::WheelEvent, delta_px: f64) {
    let dy = (ev.client_y() as f64 - el.get_bounding_client_rect().top() - LANE_HEAD_H)
        .clamp(0.0, st.view_h.get_untracked());
    let (axis, scale) = st.query.with_untracked(|q| (q.axis, q.scale.unwrap_or(DEFAULT_SCALE_MS)));
    let next = wheel_scale(scale, delta_px);
    if axis == Axis::Linear && next == scale {
        return;
    }
    let y = layout_y(st.scroller_untracked(), el.scroll_top() as f64, dy);
    let total = st.window.with_untracked(|w| w.total());
    let (idx, at) = st.layout.with_untracked(|l| spot(l, total, y));
    let seq = st.window.with_untracked(|w| w.get(idx).map(|f| f.seq));
    st.follow.set(false);
    st.range.pin.set(seq.map(|seq| Pin { seq, at, view_dy: dy, scale: next }));
    st.url.update(false, |q| {
        q.accept("axis");
        q.accept("scale");
        q.axis = Axis::Linear;
        q.scale = Some(next);
    });
}

/// `#3 → #9: 1.23 s`.
pub fn measure_text(m: crate::state::Measure) -> String {
    format!("#{} → #{}: {}", m.from.0, m.to.0, crate::format::duration_ns(m.to.1 - m.from.1))
}

/// Loading, empty and error messages over the diagram.
#[component]
fn Notice() -> impl IntoView {
    let st = trace_state();
    move || {
        if let Some(e) = st.window_error.get() {
            return view! { <div class="notice error">{e.message}</div> }.into_any();
        }
        let (loaded, total) = st.window.with(|w| (w.is_loaded(), w.total()));
        let filtered = st.query.with(|q| !q.filters.is_empty());
        let text = match (loaded, total, filtered) {
            (false, _, _) => "Loading frames…",
            (true, 0, true) => "No frame matches these filters.",
            (true, 0, false) if st.is_live() => "Recording: waiting for the first frame…",
            (true, 0, false) => "This trace has no frames.",
            _ => return ().into_any(),
        };
        let clear = filtered.then(|| {
            view! {
                <button class="link" on:click=move |_| st.url.update(true, |q| {
                    q.filters = Default::default();
                    q.rejected.retain(|r| !crate::components::filters::FILTER_KEYS.contains(&r.key));
                })>
                    "Clear filters"
                </button>
            }
        });
        view! { <div class="notice">{text} " " {clear}</div> }.into_any()
    }
}

/// A `ResizeObserver` and the callback it calls, kept alive together.
type Observer = (web_sys::ResizeObserver, Closure<dyn FnMut()>);

/// Keeps the visible size of the rows in state. A `ResizeObserver` sees every change, also the tab being
/// shown again after the Timing tab hid it (its size was 0 meanwhile) and the window being resized.
fn track_size(st: TraceState, scroll_ref: NodeRef<html::Div>) {
    let measure = move |el: &web_sys::Element| {
        let h = (el.client_height() as f64 - LANE_HEAD_H).max(0.0);
        let w = el.client_width() as f64;
        if st.view_h.get_untracked() != h {
            st.view_h.set(h);
        }
        if st.view_w.get_untracked() != w {
            st.view_w.set(w);
        }
    };
    let observer: StoredValue<Option<Observer>, LocalStorage> = StoredValue::new_local(None);
    Effect::new(move |_| {
        let Some(el) = scroll_ref.get() else { return };
        measure(&el);
        let target = el.clone();
        let callback = Closure::<dyn FnMut()>::new(move || measure(&target));
        match web_sys::ResizeObserver::new(callback.as_ref().unchecked_ref()) {
            Ok(ro) => {
                ro.observe(&el);
                observer.set_value(Some((ro, callback)));
            }
            Err(e) => leptos::logging::warn!("cannot watch the diagram's size: {e:?}"),
        }
    });
    on_cleanup(move || {
        if let Some(Some((ro, _))) = observer.try_update_value(Option::take) {
            ro.disconnect();
        }
    });
}

/// A wheel notch moves the rows as far as it would move a page of the same height: on a trace too tall for
/// the browser's scroll area (`MAX_SCROLL_H`), each scrolled pixel stands for several of the layout's, and a
/// notch would skip a dozen rows at a million frames. There the wheel scrolls by itself, the layout's
/// distance over the ratio (a listener that is not passive, so the browser's own step is stopped). The same
/// listener zooms on ctrl+wheel ([`wheel_zoom`]: the browser would zoom the page), and a plain wheel lets go
/// of a frame kept in place after a zoom.
fn wheel_by_rows(st: TraceState, scroll_ref: NodeRef<html::Div>) {
    type Listener = (web_sys::HtmlDivElement, Closure<dyn FnMut(web_sys::WheelEvent)>);
    let listener: StoredValue<Option<Listener>, LocalStorage> = StoredValue::new_local(None);
    Effect::new(move |_| {
        let Some(el) = scroll_ref.get() else { return };
        let target = el.clone();
        let callback = Closure::<dyn FnMut(web_sys::WheelEvent)>::new(move |ev: web_sys::WheelEvent| {
            let scroller = st.scroller_untracked();
            let unit = match ev.delta_mode() {
                web_sys::WheelEvent::DOM_DELTA_LINE => ROW_H,
                web_sys::WheelEvent::DOM_DELTA_PAGE => scroller.view_h,
                _ => 1.0,
            };
            if ev.delta_y() == 0.0 {
                return;
            }
            if ev.ctrl_key() {
                ev.prevent_default();
                wheel_zoom(st, &target, &ev, ev.delta_y() * unit);
                return;
            }
            if st.range.pin.with_untracked(Option::is_some) {
                st.range.pin.set(None);
            }
            let ratio = scroller.ratio();
            if ratio <= 1.0 {
                return;
            }
            let step = ev.delta_y() * unit / ratio;
            // At least a pixel, or a slow wheel would not move at all.
            let step = if step.abs() < 1.0 { step.signum() } else { step.round() };
            ev.prevent_default();
            target.set_scroll_top(target.scroll_top() + step as i32);
        });
        let options = web_sys::AddEventListenerOptions::new();
        options.set_passive(false);
        let added = el.add_event_listener_with_callback_and_add_event_listener_options(
            "wheel",
            callback.as_ref().unchecked_ref(),
            &options,
        );
        match added {
            Ok(()) => listener.set_value(Some((el, callback))),
            Err(e) => leptos::logging::warn!("cannot step the wheel by rows: {e:?}"),
        }
    });
    on_cleanup(move || {
        if let Some(Some((el, callback))) = listener.try_update_value(Option::take) {
            let _ = el.remove_event_listener_with_callback("wheel", callback.as_ref().unchecked_ref());
        }
    });
}

/// When the keyboard focus is on a frame row and the selection moves (keys, Back), the focus moves to the
/// selected row once it is drawn.
fn focus_follows_selection(st: TraceState, items: Memo<Vec<Item>>) {
    let selected = Memo::new(move |_| st.query.with(|q| q.frame));
    Effect::new(move |_| {
        let Some(seq) = selected.get() else { return };
        items.track();
        let on_a_frame = document().active_element().is_some_and(|el| el.class_list().contains("frame"));
        if !on_a_frame {
            return;
        }
        request_animation_frame(move || {
            let css = format!("#diagram-scroll .frame[data-seq=\"{seq}\"]");
            let row =
                document().query_selector(&css).ok().flatten().and_then(|e| e.dyn_into::<web_sys::HtmlElement>().ok());
            if let Some(el) = row {
                if document().active_element().as_ref() != Some(el.as_ref()) {
                    let _ = el.focus();
                }
            }
        });
    });
}

/// Scrolling up (away from the bottom) stops following; scrolling down to the bottom of a live trace (or
/// of a replay) resumes it, unless a frame is selected (the frame being read stays where it is).
fn on_scroll(st: TraceState, scroll_ref: NodeRef<html::Div>) {
    let Some(el) = scroll_ref.get_untracked() else { return };
    let top = el.scroll_top() as f64;
    let previous = st.scroll_top.get_untracked();
    let at_bottom = el.scroll_height() - el.client_height() - el.scroll_top() <= 4;
    let live = st.trace.with_untracked(|t| t.live) || st.replay.cursor.with_untracked(Option::is_some);
    let selected = st.query.with_untracked(|q| q.frame.is_some());
    let following = st.follow.get_untracked();
    if following && !at_bottom && top < previous - 1.0 {
        st.follow.set(false);
    } else if !following && at_bottom && live && !selected && top > previous {
        st.follow.set(true);
    }
    st.scroll_top.set(top);
}

/// The frame at the top of the view and how far below its row's top the view begins (layout heights).
#[derive(Clone, Copy, Debug)]
struct ViewAnchor {
    seq: i64,
    dy: f64,
}

/// Where the view is, as [`keep_anchored`] keeps it: not tracked.
fn view_anchor(st: TraceState) -> Option<ViewAnchor> {
    let top = st.scroller_untracked().layout_top(st.scroll_top.get_untracked());
    st.layout.with_untracked(|l| {
        let idx = l.index_at(top);
        let seq = st.window.with_untracked(|w| w.get(idx).map(|f| f.seq))?;
        Some(ViewAnchor { seq, dy: top - l.y_of(idx) })
    })
}

/// Keeps the view where it is while the layout changes under it (on the time and linear axes, or with runs
/// collapsed): pages fetched above or around it replace the rows' estimated heights with their real ones (on the linear axis a page holding a long idle gap adds
/// its length), and on a trace whose scroll area is capped the same scroll position then stands for another
/// height. The frame at the top of the view (as the last scroll left it) stays there, unless the view follows a
/// live trace or a zoom pins a frame of its own ([`keep_pinned`]). Returns the anchor the scroll handler
/// updates.
fn keep_anchored(st: TraceState, scroll_ref: NodeRef<html::Div>) -> StoredValue<Option<ViewAnchor>> {
    let anchor: StoredValue<Option<ViewAnchor>> = StoredValue::new(None);
    Effect::new(move |_| {
        // On the rows axis a row's place never changes as pages arrive: nothing to keep.
        if !st.layout.with(Layout::is_paged) {
            return;
        }
        st.view_h.track();
        // A frame being found or scrolled to moves the view: the next scroll sets the anchor again.
        if st.jump.with(Option::is_some) || st.reveal.with(Option::is_some) {
            anchor.set_value(None);
            return;
        }
        if st.follow.get_untracked() || st.range.pin.with_untracked(Option::is_some) {
            return;
        }
        let Some(a) = anchor.get_value() else { return };
        request_animation_frame(move || {
            let Some(el) = scroll_ref.get_untracked() else { return };
            // A scroll the handler has not seen yet (a reveal's, say) moves the anchor itself.
            if (el.scroll_top() as f64 - st.scroll_top.get_untracked()).abs() > 1.0 {
                return;
            }
            let Some(idx) = st.window.with_untracked(|w| w.index_of_seq(a.seq)) else { return };
            let y = st.layout.with_untracked(|l| l.y_of(idx)) + a.dy;
            let top = st.scroller_untracked().scroll_for(y.max(0.0)).round() as i32;
            if (el.scroll_top() - top).abs() > 1 {
                el.set_scroll_top(top);
            }
        });
    });
    anchor
}

/// While following a live trace or a replay, every growth of the content (rows, or MCP frames below the last row)
/// scrolls to the bottom.
fn keep_following(st: TraceState, scroll_ref: NodeRef<html::Div>, tail: Memo<f64>) {
    Effect::new(move |_| {
        st.layout.with(|l| l.height());
        tail.track();
        if st.follow.get() && (st.is_live() || st.replay.active()) {
            request_animation_frame(move || {
                if let Some(el) = scroll_ref.get_untracked() {
                    el.set_scroll_top(el.scroll_height());
                }
            });
        }
    });
}

/// Scrolls a requested row into view (a third from the top) unless it is already visible. A request
/// made while the diagram has no height (its tab is hidden) waits until it has one.
fn reveal_rows(st: TraceState, scroll_ref: NodeRef<html::Div>) {
    Effect::new(move |_| {
        let Some(idx) = st.reveal.get() else { return };
        if st.view_h.get() <= 0.0 {
            return;
        }
        st.reveal.set(None);
        request_animation_frame(move || {
            let Some(el) = scroll_ref.get_untracked() else { return };
            let (y, height) = st.layout.with_untracked(|l| (l.y_of(idx), l.height()));
            let vh = st.view_h.get_untracked();
            let scroller = Scroller::new(height, vh);
            let top = scroller.layout_top(el.scroll_top() as f64);
            if idx != 0 && y >= top && y + ROW_H <= top + vh {
                return;
            }
            el.set_scroll_top(scroller.scroll_for((y - vh / 3.0).max(0.0)) as i32);
        });
    });
}
