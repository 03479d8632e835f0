//! What a trace view draws. Components read [`crate::state::TraceState`] from context and never fetch.
//!
//! # Layout
//! - [`diagram`]: the sequence diagram (lanes, windowed rows, busy spans, follow).
//! - [`overview`]: the strip above it: the whole trace's time, the rows in view marked; click or drag to go.
//! - [`detail`] and [`json`]: the selected frame; [`range`]: the selected range (the range tools' panel).
//! - [`filters`]: the filter bar.
//! - [`findings`]: the Findings tab: what the protocol checks found, filtered, linked to frames.
//! - [`timing`]: per-method table, histogram, slowest requests.
//! - [`requests`]: the Requests tab: one row per JSON-RPC request, sorted and paged by the server.
//! - [`session`]: the Session tab: open requests, sessions, turns as a conversation, tool calls, waterfall.
//! - [`header`]: title, counts, live badge, tabs, axis, follow, export.
//! - [`replay`]: the replay bar: play, pause, step, speed, a slider over the trace's time.
//! - [`keys`]: the keyboard; [`highlight`]: search words marked in text.
//! - [`summary`]: a trace's facts as text (also used by the trace list); [`title`]: the tab's title.

pub mod detail;
pub mod diagram;
pub mod filters;
pub mod findings;
pub mod header;
pub mod highlight;
pub mod json;
pub mod keys;
pub mod overview;
pub mod range;
pub mod replay;
pub mod requests;
pub mod session;
pub mod summary;
pub mod timing;
pub mod title;

use crate::state::TraceState;
use leptos::prelude::*;

/// The state of the trace view this component is in.
pub fn trace_state() -> TraceState {
    expect_context::<TraceState>()
}
