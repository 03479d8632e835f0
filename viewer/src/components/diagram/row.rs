//! One drawn row: a frame's arrow, labels and preview, a folded idle gap, or a row still loading.

use super::geometry::*;
use crate::components::trace_state;
use crate::format;
use crate::state::busy::{BusySpan, Callee};
use crate::state::layout::{FOLD_H, ROW_H};
use acp_tee_shared::api::FrameSummary;
use acp_tee_shared::{Direction, FrameKind};
use leptos::prelude::*;

/// Pixels as CSS.
pub fn px(v: f64) -> String {
    format!("{v:.1}px")
}

/// A frame's row.
#[component]
pub fn FrameRow(frame: FrameSummary, y: f64, fold: Option<i64>, base: Memo<f64>) -> impl IntoView {
    let st = trace_state();
    let seq = frame.seq;
    let selected = Memo::new(move |_| st.query.with(|q| q.frame == Some(seq)));
    let colour = frame_colour(&frame);
    let fold_view = fold.map(|gap| {
        view! {
            <div class="fold" style:top=move || px(y - base.get() - FOLD_H) style:width=px(DIAGRAM_W)>
                <span>{format!("⋯ {} idle ⋯", format::duration_ns(gap))}</span>
            </div>
        }
    });
    view! {
        {fold_view}
        <div
            class="frame"
            class:selected=move || selected.get()
            class:stderr=frame.dir == Direction::AgentStderr
            data-seq=seq
            data-kind=frame.kind.as_str()
            data-dir=frame.dir.as_str()
            style:top=move || px(y - base.get())
            style:width=px(DIAGRAM_W)
            on:click=move |_| st.select(seq)
        >
            <span class="t">{format::offset_ns(frame.t_ns)}</span>
            <span class="seq">{format!("#{seq}")}</span>
            {arrow(&frame, &colour)}
            {labels(&frame, &colour)}
        </div>
    }
}

/// The arrow: solid for requests, dashed for responses, thin with an open head for notifications.
fn arrow(f: &FrameSummary, colour: &str) -> impl IntoView {
    let (x1, x2) = match f.dir {
        Direction::ClientToAgent => (CLIENT_X, AGENT_X),
        Direction::AgentToClient => (AGENT_X, CLIENT_X),
        Direction::AgentStderr => (AGENT_X, STDERR_X - 4.0),
    };
    let sign = if x2 > x1 { 1.0 } else { -1.0 };
    let open_head = matches!(f.kind, FrameKind::Notification | FrameKind::Stderr);
    let thin = matches!(f.kind, FrameKind::Notification | FrameKind::Stderr | FrameKind::Invalid);
    let dashed = matches!(f.kind, FrameKind::Response | FrameKind::Error).then_some("6 4");
    let dotted = (f.kind == FrameKind::Stderr).then_some("2 3");
    let head = format!(
        "{:.1},{:.1} {:.1},{:.1} {:.1},{:.1}",
        x2 - sign * 9.0,
        ARROW_Y - 5.0,
        x2,
        ARROW_Y,
        x2 - sign * 9.0,
        ARROW_Y + 5.0
    );
    let line_end = x2 - sign * if open_head { 1.0 } else { 7.0 };
    let head_view = if open_head {
        view! { <polyline points=head fill="none" stroke=colour.to_owned() stroke-width="1.5" /> }.into_any()
    } else {
        view! { <polygon points=head fill=colour.to_owned() /> }.into_any()
    };
    let tap = (f.dir != Direction::AgentStderr).then(|| view! { <circle class="tap" cx=TEE_X cy=ARROW_Y r="3" /> });
    view! {
        <svg class="arrow" width=DIAGRAM_W height=ROW_H>
            <line
                x1=x1
                y1=ARROW_Y
                x2=line_end
                y2=ARROW_Y
                stroke=colour.to_owned()
                stroke-width=if thin { "1.25" } else { "2" }
                stroke-dasharray=dashed.or(dotted)
            />
            {head_view}
            {tap}
        </svg>
    }
}

/// Method label over the acp-tee lane, JSON-RPC id at the sender's end, preview under the arrow (or in
/// the stderr lane for stderr lines).
fn labels(f: &FrameSummary, colour: &str) -> impl IntoView {
    let stderr = f.dir == Direction::AgentStderr;
    let name = match (&f.method, f.kind) {
        (Some(m), _) => {
            Some(view! { <span class="method" style:color=colour.to_owned()>{m.clone()}</span> }.into_any())
        }
        (None, FrameKind::Stderr) => None,
        (None, kind) => Some(view! { <span class="label">{kind.as_str()}</span> }.into_any()),
    };
    let mcp = f.mcp_method.clone().map(|m| view! { <span class="mcp">{format!("mcp · {m}")}</span> });
    let id = f.id.as_ref().map(|id| {
        let left = if f.dir == Direction::ClientToAgent { CLIENT_X + 8.0 } else { AGENT_X - 108.0 };
        let align = if f.dir == Direction::ClientToAgent { "left" } else { "right" };
        view! { <span class="rpc-id" style:left=px(left) style:text-align=align>{format!("id {id}")}</span> }
    });
    let preview = f.preview.clone().map(|p| {
        let class = if stderr { "preview in-stderr" } else { "preview" };
        let title = p.clone();
        view! { <span class=class title=title>{p}</span> }
    });
    let kind_tag = (f.kind == FrameKind::Error).then(|| view! { <span class="err-tag">"error"</span> });
    view! {
        {(!stderr).then(|| view! { <div class="names">{name}{kind_tag}{mcp}</div> })}
        {id}
        {preview}
    }
}

/// A row whose page is still being fetched.
#[component]
pub fn LoadingRow(y: f64, base: Memo<f64>) -> impl IntoView {
    view! {
        <div class="frame-loading" style:top=move || px(y - base.get()) style:width=px(DIAGRAM_W)>
            <span class="bar"></span>
        </div>
    }
}

/// A callee's busy span: a bar on its lane from request to response with the duration beside it.
#[component]
pub fn BusyBar(span: BusySpan, base: Memo<f64>) -> impl IntoView {
    let on_agent = span.callee == Callee::Agent;
    let shift = span.column as f64 * 8.0;
    let x = if on_agent { AGENT_X - 3.0 + shift } else { CLIENT_X - 3.0 - shift };
    let top = span.y0 + ARROW_Y;
    let height = (span.y1 - span.y0).max(3.0);
    let colour =
        if span.error { format!("{ERROR_COLOUR}99") } else { pair_colour(span.req_seq).replace(')', " / 0.55)") };
    view! {
        <div
            class="busy"
            class:open=span.open_end
            data-seq=span.req_seq
            style:left=px(x)
            style:top=move || px(top - base.get())
            style:height=px(height)
            style:background=colour
        >
            <span class="busy-label" class:client=!on_agent>{span.label}</span>
        </div>
    }
}
