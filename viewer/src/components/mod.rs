//! What a trace view draws. Components read [`crate::state::TraceState`] from context and never fetch.
//!
//! # Layout
//! - [`diagram`]: the sequence diagram (lanes, windowed rows, busy spans, follow).
//! - [`detail`] and [`json`]: the selected frame.
//! - [`filters`]: the filter bar.
//! - [`timing`]: per-method table, histogram, slowest requests.
//! - [`header`]: title, counts, live badge, axis, tabs, follow, export.

pub mod detail;
pub mod diagram;
pub mod filters;
pub mod header;
pub mod json;
pub mod timing;

use crate::state::TraceState;
use leptos::prelude::*;

/// The state of the trace view this component is in.
pub fn trace_state() -> TraceState {
    expect_context::<TraceState>()
}
