//! The filter bar: direction, kind, method (with counts), session (with the sessions seen), errors, slower
//! than, full-text search; and, apart, find, which filters nothing. Every change goes to the URL; the loader
//! refetches from there.
//!
//! The three text fields behave alike: they apply a short pause after typing stops, or at once on Enter,
//! and replace the history entry rather than add one per pause. A value the view cannot use is kept,
//! marked invalid, and said to be ignored.

use super::summary::plural;
use super::trace_state;
use crate::state::find::{self, Found};
use crate::state::TraceState;
use crate::view_query::{Filters, ViewQuery};
use acp_tee_shared::{Direction, FrameKind};
use gloo_timers::future::TimeoutFuture;
use leptos::prelude::*;
use leptos::task::spawn_local;
use std::collections::BTreeSet;

/// Time after the last keystroke before a text field applies by itself.
const TYPING_DEBOUNCE_MS: u32 = 400;
/// Most session ids offered as suggestions.
const MAX_SESSION_SUGGESTIONS: usize = 50;
/// Most fetched frames looked at for session ids.
const SESSION_SCAN: usize = 5_000;
/// The query keys of the filters (what "Clear filters" clears).
pub const FILTER_KEYS: [&str; 9] = ["dir", "kind", "method", "session", "errors", "min_latency_ms", "q", "from", "to"];

fn set_filters(st: TraceState, change: impl FnOnce(&mut Filters)) {
    st.url.update(true, |q| change(&mut q.filters));
}

/// The filter bar above the diagram.
#[component]
pub fn FilterBar() -> impl IntoView {
    let st = trace_state();
    let f = Memo::new(move |_| st.query.with(|q| q.filters.clone()));
    let matching = move || {
        let (loaded, total) = st.window.with(|w| (w.is_loaded(), w.total() as i64));
        loaded.then(|| plural(total, "frame"))
    };
    let rejected = move || {
        st.query.with(|q| {
            q.rejected
                .iter()
                .map(|r| {
                    view! {
                        <li>{format!("{}={} is not {}; ignored", r.key, r.value, r.expected)}</li>
                    }
                })
                .collect_view()
        })
    };
    let any_rejected = move || st.query.with(|q| !q.rejected.is_empty());
    view! {
        <div class="filters">
            <select id="filter-dir" title="direction" on:change=move |ev| {
                let v = event_target_value(&ev);
                st.url.update(true, |q| { q.accept("dir"); q.filters.dir = v.parse().ok(); });
            }>
                <option value="" selected=move || f.with(|f| f.dir.is_none())>"any direction"</option>
                {Direction::ALL
                    .map(|d| view! { <option value=d.as_str() selected=move || f.with(|f| f.dir == Some(d))>{d.as_str()}</option> })
                    .collect_view()}
            </select>
            <select id="filter-kind" title="kind" on:change=move |ev| {
                let v = event_target_value(&ev);
                st.url.update(true, |q| { q.accept("kind"); q.filters.kind = v.parse().ok(); });
            }>
                <option value="" selected=move || f.with(|f| f.kind.is_none())>"any kind"</option>
                {FrameKind::ALL
                    .map(|k| view! { <option value=k.as_str() selected=move || f.with(|f| f.kind == Some(k))>{k.as_str()}</option> })
                    .collect_view()}
            </select>
            <MethodSelect filters=f />
            <TextFilter id="filter-session" key="session" placeholder="session id" list="session-ids" />
            <SessionSuggestions />
            <label class="check">
                <input id="filter-errors" type="checkbox" prop:checked=move || f.with(|f| f.errors)
                    on:change=move |ev| {
                        let on = event_target_checked(&ev);
                        st.url.update(true, |q| { q.accept("errors"); q.filters.errors = on; });
                    } />
                "errors only"
            </label>
            <label class="slower">
                "slower than"
                <TextFilter id="filter-min-latency" key="min_latency_ms" placeholder="ms" list="" />
                "ms"
            </label>
            <TextFilter id="search" key="q" placeholder="filter payloads…  ( / )" list="" />
            <FindField />
            <RangeFilter filters=f />
            <span class="matching">{matching}</span>
            <ul id="rejected" class="rejected" class:hidden=move || !any_rejected()>{rejected}</ul>
        </div>
    }
}

/// The range of seqs filtered to (`from`, `to`, set by the range panel's "Filter to it"), with a ✕ that
/// drops it; nothing when the view is not cut to a range.
#[component]
fn RangeFilter(filters: Memo<Filters>) -> impl IntoView {
    let st = trace_state();
    move || {
        let text = match filters.with(|f| (f.from, f.to)) {
            (Some(a), Some(b)) => format!("frames #{a}–#{b}"),
            (Some(a), None) => format!("frames from #{a}"),
            (None, Some(b)) => format!("frames up to #{b}"),
            (None, None) => return None,
        };
        let drop_range = move |_| {
            st.url.update(true, |q| {
                q.accept("from");
                q.accept("to");
                (q.filters.from, q.filters.to) = (None, None);
            })
        };
        Some(view! {
            <span id="filter-range" class="range-chip" title="only the frames of this range show (from, to)">
                {text}
                <button class="link" aria-label="show every frame, not only the range" title="show every frame" on:click=drop_range>"✕"</button>
            </span>
        })
    }
}

/// The text of a key as the URL has it: the rejected value, else the filter's.
fn shown_text(q: &ViewQuery, key: &str) -> String {
    if let Some(r) = q.rejected(key) {
        return r.value.clone();
    }
    let f = &q.filters;
    match key {
        "session" => f.session.clone(),
        "min_latency_ms" => f.min_latency_ms.map(|m| m.to_string()),
        "q" => f.q.clone(),
        _ => None,
    }
    .unwrap_or_default()
}

/// A text field bound to one query key: applies after a pause in typing or on Enter, replacing the history
/// entry; marked invalid while the URL holds a value it cannot use.
#[component]
fn TextFilter(id: &'static str, key: &'static str, placeholder: &'static str, list: &'static str) -> impl IntoView {
    let st = trace_state();
    let typed = StoredValue::new(0u64);
    let apply = move |text: String| {
        st.url.update(false, |q| q.set_typed(key, &text));
    };
    // The field follows the URL (back, forward, "Clear filters"), but never rewrites what is being typed
    // when it only differs by surrounding spaces.
    let input_ref = NodeRef::<leptos::html::Input>::new();
    Effect::new(move |_| {
        let want = st.query.with(|q| shown_text(q, key));
        if let Some(el) = input_ref.get() {
            if el.value().trim() != want.trim() {
                el.set_value(&want);
            }
        }
    });
    let invalid = move || st.query.with(|q| q.rejected(key).is_some());
    let title = move || {
        st.query.with(|q| match q.rejected(key) {
            Some(r) => format!("not {}; ignored", r.expected),
            None => placeholder.trim_end_matches('…').to_owned(),
        })
    };
    view! {
        <input id=id type=if key == "q" { "search" } else { "text" } placeholder=placeholder
            list=(!list.is_empty()).then_some(list)
            inputmode=(key == "min_latency_ms").then_some("decimal")
            class:invalid=invalid aria-invalid=move || invalid().to_string() title=title
            node_ref=input_ref
            on:keydown=move |ev| {
                if ev.key() == "Enter" {
                    typed.update_value(|n| *n += 1);
                    apply(event_target_value(&ev));
                }
            }
            on:change=move |ev| {
                typed.update_value(|n| *n += 1);
                apply(event_target_value(&ev));
            }
            on:input=move |ev| {
                let text = event_target_value(&ev);
                typed.update_value(|n| *n += 1);
                let mine = typed.get_value();
                spawn_local(async move {
                    TimeoutFuture::new(TYPING_DEBOUNCE_MS).await;
                    if typed.try_get_value() == Some(mine) {
                        apply(text);
                    }
                });
            } />
    }
}

/// Find, beside the filters: Enter finds the next frame holding the words, shift+Enter the previous one
/// (or the arrow buttons); every frame stays drawn. The counter says which match of how many.
#[component]
fn FindField() -> impl IntoView {
    let st = trace_state();
    let input_ref = NodeRef::<leptos::html::Input>::new();
    // The field follows the URL (back, forward, a link with `find=`).
    Effect::new(move |_| {
        let want = st.query.with(|q| q.find.clone().unwrap_or_default());
        if let Some(el) = input_ref.get() {
            if el.value().trim() != want.trim() {
                el.set_value(&want);
            }
        }
    });
    let go = move |forward: bool| {
        let words = input_ref.get_untracked().map(|el| el.value()).unwrap_or_default();
        find::step(st, words, forward);
    };
    let status = move || {
        let current = st.query.with(|q| q.find.clone())?;
        st.find.found.with(|found| {
            let (_, found) = found.as_ref().filter(|(words, _)| *words == current)?;
            Some(match found {
                Found::Looking => ("find-status", "finding…".to_owned()),
                Found::Step(step, _) if step.seq.is_none() => ("find-status none", find::counter(step, true)),
                Found::Step(step, forward) => ("find-status", find::counter(step, *forward)),
                Found::Failed(e) => ("find-status err", e.message.clone()),
            })
        })
    };
    view! {
        <span class="find" role="search" title="find: every frame stays; Enter goes to the next match, shift+Enter to the previous one">
            <input id="find" type="search" placeholder="find…  ( f )" aria-label="find in frames" node_ref=input_ref
                on:keydown=move |ev| {
                    if ev.key() == "Enter" {
                        ev.prevent_default();
                        go(!ev.shift_key());
                    }
                } />
            <button id="find-prev" title="previous match (shift+Enter)" on:click=move |_| go(false)>"↑"</button>
            <button id="find-next" title="next match (Enter)" on:click=move |_| go(true)>"↓"</button>
            <span id="find-status" role="status" class=move || status().map_or("find-status", |(c, _)| c)>
                {move || status().map(|(_, text)| text)}
            </span>
        </span>
    }
}

/// Session ids seen in the frames fetched so far, offered while typing a session filter.
#[component]
fn SessionSuggestions() -> impl IntoView {
    let st = trace_state();
    let ids = Memo::new(move |_| {
        st.window.with(|w| {
            let mut seen = BTreeSet::new();
            for f in w.fetched().take(SESSION_SCAN) {
                if let Some(s) = f.session_id.as_ref().filter(|s| !seen.contains(*s)) {
                    seen.insert(s.clone());
                    if seen.len() >= MAX_SESSION_SUGGESTIONS {
                        break;
                    }
                }
            }
            seen.into_iter().collect::<Vec<_>>()
        })
    });
    view! {
        <datalist id="session-ids">
            {move || ids.get().into_iter().map(|s| view! { <option value=s></option> }).collect_view()}
        </datalist>
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
                view! { <option value=m.clone() title=m selected=selected>{text}</option> }
            })
            .collect_view()
    };
    let title = move || filters.with(|f| f.method.clone().unwrap_or_else(|| "method".to_owned()));
    view! {
        <select id="filter-method" title=title on:change=move |ev| {
            let v = event_target_value(&ev);
            let v = (!v.trim().is_empty()).then_some(v);
            set_filters(st, |f| f.method = v);
        }>
            <option value="" selected=move || filters.with(|f| f.method.is_none())>"any method"</option>
            {options}
        </select>
    }
}
