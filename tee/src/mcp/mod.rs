//! `acp-tee mcp`: a Model Context Protocol server on stdio (the official
//! Rust SDK, `rmcp`) that lets a model read the trace store. Read-only: a front
//! end of the read service (`crate::read`), as `serve` is. Its tools list traces, describe a trace's sessions
//! (turns, tool calls, open requests, notes), search frames, get a frame
//! with its pair, give per-method stats and compare two traces.
//!
//! Texts are masked as `serve` masks them unless `--no-redact`. Every
//! answer is bounded ([`answer::MAX_ANSWER_BYTES`]): pages have a maximum
//! size, strings are cut, a frame's bytes come a window at a time. Each
//! query runs under the server's [`QUERY_TIME_LIMIT`]. Bad arguments give a
//! tool error (`isError: true`) that says what to change.

mod answer;
mod args;
mod compare;
mod input;

pub use answer::MAX_ANSWER_BYTES;
use answer::{Fit, FRAME_DEFAULT_BYTES, FRAME_MAX_BYTES};
pub use args::*;
pub use input::MAX_REQUEST_BYTES;

use crate::read::mask;
use crate::read::Models;
use crate::read::{Db, QUERY_TIME_LIMIT};
use crate::redact::Redactor;
use crate::session::{now_t_ns, Want};
use crate::store::api::SearchCounts;
use crate::store::{Reader, Store, StoreError};
use acp_tee_shared::api::FrameQuery;
use rmcp::handler::server::common::schema_for_input;
use rmcp::model::JsonObject;
use rmcp::model::{Implementation, ServerCapabilities, ServerInfo};
use rmcp::schemars::JsonSchema;
use rmcp::{tool, tool_handler, tool_router, ServerHandler, ServiceExt};
use serde_json::{json, Value};
use std::sync::atomic::Ordering;
use std::sync::Arc;

/// Queries the MCP server runs at once: it has one client, which waits for
/// its answers; more than the cores would only add threads.
const MCP_CONCURRENT_QUERIES: usize = 2;

/// Threads the MCP server's runtime may start for blocking work at most:
/// its queries ([`MCP_CONCURRENT_QUERIES`]), reading stdin and writing
/// stdout, with room to spare. Without a bound, a burst of calls on a busy
/// machine starts a thread for each query whose predecessor had not yet
/// gone idle (tokio's default allows 512).
const MCP_BLOCKING_THREADS: usize = 8;

/// Traces per `list_traces` page: default and most.
pub const TRACES_PAGE: (i64, i64) = (20, 100);
/// Sessions per `describe_trace` page: default and most.
pub const SESSIONS_PAGE: (i64, i64) = (10, 100);
/// Turns of each session `describe_trace` shows: default and most.
pub const TURNS_PAGE: (i64, i64) = (3, 50);
/// Frames per `search_frames` page: default and most.
pub const FRAMES_PAGE: (i64, i64) = (20, 100);
/// Methods `method_stats` lists: default and most.
pub const METHODS_PAGE: (i64, i64) = (50, 200);

/// What a tool call failed on, said to the model.
#[derive(Debug, thiserror::Error)]
pub enum ToolError {
    /// An argument out of its range or naming nothing.
    #[error("{0}")]
    Bad(String),
    /// The store failed, or the query ran out of time.
    #[error("{}", store_text(.0))]
    Store(#[from] StoreError),
}

fn store_text(e: &StoreError) -> String {
    if e.is_interrupted() {
        format!("the query ran out of its {} s", QUERY_TIME_LIMIT.as_secs())
    } else {
        e.to_string()
    }
}

/// What to change when tool `tool`'s query runs out of time: only arguments
/// that tool takes (named in backticks), or that none narrows it.
fn narrow_hint(tool: &str) -> &'static str {
    match tool {
        "list_traces" => "ask for fewer traces (`limit`)",
        "describe_trace" => {
            "narrow it: one session (`session_id`), fewer sessions (`limit`) or fewer turns (`turns_limit`)"
        }
        "search_frames" => {
            "narrow it: a `method`, `kind`, `dir` or `session_id`, words to match (`q`), a later start (`after`) or \
             fewer frames (`limit`)"
        }
        "get_frame" => "ask for fewer bytes (`max_bytes`)",
        "method_stats" => {
            "method_stats reads the whole trace and takes no argument that narrows it; search_frames reads less (a \
             method, errors only, slower than a latency)"
        }
        "compare_traces" => {
            "compare_traces reads both traces whole and takes no argument that narrows it; method_stats and \
             describe_trace read one trace at a time"
        }
        _ => "ask for less",
    }
}

impl ToolError {
    /// The error as tool `tool` says it.
    fn text(&self, tool: &str) -> String {
        match self {
            ToolError::Store(e) if e.is_interrupted() => format!("{self}; {}", narrow_hint(tool)),
            other => other.to_string(),
        }
    }
}

/// `value` (named `name`) when it lies in `lo..=hi`, `default` when absent.
fn ranged(name: &str, value: Option<i64>, default: i64, lo: i64, hi: i64) -> Result<i64, ToolError> {
    match value {
        None => Ok(default),
        Some(v) if (lo..=hi).contains(&v) => Ok(v),
        Some(v) => Err(ToolError::Bad(format!("{name} must be between {lo} and {hi}, not {v}"))),
    }
}

/// A page's `limit` in `1..=most` (default `default`) and `offset` of 0 or more.
fn paging(offset: Option<i64>, limit: Option<i64>, (default, most): (i64, i64)) -> Result<(i64, i64), ToolError> {
    Ok((ranged("offset", offset, 0, 0, i64::MAX)?, ranged("limit", limit, default, 1, most)?))
}

/// The JSON schema of a tool's arguments `T`.
fn schema<T: JsonSchema + 'static>() -> Arc<JsonObject> {
    schema_for_input::<T>().expect("the argument structs make object schemas")
}

/// A tool's arguments as `T`; an error names the argument that is wrong.
fn parse<T: serde::de::DeserializeOwned>(args: JsonObject) -> Result<T, String> {
    serde_path_to_error::deserialize(Value::Object(args)).map_err(|e| {
        answer::error_text(match e.path().to_string().as_str() {
            "." => format!("bad arguments: {}", e.inner()),
            path => format!("bad argument {path}: {}", e.inner()),
        })
    })
}

/// A trace id that exists.
fn trace_id(store: &Store, id: i64) -> Result<i64, ToolError> {
    store
        .trace(id)
        .map_err(|_| ToolError::Bad(format!("there is no trace {id}; list_traces lists the traces there are")))?;
    Ok(id)
}

/// How long a tool waits, at most, for a finishing trace (acp-tee gone,
/// its recorder still storing frames) before it refuses to judge it.
pub const FINISH_WAIT: std::time::Duration = std::time::Duration::from_secs(10);

/// Trace `id` (it exists) once it is not finishing: waits up to
/// [`FINISH_WAIT`] (`Store::wait_while_finishing`, as `show` and `check`
/// wait), then refuses, so no answer judges part of a trace as the whole.
/// A trace still being recorded is answered, `live`.
fn settled(store: &Store, id: i64) -> Result<acp_tee_shared::api::TraceSummary, ToolError> {
    trace_id(store, id)?;
    let s = store.wait_while_finishing(id, FINISH_WAIT)?;
    if s.finishing {
        return Err(ToolError::Bad(format!(
            "trace {id} is still finishing (acp-tee has exited; its recorder is still storing frames): ask again \
             once list_traces no longer says it is live"
        )));
    }
    Ok(s)
}

/// The MCP server: a front end of the read service (`crate::read`): its
/// query pool, the session models and search counts it keeps, the
/// redaction of what it returns. rmcp runs each request as a task of its
/// own; they wait for a slot of the pool as futures, so however many a
/// client sends at once, at most the pool's few blocking threads run
/// queries.
#[derive(Clone)]
pub struct TraceTools {
    db: Db,
    models: Models,
    search_counts: SearchCounts,
    redactor: Redactor,
}

/// What a tool's query gets.
struct Cx<'a> {
    store: &'a Store,
    r: &'a Redactor,
    models: &'a Models,
    search_counts: &'a SearchCounts,
}

impl Cx<'_> {
    fn redact(&self) -> Option<&Redactor> {
        (!self.r.is_noop()).then_some(self.r)
    }
}

fn to_value<T: serde::Serialize>(v: &T) -> Value {
    serde_json::to_value(v).expect("API types always serialise")
}

impl TraceTools {
    /// A server reading `reader`, masking with the default rules unless
    /// `redact` is false.
    pub fn new(reader: Reader, redact: bool) -> TraceTools {
        TraceTools {
            db: Db::from_reader(reader, MCP_CONCURRENT_QUERIES),
            models: Models::default(),
            search_counts: SearchCounts::default(),
            redactor: mask::redactor(redact),
        }
    }

    /// Runs `work` on a connection of the pool on a blocking thread under
    /// [`QUERY_TIME_LIMIT`], and sizes its answer as `fit` says (see
    /// [`answer::finish`]).
    async fn query(
        &self,
        tool: &'static str,
        fit: Fit,
        work: impl FnOnce(&Cx<'_>) -> Result<Value, ToolError> + Send + 'static,
    ) -> Result<String, String> {
        let (r, models) = (self.redactor.clone(), self.models.clone());
        let search_counts = self.search_counts.clone();
        let answer = self
            .db
            .run_any(move |store| work(&Cx { store, r: &r, models: &models, search_counts: &search_counts }))
            .await;
        answer.map_err(|e| answer::error_text(e.text(tool))).and_then(|v| answer::finish(v, fit))
    }
}

#[tool_router]
impl TraceTools {
    /// `list_traces`
    #[tool(
        description = "List the recorded traces, newest first: id, name, agent command, start, end reason, \
                          frame count, live. Paged: offset, limit (max 100).",
        input_schema = schema::<ListTraces>(),
        annotations(read_only_hint = true, open_world_hint = false)
    )]
    async fn list_traces(&self, args: JsonObject) -> Result<String, String> {
        let a: ListTraces = parse(args)?;
        self.query("list_traces", Fit::Page("traces"), move |cx| {
            let (offset, limit) = paging(a.offset, a.limit, TRACES_PAGE)?;
            let all = cx.store.trace_summaries()?;
            let total = all.len() as i64;
            let traces: Vec<Value> = all
                .into_iter()
                .skip(offset as usize)
                .take(limit as usize)
                .map(|t| to_value(&mask::trace(cx.r, t)))
                .collect();
            let next = offset + traces.len() as i64;
            Ok(json!({"traces": traces, "total": total, "offset": offset,
                      "has_more": next < total, "next_offset": (next < total).then_some(next)}))
        })
        .await
    }

    /// `describe_trace`
    #[tool(
        description = "Describe a trace's ACP sessions: peers, each session's facts (turns, tool calls, \
                          permission waits, usage, notes = findings about the protocol), a page of its turns \
                          (prompt, reply, thoughts, stop reason, tool calls, client calls; texts cut to 2000 \
                          chars) and the requests still unanswered. Paged: offset/limit over sessions, \
                          turns_offset/turns_limit over each session's turns.",
        input_schema = schema::<DescribeTrace>(),
        annotations(read_only_hint = true, open_world_hint = false)
    )]
    async fn describe_trace(&self, args: JsonObject) -> Result<String, String> {
        let a: DescribeTrace = parse(args)?;
        self.query("describe_trace", Fit::Page("sessions"), move |cx| describe(cx, a)).await
    }

    /// `search_frames`
    #[tool(
        description = "Search a trace's frames (JSON-RPC messages and stderr lines): by words (q), method, \
                          kind, direction, session, errors only, slowness. Returns frame summaries (seq, time, \
                          direction, kind, id, method, latency, preview) and the total. Paged: after (seq \
                          cursor) or offset, limit (max 100). get_frame returns one frame's text.",
        input_schema = schema::<SearchFrames>(),
        annotations(read_only_hint = true, open_world_hint = false)
    )]
    async fn search_frames(&self, args: JsonObject) -> Result<String, String> {
        let a: SearchFrames = parse(args)?;
        self.query("search_frames", Fit::Page("frames"), move |cx| search(cx, a)).await
    }

    /// `get_frame`
    #[tool(
        description = "Get one frame: its summary, its exact text (raw; raw_base64 when not UTF-8), the \
                          proxy envelope if any, and its pair (the request it answers or the response that \
                          answers it). The text comes max_bytes at a time (default 4096, max 32768): when \
                          cut is true, call again with offset = next_offset for the rest.",
        input_schema = schema::<GetFrame>(),
        annotations(read_only_hint = true, open_world_hint = false)
    )]
    async fn get_frame(&self, args: JsonObject) -> Result<String, String> {
        let a: GetFrame = parse(args)?;
        self.query("get_frame", Fit::Window, move |cx| frame(cx, a)).await
    }

    /// `method_stats`
    #[tool(
        description = "Per-method statistics of a trace: count, errors, answered, latency p50/p95/p99/max \
                          (ns) and histogram; the slowest responses; frames per direction.",
        input_schema = schema::<MethodStatsArgs>(),
        annotations(read_only_hint = true, open_world_hint = false)
    )]
    async fn method_stats(&self, args: JsonObject) -> Result<String, String> {
        let a: MethodStatsArgs = parse(args)?;
        self.query("method_stats", Fit::Page("methods"), move |cx| {
            let id = a.trace_id;
            let trace = settled(cx.store, id)?;
            let limit = ranged("limit", a.limit, METHODS_PAGE.0, 1, METHODS_PAGE.1)?;
            let mut stats = cx.store.seen_by(cx.r).run(|| cx.store.trace_stats(id))?;
            stats.slowest.iter_mut().for_each(|f| mask::summary(cx.r, f));
            let total = stats.methods.len();
            stats.methods.truncate(limit as usize);
            let mut v = to_value(&stats);
            v["methods_total"] = json!(total);
            v["live"] = json!(trace.live);
            v["has_more"] = json!(total > limit as usize);
            Ok(v)
        })
        .await
    }

    /// `compare_traces`
    #[tool(
        description = "Compare two traces (b against a): per method the counts, errors and p50/p99 latency \
                          of each with deltas (b - a); per trace the sessions, turns, tool calls and stop \
                          reasons; and `differences`, the counts that differ (latencies always vary between \
                          runs and are left to the deltas).",
        input_schema = schema::<CompareTraces>(),
        annotations(read_only_hint = true, open_world_hint = false)
    )]
    async fn compare_traces(&self, args: JsonObject) -> Result<String, String> {
        let a: CompareTraces = parse(args)?;
        self.query("compare_traces", Fit::Page("methods"), move |cx| {
            for id in [a.a, a.b] {
                if settled(cx.store, id)?.live {
                    return Err(ToolError::Bad(format!(
                        "trace {id} is still being recorded: compare it once it has ended"
                    )));
                }
            }
            compare::compare(cx, a.a, a.b)
        })
        .await
    }
}

#[tool_handler]
impl ServerHandler for TraceTools {
    fn get_info(&self) -> ServerInfo {
        ServerInfo::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new("acp-tee", env!("CARGO_PKG_VERSION")))
            .with_instructions(
                "Read-only access to acp-tee's store of recorded Agent Client Protocol traces. Start with \
                 list_traces, then describe_trace for what happened in a session, search_frames and get_frame \
                 for the messages themselves.",
            )
    }
}

fn describe(cx: &Cx<'_>, a: DescribeTrace) -> Result<Value, ToolError> {
    let id = a.trace_id;
    let (offset, limit) = paging(a.offset, a.limit, SESSIONS_PAGE)?;
    let turns_offset = ranged("turns_offset", a.turns_offset, 0, 0, i64::MAX)? as u64;
    let turns_limit = ranged("turns_limit", a.turns_limit, TURNS_PAGE.0, 0, TURNS_PAGE.1)? as u32;
    let trace = settled(cx.store, id)?;
    let now = now_t_ns(&trace);
    cx.models.with_current(cx.store, id, cx.r, |model| {
        let mut view = model.sessions(now);
        if let Some(sid) = &a.session_id {
            if !view.sessions.iter().any(|s| &s.session_id == sid) {
                let missing = crate::read::folds::past_the_bound(
                    format!("trace {id} has no session {sid}"),
                    view.sessions_left_out,
                );
                return Ok(Err(ToolError::Bad(format!(
                    "{missing}; describe_trace without session_id lists its sessions"
                ))));
            }
            view.sessions.retain(|s| &s.session_id == sid);
            view.open_requests = model.open_requests_of(sid, now);
            view.open_requests_total = view.sessions[0].open_requests + view.requests_not_followed;
        }
        let total = view.sessions.len() as i64;
        let page: Vec<_> = view.sessions.iter().skip(offset as usize).take(limit as usize).collect();
        // One pass over the frames builds every session's page of turns.
        let wants: Vec<Want<'_>> =
            page.iter().map(|s| Want { sid: &s.session_id, offset: turns_offset, limit: turns_limit }).collect();
        let pages = match turns_limit {
            0 => vec![Vec::new(); page.len()],
            _ => model.pages_in_passes(cx.store, id, &wants, cx.redact())?,
        };
        let mut sessions = Vec::new();
        for (s, turns) in page.into_iter().zip(pages) {
            let x = model.extras(&s.session_id);
            let shown = turns.len() as u64;
            let mut v = to_value(s);
            v["turns_offset"] = json!(turns_offset);
            v["turns_shown"] = json!(shown);
            v["turns_next_offset"] = json!((turns_offset + shown < s.turns).then_some(turns_offset + shown));
            v["turn_page"] = json!(turns);
            v["plan"] = to_value(&x.plan);
            v["commands"] = to_value(&x.commands);
            v["changes"] = to_value(&x.changes);
            v["commands_left_out"] = json!(x.left_out.commands_left_out);
            v["changes_left_out"] = json!(x.left_out.changes_left_out);
            sessions.push(v);
        }
        let next = offset + sessions.len() as i64;
        let mut v = json!({
            "trace": to_value(&mask::trace(cx.r, trace.clone())),
            "sessions": sessions, "sessions_total": total, "offset": offset,
            "has_more": next < total, "next_offset": (next < total).then_some(next),
        });
        let overview = to_value(&view);
        for key in [
            "open_requests",
            "open_requests_total",
            "live",
            "protocol_version",
            "agent",
            "client",
            "frames_left_out",
            "sessions_left_out",
            "requests_not_followed",
        ] {
            v[key] = overview[key].clone();
        }
        Ok(Ok(v))
    })?
}

/// A name from a fixed set (`kind`, `dir`) as the type serde knows it by.
fn named<T: serde::de::DeserializeOwned>(
    what: &str,
    name: Option<String>,
    choices: &str,
) -> Result<Option<T>, ToolError> {
    name.map(|n| {
        serde_json::from_value(Value::String(n.clone()))
            .map_err(|_| ToolError::Bad(format!("{what} must be one of {choices}, not {n:?}")))
    })
    .transpose()
}

fn search(cx: &Cx<'_>, a: SearchFrames) -> Result<Value, ToolError> {
    let id = trace_id(cx.store, a.trace_id)?;
    let (offset, limit) = paging(a.offset, a.limit, FRAMES_PAGE)?;
    let q = FrameQuery {
        after: a.after.map(|s| ranged("after", Some(s), 0, 0, i64::MAX)).transpose()?,
        offset: Some(offset),
        limit: Some(limit),
        dir: named("dir", a.dir, "client_to_agent, agent_to_client, stderr")?,
        kind: named("kind", a.kind, "request, response, notification, batch, invalid, stderr")?,
        method: a.method,
        session: a.session_id,
        errors: a.errors,
        min_latency_ms: a.min_latency_ms,
        q: a.q,
        from: None,
        to: None,
    };
    crate::read::query::validate(&q).map_err(ToolError::Bad)?;
    // Searched and sized as the page shows the frames: masked.
    let mut page = cx.store.seen_by(cx.r).run(|| cx.store.frame_page_counted(id, &q, cx.search_counts))?;
    page.frames.iter_mut().for_each(|f| mask::summary(cx.r, f));
    let next = offset + page.frames.len() as i64;
    let mut v = to_value(&page);
    v["offset"] = json!(offset);
    v["next_offset"] = json!(page.has_more.then_some(next));
    Ok(v)
}

fn frame(cx: &Cx<'_>, a: GetFrame) -> Result<Value, ToolError> {
    let id = trace_id(cx.store, a.trace_id)?;
    let offset = ranged("offset", a.offset, 0, 0, i64::MAX)? as usize;
    let max = ranged("max_bytes", a.max_bytes, FRAME_DEFAULT_BYTES as i64, 1, FRAME_MAX_BYTES as i64)? as usize;
    let Some(d) = cx.store.seen_by(cx.r).run(|| cx.store.frame_detail(id, a.seq))? else {
        return Err(ToolError::Bad(format!("trace {id} has no frame {}; search_frames lists its frames", a.seq)));
    };
    let d = mask::detail(cx.r, d, usize::MAX);
    let mut next = None;
    let mut part = |text: Option<&str>, offset: usize, max: usize| {
        text.map(|t| {
            let (w, n) = answer::window(t, offset, max);
            next = next.max(n);
            w.to_owned()
        })
    };
    // Base64 is cut at whole groups of four characters.
    let raw = part(d.raw.as_deref(), offset, max);
    let raw_base64 = part(d.raw_base64.as_deref(), offset / 4 * 4, (max / 4 * 4).max(4));
    let envelope = part(d.envelope.as_deref(), offset, max);
    Ok(json!({
        "frame": to_value(&d.frame), "pair": to_value(&d.pair),
        "raw": raw, "raw_base64": raw_base64, "envelope": envelope,
        "raw_size": d.raw_size, "envelope_size": d.envelope_size,
        "offset": offset, "cut": next.is_some(), "next_offset": next,
    }))
}

/// Serves `reader` over MCP on stdin/stdout until the client closes stdin.
pub fn run(reader: Reader, redact: bool) -> anyhow::Result<()> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .max_blocking_threads(MCP_BLOCKING_THREADS)
        .enable_all()
        .build()?;
    runtime.block_on(async {
        let stdin = input::Bounded::new(tokio::io::stdin(), MAX_REQUEST_BYTES);
        let refused = stdin.refused();
        let too_long = || {
            anyhow::anyhow!(
                "a message from the MCP client is longer than {MAX_REQUEST_BYTES} bytes; it was not read, and the session ended"
            )
        };
        let service = match TraceTools::new(reader, redact).serve((stdin, tokio::io::stdout())).await {
            Ok(service) => service,
            Err(_) if refused.load(Ordering::SeqCst) => return Err(too_long()),
            Err(e) => return Err(anyhow::anyhow!("the MCP client did not initialize: {e}")),
        };
        service.waiting().await.map_err(|e| anyhow::anyhow!("the MCP server stopped: {e}"))?;
        // The transport takes the refusal as the end of input: the session
        // did not end as the client meant it to.
        if refused.load(Ordering::SeqCst) {
            return Err(too_long());
        }
        Ok(())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_query_out_of_time_names_only_arguments_its_tool_takes() {
        let tools = TraceTools::tool_router().list_all();
        assert_eq!(tools.len(), 6);
        for t in tools {
            let hint = narrow_hint(&t.name);
            assert_ne!(hint, narrow_hint(""), "{} has no hint of its own", t.name);
            let props = t.input_schema.get("properties").and_then(Value::as_object).cloned().unwrap_or_default();
            let named: Vec<&str> = hint.split('`').skip(1).step_by(2).collect();
            for arg in &named {
                assert!(props.contains_key(*arg), "{}'s hint names `{arg}`, not one of its arguments", t.name);
            }
            // compare_traces takes only the two traces; method_stats's
            // limit cuts its list, not its reading: they say so instead.
            let narrowing = !matches!(t.name.as_ref(), "compare_traces" | "method_stats");
            assert_eq!(named.is_empty(), !narrowing, "{}: {hint}", t.name);
            assert_eq!(hint.contains("takes no argument that narrows it"), !narrowing, "{}: {hint}", t.name);
        }
        let interrupted =
            rusqlite::Error::SqliteFailure(rusqlite::ffi::Error::new(rusqlite::ffi::SQLITE_INTERRUPT), None);
        let e = ToolError::Store(StoreError::Sqlite(interrupted));
        assert!(e.text("compare_traces").starts_with("the query ran out of its 20 s; compare_traces reads"));
    }
}
