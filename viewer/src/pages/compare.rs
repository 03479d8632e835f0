//! `/compare/{a}/{b}`: two traces compared, as `acp-tee diff a b` compares
//! them (`GET /api/diff/{a}/{b}`), read top-down: the verdict, then the
//! summary (the `initialize` capabilities, how the turns ended: a tally of
//! those alike and the ones that differ, the per-method latencies), then turn by turn the assembled replies (a word
//! diff) and tool calls that differ, then the messages added, missing and
//! changed in two lanes (a's seq on the left, b's on the right, the values
//! that differ between). Reached from the trace list by ticking two traces, or from a
//! trace view's "compare with…".

use crate::api;
use crate::components::title::use_title;
use acp_tee_shared::diff::{
    ChangeKind, MessageChange, TextOpKind, ToolBrief, TraceDiff, TurnChange, TurnDiffs, TurnEnd, ValueChange,
};
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
        {d.only_chunking.then(|| view! {
            <p id="compare-only-chunking" class="notice">
                "Every message that differs is a streamed chunk, and every turn's assembled text is the same: \
                 the runs said the same, cut into chunks differently."
            </p>
        })}
        {(!d.capabilities.is_empty()).then(|| view! {
            <h2>"initialize capabilities"</h2>
            <table id="compare-capabilities" class="compare"><tbody>{values(d.capabilities)}</tbody></table>
        })}
        <h2>"turns"</h2>
        {turn_ends(d.turns, d.a.truncated || d.b.truncated)}
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
        {turn_changes(a, b, d.turn_changes)}
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

/// Rows of turns that ended differently shown at most (all are counted).
const TURN_ENDS_SHOWN: usize = 200;

/// How the turns ended: a tally of those that ended alike on both sides, and a row for each that did not
/// (a page of a million frames has thousands of turns: listing them all would push what differs far down).
/// `cut`: a side holds more messages than were read (the turns are those of the messages read).
fn turn_ends(turns: Vec<TurnEnd>, cut: bool) -> impl IntoView {
    let scope = if cut { " of the messages read" } else { "" };
    let end = |e: &Option<String>| e.clone().unwrap_or_else(|| "not ended".to_owned());
    let n = turns.len();
    let (alike, differ): (Vec<TurnEnd>, Vec<TurnEnd>) = turns.into_iter().partition(|t| t.a == t.b);
    let mut tally: std::collections::BTreeMap<String, u64> = Default::default();
    alike.iter().for_each(|t| *tally.entry(end(&t.a)).or_default() += 1);
    let tally = tally.into_iter().map(|(e, k)| format!("{e} {k}")).collect::<Vec<_>>().join(" · ");
    let summary = if n == 0 {
        "No prompt turns on either side.".to_owned()
    } else if differ.is_empty() {
        format!("All {n} turns{scope} ended alike on both sides: {tally}.")
    } else if alike.is_empty() {
        format!("All {n} turns{scope} ended differently.")
    } else {
        format!("{} of {n} turns{scope} ended differently; the other {} alike: {tally}.", differ.len(), alike.len())
    };
    let more = differ.len().saturating_sub(TURN_ENDS_SHOWN);
    let table = (!differ.is_empty()).then(|| {
        let rows = differ
            .into_iter()
            .take(TURN_ENDS_SHOWN)
            .map(|t| {
                view! {
                    <tr class="differs">
                        <td class="num">{t.turn}</td><td>{t.session}</td><td>{end(&t.a)}</td><td>{end(&t.b)}</td>
                    </tr>
                }
            })
            .collect_view();
        view! {
            <table id="compare-turns" class="compare">
                <thead><tr><th>"turn"</th><th>"session"</th><th>"a"</th><th>"b"</th></tr></thead>
                <tbody>{rows}</tbody>
            </table>
        }
    });
    view! {
        <p id="compare-turn-ends">{summary}</p>
        {table}
        {(more > 0).then(|| view! { <p class="dim">{format!("… and {more} more turns that ended differently")}</p> })}
    }
}

/// Turn by turn: how many differ, and for each listed its message as a word diff, whether its thoughts differ,
/// and the tool calls that differ.
fn turn_changes(a: i64, b: i64, t: TurnDiffs) -> impl IntoView {
    let summary = if t.compared == 0 {
        "No prompt turns on either side.".to_owned()
    } else if t.changed == 0 {
        format!("Every turn's assembled reply, thoughts and tool calls are the same ({} turns).", t.compared)
    } else {
        format!("{} of {} turns differ in their assembled reply, thoughts or tool calls.", t.changed, t.compared)
    };
    let left_out = (t.left_out > 0).then(|| format!(" {} turns past the bound were not compared.", t.left_out));
    let more = (t.changed as usize).saturating_sub(t.turns.len());
    view! {
        <h2>"turn by turn"</h2>
        <p id="compare-turn-summary">{summary}{left_out}</p>
        <div id="compare-turn-changes">{t.turns.into_iter().map(|c| turn_change(a, b, c)).collect_view()}</div>
        {(more > 0).then(|| view! { <p class="dim">{format!("… and {more} more turns")}</p> })}
    }
}

fn turn_change(a: i64, b: i64, c: TurnChange) -> impl IntoView {
    let link = |trace: i64, seq: Option<i64>, side: &str| match seq {
        Some(s) => view! { <a href=format!("/traces/{trace}?frame={s}")>{format!("{side} #{s}")}</a> }.into_any(),
        None => view! { <span class="dim">{format!("no such turn in {side}")}</span> }.into_any(),
    };
    let both = c.a_seq.is_some() && c.b_seq.is_some();
    let message = if !both {
        None
    } else if c.message_same {
        Some(view! { <p class="dim">"the same message"</p> }.into_any())
    } else {
        let cut = c.message_cut.then_some(" (the part kept of a longer message)");
        let runs = c
            .message
            .into_iter()
            .map(|op| match op.op {
                TextOpKind::Same => view! { <span>{op.text}</span> }.into_any(),
                TextOpKind::Removed => view! { <del>{op.text}</del> }.into_any(),
                TextOpKind::Added => view! { <ins>{op.text}</ins> }.into_any(),
                TextOpKind::LeftOut => view! { <span class="dim">{format!(" ({})", op.text)}</span> }.into_any(),
            })
            .collect_view();
        Some(
            view! {
                <p class="dim">{format!("message: {} → {} characters", c.a_chars, c.b_chars)}{cut}</p>
                <p class="word-diff">{runs}</p>
            }
            .into_any(),
        )
    };
    let thoughts = (both && !c.thought_same).then(|| view! { <p class="thoughts-differ">"thoughts differ"</p> });
    let brief = |t: Option<ToolBrief>| match t {
        None => "(none)".to_owned(),
        Some(t) => {
            let f = |x: Option<String>| x.unwrap_or_else(|| "–".to_owned());
            format!("{} [{}] {}", f(t.title), f(t.kind), f(t.status))
        }
    };
    let tools = (!c.tools.is_empty()).then(|| {
        view! {
            <table class="compare tools">
                <thead><tr><th>{format!("tool call ({} | {})", c.tools_a, c.tools_b)}</th><th>"a"</th><th>"b"</th></tr></thead>
                <tbody>
                    {c.tools.into_iter().map(|t| view! {
                        <tr><td class="num">{t.place}</td><td>{brief(t.a)}</td><td>{brief(t.b)}</td></tr>
                    }).collect_view()}
                </tbody>
            </table>
        }
    });
    view! {
        <section class="turn-change" data-session=c.session.clone() data-turn=c.turn>
            <h3>{format!("{} · turn {} ", c.session, c.turn)}{link(a, c.a_seq, "a")}" | "{link(b, c.b_seq, "b")}</h3>
            {message}
            {thoughts}
            {tools}
        </section>
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
