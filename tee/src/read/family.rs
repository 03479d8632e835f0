//! A trace's family as readers show it: its MCP children (servers its agent
//! started, each recorded by acp-tee and linked while recording,
//! `traces.parent_trace`), each with its server's name and its start on the
//! parent's clock, and their requests read for linking to the parent's
//! tool calls (`crate::family`, the rule).

use crate::family::{hints_of, serves_tool_calls, McpRequest};
use crate::redact::Redactor;
use crate::store::{Store, StoreError};
use acp_tee_shared::api::{FamilyMember, TraceFamily, TraceSummary};
use acp_tee_shared::session::{McpCall, Turn};
use acp_tee_shared::{Direction, FrameKind, Protocol, TraceMeta};
use serde::Deserialize;
use serde_json::value::RawValue;
use std::collections::HashMap;

/// How many requests of one child are read for linking at most (the
/// children read in part are named, [`Requests::cut`]).
pub const REQUESTS_MAX: usize = 10_000;

/// How many requests of a whole family are read for linking at most.
pub const FAMILY_REQUESTS_MAX: usize = 100_000;

/// How many characters of an error's text, a tool's or server's name are
/// kept (`…` marks a cut).
const ERROR_MAX_CHARS: usize = 200;

/// Trace `parent`'s children, oldest first, with their servers' names and
/// where they start on the parent's clock; their fields and answers masked
/// by `redactor` (as exports mask them).
pub fn members(store: &Store, parent: &TraceMeta, redactor: &Redactor) -> Result<TraceFamily, StoreError> {
    let mut children = Vec::new();
    for child in store.children(parent.id)? {
        let server = match child.protocol {
            Some(Protocol::Mcp) => server_name(store, child.id, redactor)?.as_deref().map(cut),
            _ => None,
        };
        let live = store.trace_summary(child.id).map(|s| s.live).unwrap_or(false);
        let offset_ns = offset_ns(parent, &child);
        let meta = if redactor.is_noop() { child } else { crate::export::mask_meta(child, redactor) };
        children.push(FamilyMember { offset_ns, server, live, meta });
    }
    Ok(TraceFamily { parent_trace: parent.parent_trace, children })
}

/// Whether `family` has an MCP child, whose calls can go under tool calls.
pub fn has_mcp(family: &TraceFamily) -> bool {
    family.children.iter().any(|c| c.meta.protocol == Some(Protocol::Mcp))
}

/// Nanoseconds from `parent`'s start to `child`'s (their wall-clock starts,
/// to the microsecond); 0 when either does not parse.
pub fn offset_ns(parent: &TraceMeta, child: &TraceMeta) -> i64 {
    let at = |s: &str| chrono::DateTime::parse_from_rfc3339(s).ok();
    match (at(&parent.started_at), at(&child.started_at)) {
        (Some(p), Some(c)) => (c - p).num_nanoseconds().unwrap_or(0),
        _ => 0,
    }
}

/// The `serverInfo.name` of MCP trace `id`'s `initialize` answer.
fn server_name(store: &Store, id: i64, redactor: &Redactor) -> Result<Option<String>, StoreError> {
    #[derive(Deserialize)]
    struct Answer {
        result: Option<Result_>,
    }
    #[derive(Deserialize)]
    struct Result_ {
        #[serde(rename = "serverInfo")]
        server_info: Option<Info>,
    }
    #[derive(Deserialize)]
    struct Info {
        name: Option<String>,
    }
    let mut name = None;
    // The answer comes among the first frames; a trace without one is not
    // read to its end for it.
    let mut read = 0;
    store.fold_frames_after(id, 0, |f| {
        read += 1;
        if f.dir == Direction::AgentToClient && f.method == Some("initialize") && f.kind == FrameKind::Response {
            name = serde_json::from_slice::<Answer>(&redactor.redact(f.raw))
                .ok()
                .and_then(|a| a.result?.server_info?.name);
            return false;
        }
        read < 64
    })?;
    Ok(name)
}

/// The requests of a family's MCP children that can serve tool calls.
#[derive(Debug, Default)]
pub struct Requests {
    pub requests: Vec<McpRequest>,
    /// The children whose frames past their first [`REQUESTS_MAX`] such
    /// requests were not read.
    pub cut: Vec<i64>,
}

/// Reads the requests of `family`'s MCP children for linking, their texts
/// masked by `redactor`.
pub fn requests(store: &Store, family: &TraceFamily, redactor: &Redactor) -> Result<Requests, StoreError> {
    let mut out = Requests::default();
    for child in family.children.iter().filter(|c| c.meta.protocol == Some(Protocol::Mcp)) {
        let server = child.server.as_deref().or(child.meta.name.as_deref()).map(cut);
        let first = out.requests.len();
        // The request's index by its JSON-RPC id, until answered.
        let mut open: HashMap<String, usize> = HashMap::new();
        let mut by_seq: HashMap<i64, usize> = HashMap::new();
        store.fold_frames_after(child.meta.id, 0, |f| {
            match (f.dir, f.kind) {
                (Direction::ClientToAgent, FrameKind::Request) => {
                    let Some(method) = f.method.filter(|m| serves_tool_calls(m)) else { return true };
                    if out.requests.len() - first >= REQUESTS_MAX || out.requests.len() >= FAMILY_REQUESTS_MAX {
                        out.cut.push(child.meta.id);
                        return false;
                    }
                    let raw = redactor.redact(f.raw);
                    let params = serde_json::from_slice::<Request>(&raw).ok().and_then(|r| r.params);
                    let (name, meta) = params.map(|p| (p.name.or(p.uri), p.meta)).unwrap_or_default();
                    let name = name.as_deref().map(cut);
                    if let Some(id) = f.rpc_id {
                        open.insert(id.to_owned(), out.requests.len());
                    }
                    by_seq.insert(f.seq, out.requests.len());
                    out.requests.push(McpRequest {
                        call: McpCall {
                            trace_id: child.meta.id,
                            server: server.clone(),
                            seq: f.seq,
                            method: method.to_owned(),
                            name,
                            t_ns: child.offset_ns.saturating_add(f.t_ns),
                            ..McpCall::default()
                        },
                        hints: meta.as_ref().map(hints_of).unwrap_or_default(),
                    });
                }
                (Direction::AgentToClient, FrameKind::Response | FrameKind::Error) => {
                    let at = f.reply_to_seq.and_then(|s| by_seq.get(&s).copied());
                    let at = at.or_else(|| f.rpc_id.and_then(|id| open.remove(id)));
                    let Some(i) = at else { return true };
                    let call = &mut out.requests[i].call;
                    if call.latency_ns.is_some() {
                        return true;
                    }
                    call.latency_ns = Some(child.offset_ns.saturating_add(f.t_ns) - call.t_ns);
                    call.error = failure(&redactor.redact(f.raw));
                }
                _ => {}
            }
            true
        })?;
    }
    Ok(out)
}

/// What puts the requests of a trace's MCP children under its tool calls.
pub struct Linker {
    family: TraceFamily,
    requests: Requests,
    /// Every session of the trace.
    sessions: Vec<String>,
    /// Where a tool call still in progress ends: now while the trace is
    /// live, else its last frame.
    end_t_ns: i64,
}

impl Linker {
    /// The linker of trace `trace` (whose sessions are `sessions`), its
    /// children's texts masked by `redactor`; `None` when it has no MCP
    /// child.
    pub fn of(
        store: &Store,
        trace: &TraceSummary,
        sessions: Vec<String>,
        redactor: &Redactor,
    ) -> Result<Option<Linker>, StoreError> {
        let family = members(store, &trace.meta, redactor)?;
        if !has_mcp(&family) {
            return Ok(None);
        }
        let requests = requests(store, &family, redactor)?;
        let end_t_ns = crate::session::now_t_ns(trace).unwrap_or(trace.last_t_ns);
        Ok(Some(Linker { family, requests, sessions, end_t_ns }))
    }

    /// Puts the requests under the tool calls of `turns`, session `sid`'s.
    pub fn link(&self, sid: &str, turns: &mut [Turn]) {
        let sessions: Vec<&str> = self.sessions.iter().map(String::as_str).collect();
        crate::family::attach(turns, sid, &sessions, &self.requests.requests, self.end_t_ns);
    }

    /// The trace's children.
    pub fn family(&self) -> &TraceFamily {
        &self.family
    }

    /// The children whose requests were read only in part
    /// ([`REQUESTS_MAX`]).
    pub fn cut(&self) -> &[i64] {
        &self.requests.cut
    }
}

#[derive(Deserialize)]
struct Request {
    params: Option<Params>,
}

#[derive(Deserialize)]
struct Params {
    name: Option<String>,
    uri: Option<String>,
    #[serde(rename = "_meta")]
    meta: Option<serde_json::Value>,
}

/// Why an answer says its request failed: a JSON-RPC error's message, or
/// the text of a tool result with `isError: true`.
fn failure(raw: &[u8]) -> Option<String> {
    #[derive(Deserialize)]
    struct Answer<'a> {
        #[serde(borrow)]
        error: Option<&'a RawValue>,
        result: Option<ToolResult>,
    }
    #[derive(Deserialize)]
    struct ToolResult {
        #[serde(rename = "isError", default)]
        is_error: bool,
        #[serde(default)]
        content: Vec<serde_json::Value>,
    }
    let answer: Answer = serde_json::from_slice(raw).ok()?;
    let text = if let Some(error) = answer.error {
        let v: serde_json::Value = serde_json::from_str(error.get()).ok()?;
        match v.get("message").and_then(|m| m.as_str()) {
            Some(m) => m.to_owned(),
            None => "an error without a message".to_owned(),
        }
    } else {
        let result = answer.result.filter(|r| r.is_error)?;
        let text: Vec<&str> = result.content.iter().filter_map(|c| c.get("text")?.as_str()).collect();
        if text.is_empty() {
            "the tool failed (isError), without text".to_owned()
        } else {
            text.join(" ")
        }
    };
    Some(cut(&text))
}

fn cut(text: &str) -> String {
    match text.char_indices().nth(ERROR_MAX_CHARS) {
        Some((at, _)) => format!("{}…", &text[..at]),
        None => text.to_owned(),
    }
}
