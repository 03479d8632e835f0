//! `/traces/{id}`: header, filters, the diagram with the detail panel, or the timing tab.

use crate::components::detail::Detail;
use crate::components::diagram::Diagram;
use crate::components::filters::FilterBar;
use crate::components::header::TraceHeader;
use crate::components::timing::Timing;
use crate::route::{Nav, Tab};
use crate::state::{loader, TraceState};
use leptos::prelude::*;

/// One trace.
#[component]
pub fn TraceView(id: i64) -> impl IntoView {
    let st = TraceState::new(id, expect_context::<Nav>());
    provide_context(st);
    loader::start(st);
    let tab = Memo::new(move |_| st.query.with(|q| q.tab));
    let failed = move || {
        st.trace.with(|t| match t {
            Some(Err(e)) => Some(view! { <div class="notice error big">{e.0.clone()}</div> }),
            _ => None,
        })
    };
    // Both tabs stay mounted so switching back keeps the diagram's scroll position.
    view! {
        <div class="trace-view">
            <TraceHeader />
            {failed}
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
        </div>
    }
}
