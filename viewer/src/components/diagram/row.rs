//! One drawn row: a frame's arrow, labels and preview, a marked gap, or a row still loading.

use super::geometry::*;
use crate::components::highlight::marked;
use crate::components::trace_state;
use crate::format;
use crate::state::busy::{BusySpan, Callee};
use crate::state::layout::{FOLD_H, ROW_H};
use crate::view_query::Axis;
use acp_tee_shared::api::FrameSummary;
use acp_tee_shared::{Direction, FrameKind};
use leptos::prelude::*;

/// Pixels as CSS.
pub fn px(v: f64) -> String {
    format!("{v:.1}px")
}

/// The band or label of the gap above a row: a folded idle band on the time axis, the gap's length in the
/// time column on the linear axis.
fn gap_view(gap: Option<i64>, axis: Axis, y: f64, base: Memo<f64>, geo: Geometry) -> Option<AnyView> {
    let gap = gap?;
    Some(match axis {
        Axis::Linear => view! {
            <div class="gap-mark" style:top=move || px(y - base.get() - 16.0)>{format!("↕ {}", format::duration_ns(gap))}</div>
        }
        .into_any(),
        _ => view! {
            <div class="fold" style:top=move || px(y - base.get() - FOLD_H) style:width=px(geo.width)>
                <span>{format!("⋯ {} idle ⋯", format::duration_ns(gap))}</span>
            </div>
        }
        .into_any(),
    })
}

/// A frame's row: focusable, selected by a click or Enter.
#[component]
pub fn FrameRow(
    frame: FrameSummary,
    y: f64,
    gap: Option<i64>,
    /// How many frames of a collapsed run of streamed chunks the row stands for (1: itself alone).
    run: u32,
    axis: Axis,
    base: Memo<f64>,
    geo: Geometry,
    /// How many sessions the fetched frames belong to (each gets a colour when there are several).
    sessions: usize,
) -> impl IntoView {
    let st = trace_state();
    let seq = frame.seq;
    let selected = Memo::new(move |_| st.query.with(|q| q.frame == Some(seq)));
    let t_ns = frame.t_ns;
    let colour = frame_colour(&frame);
    let words = st.find.words;
    let session = frame.session_id.clone().filter(|_| sessions > 1).map(|s| {
        let title = format!("session {s}");
        view! { <span class="sess" title=title style:background=session_colour(&s)></span> }
    });
    let label = format!("#{seq} {}", frame.method.clone().unwrap_or_else(|| frame.kind.as_str().to_owned()));
    view! {
        {gap_view(gap, axis, y, base, geo)}
        <div
            class="frame"
            class:selected=move || selected.get()
            class:found=move || st.find.is_hit(seq)
            class:stderr=frame.dir == Direction::AgentStderr
            role="option"
            tabindex="0"
            aria-label=label
            aria-selected=move || if selected.get() { "true" } else { "false" }
            data-seq=seq
            data-kind=frame.kind.as_str()
            data-dir=frame.dir.as_str()
            style:top=move || px(y - base.get())
            style:width=px(geo.width)
            on:click=move |ev| {
                let measured = ev.shift_key() && st.measure_to(seq, t_ns);
                if !measured {
                    st.select(seq);
                }
            }
            on:keydown=move |ev| {
                if ev.key() == "Enter" || ev.key() == " " {
                    ev.prevent_default();
                    st.select(seq);
                }
            }
        >
            {session}
            {(run > 1).then(|| {
                let title = format!("{run} {} frames in a row, drawn as one (collapse=chunks)", frame.update.clone().unwrap_or_default());
                view! { <span class="run" title=title>{format!("×{run}")}</span> }
            })}
            <span class="t">{format::offset_ns(frame.t_ns)}</span>
            <span class="seq">{format!("#{seq}")}</span>
            {move || st.findings.marker(seq).map(|m| {
                view! {
                    <span class=format!("finding-mark sev-{}", m.severity) title=m.text.join("\n")>"!"</span>
                }
            })}
            {arrow(&frame, &colour, geo)}
            {labels(&frame, &colour, geo, words)}
        </div>
    }
}

/// The arrow: solid for requests, dashed for responses, thin with an open head for notifications.
fn arrow(f: &FrameSummary, colour: &str, geo: Geometry) -> impl IntoView {
    let (x1, x2) = match f.dir {
        Direction::ClientToAgent => (geo.client_x, geo.agent_x),
        Direction::AgentToClient => (geo.agent_x, geo.client_x),
        Direction::AgentStderr => (geo.agent_x, geo.stderr_x - 4.0),
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
    let tap = (f.dir != Direction::AgentStderr).then(|| view! { <circle class="tap" cx=geo.tee_x cy=ARROW_Y r="3" /> });
    view! {
        <svg class="arrow" width=geo.width height=ROW_H>
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

/// Widths of a row's labels (style.css): a method name's characters (12 px monospace) and padding, a tag's
/// characters (11 px) and its gap before, an id label's distance from its lane, the least room between an
/// id and the name, the least width an id is given.
const NAME_CHAR_W: f64 = 7.4;
const NAME_PAD: f64 = 10.0;
const TAG_CHAR_W: f64 = 6.8;
const TAG_GAP: f64 = 6.0;
const ID_MARGIN: f64 = 8.0;
const ID_GAP: f64 = 6.0;
const MIN_ID_W: f64 = 36.0;

/// Method label over the acp-tee lane, JSON-RPC id at the sender's end, preview under the arrow (or in
/// the stderr lane for stderr lines). Whatever is cut short shows whole in its tooltip.
/// `words`: the search's and find's, marked in the preview as they change.
fn labels(f: &FrameSummary, colour: &str, geo: Geometry, words: Memo<Vec<String>>) -> impl IntoView {
    let stderr = f.dir == Direction::AgentStderr;
    let name = match (&f.method, f.kind) {
        (Some(m), _) => {
            Some(view! { <span class="method" style:color=colour.to_owned()>{m.clone()}</span> }.into_any())
        }
        (None, FrameKind::Stderr) => None,
        (None, kind) => Some(view! { <span class="label">{kind.as_str()}</span> }.into_any()),
    };
    let mcp = f.mcp_method.clone().map(|m| view! { <span class="mcp">{format!("mcp · {m}")}</span> });
    // A tag after the name: its text, if any.
    let tag = match (f.kind, f.tool_error) {
        (FrameKind::Error, _) => Some("error"),
        (_, true) => Some("tool error"),
        _ => None,
    };
    // Ids stay clear of the method name centred over the acp-tee lane, in the room its width (guessed from
    // its characters, the font being monospace) leaves them, but never narrower than MIN_ID_W: a name too
    // long for that is cut short instead (whole in its tooltip).
    let name_len = f.method.as_deref().map_or_else(|| f.kind.as_str().chars().count(), |m| m.chars().count());
    let tags_w = [tag.map(str::len), f.mcp_method.as_ref().map(|m| m.chars().count() + 6)]
        .into_iter()
        .flatten()
        .map(|n| TAG_GAP + TAG_CHAR_W * n as f64)
        .sum::<f64>();
    let names_w = geo.span() - 48.0;
    let name_w = (NAME_PAD + NAME_CHAR_W * name_len as f64 + tags_w).min(names_w);
    let id_w = (geo.span() / 2.0 - name_w / 2.0 - ID_MARGIN - ID_GAP).clamp(MIN_ID_W, 140.0);
    let names_w = match f.id {
        Some(_) => names_w.min(geo.span() - 2.0 * (ID_MARGIN + id_w + ID_GAP)).max(0.0),
        None => names_w,
    };
    let names_left = geo.tee_x - names_w / 2.0;
    let names_title = [f.method.clone(), f.mcp_method.clone().map(|m| format!("mcp · {m}"))]
        .into_iter()
        .flatten()
        .collect::<Vec<_>>()
        .join("  ");
    let id = f.id.as_ref().map(|id| {
        let (left, align) = match f.dir {
            Direction::ClientToAgent => (geo.client_x + ID_MARGIN, "left"),
            _ => (geo.agent_x - ID_MARGIN - id_w, "right"),
        };
        let text = format!("id {id}");
        let title = text.clone();
        view! {
            <span class="rpc-id" title=title style:left=px(left) style:width=px(id_w) style:text-align=align>{text}</span>
        }
    });
    let preview = f.preview.clone().map(|p| {
        let title = p.clone();
        let text = move || words.with(|w| marked(p.clone(), w));
        if stderr {
            let (left, width) = (geo.stderr_x + 8.0, geo.width - geo.stderr_x - 12.0);
            view! { <span class="preview in-stderr" title=title style:left=px(left) style:width=px(width)>{text}</span> }
                .into_any()
        } else {
            let (left, width) = (geo.client_x + 12.0, geo.span() - 24.0);
            view! { <span class="preview" title=title style:left=px(left) style:width=px(width)>{text}</span> }
                .into_any()
        }
    });
    // A tool's failure is a JSON-RPC success: tagged apart from an error.
    let kind_tag = tag.map(|t| view! { <span class="err-tag">{t}</span> });
    view! {
        {(!stderr).then(|| view! {
            <div class="names" title=names_title style:left=px(names_left) style:width=px(names_w)>{name}{kind_tag}{mcp}</div>
        })}
        {id}
        {preview}
    }
}

/// A row whose page is still being fetched.
#[component]
pub fn LoadingRow(y: f64, base: Memo<f64>, geo: Geometry) -> impl IntoView {
    view! {
        <div class="frame-loading" style:top=move || px(y - base.get()) style:width=px(geo.width)>
            <span class="bar" style:left=px(geo.client_x) style:width=px(geo.span())></span>
        </div>
    }
}

/// Where a selected frame that the filters hide would be: a marked line above the first frame after it.
#[component]
pub fn HiddenMark(seq: i64, y: f64, base: Memo<f64>, geo: Geometry) -> impl IntoView {
    view! {
        <div id="hidden-mark" class="hidden-mark" style:top=move || px(y - base.get() - 2.0) style:width=px(geo.width)>
            <span>{format!("#{seq} is here, hidden by the filters")}</span>
        </div>
    }
}

/// The band between two measured frames, with the time between them.
#[component]
pub fn MeasureBand(y0: f64, y1: f64, text: String, base: Memo<f64>, geo: Geometry) -> impl IntoView {
    view! {
        <div id="measure-band" class="measure-band" style:top=move || px(y0 - base.get()) style:height=px(y1 - y0 + ROW_H)
            style:width=px(geo.width)>
            <span>{text}</span>
        </div>
    }
}

/// The selected range (or the one being dragged) over the rows in view, with its ends and duration.
#[component]
pub fn RangeBand(y0: f64, y1: f64, text: String, base: Memo<f64>, geo: Geometry) -> impl IntoView {
    view! {
        <div id="range-band" class="range-band" style:top=move || px(y0 - base.get()) style:height=px(y1 - y0)
            style:width=px(geo.width)>
            <span>{text}</span>
        </div>
    }
}

/// A callee's busy span: a bar on its lane from request to response, its duration beside the response
/// (beside the request while it is open), so the labels of different spans never share a row.
#[component]
pub fn BusyBar(span: BusySpan, base: Memo<f64>, geo: Geometry) -> impl IntoView {
    let on_agent = span.callee == Callee::Agent;
    let shift = span.column as f64 * 8.0;
    let x = if on_agent { geo.agent_x - 3.0 + shift } else { geo.client_x - 3.0 - shift };
    let top = span.y0 + ARROW_Y;
    let height = (span.y1 - span.y0).max(3.0);
    let colour =
        if span.error { format!("{ERROR_COLOUR}99") } else { pair_colour(span.req_seq).replace(')', " / 0.55)") };
    // An open end fades out. A gradient, not a mask: a mask would also hide the label beside the bar.
    let colour = match (span.open_start, span.open_end) {
        (true, _) => {
            format!("linear-gradient(to bottom, transparent, {colour} 40px, {colour} calc(100% - 80px), transparent)")
        }
        (false, true) => format!("linear-gradient(to bottom, {colour} 75%, transparent)"),
        (false, false) => colour,
    };
    // A bar across every row drawn begins in the overscan above the viewport: its label goes just below
    // the viewport's top edge, a line lower per column so that side-by-side bars' labels do not overlap.
    let label_top =
        span.open_start.then(|| px((crate::state::OVERSCAN_PX + 48.0 + 18.0 * shift / 8.0).min(height / 2.0)));
    let title = if span.hidden_start {
        format!("request #{} is hidden by the filters; {}", span.req_seq, span.label)
    } else if span.open_start {
        format!("request #{} ({}), sent above and answered below what is shown", span.req_seq, span.label)
    } else {
        format!("request #{}: {}", span.req_seq, span.label)
    };
    view! {
        <div
            class="busy"
            class:open=span.open_end
            class:open-start=span.open_start
            class:hidden-start=span.hidden_start
            data-seq=span.req_seq
            title=title
            style:left=px(x)
            style:top=move || px(top - base.get())
            style:height=px(height)
            style:background=colour
        >
            <span class="busy-label" class:client=!on_agent class:at-end=!span.open_end style:top=label_top>{span.label}</span>
        </div>
    }
}
