//! The detail panel (`#detail`): the selected frame's facts, its pair, its payload (a JSON tree and the
//! raw bytes for messages; the line, terminal escapes removed, for stderr; the raw text for invalid
//! frames), the envelope, and a notice when the filters hide the frame. A frame larger than the API's
//! [`DETAIL_MAX_BYTES`] is shown as text only (no JSON tree): its start, then, on "show all", the whole.
//! A frame picked on an MCP lane is shown the same way, with its server and a link to its own trace.

use super::json::{json_tree, parse};
use super::trace_state;
use crate::format;
use acp_tee_shared::api::{FrameDetail, FrameSummary, DETAIL_MAX_BYTES};
use acp_tee_shared::{Direction, FrameKind};
use leptos::prelude::*;
use leptos::task::spawn_local;
use wasm_bindgen::{JsCast, JsValue};

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
    // The picked MCP frame's server and clock offset: known once the family has come (a link may come first).
    let picked_lane = Memo::new(move |_| {
        let (trace, _) = st.query.with(|q| q.mcp_pick())?;
        st.family.lanes.with(|l| l.iter().find(|l| l.trace_id == trace).map(|l| (l.name.clone(), l.offset_ns)))
    });
    let body = move || {
        if let Some(pick) = st.query.with(|q| q.mcp_pick()) {
            let lane = picked_lane.get();
            return st.family.detail.with(|d| match d {
                Some((k, Ok(detail))) if *k == pick => mcp_detail_view(pick.0, lane, detail.clone()).into_any(),
                Some((k, Err(e))) if *k == pick => {
                    view! { <div class="notice error">{e.message.clone()}</div> }.into_any()
                }
                _ => view! { <div class="hint">{format!("Loading frame #{} of MCP trace {}…", pick.1, pick.0)}</div> }
                    .into_any(),
            });
        }
        let Some(seq) = st.query.with(|q| q.frame) else {
            return view! {
                <div class="hint">
                    "Select a frame (click it, or press j / ↓) to see its bytes, timing and pair; then shift+click another to measure the time between them."
                </div>
            }
            .into_any();
        };
        st.detail.with(|d| match d {
            Some((s, Ok(detail))) if *s == seq => detail_view(detail.clone()).into_any(),
            Some((s, Err(e))) if *s == seq => view! { <div class="notice error">{e.message.clone()}</div> }.into_any(),
            _ => view! { <div class="hint">{format!("Loading frame #{seq}…")}</div> }.into_any(),
        })
    };
    let measured = move || {
        st.measure.get().map(|m| {
            view! {
                <div id="measure" class="banner info" role="status">
                    {format!("{} between them", super::diagram::measure_text(m))}
                    " " <button class="link" on:click=move |_| st.measure.set(None)>"clear"</button>
                </div>
            }
        })
    };
    // What the protocol checks found at the selected frame, above its bytes.
    let found = move || {
        let seq = st.query.with(|q| q.frame).filter(|_| st.query.with(|q| q.mcp_pick()).is_none())?;
        let found = st.findings.at(seq);
        (!found.is_empty()).then(|| {
            let items = found
                .into_iter()
                .map(|(severity, code, message)| {
                    view! { <li class=format!("sev-{}", severity.as_str())><code>{code}</code> " " {message}</li> }
                })
                .collect_view();
            view! {
                <section id="frame-findings" class="banner warn" role="note">
                    <strong>"Found at this frame:"</strong>
                    <ul>{items}</ul>
                </section>
            }
        })
    };
    view! {
        <aside id="detail" aria-label="selected frame">
            <super::range::RangePanel />
            <HiddenNotice />
            {measured}
            {found}
            {body}
        </aside>
    }
}

/// Says when the selected frame is hidden by the filters, with a way to show it.
#[component]
fn HiddenNotice() -> impl IntoView {
    let st = trace_state();
    move || {
        let h = st.hidden.get()?;
        (st.query.with(|q| q.frame) == Some(h.seq)).then(|| {
            view! {
                <div id="hidden-notice" class="banner warn" role="status">
                    {format!("#{} is hidden by the current filters, so the diagram does not show it. ", h.seq)}
                    <button class="link" on:click=move |_| st.url.update(true, |q| {
                        q.filters = Default::default();
                        q.rejected.retain(|r| !super::filters::FILTER_KEYS.contains(&r.key));
                    })>"Clear filters"</button>
                </div>
            }
        })
    }
}

/// A fact's value; method and session values filter the diagram by them when clicked.
fn fact_value(key: &'static str, value: String) -> AnyView {
    let st = trace_state();
    let filter_key = match key {
        "method" => Some("method"),
        "session" => Some("session"),
        _ => None,
    };
    match filter_key {
        Some(k) => {
            let v = value.clone();
            let apply = move |_| {
                let v = v.clone();
                st.url.update(true, |q| {
                    q.accept(k);
                    if k == "method" {
                        q.filters.method = Some(v);
                    } else {
                        q.filters.session = Some(v);
                    }
                });
            };
            view! {
                <dd><button class="link fact-filter" data-filter=k title=format!("show only frames with this {key}") on:click=apply>{value}</button></dd>
            }
            .into_any()
        }
        None => view! { <dd>{value}</dd> }.into_any(),
    }
}

fn facts(f: &FrameSummary, started_at: &str) -> impl IntoView {
    let wall = format::wall_clock_at(started_at, f.t_ns);
    let mut rows: Vec<(&'static str, String)> = vec![
        ("time", format::exact_offset_ns(f.t_ns)),
        ("direction", dir_text(f.dir).to_owned()),
        ("kind", f.kind.as_str().to_owned()),
        ("size", format!("{} bytes", format::count(f.size))),
    ];
    if let Some(w) = wall {
        rows.insert(1, ("wall clock", w));
    }
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
            {rows.into_iter().map(|(k, v)| view! { <dt>{k}</dt>{fact_value(k, v)} }).collect_view()}
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
            <button id="jump-pair" on:click=move |_| st.jump_to(seq, true)>{format!("Jump to {what} #{seq}")}</button>
        </div>
    })
}

/// Plays the trace from this frame on.
fn replay_from(seq: i64) -> impl IntoView {
    let st = trace_state();
    view! {
        <div class="pair">
            <button id="replay-from" title="play the trace as it happened, from this frame"
                on:click=move |_| crate::state::replay::play_from(st, seq)>"▶ Replay from here"</button>
        </div>
    }
}

/// Terminal escapes made visible (`␛[31m`), for showing the exact bytes of a coloured line.
fn visible_escapes(s: &str) -> String {
    s.replace('\u{1b}', "␛")
}

fn section(title: &'static str, body: AnyView) -> AnyView {
    view! { <section><h3>{title}</h3>{body}</section> }.into_any()
}

/// Calls `target.name(arg)` through JavaScript (for browser methods whose web-sys bindings are not built).
fn call_js(target: &JsValue, name: &str, arg: &JsValue) -> Option<JsValue> {
    let f = js_sys::Reflect::get(target, &JsValue::from_str(name)).ok()?.dyn_into::<js_sys::Function>().ok()?;
    f.call1(target, arg).ok()
}

/// Copies text to the clipboard (`navigator.clipboard.writeText`).
fn copy(text: &str) {
    let clipboard = js_sys::Reflect::get(&window(), &JsValue::from_str("navigator"))
        .and_then(|n| js_sys::Reflect::get(&n, &JsValue::from_str("clipboard")));
    if let Ok(clipboard) = clipboard {
        call_js(&clipboard, "writeText", &JsValue::from_str(text));
    }
}

/// Opens or closes every node of the JSON tree.
fn open_all(open: bool) {
    let doc: JsValue = document().into();
    let Some(nodes) = call_js(&doc, "querySelectorAll", &JsValue::from_str("#detail .json details")) else { return };
    for node in js_sys::Array::from(&nodes).iter() {
        if let Ok(el) = node.dyn_into::<web_sys::Element>() {
            let _ = if open { el.set_attribute("open", "") } else { el.remove_attribute("open") };
        }
    }
}

/// A section's title with buttons after it.
fn tools(buttons: AnyView) -> AnyView {
    view! { <span class="tools">{buttons}</span> }.into_any()
}

/// The payload of a frame of trace `trace`: what it says, once; the search's `words` marked.
fn payload_views(d: &FrameDetail, words: &[String], trace: i64) -> impl IntoView {
    let words = words.to_vec();
    let raw = match (&d.raw, &d.raw_base64) {
        (Some(r), _) => r.clone(),
        (None, Some(b)) => format!("(not UTF-8; base64)\n{b}"),
        (None, None) => String::new(),
    };
    let raw_view = |text: String| {
        let for_copy = text.clone();
        view! {
            {tools(view! { <button class="link" id="copy-raw" on:click=move |_| copy(&for_copy)>"copy"</button> }.into_any())}
            <pre class="raw">{text}</pre>
        }
        .into_any()
    };
    let large = d.cut || d.raw_size > DETAIL_MAX_BYTES as i64;
    let main = match d.frame.kind {
        _ if large => view! {
            {large_notice(d, trace)}
            {section("Raw", raw_view(raw))}
        }
        .into_any(),
        FrameKind::Stderr => {
            let text = d.raw.as_deref().map(strip_ansi_escapes::strip_str).unwrap_or_else(|| raw.clone());
            let exact = d.raw.as_ref().filter(|r| r.contains('\u{1b}')).map(|r| {
                view! {
                    <details class="escapes">
                        <summary>"with its terminal escapes"</summary>
                        <pre class="raw">{visible_escapes(r)}</pre>
                    </details>
                }
            });
            section("Line", view! { <pre class="line">{text}</pre> {exact} }.into_any())
        }
        _ => match d.raw.as_deref().map(parse) {
            Some(Ok(json)) => view! {
                {section("JSON", view! {
                    {tools(view! {
                        <button class="link" id="json-expand" on:click=|_| open_all(true)>"expand all"</button>
                        <button class="link" id="json-collapse" on:click=|_| open_all(false)>"collapse all"</button>
                    }.into_any())}
                    <div class="json">{json_tree(&json, &words)}</div>
                }.into_any())}
                {section("Raw", raw_view(raw))}
            }
            .into_any(),
            Some(Err(e)) => view! {
                <p class="hint">{format!("Not JSON: {e}.")}</p>
                {section("Raw", raw_view(raw))}
            }
            .into_any(),
            None => view! {
                <p class="hint">"Not UTF-8: the bytes are shown as base64."</p>
                {section("Raw", raw_view(raw))}
            }
            .into_any(),
        },
    };
    let envelope = d.envelope.clone().map(|e| {
        // `acp-tee http-proxy` keeps a message's transport facts there.
        let title = if e.starts_with("{\"") && e.contains("\"transport\":") {
            "Transport (HTTP or WebSocket)"
        } else {
            "Envelope (successor side of the hop)"
        };
        view! {
            <section>
                <h3>{title}</h3>
                <pre class="envelope">{e}</pre>
            </section>
        }
    });
    view! { {main} {envelope} }
}

/// For a frame of trace `trace` too large to draw as a tree: how much is shown, "show all" (while cut, for
/// this view's trace) and "download raw".
fn large_notice(d: &FrameDetail, trace: i64) -> impl IntoView {
    let st = trace_state();
    let (seq, size) = (d.frame.seq, d.raw_size);
    let cut = d.cut && trace == st.id;
    let shown = d.raw.as_ref().or(d.raw_base64.as_ref()).map_or(0, |r| r.len());
    let loading = RwSignal::new(false);
    let show_all = move |_| {
        loading.set(true);
        spawn_local(async move {
            let result = crate::api::frame(st.id, seq, true).await;
            if st.query.try_with_untracked(|q| q.frame) == Some(Some(seq)) {
                st.detail.try_set(Some((seq, result)));
            }
        });
    };
    let what = if d.cut {
        format!("Showing the first {} of {} bytes, as text.", format::count(shown as i64), format::count(size))
    } else {
        format!("All {} bytes, as text (too large for the JSON tree).", format::count(size))
    };
    view! {
        <p id="cut-notice" class="banner info" role="status">
            {what} " "
            {cut.then(|| view! {
                <button class="link" id="show-all" disabled=move || loading.get() on:click=show_all>
                    {move || if loading.get() { "loading…" } else { "show all" }}
                </button> " "
            })}
            <a id="download-raw" class="link" href=crate::api::frame_raw_url(trace, seq)
                download=format!("acp-tee-trace-{trace}-frame-{seq}.raw")>"download raw"</a>
        </p>
    }
}

fn detail_view(d: FrameDetail) -> impl IntoView {
    let st = trace_state();
    let started_at = st.trace.with_untracked(|t| t.meta.started_at.clone());
    let words = st.find.words.get_untracked();
    let f = d.frame.clone();
    let title = f.method.clone().unwrap_or_else(|| f.kind.as_str().to_owned());
    let preview = f.preview.clone().filter(|_| f.kind != FrameKind::Stderr);
    view! {
        <header class="detail-head">
            <span class=format!("chip kind-{}", f.kind.as_str())>{f.kind.as_str()}</span>
            <h2 title=title.clone()>{format!("#{} {title}", f.seq)}</h2>
        </header>
        {preview.map(|p| view! { <p class="detail-preview">{p}</p> })}
        {facts(&f, &started_at)}
        {pair_view(&f, d.pair.clone())}
        {replay_from(f.seq)}
        {payload_views(&d, &words, st.id)}
    }
}

/// A frame of MCP child trace `trace` (picked on its lane; `lane`: its server's name and clock offset, when
/// known): its server, its time on this trace's clock and its own, a link to it in its trace, its payload.
fn mcp_detail_view(trace: i64, lane: Option<(String, i64)>, d: FrameDetail) -> impl IntoView {
    let st = trace_state();
    let offset = lane.as_ref().map(|l| l.1);
    let server = lane.map_or_else(|| format!("trace {trace}"), |l| l.0);
    let f = d.frame.clone();
    let title = f.method.clone().unwrap_or_else(|| f.kind.as_str().to_owned());
    let direction = match f.dir {
        Direction::ClientToAgent => format!("Agent → {server}"),
        Direction::AgentToClient => format!("{server} → Agent"),
        Direction::AgentStderr => format!("{server} stderr"),
    };
    let mut rows: Vec<(&'static str, String)> = vec![
        ("server", server.clone()),
        (
            "time",
            match offset {
                Some(o) => format!(
                    "{} (in its trace {})",
                    format::exact_offset_ns(f.t_ns + o),
                    format::exact_offset_ns(f.t_ns)
                ),
                None => format!("{} in its trace", format::exact_offset_ns(f.t_ns)),
            },
        ),
        ("direction", direction),
        ("kind", f.kind.as_str().to_owned()),
        ("size", format!("{} bytes", format::count(f.size))),
    ];
    if let Some(id) = &f.id {
        rows.push(("id", id.to_string()));
    }
    if let Some(m) = &f.method {
        rows.push(("method", m.clone()));
    }
    if let Some(l) = f.latency_ns {
        rows.push(("latency", format!("{} ({} ns)", format::duration_ns(l), format::count(l))));
    }
    let pair = d.pair.as_ref().map(|p| {
        let what = if p.kind == FrameKind::Request { "request" } else { "response" };
        let seq = p.seq;
        view! {
            <div class="pair">
                <span>{format!("Paired with {what} #{seq}")}</span>
                <button id="mcp-pair" on:click=move |_| st.pick_mcp(trace, seq)>{format!("Show {what} #{seq}")}</button>
            </div>
        }
    });
    let href = format!("/traces/{trace}?frame={}", f.seq);
    view! {
        <header class="detail-head">
            <span class="chip mcp">"MCP"</span>
            <span class=format!("chip kind-{}", f.kind.as_str())>{f.kind.as_str()}</span>
            <h2 title=title.clone()>{format!("#{} {title}", f.seq)}</h2>
        </header>
        <p class="mcp-source">
            {format!("A frame of MCP server {server}, recorded as trace {trace}. ")}
            <a id="mcp-open-trace" href=href>{format!("Open it in trace {trace}")}</a>
        </p>
        {f.preview.clone().filter(|_| f.kind != FrameKind::Stderr).map(|p| view! { <p class="detail-preview">{p}</p> })}
        <dl class="facts">{rows.into_iter().map(|(k, v)| view! { <dt>{k}</dt><dd>{v}</dd> }).collect_view()}</dl>
        {pair}
        {payload_views(&d, &[], trace)}
    }
}
