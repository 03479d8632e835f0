//! One prompt turn as a conversation: the prompt, then what happened in the order it happened (the agent's
//! reply and thoughts cut where a tool call began, a permission was asked, a plan was sent or the client was
//! asked something; tool calls; what the agent asked of the client), and how the turn ended (stop reason, error or
//! cancel, usage). A tool call is a card with its status timeline, its permission requests (options,
//! answer, how long the client took) and the MCP requests that served it (marked when one failed).

use super::facts::{age_text, usage_text};
use super::{frame_link, seq_link};
use crate::components::summary::plural;
use crate::format;
use crate::state::TraceState;
use acp_tee_shared::session::{ClientCall, Part, Permission, Text, ToolCall, Turn, TurnItem, PER_TURN_MAX};
use leptos::prelude::*;

/// One turn (`article#turn-N`); its open ages count on with `now`, the present on the trace's clock.
pub fn turn_card(st: TraceState, t: Turn, now: Memo<i64>) -> impl IntoView {
    let index = t.index;
    // What happened in the order it happened: parts of the reply and thoughts (cut where something else
    // happened), tool cards, requests made of the client.
    // A client call made for a listed tool call goes in its card; the others in their place.
    let items = t.in_order();
    let mut blocks: Vec<AnyView> = Vec::new();
    let mut asked: Vec<AnyView> = Vec::new();
    for (_, item) in &items {
        if !matches!(item, TurnItem::Client(_)) && !asked.is_empty() {
            blocks.push(client_calls(std::mem::take(&mut asked)));
        }
        match item {
            TurnItem::Part(p) => blocks.push(part_block(st, &t, p, Turn::unshown_after(p, &items)).into_any()),
            TurnItem::User => blocks.push(text_block(st, "user", "User (echoed)", &t.user).into_any()),
            TurnItem::Tool(c, made) => blocks.push(tool_card(st, c, made, t.start_t_ns, now).into_any()),
            TurnItem::Client(c) => asked.push(client_call(st, c).into_any()),
        }
    }
    if !asked.is_empty() {
        blocks.push(client_calls(asked));
    }
    let rest = (t.parts_left_out > 0).then(|| {
        let texts = [("thought", "Thought"), ("agent", "Agent")]
            .into_iter()
            .filter(|(role, _)| !t.text_after_parts(role).is_empty())
            .map(|(role, label)| {
                view! { <div class=format!("msg {role} rest")>
                    <div class="msg-head"><span class="who">{format!("{label}, the rest")}</span></div>
                    <div class="msg-text">{t.text_after_parts(role).to_owned()}</div>
                </div> }
            })
            .collect_view();
        view! {
            <p class="hint parts-left-out">{format!(
                "{} more parts of the reply and thoughts not listed (a turn lists at most {PER_TURN_MAX}): what came after the last part listed, in one block",
                t.parts_left_out
            )}</p>
            {texts}
        }
    });
    let ids = (t.messages.len() > 1).then(|| {
        let list = t
            .messages
            .iter()
            .map(|m| format!("{} ({}, {})", m.message_id, m.role, plural(m.text.chars as i64, "character")))
            .collect::<Vec<_>>()
            .join(", ");
        view! { <p class="hint">{format!("{} by id: {list}", plural(t.messages.len() as i64, "message"))}</p> }
    });
    view! {
        <article class="turn" id=format!("turn-{index}") data-turn=index>
            {turn_head(st, &t, now)}
            {text_block(st, "prompt", "Prompt", &t.prompt)}
            {blocks}
            {rest}
            {ids}
            {turn_end(st, &t)}
        </article>
    }
}

/// Requests the agent made of the client one after another, in one list.
fn client_calls(items: Vec<AnyView>) -> AnyView {
    view! {
        <section class="client-calls">
            <h3>"Asked of the client"</h3>
            <ul>{items}</ul>
        </section>
    }
    .into_any()
}

/// One part of the agent's reply or thoughts, with its frames and what happened just before it when that is
/// not shown above it.
fn part_block(st: TraceState, t: &Turn, p: &Part, after: Option<&(i64, String)>) -> impl IntoView {
    let (role, label) = if p.role == "thought" { ("thought", "Thought") } else { ("agent", "Agent") };
    let kept = t.part_text(p).to_owned();
    let kept_chars = kept.chars().count() as u64;
    let cut = (p.chars > kept_chars).then(|| {
        format!(" · first {} of {} characters", format::count(kept_chars as i64), format::count(p.chars as i64))
    });
    let chunks = (p.chunks > 1).then(|| format!(" · {}", plural(p.chunks as i64, "chunk")));
    let frames = if p.first_seq == p.last_seq {
        seq_link(st, p.first_seq).into_any()
    } else {
        view! { {seq_link(st, p.first_seq)} "–" {seq_link(st, p.last_seq)} }.into_any()
    };
    let after = after.cloned().map(|(seq, what)| {
        view! { <span class="after">{format!(" · after {what} ")} {seq_link(st, seq)}</span> }
    });
    let others = (p.other_blocks > 0).then(
        || view! { <span class="other-blocks">{format!("+ {}", plural(p.other_blocks as i64, "other block"))}</span> },
    );
    view! {
        <div class=format!("msg {role} part") data-first-seq=p.first_seq data-last-seq=p.last_seq>
            <div class="msg-head"><span class="who">{label}</span> {frames} {chunks} {cut} {after}</div>
            <div class="msg-text">{kept}</div>
            {others}
        </div>
    }
}

fn turn_head(st: TraceState, t: &Turn, now: Memo<i64>) -> impl IntoView {
    let (start, end) = (t.start_t_ns, t.end_t_ns);
    let took = move || match end {
        Some(end) => format::duration_ns(end - start),
        None => format!("open {}", age_text((now.get() - start).max(0))),
    };
    let first =
        t.first_chunk_ns.map(|ns| view! { <span>{format!("first words after {}", format::duration_ns(ns))}</span> });
    view! {
        <header class="turn-head">
            <h2>{frame_link(st, t.request_seq, format!("Turn {}", t.index + 1))}</h2>
            <span>{format!("at {}", format::offset_ns(t.start_t_ns))}</span>
            <span class="took">{took}</span>
            {first}
            <span>{plural(t.updates as i64, "update")}</span>
        </header>
    }
}

/// How the turn ended: stop reason or error, a cancel, usage.
fn turn_end(st: TraceState, t: &Turn) -> impl IntoView {
    let reason = match (&t.stop_reason, &t.error, t.response_seq) {
        (_, Some(e), Some(seq)) => {
            let data =
                t.error_data.clone().map(|d| view! { <pre class="error-data" title="the error's data">{d}</pre> });
            view! { <span class="stop err">{format!("error: {e}")}</span> " " {seq_link(st, seq)} {data} }.into_any()
        }
        (Some(r), _, Some(seq)) => {
            view! { "stopped: " <span class="stop" data-stop=r.clone()>{r.clone()}</span> " " {seq_link(st, seq)} }
                .into_any()
        }
        (_, _, Some(seq)) => view! { <span class="stop">"answered"</span> " " {seq_link(st, seq)} }.into_any(),
        (_, _, None) => view! { <span class="stop open">"no answer yet"</span> }.into_any(),
    };
    let cancel = t.cancel_seq.map(|c| view! { <span class="cancel">"cancel sent " {seq_link(st, c)}</span> });
    // What the agent wrote to stderr while the failed turn was open: often why it failed.
    let stderr = (!t.stderr.is_empty()).then(|| {
        let lines = t
            .stderr
            .iter()
            .map(|l| view! { <li>{seq_link(st, l.seq)} " " <code>{l.text.clone()}</code></li> })
            .collect_view();
        view! {
            <div class="turn-stderr" title="stderr names no session: with several turns open, a line may be another's">
                "the agent's stderr while the turn was open (last lines):"
                <ul>{lines}</ul>
            </div>
        }
    });
    let usage = t.usage.as_ref().map(|u| view! { <span class="usage">{usage_text(u)}</span> });
    let plans = (t.plans > 0).then(|| view! { <span>{format!("plan sent {}", plural(t.plans as i64, "time"))}</span> });
    view! { <footer class="turn-end">{reason}{cancel}{usage}{plans}{stderr}</footer> }
}

/// An assembled text with what it came in.
fn text_block(st: TraceState, class: &'static str, label: &'static str, text: &Text) -> impl IntoView {
    let cut = (text.chars > text.text.chars().count() as u64).then(|| {
        format!(
            " · first {} of {} characters",
            format::count(text.text.chars().count() as i64),
            format::count(text.chars as i64)
        )
    });
    let others = (!text.other_blocks.is_empty()).then(|| {
        let list = text.other_blocks.iter().map(|k| format!("{} ×{}", k.kind, k.count)).collect::<Vec<_>>().join(", ");
        view! { <span class="other-blocks">{format!("+ {list}")}</span> }
    });
    let chunks = if text.chunks > 1 { format!(" · {}", plural(text.chunks as i64, "chunk")) } else { String::new() };
    let frames = match (text.first_seq, text.last_seq) {
        (Some(a), Some(b)) if a != b => Some(view! { {seq_link(st, a)} "–" {seq_link(st, b)} }.into_any()),
        (Some(a), _) => Some(seq_link(st, a).into_any()),
        _ => None,
    };
    view! {
        <div class=format!("msg {class}")>
            <div class="msg-head"><span class="who">{label}</span> {frames} {chunks} {cut}</div>
            <div class="msg-text">{text.text.clone()}</div>
            {others}
        </div>
    }
}

/// A tool call: kind, title, latest status, its status timeline, permission requests, paths and payloads.
fn tool_card(st: TraceState, c: &ToolCall, made: &[&ClientCall], turn_start: i64, now: Memo<i64>) -> impl IntoView {
    let title = c.title.clone().unwrap_or_else(|| c.tool_call_id.clone());
    let status = c.status.clone().unwrap_or_else(|| "no status".to_owned());
    let timeline = c
        .statuses
        .iter()
        .map(|s| {
            let at = format!(" +{}", format::duration_ns(s.t_ns - turn_start));
            view! {
                <li class=format!("status status-{}", s.status) data-status=s.status.clone()>
                    <span class="status-name">{s.status.clone()}</span>
                    <span class="at">{at}</span> " " {seq_link(st, s.seq)}
                </li>
            }
        })
        .collect_view();
    let permissions = c.permissions.iter().map(|p| permission(st, p, now)).collect_view();
    let locations = (!c.locations.is_empty()).then(|| view! { <div class="locations">{c.locations.join(", ")}</div> });
    let content = (!c.content.is_empty()).then(|| {
        let list = c.content.iter().map(|k| format!("{} ×{}", k.kind, k.count)).collect::<Vec<_>>().join(", ");
        view! { <span class="content">{format!("content: {list}")}</span> }
    });
    let mcp_failed = super::mcp::any_failed(c).then(|| {
        view! { <span class="chip status-failed mcp-failed" title="an MCP request of this tool call failed">"MCP error"</span> }
    });
    let raw = |label: &'static str, text: &Option<String>| {
        text.clone().map(|t| view! { <details class="raw"><summary>{label}</summary><pre>{t}</pre></details> })
    };
    view! {
        <section class="tool" class:mcp-failed=super::mcp::any_failed(c) data-tool-call-id=c.tool_call_id.clone()
            data-status=status.clone()>
            <div class="tool-head">
                {c.kind.clone().map(|k| view! { <span class="chip">{k}</span> })}
                <span class="tool-title">{frame_link(st, c.first_seq, title)}</span>
                <span class=format!("chip status-{status}")>{status.clone()}</span>
                {mcp_failed}
                <span class="dim">{plural(c.updates as i64, "update")}</span>
            </div>
            <ol class="timeline" aria-label="status timeline">{timeline}</ol>
            {permissions}
            {(!made.is_empty()).then(|| {
                let items = made.iter().map(|cc| client_call(st, cc)).collect_view();
                view! {
                    <div class="tool-client-calls" title="asked of the client while this was the only tool call in progress">
                        <ul>{items}</ul>
                    </div>
                }
            })}
            {super::mcp::mcp_calls(c)}
            {locations}
            {content}
            {raw("input", &c.raw_input)}
            {raw("output", &c.raw_output)}
        </section>
    }
}

/// A permission request: the options, the answer and how long the client took, or how long it has waited.
fn permission(st: TraceState, p: &Permission, now: Memo<i64>) -> impl IntoView {
    // The names the user saw come first; the ids and kinds the agent sent
    // after them.
    let name_of = |i: usize| p.option_names.get(i).filter(|n| !n.is_empty());
    let options = p
        .options
        .iter()
        .enumerate()
        .map(|(i, o)| match name_of(i) {
            Some(name) => format!("{name} ({o})"),
            None => o.clone(),
        })
        .collect::<Vec<_>>()
        .join(", ");
    let answer = match (p.response_seq, p.waited_ns) {
        (Some(seq), waited) => {
            let outcome = match (&p.outcome, &p.option_id) {
                (Some(o), Some(id)) => match &p.option_name {
                    Some(name) => format!("{o} {name} ({id})"),
                    None => format!("{o} {id}"),
                },
                (Some(o), None) => o.clone(),
                _ => "answered".to_owned(),
            };
            let after = waited.map(|w| format!(" after {}", format::duration_ns(w))).unwrap_or_default();
            view! { <span class="outcome">{format!("→ {outcome}{after}")}</span> " " {seq_link(st, seq)} }.into_any()
        }
        (None, _) => {
            let asked = p.t_ns;
            let waited = move || format!("→ no answer after {}", age_text((now.get() - asked).max(0)));
            view! { <span class="outcome unanswered">{waited}</span> }.into_any()
        }
    };
    view! {
        <div class="permission" data-seq=p.request_seq>
            <span class="perm-label">"permission asked "</span> {seq_link(st, p.request_seq)}
            <span class="options">{format!(" options: {options} ")}</span>
            {answer}
        </div>
    }
}

/// A request the agent made of the client, with its answer.
fn client_call(st: TraceState, c: &ClientCall) -> impl IntoView {
    let subject = c.subject.clone().map(|s| format!(" {s}")).unwrap_or_default();
    let how = match (&c.error, &c.result, c.duration_ns) {
        (Some(e), _, _) => format!(" → error: {e}"),
        (None, Some(r), Some(d)) => format!(" → {r} in {}", format::duration_ns(d)),
        (None, None, Some(d)) => format!(" → done in {}", format::duration_ns(d)),
        (None, _, None) => " → no answer".to_owned(),
    };
    let answer = c.response_seq.map(|seq| view! { " " {seq_link(st, seq)} });
    let during = (c.tool_calls_in_progress > 0)
        .then(|| view! { <span class="dim">{format!(" (while {} tool calls were in progress)", c.tool_calls_in_progress)}</span> });
    view! {
        <li class="client-call" data-method=c.method.clone()>
            <code>{c.method.clone()}</code>{subject} " " {seq_link(st, c.request_seq)} {how} {answer} {during}
        </li>
    }
}
