//! The timing tab: per-method latency table, a latency histogram and the slowest responses.

use super::summary::plural;
use super::trace_state;
use crate::format;
use crate::state::TraceState;
use crate::view_query::Tab;
use acp_tee_shared::api::{HistogramBucket, MethodStats, TraceStats};
use leptos::prelude::*;

const HIST_W: f64 = 720.0;
const HIST_H: f64 = 220.0;
const HIST_PAD: f64 = 28.0;

fn opt_ns(ns: Option<i64>) -> String {
    ns.map_or("–".to_owned(), format::duration_ns)
}

/// The timing tab's content.
#[component]
pub fn Timing() -> impl IntoView {
    let st = trace_state();
    // The histogram shows one method (named in the URL), or all together when none is picked.
    let picked = Memo::new(move |_| st.query.with(|q| q.timing_method.clone()));
    move || {
        st.stats.with(|s| match s {
            None => view! { <div class="notice">"Loading timing…"</div> }.into_any(),
            Some(Err(e)) => view! { <div class="notice error">{e.message.clone()}</div> }.into_any(),
            Some(Ok(stats)) if stats.methods.is_empty() => {
                view! { <div class="notice">"No requests or notifications in this trace yet."</div> }.into_any()
            }
            Some(Ok(stats)) => view! {
                <div class="timing">
                    {method_table(st, stats, picked)}
                    {histogram_section(st, stats, picked)}
                    {(!stats.slowest.is_empty()).then(|| slowest(st, stats))}
                </div>
            }
            .into_any(),
        })
    }
}

fn pick(st: TraceState, method: Option<String>) {
    st.url.update(true, |q| q.timing_method = method);
}

fn method_table(st: TraceState, stats: &TraceStats, picked: Memo<Option<String>>) -> impl IntoView {
    let rows = stats
        .methods
        .iter()
        .map(|m| {
            let name = m.method.clone();
            let title = name.clone();
            let for_click = name.clone();
            let attr = name.clone();
            let is_picked = {
                let name = name.clone();
                move || picked.with(|p| p.as_ref() == Some(&name))
            };
            view! {
                <tr data-method=attr class:picked=is_picked tabindex="0"
                    on:click={
                        let m = for_click.clone();
                        move |_| pick(st, Some(m.clone()))
                    }
                    on:keydown=move |ev| if ev.key() == "Enter" { pick(st, Some(for_click.clone())) }>
                    <td class="m" title=title>{name}</td>
                    <td>{format::count(m.count)}</td>
                    <td class:err=m.errors != 0>{format::count(m.errors)}</td>
                    <td>{format::count(m.answered)}</td>
                    <td>{opt_ns(m.p50_ns)}</td>
                    <td>{opt_ns(m.p95_ns)}</td>
                    <td>{opt_ns(m.p99_ns)}</td>
                    <td>{opt_ns(m.max_ns)}</td>
                </tr>
            }
        })
        .collect_view();
    view! {
        <section class="card">
            <h2>"Per method"</h2>
            <table id="method-stats">
                <thead>
                    <tr><th class="m">"method"</th><th>"count"</th><th>"errors"</th><th>"answered"</th>
                    <th>"p50"</th><th>"p95"</th><th>"p99"</th><th>"max"</th></tr>
                </thead>
                <tbody>{rows}</tbody>
            </table>
            <p class="hint" class:hidden=move || picked.with(Option::is_some)>"Click a method to see its histogram alone."</p>
        </section>
    }
}

/// Buckets of one method, or of all methods added up (buckets share their bounds).
fn buckets(methods: &[MethodStats], picked: Option<&str>) -> Vec<HistogramBucket> {
    let mut all: Vec<HistogramBucket> = Vec::new();
    for m in methods.iter().filter(|m| picked.is_none_or(|p| p == m.method)) {
        for b in &m.histogram {
            match all.iter_mut().find(|a| a.lo_ns == b.lo_ns && a.hi_ns == b.hi_ns) {
                Some(a) => a.count += b.count,
                None => all.push(b.clone()),
            }
        }
    }
    all.sort_by_key(|b| b.lo_ns);
    fill_gaps(all)
}

/// Adds the empty buckets the server leaves out between two non-empty ones, so the x axis stays
/// log-even (each bucket is as many times wider than the previous as the one before it).
fn fill_gaps(sorted: Vec<HistogramBucket>) -> Vec<HistogramBucket> {
    let mut out: Vec<HistogramBucket> = Vec::with_capacity(sorted.len());
    for b in sorted {
        while let Some(prev) = out.last() {
            if prev.hi_ns >= b.lo_ns || prev.lo_ns <= 0 || out.len() > 64 {
                break;
            }
            let ratio = prev.hi_ns as f64 / prev.lo_ns as f64;
            let lo_ns = prev.hi_ns;
            let hi_ns = ((lo_ns as f64 * ratio) as i64).min(b.lo_ns);
            out.push(HistogramBucket { lo_ns, hi_ns, count: 0 });
        }
        out.push(b);
    }
    out
}

fn histogram_section(st: TraceState, stats: &TraceStats, picked: Memo<Option<String>>) -> impl IntoView {
    let methods = stats.methods.clone();
    let chart = move || {
        let bars = picked.with(|p| buckets(&methods, p.as_deref()));
        histogram_svg(st, &bars, picked.get())
    };
    let title = move || picked.get().map_or("all methods".to_owned(), |m| m);
    view! {
        <section class="card">
            <h2>"Latency histogram · " {title} " "
                <button id="histogram-all" class="link" class:hidden=move || picked.with(Option::is_none)
                    on:click=move |_| pick(st, None)>"show all methods"</button>
            </h2>
            {chart}
        </section>
    }
}

/// A bar's lower bound as the filter takes it: milliseconds cut down to three significant digits
/// (2147.483648 → 2140), so the URL reads as a person would write it and no response of the bar is left out.
fn threshold_ms(lo_ns: i64) -> f64 {
    let ms = lo_ns as f64 / 1e6;
    if ms <= 0.0 {
        return 0.0;
    }
    let exp = ms.log10().floor() as i32;
    let unit = 10f64.powi(exp - 2);
    let cut = (ms / unit).floor() * unit;
    // Written with exactly its digits and read again: 2140.0000000000005 would undo the point of cutting.
    let decimals = (2 - exp).max(0) as usize;
    format!("{cut:.decimals$}").parse().unwrap_or(ms)
}

/// The least height of a bar with any response in it: a single outlier among thousands stays visible and
/// clickable.
const MIN_BAR_PX: f64 = 3.0;

/// Shows in the diagram the responses (of the picked method) at least as slow as a bar's lower bound.
fn show_slower_than(st: TraceState, lo_ns: i64, method: Option<String>) {
    st.url.update(true, |q| {
        for key in ["kind", "method", "min_latency_ms"] {
            q.accept(key);
        }
        q.tab = Tab::Diagram;
        q.filters.min_latency_ms = Some(threshold_ms(lo_ns));
        q.filters.method = method;
        q.frame = None;
    });
}

fn histogram_svg(st: TraceState, bars: &[HistogramBucket], method: Option<String>) -> impl IntoView {
    let max = bars.iter().map(|b| b.count).max().unwrap_or(0).max(1) as f64;
    let n = bars.len().max(1) as f64;
    let slot = (HIST_W - HIST_PAD) / n;
    let plot_h = HIST_H - 2.0 * HIST_PAD;
    let rects = bars
        .iter()
        .enumerate()
        .map(|(i, b)| {
            let h = if b.count > 0 { (b.count as f64 / max * plot_h).max(MIN_BAR_PX) } else { 0.0 };
            let x = HIST_PAD + i as f64 * slot;
            let y = HIST_PAD + plot_h - h;
            let tip = format!(
                "{} – {}: {} (click: show the responses slower than {} in the diagram)",
                format::duration_ns(b.lo_ns),
                format::duration_ns(b.hi_ns),
                plural(b.count, "response"),
                format::duration_ns((threshold_ms(b.lo_ns) * 1e6) as i64),
            );
            let (lo_ns, method) = (b.lo_ns, method.clone());
            let every = (bars.len() / 8).max(1);
            let label = (i % every == 0).then(|| {
                view! { <text class="axis" x=x + slot / 2.0 y=HIST_H - 8.0 text-anchor="middle">{format::duration_ns(b.lo_ns)}</text> }
            });
            view! {
                <g class="bucket" data-lo-ns=lo_ns data-count=b.count on:click=move |_| show_slower_than(st, lo_ns, method.clone())>
                    // The whole column takes the click, however short the bar.
                    <rect class="hit" x=x y=HIST_PAD width=slot height=plot_h fill="transparent" />
                    <rect class="bar" x=x + 1.0 y=y width=(slot - 2.0).max(1.0) height=h.max(0.0)>
                        <title>{tip}</title>
                    </rect>
                    {(b.count > 0).then(|| view! { <text class="count" x=x + slot / 2.0 y=y - 4.0 text-anchor="middle">{b.count}</text> })}
                    {label}
                </g>
            }
        })
        .collect_view();
    let empty = bars.is_empty().then(|| {
        view! { <text class="axis" x=HIST_W / 2.0 y=HIST_H / 2.0 text-anchor="middle">"no answered requests"</text> }
    });
    view! {
        <svg id="histogram" width=HIST_W height=HIST_H viewBox=format!("0 0 {HIST_W} {HIST_H}")>
            <line class="base" x1=HIST_PAD y1=HIST_H - HIST_PAD x2=HIST_W y2=HIST_H - HIST_PAD />
            {rects}
            {empty}
        </svg>
    }
}

fn slowest(st: TraceState, stats: &TraceStats) -> impl IntoView {
    let items = stats
        .slowest
        .iter()
        .map(|f| {
            let seq = f.seq;
            let method = f.method.clone().unwrap_or_else(|| f.kind.as_str().to_owned());
            let method_title = method.clone();
            let latency = f.latency_ns.map_or(String::new(), format::duration_ns);
            let go = move || st.show_in_diagram(seq);
            view! {
                <li data-seq=seq tabindex="0" on:click=move |_| go() on:keydown=move |ev| if ev.key() == "Enter" { go() }>
                    <span class="lat">{latency}</span>
                    <span class="m" title=method_title>{method}</span>
                    <span class="seq">{format!("#{seq}")}</span>
                </li>
            }
        })
        .collect_view();
    view! {
        <section class="card">
            <h2>"Slowest responses"</h2>
            <ol id="slowest">{items}</ol>
        </section>
    }
}

#[cfg(test)]
mod tests {
    use super::threshold_ms;

    #[test]
    fn a_bars_threshold_is_cut_to_three_digits_and_never_above_its_bound() {
        assert_eq!(threshold_ms(2_147_483_648), 2140.0);
        assert_eq!(threshold_ms(1_048_576), 1.04);
        assert_eq!(threshold_ms(65_536), 0.0655);
        assert_eq!(threshold_ms(0), 0.0);
        for lo in [1i64, 999, 1_000, 123_456_789, 2_147_483_648, 9_999_999_999_999] {
            assert!(threshold_ms(lo) * 1e6 <= lo as f64 + 1e-6, "{lo}");
        }
    }
}
