//! The trace view's header: name, command, counts, live badge, and the toolbar (tabs, axis, follow, export).

use super::trace_state;
use crate::api::export_url;
use crate::app::AppLink;
use crate::format;
use crate::route::{Axis, Tab};
use acp_tee_shared::api::TraceSummary;
use leptos::prelude::*;

/// A trace's display name: its `--name`, else the agent program's file name.
pub fn trace_name(t: &TraceSummary) -> String {
    t.meta.name.clone().unwrap_or_else(|| {
        let program = t.meta.command.first().map(String::as_str).unwrap_or("trace");
        program.rsplit('/').next().unwrap_or(program).to_owned()
    })
}

/// How long the run took (or has been going, by its last frame).
pub fn trace_duration(t: &TraceSummary) -> String {
    match t.meta.ended_at.as_deref().and_then(|end| format::span_ms(&t.meta.started_at, end)) {
        Some(ms) => format::duration_ns((ms * 1e6) as i64),
        None => format::duration_ns(t.last_t_ns),
    }
}

/// The live/ended badge.
pub fn status_badge(t: &TraceSummary) -> AnyView {
    if t.live {
        view! { <span class="badge badge-live">"● live"</span> }.into_any()
    } else {
        view! { <span class="badge badge-ended">"ended"</span> }.into_any()
    }
}

fn plural(n: i64, noun: &str) -> String {
    format!("{} {noun}{}", format::count(n), if n == 1 { "" } else { "s" })
}

fn summary_line(t: &TraceSummary) -> impl IntoView {
    let exit = match (t.meta.exit_code, t.meta.exit_signal) {
        (_, Some(sig)) => format!("signal {sig}"),
        (Some(code), None) => format!("exit {code}"),
        (None, None) => String::new(),
    };
    let missing = (t.meta.missing_frames > 0).then(|| {
        view! { <span class="warn">{format!("{} frames missing", format::count(t.meta.missing_frames))}</span> }
    });
    view! {
        <div class="summary">
            <span>{plural(t.meta.frame_count, "frame")}</span>
            <span class:err=t.meta.error_count != 0>{plural(t.meta.error_count, "error")}</span>
            <span>{trace_duration(t)}</span>
            <span>{format::wall_clock(&t.meta.started_at)}</span>
            <span>{t.meta.mode.clone()}</span>
            {(!exit.is_empty()).then(|| view! { <span>{exit}</span> })}
            {t.meta.end_reason.clone().map(|r| view! { <span class="reason">{r}</span> })}
            {t.imported_from.clone().map(|i| view! { <span class="imported">{format!("imported: {i}")}</span> })}
            {missing}
        </div>
    }
}

/// The header of a trace view.
#[component]
pub fn TraceHeader() -> impl IntoView {
    let st = trace_state();
    let head = move || match st.summary() {
        Some(t) => view! {
            <div class="title-line">
                <h1 id="trace-title">{trace_name(&t)}</h1>
                {status_badge(&t)}
                <code class="cmd" title=t.meta.cwd.clone().unwrap_or_default()>{t.meta.command.join(" ")}</code>
            </div>
            {summary_line(&t)}
        }
        .into_any(),
        None => {
            view! { <div class="title-line"><h1 id="trace-title">{format!("trace {}", st.id)}</h1></div> }.into_any()
        }
    };
    view! {
        <header class="trace-head">
            <AppLink href="/".to_owned() class="back">"← all traces"</AppLink>
            {head}
            <Toolbar />
        </header>
    }
}

#[component]
fn Toolbar() -> impl IntoView {
    let st = trace_state();
    let tab = Memo::new(move |_| st.query.with(|q| q.tab));
    let axis = Memo::new(move |_| st.query.with(|q| q.axis));
    let set_tab = move |t: Tab| st.nav.update_query(true, |q| q.tab = t);
    let set_axis = move |a: Axis| st.nav.update_query(true, |q| q.axis = a);
    let id = st.id;
    view! {
        <div class="toolbar">
            <div class="seg">
                <button id="tab-diagram" class:on=move || tab.get() == Tab::Diagram on:click=move |_| set_tab(Tab::Diagram)>"Diagram"</button>
                <button id="tab-timing" class:on=move || tab.get() == Tab::Timing on:click=move |_| set_tab(Tab::Timing)>"Timing"</button>
            </div>
            <div class="seg" title="vertical axis">
                <button id="axis-rows" class:on=move || axis.get() == Axis::Rows on:click=move |_| set_axis(Axis::Rows)>"rows"</button>
                <button id="axis-time" class:on=move || axis.get() == Axis::Time on:click=move |_| set_axis(Axis::Time)>"time"</button>
            </div>
            <label class="check" class:dim=move || !st.is_live() title="keep the newest frames in view while recording">
                <input id="follow" type="checkbox" prop:checked=move || st.follow.get()
                    on:change=move |ev| st.follow.set(event_target_checked(&ev)) />
                "follow"
            </label>
            <span class="grow"></span>
            // Every export is redacted (the server's default rules mask secrets).
            <span class="export-label" title="secrets are masked">"Export (redacted):"</span>
            <a id="export-json" class="button" href=export_url(id, "json") download=format!("acp-tee-trace-{id}.json")
                title="acp-tee-trace JSON document">"JSON"</a>
            <a id="export-ndjson" class="button" href=export_url(id, "ndjson") download=format!("acp-tee-trace-{id}.ndjson")
                title="acp-tee-trace NDJSON">"NDJSON"</a>
            <a id="export-jsons" class="button" href=export_url(id, "jsons") download=format!("acp-tee-trace-{id}.jsons")
                title="the conductor's .jsons, for agent-client-protocol-trace-viewer">".jsons"</a>
            <a id="export-perfetto" class="button" href=export_url(id, "perfetto") download=format!("acp-tee-trace-{id}.perfetto.json")
                title="Chrome trace-event JSON for ui.perfetto.dev">"Perfetto"</a>
        </div>
    }
}
