//! `acp-tee show`: a trace's sessions as a person reads them (turns, tool
//! calls, permission waits, usage, open requests), as text or JSON.
//!
//! The JSON is one `ShowDocument` (`shared/src/session.rs`), written as it
//! is built. After the whole-trace fold (`Model`), one more pass over the
//! frames builds the turns of every session at once (`Model::pages_of`),
//! holding at most `HELD_MAX_BYTES`: sessions past that are read by a
//! further pass, so the time grows with the frames, not with sessions ×
//! frames, and memory stays bounded however long the trace.

use super::args::StoreArg;
use crate::export::TraceSelection;
use crate::redact::Redactor;
use crate::session::{now_t_ns, Model, Step, HELD_MAX_BYTES};
use crate::store::Store;
use crate::text::printable;
use acp_tee_shared::api::TraceSummary;
use acp_tee_shared::session::{OpenRequest, SessionSummary, ShowSession, Text, TraceSessions, Turn};
use anyhow::Context;
use clap::{Args, ValueEnum};
use std::io::Write;

/// Characters of a text `show` prints on one line in text form.
const TEXT_LINE_CHARS: usize = 240;

#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum ShowFormat {
    /// Lines for a person
    Text,
    /// One JSON document
    Json,
}

pub const SHOW_ABOUT: &str = "\
Show a trace's ACP sessions: how each began, its turns (prompt, the agent's
reply and thoughts assembled from chunks, time to the first chunk, stop
reason), tool calls with each status and the permission requests that named
them (options, answer, time the client took), what the agent asked the
client to do (fs/*, terminal/*), plans, token usage, and every request still
unanswered with how long it has waited (to now while the trace is recorded;
to its last frame once it ended).

Texts are masked like exports (--no-redact shows them as stored) and cut to
16,384 characters each; the rest is counted. --format json writes one
document (its shape is in docs/sessions.md).";

#[derive(Debug, Args)]
pub struct ShowArgs {
    #[command(flatten)]
    store: StoreArg,
    /// Which trace: an id from `acp-tee list` or `latest`
    #[arg(long, default_value = "latest", value_name = "ID|latest")]
    trace: TraceSelection,
    /// Only this session (a sessionId)
    #[arg(long, value_name = "SESSION_ID")]
    session: Option<String>,
    /// Output format
    #[arg(long, value_enum, default_value = "text")]
    format: ShowFormat,
    /// Show texts as stored, secrets included
    #[arg(long)]
    no_redact: bool,
    /// Do not wait for a trace whose recorder is still storing frames after
    /// acp-tee exited
    #[arg(long)]
    no_wait: bool,
}

/// Runs `acp-tee show`.
pub fn show_command(a: ShowArgs) -> anyhow::Result<i32> {
    let store = a.store.open_reader()?;
    let id = match a.trace {
        TraceSelection::Id(id) => id,
        TraceSelection::Latest => store.latest_trace_id()?,
        TraceSelection::All => anyhow::bail!("show takes one trace: an id from `acp-tee list` or `latest`"),
    };
    super::settle(&store, id, !a.no_wait, "show tells of")?;
    let trace = store.trace_summary(id)?;
    let redactor = crate::read::mask::redactor(!a.no_redact);
    let redact = (!redactor.is_noop()).then_some(&redactor);
    let mut model = Model::default();
    model.catch_up(&store, id, redact)?;
    let mut overview = model.sessions(now_t_ns(&trace));
    if let Some(sid) = &a.session {
        anyhow::ensure!(
            overview.sessions.iter().any(|s| &s.session_id == sid),
            "trace {id} has no session {}; `acp-tee show --trace {id}` lists its sessions",
            printable(sid)
        );
        overview.sessions.retain(|s| &s.session_id == sid);
        overview.open_requests.retain(|o| o.session_id.as_ref() == Some(sid));
    }
    let mut out = std::io::BufWriter::new(std::io::stdout().lock());
    let shown = Shown { store: &store, id, model: &model, redact };
    match a.format {
        ShowFormat::Json => shown.json(&trace, &overview, &mut out),
        ShowFormat::Text => shown.text(&trace, &overview, &mut out),
    }
    .and_then(|()| out.flush().context("cannot write to stdout"))?;
    Ok(0)
}

struct Shown<'a> {
    store: &'a Store,
    id: i64,
    model: &'a Model,
    redact: Option<&'a Redactor>,
}

/// What a session's turns are written as, in order.
enum Event<'a> {
    Begin(&'a SessionSummary),
    Turn(&'a Turn),
    End(&'a SessionSummary),
}

impl Shown<'_> {
    /// Calls `each` for every session of `sessions` in order: its start,
    /// each of its turns, its end (`Model::each_turn_of`: one pass over the
    /// frames for all of them, as far as `HELD_MAX_BYTES` allows).
    fn each_session(
        &self,
        sessions: &[SessionSummary],
        mut each: impl FnMut(Event<'_>) -> anyhow::Result<()>,
    ) -> anyhow::Result<()> {
        let sids: Vec<&str> = sessions.iter().map(|s| s.session_id.as_str()).collect();
        self.model.each_turn_of(self.store, self.id, &sids, self.redact, HELD_MAX_BYTES, |step| match step {
            Step::Begin(i) => each(Event::Begin(&sessions[i])),
            Step::Turn(t) => each(Event::Turn(t)),
            Step::End(i) => each(Event::End(&sessions[i])),
        })
    }

    fn json(&self, trace: &TraceSummary, overview: &TraceSessions, out: &mut impl Write) -> anyhow::Result<()> {
        write!(out, "{{\"trace\":{},\"overview\":{},\"sessions\":[", json(trace), json(overview))?;
        let (mut sessions, mut first) = (0, true);
        self.each_session(&overview.sessions, |e| {
            match e {
                Event::Begin(s) => {
                    let (plan, commands, changes) = self.model.extras(&s.session_id);
                    // The session as its type writes it, turns last and still
                    // empty: they are written into it as they come.
                    let session =
                        ShowSession { session_id: s.session_id.clone(), plan, commands, changes, turns: Vec::new() };
                    let head = json(&session);
                    let head = head.strip_suffix("[]}").expect("a ShowSession's turns come last");
                    write!(out, "{}{head}[", if sessions > 0 { "," } else { "" })?;
                    sessions += 1;
                    first = true;
                }
                Event::Turn(t) => {
                    write!(out, "{}{}", if first { "" } else { "," }, json(t))?;
                    first = false;
                }
                Event::End(_) => write!(out, "]}}")?,
            }
            Ok(())
        })?;
        writeln!(out, "]}}")?;
        Ok(())
    }

    fn text(&self, trace: &TraceSummary, overview: &TraceSessions, out: &mut impl Write) -> anyhow::Result<()> {
        let name = trace.meta.name.as_deref().map(|n| format!(" \"{}\"", printable(n))).unwrap_or_default();
        let state = if trace.live {
            "live".to_owned()
        } else {
            format!("ended: {}", printable(trace.meta.end_reason.as_deref().unwrap_or("unknown")))
        };
        writeln!(out, "trace {}{name} ({state}), {} frames", trace.meta.id, trace.meta.frame_count)?;
        let peers: Vec<String> = [("agent", &overview.agent), ("client", &overview.client)]
            .into_iter()
            .filter_map(|(who, v)| v.as_deref().map(|v| format!("{who} {}", printable(v))))
            .chain(overview.protocol_version.map(|v| format!("protocol version {v}")))
            .collect();
        if !peers.is_empty() {
            writeln!(out, "{}", peers.join(", "))?;
        }
        if overview.sessions.is_empty() {
            writeln!(out, "no ACP session in this trace")?;
        }
        self.each_session(&overview.sessions, |e| {
            match e {
                Event::Begin(s) => {
                    writeln!(out)?;
                    session_head(s, out)?;
                }
                Event::Turn(t) => turn_text(t, out)?,
                Event::End(s) => {
                    for n in &s.notes {
                        let at = n.seq.map(|s| format!(" (#{s})")).unwrap_or_default();
                        let times = if n.count > 1 { format!(" ({} times)", n.count) } else { String::new() };
                        writeln!(out, "  note {}{at}{times}: {}", n.code, printable(&n.message))?;
                    }
                }
            }
            Ok(())
        })?;
        if overview.open_requests_total > 0 {
            writeln!(out, "\nopen requests ({}):", overview.open_requests_total)?;
            for o in &overview.open_requests {
                writeln!(out, "  {}", open_text(o, overview.live))?;
            }
        }
        Ok(())
    }
}

fn json<T: serde::Serialize>(v: &T) -> String {
    serde_json::to_string(v).expect("session model types always serialise")
}

/// Nanoseconds as `1.23 s`, `45 ms` or `800 µs`.
fn took(ns: i64) -> String {
    match ns {
        n if n >= 1_000_000_000 => format!("{:.2} s", n as f64 / 1e9),
        n if n >= 1_000_000 => format!("{} ms", n / 1_000_000),
        n => format!("{} µs", n / 1000),
    }
}

fn session_head(s: &SessionSummary, out: &mut impl Write) -> anyhow::Result<()> {
    let cwd = s.cwd.as_deref().map(|c| format!(", cwd {}", printable(c))).unwrap_or_default();
    let title = s.title.as_deref().map(|t| format!(" \"{}\"", printable(t))).unwrap_or_default();
    writeln!(out, "session {}{title} ({}{cwd})", printable(&s.session_id), s.began)?;
    let mut facts = vec![
        format!("{} turns", s.turns),
        format!("{} tool calls", s.tool_calls),
        format!("{} permission requests (waited {})", s.permission_requests, took(s.permission_wait_ns)),
        format!("{} updates", s.updates),
    ];
    if s.replayed_updates > 0 {
        facts.push(format!("{} replayed", s.replayed_updates));
    }
    if let Some(u) = &s.usage {
        facts.push(format!("{} tokens (in {}, out {})", u.total_tokens, u.input_tokens, u.output_tokens));
    }
    if let Some(c) = &s.context {
        facts.push(format!("context {}/{}", c.used, c.size));
    }
    if let Some(m) = &s.mode {
        facts.push(format!("mode {}", printable(m)));
    }
    writeln!(out, "  {}", facts.join(", "))?;
    for k in &s.other_updates {
        writeln!(out, "  other updates: {} × {}", printable(&k.kind), k.count)?;
    }
    Ok(())
}

fn line(label: &str, text: &Text, out: &mut impl Write) -> anyhow::Result<()> {
    if text.is_empty() {
        return Ok(());
    }
    let mut shown: String = text.text.chars().take(TEXT_LINE_CHARS).collect();
    if text.chars as usize > shown.chars().count() {
        shown.push_str(&format!("… ({} chars)", text.chars));
    }
    let others: Vec<String> = text.other_blocks.iter().map(|k| format!("{} {}", k.count, printable(&k.kind))).collect();
    let others = if others.is_empty() { String::new() } else { format!(" [+ {}]", others.join(", ")) };
    writeln!(out, "    {label}: {}{others}", printable(&shown))?;
    Ok(())
}

fn turn_text(t: &Turn, out: &mut impl Write) -> anyhow::Result<()> {
    let end = match (t.response_seq, t.end_t_ns) {
        (Some(seq), Some(end)) => format!(" → #{seq}, {}", took(end - t.start_t_ns)),
        _ => ", not ended".into(),
    };
    let reason = match (&t.stop_reason, &t.error) {
        (Some(r), _) => format!(", stop {}", printable(r)),
        (None, Some(e)) => format!(", error {}", printable(e)),
        (None, None) => String::new(),
    };
    let first = t.first_chunk_ns.map(|n| format!(", first chunk after {}", took(n))).unwrap_or_default();
    let cancel = t.cancel_seq.map(|s| format!(", cancel sent #{s}")).unwrap_or_default();
    writeln!(out, "  turn {} #{}{end}{reason}{first}{cancel}", t.index + 1, t.request_seq)?;
    line("prompt", &t.prompt, out)?;
    line("thought", &t.thought, out)?;
    line("agent", &t.message, out)?;
    line("user (echoed)", &t.user, out)?;
    for c in &t.tool_calls {
        let title = c.title.as_deref().map(|t| format!(" \"{}\"", printable(t))).unwrap_or_default();
        let kind = c.kind.as_deref().map(|k| format!(" ({})", printable(k))).unwrap_or_default();
        writeln!(out, "    tool call {}{title}{kind}: {}", printable(&c.tool_call_id), tool_steps(c))?;
        for p in &c.permissions {
            let answer = match (p.response_seq, &p.outcome) {
                (Some(seq), outcome) => format!(
                    "→ #{seq} after {}: {}{}",
                    took(p.waited_ns.unwrap_or(0)),
                    printable(outcome.as_deref().unwrap_or("answered")),
                    p.option_id.as_deref().map(|o| format!(" {}", printable(o))).unwrap_or_default()
                ),
                (None, _) => "never answered".into(),
            };
            writeln!(
                out,
                "      permission #{} {answer} (options {})",
                p.request_seq,
                printable(&p.options.join(", "))
            )?;
        }
    }
    for c in &t.client_calls {
        let subject = c.subject.as_deref().map(|s| format!(" {}", printable(s))).unwrap_or_default();
        let answer = match (c.response_seq, c.duration_ns) {
            (Some(seq), Some(d)) => format!(" → #{seq}, {}", took(d)),
            _ => ", never answered".into(),
        };
        let extra =
            c.error.as_deref().or(c.result.as_deref()).map(|e| format!(": {}", printable(e))).unwrap_or_default();
        writeln!(out, "    {} #{}{subject}{answer}{extra}", printable(&c.method), c.request_seq)?;
    }
    if let Some(u) = &t.usage {
        writeln!(out, "    usage: {} tokens (in {}, out {})", u.total_tokens, u.input_tokens, u.output_tokens)?;
    }
    Ok(())
}

/// A tool call's statuses in order; those an update gave before any
/// `tool_call` announced it are set apart, not shown as a step.
fn tool_steps(c: &acp_tee_shared::session::ToolCall) -> String {
    let step = |s: &acp_tee_shared::session::StatusChange| format!("{} #{}", printable(&s.status), s.seq);
    let Some(early) = c.unannounced_update else {
        return c.statuses.iter().map(step).collect::<Vec<_>>().join(" → ");
    };
    let announced = c.announced_seq.unwrap_or(i64::MAX);
    let (before, after): (Vec<_>, Vec<_>) = c.statuses.iter().partition(|s| s.seq < announced);
    let before = before.into_iter().map(step).collect::<Vec<_>>().join(" → ");
    let why = match c.announced_seq {
        Some(seq) => format!("updated at #{early} before its tool_call #{seq}"),
        None => format!("updated at #{early}, no tool_call announced it"),
    };
    let mut text = if before.is_empty() { format!("({why})") } else { format!("{before} ({why})") };
    if !after.is_empty() {
        text.push_str("; then ");
        text.push_str(&after.into_iter().map(step).collect::<Vec<_>>().join(" → "));
    }
    text
}

fn open_text(o: &OpenRequest, live: bool) -> String {
    let method = printable(o.method.as_deref().unwrap_or("(no method)")).into_owned();
    let session = o.session_id.as_deref().map(|s| format!(" in {}", printable(s))).unwrap_or_default();
    let cancel = o.cancel_seq.map(|s| format!(", cancel sent #{s}")).unwrap_or_default();
    let waited = if live { "waiting" } else { "never answered, waited" };
    format!("#{} {method}{session}: {waited} {} for the {}{cancel}", o.seq, took(o.age_ns), o.waiting_for)
}
