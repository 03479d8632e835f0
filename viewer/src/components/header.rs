//! The trace view's header: name, command, counts, live badge, a warning when the server is gone, and the
//! toolbar (tabs Diagram, Timing, Session; axis and follow on the diagram tab; export).

use super::session::facts::age_text;
use super::summary::{exit_text, plural, status_badge, trace_duration, trace_name};
use super::trace_state;
use crate::api::export_url;
use crate::format;
use crate::state::layout::DEFAULT_SCALE_MS;
use crate::view_query::{Axis, Tab};
use acp_tee_shared::api::TraceSummary;
use leptos::prelude::*;
use leptos_router::components::A;

fn summary_line(t: &TraceSummary, clock: Memo<i64>) -> impl IntoView {
    let (exit, reason) = exit_text(t);
    let missing = (t.meta.missing_frames > 0 || t.meta.missing_unknown).then(|| {
        // Unknown: no recorder survived to count them; the count is a lower bound.
        let more = if t.meta.missing_unknown { " or more" } else { "" };
        view! { <span class="warn">{format!("{}{more} missing", plural(t.meta.missing_frames, "frame"))}</span> }
    });
    view! {
        <div class="summary">
            <span>{plural(t.meta.frame_count, "frame")}</span>
            <span id="error-responses" class:err=t.meta.error_count != 0
                title="JSON-RPC error responses; what the protocol checks found is on the Findings tab">
                {plural(t.meta.error_count, "error response")}</span>
            {running(t, clock)}
            <span>{format::wall_clock(&t.meta.started_at)}</span>
            <span>{t.meta.mode.clone()}</span>
            {(!exit.is_empty()).then(|| view! { <span title=reason.clone()>{exit}</span> })}
            {(!reason.is_empty()).then(|| view! { <span class="reason">{reason}</span> })}
            {t.imported_from.clone().map(|i| view! { <span class="imported">{format!("imported: {i}")}</span> })}
            {missing}
        </div>
    }
}

/// How long the run took; while live, how long it has been running and, once nothing has come for a second
/// or more, for how long (`idle 16 s`), both counting on with `clock`.
fn running(t: &TraceSummary, clock: Memo<i64>) -> AnyView {
    if !t.live {
        return view! { <span>{trace_duration(t)}</span> }.into_any();
    }
    let (last, started) = (t.last_t_ns, t.meta.started_at.clone());
    let idle = move || {
        let idle = clock.get() - last;
        (idle >= 1_000_000_000).then(|| {
            view! { <span id="idle" class="idle" title="time since the last frame">{format!("idle {}", age_text(idle))}</span> }
        })
    };
    view! {
        <span id="running" title=format!("started {started}")>{move || format!("running {}", age_text(clock.get()))}</span>
        {idle}
    }
    .into_any()
}

/// What the protocol checks found, once known (the Findings tab's report, else the counts the trace list
/// had): a link to the Findings tab.
fn found(t: &TraceSummary) -> impl IntoView {
    let st = trace_state();
    let listed = t.findings;
    move || {
        // A live trace's report is of the frames read when it was asked for: it says so.
        let (counts, so_far) = st.findings.report.with(|r| match r {
            Some(Ok(r)) => Some((r.counts, r.live.then_some(r.frames))),
            _ => listed.map(|c| (c, None)),
        })?;
        let total = counts.errors + counts.warnings + counts.infos;
        let mut text = format!(
            "{} ({}, {})",
            plural(total as i64, "finding"),
            plural(counts.errors as i64, "error"),
            plural(counts.warnings as i64, "warning")
        );
        if let Some(frames) = so_far {
            text.push_str(&format!(" in the first {} so far", plural(frames as i64, "frame")));
        }
        let has_errors = counts.errors > 0;
        Some(view! {
            <button id="findings-count" class="link" class:err=has_errors
                on:click=move |_| st.url.update(true, |q| q.tab = Tab::Findings)>{text}</button>
        })
    }
}

/// Traces offered by "compare with…": the newest this many.
const COMPARE_CHOICES: usize = 20;

/// "compare with…": the newest other traces, fetched when opened, each a link to its comparison with this
/// one (the older as a, as the trace list does).
fn compare_with(id: i64) -> impl IntoView {
    let opened = RwSignal::new(false);
    let others = LocalResource::new(move || async move {
        if !opened.get() {
            return None;
        }
        Some(crate::api::traces().await)
    });
    let list = move || match others.get().flatten() {
        None => view! { <p class="hint">"Loading…"</p> }.into_any(),
        Some(Err(e)) => view! { <p class="notice error">{e.message}</p> }.into_any(),
        Some(Ok(traces)) => {
            let items = traces
                .into_iter()
                .filter(|t| t.meta.id != id)
                .take(COMPARE_CHOICES)
                .map(|t| {
                    let other = t.meta.id;
                    let (a, b) = (id.min(other), id.max(other));
                    view! {
                        <li><A href=format!("/compare/{a}/{b}") attr:data-trace-id=other>
                            {format!("#{other} {}", trace_name(&t))}</A>
                            " " <span class="dim">{format::wall_clock(&t.meta.started_at)}</span></li>
                    }
                })
                .collect_view();
            view! { <ul>{items}</ul> }.into_any()
        }
    };
    view! {
        <details id="compare-with" on:toggle=move |_| opened.set(true)>
            <summary>"compare with…"</summary>
            {list}
        </details>
    }
}

/// The header of a trace view.
#[component]
pub fn TraceHeader() -> impl IntoView {
    let st = trace_state();
    let clock = st.clock;
    let head = move || {
        let t = st.trace.get();
        let command = t.meta.command.join(" ");
        let title = match &t.meta.cwd {
            Some(cwd) => format!("{command}\nin {cwd}"),
            None => command.clone(),
        };
        let lost = st.connection_lost.get().is_some();
        let badge = if lost && t.live {
            view! { <span class="badge badge-lost" title="the server does not answer; the trace may have ended">"? no contact"</span> }.into_any()
        } else {
            status_badge(&t)
        };
        view! {
            <div class="title-line">
                <h1 id="trace-title" title=trace_name(&t)>{trace_name(&t)}</h1>
                {badge}
                <code class="cmd" title=title>{command}</code>
            </div>
            {summary_line(&t, clock)}
            {found(&t)}
        }
    };
    let lost = move || {
        st.connection_lost.get().map(|since| {
            view! {
                <div id="connection-lost" class="banner error" role="alert">
                    {format!("Lost contact with the acp-tee server at {since}: frames recorded since then are not shown. Retrying…")}
                </div>
            }
        })
    };
    view! {
        <header class="trace-head">
            <A href="/" attr:class="back">"← all traces"</A>
            {compare_with(st.id)}
            {head}
            {lost}
            <Toolbar />
        </header>
    }
}

#[component]
fn Toolbar() -> impl IntoView {
    let st = trace_state();
    let tab = Memo::new(move |_| st.query.with(|q| q.tab));
    let axis = Memo::new(move |_| st.query.with(|q| q.axis));
    let set_tab = move |t: Tab| st.url.update(true, |q| q.tab = t);
    let set_axis = move |a: Axis| {
        st.url.update(true, |q| {
            q.accept("axis");
            q.axis = a;
        })
    };
    let on_diagram = move || tab.get() == Tab::Diagram;
    let live = Memo::new(move |_| st.is_live());
    let follow_title = move || {
        if live.get() {
            "keep the newest frames in view while recording"
        } else {
            "the trace has ended: there is nothing new to follow"
        }
    };
    let id = st.id;
    view! {
        <div class="toolbar">
            <div class="seg" role="tablist">
                {[(Tab::Diagram, "tab-diagram", "Diagram"), (Tab::Timing, "tab-timing", "Timing"), (Tab::Session, "tab-session", "Session"), (Tab::Findings, "tab-findings", "Findings"), (Tab::Requests, "tab-requests", "Requests")]
                    .map(|(t, id, label)| {
                        let on = move || tab.get() == t;
                        view! {
                            <button id=id role="tab" aria-selected=move || on().to_string() class:on=on
                                on:click=move |_| set_tab(t)>{label}</button>
                        }
                    })}
            </div>
            <div class="seg" title="vertical axis" class:hidden=move || !on_diagram()>
                <button id="axis-rows" class:on=move || axis.get() == Axis::Rows on:click=move |_| set_axis(Axis::Rows)
                    title="one row per frame">"rows"</button>
                <button id="axis-time" class:on=move || axis.get() == Axis::Time on:click=move |_| set_axis(Axis::Time)
                    title="time, compressed: long idle gaps are folded">"time"</button>
                <button id="axis-linear" class:on=move || axis.get() == Axis::Linear on:click=move |_| set_axis(Axis::Linear)
                    title="time, proportional: gaps drawn to scale">"linear"</button>
            </div>
            <Zoom visible=Signal::derive(move || on_diagram() && axis.get() == Axis::Linear) />
            <label class="check" class:hidden=move || !on_diagram()
                title="draw each run of streamed message, thought or user chunks as one row">
                <input id="collapse" type="checkbox" prop:checked=move || st.query.with(|q| q.collapse)
                    on:change=move |ev| {
                        let on = event_target_checked(&ev);
                        st.url.update(true, |q| {
                            q.accept("collapse");
                            q.collapse = on;
                        })
                    } />
                "collapse chunks"
            </label>
            <button id="replay-start" class:hidden=move || st.replay.active() || !matches!(tab.get(), Tab::Diagram | Tab::Session)
                title="play the trace as it happened, from the start"
                on:click=move |_| crate::state::replay::play(st)>"▶ replay"</button>
            <label class="check" class:dim=move || !live.get() class:hidden=move || !on_diagram() title=follow_title>
                <input id="follow" type="checkbox" prop:disabled=move || !live.get()
                    prop:checked=move || live.get() && st.follow.get()
                    on:change=move |ev| st.follow.set(event_target_checked(&ev)) />
                "follow"
            </label>
            // Every export is redacted (the server's default rules mask secrets). One group, at the right
            // end, on a line of its own when the window is too narrow for the whole toolbar.
            <span class="exports">
                <span class="export-label" title="secrets are masked">"Export (redacted):"</span>
                <a id="export-json" class="button" href=export_url(id, "json") download=format!("acp-tee-trace-{id}.json")
                    title="acp-tee-trace JSON document">"JSON"</a>
                <a id="export-ndjson" class="button" href=export_url(id, "ndjson") download=format!("acp-tee-trace-{id}.ndjson")
                    title="acp-tee-trace NDJSON">"NDJSON"</a>
                <a id="export-jsons" class="button" href=export_url(id, "jsons") download=format!("acp-tee-trace-{id}.jsons")
                    title="the conductor's .jsons, for agent-client-protocol-trace-viewer">".jsons"</a>
                <a id="export-perfetto" class="button" href=export_url(id, "perfetto") download=format!("acp-tee-trace-{id}.perfetto.json")
                    title="Chrome trace-event JSON for ui.perfetto.dev">"Perfetto"</a>
            </span>
        </div>
    }
}

/// The steps of the linear axis's scale, milliseconds per 100 px.
const SCALES_MS: [f64; 13] = [0.1, 0.2, 0.5, 1.0, 2.0, 5.0, 10.0, 20.0, 50.0, 100.0, 200.0, 500.0, 1000.0];

/// Zoom of the linear axis: the scale in the URL, one step finer or coarser per click.
#[component]
fn Zoom(visible: Signal<bool>) -> impl IntoView {
    let st = trace_state();
    let scale = Memo::new(move |_| st.query.with(|q| q.scale.unwrap_or(DEFAULT_SCALE_MS)));
    let step = move |finer: bool| {
        let now = scale.get_untracked();
        let next = if finer {
            SCALES_MS.iter().rev().copied().find(|s| *s < now)
        } else {
            SCALES_MS.iter().copied().find(|s| *s > now)
        };
        if let Some(s) = next {
            st.url.update(false, |q| {
                q.accept("scale");
                q.scale = Some(s);
            });
        }
    };
    view! {
        // Kept in its place (invisible) on the other axes, so that switching axis never reflows the toolbar
        // and the diagram's height (a zoom to a range computes its scale from that height).
        <div class="seg zoom" class:unused=move || !visible.get() title="scale of the linear axis">
            <button id="zoom-in" on:click=move |_| step(true) title="zoom in">"+"</button>
            <span class="scale" id="axis-scale">{move || format!("{} / 100 px", format::duration_ns((scale.get() * 1e6) as i64))}</span>
            <button id="zoom-out" on:click=move |_| step(false) title="zoom out">"−"</button>
        </div>
    }
}
