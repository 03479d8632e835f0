//! The sequence diagram: lanes Client | acp-tee | Agent | stderr, one row per frame (or real time with
//! idle gaps folded), the callees' busy spans, windowed so only the rows in view exist in the DOM.
//!
//! # Layout
//! - [`geometry`]: lane positions and colours.
//! - [`row`]: a frame's row, a loading row, a busy bar.

pub mod geometry;
pub mod row;

use crate::components::trace_state;
use crate::state::busy::busy_spans;
use crate::state::layout::ROW_H;
use crate::state::TraceState;
use acp_tee_shared::api::FrameSummary;
use geometry::*;
use leptos::html;
use leptos::prelude::*;
use row::{px, BusyBar, FrameRow, LoadingRow};

/// One drawn row of the window.
#[derive(Clone, Debug, PartialEq)]
enum Item {
    Frame { y: f64, fold: Option<i64>, frame: Box<FrameSummary> },
    Loading { idx: usize, y: f64 },
}

impl Item {
    fn key(&self) -> (i64, u64, bool) {
        match self {
            Item::Frame { y, frame, fold } => (frame.seq, y.to_bits(), fold.is_some()),
            Item::Loading { idx, y } => (-(*idx as i64) - 1, y.to_bits(), false),
        }
    }
}

/// The rows in view, with their positions.
fn items_in_view(st: TraceState) -> Vec<Item> {
    let rows = st.rows_in_view.get();
    st.window.with(|w| {
        st.layout.with(|l| {
            rows.map(|idx| match w.get(idx) {
                Some(f) => Item::Frame { y: l.y_of(idx), fold: l.fold_before(idx), frame: Box::new(f.clone()) },
                None => Item::Loading { idx, y: l.y_of(idx) },
            })
            .collect()
        })
    })
}

/// The diagram with its lane headings and its scroll area (`#diagram-scroll`).
#[component]
pub fn Diagram() -> impl IntoView {
    let st = trace_state();
    let scroll_ref = NodeRef::<html::Div>::new();
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
    let spans = Memo::new(move |_| {
        let (rows, live) = (st.rows_in_view.get(), st.is_live());
        st.window.with(|w| st.layout.with(|l| busy_spans(w, l, rows, live)))
    });
    track_viewport(st, scroll_ref);
    keep_following(st, scroll_ref);
    reveal_rows(st, scroll_ref);
    keyboard_steps(st);
    let on_scroll = move |_| on_scroll(st, scroll_ref);
    view! {
        <div class="diagram">
            <LaneHeads />
            <div id="diagram-scroll" node_ref=scroll_ref on:scroll=on_scroll>
                <div class="spacer" style:height=move || px(st.scroller().scroll_h) style:width=px(DIAGRAM_W)>
                    <div class="lane-line" style:left=px(CLIENT_X)></div>
                    <div class="lane-line tee" style:left=px(TEE_X)></div>
                    <div class="lane-line" style:left=px(AGENT_X)></div>
                    <div class="stderr-band" style:left=px(STDERR_X) style:width=px(DIAGRAM_W - STDERR_X)></div>
                    <div class="layer" style:top=move || px(layer_top.get())>
                        <For each=move || spans.get() key=|s| (s.req_seq, s.y0.to_bits(), s.y1.to_bits(), s.column, s.label.clone()) let:span>
                            <BusyBar span=span base=base />
                        </For>
                        <For each=move || items.get() key=Item::key let:item>
                            {match item {
                                Item::Frame { y, fold, frame } => view! { <FrameRow frame=*frame y=y fold=fold base=base /> }.into_any(),
                                Item::Loading { y, .. } => view! { <LoadingRow y=y base=base /> }.into_any(),
                            }}
                        </For>
                    </div>
                </div>
                <Notice />
            </div>
        </div>
    }
}

/// The lane headings, aligned with the lanes below.
#[component]
fn LaneHeads() -> impl IntoView {
    view! {
        <div class="lane-heads" style:width=px(DIAGRAM_W)>
            <div class="lane-head time-head" style:left="8px">"time"</div>
            <div class="lane-head" data-lane="client" style:left=px(CLIENT_X)>"Client"</div>
            <div class="lane-head tee" data-lane="tee" style:left=px(TEE_X)>"acp-tee"</div>
            <div class="lane-head" data-lane="agent" style:left=px(AGENT_X)>"Agent"</div>
            <div class="lane-head stderr" data-lane="stderr" style:left=px(STDERR_X + 8.0)>"stderr"</div>
        </div>
    }
}

/// Loading, empty and error messages over the diagram.
#[component]
fn Notice() -> impl IntoView {
    let st = trace_state();
    move || {
        if let Some(e) = st.window_error.get() {
            return view! { <div class="notice error">{e.0}</div> }.into_any();
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
                <button class="link" on:click=move |_| st.nav.update_query(true, |q| q.filters = Default::default())>
                    "Clear filters"
                </button>
            }
        });
        view! { <div class="notice">{text} " " {clear}</div> }.into_any()
    }
}

/// Keeps the visible height in state, on mount and on window resize.
fn track_viewport(st: TraceState, scroll_ref: NodeRef<html::Div>) {
    Effect::new(move |_| {
        if let Some(el) = scroll_ref.get() {
            st.view_h.set(el.client_height() as f64);
        }
    });
    let handle = window_event_listener(leptos::ev::resize, move |_| {
        if let Some(el) = scroll_ref.get_untracked() {
            st.view_h.set(el.client_height() as f64);
        }
    });
    on_cleanup(move || handle.remove());
}

/// Scrolling up (away from the bottom) stops following; reaching the bottom of a live trace resumes it.
fn on_scroll(st: TraceState, scroll_ref: NodeRef<html::Div>) {
    let Some(el) = scroll_ref.get_untracked() else { return };
    let top = el.scroll_top() as f64;
    let at_bottom = el.scroll_height() - el.client_height() - el.scroll_top() <= 4;
    let live = st.trace.with_untracked(|t| matches!(t, Some(Ok(t)) if t.live));
    let following = st.follow.get_untracked();
    if following && !at_bottom && top < st.scroll_top.get_untracked() - 1.0 {
        st.follow.set(false);
    } else if !following && at_bottom && live && top > 0.0 {
        st.follow.set(true);
    }
    st.scroll_top.set(top);
}

/// While following a live trace, every growth of the content scrolls to the bottom.
fn keep_following(st: TraceState, scroll_ref: NodeRef<html::Div>) {
    Effect::new(move |_| {
        st.layout.with(|l| l.height());
        if st.follow.get() && st.is_live() {
            request_animation_frame(move || {
                if let Some(el) = scroll_ref.get_untracked() {
                    el.set_scroll_top(el.scroll_height());
                }
            });
        }
    });
}

/// Scrolls a requested row into view (a third from the top) unless it is already visible.
fn reveal_rows(st: TraceState, scroll_ref: NodeRef<html::Div>) {
    Effect::new(move |_| {
        let Some(idx) = st.reveal.get() else { return };
        st.reveal.set(None);
        request_animation_frame(move || {
            let Some(el) = scroll_ref.get_untracked() else { return };
            let y = st.layout.with_untracked(|l| l.y_of(idx));
            let vh = el.client_height() as f64;
            let scroller = crate::state::layout::Scroller::new(st.layout.with_untracked(|l| l.height()), vh);
            let top = scroller.layout_top(el.scroll_top() as f64);
            if idx != 0 && y >= top && y + ROW_H <= top + vh {
                return;
            }
            el.set_scroll_top(scroller.scroll_for((y - vh / 3.0).max(0.0)) as i32);
        });
    });
}

/// Up/down arrows (or k/j) select the previous/next frame of the view, outside text fields and while the
/// diagram tab is open.
fn keyboard_steps(st: TraceState) {
    let handle = window_event_listener(leptos::ev::keydown, move |ev| {
        let step: i64 = match ev.key().as_str() {
            "ArrowDown" | "j" => 1,
            "ArrowUp" | "k" => -1,
            _ => return,
        };
        let typing = ev
            .target()
            .and_then(|t| wasm_bindgen::JsCast::dyn_into::<web_sys::Element>(t).ok())
            .is_some_and(|el| matches!(el.tag_name().as_str(), "INPUT" | "SELECT" | "TEXTAREA"));
        let (tab, selected) = st.query.with_untracked(|q| (q.tab, q.frame));
        if typing || ev.ctrl_key() || ev.meta_key() || ev.alt_key() || tab != crate::route::Tab::Diagram {
            return;
        }
        let next = st.window.with_untracked(|w| {
            let idx = match selected.and_then(|seq| w.index_of_seq(seq)) {
                Some(i) => i as i64 + step,
                None => st.rows_in_view.with_untracked(|r| r.start as i64),
            };
            usize::try_from(idx).ok().and_then(|i| w.get(i)).map(|f| f.seq)
        });
        if let Some(seq) = next {
            ev.prevent_default();
            st.jump_to(seq);
        }
    });
    on_cleanup(move || handle.remove());
}
