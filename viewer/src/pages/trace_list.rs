//! `/`: every trace in the store, newest first (or sorted by a column), refreshed while the page is open.
//! Rows are links: a click, or Enter on a focused row, opens the trace; the arrows move between rows.
//! The sort and the text filter are in the URL (`?sort=frames&order=asc&find=eliza`). Ticking two rows
//! offers a link to compare them (`/compare/{a}/{b}`, the older first).

use crate::api::{self, ApiFailure};
use crate::components::summary::{duration_ns, exit_text, status_badge, trace_duration, trace_name};
use crate::components::title::use_title;
use crate::format;
use acp_tee_shared::api::TraceSummary;
use leptos::prelude::*;
use leptos_router::components::A;
use leptos_router::hooks::{use_navigate, use_query_map};
use leptos_router::location::Url;
use leptos_router::params::ParamsMap;
use leptos_router::NavigateOptions;
use std::cmp::Ordering;
use std::rc::Rc;
use std::time::Duration;
use wasm_bindgen::JsCast;

/// How often the list is refetched, so new and ending runs show.
const REFRESH: Duration = Duration::from_secs(3);

/// A sortable column: its query value, heading, and whether it starts descending.
const COLUMNS: [(&str, &str, bool); 11] = [
    ("id", "id", true),
    ("started", "started (UTC)", true),
    ("name", "name", false),
    ("command", "command", false),
    ("mode", "mode", false),
    ("duration", "duration", true),
    ("frames", "frames", true),
    ("errors", "errors", true),
    ("findings", "findings", true),
    ("status", "status", false),
    ("exit", "exit", false),
];

/// The list's view: sort column, direction, text filter.
#[derive(Clone, Debug, PartialEq)]
struct ListView {
    sort: &'static str,
    descending: bool,
    find: String,
}

impl ListView {
    fn from_query(q: &ParamsMap) -> ListView {
        let sort = q.get_str("sort").and_then(|s| COLUMNS.iter().find(|c| c.0 == s)).copied().unwrap_or(COLUMNS[0]);
        let descending = match q.get_str("order") {
            Some("asc") => false,
            Some("desc") => true,
            _ => sort.2,
        };
        ListView { sort: sort.0, descending, find: q.get("find").unwrap_or_default() }
    }

    fn to_query(&self) -> String {
        let mut map = ParamsMap::new();
        if self.sort != COLUMNS[0].0 || !self.descending {
            map.insert("sort", Url::escape(self.sort));
            map.insert("order", Url::escape(if self.descending { "desc" } else { "asc" }));
        }
        if !self.find.trim().is_empty() {
            map.insert("find", Url::escape(&self.find));
        }
        map.to_query_string()
    }
}

fn compare(a: &TraceSummary, b: &TraceSummary, column: &str) -> Ordering {
    let (ma, mb) = (&a.meta, &b.meta);
    match column {
        "started" => ma.started_at.cmp(&mb.started_at),
        "name" => trace_name(a).to_lowercase().cmp(&trace_name(b).to_lowercase()),
        "command" => ma.command.join(" ").cmp(&mb.command.join(" ")),
        "mode" => ma.mode.cmp(&mb.mode),
        "duration" => duration_ns(a).cmp(&duration_ns(b)),
        "frames" => ma.frame_count.cmp(&mb.frame_count),
        "errors" => ma.error_count.cmp(&mb.error_count),
        "findings" => finding_key(a).cmp(&finding_key(b)),
        "status" => (a.live, a.finishing).cmp(&(b.live, b.finishing)),
        "exit" => exit_text(a).0.cmp(&exit_text(b).0),
        _ => Ordering::Equal,
    }
    .then(ma.id.cmp(&mb.id))
}

fn shown(list: &[TraceSummary], view: &ListView) -> Vec<TraceSummary> {
    let needle = view.find.trim().to_lowercase();
    let mut rows: Vec<TraceSummary> = list
        .iter()
        .filter(|t| {
            needle.is_empty()
                || trace_name(t).to_lowercase().contains(&needle)
                || t.meta.command.join(" ").to_lowercase().contains(&needle)
                || t.meta.id.to_string() == needle
        })
        .cloned()
        .collect();
    rows.sort_by(|a, b| compare(a, b, view.sort));
    if view.descending {
        rows.reverse();
    }
    rows
}

/// The trace list.
#[component]
pub fn TraceList() -> impl IntoView {
    use_title("traces".to_owned());
    let traces = LocalResource::new(api::traces);
    if let Ok(handle) = set_interval_with_handle(move || traces.refetch(), REFRESH) {
        on_cleanup(move || handle.clear());
    }
    // The last list that arrived stays on screen when a refresh fails; the failure shows above it.
    let last_good = RwSignal::new(None::<Vec<TraceSummary>>);
    let failure = RwSignal::new(None::<ApiFailure>);
    Effect::new(move |_| match traces.get() {
        Some(Ok(list)) => {
            failure.set(None);
            if last_good.with_untracked(|l| l.as_ref() != Some(&list)) {
                last_good.set(Some(list));
            }
        }
        Some(Err(e)) => failure.set(Some(e)),
        None => {}
    });
    let query = use_query_map();
    let view_state = Memo::new(move |_| query.with(ListView::from_query));
    let navigate = StoredValue::new_local(Rc::new(use_navigate()) as Rc<dyn Fn(&str, NavigateOptions)>);
    let set_view = move |change: &dyn Fn(&mut ListView)| {
        let mut v = view_state.get_untracked();
        change(&mut v);
        let url = format!("/{}", v.to_query());
        navigate.with_value(|nav| nav(&url, NavigateOptions { replace: true, scroll: false, ..Default::default() }));
    };
    let picked = RwSignal::new(Vec::<i64>::new());
    let compare = move || {
        let p = picked.get();
        match p.as_slice() {
            [a, b] => {
                let (a, b) = ((*a).min(*b), (*a).max(*b));
                view! { <A href=format!("/compare/{a}/{b}") attr:id="compare-link">{format!("compare {a} with {b}")}</A> }
                    .into_any()
            }
            [_] => view! { <span class="sub">"tick another trace to compare"</span> }.into_any(),
            _ => ().into_any(),
        }
    };
    let shape = Memo::new(move |_| last_good.with(|l| l.as_ref().map(Vec::is_empty)));
    let body = move || match shape.get() {
        None if failure.with(Option::is_some) => ().into_any(),
        None => view! { <div class="notice big">"Loading traces…"</div> }.into_any(),
        Some(true) => view! {
            <div class="notice big">
                "No traces in this store yet. Record one: " <code>"acp-tee -- my-agent acp"</code>
            </div>
        }
        .into_any(),
        Some(false) => {
            let rows = Signal::derive(move || {
                let v = view_state.get();
                last_good.with(|l| shown(l.as_deref().unwrap_or_default(), &v))
            });
            table(rows, view_state, set_view, picked).into_any()
        }
    };
    let failed = move || {
        failure.get().map(|e| view! { <div id="list-error" class="banner error" role="alert">{e.message}</div> })
    };
    view! {
        <div class="list-page">
            <header class="list-head">
                <h1>"acp-tee"</h1>
                <span class="sub">"recorded Agent Client Protocol traces"</span>
                <span class="grow"></span>
                {compare}
                <input id="find-trace" type="search" placeholder="find a trace…"
                    prop:value=move || view_state.with(|v| v.find.clone())
                    on:input=move |ev| {
                        let text = event_target_value(&ev);
                        set_view(&|v| v.find = text.clone());
                    } />
            </header>
            {failed}
            {body}
        </div>
    }
}

/// Rows are keyed by what they show, so a refresh only redraws traces that changed.
fn row_key(t: &TraceSummary) -> (i64, i64, i64, bool, bool, Option<String>, i64) {
    (t.meta.id, t.meta.frame_count, t.meta.error_count, t.live, t.finishing, t.meta.ended_at.clone(), t.last_t_ns)
}

/// Moves the focus to the row before or after `from`.
fn focus_sibling(from: &web_sys::HtmlElement, down: bool) {
    let sibling = if down { from.next_element_sibling() } else { from.previous_element_sibling() };
    if let Some(el) = sibling.and_then(|e| e.dyn_into::<web_sys::HtmlElement>().ok()) {
        let _ = el.focus();
    }
}

/// Opens a trace (navigates in the app).
type Opener = StoredValue<Rc<dyn Fn(&str)>, LocalStorage>;

/// Ticks or unticks trace `id` for comparing; at most two stay ticked (the oldest tick goes).
fn toggle(picked: RwSignal<Vec<i64>>, id: i64) {
    picked.update(|p| {
        if let Some(i) = p.iter().position(|x| *x == id) {
            p.remove(i);
        } else {
            p.push(id);
            if p.len() > 2 {
                p.remove(0);
            }
        }
    });
}

fn row(t: TraceSummary, open: Opener, picked: RwSignal<Vec<i64>>) -> impl IntoView {
    let id = t.meta.id;
    let href = format!("/traces/{id}");
    let (exit, reason) = exit_text(&t);
    let exit = match (exit.is_empty(), t.live) {
        (true, true) => String::new(),
        (true, false) => "–".to_owned(),
        (false, _) => exit,
    };
    let name = trace_name(&t);
    let name_title = name.clone();
    let command = t.meta.command.join(" ");
    let command_title = command.clone();
    let (on_click, on_key) = {
        let href = href.clone();
        let href2 = href.clone();
        (
            move |ev: leptos::ev::MouseEvent| {
                // Clicks on the name's link and the compare box are theirs; elsewhere on the row they open
                // the trace.
                let on_link = ev
                    .target()
                    .and_then(|t| t.dyn_into::<web_sys::Element>().ok())
                    .is_some_and(|el| el.closest("a, input").ok().flatten().is_some());
                if !on_link {
                    open.with_value(|o| o(&href));
                }
            },
            move |ev: leptos::ev::KeyboardEvent| {
                let Some(el) = ev.current_target().and_then(|t| t.dyn_into::<web_sys::HtmlElement>().ok()) else {
                    return;
                };
                match ev.key().as_str() {
                    "Enter" => open.with_value(|o| o(&href2)),
                    "ArrowDown" | "j" => focus_sibling(&el, true),
                    "ArrowUp" | "k" => focus_sibling(&el, false),
                    _ => return,
                }
                ev.prevent_default();
            },
        )
    };
    view! {
        <tr class="trace-row" data-trace-id=id tabindex="0" on:click=on_click on:keydown=on_key>
            <td class="num">
                <input type="checkbox" class="pick" title="compare" prop:checked=move || picked.with(|p| p.contains(&id))
                    on:change=move |_| toggle(picked, id) />
                {id}
            </td>
            <td class="when">{format::wall_clock(&t.meta.started_at).trim_end_matches(" UTC").to_owned()}</td>
            <td class="name" title=name_title><A href=href>{name}</A></td>
            <td class="cmd" title=command_title><code>{command}</code></td>
            <td class="mode">{t.meta.mode.clone()}</td>
            <td class="num">{trace_duration(&t)}</td>
            <td class="num">{format::count(t.meta.frame_count)}</td>
            <td class="num" class:err=t.meta.error_count != 0>{format::count(t.meta.error_count)}</td>
            {findings_cell(&t)}
            <td title=reason.clone()>{status_badge(&t)}</td>
            <td class="exit" title=reason>{exit}</td>
        </tr>
    }
}

/// How findings sort: by errors, then warnings; traces not checked yet first.
fn finding_key(t: &TraceSummary) -> Option<(u64, u64)> {
    t.findings.map(|c| (c.errors, c.warnings))
}

/// The findings column: errors and warnings the protocol checks found (blank until the server checked).
fn findings_cell(t: &TraceSummary) -> impl IntoView {
    let (text, title, err) = match t.findings {
        None => (String::new(), "not checked yet: open the trace's Findings tab".to_owned(), false),
        Some(c) => (
            format!("{} / {}", format::count(c.errors as i64), format::count(c.warnings as i64)),
            format!("{} errors, {} warnings, {} infos (acp-tee check)", c.errors, c.warnings, c.infos),
            c.errors > 0,
        ),
    };
    view! { <td class="num findings" class:err=err title=title>{text}</td> }
}

fn table(
    list: Signal<Vec<TraceSummary>>,
    view_state: Memo<ListView>,
    set_view: impl Fn(&dyn Fn(&mut ListView)) + Copy + 'static,
    picked: RwSignal<Vec<i64>>,
) -> impl IntoView {
    let navigate = use_navigate();
    let open: Opener = StoredValue::new_local(Rc::new(move |href: &str| navigate(href, NavigateOptions::default())));
    let heads = COLUMNS
        .iter()
        .map(|&(key, label, starts_desc)| {
            let sorted = move || view_state.with(|v| v.sort == key);
            let arrow = move || match view_state.with(|v| (v.sort == key, v.descending)) {
                (true, true) => " ▾",
                (true, false) => " ▴",
                _ => "",
            };
            let aria = move || match view_state.with(|v| (v.sort == key, v.descending)) {
                (true, true) => "descending",
                (true, false) => "ascending",
                _ => "none",
            };
            let click = move |_| {
                set_view(&|v| {
                    if v.sort == key {
                        v.descending = !v.descending;
                    } else {
                        v.sort = key;
                        v.descending = starts_desc;
                    }
                })
            };
            view! {
                <th class=format!("col-{key}") aria-sort=aria class:sorted=sorted>
                    <button class="sort" data-sort=key on:click=click>{label}{arrow}</button>
                </th>
            }
        })
        .collect_view();
    view! {
        <table id="traces">
            <colgroup>
                <col class="col-id" /><col class="col-started" /><col class="col-name" /><col class="col-command" />
                <col class="col-mode" /><col class="col-duration" /><col class="col-frames" /><col class="col-errors" /><col class="col-findings" />
                <col class="col-status" /><col class="col-exit" />
            </colgroup>
            <thead><tr>{heads}</tr></thead>
            <tbody>
                <For each=move || list.get() key=row_key children=move |t| row(t, open, picked) />
            </tbody>
        </table>
    }
}
