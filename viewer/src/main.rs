//! The browser viewer of acp-tee (Leptos, client-side only, built by trunk into `dist/`, served by
//! `acp-tee serve`). `main` only mounts the app.
//!
//! # Layout
//! Imports point one way: `app` -> `pages` -> `components` -> `state` -> `api`, `view_query`, `format`.
//! - [`app`]: the router (leptos_router) and its routes.
//! - [`view_query`]: the trace view's URL query (filters, axis, tab, selected frame, timing method) as
//!   typed values, read from and written to the router; the URL is the source of truth for what a view
//!   shows.
//! - [`api`]: the typed client of `/api` (fetch and the live Server-Sent Events stream), returning the
//!   `acp-tee-shared` payload types.
//! - [`state`]: what a trace view knows and the effects that fetch it (pages in view, live frames,
//!   jumps); never draws.
//! - [`pages`] and [`components`]: what is drawn; never fetches (the trace list's and the trace's own
//!   resources aside).
//! - [`format`]: durations, offsets, times and counts as text.

mod api;
mod app;
mod components;
mod format;
mod pages;
mod state;
mod view_query;

fn main() {
    console_error_panic_hook::set_once();
    leptos::mount::mount_to_body(app::App);
}
