//! The Session tab: the trace's ACP sessions as people read them. A banner lists the requests nobody
//! answered (with how long they have waited); a picker chooses the session when there are several; the
//! session's facts, its plan, a waterfall of the page's turns and tool calls, and the turns themselves
//! (prompt, thoughts, agent message, tool-call cards, client work, stop reason, usage), a page of
//! [`PAGE_TURNS`] at a time. Every item links to its frame in the diagram.
//!
//! Ages (how long a turn or a request has been open, the waterfall's axis and open bars) are measured
//! against the trace view's one clock (`TraceState::clock`), which counts on once a second while the trace is live.
//!
//! # Layout
//! - [`facts`]: the open-requests banner, the picker, the session's facts and plan.
//! - [`turn`]: one turn and its tool calls.
//! - [`mcp`]: the MCP requests that served a tool call.
//! - [`waterfall`]: the page's turns and tool calls on a time axis.

pub mod facts;
pub mod mcp;
pub mod turn;
pub mod waterfall;

use super::summary::plural;
use super::trace_state;
use crate::format;
use crate::state::sessions::{page_of, PAGE_TURNS};
use crate::state::TraceState;
use crate::view_query::Tab;
use acp_tee_shared::session::{SessionDetail, TraceSessions, Turn};
use leptos::prelude::*;

/// The URL of the Diagram tab with frame `seq` selected.
pub fn frame_href(st: TraceState, seq: i64) -> impl Fn() -> String + Copy + Send + Sync + 'static {
    move || {
        st.url.href(|q| {
            q.tab = Tab::Diagram;
            q.accept("frame");
            q.frame = Some(seq);
        })
    }
}

/// A link that opens the diagram with frame `seq` selected (a real link: the address says so, and a
/// middle click opens it in a new tab).
pub fn frame_link(st: TraceState, seq: i64, text: String) -> impl IntoView {
    let href = frame_href(st, seq);
    view! {
        <a class="frame-link" href=href data-seq=seq title=format!("show frame #{seq} in the diagram")>{text}</a>
    }
}

/// `#12`, linked to its frame.
pub fn seq_link(st: TraceState, seq: i64) -> impl IntoView {
    frame_link(st, seq, format!("#{seq}"))
}

/// The Session tab's content.
#[component]
pub fn SessionTab() -> impl IntoView {
    let st = trace_state();
    let sd = st.sessions;
    let shape = Memo::new(move |_| {
        sd.overview.with(|o| match o {
            None => Shape::Loading,
            Some(Err(e)) => Shape::Failed(e.message.clone()),
            Some(Ok(o)) if o.sessions.is_empty() => Shape::NoSessions,
            Some(Ok(_)) => Shape::Sessions,
        })
    });
    let overview = Memo::new(move |_| sd.overview.with(|o| o.as_ref().and_then(|o| o.as_ref().ok().cloned())));
    // In a replay the present is the cursor's frame, not the trace's end.
    let rd = st.replay;
    let now = Memo::new(move |_| rd.cursor_t.get().filter(|_| rd.active()).unwrap_or_else(|| st.clock.get()));
    let body = move || match shape.get() {
        Shape::Loading => view! { <div class="notice">"Loading sessions…"</div> }.into_any(),
        Shape::Failed(message) => view! { <div class="notice error">{message}</div> }.into_any(),
        Shape::NoSessions => view! {
            <div id="no-sessions" class="notice">
                "No ACP session in this trace: it holds no " <code>"session/new"</code> ", " <code>"session/load"</code>
                " or " <code>"session/prompt"</code> " and no " <code>"session/update"</code> "."
            </div>
        }
        .into_any(),
        Shape::Sessions => view! {
            {move || overview.with(|o| o.as_ref().map(|o| facts::picker(st, o)))}
            <SessionPage overview=overview now=now />
        }
        .into_any(),
    };
    view! {
        <div class="session-tab">
            {move || overview.with(|o| o.as_ref().map(|o| facts::open_requests(st, o, now)))}
            {body}
        </div>
    }
}

/// What the tab has to show.
#[derive(Clone, Debug, PartialEq)]
enum Shape {
    Loading,
    Failed(String),
    NoSessions,
    Sessions,
}

/// The chosen session: its facts and the page of turns the URL asks for.
#[component]
fn SessionPage(overview: Memo<Option<TraceSessions>>, now: Memo<i64>) -> impl IntoView {
    let st = trace_state();
    let sd = st.sessions;
    let page = Memo::new(move |_| sd.current_page());
    let wanted = sd.wanted;
    let known = Memo::new(move |_| {
        let sid = wanted.with(|w| w.as_ref().map(|w| w.sid.clone()));
        overview.with(|o| o.as_ref().is_some_and(|o| o.sessions.iter().any(|s| Some(&s.session_id) == sid.as_ref())))
    });
    let shape = Memo::new(move |_| match (known.get(), page.with(|p| p.as_ref().map(|r| r.as_ref().err().cloned()))) {
        (false, _) => PageShape::Unknown,
        (true, None) => PageShape::Loading,
        (true, Some(Some(e))) => PageShape::Failed(e.message),
        (true, Some(None)) => PageShape::Ready,
    });
    let detail = Memo::new(move |_| page.with(|p| p.as_ref().and_then(|r| r.as_ref().ok().cloned())));
    move || {
        match shape.get() {
        PageShape::Unknown => {
            let sid = wanted.with_untracked(|w| w.as_ref().map(|w| w.sid.clone())).unwrap_or_default();
            view! { <div id="unknown-session" class="notice error">{format!("This trace has no session {sid}.")}</div> }
                .into_any()
        }
        PageShape::Loading => view! { <div class="notice">"Loading turns…"</div> }.into_any(),
        PageShape::Failed(message) => view! { <div class="notice error">{message}</div> }.into_any(),
        // The turns stay drawn across refreshes of a live trace: only turns that changed are drawn again.
        PageShape::Ready => view! {
            {move || detail.with(|d| d.as_ref().map(|d| page_head(st, d, now)))}
            <TurnList detail=detail now=now />
            {move || detail.with(|d| d.as_ref().filter(|d| d.turns.len() > 3).map(|d| pager(st, d.offset, d.summary.turns, d.turns.len())))}
        }
        .into_any(),
    }
    }
}

/// What the chosen session's part of the tab shows.
#[derive(Clone, Debug, PartialEq)]
enum PageShape {
    Unknown,
    Loading,
    Failed(String),
    Ready,
}

/// The session's facts and plan, the page's waterfall, and the pager.
fn page_head(st: TraceState, detail: &SessionDetail, now: Memo<i64>) -> impl IntoView {
    let total = detail.summary.turns;
    view! {
        <div class="session-cards">
            {facts::summary_card(st, detail, now)}
            {detail.plan.as_ref().map(|p| facts::plan_card(st, p))}
        </div>
        {(total > 0).then(|| waterfall::waterfall(st, &detail.turns, now))}
        {pager(st, detail.offset, total, detail.turns.len())}
    }
}

/// The page's turns; a turn is drawn again only when what it shows changed.
#[component]
fn TurnList(detail: Memo<Option<SessionDetail>>, now: Memo<i64>) -> impl IntoView {
    let st = trace_state();
    // When the page is empty: how many turns the session has.
    let empty = Memo::new(move |_| detail.with(|d| d.as_ref().filter(|d| d.turns.is_empty()).map(|d| d.summary.turns)));
    scroll_to_turn(st, detail);
    move || {
        if let Some(total) = empty.get() {
            let text = match total {
                0 => "No prompt turns in this session.".to_owned(),
                n => format!("No turns on this page: the session has {}.", plural(n as i64, "turn")),
            };
            return view! { <div id="no-turns" class="notice">{text}</div> }.into_any();
        }
        view! {
            <div class="turns">
                <For each=move || detail.with(|d| d.as_ref().map(|d| d.turns.clone()).unwrap_or_default())
                    key=turn_key let(t)>
                    {turn::turn_card(st, t, now)}
                </For>
            </div>
        }
        .into_any()
    }
}

/// What changes in a turn while it runs (MCP requests of its tool calls too: their servers' traces grow
/// beside it).
fn turn_key(t: &Turn) -> (u64, u64, Option<i64>, u64, usize, usize, usize) {
    let answered = t.tool_calls.iter().flat_map(|c| &c.permissions).filter(|p| p.response_seq.is_some()).count();
    let done = t.client_calls.iter().filter(|c| c.response_seq.is_some()).count();
    let mcp = t.tool_calls.iter().flat_map(|c| &c.mcp_calls);
    let mcp = mcp.map(|m| 1 + usize::from(m.latency_ns.is_some()) + usize::from(m.error.is_some())).sum();
    (t.index, t.updates, t.response_seq, t.message.chars + t.thought.chars, answered + done, t.client_calls.len(), mcp)
}

/// Scrolls to the turn the URL names once its page is drawn (a link to a turn); a page's first turn
/// needs nothing, the pager scrolls to the top.
fn scroll_to_turn(st: TraceState, detail: Memo<Option<SessionDetail>>) {
    let target = Memo::new(move |_| {
        let turn = st.query.with(|q| q.turn)?;
        let index = turn - 1;
        let offset = detail.with(|d| d.as_ref().map(|d| d.offset))?;
        (index % PAGE_TURNS != 0 && offset == page_of(Some(turn))).then_some(index)
    });
    Effect::new(move |_| {
        let Some(n) = target.get() else { return };
        // After the turns are drawn.
        request_animation_frame(move || {
            if let Some(el) = document().get_element_by_id(&format!("turn-{n}")) {
                el.scroll_into_view();
            }
        });
    });
}

/// Scrolls the Session tab back to its top (a new page of turns).
fn scroll_to_top() {
    if let Some(el) = document().query_selector(".tab-session").ok().flatten() {
        el.set_scroll_top(0);
    }
}

/// Turns `a–b of n`, and buttons to the first, previous, next and last page.
fn pager(st: TraceState, offset: u64, total: u64, shown: usize) -> impl IntoView {
    let last = total.saturating_sub(1) / PAGE_TURNS * PAGE_TURNS;
    let go = move |to: u64| {
        st.url.update(true, |q| {
            q.accept("turn");
            q.turn = (to > 0).then_some(to + 1);
        });
        scroll_to_top();
    };
    let range = if shown == 0 {
        format!("no turns from {} on; {}", offset + 1, plural(total as i64, "turn"))
    } else {
        format!("turns {}–{} of {}", offset + 1, offset + shown as u64, format::count(total as i64))
    };
    let at_start = offset == 0;
    let at_end = offset >= last;
    view! {
        <nav class="turn-pager" aria-label="pages of turns">
            <button class="pager-first" disabled=at_start on:click=move |_| go(0)>"« first"</button>
            <button class="pager-prev" disabled=at_start on:click=move |_| go(offset.saturating_sub(PAGE_TURNS))>"‹ previous"</button>
            <span class="pager-range">{range}</span>
            <button class="pager-next" disabled=at_end on:click=move |_| go(offset + PAGE_TURNS)>"next ›"</button>
            <button class="pager-last" disabled=at_end on:click=move |_| go(last)>"last »"</button>
        </nav>
    }
}
