//! The range panel (`#range-panel`, at the top of the detail panel): what the selected range holds, as the
//! server adds it up (`/api/traces/{id}/range`: all of its frames, whatever the filters): its first and last
//! frame, duration, frames, requests, errors and its most frequent methods; "Filter to it" shows only the
//! range (`from`, `to`), "Zoom to it" scales the linear axis so that the range fills the diagram's height and
//! puts its first frame at the top; ✕ or Esc clears the selection.

use super::trace_state;
use crate::format::{count, duration_ns};
use crate::state::range::{scale_to_fill, Pin, Within};
use crate::state::window::FrameWindow;
use crate::state::TraceState;
use crate::view_query::Axis;
use acp_tee_shared::api::RangeSummary;
use leptos::prelude::*;

/// Drops the selected range (a history entry: Back brings it back).
pub fn clear_selection(st: TraceState) {
    st.range.drag.set(None);
    st.url.update(true, |q| {
        q.accept("sel");
        q.sel = None;
    });
}

/// Shows only the frames of range `a..=b`.
fn filter_to(st: TraceState, (a, b): (i64, i64)) {
    st.url.update(true, |q| {
        q.accept("from");
        q.accept("to");
        (q.filters.from, q.filters.to) = (Some(a), Some(b));
    });
}

/// The linear axis at the scale where the range fills the view (its rows too, when they are fetched), its
/// first frame at the top (fetched first when it is not).
fn zoom_to(st: TraceState, r: &RangeSummary) {
    let (Some(first), Some(last)) = (r.first_seq, r.last_seq) else { return };
    let gaps = st.window.with_untracked(|w| gaps_between(w, first, last));
    let scale = scale_to_fill(r.duration_ns, gaps.as_deref(), st.view_h.get_untracked());
    st.follow.set(false);
    st.range.pin.set(Some(Pin { seq: first, at: Within::Row(0.0), view_dy: 0.0, scale }));
    st.url.update(true, |q| {
        q.accept("axis");
        q.accept("scale");
        q.axis = Axis::Linear;
        q.scale = Some(scale);
    });
    if st.window.with_untracked(|w| w.index_of_seq(first).is_none()) {
        st.jump.set(Some(first));
    }
}

/// Most rows of a range whose gaps are looked at to fit it in the view.
const FIT_ROWS: usize = 2_000;

/// The gaps between the rows from frame `first` to frame `last`, when both are fetched and not too far apart,
/// and every row between them is fetched.
fn gaps_between(w: &FrameWindow, first: i64, last: i64) -> Option<Vec<i64>> {
    let (a, z) = (w.index_of_seq(first)?, w.index_of_seq(last)?);
    if z < a || z - a > FIT_ROWS {
        return None;
    }
    let times = (a..=z).map(|i| w.get(i).map(|f| f.t_ns)).collect::<Option<Vec<i64>>>()?;
    Some(times.windows(2).map(|p| p[1] - p[0]).collect())
}

/// The panel, while a range is selected.
#[component]
pub fn RangePanel() -> impl IntoView {
    let st = trace_state();
    move || {
        let sel = st.query.with(|q| q.sel)?;
        let (a, b) = sel;
        let summary = st.range.summary.with(|s| match s {
            Some((k, r)) if *k == sel => Some(r.clone()),
            _ => None,
        });
        let filtered = st.query.with(|q| (q.filters.from, q.filters.to) == (Some(a), Some(b)));
        let body = match &summary {
            None => view! { <div class="hint">"Adding the range up…"</div> }.into_any(),
            Some(Err(e)) => view! { <div class="notice error">{e.message.clone()}</div> }.into_any(),
            Some(Ok(r)) => facts(r).into_any(),
        };
        let ready = summary.and_then(Result::ok).filter(|r| r.first_seq.is_some());
        let zoom = ready.map(|r| {
            view! {
                <button id="range-zoom" title="the linear axis, scaled so the range fills the height, its first frame at the top"
                    on:click=move |_| zoom_to(st, &r)>"Zoom to it"</button>
            }
        });
        Some(view! {
            <section id="range-panel" class="banner range" aria-label="selected range">
                <div class="range-head">
                    <strong>{format!("Range #{a} – #{b}")}</strong>
                    <button id="range-clear" class="link" title="clear the selection (Esc)" aria-label="clear the selection"
                        on:click=move |_| clear_selection(st)>"✕"</button>
                </div>
                {body}
                <div class="range-actions">
                    <button id="range-filter" prop:disabled=filtered
                        title="show only the frames of this range (from, to in the URL; ✕ in the filter bar drops it)"
                        on:click=move |_| filter_to(st, sel)>{if filtered { "Filtered to it" } else { "Filter to it" }}</button>
                    {zoom}
                </div>
            </section>
        })
    }
}

/// The range's numbers and its methods, most frequent first.
fn facts(r: &RangeSummary) -> impl IntoView {
    let ends = match (r.first_seq, r.last_seq) {
        (Some(f), Some(l)) => format!("#{f} – #{l}"),
        _ => "no frame".to_owned(),
    };
    let methods = r
        .methods
        .iter()
        .map(|m| {
            let title = m.method.clone();
            view! { <tr><td title=title>{m.method.clone()}</td><td class="n">{count(m.frames as i64)}</td></tr> }
        })
        .collect_view();
    let others = (r.other_methods > 0).then(|| {
        let text = format!("{} more methods", count(r.other_methods as i64));
        view! { <tr class="others"><td>{text}</td><td class="n">{count(r.other_frames as i64)}</td></tr> }
    });
    let unnamed = (r.no_method > 0).then(|| {
        view! { <tr class="others"><td>"no method (stderr, invalid, batches)"</td><td class="n">{count(r.no_method as i64)}</td></tr> }
    });
    view! {
        <dl>
            <dt>"frames"</dt><dd id="range-frames">{count(r.frames as i64)}</dd>
            <dt>"first – last"</dt><dd id="range-ends">{ends}</dd>
            <dt>"duration"</dt><dd id="range-duration" data-ns=r.duration_ns>{duration_ns(r.duration_ns)}</dd>
            <dt>"requests"</dt><dd id="range-requests">{count(r.requests as i64)}</dd>
            <dt>"errors"</dt><dd id="range-errors">{count(r.errors as i64)}</dd>
        </dl>
        <table id="range-methods" aria-label="methods in the range">
            <tbody>{methods}{others}{unnamed}</tbody>
        </table>
    }
}
