//! `/traces/{id}`: the trace is fetched first; a trace the store does not hold is one not-found page, a
//! server that cannot be reached one error with a retry. Then: header, filters, the diagram with the detail
//! panel, the timing tab, the session tab, the findings tab or the request table.

use super::not_found::TraceNotFound;
use crate::api::{self, ApiFailure};
use crate::components::detail::Detail;
use crate::components::diagram::Diagram;
use crate::components::filters::FilterBar;
use crate::components::findings::FindingsTab;
use crate::components::header::TraceHeader;
use crate::components::keys::trace_keys;
use crate::components::replay::ReplayBar;
use crate::components::requests::RequestsTab;
use crate::components::session::SessionTab;
use crate::components::timing::Timing;
use crate::components::title::set_title;
use crate::state::{loader, TraceState};
use crate::view_query::{Tab, ViewUrl};
use acp_tee_shared::api::TraceSummary;
use leptos::prelude::*;
use leptos_router::components::A;

/// One trace, once the server says it exists.
#[component]
pub fn TraceView(id: i64) -> impl IntoView {
    let attempt = RwSignal::new(0u32);
    let trace = LocalResource::new(move || {
        attempt.track();
        api::trace(id)
    });
    move || match trace.get() {
        None => {
            set_title(&format!("trace {id}"));
            view! { <div class="notice big">{format!("Loading trace {id}…")}</div> }.into_any()
        }
        Some(Err(e)) if e.is_not_found() => view! { <TraceNotFound id=id /> }.into_any(),
        Some(Err(e)) => unreachable_view(id, e, attempt).into_any(),
        Some(Ok(t)) => view! { <TraceScreen trace=t /> }.into_any(),
    }
}

fn unreachable_view(id: i64, e: ApiFailure, attempt: RwSignal<u32>) -> impl IntoView {
    set_title(&format!("trace {id}"));
    view! {
        <div class="not-found" id="trace-unreachable">
            <h1>{format!("Trace {id} cannot be shown")}</h1>
            <p class="err">{e.message}</p>
            <button on:click=move |_| attempt.update(|n| *n += 1)>"Try again"</button>
            " "
            <A href="/" attr:class="back">"← all traces"</A>
        </div>
    }
}

/// The screen of a trace that exists.
#[component]
fn TraceScreen(trace: TraceSummary) -> impl IntoView {
    let st = TraceState::new(trace, ViewUrl::new());
    provide_context(st);
    loader::start(st);
    trace_keys(st);
    Effect::new(move |_| {
        let name = st.trace.with(crate::components::summary::trace_name);
        set_title(&format!("{name} · trace {}", st.id));
    });
    let tab = Memo::new(move |_| st.query.with(|q| q.tab));
    // The diagram and timing stay mounted so switching back keeps the diagram's scroll position; the
    // session tab is drawn while open (it fetches nothing until then).
    view! {
        <div class="trace-view">
            <TraceHeader />
            <ReplayBar />
            <div class="tab-diagram" class:hidden=move || tab.get() != Tab::Diagram>
                <FilterBar />
                <div class="split">
                    <Diagram />
                    <Detail />
                </div>
            </div>
            <div class="tab-timing" class:hidden=move || tab.get() != Tab::Timing>
                <Timing />
            </div>
            <Show when=move || tab.get() == Tab::Session>
                <div class="tab-session"><SessionTab /></div>
            </Show>
            <Show when=move || tab.get() == Tab::Findings>
                <div class="tab-findings"><FindingsTab /></div>
            </Show>
            <Show when=move || tab.get() == Tab::Requests>
                <div class="tab-requests"><RequestsTab /></div>
            </Show>
        </div>
    }
}
