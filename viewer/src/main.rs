//! The browser viewer of acp-tee (Leptos, client-side only, built by trunk into `dist/`, served by
//! `acp-tee serve`). `main` only mounts the app.
//!
//! # Layout
//! - [`app`]: routes the address to a page; in-app links.
//! - [`route`]: path and query string <-> [`route::Route`] and [`route::ViewQuery`] (filters, axis, tab,
//!   selected frame); the URL is the source of truth for what a view shows.
//! - [`api`]: the typed client of `/api` (fetch and the live Server-Sent Events stream), returning the
//!   `acp-tee-shared` payload types.
//! - [`state`]: what a trace view knows and the effects that fetch it (pages in view, live frames,
//!   jumps); never draws.
//! - [`pages`] and [`components`]: what is drawn; never fetches (the trace list's resource aside).
//! - [`format`]: durations, offsets, times and counts as text.

mod api;
mod app;
mod components;
mod format;
mod pages;
mod route;
mod state;

fn main() {
    console_error_panic_hook::set_once();
    leptos::mount::mount_to_body(app::App);
}
