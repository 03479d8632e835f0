//! The filter bar: direction, kind, method (with counts), session, errors, slower than, full-text search.
//! Every change goes to the URL; the loader refetches from there.

use super::trace_state;
use crate::format;
use crate::route::Filters;
use crate::state::TraceState;
use acp_tee_shared::{Direction, FrameKind};
use gloo_timers::future::TimeoutFuture;
use leptos::prelude::*;
use leptos::task::spawn_local;

/// Time after the last keystroke before a search applies by itself.
const SEARCH_DEBOUNCE_MS: u32 = 400;

fn set_filters(st: TraceState, change: impl FnOnce(&mut Filters)) {
    st.nav.update_query(true, |q| change(&mut q.filters));
}

fn non_empty(s: String) -> Option<String> {
    let t = s.trim();
    (!t.is_empty()).then(|| t.to_owned())
}

/// The filter bar above the diagram.
#[component]
pub fn FilterBar() -> impl IntoView {
    let st = trace_state();
    let f = Memo::new(move |_| st.query.with(|q| q.filters.clone()));
    let matching = move || {
        let (loaded, total) = st.window.with(|w| (w.is_loaded(), w.total() as i64));
        loaded.then(|| format!("{} frames", format::count(total)))
    };
    view! {
        <div class="filters">
            <select id="filter-dir" title="direction" on:change=move |ev| {
                let v = event_target_value(&ev);
                set_filters(st, |f| f.dir = v.parse().ok());
            }>
                <option value="" selected=move || f.with(|f| f.dir.is_none())>"any direction"</option>
                {Direction::ALL
                    .map(|d| view! { <option value=d.as_str() selected=move || f.with(|f| f.dir == Some(d))>{d.as_str()}</option> })
                    .collect_view()}
            </select>
            <select id="filter-kind" title="kind" on:change=move |ev| {
                let v = event_target_value(&ev);
                set_filters(st, |f| f.kind = v.parse().ok());
            }>
                <option value="" selected=move || f.with(|f| f.kind.is_none())>"any kind"</option>
                {FrameKind::ALL
                    .map(|k| view! { <option value=k.as_str() selected=move || f.with(|f| f.kind == Some(k))>{k.as_str()}</option> })
                    .collect_view()}
            </select>
            <MethodSelect filters=f />
            <input id="filter-session" type="text" placeholder="session id" prop:value=move || f.with(|f| f.session.clone().unwrap_or_default())
                on:change=move |ev| {
                    let v = non_empty(event_target_value(&ev));
                    set_filters(st, |f| f.session = v);
                } />
            <label class="check">
                <input id="filter-errors" type="checkbox" prop:checked=move || f.with(|f| f.errors)
                    on:change=move |ev| {
                        let on = event_target_checked(&ev);
                        set_filters(st, |f| f.errors = on);
                    } />
                "errors only"
            </label>
            <label class="slower">
                "slower than"
                <input id="filter-min-latency" type="number" min="0" step="any" placeholder="ms"
                    prop:value=move || f.with(|f| f.min_latency_ms.map(|m| m.to_string()).unwrap_or_default())
                    on:change=move |ev| {
                        let v = event_target_value(&ev).trim().parse::<f64>().ok().filter(|m| m.is_finite() && *m >= 0.0);
                        set_filters(st, |f| f.min_latency_ms = v);
                    } />
                "ms"
            </label>
            <SearchBox filters=f />
            <span class="matching">{matching}</span>
        </div>
    }
}

/// Methods from the trace's stats with their counts; the current filter stays listed even before stats load.
#[component]
fn MethodSelect(filters: Memo<Filters>) -> impl IntoView {
    let st = trace_state();
    let options = move || {
        let current = filters.with(|f| f.method.clone());
        let mut methods: Vec<(String, Option<i64>)> = st.stats.with(|s| match s {
            Some(Ok(stats)) => stats.methods.iter().map(|m| (m.method.clone(), Some(m.count))).collect(),
            _ => Vec::new(),
        });
        if let Some(c) = &current {
            if !methods.iter().any(|(m, _)| m == c) {
                methods.push((c.clone(), None));
            }
        }
        methods
            .into_iter()
            .map(|(m, count)| {
                let text = count.map_or(m.clone(), |n| format!("{m} ({n})"));
                let selected = current.as_ref() == Some(&m);
                view! { <option value=m selected=selected>{text}</option> }
            })
            .collect_view()
    };
    view! {
        <select id="filter-method" title="method" on:change=move |ev| {
            let v = non_empty(event_target_value(&ev));
            set_filters(st, |f| f.method = v);
        }>
            <option value="" selected=move || filters.with(|f| f.method.is_none())>"any method"</option>
            {options}
        </select>
    }
}

/// Full-text search: applies on Enter, or by itself shortly after typing stops.
#[component]
fn SearchBox(filters: Memo<Filters>) -> impl IntoView {
    let st = trace_state();
    let typed = StoredValue::new(0u64);
    let apply = move |text: String| {
        let q = non_empty(text);
        if st.query.with_untracked(|v| v.filters.q != q) {
            set_filters(st, |f| f.q = q);
        }
    };
    view! {
        <input id="search" type="search" placeholder="search payloads…"
            prop:value=move || filters.with(|f| f.q.clone().unwrap_or_default())
            on:keydown=move |ev| {
                if ev.key() == "Enter" {
                    typed.update_value(|n| *n += 1);
                    apply(event_target_value(&ev));
                }
            }
            on:input=move |ev| {
                let text = event_target_value(&ev);
                typed.update_value(|n| *n += 1);
                let mine = typed.get_value();
                spawn_local(async move {
                    TimeoutFuture::new(SEARCH_DEBOUNCE_MS).await;
                    if typed.try_get_value() == Some(mine) {
                        apply(text);
                    }
                });
            } />
    }
}
