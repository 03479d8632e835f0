//! The app shell: routes the address to a page and offers links that navigate without reloading.

use crate::pages::trace_list::TraceList;
use crate::pages::trace_view::TraceView;
use crate::route::{Nav, Route};
use leptos::ev::MouseEvent;
use leptos::prelude::*;

/// The whole app.
#[component]
pub fn App() -> impl IntoView {
    let nav = Nav::install();
    provide_context(nav);
    // Only a change of path swaps the page; query changes stay within it.
    let route = Memo::new(move |_| nav.route());
    move || match route.get() {
        Route::List => view! { <TraceList /> }.into_any(),
        Route::Trace(id) => view! { <TraceView id=id /> }.into_any(),
        Route::NotFound(path) => view! {
            <div class="notice error big">
                {format!("Nothing here at {path}. ")}
                <AppLink href="/".to_owned() class="">"See all traces"</AppLink>
            </div>
        }
        .into_any(),
    }
}

/// A link inside the app: a plain click navigates in place (history entry, no reload); modified clicks
/// (new tab, ...) are left to the browser.
#[component]
pub fn AppLink(href: String, class: &'static str, children: Children) -> impl IntoView {
    let nav = expect_context::<Nav>();
    let target = href.clone();
    let on_click = move |ev: MouseEvent| {
        if ev.button() != 0 || ev.ctrl_key() || ev.meta_key() || ev.shift_key() || ev.alt_key() {
            return;
        }
        ev.prevent_default();
        ev.stop_propagation();
        nav.go(&target);
    };
    view! { <a href=href class=class on:click=on_click>{children()}</a> }
}
