//! The MCP requests that served a tool call (in the traces of the MCP servers the agent started): server,
//! method and what it names, how long the server took or that it never answered, why it failed, and how
//! the request was linked to the tool call — by a hint in its `_meta`, or only by being sent while the tool
//! call was in progress (then, when several tool calls were, which one cannot be told for sure).

use crate::components::summary::plural;
use crate::format;
use acp_tee_shared::session::{LinkedBy, McpCall, ToolCall};
use leptos::prelude::*;

/// True when one of the tool call's MCP requests failed (an error, or a result marked `isError`).
pub fn any_failed(c: &ToolCall) -> bool {
    c.mcp_calls.iter().any(|m| m.error.is_some())
}

/// How the request was linked to the tool call, in words.
pub fn linked_text(m: &McpCall) -> String {
    match m.linked_by {
        LinkedBy::Meta => "linked by _meta".to_owned(),
        LinkedBy::Time if m.candidates > 1 => {
            format!("during the tool call: one of {} tool calls in progress", m.candidates)
        }
        LinkedBy::Time => "during the tool call".to_owned(),
    }
}

/// The tool call's MCP requests, as a list under its card (nothing when it has none).
pub fn mcp_calls(c: &ToolCall) -> Option<impl IntoView> {
    if c.mcp_calls.is_empty() && c.mcp_calls_left_out == 0 {
        return None;
    }
    let items = c.mcp_calls.iter().map(mcp_call).collect_view();
    let more = (c.mcp_calls_left_out > 0).then(|| {
        let text = format!("and {} not listed", plural(c.mcp_calls_left_out as i64, "more MCP request"));
        view! { <li class="mcp-left-out">{text}</li> }
    });
    Some(view! {
        <ul class="mcp-calls" aria-label="MCP requests">
            {items}
            {more}
        </ul>
    })
}

fn mcp_call(m: &McpCall) -> impl IntoView {
    let server = m.server.clone().unwrap_or_else(|| format!("trace {}", m.trace_id));
    let name = m.name.clone().map(|n| view! { " " <span class="mcp-name">{n}</span> });
    let answer = match (m.latency_ns, &m.error) {
        (_, Some(e)) => {
            let took = m.latency_ns.map(|l| format!(" after {}", format::duration_ns(l))).unwrap_or_default();
            view! { <span class="mcp-answer err">{format!("failed{took}: {e}")}</span> }.into_any()
        }
        (Some(l), None) => {
            view! { <span class="mcp-answer">{format!("answered in {}", format::duration_ns(l))}</span> }.into_any()
        }
        (None, None) => view! { <span class="mcp-answer open">"no answer"</span> }.into_any(),
    };
    let linked = linked_text(m);
    let guessed = m.linked_by == LinkedBy::Time && m.candidates > 1;
    let href = format!("/traces/{}?frame={}", m.trace_id, m.seq);
    let title = format!("frame #{} of MCP trace {} ({server})", m.seq, m.trace_id);
    view! {
        <li class="mcp-call" class:failed=m.error.is_some() data-trace=m.trace_id data-seq=m.seq
            data-linked-by=if m.linked_by == LinkedBy::Meta { "meta" } else { "time" }>
            <span class="chip mcp">"MCP"</span> " "
            <span class="mcp-server">{server}</span> " "
            <a class="mcp-link" href=href title=title><code>{m.method.clone()}</code>{name}</a>
            " · at " {format::offset_ns(m.t_ns)} " · " {answer} " · "
            <span class="mcp-linked" class:guessed=guessed>{linked}</span>
        </li>
    }
}
