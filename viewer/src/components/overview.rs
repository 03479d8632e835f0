//! The overview strip above the diagram: the whole trace's time, left to right, in the server's buckets
//! ([`crate::state::overview`]). Frames are bars (log scale, any frame at least 1 px), error responses red
//! ticks on top, the protocol checks' findings orange ticks under them, open requests a blue line and active
//! sessions a green one; the rows in view are a translucent box. A click goes to the first frame of the
//! bucket clicked (of the next bucket holding frames when it is empty, as after an idle gap), a drag moves
//! the diagram along as the pointer goes; a shift+drag selects the frames of the buckets it covers as a range
//! (the range tools: `sel` in the URL, drawn as a band on the strip and on the rows); each bucket's tooltip
//! says its time and counts.

use crate::components::trace_state;
use crate::format::{count, duration_ns, offset_ns};
use crate::state::layout::Scroller;
use crate::state::overview::{bar_height, bucket_at, seqs_of_buckets, window_buckets};
use crate::state::TraceState;
use acp_tee_shared::api::{OverviewBucket, TraceOverview};
use leptos::prelude::*;
use wasm_bindgen::JsCast;

/// The strip's height in px.
const STRIP_H: f64 = 40.0;
/// Where the frame bars start from the top: above are the error and finding ticks.
const BARS_TOP: f64 = 9.0;
/// Height of an error or finding tick.
const TICK_H: f64 = 4.0;

/// The strip, once the overview is here; a note while it loads or when it cannot be had.
#[component]
pub fn OverviewStrip() -> impl IntoView {
    let st = trace_state();
    let od = st.overview.overview;
    move || match od.get() {
        None => view! { <div class="overview-strip pending" id="overview">"Overview: loading…"</div> }.into_any(),
        Some(Err(e)) => {
            view! { <div class="overview-strip pending err" id="overview">{format!("Overview: {e}")}</div> }.into_any()
        }
        Some(Ok(o)) if o.buckets.is_empty() => ().into_any(),
        Some(Ok(o)) => strip(st, o).into_any(),
    }
}

/// The seqs of the first and last rows wholly or partly in view (tracked), when their frames are fetched.
fn seqs_in_view(st: TraceState) -> Option<(i64, i64)> {
    let (top, vh) = (st.scroll_top.get(), st.view_h.get());
    let rows = st.layout.with(|l| {
        let top = Scroller::new(l.height(), vh).layout_top(top);
        l.rows_between(top, top + vh.max(1.0))
    });
    if rows.is_empty() {
        return None;
    }
    st.window.with(|w| {
        let first = rows.clone().find_map(|i| w.get(i).map(|f| f.seq))?;
        let last = rows.rev().find_map(|i| w.get(i).map(|f| f.seq))?;
        Some((first, last))
    })
}

/// What a bucket's tooltip says.
fn tooltip(o: &TraceOverview, i: usize, b: &OverviewBucket) -> String {
    let from = o.start_t_ns + i as i64 * o.bucket_ns;
    let mut text =
        format!("{} – {}: {} frames", offset_ns(from), offset_ns(from + o.bucket_ns), count(b.frames as i64));
    if let (Some(a), Some(z)) = (b.first_seq, b.last_seq) {
        text.push_str(&format!(" (#{a}–#{z})"));
    }
    text.push_str(&format!(", {} errors, {} requests open at its end, {} sessions, ", b.errors, b.open, b.sessions));
    match b.findings {
        Some(n) => text.push_str(&format!("{n} findings")),
        None => text.push_str("findings not known yet"),
    }
    text
}

/// Starts and continues a drag or click on the strip.
#[derive(Clone, Copy, Default)]
struct Drag {
    /// The pointer is down on the strip.
    down: bool,
    /// It moved to another bucket since it went down.
    moved: bool,
    /// The bucket it is over.
    bucket: usize,
    /// It went down with shift: it selects a range from `from` rather than moving the diagram.
    select: bool,
    /// The bucket it went down on.
    from: usize,
}

/// The bucket under a pointer event's position on the strip `svg`.
fn bucket_of_event(svg: NodeRef<leptos::svg::Svg>, ev: &web_sys::MouseEvent, buckets: usize) -> Option<usize> {
    let el: web_sys::Element = svg.get_untracked()?.unchecked_into();
    let r = el.get_bounding_client_rect();
    // `clientX` has fractions of a pixel, which `client_x()` (an integer) drops.
    let x = js_sys::Reflect::get(ev, &"clientX".into()).ok()?.as_f64()?;
    (r.width() > 0.0).then(|| bucket_at((x - r.left()) / r.width(), buckets))
}

fn strip(st: TraceState, o: TraceOverview) -> impl IntoView {
    let n = o.buckets.len();
    let w = n as f64;
    let max_frames = o.buckets.iter().map(|b| b.frames).max().unwrap_or(0);
    let bars_h = STRIP_H - BARS_TOP;
    let mut bars = String::new();
    for (i, b) in o.buckets.iter().enumerate() {
        let h = bar_height(b.frames, max_frames, bars_h);
        if h > 0.0 {
            bars.push_str(&format!("M{i} {STRIP_H}h1v-{h:.2}h-1z"));
        }
    }
    let ticks = |at: f64, hit: &dyn Fn(&OverviewBucket) -> bool| {
        let mut d = String::new();
        for (i, _) in o.buckets.iter().enumerate().filter(|(_, b)| hit(b)) {
            d.push_str(&format!("M{i} {at}h1v{TICK_H}h-1z"));
        }
        d
    };
    let errors = ticks(0.0, &|b| b.errors > 0);
    let findings = ticks(TICK_H, &|b| b.findings.is_some_and(|f| f > 0));
    let line = |value: &dyn Fn(&OverviewBucket) -> u64| {
        let max = o.buckets.iter().map(value).max().unwrap_or(0).max(1) as f64;
        o.buckets
            .iter()
            .enumerate()
            .map(|(i, b)| {
                let y = STRIP_H - 1.0 - (bars_h - 2.0) * value(b) as f64 / max;
                format!("{i},{y:.2} {},{y:.2}", i + 1)
            })
            .collect::<Vec<_>>()
            .join(" ")
    };
    let open = line(&|b| b.open);
    let sessions = line(&|b| b.sessions);
    let hits = o
        .buckets
        .iter()
        .enumerate()
        .map(|(i, b)| {
            view! {
                <rect class="ov-hit" x=i y="0" width="1" height=STRIP_H data-bucket=i data-frames=b.frames
                    data-first-seq=b.first_seq.map(|s| s.to_string())>
                    <title>{tooltip(&o, i, b)}</title>
                </rect>
            }
        })
        .collect::<Vec<_>>();
    let o = StoredValue::new(o);
    let window = Memo::new(move |_| {
        let (first, last) = seqs_in_view(st)?;
        o.with_value(|o| window_buckets(o, first, last))
    });
    let drag = StoredValue::new(Drag::default());
    // The buckets a shift+drag covers so far, drawn until it ends.
    let selecting = RwSignal::new(None::<(usize, usize)>);
    let band = Memo::new(move |_| {
        if let Some((a, b)) = selecting.get() {
            return Some((a.min(b), a.max(b)));
        }
        let (a, b) = st.query.with(|q| q.sel)?;
        o.with_value(|o| window_buckets(o, a, b))
    });
    let svg = NodeRef::<leptos::svg::Svg>::new();
    let go = move |bucket: usize, select: bool| {
        let Some(seq) = o.with_value(|o| o.seq_at_bucket(bucket)) else { return };
        if select {
            st.jump_to(seq, true);
        } else {
            st.follow.set(false);
            st.jump.set(Some(seq));
        }
    };
    let on_down = move |ev: web_sys::PointerEvent| {
        let Some(bucket) = bucket_of_event(svg, &ev, n) else { return };
        if let Some(el) = svg.get_untracked() {
            let el: web_sys::Element = el.unchecked_into();
            // Synthetic events have no pointer to capture; the drag then ends where it leaves the strip.
            let _ = el.set_pointer_capture(ev.pointer_id());
        }
        if st.range.pin.with_untracked(Option::is_some) {
            st.range.pin.set(None);
        }
        let select = ev.shift_key();
        if select {
            selecting.set(Some((bucket, bucket)));
        }
        drag.set_value(Drag { down: true, moved: false, bucket, select, from: bucket });
    };
    let on_move = move |ev: web_sys::PointerEvent| {
        let d = drag.get_value();
        let Some(bucket) = bucket_of_event(svg, &ev, n).filter(|&b| d.down && b != d.bucket) else { return };
        drag.set_value(Drag { moved: true, bucket, ..d });
        if d.select {
            selecting.set(Some((d.from, bucket)));
        } else {
            go(bucket, false);
        }
    };
    let on_up = move |ev: web_sys::PointerEvent| {
        let d = drag.get_value();
        drag.set_value(Drag::default());
        if !d.down {
            return;
        }
        let bucket = bucket_of_event(svg, &ev, n).unwrap_or(d.bucket);
        if d.select {
            selecting.set(None);
            if let Some(range) = o.with_value(|o| seqs_of_buckets(o, d.from, bucket)) {
                st.url.update(true, |q| {
                    q.accept("sel");
                    q.sel = Some(range);
                });
            }
            return;
        }
        // A click selects the frame (a history entry); a drag ends where it is, in view.
        go(bucket, !d.moved);
    };
    let (width_ns, frames, note) =
        o.with_value(|o| (o.bucket_ns, o.frames, o.findings_note.clone().filter(|_| !o.findings_checked)));
    let caption = format!(
        "{} frames over {} · a bar is {}",
        count(frames),
        duration_ns(width_ns * w as i64),
        duration_ns(width_ns)
    );
    view! {
        <div class="overview-strip" id="overview">
            <svg class="overview-svg" node_ref=svg viewBox=format!("0 0 {w} {STRIP_H}") preserveAspectRatio="none"
                role="slider" aria-label="the whole trace: click or drag to go there, shift+drag to select a range"
                aria-valuemin="0" aria-valuemax=n.saturating_sub(1)
                aria-valuenow=move || window.get().map(|(lo, _)| lo)
                on:pointerdown=on_down on:pointermove=on_move on:pointerup=on_up
                on:pointercancel=move |_| {
                    drag.set_value(Drag::default());
                    selecting.set(None);
                }>
                <path class="ov-frames" d=bars></path>
                <path class="ov-errors" d=errors></path>
                <path class="ov-findings" d=findings></path>
                <polyline class="ov-open" points=open vector-effect="non-scaling-stroke"></polyline>
                <polyline class="ov-sessions" points=sessions vector-effect="non-scaling-stroke"></polyline>
                {move || window.get().map(|(lo, hi)| view! {
                    <rect class="ov-window" x=lo y="0.5" width=hi - lo + 1 height=STRIP_H - 1.0
                        data-lo=lo data-hi=hi vector-effect="non-scaling-stroke"></rect>
                })}
                {move || band.get().map(|(lo, hi)| view! {
                    <rect class="ov-range" id="overview-range" x=lo y="0" width=hi - lo + 1 height=STRIP_H
                        data-lo=lo data-hi=hi></rect>
                })}
                {hits}
            </svg>
            <div class="overview-caption">
                <span>{caption}</span>
                <span class="key frames">"frames"</span>
                <span class="key errors">"errors"</span>
                <span class="key findings">"findings"</span>
                <span class="key open">"open requests"</span>
                <span class="key sessions">"sessions"</span>
                <span class="hint">"shift+drag: select a range"</span>
                {note.map(|n| view! { <span class="note" id="overview-findings-note">{n}</span> })}
            </div>
        </div>
    }
}
