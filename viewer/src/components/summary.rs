//! A trace's facts as text, shared by the trace list and the trace view's header.

use crate::format;
use acp_tee_shared::api::TraceSummary;
use leptos::prelude::*;

/// A trace's display name: its `--name`, else the agent program's file name.
pub fn trace_name(t: &TraceSummary) -> String {
    t.meta.name.clone().unwrap_or_else(|| {
        let program = t.meta.command.first().map(String::as_str).unwrap_or("trace");
        program.rsplit('/').next().unwrap_or(program).to_owned()
    })
}

/// How long the run took (or has been going, by its last frame), in nanoseconds.
pub fn duration_ns(t: &TraceSummary) -> i64 {
    match t.meta.ended_at.as_deref().and_then(|end| format::span_ms(&t.meta.started_at, end)) {
        Some(ms) => (ms * 1e6) as i64,
        None => t.last_t_ns,
    }
}

/// How long the run took, as text.
pub fn trace_duration(t: &TraceSummary) -> String {
    format::duration_ns(duration_ns(t))
}

/// The live/finishing/ended badge.
pub fn status_badge(t: &TraceSummary) -> AnyView {
    if t.finishing {
        view! { <span class="badge badge-finishing" title="the run is over; its recorder is still storing frames">"finishing"</span> }.into_any()
    } else if t.live {
        view! { <span class="badge badge-live">"● live"</span> }.into_any()
    } else {
        view! { <span class="badge badge-ended">"ended"</span> }.into_any()
    }
}

/// True when acp-tee itself ended the agent: it stopped it after the client left and the grace period
/// passed, or passed on a signal it was sent. A signal then is the normal end, not a crash.
fn stopped_by_acp_tee(t: &TraceSummary) -> bool {
    t.meta
        .end_reason
        .as_deref()
        .is_some_and(|r| r.contains("stopped after the grace period") || r.contains("passed on to the agent"))
}

/// How the agent ended, short (`exit 0`, `signal 9`, `stopped`), and the longer story for a tooltip.
pub fn exit_text(t: &TraceSummary) -> (String, String) {
    let reason = t.meta.end_reason.clone().unwrap_or_default();
    let short = match (t.meta.exit_code, t.meta.exit_signal) {
        (_, Some(sig)) if stopped_by_acp_tee(t) => format!("stopped ({})", signal_name(sig)),
        (_, Some(sig)) => format!("signal {sig}"),
        (Some(code), None) => format!("exit {code}"),
        (None, None) => String::new(),
    };
    (short, reason)
}

/// A signal's usual name.
fn signal_name(sig: i32) -> String {
    match sig {
        1 => "SIGHUP".to_owned(),
        2 => "SIGINT".to_owned(),
        9 => "SIGKILL".to_owned(),
        15 => "SIGTERM".to_owned(),
        n => format!("signal {n}"),
    }
}

/// `1 frame`, `2 frames`, `1,024 frames`.
pub fn plural(n: i64, noun: &str) -> String {
    format!("{} {noun}{}", format::count(n), if n == 1 { "" } else { "s" })
}
