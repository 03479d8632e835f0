//! Any address the app does not know, and a trace the store does not hold.

use crate::components::title::use_title;
use leptos::prelude::*;
use leptos_router::components::A;
use leptos_router::hooks::use_location;

/// An address that names nothing.
#[component]
pub fn NotFound() -> impl IntoView {
    let path = use_location().pathname.get_untracked();
    use_title("not found".to_owned());
    view! {
        <div class="not-found">
            <h1>"Not found"</h1>
            <p>{format!("Nothing here at {path}.")}</p>
            <A href="/" attr:class="back">"← all traces"</A>
        </div>
    }
}

/// A trace id the store does not hold (`/traces/999`).
#[component]
pub fn TraceNotFound(id: i64) -> impl IntoView {
    use_title(format!("trace {id} not found"));
    view! {
        <div class="not-found" id="trace-not-found">
            <h1>{format!("No trace {id}")}</h1>
            <p>"This store holds no trace with that id; it may be in another store (" <code>"--db"</code> ")."</p>
            <A href="/" attr:class="back">"← all traces"</A>
        </div>
    }
}
