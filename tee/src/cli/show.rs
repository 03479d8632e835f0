//! `acp-tee show`: a trace's sessions as a person reads them (turns, tool
//! calls, permission waits, usage, open requests), as text or JSON.
//!
//! The JSON is one `ShowDocument` (`shared/src/session.rs`), written as it
//! is built. One pass over the frames makes the whole-trace fold (`Model`)
//! and builds the turns of every session with it
//! (`Model::catch_up_building`), holding at most `HELD_MAX_BYTES`: sessions
//! past that are read by further passes, so the time grows with the
//! frames, not with sessions × frames, and memory stays bounded however
//! long the trace. Whatever a bound leaves out is said, in the text and
//! the JSON.

use super::args::StoreArg;
use super::trace_ref::{self, TraceRef};
use crate::redact::Redactor;
use crate::session::{now_t_ns, Built, Model, Step, HELD_MAX_BYTES};
use crate::store::Store;
use crate::text::printable;
use acp_tee_shared::api::TraceSummary;
use acp_tee_shared::session::{
    ClientCall, LinkedBy, McpCall, OpenRequest, Part, SessionSummary, ShowSession, Text, ToolCall, TraceSessions, Turn,
    TurnItem, OPEN_REQUESTS_MAX, PENDING_MAX, PER_TOOL_MAX, PER_TURN_MAX, SESSIONS_LEFT_OUT_COUNTED, SESSIONS_MAX,
};
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
    /// Which trace: an id from `acp-tee list`, `latest` (the default), or a
    /// name (the newest trace of that name; name:NAME for any name)
    #[arg(value_name = "TRACE")]
    trace: Option<TraceRef>,
    /// The same as TRACE
    #[arg(long = "trace", value_name = "TRACE", conflicts_with = "trace")]
    trace_flag: Option<TraceRef>,
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
    let id = trace_ref::resolve(&store, &trace_ref::pick(a.trace, a.trace_flag).unwrap_or(TraceRef::Latest))?.id;
    super::settle(&store, id, !a.no_wait, "show tells of")?;
    let trace = store.trace_summary(id)?;
    let redactor = crate::read::mask::redactor(!a.no_redact);
    let redact = (!redactor.is_noop()).then_some(&redactor);
    if trace.meta.protocol == Some(acp_tee_shared::Protocol::Mcp) {
        return show_mcp(a.session.as_deref(), a.format, &store, &trace, redact);
    }
    // The session asked for is kept however many come before it.
    let mut model = a.session.as_deref().map(Model::keeping).unwrap_or_default();
    let built = model.catch_up_building(&store, id, redact, a.session.as_deref(), HELD_MAX_BYTES)?;
    let now = now_t_ns(&trace);
    let mut overview = model.sessions(now);
    if let Some(sid) = &a.session {
        overview.sessions.retain(|s| &s.session_id == sid);
        let Some(session) = overview.sessions.first() else {
            anyhow::bail!("trace {id} has no session {}; `acp-tee show {id}` lists its sessions", printable(sid))
        };
        // Its own open requests, listed and counted (those not followed
        // belong to no session the model knows of).
        overview.open_requests = model.open_requests_of(sid, now);
        overview.open_requests_total = session.open_requests + overview.requests_not_followed;
    }
    let sids = overview.sessions.iter().map(|s| s.session_id.clone()).collect();
    let linker = crate::read::family::Linker::of(&store, &trace, sids, &redactor)?;
    let mut out = std::io::BufWriter::new(std::io::stdout().lock());
    let shown = Shown { store: &store, id, model: &model, redact, one_session: a.session.is_some(), linker };
    match a.format {
        ShowFormat::Json => shown.json(&trace, &overview, built, &mut out),
        ShowFormat::Text => shown.text(&trace, &overview, built, &mut out),
    }
    .and_then(|()| out.flush().context("cannot write to stdout"))?;
    Ok(0)
}

/// `show` on an MCP trace: its calls, as it has no ACP session.
fn show_mcp(
    session: Option<&str>,
    format: ShowFormat,
    store: &Store,
    trace: &TraceSummary,
    redact: Option<&Redactor>,
) -> anyhow::Result<i32> {
    if let Some(sid) = session {
        anyhow::bail!("trace {} is an MCP trace: it has no ACP session {}", trace.meta.id, printable(sid));
    }
    let calls = super::show_mcp::calls(store, trace.meta.id, redact)?;
    let mut out = std::io::BufWriter::new(std::io::stdout().lock());
    match format {
        ShowFormat::Json => {
            writeln!(out, "{{\"trace\":{},\"mcp\":{}}}", json(trace), json(&calls))?;
        }
        ShowFormat::Text => {
            writeln!(out, "{}", trace_line(trace))?;
            super::show_mcp::calls_text(&calls, &mut out)?;
        }
    }
    out.flush().context("cannot write to stdout")?;
    Ok(0)
}

/// `trace ID "NAME" (STATE), N frames`.
fn trace_line(trace: &TraceSummary) -> String {
    let name = trace.meta.name.as_deref().map(|n| format!(" \"{}\"", printable(n))).unwrap_or_default();
    let state = if trace.live {
        "live".to_owned()
    } else {
        format!("ended: {}", printable(trace.meta.end_reason.as_deref().unwrap_or("unknown")))
    };
    format!("trace {}{name} ({state}), {} frames", trace.meta.id, trace.meta.frame_count)
}

struct Shown<'a> {
    store: &'a Store,
    id: i64,
    model: &'a Model,
    redact: Option<&'a Redactor>,
    /// Only the session asked for is shown: the others left out are not
    /// told of in the text.
    one_session: bool,
    /// Puts the MCP calls of the trace's MCP children under its tool calls.
    linker: Option<crate::read::family::Linker>,
}

/// What a session's turns are written as, in order.
enum Event<'a> {
    Begin(&'a SessionSummary),
    Turn(&'a Turn),
    End(&'a SessionSummary),
}

impl Shown<'_> {
    /// Calls `each` for every session of `sessions` in order: its start,
    /// each of its turns, its end (`Model::each_turn_built`: the turns the
    /// model's own pass built, then further passes for those it could not
    /// hold).
    fn each_session(
        &self,
        sessions: &[SessionSummary],
        built: Built,
        mut each: impl FnMut(Event<'_>) -> anyhow::Result<()>,
    ) -> anyhow::Result<()> {
        let sids: Vec<&str> = sessions.iter().map(|s| s.session_id.as_str()).collect();
        let mut current = 0;
        self.model.each_turn_built(self.store, self.id, &sids, built, self.redact, HELD_MAX_BYTES, |step| match step {
            Step::Begin(i) => {
                current = i;
                each(Event::Begin(&sessions[i]))
            }
            Step::Turn(t) => match &self.linker {
                Some(linker) => {
                    let mut turn = [t.clone()];
                    linker.link(sids[current], &mut turn);
                    each(Event::Turn(&turn[0]))
                }
                None => each(Event::Turn(t)),
            },
            Step::End(i) => each(Event::End(&sessions[i])),
        })
    }

    fn json(
        &self,
        trace: &TraceSummary,
        overview: &TraceSessions,
        built: Built,
        out: &mut impl Write,
    ) -> anyhow::Result<()> {
        write!(out, "{{\"trace\":{},\"overview\":{},", json(trace), json(overview))?;
        if let Some(linker) = &self.linker {
            // The MCP children whose calls are under the tool calls, and
            // those read only in part.
            write!(out, "\"family\":{},\"mcp_read_in_part\":{},", json(linker.family()), json(&linker.cut()))?;
        }
        write!(out, "\"sessions\":[")?;
        let (mut sessions, mut first) = (0, true);
        self.each_session(&overview.sessions, built, |e| {
            match e {
                Event::Begin(s) => {
                    let x = self.model.extras(&s.session_id);
                    // The session as its type writes it, turns last and still
                    // empty: they are written into it as they come.
                    let session = ShowSession {
                        session_id: s.session_id.clone(),
                        plan: x.plan,
                        commands: x.commands,
                        changes: x.changes,
                        left_out: x.left_out,
                        turns: Vec::new(),
                    };
                    let head = json(&session);
                    let head = head.strip_suffix("[]}").expect("a ShowSession's turns come last");
                    write!(out, "{}{head}[", if sessions > 0 { "," } else { "" })?;
                    sessions += 1;
                    first = true;
                }
                Event::Turn(t) => {
                    if !first {
                        out.write_all(b",")?;
                    }
                    // Straight into the output: turns are most of the document.
                    serde_json::to_writer(&mut *out, t).context("cannot write to stdout")?;
                    first = false;
                }
                Event::End(_) => write!(out, "]}}")?,
            }
            Ok(())
        })?;
        writeln!(out, "]}}")?;
        Ok(())
    }

    fn text(
        &self,
        trace: &TraceSummary,
        overview: &TraceSessions,
        built: Built,
        out: &mut impl Write,
    ) -> anyhow::Result<()> {
        writeln!(out, "{}", trace_line(trace))?;
        let peers: Vec<String> = [("agent", &overview.agent), ("client", &overview.client)]
            .into_iter()
            .filter_map(|(who, v)| v.as_deref().map(|v| format!("{who} {}", printable(v))))
            .chain(overview.protocol_version.map(|v| format!("protocol version {v}")))
            .collect();
        if !peers.is_empty() {
            writeln!(out, "{}", peers.join(", "))?;
        }
        if let Some(linker) = &self.linker {
            let servers: Vec<String> = linker
                .family()
                .children
                .iter()
                .filter(|c| c.meta.protocol == Some(acp_tee_shared::Protocol::Mcp))
                .map(|c| {
                    let name = c.server.as_deref().or(c.meta.name.as_deref()).unwrap_or("?");
                    format!("{} (trace {})", printable(name), c.meta.id)
                })
                .collect();
            writeln!(out, "MCP servers recorded: {}", servers.join(", "))?;
            for id in linker.cut() {
                writeln!(
                    out,
                    "note: MCP trace {id} was read in part (at most {} requests of one child, {} of all): its later \
                     requests are not put under tool calls",
                    crate::read::family::REQUESTS_MAX,
                    crate::read::family::FAMILY_REQUESTS_MAX
                )?;
            }
        }
        if overview.sessions.is_empty() {
            writeln!(out, "no ACP session in this trace")?;
        }
        if !self.one_session {
            left_out_text(overview, out)?;
        }
        self.each_session(&overview.sessions, built, |e| {
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
        open_requests_text(overview, out)
    }
}

/// The open requests: those listed, how many more there are, and how many
/// the model did not follow.
fn open_requests_text(overview: &TraceSessions, out: &mut impl Write) -> anyhow::Result<()> {
    let followed = overview.open_requests_total.saturating_sub(overview.requests_not_followed);
    if followed > 0 {
        writeln!(out, "\nopen requests ({followed}):")?;
        for o in &overview.open_requests {
            writeln!(out, "  {}", open_text(o, overview.live))?;
        }
        let more = followed.saturating_sub(overview.open_requests.len() as u64);
        if more > 0 {
            writeln!(out, "  … {more} more not listed (the list holds the oldest {OPEN_REQUESTS_MAX})")?;
        }
    }
    if overview.requests_not_followed > 0 {
        writeln!(
            out,
            "\n{} requests made while {PENDING_MAX} others awaited answers were not followed: whether they were \
             answered is unknown",
            overview.requests_not_followed
        )?;
    }
    Ok(())
}

/// What the overview leaves out of the trace: the sessions past
/// `SESSIONS_MAX`.
fn left_out_text(overview: &TraceSessions, out: &mut impl Write) -> anyhow::Result<()> {
    if overview.sessions_left_out == 0 {
        return Ok(());
    }
    let or_more = if overview.sessions_left_out >= SESSIONS_LEFT_OUT_COUNTED { " or more" } else { "" };
    writeln!(
        out,
        "{}{or_more} sessions ({} frames) past the first {SESSIONS_MAX} are left out; `acp-tee show --session ID` \
         shows any one of them",
        overview.sessions_left_out, overview.frames_left_out
    )?;
    Ok(())
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

/// `n thing` or `n things`.
fn counted(n: u64, thing: &str) -> String {
    if n == 1 {
        format!("1 {thing}")
    } else {
        format!("{n} {thing}s")
    }
}

fn session_head(s: &SessionSummary, out: &mut impl Write) -> anyhow::Result<()> {
    let cwd = s.cwd.as_deref().map(|c| format!(", cwd {}", printable(c))).unwrap_or_default();
    let title = s.title.as_deref().map(|t| format!(" \"{}\"", printable(t))).unwrap_or_default();
    writeln!(out, "session {}{title} ({}{cwd})", printable(&s.session_id), s.began)?;
    let permissions = match s.permission_requests {
        0 => counted(0, "permission request"),
        n => format!("{} (waited {})", counted(n, "permission request"), took(s.permission_wait_ns)),
    };
    let mut facts =
        vec![counted(s.turns, "turn"), counted(s.tool_calls, "tool call"), permissions, counted(s.updates, "update")];
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
    if let (Some(data), None) = (&t.error_data, &t.stop_reason) {
        writeln!(out, "    error data: {}", printable(data))?;
    }
    for l in &t.stderr {
        writeln!(out, "    stderr #{}: {}", l.seq, printable(&l.text))?;
    }
    line("prompt", &t.prompt, out)?;
    // What happened in the turn, in the order it happened: the agent's
    // message and thoughts cut where a tool call began, a permission was
    // asked, a plan was sent or the client was asked something.
    // A client call made for a listed tool call is told under it; the others in their place.
    let items = t.in_order();
    for (_, item) in &items {
        match item {
            TurnItem::Part(p) => part_text(t, p, Turn::unshown_after(p, &items), out)?,
            TurnItem::Tool(c, made) => {
                tool_call_text(c, out)?;
                for cc in made {
                    client_call_text(cc, "      ", out)?;
                }
            }
            TurnItem::Client(c) => client_call_text(c, "    ", out)?,
            TurnItem::User => line("user (echoed)", &t.user, out)?,
        }
    }
    if t.parts_left_out > 0 {
        more_text(t.parts_left_out, "parts of the message and thoughts", "a turn", PER_TURN_MAX, "    ", out)?;
        for (role, label) in [("thought", "thought, the rest"), ("agent", "agent, the rest")] {
            let rest = t.text_after_parts(role);
            if !rest.is_empty() {
                writeln!(out, "    {label}: {}", printable(&rest.chars().take(TEXT_LINE_CHARS).collect::<String>()))?;
            }
        }
    }
    more_text(t.tool_calls_left_out, "tool calls", "a turn", PER_TURN_MAX, "    ", out)?;
    more_text(t.client_calls_left_out, "client calls", "a turn", PER_TURN_MAX, "    ", out)?;
    if let Some(u) = &t.usage {
        writeln!(out, "    usage: {} tokens (in {}, out {})", u.total_tokens, u.input_tokens, u.output_tokens)?;
    }
    Ok(())
}

/// One part of the agent's message or thoughts: `agent #A–B (after WHAT #SEQ): TEXT`; what came before it
/// is named when it is not itself a line (`after`, from `Turn::unshown_after`).
fn part_text(t: &Turn, p: &Part, after: Option<&(i64, String)>, out: &mut impl Write) -> anyhow::Result<()> {
    let label = if p.role == "thought" { "thought" } else { "agent" };
    let frames = if p.first_seq == p.last_seq {
        format!("#{}", p.first_seq)
    } else {
        format!("#{}–{}", p.first_seq, p.last_seq)
    };
    let after = after.map(|(seq, what)| format!(" (after {} #{seq})", printable(what))).unwrap_or_default();
    let kept = t.part_text(p);
    let mut shown: String = kept.chars().take(TEXT_LINE_CHARS).collect();
    if p.chars as usize > shown.chars().count() {
        shown.push_str(&format!("… ({} chars)", p.chars));
    }
    let others = if p.other_blocks > 0 { format!(" [+ {} other blocks]", p.other_blocks) } else { String::new() };
    writeln!(out, "    {label} {frames}{after}: {}{others}", printable(&shown))?;
    Ok(())
}

fn tool_call_text(c: &ToolCall, out: &mut impl Write) -> anyhow::Result<()> {
    let title = c.title.as_deref().map(|t| format!(" \"{}\"", printable(t))).unwrap_or_default();
    let kind = c.kind.as_deref().map(|k| format!(" ({})", printable(k))).unwrap_or_default();
    writeln!(out, "    tool call {}{title}{kind}: {}", printable(&c.tool_call_id), tool_steps(c))?;
    for p in &c.permissions {
        // An option's name is what the user saw, quoted beside its id.
        let named = |name: Option<&String>| match name.filter(|n| !n.is_empty()) {
            Some(n) => format!(" \"{}\"", printable(n)),
            None => String::new(),
        };
        let answer = match (p.response_seq, &p.outcome) {
            (Some(seq), outcome) => format!(
                "→ #{seq} after {}: {}{}{}",
                took(p.waited_ns.unwrap_or(0)),
                printable(outcome.as_deref().unwrap_or("answered")),
                p.option_id.as_deref().map(|o| format!(" {}", printable(o))).unwrap_or_default(),
                named(p.option_name.as_ref())
            ),
            (None, _) => "never answered".into(),
        };
        let more = if p.options_left_out > 0 { format!(", … {} more", p.options_left_out) } else { String::new() };
        let options: Vec<String> = p
            .options
            .iter()
            .enumerate()
            .map(|(i, o)| format!("{}{}", printable(o), named(p.option_names.get(i))))
            .collect();
        writeln!(out, "      permission #{} {answer} (options {}{more})", p.request_seq, options.join(", "))?;
    }
    more_text(c.permissions_left_out, "permission requests", "a tool call", PER_TOOL_MAX, "      ", out)?;
    for m in &c.mcp_calls {
        writeln!(out, "      {}", mcp_call_text(m))?;
    }
    more_text(c.mcp_calls_left_out, "MCP calls", "a tool call", PER_TOOL_MAX, "      ", out)?;
    Ok(())
}

/// A request the agent made of the client, at `indent` (under the tool call it was made for, or in its place).
fn client_call_text(c: &ClientCall, indent: &str, out: &mut impl Write) -> anyhow::Result<()> {
    let subject = c.subject.as_deref().map(|s| format!(" {}", printable(s))).unwrap_or_default();
    let answer = match (c.response_seq, c.duration_ns) {
        (Some(seq), Some(d)) => format!(" → #{seq}, {}", took(d)),
        _ => ", never answered".into(),
    };
    let extra = c.error.as_deref().or(c.result.as_deref()).map(|e| format!(": {}", printable(e))).unwrap_or_default();
    let during = match c.tool_calls_in_progress {
        0 => String::new(),
        n => format!(" (while {n} tool calls were in progress)"),
    };
    writeln!(out, "{indent}{} #{}{subject}{answer}{extra}{during}", printable(&c.method), c.request_seq)?;
    Ok(())
}

/// `… N more WHAT not listed (WHERE lists at most MAX)`, when `n` > 0.
fn more_text(n: u64, what: &str, place: &str, max: usize, indent: &str, out: &mut impl Write) -> anyhow::Result<()> {
    if n > 0 {
        writeln!(out, "{indent}… {n} more {what} not listed ({place} lists at most {max})")?;
    }
    Ok(())
}

/// `mcp SERVER METHOD NAME (trace T #SEQ) → LATENCY[: failed: WHY] (HOW)`.
fn mcp_call_text(m: &McpCall) -> String {
    let server = printable(m.server.as_deref().unwrap_or("?"));
    let name = m.name.as_deref().map(|n| format!(" {}", printable(n))).unwrap_or_default();
    let answer = match (m.latency_ns, &m.error) {
        (Some(ns), Some(why)) => format!("failed after {}: {}", took(ns), printable(why)),
        (Some(ns), None) => took(ns),
        (None, _) => "no answer".into(),
    };
    let how = match (m.linked_by, m.candidates) {
        (LinkedBy::Meta, _) => "named by its _meta".to_owned(),
        (LinkedBy::Time, 0 | 1) => "sent while it was in progress".to_owned(),
        (LinkedBy::Time, n) => format!("sent while it and {} other tool calls were in progress", n - 1),
    };
    format!("mcp {server} {}{name} (trace {} #{}) → {answer} ({how})", printable(&m.method), m.trace_id, m.seq)
}

/// A tool call's statuses in order; those an update gave before any
/// `tool_call` announced it are set apart, not shown as a step.
fn tool_steps(c: &acp_tee_shared::session::ToolCall) -> String {
    let mut steps = steps_in_order(c);
    if c.statuses_left_out > 0 {
        steps.push_str(&format!(" (… {} more status changes not listed)", c.statuses_left_out));
    }
    steps
}

fn steps_in_order(c: &acp_tee_shared::session::ToolCall) -> String {
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
    let activity = o.activity_text(live, o.quiet_ns, o.age_ns, took);
    format!("#{} {method}{session}: {waited} {} for the {}{cancel}; {activity}", o.seq, took(o.age_ns), o.waiting_for)
}
