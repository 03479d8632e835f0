//! Building spans: new spans and their context, attributes, events, and
//! the content a span carries (prompts, chunks, tool input and output, cut
//! to [`super::CONTENT_MAX_BYTES`]).

use super::*;
use opentelemetry_proto::tonic::common::v1::{any_value, AnyValue, ArrayValue, KeyValue};
use serde_json::value::RawValue;

pub(super) fn new_span(ctx: Context, id: [u8; 8], name: &str) -> Span {
    Span {
        trace_id: ctx.trace.to_vec(),
        span_id: id.to_vec(),
        parent_span_id: ctx.parent.map(|p| p.to_vec()).unwrap_or_default(),
        name: name.to_owned(),
        ..Default::default()
    }
}

pub(super) fn child_of(span: &Span) -> Context {
    let mut trace = [0u8; 16];
    trace.copy_from_slice(&span.trace_id);
    let mut parent = [0u8; 8];
    parent.copy_from_slice(&span.span_id);
    Context { trace, parent: Some(parent) }
}

pub(super) fn rpc_attributes(span: &mut Span, f: &FrameIn<'_>) {
    span.attributes.push(kv("rpc.system", "jsonrpc"));
    span.attributes.push(kv("rpc.method", f.method.unwrap_or("")));
    span.attributes.push(kv("jsonrpc.protocol.version", "2.0"));
    if let Some(id) = f.rpc_id {
        span.attributes.push(kv("jsonrpc.request.id", id.trim_matches('"')));
    }
    let dir = match f.dir {
        Direction::ClientToAgent => "client_to_agent",
        Direction::AgentToClient => "agent_to_client",
        Direction::AgentStderr => "agent_stderr",
    };
    span.attributes.push(kv("acp.direction", dir));
}

pub(super) fn mcp_attributes(span: &mut Span, method: &str, params: &Params<'_>) {
    if let Some(c) = params.connection_id.as_deref() {
        span.attributes.push(kv("mcp.session.id", c));
    }
    let Some(inner) = params.method.as_deref().filter(|_| method == "mcp/message") else { return };
    let target = params.params.as_ref().and_then(|p| p.name.as_deref().or(p.uri.as_deref()));
    span.name = match target {
        Some(t) => format!("{inner} {t}"),
        None => inner.to_owned(),
    };
    span.attributes.push(kv("mcp.method.name", inner));
    if let Some(p) = &params.params {
        if let Some(uri) = p.uri.as_deref() {
            span.attributes.push(kv("mcp.resource.uri", uri));
        }
        if let Some(name) = p.name.as_deref().filter(|_| inner == "tools/call") {
            span.attributes.push(kv("gen_ai.tool.name", name));
            span.attributes.push(kv("gen_ai.operation.name", "execute_tool"));
        }
        if let Some(v) = p.protocol_version.as_deref() {
            span.attributes.push(kv("mcp.protocol.version", v));
        }
    }
}

pub(super) fn set_error(span: &mut Span, e: &RpcError<'_>) {
    let code = e.code.map_or_else(|| "error".to_owned(), |c| c.to_string());
    span.attributes.push(kv("error.type", &code));
    if let Some(c) = e.code {
        span.attributes.push(kv_int("rpc.response.status_code", c));
    }
    let mut message = String::new();
    push_cut(&mut message, e.message.as_deref().unwrap_or(""));
    message.truncate(floor_boundary(&message, 512));
    span.status = Some(Status { code: status::StatusCode::Error as i32, message });
}

pub(super) fn usage_attributes(span: &mut Span, u: Usage) {
    for (name, value) in [
        ("gen_ai.usage.input_tokens", u.input_tokens),
        ("gen_ai.usage.output_tokens", u.output_tokens),
        ("gen_ai.usage.cache_read.input_tokens", u.cached_read_tokens),
        ("gen_ai.usage.cache_creation.input_tokens", u.cached_write_tokens),
        ("acp.usage.thought_tokens", u.thought_tokens),
    ] {
        if let Some(v) = value {
            span.attributes.push(kv_int(name, i64::try_from(v).unwrap_or(i64::MAX)));
        }
    }
}

/// The prompt of a `session/prompt` as `gen_ai.input.messages` JSON.
pub(super) fn prompt_messages(raw: &[u8]) -> Option<String> {
    let mut keep = None;
    let msg = wire::message(raw, &mut keep);
    let blocks = msg.params?.prompt?;
    let parts: Vec<serde_json::Value> = blocks
        .iter()
        .map(|b| match (&b.kind, &b.text) {
            (_, Some(text)) => {
                let mut t = String::new();
                push_cut(&mut t, text);
                serde_json::json!({"type": "text", "content": t})
            }
            (kind, None) => serde_json::json!({"type": kind.as_deref().unwrap_or("unknown")}),
        })
        .collect();
    Some(serde_json::json!([{"role": "user", "parts": parts}]).to_string())
}

/// The text of an `agent_message_chunk`.
pub(super) fn chunk_text(raw: &[u8]) -> Option<String> {
    let mut keep = None;
    let msg = wire::message(raw, &mut keep);
    let content = msg.params?.update?.content?;
    let mut keep_content = None;
    let block: ContentBlock = wire::member(Some(content), &mut keep_content)?;
    block.text.map(Cow::into_owned)
}

/// A tool call update's `rawInput` and `rawOutput` as JSON text, cut.
pub(super) fn tool_io(raw: &[u8]) -> (Option<String>, Option<String>) {
    let mut keep = None;
    let Some(update) = wire::message(raw, &mut keep).params.and_then(|p| p.update) else {
        return (None, None);
    };
    let cut = |v: Option<&RawValue>| {
        v.map(|v| {
            let mut s = String::new();
            push_cut(&mut s, v.get());
            s
        })
    };
    (cut(update.raw_input), cut(update.raw_output))
}

/// Appends `text` to `out` up to [`CONTENT_MAX_BYTES`] in all.
pub(super) fn push_cut(out: &mut String, text: &str) {
    let room = CONTENT_MAX_BYTES.saturating_sub(out.len());
    out.push_str(&text[..floor_boundary(text, room)]);
}

/// The largest char boundary of `s` at or below `at`.
pub(super) fn floor_boundary(s: &str, at: usize) -> usize {
    if at >= s.len() {
        return s.len();
    }
    (0..=at).rev().find(|&i| s.is_char_boundary(i)).unwrap_or(0)
}

pub(super) fn event(time: u64, name: &str) -> span::Event {
    span::Event { time_unix_nano: time, name: name.to_owned(), ..Default::default() }
}

pub(super) fn push_event(span: &mut Span, e: span::Event) {
    if span.events.len() >= EVENTS_MAX {
        span.dropped_events_count += 1;
    } else {
        span.events.push(e);
    }
}

/// Sets attribute `key` to `value`, replacing an earlier value.
pub(super) fn set(span: &mut Span, key: &str, value: &str) {
    match span.attributes.iter_mut().find(|a| a.key == key) {
        Some(a) => a.value = kv(key, value).value,
        None => span.attributes.push(kv(key, value)),
    }
}

/// Adds `n` to integer attribute `key`.
pub(super) fn add_int(span: &mut Span, key: &str, n: i64) {
    let current = span.attributes.iter_mut().find(|a| a.key == key);
    match current.and_then(|a| a.value.as_mut()).and_then(|v| v.value.as_mut()) {
        Some(any_value::Value::IntValue(v)) => *v = v.saturating_add(n),
        _ => span.attributes.push(kv_int(key, n)),
    }
}

pub(super) fn any(value: any_value::Value) -> Option<AnyValue> {
    Some(AnyValue { value: Some(value) })
}

/// A string attribute.
pub fn kv(key: &str, value: &str) -> KeyValue {
    KeyValue { key: key.to_owned(), value: any(any_value::Value::StringValue(value.to_owned())), ..Default::default() }
}

pub(super) fn kv_int(key: &str, value: i64) -> KeyValue {
    KeyValue { key: key.to_owned(), value: any(any_value::Value::IntValue(value)), ..Default::default() }
}

pub(super) fn kv_f64(key: &str, value: f64) -> KeyValue {
    KeyValue { key: key.to_owned(), value: any(any_value::Value::DoubleValue(value)), ..Default::default() }
}

pub(super) fn kv_bool(key: &str, value: bool) -> KeyValue {
    KeyValue { key: key.to_owned(), value: any(any_value::Value::BoolValue(value)), ..Default::default() }
}

pub(super) fn kv_array(key: &str, values: &[&str]) -> KeyValue {
    let values = values.iter().map(|v| AnyValue { value: Some(any_value::Value::StringValue((*v).to_owned())) });
    KeyValue {
        key: key.to_owned(),
        value: any(any_value::Value::ArrayValue(ArrayValue { values: values.collect() })),
        ..Default::default()
    }
}
