//! The Requests tab: one row per JSON-RPC request (method, id, direction, status, latency, sizes,
//! session), as Chrome's network panel lists requests. A click on a column's heading sorts by it (again:
//! the other way), pages are the server's; sort, order and page are in the URL (`req_sort`, `req_order`,
//! `req_page`). A click on a row shows the request in the diagram; the funnel beside a method filters the
//! diagram to that method.

use super::summary::plural;
use super::trace_state;
use crate::format;
use crate::state::requests::PAGE_ROWS;
use crate::state::TraceState;
use crate::view_query::Tab;
use acp_tee_shared::api::{RequestPage, RequestRow, RequestSort, RequestStatus};
use acp_tee_shared::Direction;
use leptos::prelude::*;

/// The Requests tab's content.
#[component]
pub fn RequestsTab() -> impl IntoView {
    let st = trace_state();
    let page = Memo::new(move |_| st.requests.shown().map(|(page, _)| page));
    let body = move || match page.get() {
        None => view! { <div class="notice">"Loading the requests…"</div> }.into_any(),
        Some(Err(e)) => view! { <div class="notice error">{e.message}</div> }.into_any(),
        Some(Ok(page)) => table(st, page).into_any(),
    };
    let loading = move || st.requests.loading();
    view! { <div class="requests-tab" class:loading=loading>{body}</div> }
}

/// The headings: each column's label and what it sorts by.
const COLUMNS: [(RequestSort, &str); 8] = [
    (RequestSort::Seq, "#"),
    (RequestSort::Method, "method"),
    (RequestSort::Id, "id"),
    (RequestSort::Dir, "direction"),
    (RequestSort::Status, "status"),
    (RequestSort::Latency, "latency"),
    (RequestSort::Size, "size"),
    (RequestSort::Session, "session"),
];

fn table(st: TraceState, page: RequestPage) -> impl IntoView {
    let (sort, desc) = st.query.with_untracked(|q| (q.req_sort, q.req_desc));
    let live = st.trace.with_untracked(|t| t.live);
    let heads = COLUMNS
        .map(|(col, label)| {
            let on = col == sort;
            let arrow = match (on, desc) {
                (false, _) => "",
                (true, false) => " ▲",
                (true, true) => " ▼",
            };
            let sorting = if on {
                if desc {
                    "descending"
                } else {
                    "ascending"
                }
            } else {
                "none"
            };
            let click = move |_| {
                st.url.update(true, |q| {
                    for key in ["req_sort", "req_order", "req_page"] {
                        q.accept(key);
                    }
                    // Again: the other way; another column starts with what most want first.
                    q.req_desc = if q.req_sort == col {
                        !q.req_desc
                    } else {
                        matches!(col, RequestSort::Latency | RequestSort::Size)
                    };
                    q.req_sort = col;
                    q.req_page = None;
                })
            };
            view! {
                <th data-sort=col.as_str() aria-sort=sorting class:on=on on:click=click
                    title="sort by this column (again: the other way)">{label}{arrow}</th>
            }
        })
        .collect_view();
    let rows = page.requests.iter().map(|r| row(st, r, live)).collect_view();
    let (first, shown, total) = (page.offset, page.requests.len() as i64, page.total);
    let current = first / PAGE_ROWS + 1;
    let pages = (total + PAGE_ROWS - 1) / PAGE_ROWS;
    let go = move |p: i64| {
        st.url.update(true, |q| {
            q.accept("req_page");
            q.req_page = (p > 1).then_some(p as u64);
        })
    };
    let range = if shown == 0 {
        format!("no rows here of {}", plural(total, "request"))
    } else {
        format!("{}–{} of {}", format::count(first + 1), format::count(first + shown), plural(total, "request"))
    };
    view! {
        <div class="pager">
            <button id="requests-prev" disabled={current <= 1} on:click=move |_| go(current - 1)>"‹ previous"</button>
            <span id="requests-range">{range}</span>
            <button id="requests-next" disabled={current >= pages} on:click=move |_| go(current + 1)>"next ›"</button>
        </div>
        <table id="requests">
            <thead><tr>{heads}</tr></thead>
            <tbody>{rows}</tbody>
        </table>
    }
}

/// How a request was answered, in words; `live` says whether no answer may still come.
pub fn status_text(status: &RequestStatus, live: bool) -> String {
    match status {
        RequestStatus::Ok => "ok".to_owned(),
        RequestStatus::Error { code, message } => {
            let code = code.map_or("error".to_owned(), |c| format!("error {c}"));
            match message {
                Some(m) => format!("{code}: {m}"),
                None => code,
            }
        }
        RequestStatus::Batch => "ok (in a batch)".to_owned(),
        RequestStatus::Unanswered if live => "no answer yet".to_owned(),
        RequestStatus::Unanswered => "never answered".to_owned(),
    }
}

fn row(st: TraceState, r: &RequestRow, live: bool) -> impl IntoView {
    let seq = r.seq;
    let method = r.method.clone().unwrap_or_default();
    let filter = r.method.clone().map(|m| {
        let title = format!("show only {m} in the diagram");
        let click = move |ev: leptos::ev::MouseEvent| {
            ev.stop_propagation();
            let m = m.clone();
            st.follow.set(false);
            st.url.update(true, |q| {
                q.accept("method");
                q.filters.method = Some(m);
                q.tab = Tab::Diagram;
                q.accept("frame");
                q.frame = Some(seq);
            });
            st.jump.set(Some(seq));
        };
        view! { <button class="link filter-method" title=title on:click=click>"⊳"</button> }
    });
    let id = r.id.as_ref().map_or(String::new(), |v| match v {
        serde_json::Value::String(s) => format!("\"{s}\""),
        other => other.to_string(),
    });
    let dir = match r.dir {
        Direction::ClientToAgent => "client → agent",
        Direction::AgentToClient => "agent → client",
        Direction::AgentStderr => "stderr",
    };
    let status = status_text(&r.status, live);
    let class = match r.status {
        RequestStatus::Ok | RequestStatus::Batch => "ok",
        RequestStatus::Error { .. } => "error",
        RequestStatus::Unanswered => "open",
    };
    let latency = r.latency_ns.map_or("—".to_owned(), format::duration_ns);
    let size = format!("{} / {}", format::bytes(r.request_size), r.response_size.map_or("—".to_owned(), format::bytes));
    let size_title = "the request's bytes / the answer's bytes, as served";
    let session = r.session_id.clone().unwrap_or_default();
    let go = move || st.show_in_diagram(seq);
    view! {
        <tr data-seq=seq tabindex="0" title="show this request in the diagram"
            on:click=move |_| go() on:keydown=move |ev| if ev.key() == "Enter" { go() }>
            <td class="seq">{seq}</td>
            <td class="method" title=method.clone()>{method.clone()}" "{filter}</td>
            <td class="id">{id}</td>
            <td class="dir">{dir}</td>
            <td class=format!("status {class}") title=status.clone()>{status.clone()}</td>
            <td class="latency">{latency}</td>
            <td class="size" title=size_title>{size}</td>
            <td class="session" title=session.clone()>{session.clone()}</td>
        </tr>
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statuses_read_as_words() {
        let error = RequestStatus::Error { code: Some(-32603), message: Some("boom".into()) };
        assert_eq!(status_text(&error, false), "error -32603: boom");
        assert_eq!(status_text(&RequestStatus::Error { code: None, message: None }, false), "error");
        assert_eq!(status_text(&RequestStatus::Unanswered, true), "no answer yet");
        assert_eq!(status_text(&RequestStatus::Unanswered, false), "never answered");
        assert_eq!(status_text(&RequestStatus::Ok, false), "ok");
    }
}
