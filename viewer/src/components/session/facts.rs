//! The Session tab's frame around the turns: the open-requests banner, the session picker with the
//! peers, the session's facts and its plan.

use super::{frame_link, seq_link};
use crate::components::summary::plural;
use crate::format;
use crate::state::TraceState;
use acp_tee_shared::session::{OpenRequest, Plan, SessionDetail, TokenUsage, TraceSessions};
use leptos::prelude::*;

/// How long something has waited, as people say it: `850 ms`, `48 s`, `3m 05s`.
pub fn age_text(ns: i64) -> String {
    if (1_000_000_000..60_000_000_000).contains(&ns) {
        format!("{} s", ns / 1_000_000_000)
    } else {
        format::duration_ns(ns)
    }
}

/// Tokens as one line: `30 tokens (20 in, 10 out, 4 thought, 8 cached)`.
pub fn usage_text(u: &TokenUsage) -> String {
    let mut parts = vec![
        format!("{} in", format::count(u.input_tokens as i64)),
        format!("{} out", format::count(u.output_tokens as i64)),
    ];
    if let Some(t) = u.thought_tokens {
        parts.push(format!("{} thought", format::count(t as i64)));
    }
    if let Some(t) = u.cached_read_tokens {
        parts.push(format!("{} cached read", format::count(t as i64)));
    }
    if let Some(t) = u.cached_write_tokens {
        parts.push(format!("{} cached write", format::count(t as i64)));
    }
    format!("{} ({})", plural(u.total_tokens as i64, "token"), parts.join(", "))
}

/// The requests of the trace nobody answered: on a live trace how long each has been waiting (counted on
/// with the tab's clock `now` between refreshes), on an ended one how long it was open when the trace ended, in
/// a replay how long it had waited at the cursor.
pub fn open_requests(st: TraceState, o: &TraceSessions, now: Memo<i64>) -> Option<impl IntoView> {
    if o.open_requests.is_empty() {
        return None;
    }
    let live = o.live;
    let replay = st.replay.cursor.with_untracked(Option::is_some);
    // The ages came measured at the overview's present; they grow by what the clock counted since.
    let then = o.now_t_ns;
    let several =
        o.open_requests.iter().filter_map(|r| r.session_id.as_ref()).collect::<std::collections::HashSet<_>>().len()
            > 1;
    let items = o
        .open_requests
        .iter()
        .map(|r| {
            let r = r.clone();
            let (age_ns, quiet_ns) = (r.age_ns, r.quiet_ns);
            let age = move || age_text(age_ns + (now.get() - then).max(0));
            let quiet = r.clone();
            let activity = move || {
                let since = (now.get() - then).max(0);
                quiet.activity_text(live, quiet_ns + since, age_ns + since, age_text)
            };
            open_request_item(st, &r, live || replay, several, age, activity)
        })
        .collect_view();
    let more = o.open_requests_total.saturating_sub(o.open_requests.len() as u64);
    let heading = match (live, replay) {
        (_, true) => "Waiting for an answer at the replay's cursor:",
        (true, _) => "Waiting for an answer:",
        _ => "Never answered (the trace has ended):",
    };
    Some(view! {
        <div id="open-requests" class="banner warn" role="status" class:live=live>
            <strong>{heading}</strong>
            <ul>{items}</ul>
            {(more > 0).then(|| view! { <p>{format!("and {} more", plural(more as i64, "open request"))}</p> })}
        </div>
    })
}

fn open_request_item(
    st: TraceState,
    r: &OpenRequest,
    waiting: bool,
    several: bool,
    age: impl Fn() -> String + Send + Sync + 'static,
    activity: impl Fn() -> String + Send + Sync + 'static,
) -> impl IntoView {
    let method = r.method.clone().unwrap_or_else(|| "a request".to_owned());
    let who = r.waiting_for.clone();
    let text = move || {
        if waiting {
            format!("{method} waiting {} for the {who}", age())
        } else {
            format!("{method} never answered by the {who}: open {} when the trace ended", age())
        }
    };
    let session = r
        .session_id
        .clone()
        .filter(|_| several)
        .map(|s| view! { <span class="sid">{format!(" (session {s})")}</span> });
    let cancel = r.cancel_seq.map(|c| view! { " · cancelled " {seq_link(st, c)} });
    view! {
        <li class="open-request" data-seq=r.seq>
            <span class="open-text">{text}</span>{session} " " {seq_link(st, r.seq)} {cancel}
            <span class="activity">" · " {activity}</span>
        </li>
    }
}

/// The peers, and the session picker when the trace has more than one session.
pub fn picker(st: TraceState, o: &TraceSessions) -> impl IntoView {
    let mut peers = Vec::new();
    if let Some(a) = &o.agent {
        peers.push(format!("agent {a}"));
    }
    if let Some(c) = &o.client {
        peers.push(format!("client {c}"));
    }
    if let Some(v) = o.protocol_version {
        peers.push(format!("protocol v{v}"));
    }
    let wanted = st.sessions.wanted;
    let chosen = move || wanted.with(|w| w.as_ref().map(|w| w.sid.clone()));
    let choose = if o.sessions.len() > 1 {
        let options = o
            .sessions
            .iter()
            .map(|s| {
                let sid = s.session_id.clone();
                let label = format!("{} · {} · {}", s.session_id, s.began, plural(s.turns as i64, "turn"));
                let is = sid.clone();
                view! { <option value=sid prop:selected=move || chosen().as_ref() == Some(&is)>{label}</option> }
            })
            .collect_view();
        let change = move |ev| {
            let sid = event_target_value(&ev);
            st.url.update(true, |q| {
                q.sid = Some(sid);
                q.turn = None;
            });
        };
        view! {
            <label class="picker">
                {format!("{} sessions: ", o.sessions.len())}
                <select id="session-picker" on:change=change>{options}</select>
            </label>
        }
        .into_any()
    } else {
        view! { <span class="picker">"session " <code class="sid">{o.sessions[0].session_id.clone()}</code></span> }
            .into_any()
    };
    let left_out = (o.frames_left_out > 0).then(|| {
        let text = format!("{} of further sessions not read", plural(o.frames_left_out as i64, "frame"));
        view! { <span class="warn">{text}</span> }
    });
    view! {
        <div class="session-bar">
            {choose}
            {left_out}
            <span class="peers">{peers.join(" · ")}</span>
        </div>
    }
}

/// The session's facts: how it began, where, its mode, its counts, waits, usage, and notes.
pub fn summary_card(st: TraceState, d: &SessionDetail, now: Memo<i64>) -> impl IntoView {
    let s = &d.summary;
    let mut rows: Vec<(&'static str, AnyView)> = Vec::new();
    let began = match s.began_seq {
        Some(seq) => view! { {s.began.clone()} " " {seq_link(st, seq)} }.into_any(),
        None if s.began == "unknown" => "before the recording began".into_any(),
        None => s.began.clone().into_any(),
    };
    rows.push(("began", began));
    for (key, value) in [("title", &s.title), ("cwd", &s.cwd), ("mode", &s.mode)] {
        if let Some(v) = value {
            rows.push((key, v.clone().into_any()));
        }
    }
    if let Some(seq) = s.closed_seq {
        rows.push(("closed", seq_link(st, seq).into_any()));
    }
    let span =
        format!("{} (from {})", format::duration_ns(s.last_t_ns - s.first_t_ns), format::offset_ns(s.first_t_ns));
    rows.push((
        "frames",
        view! { {seq_link(st, s.first_seq)} " – " {seq_link(st, s.last_seq)} " · " {span} }.into_any(),
    ));
    rows.push(("turns", format::count(s.turns as i64).into_any()));
    rows.push(("tool calls", format::count(s.tool_calls as i64).into_any()));
    // The waits of the permission requests still open count on with `now` (each came measured to its
    // `t_ns + age_ns`); the answered ones are done.
    let open: Vec<(i64, i64)> = d
        .open_requests
        .iter()
        .filter(|r| r.method.as_deref() == Some("session/request_permission"))
        .map(|r| (r.t_ns, r.age_ns))
        .collect();
    let (total, requests) = (s.permission_wait_ns, plural(s.permission_requests as i64, "request"));
    let waited = move || {
        let now = now.get();
        let answered = total - open.iter().map(|(_, age)| age).sum::<i64>();
        let all = answered + open.iter().map(|(t, age)| (now - t).max(*age)).sum::<i64>();
        let still = match open.len() {
            0 => String::new(),
            n => format!(" ({} still open)", format::count(n as i64)),
        };
        if all > 0 {
            format!("{requests}, waited {} for the client's answers{still}", format::duration_ns(all))
        } else {
            requests.clone()
        }
    };
    rows.push(("permissions", view! { <span id="permission-wait">{waited}</span> }.into_any()));
    let replayed = if s.replayed_updates > 0 {
        format!(" ({} replayed)", format::count(s.replayed_updates as i64))
    } else {
        String::new()
    };
    rows.push(("updates", format!("{}{replayed}", format::count(s.updates as i64)).into_any()));
    if let Some(u) = &s.usage {
        rows.push(("usage", usage_text(u).into_any()));
    }
    if let Some(c) = &s.context {
        let cost = c.cost.as_ref().map(|c| format!(" · {c}")).unwrap_or_default();
        let text = format!("{} of {} tokens{cost}", format::count(c.used as i64), format::count(c.size as i64));
        rows.push(("context", frame_link(st, c.seq, text).into_any()));
    }
    if s.open_requests > 0 {
        rows.push(("open", plural(s.open_requests as i64, "request").into_any()));
    }
    if !d.changes.is_empty() {
        let items = d
            .changes
            .iter()
            .map(|c| view! { <span class="change">{format!("{} → {} ", c.setting, c.value)}{seq_link(st, c.seq)}</span> })
            .collect_view();
        rows.push(("changes", items.into_any()));
    }
    if !s.other_updates.is_empty() {
        let text = s.other_updates.iter().map(|k| format!("{} ×{}", k.kind, k.count)).collect::<Vec<_>>().join(", ");
        rows.push(("other updates", text.into_any()));
    }
    if !d.commands.is_empty() {
        rows.push(("commands", d.commands.iter().map(|c| format!("/{c}")).collect::<Vec<_>>().join(" ").into_any()));
    }
    let notes = s
        .notes
        .iter()
        .map(|n| {
            let link = n.seq.map(|seq| view! { " " {seq_link(st, seq)} });
            let times = (n.count > 1).then(|| format!(" ({} times)", n.count));
            view! { <li class="note" data-code=n.code.clone()><code>{n.code.clone()}</code> " " {n.message.clone()} {times} {link}</li> }
        })
        .collect_view();
    view! {
        <section class="card" id="session-summary">
            <h2>"Session " <code class="sid">{s.session_id.clone()}</code></h2>
            <dl class="facts">{rows.into_iter().map(|(k, v)| view! { <dt>{k}</dt><dd>{v}</dd> }).collect_view()}</dl>
            {(!s.notes.is_empty()).then(|| view! { <ul class="notes">{notes}</ul> })}
        </section>
    }
}

/// The session's last plan: each entry with its status and priority.
pub fn plan_card(st: TraceState, p: &Plan) -> impl IntoView {
    let entries = p
        .entries
        .iter()
        .map(|e| {
            let mark = match e.status.as_str() {
                "completed" => "☑",
                "in_progress" => "◐",
                _ => "☐",
            };
            let priority = e.priority.as_ref().map(|p| view! { <span class="priority">{p.clone()}</span> });
            view! {
                <li class=format!("plan-entry status-{}", e.status) title=e.status.clone()>
                    <span class="mark" aria-label=e.status.clone()>{mark}</span> " " {e.content.clone()} " " {priority}
                </li>
            }
        })
        .collect_view();
    view! {
        <section class="card" id="session-plan">
            <h2>"Plan · " {format!("sent {} ", plural(p.updates as i64, "time"))} {seq_link(st, p.seq)}</h2>
            <ul class="plan">{entries}</ul>
        </section>
    }
}
