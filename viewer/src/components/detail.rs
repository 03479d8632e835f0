//! The detail panel (`#detail`): the selected frame's facts, its pair, pretty JSON, raw bytes and envelope.

use super::json::json_tree;
use super::trace_state;
use crate::format;
use acp_tee_shared::api::{FrameDetail, FrameSummary};
use acp_tee_shared::{Direction, FrameKind};
use leptos::prelude::*;

fn dir_text(d: Direction) -> &'static str {
    match d {
        Direction::ClientToAgent => "Client → Agent",
        Direction::AgentToClient => "Agent → Client",
        Direction::AgentStderr => "Agent stderr",
    }
}

/// The panel beside the diagram.
#[component]
pub fn Detail() -> impl IntoView {
    let st = trace_state();
    let body = move || {
        let Some(seq) = st.query.with(|q| q.frame) else {
            return view! { <div class="hint">"Click a frame to see its bytes, timing and pair."</div> }.into_any();
        };
        st.detail.with(|d| match d {
            Some((s, Ok(detail))) if *s == seq => detail_view(detail.clone()).into_any(),
            Some((s, Err(e))) if *s == seq => view! { <div class="notice error">{e.0.clone()}</div> }.into_any(),
            _ => view! { <div class="hint">{format!("Loading frame #{seq}…")}</div> }.into_any(),
        })
    };
    view! { <aside id="detail">{body}</aside> }
}

fn facts(f: &FrameSummary) -> impl IntoView {
    let mut rows: Vec<(&'static str, String)> = vec![
        ("time", format::exact_offset_ns(f.t_ns)),
        ("direction", dir_text(f.dir).to_owned()),
        ("kind", f.kind.as_str().to_owned()),
        ("size", format!("{} bytes", format::count(f.size))),
    ];
    if let Some(id) = &f.id {
        rows.push(("id", id.to_string()));
    }
    if let Some(m) = &f.method {
        rows.push(("method", m.clone()));
    }
    if let Some(m) = &f.mcp_method {
        rows.push(("mcp method", m.clone()));
    }
    if let Some(s) = &f.session_id {
        rows.push(("session", s.clone()));
    }
    if let Some(l) = f.latency_ns {
        rows.push(("latency", format!("{} ({} ns)", format::duration_ns(l), format::count(l))));
    }
    view! {
        <dl class="facts">
            {rows.into_iter().map(|(k, v)| view! { <dt>{k}</dt><dd>{v}</dd> }).collect_view()}
        </dl>
    }
}

fn pair_view(f: &FrameSummary, pair: Option<FrameSummary>) -> impl IntoView {
    let st = trace_state();
    let pair = pair?;
    let what = if matches!(pair.kind, FrameKind::Request) { "request" } else { "response" };
    let latency =
        f.latency_ns.or(pair.latency_ns).map(|l| format!(" · {}", format::duration_ns(l))).unwrap_or_default();
    let seq = pair.seq;
    Some(view! {
        <div class="pair">
            <span>{format!("Paired with {what} #{seq}{latency}")}</span>
            <button id="jump-pair" on:click=move |_| st.jump_to(seq)>{format!("Jump to {what} #{seq}")}</button>
        </div>
    })
}

fn payload_views(d: &FrameDetail) -> impl IntoView {
    let raw_text = d.raw.clone().unwrap_or_default();
    let parsed = serde_json::from_str::<serde_json::Value>(&raw_text).ok();
    let json = match parsed {
        Some(v) => json_tree(&v),
        None if d.raw.is_some() => view! { <pre class="not-json">{raw_text.clone()}</pre> }.into_any(),
        None => view! { <div class="hint">"Not UTF-8; see the raw bytes below."</div> }.into_any(),
    };
    let raw = match (&d.raw, &d.raw_base64) {
        (Some(r), _) => r.clone(),
        (None, Some(b)) => format!("(not UTF-8; base64)\n{b}"),
        (None, None) => String::new(),
    };
    let envelope = d.envelope.clone().map(|e| {
        view! {
            <section>
                <h3>"Envelope (successor side of the hop)"</h3>
                <pre class="envelope">{e}</pre>
            </section>
        }
    });
    view! {
        <section>
            <h3>"JSON"</h3>
            <div class="json">{json}</div>
        </section>
        <section>
            <h3>"Raw"</h3>
            <pre class="raw">{raw}</pre>
        </section>
        {envelope}
    }
}

fn detail_view(d: FrameDetail) -> impl IntoView {
    let f = d.frame.clone();
    let title = f.method.clone().unwrap_or_else(|| f.kind.as_str().to_owned());
    view! {
        <header class="detail-head">
            <span class=format!("chip kind-{}", f.kind.as_str())>{f.kind.as_str()}</span>
            <h2>{format!("#{} {title}", f.seq)}</h2>
        </header>
        {f.preview.clone().map(|p| view! { <p class="detail-preview">{p}</p> })}
        {facts(&f)}
        {pair_view(&f, d.pair.clone())}
        {payload_views(&d)}
    }
}
