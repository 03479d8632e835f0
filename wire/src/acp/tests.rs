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
struct UpdateSeen {
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

/// The members [`Params`] reads.
#[derive(Debug, PartialEq, Default)]
struct ParamsSeen {
    traceparent: Option<String>,
    session_id: Option<String>,
    cwd: Option<String>,
    mode_id: Option<String>,
    config_id: Option<String>,
    value: Option<Value>,
    /// type, text.
    prompt: Option<Vec<(Option<String>, Option<String>)>>,
    tool_call: Option<UpdateSeen>,
    /// optionId, kind.
    options: Option<Vec<(Option<String>, Option<String>)>>,
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
struct AnswerSeen {
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

fn owned(s: &Option<Str>) -> Option<String> {
    s.as_deref().map(str::to_owned)
}

fn decoded(raw: &RawValue) -> Value {
    serde_json::from_str(raw.get()).expect("a member's text is JSON")
}

fn info_seen(i: &Info) -> InfoSeen {
    (owned(&i.name), owned(&i.title), owned(&i.version))
}

fn update_seen(u: &Update) -> UpdateSeen {
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

fn params_seen(p: &Params) -> ParamsSeen {
    ParamsSeen {
        traceparent: p.meta.as_ref().and_then(|m| owned(&m.traceparent)),
        session_id: owned(&p.session_id),
        cwd: owned(&p.cwd),
        mode_id: owned(&p.mode_id),
        config_id: owned(&p.config_id),
        value: p.value.map(decoded),
        prompt: p.prompt.as_ref().map(|b| b.iter().map(|b| (owned(&b.kind), owned(&b.text))).collect()),
        tool_call: p.tool_call.as_ref().map(update_seen),
        options: p.options.as_ref().map(|o| o.iter().map(|o| (owned(&o.option_id), owned(&o.kind))).collect()),
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

fn answer_seen(a: &Answer) -> AnswerSeen {
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

fn info_held(i: &sc::Implementation) -> InfoSeen {
    (Some(i.name.clone()), i.title.clone(), Some(i.version.clone()))
}

fn path(p: &std::path::Path) -> String {
    p.to_str().expect("generated paths are UTF-8").to_owned()
}

fn update_held(u: &sc::SessionUpdate) -> UpdateSeen {
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

fn tool_call_update_held(h: &mut UpdateSeen, t: &sc::ToolCallUpdate) {
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

fn traceparent_held(meta: &Option<sc::Meta>) -> Option<String> {
    meta.as_ref()?.get("traceparent")?.as_str().map(str::to_owned)
}

fn id_held(id: &sc::RequestId) -> Value {
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

fn error_response(id: &sc::RequestId, error: &sc::Error) -> Vec<u8> {
    let m = sc::Response::<()>::Error { id: id.clone(), error: error.clone() };
    serde_json::to_vec(&sc::JsonRpcMessage::wrap(m)).expect("schema values serialise")
}

// ---------------------------------------------------------------------------
// Reading them back.
// ---------------------------------------------------------------------------

/// The envelope of `raw` names the id, method and kind it was built with,
/// and classification's [`Routing`] reads the session id, update and
/// prompt that `held` holds.
fn envelope_reads(
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
fn read_params(raw: &[u8]) -> ParamsSeen {
    let mut keep = None;
    let p = params(raw, &mut keep).expect("the message has params");
    params_seen(&p)
}

/// The result of the response `raw`, as acp reads it; it has no error.
fn read_answer(raw: &[u8]) -> AnswerSeen {
    let mut keep = None;
    let (answer, error) = reply(raw, &mut keep);
    assert!(error.is_none(), "a result read as an error");
    answer_seen(&answer)
}

// ---------------------------------------------------------------------------
// Strategies for the variable parts.
// ---------------------------------------------------------------------------

/// Texts that test escaping: quotes, backslashes, control characters,
/// non-ASCII and astral characters, and any string at all.
fn text() -> impl Strategy<Value = String> {
    prop_oneof![
        "[a-z0-9_/-]{0,10}",
        "[a-z \"\\\\/\n\t\r\u{1}\u{1f}\u{7f}\u{e9}\u{2028}\u{4e2d}\u{1f600}]{0,12}",
        any::<String>(),
    ]
}

fn request_id() -> impl Strategy<Value = sc::RequestId> {
    prop_oneof![
        1 => Just(sc::RequestId::Null),
        4 => any::<i64>().prop_map(sc::RequestId::Number),
        4 => text().prop_map(sc::RequestId::Str),
    ]
}

/// A number serde_json writes and reads back exactly.
fn decimal() -> impl Strategy<Value = f64> {
    (-10_000_000i64..10_000_000).prop_map(|c| c as f64 / 100.0)
}

/// Any JSON value but `null` (the schema's `Option<Value>` reads a `null`
/// as no value, and so does acp).
fn any_json() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        any::<bool>().prop_map(Value::from),
        any::<i64>().prop_map(Value::from),
        any::<u64>().prop_map(Value::from),
        decimal().prop_map(Value::from),
        text().prop_map(Value::from),
    ];
    let nested = leaf.clone().prop_recursive(3, 24, 4, |inner| {
        let inner = prop_oneof![Just(Value::Null), inner];
        prop_oneof![
            vec(inner.clone(), 0..4).prop_map(Value::from),
            proptest::collection::btree_map(text(), inner, 0..4).prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    });
    prop_oneof![leaf, nested]
}

/// `_meta`, sometimes with a W3C traceparent.
fn meta() -> impl Strategy<Value = Option<sc::Meta>> {
    maybe((maybe("00-[0-9a-f]{32}-[0-9a-f]{16}-0[01]"), maybe(text()))).prop_map(|m| {
        m.map(|(traceparent, other)| {
            let mut meta = sc::Meta::new();
            if let Some(t) = traceparent {
                meta.insert("traceparent".into(), t.into());
            }
            if let Some(o) = other {
                meta.insert("other".into(), o.into());
            }
            meta
        })
    })
}

fn content_block() -> impl Strategy<Value = sc::ContentBlock> {
    prop_oneof![
        3 => text().prop_map(sc::ContentBlock::from),
        1 => (text(), text()).prop_map(|(n, u)| sc::ContentBlock::ResourceLink(sc::ResourceLink::new(n, u))),
    ]
}

fn tool_kind() -> impl Strategy<Value = sc::ToolKind> {
    use sc::ToolKind as K;
    select(vec![
        K::Read,
        K::Edit,
        K::Delete,
        K::Move,
        K::Search,
        K::Execute,
        K::Think,
        K::Fetch,
        K::SwitchMode,
        K::Other,
    ])
}

fn tool_status() -> impl Strategy<Value = sc::ToolCallStatus> {
    use sc::ToolCallStatus as S;
    select(vec![S::Pending, S::InProgress, S::Completed, S::Failed])
}

fn tool_content() -> impl Strategy<Value = Vec<sc::ToolCallContent>> {
    vec(content_block().prop_map(sc::ToolCallContent::from), 0..3)
}

fn locations() -> impl Strategy<Value = Vec<sc::ToolCallLocation>> {
    vec((text(), maybe(any::<u32>())).prop_map(|(p, line)| sc::ToolCallLocation::new(p).line(line)), 0..3)
}

fn tool_call_update() -> impl Strategy<Value = sc::ToolCallUpdate> {
    (
        text(),
        maybe(text()),
        maybe(tool_kind()),
        maybe(tool_status()),
        maybe(tool_content()),
        maybe(locations()),
        maybe(any_json()),
        maybe(any_json()),
    )
        .prop_map(|(id, title, kind, status, content, locations, input, output)| {
            let fields = sc::ToolCallUpdateFields::new()
                .title(title)
                .kind(kind)
                .status(status)
                .content(content)
                .locations(locations)
                .raw_input(input)
                .raw_output(output);
            sc::ToolCallUpdate::new(id, fields)
        })
}

/// The update kinds acp-tee's readers use. Not generated: `plan_update`,
/// `plan_removed`, `config_option_update`, `prompt_suggestions_update` and
/// `cursor_update` (acp reads nothing of them but `sessionUpdate`), and
/// `compaction_update` (its `status`), `subagent_update` (its `title`) and
/// `session_message` (`messageId`, `content`), whose members acp would read
/// under the same names but no reader uses for these kinds yet.
fn session_update() -> impl Strategy<Value = sc::SessionUpdate> {
    use sc::SessionUpdate as U;
    let chunk = (0u8..3, content_block(), maybe(text())).prop_map(|(k, block, id)| {
        let c = sc::ContentChunk::new(block).message_id(id.map(sc::MessageId::new));
        match k {
            0 => U::UserMessageChunk(c),
            1 => U::AgentMessageChunk(c),
            _ => U::AgentThoughtChunk(c),
        }
    });
    let tool_call =
        (text(), text(), tool_kind(), tool_status(), tool_content(), locations(), maybe(any_json()), maybe(any_json()))
            .prop_map(|(id, title, kind, status, content, locations, input, output)| {
                U::ToolCall(
                    sc::ToolCall::new(id, title)
                        .kind(kind)
                        .status(status)
                        .content(content)
                        .locations(locations)
                        .raw_input(input)
                        .raw_output(output),
                )
            });
    let priority = select(vec![sc::PlanEntryPriority::High, sc::PlanEntryPriority::Medium, sc::PlanEntryPriority::Low]);
    let plan_status =
        select(vec![sc::PlanEntryStatus::Pending, sc::PlanEntryStatus::InProgress, sc::PlanEntryStatus::Completed]);
    let plan = vec((text(), priority, plan_status), 0..4)
        .prop_map(|e| U::Plan(sc::Plan::new(e.into_iter().map(|(c, p, s)| sc::PlanEntry::new(c, p, s)).collect())));
    let commands = vec((text(), text()), 0..4).prop_map(|c| {
        U::AvailableCommandsUpdate(sc::AvailableCommandsUpdate::new(
            c.into_iter().map(|(n, d)| sc::AvailableCommand::new(n, d)).collect(),
        ))
    });
    let mode = text().prop_map(|m| U::CurrentModeUpdate(sc::CurrentModeUpdate::new(sc::SessionModeId::new(m))));
    let usage = (any::<u64>(), any::<u64>(), maybe((decimal(), text()))).prop_map(|(used, size, cost)| {
        U::UsageUpdate(sc::UsageUpdate::new(used, size).cost(cost.map(|(a, c)| sc::Cost::new(a, c))))
    });
    let info = (0u8..3, text()).prop_map(|(k, t)| {
        let title = match k {
            0 => MaybeUndefined::Undefined,
            1 => MaybeUndefined::Null,
            _ => MaybeUndefined::Value(t),
        };
        U::SessionInfoUpdate(sc::SessionInfoUpdate::new().title(title))
    });
    let message_chunk = (text(), content_block())
        .prop_map(|(id, block)| U::SessionMessageChunk(sc::SessionMessageChunk::new(sc::MessageId::new(id), block)));
    let severity = select(vec![sc::NoticeSeverity::Info, sc::NoticeSeverity::Warning, sc::NoticeSeverity::Error]);
    let notice =
        (severity, text(), maybe(text())).prop_map(|(s, t, d)| U::Notice(sc::Notice::new(s, t).description(d)));
    let summary = (text(), content_block()).prop_map(|(id, block)| {
        U::CompactionSummaryChunk(sc::CompactionSummaryChunk::new(sc::CompactionId::new(id), block))
    });
    prop_oneof![
        chunk,
        tool_call,
        tool_call_update().prop_map(U::ToolCallUpdate),
        plan,
        commands,
        mode,
        usage,
        info,
        message_chunk,
        notice,
        summary,
    ]
}

fn stop_reason() -> impl Strategy<Value = sc::StopReason> {
    use sc::StopReason as S;
    select(vec![S::EndTurn, S::MaxTokens, S::MaxTurnRequests, S::Refusal, S::Cancelled])
}

fn usage() -> impl Strategy<Value = sc::Usage> {
    (any::<u64>(), any::<u64>(), any::<u64>(), maybe(any::<u64>()), maybe(any::<u64>()), maybe(any::<u64>())).prop_map(
        |(t, i, o, th, cr, cw)| {
            sc::Usage::new(t, i, o).thought_tokens(th).cached_read_tokens(cr).cached_write_tokens(cw)
        },
    )
}

fn permission_option() -> impl Strategy<Value = sc::PermissionOption> {
    use sc::PermissionOptionKind as K;
    let kind = select(vec![K::AllowOnce, K::AllowAlways, K::RejectOnce, K::RejectAlways]);
    (text(), text(), kind).prop_map(|(id, n, k)| sc::PermissionOption::new(sc::PermissionOptionId::new(id), n, k))
}

fn implementation() -> impl Strategy<Value = sc::Implementation> {
    (text(), maybe(text()), text()).prop_map(|(n, t, v)| sc::Implementation::new(n, v).title(t))
}

fn cases() -> ProptestConfig {
    // A tenth of the workspace's count: each case builds, writes and reads
    // several messages.
    ProptestConfig::with_cases((crate::fuzz_cases() / 10).max(32))
}

// ---------------------------------------------------------------------------
// The property: every schema-built message reads as the schema holds it.
// ---------------------------------------------------------------------------

proptest! {
    #![proptest_config(cases())]

    /// `session/update`, every update kind acp reads: the envelope, the
    /// params, the update's members, and the kind read from the bytes.
    #[test]
    fn session_updates_read_as_the_schema_holds_them(session in text(), update in session_update(), meta in meta()) {
        let n = sc::SessionNotification::new(sc::SessionId::new(session.clone()), update.clone()).meta(meta.clone());
        let method = sc::CLIENT_METHOD_NAMES.session_update;
        let raw = notification(method, &n);
        envelope_reads(&raw, None, Some(method), FrameKind::Notification, Some(&session))?;
        let held = ParamsSeen {
            traceparent: traceparent_held(&meta),
            session_id: Some(session),
            update: Some(update_held(&update)),
            ..Default::default()
        };
        let tag = held.update.as_ref().and_then(|u| u.session_update.clone());
        prop_assert_eq!(read_params(&raw), held);
        // The kind from the bytes, unless an escape might hide a name.
        let plain = plain_update_kind(&raw);
        if raw.windows(2).any(|w| w == b"\\u") {
            prop_assert_eq!(plain, None);
        } else {
            prop_assert_eq!(plain.map(str::to_owned), tag);
        }
    }

    /// `session/prompt` and its answer: the prompt's blocks, the stop
    /// reason and the token usage.
    #[test]
    fn prompts_and_their_answers_read_as_the_schema_holds_them(
        id in request_id(),
        session in text(),
        prompt in vec(content_block(), 0..5),
        meta in meta(),
        stop in stop_reason(),
        usage in maybe(usage()),
    ) {
        let req = sc::PromptRequest::new(sc::SessionId::new(session.clone()), prompt.clone()).meta(meta.clone());
        let method = sc::AGENT_METHOD_NAMES.session_prompt;
        let raw = request(&id, method, &req);
        envelope_reads(&raw, Some(&id), Some(method), FrameKind::Request, Some(&session))?;
        let blocks = prompt
            .iter()
            .map(|b| match b {
                sc::ContentBlock::Text(t) => (Some(name_of_block(b)), Some(t.text.clone())),
                other => (Some(name_of_block(other)), None),
            })
            .collect();
        let held = ParamsSeen {
            traceparent: traceparent_held(&meta),
            session_id: Some(session),
            prompt: Some(blocks),
            ..Default::default()
        };
        prop_assert_eq!(read_params(&raw), held);
        let r: Envelope<Routing> = serde_json::from_slice(&raw).unwrap();
        prop_assert_eq!(r.params.and_then(|p| p.prompt).map(|p| p.len()), Some(prompt.len()));

        let resp = sc::PromptResponse::new(stop).usage(usage.clone());
        let raw = response(&id, &resp);
        envelope_reads(&raw, Some(&id), None, FrameKind::Response, None)?;
        let held = AnswerSeen {
            stop_reason: Some(name(&stop)),
            usage: usage.map(|u| Usage {
                total_tokens: Some(u.total_tokens),
                input_tokens: Some(u.input_tokens),
                output_tokens: Some(u.output_tokens),
                thought_tokens: u.thought_tokens,
                cached_read_tokens: u.cached_read_tokens,
                cached_write_tokens: u.cached_write_tokens,
            }),
            ..Default::default()
        };
        prop_assert_eq!(read_answer(&raw), held);
    }

    /// `session/request_permission` and its answer: the tool call, the
    /// options, the outcome selected or cancelled.
    #[test]
    fn permission_requests_and_answers_read_as_the_schema_holds_them(
        id in request_id(),
        session in text(),
        tool_call in tool_call_update(),
        options in vec(permission_option(), 0..4),
        selected in maybe(text()),
    ) {
        let req = sc::RequestPermissionRequest::new(sc::SessionId::new(session.clone()), tool_call.clone(), options.clone());
        let method = sc::CLIENT_METHOD_NAMES.session_request_permission;
        let raw = request(&id, method, &req);
        envelope_reads(&raw, Some(&id), Some(method), FrameKind::Request, Some(&session))?;
        let mut call = UpdateSeen::default();
        tool_call_update_held(&mut call, &tool_call);
        let held = ParamsSeen {
            session_id: Some(session),
            tool_call: Some(call),
            options: Some(options.iter().map(|o| (Some(o.option_id.0.to_string()), Some(name(&o.kind)))).collect()),
            ..Default::default()
        };
        prop_assert_eq!(read_params(&raw), held);

        let outcome = match &selected {
            Some(o) => sc::RequestPermissionOutcome::Selected(sc::SelectedPermissionOutcome::new(sc::PermissionOptionId::new(o.clone()))),
            None => sc::RequestPermissionOutcome::Cancelled,
        };
        let tag = json(&outcome)["outcome"].as_str().map(str::to_owned);
        let raw = response(&id, &sc::RequestPermissionResponse::new(outcome));
        envelope_reads(&raw, Some(&id), None, FrameKind::Response, None)?;
        let held = AnswerSeen { outcome: Some((tag, selected)), ..Default::default() };
        prop_assert_eq!(read_answer(&raw), held);
    }

    /// `initialize` and its answer: protocol version, the client's fs and
    /// terminal capabilities, the agent's loadSession, both peers' info.
    #[test]
    fn initialize_and_its_answer_read_as_the_schema_holds_them(
        id in request_id(),
        version in any::<u16>(),
        (read, write, terminal, load) in (any::<bool>(), any::<bool>(), any::<bool>(), any::<bool>()),
        client in maybe(implementation()),
        agent in maybe(implementation()),
    ) {
        let fs = sc::FileSystemCapabilities::new().read_text_file(read).write_text_file(write);
        let req = sc::InitializeRequest::new(ProtocolVersion::from(version))
            .client_capabilities(sc::ClientCapabilities::new().fs(fs).terminal(terminal))
            .client_info(client.clone());
        let method = sc::AGENT_METHOD_NAMES.initialize;
        let raw = request(&id, method, &req);
        envelope_reads(&raw, Some(&id), Some(method), FrameKind::Request, None)?;
        let held = ParamsSeen {
            client_info: client.as_ref().map(info_held),
            client_capabilities: Some((Some((Some(read), Some(write))), Some(terminal))),
            ..Default::default()
        };
        prop_assert_eq!(read_params(&raw), held);

        let resp = sc::InitializeResponse::new(ProtocolVersion::from(version))
            .agent_capabilities(sc::AgentCapabilities::new().load_session(load))
            .agent_info(agent.clone());
        let raw = response(&id, &resp);
        envelope_reads(&raw, Some(&id), None, FrameKind::Response, None)?;
        let held = AnswerSeen {
            protocol_version: Some(i64::from(version)),
            agent_info: agent.as_ref().map(info_held),
            load_session: Some(Some(load)),
            ..Default::default()
        };
        prop_assert_eq!(read_answer(&raw), held);
    }

    /// `session/new` and its answer (cwd, session id, modes), and
    /// `session/set_mode`.
    #[test]
    fn new_sessions_and_modes_read_as_the_schema_holds_them(
        id in request_id(),
        cwd in text(),
        session in text(),
        modes in maybe((text(), vec((text(), text(), maybe(text())), 0..3))),
        mode in text(),
    ) {
        let method = sc::AGENT_METHOD_NAMES.session_new;
        let raw = request(&id, method, &sc::NewSessionRequest::new(cwd.clone()));
        envelope_reads(&raw, Some(&id), Some(method), FrameKind::Request, None)?;
        prop_assert_eq!(read_params(&raw), ParamsSeen { cwd: Some(cwd), ..Default::default() });

        let state = modes.as_ref().map(|(current, available)| {
            let available = available
                .iter()
                .map(|(i, n, d)| sc::SessionMode::new(sc::SessionModeId::new(i.clone()), n.clone()).description(d.clone()))
                .collect();
            sc::SessionModeState::new(sc::SessionModeId::new(current.clone()), available)
        });
        let resp = sc::NewSessionResponse::new(sc::SessionId::new(session.clone())).modes(state);
        let raw = response(&id, &resp);
        envelope_reads(&raw, Some(&id), None, FrameKind::Response, Some(&session))?;
        let held = AnswerSeen {
            session_id: Some(session.clone()),
            current_mode_id: modes.map(|(current, _)| Some(current)),
            ..Default::default()
        };
        prop_assert_eq!(read_answer(&raw), held);

        let method = sc::AGENT_METHOD_NAMES.session_set_mode;
        let req = sc::SetSessionModeRequest::new(sc::SessionId::new(session.clone()), sc::SessionModeId::new(mode.clone()));
        let raw = request(&id, method, &req);
        envelope_reads(&raw, Some(&id), Some(method), FrameKind::Request, Some(&session))?;
        let held = ParamsSeen { session_id: Some(session), mode_id: Some(mode), ..Default::default() };
        prop_assert_eq!(read_params(&raw), held);
    }

    /// An error response: code and message, whatever the data.
    #[test]
    fn errors_read_as_the_schema_holds_them(id in request_id(), code in any::<i32>(), message in text(), data in maybe(any_json())) {
        let error = sc::Error::new(code, message.clone()).data(data);
        let raw = error_response(&id, &error);
        envelope_reads(&raw, Some(&id), None, FrameKind::Error, None)?;
        let mut keep = None;
        let (answer, read) = reply(&raw, &mut keep);
        prop_assert_eq!(answer_seen(&answer), AnswerSeen::default());
        let read = read.expect("an error reads");
        prop_assert_eq!(read.code, Some(i64::from(code)));
        prop_assert_eq!(read.message.as_deref(), Some(message.as_str()));
    }

    /// The client's methods acp reads members of (fs, terminal), the
    /// config option, `$/cancel_request` and MCP-over-ACP's `mcp/message`.
    #[test]
    fn files_terminals_options_cancels_and_mcp_read_as_the_schema_holds_them(
        id in request_id(),
        session in text(),
        (file, content) in (text(), text()),
        (command, args, cwd) in (text(), vec(text(), 0..4), maybe(text())),
        (terminal, exit_code, signal) in (text(), maybe(any::<u32>()), maybe(text())),
        (config, value) in (text(), prop_oneof![any::<bool>().prop_map(sc::SessionConfigOptionValue::boolean), text().prop_map(sc::SessionConfigOptionValue::value_id)]),
        cancelled in request_id(),
        (server, mcp_id, mcp_method, mcp_params) in (text(), text(), text(), maybe((maybe(text()), maybe(text()), maybe(text())))),
    ) {
        let sid = || sc::SessionId::new(session.clone());
        let names = sc::CLIENT_METHOD_NAMES;

        let raw = request(&id, names.fs_read_text_file, &sc::ReadTextFileRequest::new(sid(), file.clone()).line(3).limit(4));
        envelope_reads(&raw, Some(&id), Some(names.fs_read_text_file), FrameKind::Request, Some(&session))?;
        let held = ParamsSeen { session_id: Some(session.clone()), path: Some(file.clone()), ..Default::default() };
        prop_assert_eq!(read_params(&raw), held);

        let raw = request(&id, names.fs_write_text_file, &sc::WriteTextFileRequest::new(sid(), file.clone(), content));
        let held = ParamsSeen { session_id: Some(session.clone()), path: Some(file), ..Default::default() };
        prop_assert_eq!(read_params(&raw), held);

        // The schema leaves out an empty `args`.
        let req = sc::CreateTerminalRequest::new(sid(), command.clone()).args(args.clone()).cwd(cwd.clone().map(std::path::PathBuf::from));
        let raw = request(&id, names.terminal_create, &req);
        let held = ParamsSeen {
            session_id: Some(session.clone()),
            command: Some(command),
            args: (!args.is_empty()).then_some(args),
            cwd,
            ..Default::default()
        };
        prop_assert_eq!(read_params(&raw), held);

        let raw = response(&id, &sc::CreateTerminalResponse::new(sc::TerminalId::new(terminal.clone())));
        prop_assert_eq!(read_answer(&raw), AnswerSeen { terminal_id: Some(terminal), ..Default::default() });

        let status = sc::TerminalExitStatus::new().exit_code(exit_code).signal(signal.clone());
        let raw = response(&id, &sc::WaitForTerminalExitResponse::new(status));
        let held = AnswerSeen { exit_code: exit_code.map(i64::from), signal, ..Default::default() };
        prop_assert_eq!(read_answer(&raw), held);

        let method = sc::AGENT_METHOD_NAMES.session_set_config_option;
        let req = sc::SetSessionConfigOptionRequest::new(sid(), sc::SessionConfigId::new(config.clone()), value.clone());
        let raw = request(&id, method, &req);
        let held = ParamsSeen {
            session_id: Some(session.clone()),
            config_id: Some(config),
            value: Some(json(&value)["value"].clone()),
            ..Default::default()
        };
        prop_assert_eq!(read_params(&raw), held);

        let method = sc::PROTOCOL_LEVEL_METHOD_NAMES.cancel_request;
        let raw = notification(method, &sc::CancelRequestNotification::new(cancelled.clone()));
        envelope_reads(&raw, None, Some(method), FrameKind::Notification, None)?;
        prop_assert_eq!(read_params(&raw), ParamsSeen { request_id: Some(id_held(&cancelled)), ..Default::default() });

        // The schema's `mcp/message` names its connection `serverId`; acp
        // reads the conductor's `connectionId` (mcp/connect), which the
        // schema does not have, so that reads as absent here.
        let inner = mcp_params.as_ref().map(|(n, u, v)| {
            let mut m = serde_json::Map::new();
            for (k, x) in [("name", n), ("uri", u), ("protocolVersion", v)] {
                if let Some(x) = x {
                    m.insert(k.into(), x.clone().into());
                }
            }
            m
        });
        let req = sc::MessageMcpRequest::new(sc::McpServerAcpId::new(server), sc::McpRequestId::new(mcp_id.clone()), mcp_method.clone())
            .params(inner);
        let raw = request(&id, "mcp/message", &req);
        let held = ParamsSeen {
            method: Some(mcp_method),
            request_id: Some(Value::from(mcp_id)),
            params: mcp_params,
            ..Default::default()
        };
        prop_assert_eq!(read_params(&raw), held);
    }
}

/// The `type` the schema writes for a content block.
fn name_of_block(b: &sc::ContentBlock) -> String {
    json(b)["type"].as_str().expect("a block names its type").to_owned()
}

// ---------------------------------------------------------------------------
// The two rules.
// ---------------------------------------------------------------------------

fn update_of(raw: &str) -> UpdateSeen {
    let mut keep = None;
    let p = params(raw.as_bytes(), &mut keep).expect("params read");
    update_seen(p.update.as_ref().expect("the update reads"))
}

#[test]
fn a_member_of_the_wrong_type_reads_as_absent_and_the_rest_still_reads() {
    // A tool call's title that is a number.
    let u = update_of(
        r#"{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":
            {"sessionUpdate":"tool_call","toolCallId":"t1","title":7,"status":"pending","locations":"x"}}}"#,
    );
    assert_eq!(u.title, None);
    assert_eq!(u.locations, None);
    assert_eq!(u.tool_call_id.as_deref(), Some("t1"));
    assert_eq!(u.status.as_deref(), Some("pending"));
    assert_eq!(u.session_update.as_deref(), Some("tool_call"));

    // A prompt element that is a number keeps its place, empty.
    let raw = br#"{"jsonrpc":"2.0","id":1,"method":"session/prompt","params":{"sessionId":"s",
        "prompt":[{"type":"text","text":"a"},7,{"type":"text","text":["b"]},{"type":"text","text":"c"}]}}"#;
    let seen = read_params(raw);
    assert_eq!(seen.session_id.as_deref(), Some("s"));
    let blocks = seen.prompt.expect("the prompt reads");
    let text = |t: &str| (Some("text".to_owned()), Some(t.to_owned()));
    assert_eq!(blocks, vec![text("a"), (None, None), (Some("text".to_owned()), None), text("c")]);

    // usage.inputTokens that is a string; a stop reason that is an object.
    let raw = br#"{"jsonrpc":"2.0","id":1,"result":{"stopReason":{"x":1},
        "usage":{"totalTokens":9,"inputTokens":"x","outputTokens":5}}}"#;
    let a = read_answer(raw);
    assert_eq!(a.stop_reason, None);
    let usage = a.usage.expect("usage reads");
    assert_eq!((usage.total_tokens, usage.input_tokens, usage.output_tokens), (Some(9), None, Some(5)));

    // A negative count is no count; a string id of a number is no string.
    let raw = br#"{"jsonrpc":"2.0","id":1,"result":{"usage":{"totalTokens":-1,"outputTokens":5}}}"#;
    let usage = read_answer(raw).usage.expect("usage reads");
    assert_eq!((usage.total_tokens, usage.output_tokens), (None, Some(5)));

    // params that are no object give none; the envelope still reads.
    for p in ["[1,2]", "\"x\"", "7", "null", "true"] {
        let raw = format!(r#"{{"jsonrpc":"2.0","id":1,"method":"session/prompt","params":{p}}}"#);
        let mut keep = None;
        assert!(params(raw.as_bytes(), &mut keep).is_none(), "{p}");
        let e: Envelope<Routing> = serde_json::from_str(&raw).expect("the envelope reads");
        assert_eq!(e.kind(), Some((FrameKind::Request, Some("session/prompt".to_owned()))), "{p}");
        assert!(e.params.expect("params are there").session_id.is_none(), "{p}");
    }

    // An error that is no object reads as no error; its code as a string
    // loses the code only.
    let mut keep = None;
    let (_, e) = reply(br#"{"jsonrpc":"2.0","id":1,"error":"boom"}"#, &mut keep);
    assert!(e.is_none());
    let mut keep = None;
    let (_, e) = reply(br#"{"jsonrpc":"2.0","id":1,"error":{"code":"1","message":"no"}}"#, &mut keep);
    let e = e.expect("the error reads");
    assert_eq!((e.code, e.message.as_deref()), (None, Some("no")));

    // A message that is no object reads as all absent.
    let mut keep = None;
    let m = message(br#"[{"params":{"sessionId":"s"}}]"#, &mut keep);
    assert!(m.params.is_none() && m.result.is_none() && m.error.is_none());
}

#[test]
fn a_member_written_twice_counts_as_its_last_at_the_top_and_nested() {
    // Top level: the envelope keeps the last and says so.
    let raw = br#"{"jsonrpc":"2.0","id":1,"id":2,"method":"session/cancel","method":"session/prompt",
        "params":{"sessionId":"a"},"params":{"sessionId":"b","prompt":[]}}"#;
    let e: Envelope = serde_json::from_slice(raw).expect("the envelope reads");
    assert!(e.duplicate);
    assert_eq!(e.id.map(RawValue::get), Some("2"));
    assert_eq!(e.kind(), Some((FrameKind::Request, Some("session/prompt".to_owned()))));
    let r: Envelope<Routing> = serde_json::from_slice(raw).expect("the envelope reads");
    assert!(r.duplicate);
    let routing = r.params.expect("params read");
    assert_eq!(routing.session_id.as_deref(), Some("b"));
    assert_eq!(routing.prompt.map(|p| p.len()), Some(0));
    let seen = read_params(raw);
    assert_eq!((seen.session_id.as_deref(), seen.prompt), (Some("b"), Some(vec![])));

    // Once each: no duplicate.
    let e: Envelope = serde_json::from_slice(br#"{"jsonrpc":"2.0","id":1,"method":"m","params":{}}"#).unwrap();
    assert!(!e.duplicate);

    // Nested, at every depth: read through read_last.
    let u = update_of(
        r#"{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"a","sessionId":"b","update":
            {"sessionUpdate":"tool_call","toolCallId":"t","status":"pending","status":"completed",
             "locations":[{"path":"/x","path":"/y"}]}}}"#,
    );
    assert_eq!(u.status.as_deref(), Some("completed"));
    assert_eq!(u.locations, Some(vec![Some("/y".to_owned())]));
    let mut keep = None;
    let p = params(br#"{"params":{"sessionId":"a","sessionId":"b"}}"#, &mut keep).expect("params read");
    assert_eq!(p.session_id.as_deref(), Some("b"));
    assert!(keep.is_some(), "the repeat was rebuilt");

    // In a result, and a repeat that changes the type: the last wins, even
    // when it is the wrong type.
    let a = read_answer(
        br#"{"id":1,"result":{"usage":{"inputTokens":1,"inputTokens":2},"stopReason":"end_turn","stopReason":3}}"#,
    );
    assert_eq!(a.usage.and_then(|u| u.input_tokens), Some(2));
    assert_eq!(a.stop_reason, None);

    // A member read from an envelope's text, and a shape read directly.
    let e: Envelope =
        serde_json::from_slice(br#"{"params":{"update":{"content":{"type":"text","text":"a","text":"b"}}}}"#).unwrap();
    let mut keep = None;
    let p: Params = member(e.params, &mut keep).expect("params read");
    let mut keep = None;
    let block: ContentBlock = member(p.update.and_then(|u| u.content), &mut keep).expect("the block reads");
    assert_eq!(block.text.as_deref(), Some("b"));
    let mut keep = None;
    let entry: PlanEntry = read_last(br#"{"content":"a","priority":"low","content":"b"}"#, &mut keep).unwrap();
    assert_eq!((entry.content.as_deref(), entry.priority.as_deref()), (Some("b"), Some("low")));
}
