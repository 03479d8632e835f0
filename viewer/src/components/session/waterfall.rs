//! The page's turns and their tool calls on one time axis: a bar per turn from its prompt to its answer
//! (to now, or the trace's end, while open), a bar per tool call from its first to its last update, the
//! client's permission waits marked on it. Labels and bars link to the frames.

use super::{frame_href, frame_link};
use crate::format;
use crate::state::TraceState;
use acp_tee_shared::session::Turn;
use leptos::prelude::*;

/// Rows the waterfall draws at most (turns and tool calls); the rest are counted.
pub const WATERFALL_ROWS_MAX: usize = 300;

/// Ticks on the time axis.
const TICKS: usize = 5;

/// One row: label, what its bar spans, its frame.
struct Row {
    class: &'static str,
    label: String,
    from: i64,
    to: i64,
    seq: i64,
    tip: String,
    /// Permission waits: from, to, the request's frame.
    waits: Vec<(i64, i64, i64)>,
    status: String,
}

fn rows_of(turns: &[Turn], now_t_ns: i64) -> (Vec<Row>, usize) {
    let mut rows = Vec::new();
    let mut left_out = 0;
    for t in turns {
        let end = t.end_t_ns.unwrap_or(now_t_ns.max(t.start_t_ns));
        let how = t.stop_reason.clone().or_else(|| t.error.as_ref().map(|_| "error".to_owned()));
        let tip = format!(
            "turn {}: {}{}",
            t.index + 1,
            format::duration_ns(end - t.start_t_ns),
            how.as_ref().map_or(" (open)".to_owned(), |h| format!(", {h}"))
        );
        let mut all = vec![Row {
            class: "wf-turn",
            label: format!("Turn {}", t.index + 1),
            from: t.start_t_ns,
            to: end,
            seq: t.request_seq,
            tip,
            waits: Vec::new(),
            status: how.unwrap_or_else(|| "open".to_owned()),
        }];
        for c in &t.tool_calls {
            let waits: Vec<(i64, i64, i64)> = c
                .permissions
                .iter()
                .map(|p| (p.t_ns, p.t_ns + p.waited_ns.unwrap_or(now_t_ns - p.t_ns).max(0), p.request_seq))
                .collect();
            let to = waits.iter().map(|w| w.1).fold(c.last_t_ns, i64::max);
            let title = c.title.clone().unwrap_or_else(|| c.tool_call_id.clone());
            let status = c.status.clone().unwrap_or_default();
            let tip = format!("{title}: {} {status}", format::duration_ns(to - c.first_t_ns));
            all.push(Row {
                class: "wf-tool",
                label: title,
                from: c.first_t_ns,
                to,
                seq: c.first_seq,
                tip,
                waits,
                status,
            });
        }
        for row in all {
            if rows.len() < WATERFALL_ROWS_MAX {
                rows.push(row);
            } else {
                left_out += 1;
            }
        }
    }
    (rows, left_out)
}

/// The waterfall of a page of turns (`#waterfall`).
pub fn waterfall(st: TraceState, turns: &[Turn], now_t_ns: i64) -> impl IntoView {
    let (rows, left_out) = rows_of(turns, now_t_ns);
    let t0 = rows.iter().map(|r| r.from).min().unwrap_or(0);
    let t1 = rows.iter().map(|r| r.to).max().unwrap_or(t0).max(t0 + 1);
    let span = (t1 - t0) as f64;
    let pct = move |t: i64| ((t - t0) as f64 / span * 100.0).clamp(0.0, 100.0);
    let ticks = (0..=TICKS)
        .map(|i| {
            let at = i as f64 / TICKS as f64;
            let text = if i == 0 { "0".to_owned() } else { format!("+{}", format::duration_ns((span * at) as i64)) };
            view! { <span class="wf-tick" style=format!("left: {:.3}%", at * 100.0)>{text}</span> }
        })
        .collect_view();
    let drawn = rows
        .into_iter()
        .map(|r| {
            let (left, width) = (pct(r.from), (pct(r.to) - pct(r.from)).max(0.0));
            let waits = r
                .waits
                .iter()
                .map(|&(a, b, _)| {
                    let (l, w) = (pct(a), (pct(b) - pct(a)).max(0.0));
                    view! { <span class="wf-wait" style=format!("left: {l:.3}%; width: {w:.3}%") title="waiting for the client's permission"></span> }
                })
                .collect_view();
            let (seq, label) = (r.seq, r.label.clone());
            let href = frame_href(st, seq);
            view! {
                <div class=format!("wf-row {}", r.class) data-seq=seq>
                    <span class="wf-label" title=r.label.clone()>{frame_link(st, seq, label)}</span>
                    <div class="wf-track">
                        <a class=format!("wf-bar status-{}", r.status) href=href tabindex="-1" aria-hidden="true"
                            style=format!("left: {left:.3}%; width: {width:.3}%") title=r.tip></a>
                        {waits}
                    </div>
                </div>
            }
        })
        .collect_view();
    let more = (left_out > 0).then(|| view! { <p class="hint">{format!("{left_out} more rows not drawn")}</p> });
    view! {
        <section class="card" id="waterfall" aria-label="turns and tool calls on a time axis">
            <h2>"Waterfall" <span class="dim">{format!(" · from {}", format::offset_ns(t0))}</span></h2>
            <div class="wf-row wf-axis"><span class="wf-label"></span><div class="wf-track">{ticks}</div></div>
            {drawn}
            {more}
        </section>
    }
}
