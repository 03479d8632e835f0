//! A refresh run at most once per interval: calls while one waits are folded into it, and one that comes
//! sooner than the interval after the last waits out the rest of it. The live views (sessions, requests,
//! the overview, the MCP family) refresh through one each.

use gloo_timers::future::TimeoutFuture;
use leptos::prelude::*;
use leptos::task::spawn_local;
use std::future::Future;

/// The state of one throttled refresh.
#[derive(Clone, Copy)]
pub struct Throttle {
    /// A refresh is waiting for its turn.
    due: StoredValue<bool>,
    /// When the last refresh began (`Date.now()`).
    last_ms: StoredValue<f64>,
    /// The shortest time between two refreshes, in milliseconds.
    gap_ms: f64,
}

impl Throttle {
    /// Nothing run yet; refreshes at least `gap_ms` apart.
    pub fn new(gap_ms: f64) -> Throttle {
        Throttle { due: StoredValue::new(false), last_ms: StoredValue::new(0.0), gap_ms }
    }

    /// Runs `work` once the interval since the last refresh has passed, unless a refresh waits already (it
    /// will do); nothing when the view is gone by then.
    pub fn run<W, F>(self, work: W)
    where
        W: FnOnce() -> F + 'static,
        F: Future<Output = ()> + 'static,
    {
        if self.due.get_value() {
            return;
        }
        self.due.set_value(true);
        spawn_local(async move {
            let since = js_sys::Date::now() - self.last_ms.get_value();
            let wait = (self.gap_ms - since).clamp(0.0, self.gap_ms);
            if wait > 0.0 {
                TimeoutFuture::new(wait as u32).await;
            }
            // The view may have gone while waiting.
            if self.due.try_set_value(false).is_some() {
                return;
            }
            self.ran();
            work().await;
        });
    }

    /// Notes a refresh begun now without the throttle (asked for directly): the next waits from it.
    pub fn ran(self) {
        self.last_ms.set_value(js_sys::Date::now());
    }
}
