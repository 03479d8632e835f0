//! The Findings tab: what the protocol checks (`acp-tee check`) found in the trace, filtered by code and
//! severity (both in the URL), each finding linked to the frames it names in the diagram.

use super::session::frame_link;
use super::summary::plural;
use super::trace_state;
use acp_tee_shared::check::{Finding, Severity, TraceFindings};
use leptos::prelude::*;

/// The Findings tab's content.
#[component]
pub fn FindingsTab() -> impl IntoView {
    let st = trace_state();
    let report = st.findings.report;
    let code = Memo::new(move |_| st.query.with(|q| q.finding_code.clone()));
    let min = Memo::new(move |_| st.query.with(|q| q.finding_severity).unwrap_or(Severity::Info));
    let body = move || match report.get() {
        None => view! { <div class="notice">"Checking the trace…"</div> }.into_any(),
        Some(Err(e)) => view! { <div class="notice error">{e.message}</div> }.into_any(),
        Some(Ok(r)) => findings_view(r, code, min).into_any(),
    };
    view! {
        <div class="findings-tab">
            <div class="filters">
                <select id="finding-severity" title="least severity shown" on:change=move |ev| {
                    let v = event_target_value(&ev);
                    st.url.update(true, |q| { q.accept("finding_severity"); q.finding_severity = v.parse().ok(); });
                }>
                    <option value="" selected=move || min.get() == Severity::Info>"any severity"</option>
                    <option value="warning" selected=move || min.get() == Severity::Warning>"warnings and errors"</option>
                    <option value="error" selected=move || min.get() == Severity::Error>"errors"</option>
                </select>
                <select id="finding-code" title="code" on:change=move |ev| {
                    let v = event_target_value(&ev);
                    st.url.update(true, |q| { q.accept("finding_code"); q.finding_code = (!v.is_empty()).then_some(v); });
                }>
                    <option value="" selected=move || code.with(Option::is_none)>"any code"</option>
                    {move || report.with(|r| match r {
                        Some(Ok(r)) => r.by_code.iter().map(|c| {
                            let value = c.code.clone();
                            let on = {
                                let value = value.clone();
                                move || code.with(|code| code.as_deref() == Some(value.as_str()))
                            };
                            view! { <option value=value selected=on>{format!("{} ({})", c.code, c.count)}</option> }
                        }).collect_view().into_any(),
                        _ => ().into_any(),
                    })}
                </select>
                <button id="findings-refresh" title="check the frames stored since"
                    on:click=move |_| st.findings.load(st.id)>"check again"</button>
            </div>
            {body}
        </div>
    }
}

/// The summary line and the list, under the filters.
fn findings_view(r: TraceFindings, code: Memo<Option<String>>, min: Memo<Severity>) -> impl IntoView {
    let st = trace_state();
    let c = r.counts;
    let summary = format!(
        "{}, {}, {} in {}{}",
        plural(c.errors as i64, "error"),
        plural(c.warnings as i64, "warning"),
        plural(c.infos as i64, "info"),
        plural(r.frames as i64, "frame"),
        if r.live { " so far (the trace is being recorded)" } else { "" }
    );
    let left_out = (r.left_out > 0).then(|| format!("{} more are counted but not listed.", r.left_out));
    let findings = r.findings;
    let shown = move || {
        let wanted = |f: &&Finding| f.severity >= min.get() && code.with(|c| c.as_deref().is_none_or(|c| c == f.code));
        let rows: Vec<_> = findings.iter().filter(wanted).map(|f| finding_row(st, f)).collect();
        if rows.is_empty() {
            view! { <div id="no-findings" class="notice">"No finding here."</div> }.into_any()
        } else {
            view! { <ul id="findings" class="findings">{rows}</ul> }.into_any()
        }
    };
    view! {
        <div id="findings-summary" class="notice">{summary}" "{left_out}</div>
        {shown}
    }
}

/// One finding: severity, code, sentence, links to its frames.
fn finding_row(st: crate::state::TraceState, f: &Finding) -> impl IntoView {
    let links = f.seqs.iter().map(|&seq| view! { " " {frame_link(st, seq, format!("#{seq}"))} }).collect_view();
    view! {
        <li class=format!("finding sev-{}", f.severity) data-code=f.code.clone() data-seq=f.seq().unwrap_or(0)>
            <span class="sev">{f.severity.as_str()}</span>
            " "
            <code class="code">{f.code.clone()}</code>
            " "
            <span class="msg">{f.message.clone()}</span>
            <span class="frames">{links}</span>
        </li>
    }
}
