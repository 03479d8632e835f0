//! Tests of the OTLP mapping through `export --format otlp`: the spans,
//! the endpoint settings and the OTLP/JSON form.

use crate::export::{export, ExportFormat, ExportOptions, TraceSelection};
use crate::otlp::*;
use crate::otlp::{live, mapping};
use crate::store::testing::store_from;
use acp_tee_shared::Direction::{AgentStderr as E, AgentToClient as A, ClientToAgent as C};
use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use opentelemetry_proto::tonic::common::v1::any_value::Value;
use opentelemetry_proto::tonic::trace::v1::{span, status, Span};
use prost::Message as _;

/// A conversation with one session and one turn: a tool call that waits
/// for permission, a streamed answer, usage, an error and a stderr line.
const TURN: &[(acp_tee_shared::Direction, u64, &[u8])] = &[
    (C, 1_000, br#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":1}}
"#),
    (A, 2_000, br#"{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":1,"agentInfo":{"name":"py-agent","version":"1.2"}}}
"#),
    (C, 3_000, br#"{"jsonrpc":"2.0","id":1,"method":"session/new","params":{"cwd":"/w","mcpServers":[]}}
"#),
    (A, 4_000, br#"{"jsonrpc":"2.0","id":1,"result":{"sessionId":"s1"}}
"#),
    (E, 4_500, b"agent: starting\n"),
    (C, 5_000, br#"{"jsonrpc":"2.0","id":2,"method":"session/prompt","params":{"sessionId":"s1","prompt":[{"type":"text","text":"list files"}]}}
"#),
    (A, 6_000, br#"{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s1","update":{"sessionUpdate":"tool_call","toolCallId":"t1","title":"ls","kind":"read","status":"pending","rawInput":{"path":"/w","token":"hunter2"}}}}
"#),
    (A, 7_000, br#"{"jsonrpc":"2.0","id":9,"method":"session/request_permission","params":{"sessionId":"s1","toolCall":{"toolCallId":"t1"},"options":[{"optionId":"yes","kind":"allow_once"}]}}
"#),
    (C, 9_000, br#"{"jsonrpc":"2.0","id":9,"result":{"outcome":{"outcome":"selected","optionId":"yes"}}}
"#),
    (A, 10_000, br#"{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s1","update":{"sessionUpdate":"tool_call_update","toolCallId":"t1","status":"completed","rawOutput":{"files":["a"]}}}}
"#),
    (A, 11_000, br#"{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s1","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"one file"}}}}
"#),
    (A, 12_000, br#"{"jsonrpc":"2.0","id":10,"method":"fs/read_text_file","params":{"sessionId":"s1","path":"/w/a"}}
"#),
    (C, 13_000, br#"{"jsonrpc":"2.0","id":10,"error":{"code":-32002,"message":"not found"}}
"#),
    (A, 14_000, br#"{"jsonrpc":"2.0","id":2,"result":{"stopReason":"end_turn","usage":{"inputTokens":11,"outputTokens":7,"totalTokens":18}}}
"#),
];

fn spans_of(chunks: &[(acp_tee_shared::Direction, u64, &[u8])], opts: MapOptions) -> Vec<Span> {
    let store = store_from(chunks);
    let mut out = Vec::new();
    let export_opts = ExportOptions { otlp: opts, ..ExportOptions::new(ExportFormat::Otlp) };
    export(&store, TraceSelection::Latest, &export_opts, &mut out).unwrap();
    let mut spans = Vec::new();
    for line in String::from_utf8(out).unwrap().lines() {
        let req: ExportTraceServiceRequest = serde_json::from_str(line).unwrap();
        for rs in req.resource_spans {
            for ss in rs.scope_spans {
                spans.extend(ss.spans);
            }
        }
    }
    spans
}

fn named<'a>(spans: &'a [Span], name: &str) -> &'a Span {
    spans.iter().find(|s| s.name == name).unwrap_or_else(|| panic!("no span {name}: {:?}", names(spans)))
}

fn names(spans: &[Span]) -> Vec<&str> {
    spans.iter().map(|s| s.name.as_str()).collect()
}

fn attr<'a>(span: &'a Span, key: &str) -> Option<&'a Value> {
    span.attributes.iter().find(|a| a.key == key).and_then(|a| a.value.as_ref()?.value.as_ref())
}

fn text<'a>(span: &'a Span, key: &str) -> &'a str {
    match attr(span, key) {
        Some(Value::StringValue(s)) => s,
        other => panic!("{key} of {} is {other:?}", span.name),
    }
}

#[test]
fn a_turn_maps_to_invoke_agent_with_tool_and_permission_children() {
    let spans = spans_of(TURN, MapOptions::default());
    let turn = named(&spans, "invoke_agent py-agent");
    assert_eq!(turn.kind, span::SpanKind::Client as i32);
    assert_eq!(text(turn, "gen_ai.operation.name"), "invoke_agent");
    assert_eq!(text(turn, "gen_ai.agent.name"), "py-agent");
    assert_eq!(text(turn, "gen_ai.agent.version"), "1.2");
    assert_eq!(text(turn, "gen_ai.conversation.id"), "s1");
    assert_eq!(text(turn, "rpc.method"), "session/prompt");
    assert_eq!(attr(turn, "gen_ai.usage.input_tokens"), Some(&Value::IntValue(11)));
    assert_eq!(attr(turn, "gen_ai.usage.output_tokens"), Some(&Value::IntValue(7)));
    match attr(turn, "gen_ai.response.finish_reasons") {
        Some(Value::ArrayValue(a)) => assert_eq!(a.values[0].value, Some(Value::StringValue("end_turn".into()))),
        other => panic!("finish reasons {other:?}"),
    }
    assert_eq!(attr(turn, "gen_ai.response.time_to_first_chunk"), Some(&Value::DoubleValue(6e-6)));
    let session = named(&spans, "acp.session");
    assert_eq!(turn.parent_span_id, session.span_id);
    assert_eq!(turn.trace_id, session.trace_id);

    let tool = named(&spans, "execute_tool ls");
    assert_eq!(tool.parent_span_id, turn.span_id);
    assert_eq!(text(tool, "gen_ai.tool.call.id"), "t1");
    assert_eq!(text(tool, "acp.tool.kind"), "read");
    assert_eq!(text(tool, "acp.tool.status"), "completed");
    assert_eq!(tool.end_time_unix_nano - tool.start_time_unix_nano, 4_000);
    assert_eq!(attr(tool, "acp.permission.wait_ns"), Some(&Value::IntValue(2_000)));

    let permission = named(&spans, "session/request_permission");
    assert_eq!(permission.parent_span_id, tool.span_id);
    assert_eq!(text(permission, "acp.permission.outcome"), "selected");
    assert_eq!(permission.end_time_unix_nano - permission.start_time_unix_nano, 2_000);

    let read = named(&spans, "fs/read_text_file");
    assert_eq!(read.parent_span_id, turn.span_id);
    assert_eq!(text(read, "error.type"), "-32002");
    assert_eq!(read.status.as_ref().unwrap().code, status::StatusCode::Error as i32);

    // The recording's own requests are in the recording's trace, which the
    // session links to.
    let recording = named(&spans, "acp.recording");
    let init = named(&spans, "initialize");
    assert_eq!(init.trace_id, recording.trace_id);
    assert_ne!(session.trace_id, recording.trace_id);
    assert_eq!(session.links[0].span_id, recording.span_id);
    // Without --otlp-content no content, and stderr only by its size.
    assert!(attr(turn, "gen_ai.input.messages").is_none());
    assert!(attr(tool, "gen_ai.tool.call.arguments").is_none());
    let stderr = recording.events.iter().find(|e| e.name == "acp.stderr").unwrap();
    assert_eq!(stderr.attributes[0].key, "acp.stderr.bytes");
}

#[test]
fn content_is_opt_in_and_masked() {
    let spans = spans_of(TURN, MapOptions { content: true, ..MapOptions::default() });
    let turn = named(&spans, "invoke_agent py-agent");
    assert!(text(turn, "gen_ai.input.messages").contains("list files"));
    assert!(text(turn, "gen_ai.output.messages").contains("one file"));
    let tool = named(&spans, "execute_tool ls");
    let arguments = text(tool, "gen_ai.tool.call.arguments");
    assert!(arguments.starts_with(r#"{"path":"/w","token":"#), "{arguments}");
    assert!(!arguments.contains("hunter2"), "the export's redaction masks content: {arguments}");
    assert_eq!(text(tool, "gen_ai.tool.call.result"), r#"{"files":["a"]}"#);
    let recording = named(&spans, "acp.recording");
    let stderr = recording.events.iter().find(|e| e.name == "acp.stderr").unwrap();
    let line = match stderr.attributes[0].value.as_ref().and_then(|v| v.value.as_ref()) {
        Some(Value::StringValue(s)) => s.clone(),
        other => panic!("{other:?}"),
    };
    assert_eq!(line, "agent: starting");
}

#[test]
fn ids_are_the_same_on_a_second_export_and_one_trace_per_recording_when_asked() {
    let a = spans_of(TURN, MapOptions::default());
    let b = spans_of(TURN, MapOptions::default());
    let ids = |s: &[Span]| s.iter().map(|s| (s.trace_id.clone(), s.span_id.clone())).collect::<Vec<_>>();
    assert_eq!(ids(&a), ids(&b));
    let mut distinct = ids(&a).into_iter().map(|(_, s)| s).collect::<Vec<_>>();
    distinct.sort();
    distinct.dedup();
    assert_eq!(distinct.len(), a.len(), "span ids are unique");
    let one = spans_of(TURN, MapOptions { scope: TraceScope::Recording, ..MapOptions::default() });
    assert!(one.iter().all(|s| s.trace_id == one[0].trace_id));
    assert_eq!(named(&one, "acp.session").parent_span_id, named(&one, "acp.recording").span_id);
}

#[test]
fn a_traceparent_in_meta_joins_the_callers_trace() {
    let mut chunks = TURN.to_vec();
    chunks[5] = (
        C,
        5_000,
        br#"{"jsonrpc":"2.0","id":2,"method":"session/prompt","params":{"sessionId":"s1","prompt":[],"_meta":{"traceparent":"00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"}}}
"#,
    );
    let spans = spans_of(&chunks, MapOptions::default());
    let turn = named(&spans, "invoke_agent py-agent");
    assert_eq!(hex(&turn.trace_id), "0af7651916cd43dd8448eb211c80319c");
    assert_eq!(hex(&turn.parent_span_id), "b7ad6b7169203331");
    assert_eq!(named(&spans, "execute_tool ls").trace_id, turn.trace_id);

    // On session/new: the session's root joins the caller's trace.
    chunks[2] = (
        C,
        3_000,
        br#"{"jsonrpc":"2.0","id":1,"method":"session/new","params":{"cwd":"/w","_meta":{"traceparent":"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"}}}
"#,
    );
    let spans = spans_of(&chunks, MapOptions::default());
    let session = named(&spans, "acp.session");
    assert_eq!(hex(&session.trace_id), "4bf92f3577b34da6a3ce929d0e0e4736");
    assert_eq!(hex(&session.parent_span_id), "00f067aa0ba902b7");
    // A malformed one is ignored: the session is a trace of its own.
    chunks[2] = (
        C,
        3_000,
        br#"{"jsonrpc":"2.0","id":1,"method":"session/new","params":{"_meta":{"traceparent":"00-zz-00f067aa0ba902b7-01"}}}
"#,
    );
    let spans = spans_of(&chunks, MapOptions::default());
    assert!(named(&spans, "acp.session").parent_span_id.is_empty());
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|b| format!("{b:02x}")).collect()
}

#[test]
fn unanswered_requests_and_turns_end_with_the_trace() {
    let spans = spans_of(&TURN[..8], MapOptions::default());
    let turn = named(&spans, "invoke_agent py-agent");
    assert_eq!(attr(turn, "acp.turn.unfinished"), Some(&Value::BoolValue(true)));
    let permission = named(&spans, "session/request_permission");
    assert_eq!(attr(permission, "acp.unanswered"), Some(&Value::BoolValue(true)));
    assert!(spans.iter().all(|s| s.end_time_unix_nano >= s.start_time_unix_nano));
    for s in &spans {
        assert_eq!((s.trace_id.len(), s.span_id.len()), (16, 8), "a span without ids: {s:?}");
    }
}

#[test]
fn mcp_over_acp_follows_the_mcp_conventions() {
    let chunks: &[(acp_tee_shared::Direction, u64, &[u8])] = &[
        (A, 1_000, br#"{"jsonrpc":"2.0","id":4,"method":"mcp/message","params":{"connectionId":"c1","method":"tools/call","params":{"name":"grep"}}}
"#),
        (C, 2_000, br#"{"jsonrpc":"2.0","id":4,"result":{"content":[]}}
"#),
    ];
    let spans = spans_of(chunks, MapOptions::default());
    let call = named(&spans, "tools/call grep");
    assert_eq!(text(call, "mcp.method.name"), "tools/call");
    assert_eq!(text(call, "mcp.session.id"), "c1");
    assert_eq!(text(call, "gen_ai.tool.name"), "grep");
    assert_eq!(text(call, "jsonrpc.request.id"), "4");
}

/// The OTLP/JSON lines read back as the official protobuf types, and
/// those types give the same JSON and survive a protobuf round trip.
#[test]
fn otlp_json_round_trips_through_the_official_types() {
    let store = store_from(TURN);
    let mut out = Vec::new();
    let opts = ExportOptions {
        otlp: MapOptions { content: true, ..Default::default() },
        ..ExportOptions::new(ExportFormat::Otlp)
    };
    export(&store, TraceSelection::Latest, &opts, &mut out).unwrap();
    let text = String::from_utf8(out).unwrap();
    assert!(!text.is_empty());
    for line in text.lines() {
        let req: ExportTraceServiceRequest = serde_json::from_str(line).unwrap();
        let again = serde_json::to_string(&req).unwrap();
        assert_eq!(
            serde_json::from_str::<serde_json::Value>(&again).unwrap(),
            serde_json::from_str::<serde_json::Value>(line).unwrap()
        );
        let decoded = ExportTraceServiceRequest::decode(req.encode_to_vec().as_slice()).unwrap();
        assert_eq!(decoded, req);
        // The protobuf JSON mapping: hex ids, times as decimal strings.
        let v: serde_json::Value = serde_json::from_str(line).unwrap();
        let span = &v["resourceSpans"][0]["scopeSpans"][0]["spans"][0];
        assert_eq!(span["traceId"].as_str().unwrap().len(), 32);
        assert!(span["startTimeUnixNano"].is_string(), "{span}");
        assert_eq!(v["resourceSpans"][0]["resource"]["attributes"][0]["key"], "service.name");
    }
}

#[test]
fn endpoints_follow_the_otel_environment() {
    let env = |vars: &'static [(&'static str, &'static str)]| {
        move |k: &str| vars.iter().find(|(n, _)| *n == k).map(|(_, v)| (*v).to_owned())
    };
    let e = Endpoint::resolve("http://h:4318", env(&[])).unwrap();
    assert_eq!(e.url, "http://h:4318/v1/traces");
    assert_eq!(e.service, "acp-tee");
    let e = Endpoint::resolve("http://h:4318/v1/traces", env(&[])).unwrap();
    assert_eq!(e.url, "http://h:4318/v1/traces");
    let e = Endpoint::resolve(
        "",
        env(&[
            ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://c:4318/"),
            ("OTEL_EXPORTER_OTLP_HEADERS", "api-key=a%20b, x=1"),
            ("OTEL_SERVICE_NAME", "evals"),
        ]),
    )
    .unwrap();
    assert_eq!(e.url, "http://c:4318/v1/traces");
    assert_eq!(e.headers, vec![("api-key".into(), "a b".into()), ("x".into(), "1".into())]);
    assert_eq!(e.service, "evals");
    let e = Endpoint::resolve("", env(&[("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "http://t:1/custom")])).unwrap();
    assert_eq!(e.url, "http://t:1/custom");
    assert!(matches!(Endpoint::resolve("", env(&[])), Err(OtlpError::NoEndpoint)));
    assert!(matches!(Endpoint::resolve("https://x", env(&[])), Err(OtlpError::BadEndpoint(_))));
    let bad = Endpoint::resolve("http://x", env(&[("OTEL_EXPORTER_OTLP_HEADERS", "novalue")]));
    assert!(matches!(bad, Err(OtlpError::BadHeader(_))));
}

#[test]
fn hostile_frames_stay_within_the_bounds() {
    // A turn with more tool calls than a turn holds spans for, and a span
    // with more events than it carries.
    let mut lines = vec![
        br#"{"id":1,"method":"session/new","params":{}}"#.to_vec(),
        br#"{"id":1,"result":{"sessionId":"s"}}"#.to_vec(),
        br#"{"id":2,"method":"session/prompt","params":{"sessionId":"s","prompt":[]}}"#.to_vec(),
    ];
    for i in 0..(mapping::TOOLS_PER_TURN_MAX + 10) {
        lines.push(format!(r#"{{"method":"session/update","params":{{"sessionId":"s","update":{{"sessionUpdate":"tool_call","toolCallId":"t{i}"}}}}}}"#).into_bytes());
    }
    for _ in 0..(mapping::EVENTS_MAX + 10) {
        lines.push(
            br#"{"method":"session/update","params":{"sessionId":"s","update":{"sessionUpdate":"plan"}}}"#.to_vec(),
        );
    }
    let chunks: Vec<(acp_tee_shared::Direction, u64, Vec<u8>)> = lines
        .into_iter()
        .enumerate()
        .map(|(i, mut l)| {
            l.push(b'\n');
            (
                if i == 1 {
                    A
                } else if i < 3 {
                    C
                } else {
                    A
                },
                i as u64 * 10,
                l,
            )
        })
        .collect();
    let borrowed: Vec<(acp_tee_shared::Direction, u64, &[u8])> =
        chunks.iter().map(|(d, t, l)| (*d, *t, l.as_slice())).collect();
    let spans = spans_of(&borrowed, MapOptions::default());
    let tools = spans.iter().filter(|s| s.name.starts_with("execute_tool")).count();
    assert_eq!(tools, mapping::TOOLS_PER_TURN_MAX);
    let turn = spans.iter().find(|s| s.name.starts_with("invoke_agent")).unwrap();
    assert_eq!(turn.events.len(), mapping::EVENTS_MAX);
    assert_eq!(turn.dropped_events_count, 10);
    assert_eq!(attr(named(&spans, "acp.recording"), "acp.left_out"), Some(&Value::IntValue(10)));
}

#[test]
fn a_batch_is_full_at_its_span_count_or_its_bytes() {
    let mut batch = Batch::default();
    let big = Span { name: "x".repeat(300 * 1024), ..Default::default() };
    let mut n = 0;
    while !batch.push(big.clone()) {
        n += 1;
    }
    assert_eq!(n + 1, live::BATCH_BYTES.div_ceil(big.encoded_len()), "full once it holds BATCH_BYTES");
    assert_eq!(batch.take().len(), n + 1);
    assert!(batch.is_empty());
    let mut count = 0;
    while !batch.push(Span::default()) {
        count += 1;
    }
    assert_eq!(count + 1, live::BATCH_SPANS);
}

/// A permission nobody answers, in a turn the client cancels: its span
/// ends with its tool call's, which ends with the turn's; nothing outlives
/// its parent, though the trace goes on after.
#[test]
fn an_unanswered_permission_ends_within_its_tool_call_and_turn() {
    let chunks: &[(acp_tee_shared::Direction, u64, &[u8])] = &[
        TURN[0],
        TURN[1],
        TURN[2],
        TURN[3],
        TURN[5],
        TURN[6],
        TURN[7],
        (
            C,
            20_000,
            br#"{"jsonrpc":"2.0","method":"session/cancel","params":{"sessionId":"s1"}}
"#,
        ),
        (
            A,
            21_000,
            br#"{"jsonrpc":"2.0","id":2,"result":{"stopReason":"cancelled"}}
"#,
        ),
        (
            C,
            90_000,
            br#"{"jsonrpc":"2.0","id":3,"method":"_x/ping"}
"#,
        ),
    ];
    let spans = spans_of(chunks, MapOptions::default());
    let turn = named(&spans, "invoke_agent py-agent");
    let tool = named(&spans, "execute_tool ls");
    let asked = named(&spans, "session/request_permission");
    assert_eq!(asked.parent_span_id, tool.span_id);
    assert!(asked.end_time_unix_nano <= tool.end_time_unix_nano, "the permission outlives its tool call");
    assert!(tool.end_time_unix_nano <= turn.end_time_unix_nano, "the tool call outlives its turn");
    assert_eq!(asked.end_time_unix_nano, turn.end_time_unix_nano);
    assert!(matches!(attr(asked, "acp.open_at_parent_end"), Some(Value::BoolValue(true))));
    // The ping, never answered, ends with the trace.
    assert!(named(&spans, "_x/ping").end_time_unix_nano > turn.end_time_unix_nano);
}
