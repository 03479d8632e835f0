//! `/compare/{a}/{b}`: two traces compared, as `acp-tee diff a b` compares
//! them (`GET /api/diff/{a}/{b}`), read top-down: the verdict, then the
//! summary (the `initialize` capabilities, each turn's stop reason, the
//! per-method latencies), then the messages added, missing and changed in two
//! lanes (a's seq on the left, b's on the right, the values that differ
//! between). Reached from the trace list by ticking two traces, or from a
//! trace view's "compare with…".

use crate::api;
use crate::components::title::use_title;
use acp_tee_shared::diff::{ChangeKind, MessageChange, TraceDiff, ValueChange};
use leptos::prelude::*;
use leptos_router::components::A;

/// Two traces compared.
#[component]
pub fn Compare(a: i64, b: i64) -> impl IntoView {
    use_title(format!("trace {a} vs {b}"));
    let report = LocalResource::new(move || api::diff(a, b));
    let body = move || match report.get() {
        None => view! { <div class="notice big">"Comparing…"</div> }.into_any(),
        Some(Err(e)) => {
            view! { <div id="compare-error" class="banner error" role="alert">{e.message}</div> }.into_any()
        }
        Some(Ok(d)) => report_view(a, b, d).into_any(),
    };
    view! {
        <div class="list-page compare-page">
            <header class="list-head">
                <A href="/" attr:class="back">"← all traces"</A>
                <h1>{format!("trace {a} vs trace {b}")}</h1>
            </header>
            {body}
        </div>
    }
}

fn report_view(a: i64, b: i64, d: TraceDiff) -> impl IntoView {
    let verdict = if d.equivalent { "equivalent" } else { "different" };
    let side = |s: &acp_tee_shared::diff::DiffSide| {
        let more = if s.truncated { ", more not read" } else { "" };
        format!("{} ({} messages{more})", s.name.clone().unwrap_or_default(), s.messages)
    };
    let more = (d.changed_messages as usize).saturating_sub(d.messages.len());
    view! {
        <p class="compare-sides">
            <a href=format!("/traces/{a}")>{format!("a: trace {a}")}</a>" "{side(&d.a)}" · "
            <a href=format!("/traces/{b}")>{format!("b: trace {b}")}</a>" "{side(&d.b)}
        </p>
        <p>
            <span id="compare-verdict" class=format!("badge {verdict}")>{verdict}</span>
            {format!(" {} messages equal, {} different (aligned by {})", d.equal_messages, d.changed_messages, d.alignment)}
        </p>
        {(!d.capabilities.is_empty()).then(|| view! {
            <h2>"initialize capabilities"</h2>
            <table id="compare-capabilities" class="compare"><tbody>{values(d.capabilities)}</tbody></table>
        })}
        <h2>"turns"</h2>
        <table id="compare-turns" class="compare">
            <thead><tr><th>"turn"</th><th>"session"</th><th>"a"</th><th>"b"</th></tr></thead>
            <tbody>
                {d.turns.into_iter().map(|t| {
                    let end = |e: Option<String>| e.unwrap_or_else(|| "not ended".to_owned());
                    let differs = t.a != t.b;
                    view! {
                        <tr class:differs=differs>
                            <td class="num">{t.turn}</td><td>{t.session}</td><td>{end(t.a)}</td><td>{end(t.b)}</td>
                        </tr>
                    }
                }).collect_view()}
            </tbody>
        </table>
        <h2>"latency"</h2>
        <table id="compare-latency" class="compare">
            <thead><tr><th>"method"</th><th>"answers a | b"</th><th>"p50 a → b"</th><th>"p95 a → b"</th></tr></thead>
            <tbody>
                {d.latency.into_iter().map(|l| view! {
                    <tr>
                        <td>{l.method}</td>
                        <td class="num">{format!("{} | {}", l.count_a, l.count_b)}</td>
                        <td class="num">{latency(l.p50_a_ns, l.p50_b_ns, l.p50_ratio)}</td>
                        <td class="num">{latency(l.p95_a_ns, l.p95_b_ns, l.p95_ratio)}</td>
                    </tr>
                }).collect_view()}
            </tbody>
        </table>
        <h2>"messages"</h2>
        {if d.changed_messages == 0 {
            // An empty table would say nothing; this says what was found.
            view! { <p id="compare-no-differences">"No differences: every message of a has its equal in b."</p> }
                .into_any()
        } else {
            view! {
                <table id="compare-messages" class="compare">
                    <thead><tr><th>"a"</th><th>"change"</th><th>"message"</th><th>"b"</th><th>"values (a → b)"</th></tr></thead>
                    <tbody>{d.messages.into_iter().map(|m| message_row(a, b, m)).collect_view()}</tbody>
                </table>
            }
            .into_any()
        }}
        {(more > 0).then(|| view! { <p class="dim">{format!("… and {more} more")}</p> })}
    }
}

/// One changed message: a's seq (a link to the frame), what changed, b's seq.
fn message_row(a: i64, b: i64, m: MessageChange) -> impl IntoView {
    let change = match m.change {
        ChangeKind::Missing => "missing",
        ChangeKind::Added => "added",
        ChangeKind::Changed => "changed",
    };
    let link = |trace: i64, seq: Option<i64>| {
        seq.map(|s| view! { <a href=format!("/traces/{trace}?frame={s}")>{format!("#{s}")}</a> })
    };
    let what = format!(
        "{} {} {}{}",
        m.dir.as_str(),
        m.kind.as_str(),
        m.method.unwrap_or_default(),
        m.update.map(|u| format!(" {u}")).unwrap_or_default()
    );
    let more = m.values_truncated.then_some("(more values differ)");
    view! {
        <tr class=format!("change change-{change}") data-change=change>
            <td class="num">{link(a, m.a_seq)}</td>
            <td>{change}</td>
            <td class="what">{what}</td>
            <td class="num">{link(b, m.b_seq)}</td>
            <td><table class="values"><tbody>{values(m.values)}</tbody></table>{more}</td>
        </tr>
    }
}

fn values(values: Vec<ValueChange>) -> impl IntoView {
    let show = |v: Option<serde_json::Value>| v.map_or("(absent)".to_owned(), |v| v.to_string());
    values
        .into_iter()
        .map(|v| view! { <tr><td class="path">{v.path}</td><td>{show(v.a)}</td><td>"→"</td><td>{show(v.b)}</td></tr> })
        .collect_view()
}

fn latency(a: Option<i64>, b: Option<i64>, ratio: Option<f64>) -> String {
    let ms = |ns: Option<i64>| ns.map_or("–".to_owned(), |ns| format!("{:.3} ms", ns as f64 / 1e6));
    let r = ratio.map(|r| format!(" (×{r:.2})")).unwrap_or_default();
    format!("{} → {}{r}", ms(a), ms(b))
}
