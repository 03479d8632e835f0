//! `/`: every trace in the store, newest first (or sorted by a column), refreshed while the page is open.
//! Rows are links: a click, or Enter on a focused row, opens the trace; the arrows move between rows.
//! The sort and the text filter are in the URL (`?sort=frames&order=asc&find=eliza`). The filter matches
//! names as typed; Enter in it (or "search frames") also asks the server which traces hold the words in
//! their frames (`/api/search`), each listed with a link to its first match, find on. Ticking two rows
//! offers a link to compare them (`/compare/{a}/{b}`, the older first).
//!
//! When the server takes changes from this page (`/api/capabilities`; not under `serve --read-only`), each
//! row offers rename (in place: Enter saves, Esc cancels), pin/unpin (a pinned row carries a pin mark) and
//! delete (after a confirmation naming the trace, its frames and size; not while it is recorded, nor
//! while pinned). What the server refuses shows above the list in its words.

use crate::api::{self, ApiFailure};
use crate::components::highlight::{marked, search_words};
use crate::components::summary::{duration_ns, exit_text, status_badge, trace_duration, trace_name};
use crate::components::title::use_title;
use crate::format;
use acp_tee_shared::api::{name_problem, TraceChange, TraceHit, TraceSearch, TraceSummary, MAX_NAME_CHARS};
use leptos::prelude::*;
use leptos::task::spawn_local;
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
const COLUMNS: [(&str, &str, bool); 12] = [
    ("id", "id", true),
    ("started", "started (UTC)", true),
    ("name", "name", false),
    ("command", "command", false),
    ("mode", "mode", false),
    ("duration", "duration", true),
    ("frames", "frames", true),
    ("size", "size", true),
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
        "size" => ma.bytes.cmp(&mb.bytes),
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

/// What the row actions share: whether this page may change traces, the rows with a change on the way,
/// the rename and the delete confirmation open, the last refusal, and the list they patch.
#[derive(Clone, Copy)]
struct Actions {
    renaming: RwSignal<Option<i64>>,
    confirming: RwSignal<Option<TraceSummary>>,
    busy: RwSignal<Vec<i64>>,
    error: RwSignal<Option<String>>,
    list: RwSignal<Option<Vec<TraceSummary>>>,
    picked: RwSignal<Vec<i64>>,
    /// Bumped by every change done: a list fetched before it is stale and dropped.
    generation: RwSignal<u64>,
    traces: LocalResource<(u64, Result<Vec<TraceSummary>, ApiFailure>)>,
}

impl Actions {
    fn is_busy(self, id: i64) -> bool {
        self.busy.with(|b| b.contains(&id))
    }

    /// Runs `change` for trace `id` (one at a time per trace); its refusal shows above the list as
    /// `what` and the server's words. On success the list is patched at once (`patch`) and fetched again.
    fn run<T: 'static>(
        self,
        id: i64,
        what: String,
        change: impl std::future::Future<Output = Result<T, ApiFailure>> + 'static,
        patch: impl FnOnce(T, &mut Vec<TraceSummary>) + 'static,
    ) {
        if self.is_busy(id) {
            return;
        }
        self.error.set(None);
        self.busy.update(|b| b.push(id));
        spawn_local(async move {
            let result = change.await;
            self.busy.update(|b| b.retain(|x| *x != id));
            match result {
                Ok(done) => {
                    self.generation.update(|g| *g += 1);
                    self.list.update(|l| {
                        if let Some(l) = l {
                            patch(done, l)
                        }
                    });
                    self.traces.refetch();
                }
                Err(e) => self.error.set(Some(format!("{what}: {}", e.message))),
            }
        });
    }

    /// Replaces the trace in the list by the server's answer.
    fn replace(t: TraceSummary, list: &mut [TraceSummary]) {
        if let Some(row) = list.iter_mut().find(|r| r.meta.id == t.meta.id) {
            *row = t;
        }
    }

    fn set_pinned(self, id: i64, pinned: bool) {
        let what = format!("Could not {} trace {id}", if pinned { "pin" } else { "unpin" });
        let change = TraceChange { pinned: Some(pinned), ..Default::default() };
        self.run(id, what, async move { api::change_trace(id, &change).await }, |t, l| Actions::replace(t, l));
    }

    fn rename(self, id: i64, name: String) {
        if let Some(problem) = name_problem(&name) {
            self.error.set(Some(format!("Could not rename trace {id}: {problem}")));
            return;
        }
        let change = TraceChange { name: Some(name.trim().to_owned()), ..Default::default() };
        let renaming = self.renaming;
        self.run(
            id,
            format!("Could not rename trace {id}"),
            async move { api::change_trace(id, &change).await },
            move |t, l| {
                renaming.set(None);
                Actions::replace(t, l)
            },
        );
    }

    fn delete(self, id: i64) {
        self.confirming.set(None);
        let picked = self.picked;
        self.run(id, format!("Could not delete trace {id}"), api::delete_trace(id), move |(), l| {
            l.retain(|r| r.meta.id != id);
            picked.update(|p| p.retain(|x| *x != id));
        });
    }
}

/// The trace list.
#[component]
pub fn TraceList() -> impl IntoView {
    use_title("traces".to_owned());
    let generation = RwSignal::new(0u64);
    let traces = LocalResource::new(move || {
        let asked_at = generation.get_untracked();
        async move { (asked_at, api::traces().await) }
    });
    if let Ok(handle) = set_interval_with_handle(move || traces.refetch(), REFRESH) {
        on_cleanup(move || handle.clear());
    }
    let capabilities = LocalResource::new(api::capabilities);
    // Whether this page may change traces, and why not.
    let editable = Memo::new(move |_| matches!(capabilities.get(), Some(Ok(c)) if c.edit));
    let edits_off = move || match capabilities.get() {
        Some(Ok(c)) if !c.edit => Some(c.edit_off.unwrap_or_default()),
        _ => None,
    };
    // The last list that arrived stays on screen when a refresh fails; the failure shows above it.
    let last_good = RwSignal::new(None::<Vec<TraceSummary>>);
    let failure = RwSignal::new(None::<ApiFailure>);
    Effect::new(move |_| match traces.get() {
        // Asked for before a change was done: it may still show what the change undid.
        Some((asked_at, _)) if asked_at < generation.get_untracked() => {}
        Some((_, Ok(list))) => {
            failure.set(None);
            if last_good.with_untracked(|l| l.as_ref() != Some(&list)) {
                last_good.set(Some(list));
            }
        }
        Some((_, Err(e))) => failure.set(Some(e)),
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
    let frame_search = RwSignal::new(None::<FrameSearch>);
    let search_frames = move || {
        let words = view_state.with_untracked(|v| v.find.trim().to_owned());
        if words.is_empty() {
            frame_search.set(None);
            return;
        }
        frame_search.set(Some((words.clone(), None)));
        spawn_local(async move {
            let answer = api::search(&words).await;
            // A later search replaced this one meanwhile.
            if frame_search.with_untracked(|s| s.as_ref().is_some_and(|(w, _)| *w == words)) {
                frame_search.set(Some((words, Some(answer))));
            }
        });
    };
    let picked = RwSignal::new(Vec::<i64>::new());
    let actions = Actions {
        renaming: RwSignal::new(None),
        confirming: RwSignal::new(None),
        busy: RwSignal::new(Vec::new()),
        error: RwSignal::new(None),
        list: last_good,
        picked,
        generation,
        traces,
    };
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
    let body = move || match (shape.get(), editable.get()) {
        (None, _) if failure.with(Option::is_some) => ().into_any(),
        (None, _) => view! { <div class="notice big">"Loading traces…"</div> }.into_any(),
        (Some(true), _) => view! {
            <div class="notice big">
                "No traces in this store yet. Record one: " <code>"acp-tee -- my-agent acp"</code>
            </div>
        }
        .into_any(),
        (Some(false), editable) => {
            let rows = Signal::derive(move || {
                let v = view_state.get();
                last_good.with(|l| shown(l.as_deref().unwrap_or_default(), &v))
            });
            table(rows, view_state, set_view, actions, editable).into_any()
        }
    };
    let failed = move || {
        failure.get().map(|e| view! { <div id="list-error" class="banner error" role="alert">{e.message}</div> })
    };
    let refused = move || {
        actions.error.get().map(|message| {
            view! {
                <div id="edit-error" class="banner error" role="alert">
                    {message}
                    <button class="link" title="dismiss" on:click=move |_| actions.error.set(None)>"×"</button>
                </div>
            }
        })
    };
    view! {
        <div class="list-page">
            <header class="list-head">
                <h1>"acp-tee"</h1>
                <span class="sub">"recorded Agent Client Protocol traces"</span>
                {move || edits_off().map(|why| view! { <span id="edits-off" class="sub" title=why>"read-only"</span> })}
                <span class="grow"></span>
                {compare}
                <input id="find-trace" type="search" placeholder="find a trace…  (Enter: in frames too)"
                    title="filters the list by name as you type; Enter also searches the traces' frames"
                    prop:value=move || view_state.with(|v| v.find.clone())
                    on:input=move |ev| {
                        let text = event_target_value(&ev);
                        set_view(&|v| v.find = text.clone());
                    }
                    on:keydown=move |ev| {
                        if ev.key() == "Enter" {
                            ev.prevent_default();
                            search_frames();
                        }
                    } />
                <button id="search-frames" title="which traces hold these words in their frames"
                    disabled=move || view_state.with(|v| v.find.trim().is_empty())
                    on:click=move |_| search_frames()>"search frames"</button>
            </header>
            {move || frame_search.get().map(|(words, answer)| frame_search_view(words, answer, frame_search))}
            {failed}
            {refused}
            {body}
            {move || actions.confirming.get().map(|t| confirm_delete(t, actions))}
        </div>
    }
}

/// The words every trace's frames were last searched for, and the answer (`None` while it is awaited).
type FrameSearch = (String, Option<Result<TraceSearch, ApiFailure>>);

/// The answer of a search of every trace's frames: which traces hold the words, each a link to its first
/// match with find on; how many traces were searched when not all.
fn frame_search_view(
    words: String,
    answer: Option<Result<TraceSearch, ApiFailure>>,
    frame_search: RwSignal<Option<FrameSearch>>,
) -> impl IntoView {
    let close = view! {
        <button class="link" id="close-frame-search" title="close" on:click=move |_| frame_search.set(None)>"×"</button>
    };
    let body = match answer {
        None => view! { <p class="sub">{format!("searching the frames of every trace for “{words}”…")}</p> }.into_any(),
        Some(Err(e)) => view! { <p class="err">{e.message}</p> }.into_any(),
        Some(Ok(found)) => {
            let what = match found.hits.len() {
                0 => format!("no trace holds “{words}” in its frames"),
                1 => format!("1 trace holds “{words}” in its frames"),
                n => format!("{n} traces hold “{words}” in their frames"),
            };
            let searched = (found.searched < found.traces).then(|| {
                let why = found.stopped.clone().unwrap_or_default();
                format!(" (searched {} of {} traces: {why})", found.searched, found.traces)
            });
            let marks = search_words(Some(&words));
            let hits = found.hits.into_iter().map(|h| hit_view(h, &words, &marks)).collect_view();
            view! {
                <p id="frame-search-summary">{what}{searched}</p>
                <ul class="hits">{hits}</ul>
            }
            .into_any()
        }
    };
    view! { <section id="frame-search" class="frame-search">{close}{body}</section> }
}

/// One trace of a frame search: its name, its count of matches, its first match (a link there, find on).
fn hit_view(h: TraceHit, words: &str, marks: &[String]) -> impl IntoView {
    let id = h.trace.meta.id;
    let mut query = ParamsMap::new();
    query.insert("find", Url::escape(words));
    query.insert("frame", h.first.seq.to_string());
    let href = format!("/traces/{id}{}", query.to_query_string());
    let count = match (h.count, h.more) {
        (n, true) => format!("{n}+ matches"),
        (1, false) => "1 match".to_owned(),
        (n, false) => format!("{n} matches"),
    };
    let first =
        format!("#{} {}", h.first.seq, h.first.method.clone().unwrap_or_else(|| h.first.kind.as_str().to_owned()));
    let preview = h.first.preview.clone().map(|p| marked(p, marks));
    view! {
        <li class="hit" data-trace=id>
            <A href=href attr:class="hit-link">
                <span class="name">{trace_name(&h.trace)}</span>
                <span class="sub">{format!(" trace {id} · {count} · first {first}")}</span>
            </A>
            <span class="preview">{preview}</span>
        </li>
    }
}

/// The question before a delete: which trace, how much goes, and that it cannot be undone.
fn confirm_delete(t: TraceSummary, actions: Actions) -> impl IntoView {
    let id = t.meta.id;
    let question = format!(
        "Delete trace {id} ({}, {}, {})? This cannot be undone.",
        trace_name(&t),
        crate::components::summary::plural(t.meta.frame_count, "frame"),
        format::bytes(t.meta.bytes)
    );
    let cancel = NodeRef::<leptos::html::Button>::new();
    // The safe answer has the focus: Enter right away cancels.
    Effect::new(move |_| {
        if let Some(el) = cancel.get() {
            let _ = el.focus();
        }
    });
    let on_key = move |ev: leptos::ev::KeyboardEvent| {
        if ev.key() == "Escape" {
            actions.confirming.set(None);
        }
    };
    view! {
        <div class="confirm-backdrop" on:keydown=on_key>
            <div id="confirm-delete" class="confirm" role="alertdialog" aria-modal="true" aria-labelledby="confirm-delete-question">
                <p id="confirm-delete-question">{question}</p>
                <div class="confirm-buttons">
                    <button id="confirm-delete-no" node_ref=cancel on:click=move |_| actions.confirming.set(None)>"Cancel"</button>
                    <button id="confirm-delete-yes" class="danger" on:click=move |_| actions.delete(id)>"Delete"</button>
                </div>
            </div>
        </div>
    }
}

/// Rows are keyed by what they show, so a refresh only redraws traces that changed.
type RowKey = (i64, i64, i64, bool, bool, Option<String>, i64, Option<String>, bool, i64);

fn row_key(t: &TraceSummary) -> RowKey {
    let m = &t.meta;
    (
        m.id,
        m.frame_count,
        m.error_count,
        t.live,
        t.finishing,
        m.ended_at.clone(),
        t.last_t_ns,
        m.name.clone(),
        m.pinned,
        m.bytes,
    )
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

fn row(t: TraceSummary, open: Opener, actions: Actions, editable: bool) -> impl IntoView {
    let picked = actions.picked;
    let id = t.meta.id;
    let href = format!("/traces/{id}");
    let (exit, reason) = exit_text(&t);
    let exit = match (exit.is_empty(), t.live) {
        (true, true) => String::new(),
        (true, false) => "–".to_owned(),
        (false, _) => exit,
    };
    let name = trace_name(&t);
    let command = t.meta.command.join(" ");
    let command_title = command.clone();
    let (on_click, on_key) = {
        let href = href.clone();
        let href2 = href.clone();
        (
            move |ev: leptos::ev::MouseEvent| {
                // Clicks on the name's link, the compare box and the actions are theirs; elsewhere on the row
                // they open the trace.
                let on_control = ev
                    .target()
                    .and_then(|t| t.dyn_into::<web_sys::Element>().ok())
                    .is_some_and(|el| el.closest("a, input, button").ok().flatten().is_some());
                if !on_control {
                    open.with_value(|o| o(&href));
                }
            },
            move |ev: leptos::ev::KeyboardEvent| {
                let Some(el) = ev.current_target().and_then(|t| t.dyn_into::<web_sys::HtmlElement>().ok()) else {
                    return;
                };
                // Keys typed into the rename field or on a button are theirs.
                if ev.target().and_then(|t| t.dyn_into::<web_sys::HtmlElement>().ok()).as_ref() != Some(&el) {
                    return;
                }
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
    let name_cell = {
        let (name, href) = (name.clone(), href.clone());
        let pinned = t.meta.pinned;
        move || {
            if actions.renaming.get() == Some(id) {
                rename_field(id, name.clone(), actions).into_any()
            } else {
                let mark = pinned
                    .then(|| view! { <span class="pin-mark" title="pinned: every prune leaves it alone">"⚑"</span> });
                let (name, href) = (name.clone(), href.clone());
                view! { {mark}<A href=href>{name}</A> }.into_any()
            }
        }
    };
    let actions_cell = editable.then(|| row_actions(&t, actions));
    view! {
        <tr class="trace-row" class:pinned=t.meta.pinned data-trace-id=id tabindex="0" on:click=on_click on:keydown=on_key>
            <td class="num">
                <input type="checkbox" class="pick" title="compare" prop:checked=move || picked.with(|p| p.contains(&id))
                    on:change=move |_| toggle(picked, id) />
                {id}
            </td>
            <td class="when">{format::wall_clock(&t.meta.started_at).trim_end_matches(" UTC").to_owned()}</td>
            <td class="name" title=name>{name_cell}</td>
            <td class="cmd" title=command_title><code>{command}</code></td>
            <td class="mode">{t.meta.mode.clone()}</td>
            <td class="num">{trace_duration(&t)}</td>
            <td class="num">{format::count(t.meta.frame_count)}</td>
            <td class="num size" title=format!("{} bytes of frames", format::count(t.meta.bytes))>{format::bytes(t.meta.bytes)}</td>
            <td class="num" class:err=t.meta.error_count != 0>{format::count(t.meta.error_count)}</td>
            {findings_cell(&t)}
            <td title=reason.clone()>{status_badge(&t)}</td>
            <td class="exit" title=reason>{exit}</td>
            {actions_cell}
        </tr>
    }
}

/// The name's field while a trace is renamed: Enter saves, Esc (or leaving it) cancels.
fn rename_field(id: i64, name: String, actions: Actions) -> impl IntoView {
    let input = NodeRef::<leptos::html::Input>::new();
    Effect::new(move |_| {
        if let Some(el) = input.get() {
            let _ = el.focus();
            el.select();
        }
    });
    let on_key = move |ev: leptos::ev::KeyboardEvent| match ev.key().as_str() {
        "Enter" => {
            ev.prevent_default();
            actions.rename(id, event_target_value(&ev));
        }
        "Escape" => {
            ev.prevent_default();
            actions.renaming.set(None);
        }
        _ => {}
    };
    view! {
        <input class="rename" type="text" aria-label=format!("new name of trace {id}") maxlength=MAX_NAME_CHARS.to_string()
            value=name node_ref=input on:keydown=on_key
            on:blur=move |_| if !actions.is_busy(id) { actions.renaming.set(None) } />
    }
}

/// A row's rename, pin and delete buttons. Delete is off while the trace has no end (it is recorded, or
/// its recorder is still storing it) and while it is pinned; the server refuses those too.
fn row_actions(t: &TraceSummary, actions: Actions) -> impl IntoView {
    let id = t.meta.id;
    let pinned = t.meta.pinned;
    let busy = move || actions.is_busy(id);
    let (pin_title, pin_label) = if pinned {
        ("unpin: prunes may remove it again", format!("unpin trace {id}"))
    } else {
        ("pin: every prune leaves it alone", format!("pin trace {id}"))
    };
    let kept = if t.meta.ended_at.is_none() {
        Some("recorded now: it can be deleted once it ends")
    } else if pinned {
        Some("pinned: unpin it to delete it")
    } else {
        None
    };
    let trace = t.clone();
    view! {
        <td class="actions">
            <button class="rename-trace" title="rename" aria-label=format!("rename trace {id}") disabled=busy
                on:click=move |_| { actions.error.set(None); actions.renaming.set(Some(id)) }>"✎"</button>
            <button class="pin-trace" class:on=pinned title=pin_title aria-label=pin_label aria-pressed=pinned.to_string()
                disabled=busy on:click=move |_| actions.set_pinned(id, !pinned)>"⚑"</button>
            <button class="delete-trace" title=kept.unwrap_or("delete") aria-label=format!("delete trace {id}")
                disabled=move || kept.is_some() || busy()
                on:click=move |_| { actions.error.set(None); actions.confirming.set(Some(trace.clone())) }>"✕"</button>
        </td>
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
    actions: Actions,
    editable: bool,
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
    let actions_col = editable.then(|| view! { <col class="col-actions" /> });
    let actions_head = editable.then(|| view! { <th class="col-actions"></th> });
    view! {
        <table id="traces">
            <colgroup>
                <col class="col-id" /><col class="col-started" /><col class="col-name" /><col class="col-command" />
                <col class="col-mode" /><col class="col-duration" /><col class="col-frames" /><col class="col-size" />
                <col class="col-errors" /><col class="col-findings" /><col class="col-status" /><col class="col-exit" />
                {actions_col}
            </colgroup>
            <thead><tr>{heads}{actions_head}</tr></thead>
            <tbody>
                <For each=move || list.get() key=row_key children=move |t| row(t, open, actions, editable) />
            </tbody>
        </table>
    }
}
