//! acp's shapes against the official ACP types (crates.io
//! `agent-client-protocol-schema`, v1 with its unstable features): a
//! message built from those types and written by their own serde reads,
//! through [`message`], [`params`], [`reply`], [`Envelope`] and
//! [`plain_update_kind`], as exactly what the schema value holds. Then the
//! two rules, each on a message no schema type would write: a member of the
//! wrong type reads as absent, and a member written twice counts as its
//! last.

use super::*;
use acp_tee_shared::FrameKind;
use agent_client_protocol_schema::v1 as sc;
use agent_client_protocol_schema::{MaybeUndefined, ProtocolVersion};
use proptest::prelude::*;
use proptest::{collection::vec, option::of as maybe, sample::select};
use serde::Serialize;
use serde_json::Value;

// ---------------------------------------------------------------------------
// What acp read, and what the schema value holds, in one comparable form.
// ---------------------------------------------------------------------------

/// Three texts of one object.
type Texts3 = (Option<String>, Option<String>, Option<String>);

/// `clientCapabilities.fs`: readTextFile, writeTextFile.
type FsSeen = (Option<bool>, Option<bool>);

/// The members [`Update`] reads.
#[derive(Debug, PartialEq, Default)]
pub(super) struct UpdateSeen {
    session_update: Option<String>,
    content: Option<Value>,
    message_id: Option<String>,
    tool_call_id: Option<String>,
    title: Option<String>,
    kind: Option<String>,
    status: Option<String>,
    locations: Option<Vec<Option<String>>>,
    raw_input: Option<Value>,
    raw_output: Option<Value>,
    /// content, status, priority.
    entries: Option<Vec<Texts3>>,
    available_commands: Option<Vec<Option<String>>>,
    current_mode_id: Option<String>,
    used: Option<u64>,
    size: Option<u64>,
    cost: Option<(Option<f64>, Option<String>)>,
    stop_reason: Option<String>,
}

/// name, title, version.
type InfoSeen = Texts3;

/// A permission option as read: its id, name and kind.
type OptionSeen = (Option<String>, Option<String>, Option<String>);

/// The members [`Params`] reads.
#[derive(Debug, PartialEq, Default)]
pub(super) struct ParamsSeen {
    traceparent: Option<String>,
    session_id: Option<String>,
    cwd: Option<String>,
    mode_id: Option<String>,
    config_id: Option<String>,
    value: Option<Value>,
    /// type, text.
    prompt: Option<Vec<(Option<String>, Option<String>)>>,
    tool_call: Option<UpdateSeen>,
    /// optionId, name, kind.
    options: Option<Vec<OptionSeen>>,
    path: Option<String>,
    command: Option<String>,
    args: Option<Vec<String>>,
    terminal_id: Option<String>,
    message: Option<String>,
    request_id: Option<Value>,
    update: Option<UpdateSeen>,
    client_info: Option<InfoSeen>,
    /// fs (readTextFile, writeTextFile), terminal.
    client_capabilities: Option<(Option<FsSeen>, Option<bool>)>,
    connection_id: Option<String>,
    method: Option<String>,
    /// name, uri, protocolVersion.
    params: Option<Texts3>,
}

/// The members [`Answer`] reads.
#[derive(Debug, PartialEq, Default)]
pub(super) struct AnswerSeen {
    protocol_version: Option<i64>,
    agent_info: Option<InfoSeen>,
    /// `agentCapabilities`, its loadSession.
    load_session: Option<Option<bool>>,
    session_id: Option<String>,
    /// `modes`, its currentModeId.
    current_mode_id: Option<Option<String>>,
    stop_reason: Option<String>,
    usage: Option<Usage>,
    /// outcome, optionId.
    outcome: Option<(Option<String>, Option<String>)>,
    terminal_id: Option<String>,
    exit_code: Option<i64>,
    signal: Option<String>,
    action: Option<String>,
    connection_id: Option<String>,
}

pub(super) fn owned(s: &Option<Str>) -> Option<String> {
    s.as_deref().map(str::to_owned)
}

pub(super) fn decoded(raw: &RawValue) -> Value {
    serde_json::from_str(raw.get()).expect("a member's text is JSON")
}

pub(super) fn info_seen(i: &Info) -> InfoSeen {
    (owned(&i.name), owned(&i.title), owned(&i.version))
}

pub(super) fn update_seen(u: &Update) -> UpdateSeen {
    UpdateSeen {
        session_update: owned(&u.session_update),
        content: u.content.map(decoded),
        message_id: owned(&u.message_id),
        tool_call_id: owned(&u.tool_call_id),
        title: owned(&u.title),
        kind: owned(&u.kind),
        status: owned(&u.status),
        locations: u.locations.as_ref().map(|l| l.iter().map(|l| owned(&l.path)).collect()),
        raw_input: u.raw_input.map(decoded),
        raw_output: u.raw_output.map(decoded),
        entries: u
            .entries
            .as_ref()
            .map(|e| e.iter().map(|e| (owned(&e.content), owned(&e.status), owned(&e.priority))).collect()),
        available_commands: u.available_commands.as_ref().map(|c| c.iter().map(|c| owned(&c.name)).collect()),
        current_mode_id: owned(&u.current_mode_id),
        used: u.used,
        size: u.size,
        cost: u.cost.as_ref().map(|c| (c.amount, c.currency.clone())),
        stop_reason: owned(&u.stop_reason),
    }
}

pub(super) fn params_seen(p: &Params) -> ParamsSeen {
    ParamsSeen {
        traceparent: p.meta.as_ref().and_then(|m| owned(&m.traceparent)),
        session_id: owned(&p.session_id),
        cwd: owned(&p.cwd),
        mode_id: owned(&p.mode_id),
        config_id: owned(&p.config_id),
        value: p.value.map(decoded),
        prompt: p.prompt.as_ref().map(|b| b.iter().map(|b| (owned(&b.kind), owned(&b.text))).collect()),
        tool_call: p.tool_call.as_ref().map(update_seen),
        options: p
            .options
            .as_ref()
            .map(|o| o.iter().map(|o| (owned(&o.option_id), owned(&o.name), owned(&o.kind))).collect()),
        path: owned(&p.path),
        command: owned(&p.command),
        args: p.args.as_ref().map(|a| a.iter().map(|a| a.to_string()).collect()),
        terminal_id: owned(&p.terminal_id),
        message: owned(&p.message),
        request_id: p.request_id.map(decoded),
        update: p.update.as_ref().map(update_seen),
        client_info: p.client_info.as_ref().map(info_seen),
        client_capabilities: p
            .client_capabilities
            .map(|c| (c.fs.map(|f| (f.read_text_file, f.write_text_file)), c.terminal)),
        connection_id: owned(&p.connection_id),
        method: owned(&p.method),
        params: p.params.as_ref().map(|m| (owned(&m.name), owned(&m.uri), owned(&m.protocol_version))),
    }
}

pub(super) fn answer_seen(a: &Answer) -> AnswerSeen {
    AnswerSeen {
        protocol_version: a.protocol_version,
        agent_info: a.agent_info.as_ref().map(info_seen),
        load_session: a.agent_capabilities.map(|c| c.load_session),
        session_id: owned(&a.session_id),
        current_mode_id: a.modes.as_ref().map(|m| owned(&m.current_mode_id)),
        stop_reason: owned(&a.stop_reason),
        usage: a.usage,
        outcome: a.outcome.as_ref().map(|o| (owned(&o.outcome), owned(&o.option_id))),
        terminal_id: owned(&a.terminal_id),
        exit_code: a.exit_code,
        signal: owned(&a.signal),
        action: owned(&a.action),
        connection_id: owned(&a.connection_id),
    }
}

// ---------------------------------------------------------------------------
// What the schema value holds, named by the schema's own serde.
// ---------------------------------------------------------------------------

/// The name the schema's serde writes for a unit variant (a kind, a status,
/// a stop reason).
fn name<T: Serialize>(t: &T) -> String {
    match serde_json::to_value(t).expect("schema values serialise") {
        Value::String(s) => s,
        other => panic!("{other} is no name"),
    }
}

fn json<T: Serialize>(t: &T) -> Value {
    serde_json::to_value(t).expect("schema values serialise")
}

/// A member written only when it holds more than its default.
fn unless_default<T: Serialize + Default + PartialEq>(t: &T) -> Option<String> {
    (*t != T::default()).then(|| name(t))
}

pub(super) fn info_held(i: &sc::Implementation) -> InfoSeen {
    (Some(i.name.clone()), i.title.clone(), Some(i.version.clone()))
}

pub(super) fn path(p: &std::path::Path) -> String {
    p.to_str().expect("generated paths are UTF-8").to_owned()
}

pub(super) fn update_held(u: &sc::SessionUpdate) -> UpdateSeen {
    use sc::SessionUpdate as U;
    let tag = json(u)["sessionUpdate"].as_str().expect("an update names its kind").to_owned();
    let mut h = UpdateSeen { session_update: Some(tag), ..Default::default() };
    match u {
        U::UserMessageChunk(c) | U::AgentMessageChunk(c) | U::AgentThoughtChunk(c) => {
            h.content = Some(json(&c.content));
            h.message_id = c.message_id.as_ref().map(|m| m.0.to_string());
        }
        U::SessionMessageChunk(c) => {
            h.content = Some(json(&c.content));
            h.message_id = Some(c.message_id.0.to_string());
        }
        U::CompactionSummaryChunk(c) => h.content = Some(json(&c.content)),
        U::ToolCall(t) => {
            h.tool_call_id = Some(t.tool_call_id.0.to_string());
            h.title = Some(t.title.clone());
            // The schema leaves out a kind or status that is its default,
            // and an empty list.
            h.kind = unless_default(&t.kind);
            h.status = unless_default(&t.status);
            h.content = (!t.content.is_empty()).then(|| json(&t.content));
            h.locations = (!t.locations.is_empty()).then(|| t.locations.iter().map(|l| Some(path(&l.path))).collect());
            h.raw_input = t.raw_input.clone();
            h.raw_output = t.raw_output.clone();
        }
        U::ToolCallUpdate(t) => tool_call_update_held(&mut h, t),
        U::Plan(p) => {
            h.entries = Some(
                p.entries
                    .iter()
                    .map(|e| (Some(e.content.clone()), Some(name(&e.status)), Some(name(&e.priority))))
                    .collect(),
            )
        }
        U::AvailableCommandsUpdate(a) => {
            h.available_commands = Some(a.available_commands.iter().map(|c| Some(c.name.clone())).collect())
        }
        U::CurrentModeUpdate(m) => h.current_mode_id = Some(m.current_mode_id.0.to_string()),
        U::UsageUpdate(x) => {
            h.used = Some(x.used);
            h.size = Some(x.size);
            h.cost = x.cost.as_ref().map(|c| (Some(c.amount), Some(c.currency.clone())));
        }
        U::SessionInfoUpdate(i) => {
            h.title = match &i.title {
                MaybeUndefined::Value(t) => Some(t.clone()),
                // Absent, or `null`: no title either way.
                _ => None,
            }
        }
        U::Notice(n) => h.title = Some(n.title.clone()),
        other => panic!("no strategy makes {other:?}"),
    }
    h
}

pub(super) fn tool_call_update_held(h: &mut UpdateSeen, t: &sc::ToolCallUpdate) {
    let f = &t.fields;
    h.tool_call_id = Some(t.tool_call_id.0.to_string());
    h.title = f.title.clone();
    h.kind = f.kind.as_ref().map(name);
    h.status = f.status.as_ref().map(name);
    h.content = f.content.as_ref().map(json);
    h.locations = f.locations.as_ref().map(|l| l.iter().map(|l| Some(path(&l.path))).collect());
    h.raw_input = f.raw_input.clone();
    h.raw_output = f.raw_output.clone();
}

pub(super) fn traceparent_held(meta: &Option<sc::Meta>) -> Option<String> {
    meta.as_ref()?.get("traceparent")?.as_str().map(str::to_owned)
}

pub(super) fn id_held(id: &sc::RequestId) -> Value {
    match id {
        sc::RequestId::Null => Value::Null,
        sc::RequestId::Number(n) => Value::from(*n),
        sc::RequestId::Str(s) => Value::from(s.as_str()),
    }
}

// ---------------------------------------------------------------------------
// Whole JSON-RPC messages, written by the schema's serde.
// ---------------------------------------------------------------------------

fn request<P: Serialize>(id: &sc::RequestId, method: &str, params: &P) -> Vec<u8> {
    let m = sc::Request { id: id.clone(), method: method.into(), params: Some(params) };
    serde_json::to_vec(&sc::JsonRpcMessage::wrap(m)).expect("schema values serialise")
}

fn notification<P: Serialize>(method: &str, params: &P) -> Vec<u8> {
    let m = sc::Notification { method: method.into(), params: Some(params) };
    serde_json::to_vec(&sc::JsonRpcMessage::wrap(m)).expect("schema values serialise")
}

fn response<R: Serialize>(id: &sc::RequestId, result: &R) -> Vec<u8> {
    let m = sc::Response::<&R>::Result { id: id.clone(), result };
    serde_json::to_vec(&sc::JsonRpcMessage::wrap(m)).expect("schema values serialise")
}

pub(super) fn error_response(id: &sc::RequestId, error: &sc::Error) -> Vec<u8> {
    let m = sc::Response::<()>::Error { id: id.clone(), error: error.clone() };
    serde_json::to_vec(&sc::JsonRpcMessage::wrap(m)).expect("schema values serialise")
}

// ---------------------------------------------------------------------------
// Reading them back.
// ---------------------------------------------------------------------------

/// The envelope of `raw` names the id, method and kind it was built with,
/// and classification's [`Routing`] reads the session id, update and
/// prompt that `held` holds.
pub(super) fn envelope_reads(
    raw: &[u8],
    id: Option<&sc::RequestId>,
    method: Option<&str>,
    kind: FrameKind,
    session_id: Option<&str>,
) -> Result<(), TestCaseError> {
    let e: Envelope = serde_json::from_slice(raw).map_err(|e| TestCaseError::fail(e.to_string()))?;
    prop_assert_eq!(e.jsonrpc.map(decoded), Some(Value::from("2.0")));
    prop_assert_eq!(e.id.map(decoded), id.map(id_held));
    prop_assert_eq!(e.kind(), Some((kind, method.map(str::to_owned))));
    prop_assert!(!e.duplicate);
    let r: Envelope<Routing> = serde_json::from_slice(raw).map_err(|e| TestCaseError::fail(e.to_string()))?;
    let routing = r.params.or(r.result).unwrap_or_default();
    prop_assert_eq!(routing.session_id.as_deref(), session_id);
    Ok(())
}

/// The params of the request or notification `raw`, as acp reads them.
pub(super) fn read_params(raw: &[u8]) -> ParamsSeen {
    let mut keep = None;
    let p = params(raw, &mut keep).expect("the message has params");
    params_seen(&p)
}

/// The result of the response `raw`, as acp reads it; it has no error.
pub(super) fn read_answer(raw: &[u8]) -> AnswerSeen {
    let mut keep = None;
    let (answer, error) = reply(raw, &mut keep);
    assert!(error.is_none(), "a result read as an error");
    answer_seen(&answer)
}

mod properties;
mod rules;
mod strategies;
