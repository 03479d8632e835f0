//! `/`: every trace in the store, newest first, refreshed while the page is open.

use crate::api;
use crate::app::AppLink;
use crate::components::header::{status_badge, trace_duration, trace_name};
use crate::format;
use crate::route::Nav;
use acp_tee_shared::api::TraceSummary;
use leptos::prelude::*;
use std::time::Duration;

/// How often the list is refetched, so new and ending runs show.
const REFRESH: Duration = Duration::from_secs(3);

/// The trace list.
#[component]
pub fn TraceList() -> impl IntoView {
    let traces = LocalResource::new(api::traces);
    if let Ok(handle) = set_interval_with_handle(move || traces.refetch(), REFRESH) {
        on_cleanup(move || handle.clear());
    }
    // What the page shows, apart from the rows: refetches that change nothing redraw nothing.
    let state = Memo::new(move |_| match traces.get() {
        None => Err("Loading traces…".to_owned()),
        Some(Err(e)) => Err(e.0),
        Some(Ok(list)) => Ok(list),
    });
    let shape = Memo::new(move |_| state.with(|s| s.as_ref().map(Vec::is_empty).map_err(Clone::clone)));
    let body = move || match shape.get() {
        Err(msg) => {
            let failed = msg != "Loading traces…";
            view! { <div class="notice big" class:error=failed>{msg}</div> }.into_any()
        }
        Ok(true) => view! {
            <div class="notice big">
                "No traces in this store yet. Record one: " <code>"acp-tee -- my-agent acp"</code>
            </div>
        }
        .into_any(),
        Ok(false) => table(Signal::derive(move || state.get().unwrap_or_default())).into_any(),
    };
    view! {
        <div class="list-page">
            <header class="list-head">
                <h1>"acp-tee"</h1>
                <span class="sub">"recorded Agent Client Protocol traces"</span>
            </header>
            {body}
        </div>
    }
}

/// Rows are keyed by what they show, so a refresh only redraws traces that changed.
fn row_key(t: &TraceSummary) -> (i64, i64, i64, bool, Option<String>, i64) {
    (t.meta.id, t.meta.frame_count, t.meta.error_count, t.live, t.meta.ended_at.clone(), t.last_t_ns)
}

fn row(nav: Nav, t: TraceSummary) -> impl IntoView {
    let id = t.meta.id;
    let href = format!("/traces/{id}");
    let go = href.clone();
    let exit = match (t.meta.exit_code, t.meta.exit_signal) {
        (_, Some(sig)) => format!("signal {sig}"),
        (Some(code), None) => code.to_string(),
        (None, None) if t.live => String::new(),
        (None, None) => "–".to_owned(),
    };
    let name = trace_name(&t);
    view! {
        <tr class="trace-row" data-trace-id=id on:click=move |_| nav.go(&go)>
            <td class="num">{id}</td>
            <td class="when">{format::wall_clock(&t.meta.started_at)}</td>
            <td class="name"><AppLink href=href class="">{name}</AppLink></td>
            <td class="cmd"><code>{t.meta.command.join(" ")}</code></td>
            <td>{t.meta.mode.clone()}</td>
            <td class="num">{trace_duration(&t)}</td>
            <td class="num">{format::count(t.meta.frame_count)}</td>
            <td class="num" class:err=t.meta.error_count != 0>{format::count(t.meta.error_count)}</td>
            <td title=t.meta.end_reason.clone().unwrap_or_default()>{status_badge(&t)}</td>
            <td class="num">{exit}</td>
        </tr>
    }
}

fn table(list: Signal<Vec<TraceSummary>>) -> impl IntoView {
    let nav = expect_context::<Nav>();
    view! {
        <table id="traces">
            <thead>
                <tr>
                    <th>"id"</th><th>"started"</th><th>"name"</th><th>"command"</th><th>"mode"</th>
                    <th>"duration"</th><th>"frames"</th><th>"errors"</th><th>"status"</th><th>"exit"</th>
                </tr>
            </thead>
            <tbody>
                <For each=move || list.get() key=row_key children=move |t| row(nav, t) />
            </tbody>
        </table>
    }
}
