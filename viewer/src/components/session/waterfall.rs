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

/// Where a bar ends: at a time it is known, or (still open) at the present, never before `t`.
#[derive(Clone, Copy, Debug, PartialEq)]
enum End {
    At(i64),
    Open(i64),
}

impl End {
    fn at(self, now_t_ns: i64) -> i64 {
        match self {
            End::At(t) => t,
            End::Open(t) => t.max(now_t_ns),
        }
    }
}

/// One row: label, what its bar spans, its frame.
struct Row {
    class: &'static str,
    label: String,
    from: i64,
    to: End,
    seq: i64,
    /// Its tooltip, given where the bar ends.
    tip: Box<dyn Fn(i64) -> String + Send + Sync>,
    /// Permission waits: from, to, the request's frame.
    waits: Vec<(i64, End, i64)>,
    status: String,
}

fn rows_of(turns: &[Turn]) -> (Vec<Row>, usize) {
    let mut rows = Vec::new();
    let mut left_out = 0;
    for t in turns {
        let end = t.end_t_ns.map_or(End::Open(t.start_t_ns), End::At);
        let how = t.stop_reason.clone().or_else(|| t.error.as_ref().map(|_| "error".to_owned()));
        let (index, start) = (t.index, t.start_t_ns);
        let ended = how.as_ref().map_or(" (open)".to_owned(), |h| format!(", {h}"));
        let tip = move |end: i64| format!("turn {}: {}{ended}", index + 1, format::duration_ns(end - start));
        let mut all = vec![Row {
            class: "wf-turn",
            label: format!("Turn {}", t.index + 1),
            from: t.start_t_ns,
            to: end,
            seq: t.request_seq,
            tip: Box::new(tip),
            waits: Vec::new(),
            status: how.unwrap_or_else(|| "open".to_owned()),
        }];
        for c in &t.tool_calls {
            let waits: Vec<(i64, End, i64)> = c
                .permissions
                .iter()
                .map(|p| (p.t_ns, p.waited_ns.map_or(End::Open(p.t_ns), |w| End::At(p.t_ns + w.max(0))), p.request_seq))
                .collect();
            // To its last update, or to the end of a longer permission wait (the present, while one is open).
            let last = waits.iter().map(|w| w.1.at(i64::MIN)).fold(c.last_t_ns, i64::max);
            let to = if waits.iter().any(|w| matches!(w.1, End::Open(_))) { End::Open(last) } else { End::At(last) };
            let title = c.title.clone().unwrap_or_else(|| c.tool_call_id.clone());
            let status = c.status.clone().unwrap_or_default();
            let (name, shown, first) = (title.clone(), status.clone(), c.first_t_ns);
            let tip = move |end: i64| format!("{name}: {} {shown}", format::duration_ns(end - first));
            all.push(Row {
                class: "wf-tool",
                label: title,
                from: c.first_t_ns,
                to,
                seq: c.first_seq,
                tip: Box::new(tip),
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

/// The waterfall of a page of turns (`#waterfall`). While something is open its bar and the axis reach
/// `now`, the present on the trace's clock, and follow it.
pub fn waterfall(st: TraceState, turns: &[Turn], now: Memo<i64>) -> impl IntoView {
    let (rows, left_out) = rows_of(turns);
    let t0 = rows.iter().map(|r| r.from).min().unwrap_or(0);
    // The axis ends at the latest end, the present when a bar is open.
    let fixed_end = rows.iter().map(|r| r.to.at(i64::MIN)).max().unwrap_or(t0);
    let open = rows.iter().any(|r| matches!(r.to, End::Open(_)));
    let span = Memo::new(move |_| {
        let t1 = if open { fixed_end.max(now.get()) } else { fixed_end };
        (t1.max(t0 + 1) - t0) as f64
    });
    let pct = move |t: i64| ((t - t0) as f64 / span.get() * 100.0).clamp(0.0, 100.0);
    let ticks = (0..=TICKS)
        .map(|i| {
            let at = i as f64 / TICKS as f64;
            let text = move || {
                if i == 0 {
                    "0".to_owned()
                } else {
                    format!("+{}", format::duration_ns((span.get() * at) as i64))
                }
            };
            view! { <span class="wf-tick" style=format!("left: {:.3}%", at * 100.0)>{text}</span> }
        })
        .collect_view();
    let drawn = rows
        .into_iter()
        .map(|r| {
            let (from, to) = (r.from, r.to);
            let bar = move || {
                let (left, right) = (pct(from), pct(to.at(now.get())));
                format!("left: {left:.3}%; width: {:.3}%", (right - left).max(0.0))
            };
            let waits = r
                .waits
                .iter()
                .map(|&(a, b, _)| {
                    let style = move || {
                        let (l, r) = (pct(a), pct(b.at(now.get())));
                        format!("left: {l:.3}%; width: {:.3}%", (r - l).max(0.0))
                    };
                    view! { <span class="wf-wait" style=style title="waiting for the client's permission"></span> }
                })
                .collect_view();
            let (seq, label) = (r.seq, r.label.clone());
            let href = frame_href(st, seq);
            let tip = r.tip;
            let title = move || tip(to.at(now.get()));
            view! {
                <div class=format!("wf-row {}", r.class) data-seq=seq>
                    <span class="wf-label" title=r.label.clone()>{frame_link(st, seq, label)}</span>
                    <div class="wf-track">
                        <a class=format!("wf-bar status-{}", r.status) href=href tabindex="-1" aria-hidden="true"
                            style=bar title=title></a>
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
