//! The requests in flight over the rows drawn (`/api/traces/{id}/in_flight`): sent above the first row
//! drawn and answered below it, or never. The diagram draws those whose answer is below the last row drawn
//! as busy bars across all rows drawn (see [`super::busy::busy_spans`]); the rows alone cannot tell them,
//! as neither end is fetched inside a long turn. Asked again when the first row drawn changes (once the
//! scrolling pauses for [`SETTLE_MS`]) and when a live trace grows.

use super::TraceState;
use crate::api;
use crate::view_query::Tab;
use gloo_timers::future::TimeoutFuture;
use leptos::prelude::*;
use leptos::task::spawn_local;

/// How long the first row drawn must stay before the requests in flight over it are asked for.
pub const SETTLE_MS: u32 = 60;

/// Starts asking for the requests in flight over the first row drawn while the Diagram tab is open; the
/// last answer is kept in `st.in_flight` (a newer question's answer replaces an older one's, never the
/// reverse).
pub fn start(st: TraceState) {
    let asked = StoredValue::new(0u64);
    let first = Memo::new(move |_| {
        if st.query.with(|q| q.tab) != Tab::Diagram {
            return None;
        }
        let rows = st.rows_in_view.get();
        st.window.with(|w| w.get(rows.start).map(|f| f.seq))
    });
    Effect::new(move |_| {
        let Some(at) = first.get() else { return };
        // A live trace's new frames answer requests: ask again as it grows.
        st.trace.with(|t| t.meta.frame_count);
        let generation = asked.get_value() + 1;
        asked.set_value(generation);
        spawn_local(async move {
            TimeoutFuture::new(SETTLE_MS).await;
            if asked.try_get_value() != Some(generation) {
                return;
            }
            match api::in_flight(st.id, at).await {
                Ok(answer) if asked.try_get_value() == Some(generation) => {
                    if st.in_flight.with_untracked(|old| old.as_ref() != Some(&answer)) {
                        st.in_flight.set(Some(answer));
                    }
                }
                Ok(_) => {}
                // The bars stay as they were; the header says when the server is gone.
                Err(e) => leptos::logging::warn!("requests in flight: {e}"),
            }
        });
    });
}
