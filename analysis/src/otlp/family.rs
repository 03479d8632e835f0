//! The MCP calls of an ACP trace's MCP children as spans under the
//! `execute_tool` spans they served, linked by the rule of
//! [`crate::family`]: what the exporter sees of the tool spans leaving the
//! [`super::Mapper`] ([`ToolSpans::observe`]) and, once the trace is done,
//! one `CLIENT` span per MCP request ([`ToolSpans::mcp_spans`]), named and
//! attributed as MCP-over-ACP's spans are (`mcp.method.name`,
//! `gen_ai.tool.name`).

use super::ids::span_id;
use super::mapping::kv;
use crate::family::McpRequest;
use acp_tee_shared::session::{LinkedBy, StatusChange, ToolCall, Turn};
use opentelemetry_proto::tonic::common::v1::any_value;
use opentelemetry_proto::tonic::trace::v1::{span, status, Span, Status};
use std::collections::{HashMap, HashSet};

/// How many tool spans are kept for linking at most.
pub const TOOL_SPANS_MAX: usize = 100_000;

/// A tool span as linking needs it.
struct ToolSpan {
    trace_id: Vec<u8>,
    span_id: Vec<u8>,
    parent: Vec<u8>,
    call: ToolCall,
}

/// What linking needs of the spans a trace's mapper made.
#[derive(Default)]
pub struct ToolSpans {
    epoch_ns: u64,
    tools: Vec<ToolSpan>,
    /// Turn (`invoke_agent`) span ids to their `gen_ai.conversation.id`.
    sessions: HashMap<Vec<u8>, String>,
    /// Tool spans past [`TOOL_SPANS_MAX`].
    pub left_out: u64,
}

fn attribute<'a>(span: &'a Span, key: &str) -> Option<&'a str> {
    span.attributes.iter().find(|a| a.key == key).and_then(|a| match a.value.as_ref()?.value.as_ref()? {
        any_value::Value::StringValue(s) => Some(s.as_str()),
        _ => None,
    })
}

impl ToolSpans {
    /// For the spans of a trace started at `epoch_ns` (Unix ns).
    pub fn new(epoch_ns: u64) -> ToolSpans {
        ToolSpans { epoch_ns, ..ToolSpans::default() }
    }

    /// Notes `span`, when it is a tool or turn span.
    pub fn observe(&mut self, span: &Span) {
        match attribute(span, "gen_ai.operation.name") {
            Some("execute_tool") => {
                let Some(id) = attribute(span, "gen_ai.tool.call.id") else { return };
                if self.tools.len() >= TOOL_SPANS_MAX {
                    self.left_out += 1;
                    return;
                }
                let at = |unix: u64| unix.saturating_sub(self.epoch_ns) as i64;
                let call = ToolCall {
                    tool_call_id: id.to_owned(),
                    title: attribute(span, "gen_ai.tool.name").map(str::to_owned),
                    first_t_ns: at(span.start_time_unix_nano),
                    statuses: vec![StatusChange {
                        status: "completed".into(),
                        seq: 0,
                        t_ns: at(span.end_time_unix_nano.max(span.start_time_unix_nano)),
                    }],
                    ..ToolCall::default()
                };
                self.tools.push(ToolSpan {
                    trace_id: span.trace_id.clone(),
                    span_id: span.span_id.clone(),
                    parent: span.parent_span_id.clone(),
                    call,
                });
            }
            Some("invoke_agent") => {
                if let Some(sid) = attribute(span, "gen_ai.conversation.id") {
                    if self.sessions.len() < TOOL_SPANS_MAX {
                        self.sessions.insert(span.span_id.clone(), sid.to_owned());
                    }
                }
            }
            _ => {}
        }
    }

    /// One span per request of `requests` the rule puts under a tool span
    /// (a request several tool spans fit goes under the first of them, with
    /// `acp.mcp.candidates` saying how many fit).
    pub fn mcp_spans(&self, requests: &[McpRequest]) -> Vec<Span> {
        // The tool spans of each session, as one turn each: the rule needs
        // only their spans in time.
        let mut by_session: HashMap<String, Vec<usize>> = HashMap::new();
        for (i, t) in self.tools.iter().enumerate() {
            let sid = self.sessions.get(&t.parent).cloned().unwrap_or_else(|| hex(&t.trace_id));
            by_session.entry(sid).or_default().push(i);
        }
        let sids: Vec<&str> = by_session.keys().map(String::as_str).collect();
        let mut out = Vec::new();
        let mut made = HashSet::new();
        let mut order: Vec<&String> = by_session.keys().collect();
        order.sort();
        for sid in order {
            let members = &by_session[sid];
            let mut turn =
                [Turn { tool_calls: members.iter().map(|&i| self.tools[i].call.clone()).collect(), ..Turn::default() }];
            crate::family::attach(&mut turn, sid, &sids, requests, i64::MAX);
            for (call, &i) in turn[0].tool_calls.iter().zip(members) {
                for m in &call.mcp_calls {
                    if made.insert((m.trace_id, m.seq)) {
                        out.push(self.span_of(&self.tools[i], m));
                    }
                }
            }
        }
        out
    }

    fn span_of(&self, tool: &ToolSpan, m: &acp_tee_shared::session::McpCall) -> Span {
        let start = self.epoch_ns.saturating_add(m.t_ns.max(0) as u64);
        let end = match m.latency_ns {
            Some(l) => start.saturating_add(l.max(0) as u64),
            None => start,
        };
        let name = match &m.name {
            Some(n) => format!("{} {n}", m.method),
            None => m.method.clone(),
        };
        let id = span_id(&hex(&tool.span_id), &format!("mcp\0{}", m.trace_id), m.seq);
        let mut span = Span {
            trace_id: tool.trace_id.clone(),
            span_id: id.to_vec(),
            parent_span_id: tool.span_id.clone(),
            name,
            kind: span::SpanKind::Client as i32,
            start_time_unix_nano: start,
            end_time_unix_nano: end,
            ..Default::default()
        };
        let a = &mut span.attributes;
        a.push(kv("mcp.method.name", &m.method));
        a.push(kv("rpc.system", "jsonrpc"));
        a.push(kv("network.transport", "pipe"));
        if let Some(server) = &m.server {
            a.push(kv("server.address", server));
        }
        if let Some(name) = &m.name {
            if m.method == "tools/call" {
                a.push(kv("gen_ai.tool.name", name));
                a.push(kv("gen_ai.operation.name", "execute_tool"));
            } else if m.method == "resources/read" {
                a.push(kv("mcp.resource.uri", name));
            }
        }
        a.push(kv("acp.mcp.trace", &m.trace_id.to_string()));
        a.push(kv("acp.mcp.seq", &m.seq.to_string()));
        a.push(kv("acp.mcp.linked_by", if m.linked_by == LinkedBy::Meta { "meta" } else { "time" }));
        if m.candidates > 1 {
            a.push(kv("acp.mcp.candidates", &m.candidates.to_string()));
        }
        if m.latency_ns.is_none() {
            a.push(kv("acp.mcp.answered", "false"));
        }
        if let Some(why) = &m.error {
            a.push(kv("error.type", "mcp_call_failed"));
            span.status = Some(Status { code: status::StatusCode::Error as i32, message: why.clone() });
        }
        span
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}
