//! The MCP lanes: one per MCP server the agent started (`state::family`), right of the Agent lane. Each
//! frame of a server is an arrow between the Agent and its lane at the height its time maps to among the
//! ACP rows (`state::mcp`), labelled as MCP previews read (`tools/call get_current_time`); the server's
//! busy span is a bar on its lane. A click shows the frame in the detail panel.

use super::geometry::*;
use super::row::px;
use crate::components::trace_state;
use crate::format;
use crate::state::family::McpLane;
use crate::state::mcp::{McpSpan, Placed, LABEL_DY};
use acp_tee_shared::api::FrameSummary;
use acp_tee_shared::{Direction, FrameKind};
use leptos::prelude::*;

/// What a lane's heading needs.
#[derive(Clone, Debug, PartialEq)]
pub struct LaneHead {
    /// The child trace.
    pub trace_id: i64,
    /// The server's name.
    pub name: String,
    /// Frames drawn.
    pub drawn: usize,
    /// Frames not drawn (past the lane's bound).
    pub left_out: u64,
    /// The child is still being recorded.
    pub live: bool,
}

/// The headings of the lanes.
pub fn lane_heads(lanes: &[McpLane]) -> Vec<LaneHead> {
    lanes
        .iter()
        .map(|l| LaneHead {
            trace_id: l.trace_id,
            name: l.name.clone(),
            drawn: l.frames.len(),
            left_out: l.left_out(),
            live: l.live,
        })
        .collect()
}

/// The widest a lane's heading may be: within its gap, and over the room before the stderr lane.
fn head_w(geo: Geometry) -> f64 {
    (geo.mcp_gap - 12.0).min(96.0)
}

/// The MCP lanes' headings, for the row of lane headings.
pub fn head_views(heads: &[LaneHead], geo: Geometry) -> impl IntoView {
    heads
        .iter()
        .enumerate()
        .map(|(i, h)| {
            let cut = (h.left_out > 0)
                .then(|| format!("; only its first {} frames are drawn, {} more are not", h.drawn, h.left_out));
            let title = format!(
                "MCP server {} (trace {}{}){}",
                h.name,
                h.trace_id,
                if h.live { ", recording" } else { "" },
                cut.clone().unwrap_or_default()
            );
            view! {
                <div class="lane-head mcp" class:cut=cut.is_some() data-lane="mcp" data-trace=h.trace_id title=title
                    style:left=px(geo.mcp_x(i)) style:max-width=px(head_w(geo))>
                    {cut.is_some().then_some("⚠ ")}
                    {h.name.clone()}
                </div>
            }
        })
        .collect_view()
}

/// The MCP lanes' vertical lines.
pub fn lane_lines(geo: Geometry) -> impl IntoView {
    (0..geo.mcp_lanes).map(|i| view! { <div class="lane-line mcp" style:left=px(geo.mcp_x(i))></div> }).collect_view()
}

/// A frame's label: the method and what it names (`tools/call get_current_time`), an error's message, a
/// tool's failure (its preview: `tool error: ...`).
pub fn label(f: &FrameSummary) -> String {
    let method = f.method.clone().unwrap_or_else(|| f.kind.as_str().to_owned());
    match (f.kind, &f.preview) {
        (FrameKind::Error, Some(p)) => format!("{method} error: {p}"),
        (FrameKind::Error, None) => format!("{method} error"),
        (FrameKind::Response, None) if f.tool_error => format!("{method} tool error"),
        (FrameKind::Response, Some(p)) if f.tool_error => format!("{method} {p}"),
        (_, Some(p)) if f.kind != FrameKind::Response => format!("{method} {p}"),
        _ => method,
    }
}

/// An error answer, or a tool's failure (a JSON-RPC success whose result says `isError`).
pub fn failed(f: &FrameSummary) -> bool {
    f.kind == FrameKind::Error || f.tool_error
}

/// About the width of a character of a label (10.5 px monospace).
const CHAR_W: f64 = 6.4;

/// The label as drawn in `room` pixels: when the whole one does not fit, what the frame names
/// (`get_current_time`) says more than its method; the whole label is in the tooltip.
fn fitted(f: &FrameSummary, whole: &str, room: f64) -> String {
    let fits = whole.chars().count() as f64 * CHAR_W <= room;
    match (&f.preview, f.kind) {
        (Some(p), FrameKind::Request | FrameKind::Notification) if !fits => p.clone(),
        _ => whole.to_owned(),
    }
}

/// One drawn MCP frame: where it is, what it is.
#[derive(Clone, Debug, PartialEq)]
pub struct McpItem {
    /// Its place.
    pub placed: Placed,
    /// Its lane's trace and name.
    pub trace_id: i64,
    /// The server's name.
    pub server: String,
    /// The frame.
    pub frame: FrameSummary,
}

/// Height of an MCP arrow's box above its line (the label's room).
const BOX_ABOVE: f64 = LABEL_DY - 1.0;
/// Height of an MCP arrow's box below its line.
const BOX_BELOW: f64 = 4.0;

/// An MCP frame: an arrow from the Agent to the server's lane (a request, or the agent's notification) or
/// back (an answer, or the server's own message), its label above it when there is room.
#[component]
pub fn McpArrow(item: McpItem, base: Memo<f64>, geo: Geometry) -> impl IntoView {
    let st = trace_state();
    let McpItem { placed, trace_id, server, frame: f } = item;
    let seq = f.seq;
    let selected = Memo::new(move |_| st.query.with(|q| q.mcp_pick() == Some((trace_id, seq))));
    let (left, w) = (geo.agent_x, geo.mcp_x(placed.event.lane) - geo.agent_x);
    let to_server = f.dir == Direction::ClientToAgent;
    let (x1, x2) = if to_server { (0.0, w) } else { (w, 0.0) };
    let sign = if x2 > x1 { 1.0 } else { -1.0 };
    let colour = if failed(&f) { ERROR_COLOUR } else { MCP_COLOUR };
    let open_head = f.kind == FrameKind::Notification;
    let y = BOX_ABOVE;
    let head = format!("{:.1},{:.1} {x2:.1},{y:.1} {:.1},{:.1}", x2 - sign * 8.0, y - 4.0, x2 - sign * 8.0, y + 4.0);
    let head_view = if open_head {
        view! { <polyline points=head fill="none" stroke=colour stroke-width="1.25" /> }.into_any()
    } else {
        view! { <polygon points=head fill=colour /> }.into_any()
    };
    let text = label(&f);
    let who = if to_server { format!("Agent → {server}") } else { format!("{server} → Agent") };
    let latency = f.latency_ns.map(|l| format!(" · {}", format::duration_ns(l))).unwrap_or_default();
    let title =
        format!("#{seq} {text}{latency}\n{who}, MCP trace {trace_id}, at {}", format::offset_ns(placed.event.t_ns));
    let aria = format!("MCP {server} #{seq} {text}");
    let shown = placed.labelled.then(|| {
        let drawn = fitted(&f, &text, w - 16.0);
        view! { <span class="mcp-label" class:err=failed(&f) style:width=px(w - 16.0)>{drawn}</span> }
    });
    let pick = move || st.pick_mcp(trace_id, seq);
    view! {
        <div
            class="mcp-frame"
            class:selected=move || selected.get()
            role="button"
            tabindex="0"
            aria-label=aria
            title=title
            data-trace=trace_id
            data-seq=seq
            data-kind=f.kind.as_str()
            data-dir=f.dir.as_str()
            data-label=text
            style:left=px(left)
            style:width=px(w)
            style:top=move || px(placed.y - BOX_ABOVE - base.get())
            style:height=px(BOX_ABOVE + BOX_BELOW)
            on:click=move |_| pick()
            on:keydown=move |ev| {
                if ev.key() == "Enter" || ev.key() == " " {
                    ev.prevent_default();
                    pick();
                }
            }
        >
            {shown}
            <svg class="arrow" width=w height=BOX_ABOVE + BOX_BELOW>
                <line x1=x1 y1=y x2=x2 - sign * if open_head { 1.0 } else { 6.0 } y2=y stroke=colour
                    stroke-width=if open_head { "1.1" } else { "1.6" }
                    stroke-dasharray=matches!(f.kind, FrameKind::Response | FrameKind::Error).then_some("5 3") />
                {head_view}
            </svg>
        </div>
    }
}

/// A server's busy span on its lane, its duration beside the answer (beside the top while it is open).
#[component]
pub fn McpBusyBar(span: McpSpan, base: Memo<f64>, geo: Geometry) -> impl IntoView {
    let x = geo.mcp_x(span.lane) - 3.0 + span.column as f64 * 8.0;
    let height = (span.y1 - span.y0).max(3.0);
    let colour = if span.error { format!("{ERROR_COLOUR}99") } else { format!("{MCP_COLOUR}8c") };
    let title = format!("MCP request #{}: {}", span.req_seq, span.label);
    view! {
        <div class="busy mcp-busy" class:open=span.open_end data-seq=span.req_seq data-lane=span.lane title=title
            style:left=px(x) style:top=move || px(span.y0 - base.get()) style:height=px(height) style:background=colour>
            <span class="busy-label" class:at-end=!span.open_end>{span.label}</span>
        </div>
    }
}

/// What the MCP lanes leave out, said above the diagram: lanes past their bound, a family not read.
#[component]
pub fn McpNotes() -> impl IntoView {
    let st = trace_state();
    let notes = Memo::new(move |_| {
        let mut notes: Vec<(String, Option<i64>)> = st.family.lanes.with(|lanes| {
            lanes
                .iter()
                .filter(|l| l.left_out() > 0)
                .map(|l| {
                    let text = format!(
                        "MCP lane {}: only its first {} frames are drawn ({} more are not). ",
                        l.name,
                        format::count(l.frames.len() as i64),
                        format::count(l.left_out() as i64)
                    );
                    (text, Some(l.trace_id))
                })
                .collect()
        });
        if let Some(e) = st.family.error.get() {
            notes.push((format!("The MCP servers this agent started cannot be shown: {e}"), None));
        }
        notes
    });
    move || {
        let notes = notes.get();
        (!notes.is_empty()).then(|| {
            let items = notes
                .into_iter()
                .map(|(text, trace)| {
                    let link =
                        trace.map(|t| view! { <a href=format!("/traces/{t}")>{format!("all of trace {t}")}</a> });
                    view! { <li>{text}{link}</li> }
                })
                .collect_view();
            view! { <ul id="mcp-notes" class="mcp-notes" role="status">{items}</ul> }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::state::testing::summary;

    fn call(kind: FrameKind, preview: Option<&str>) -> FrameSummary {
        FrameSummary {
            method: Some("tools/call".into()),
            preview: preview.map(str::to_owned),
            ..summary(6, 0, Direction::ClientToAgent, kind)
        }
    }

    #[test]
    fn labels_read_as_mcp_previews_and_keep_the_name_when_narrow() {
        let req = call(FrameKind::Request, Some("get_current_time"));
        let whole = label(&req);
        assert_eq!(whole, "tools/call get_current_time");
        assert_eq!(fitted(&req, &whole, 400.0), whole);
        assert_eq!(fitted(&req, &whole, 120.0), "get_current_time");
        assert_eq!(label(&call(FrameKind::Response, None)), "tools/call");
        assert_eq!(label(&call(FrameKind::Error, Some("unknown tool"))), "tools/call error: unknown tool");
        let failure = FrameSummary { tool_error: true, ..call(FrameKind::Response, Some("tool error: no such zone")) };
        assert_eq!(label(&failure), "tools/call tool error: no such zone");
        assert!(failed(&failure) && !failed(&call(FrameKind::Response, None)));
    }
}
