//! Strategies for the variable parts.

use super::*;

/// Texts that test escaping: quotes, backslashes, control characters,
/// non-ASCII and astral characters, and any string at all.
pub(super) fn text() -> impl Strategy<Value = String> {
    prop_oneof![
        "[a-z0-9_/-]{0,10}",
        "[a-z \"\\\\/\n\t\r\u{1}\u{1f}\u{7f}\u{e9}\u{2028}\u{4e2d}\u{1f600}]{0,12}",
        any::<String>(),
    ]
}

pub(super) fn request_id() -> impl Strategy<Value = sc::RequestId> {
    prop_oneof![
        1 => Just(sc::RequestId::Null),
        4 => any::<i64>().prop_map(sc::RequestId::Number),
        4 => text().prop_map(sc::RequestId::Str),
    ]
}

/// A number serde_json writes and reads back exactly.
pub(super) fn decimal() -> impl Strategy<Value = f64> {
    (-10_000_000i64..10_000_000).prop_map(|c| c as f64 / 100.0)
}

/// Any JSON value but `null` (the schema's `Option<Value>` reads a `null`
/// as no value, and so does acp).
pub(super) fn any_json() -> impl Strategy<Value = Value> {
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
pub(super) fn meta() -> impl Strategy<Value = Option<sc::Meta>> {
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

pub(super) fn content_block() -> impl Strategy<Value = sc::ContentBlock> {
    prop_oneof![
        3 => text().prop_map(sc::ContentBlock::from),
        1 => (text(), text()).prop_map(|(n, u)| sc::ContentBlock::ResourceLink(sc::ResourceLink::new(n, u))),
    ]
}

pub(super) fn tool_kind() -> impl Strategy<Value = sc::ToolKind> {
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

pub(super) fn tool_status() -> impl Strategy<Value = sc::ToolCallStatus> {
    use sc::ToolCallStatus as S;
    select(vec![S::Pending, S::InProgress, S::Completed, S::Failed])
}

pub(super) fn tool_content() -> impl Strategy<Value = Vec<sc::ToolCallContent>> {
    vec(content_block().prop_map(sc::ToolCallContent::from), 0..3)
}

pub(super) fn locations() -> impl Strategy<Value = Vec<sc::ToolCallLocation>> {
    vec((text(), maybe(any::<u32>())).prop_map(|(p, line)| sc::ToolCallLocation::new(p).line(line)), 0..3)
}

pub(super) fn tool_call_update() -> impl Strategy<Value = sc::ToolCallUpdate> {
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
pub(super) fn session_update() -> impl Strategy<Value = sc::SessionUpdate> {
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

pub(super) fn stop_reason() -> impl Strategy<Value = sc::StopReason> {
    use sc::StopReason as S;
    select(vec![S::EndTurn, S::MaxTokens, S::MaxTurnRequests, S::Refusal, S::Cancelled])
}

pub(super) fn usage() -> impl Strategy<Value = sc::Usage> {
    (any::<u64>(), any::<u64>(), any::<u64>(), maybe(any::<u64>()), maybe(any::<u64>()), maybe(any::<u64>())).prop_map(
        |(t, i, o, th, cr, cw)| {
            sc::Usage::new(t, i, o).thought_tokens(th).cached_read_tokens(cr).cached_write_tokens(cw)
        },
    )
}

pub(super) fn permission_option() -> impl Strategy<Value = sc::PermissionOption> {
    use sc::PermissionOptionKind as K;
    let kind = select(vec![K::AllowOnce, K::AllowAlways, K::RejectOnce, K::RejectAlways]);
    (text(), text(), kind).prop_map(|(id, n, k)| sc::PermissionOption::new(sc::PermissionOptionId::new(id), n, k))
}

pub(super) fn implementation() -> impl Strategy<Value = sc::Implementation> {
    (text(), maybe(text()), text()).prop_map(|(n, t, v)| sc::Implementation::new(n, v).title(t))
}

pub(super) fn cases() -> ProptestConfig {
    // A tenth of the workspace's count: each case builds, writes and reads
    // several messages.
    ProptestConfig::with_cases((crate::fuzz_cases() / 10).max(32))
}
