//! The app shell: the router and its routes. Pages come from [`crate::pages`]; nothing here is imported
//! back by them.

use crate::pages::compare::Compare;
use crate::pages::not_found::NotFound;
use crate::pages::trace_list::TraceList;
use crate::pages::trace_view::TraceView;
use leptos::prelude::*;
use leptos_router::components::{Route, Router, Routes};
use leptos_router::hooks::use_params_map;
use leptos_router::path;

/// The whole app: `/` (and `/index.html`) is the trace list, `/traces/{id}` one trace,
/// `/compare/{a}/{b}` two traces compared, anything else is not found.
#[component]
pub fn App() -> impl IntoView {
    view! {
        <Router>
            <Routes fallback=|| view! { <NotFound /> }>
                <Route path=path!("/") view=TraceList />
                <Route path=path!("/index.html") view=TraceList />
                <Route path=path!("/traces/:id") view=TraceRoute />
                <Route path=path!("/compare/:a/:b") view=CompareRoute />
            </Routes>
        </Router>
    }
}

/// `/traces/:id`: a new trace view for each id (the router keeps a route's view when only its
/// parameters change).
#[component]
fn TraceRoute() -> impl IntoView {
    let params = use_params_map();
    let id = Memo::new(move |_| params.with(|p| p.get_str("id").and_then(|s| s.parse::<i64>().ok())));
    move || match id.get() {
        Some(id) => view! { <TraceView id=id /> }.into_any(),
        None => view! { <NotFound /> }.into_any(),
    }
}

/// `/compare/:a/:b`: trace `b` compared with trace `a`.
#[component]
fn CompareRoute() -> impl IntoView {
    let params = use_params_map();
    let ids = Memo::new(move |_| {
        params.with(|p| {
            let id = |k: &str| p.get_str(k).and_then(|s| s.parse::<i64>().ok());
            Some((id("a")?, id("b")?))
        })
    });
    move || match ids.get() {
        Some((a, b)) => view! { <Compare a=a b=b /> }.into_any(),
        None => view! { <NotFound /> }.into_any(),
    }
}
