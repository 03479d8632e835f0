//! The imports of other tools' formats, each from a file written to the
//! shape its tool documents or writes.

use super::tests::{frames, import_text, opts, rows};
use super::*;
use crate::store::StoredFrame;
use acp_tee_shared::{Direction, FrameKind};
use serde_json::json;

fn m(s: &str) -> Option<String> {
    Some(s.to_owned())
}

fn raw(f: &StoredFrame) -> &str {
    std::str::from_utf8(&f.raw).unwrap()
}

/// A Zed "Copy All Messages" copy, made as Zed makes it: `json!` entries
/// written by `serde_json::to_string_pretty` (members sorted by name here;
/// the reader keeps whatever order the file has).
fn zed_copy() -> String {
    let entries = json!([
        {"_direction": "outgoing", "_type": "request", "id": 0, "method": "initialize",
         "params": {"protocolVersion": 1, "clientCapabilities": {"fs": {"readTextFile": true}}}},
        {"_direction": "stderr", "_type": "stderr", "id": null, "method": "stderr",
         "params": "agent: starting up, \"quoted\""},
        {"_direction": "incoming", "_type": "response", "id": 0, "method": "initialize",
         "params": {"protocolVersion": 1, "agentCapabilities": {}}},
        {"_direction": "outgoing", "_type": "request", "id": 1, "method": "session/prompt",
         "params": {"sessionId": "s 1", "prompt": [{"type": "text", "text": "a  b\n c"}]}},
        {"_direction": "incoming", "_type": "notification", "id": null, "method": "session/update",
         "params": {"sessionId": "s 1", "update": {"sessionUpdate": "agent_message_chunk"}}},
        {"_direction": "incoming", "_type": "request", "id": "r-1", "method": "fs/read_text_file",
         "params": {"sessionId": "s 1", "path": "/w/a"}},
        {"_direction": "outgoing", "_type": "response", "id": "r-1", "method": "fs/read_text_file",
         "params": {"code": 5, "message": "a result shaped almost like an error", "line": 2}},
        {"_direction": "stderr", "_type": "stderr", "id": null, "method": "stderr", "params": ""},
        {"_direction": "incoming", "_type": "response", "id": 1, "method": "session/prompt",
         "params": {"code": -32603, "message": "Internal error", "data": {"why": "boom"}}},
        {"_direction": "incoming", "_type": "response", "id": 7, "method": "[unrecognized response]",
         "params": null}
    ]);
    serde_json::to_string_pretty(&entries).unwrap()
}

#[test]
fn a_zed_copy_with_stderr_entries_becomes_paired_messages_at_time_zero() {
    let copy = zed_copy();
    assert!(copy.starts_with("[\n  {\n    \"_direction\""), "{copy}");
    let mut store = Store::in_memory().unwrap();
    let s = import_text(&mut store, "zed.json", &copy, &opts(ImportFormat::Auto, false)).unwrap();
    assert_eq!((s.format, s.frames, s.skipped), (ImportFormat::Zed, 10, 0));
    let (c2a, a2c, err) = (Direction::ClientToAgent, Direction::AgentToClient, Direction::AgentStderr);
    assert_eq!(
        rows(&store, 1),
        vec![
            (1, 0, c2a, FrameKind::Request, m("initialize"), None, None),
            (2, 0, err, FrameKind::Stderr, None, None, None),
            (3, 0, a2c, FrameKind::Response, m("initialize"), Some(1), Some(0)),
            (4, 0, c2a, FrameKind::Request, m("session/prompt"), None, None),
            (5, 0, a2c, FrameKind::Notification, m("session/update"), None, None),
            (6, 0, a2c, FrameKind::Request, m("fs/read_text_file"), None, None),
            (7, 0, c2a, FrameKind::Response, m("fs/read_text_file"), Some(6), Some(0)),
            (8, 0, err, FrameKind::Stderr, None, None, None),
            (9, 0, a2c, FrameKind::Error, m("session/prompt"), Some(4), Some(0)),
            (10, 0, a2c, FrameKind::Response, None, None, None),
        ]
    );
    let f = frames(&store, 1);
    assert_eq!(raw(&f[1]), "agent: starting up, \"quoted\"\n");
    assert_eq!(raw(&f[7]), "\n");
    // Whitespace between tokens is gone, inside strings it stays; members
    // keep the order Zed wrote them in.
    assert_eq!(
        raw(&f[3]),
        "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"session/prompt\",\"params\":{\"sessionId\":\"s 1\",\"prompt\":[{\"type\":\"text\",\"text\":\"a  b\\n c\"}]}}\n"
    );
    assert_eq!(raw(&f[4]), "{\"jsonrpc\":\"2.0\",\"method\":\"session/update\",\"params\":{\"sessionId\":\"s 1\",\"update\":{\"sessionUpdate\":\"agent_message_chunk\"}}}\n");
    assert_eq!(
        raw(&f[6]),
        "{\"jsonrpc\":\"2.0\",\"id\":\"r-1\",\"result\":{\"code\":5,\"message\":\"a result shaped almost like an error\",\"line\":2}}\n"
    );
    assert_eq!(
        raw(&f[8]),
        "{\"jsonrpc\":\"2.0\",\"id\":1,\"error\":{\"code\":-32603,\"message\":\"Internal error\",\"data\":{\"why\":\"boom\"}}}\n"
    );
    assert_eq!(raw(&f[9]), "{\"jsonrpc\":\"2.0\",\"id\":7,\"result\":null}\n");
    let t = store.trace(1).unwrap();
    assert_eq!((t.frame_count, t.error_count, t.name.as_deref()), (10, 1, Some("zed")));
    assert_eq!(t.command, vec!["import".to_owned(), "zed".into(), t.command[2].clone()]);
}

#[test]
fn a_response_is_an_error_only_in_the_shape_of_an_acp_error() {
    for (params, error) in [
        (r#"{"code":-32603,"message":"x"}"#, true),
        (r#"{"message":"x","code":1,"data":[1]}"#, true),
        (r#"{"code":-32603,"message":"x","extra":1}"#, false),
        (r#"{"code":"E1","message":"x"}"#, false),
        (r#"{"code":1}"#, false),
        (r#"{"stopReason":"end_turn"}"#, false),
        ("null", false),
        ("[1,2]", false),
        (r#""code""#, false),
    ] {
        assert_eq!(zed::is_error(params), error, "{params}");
    }
}

#[test]
fn compacting_keeps_strings_numbers_and_order() {
    let pretty = "{\n  \"b\": \"x \\\" }\\n y\",\n  \"a\": [\n    1.50,\n    -0e3\n  ]\n}";
    assert_eq!(zed::compact(pretty), "{\"b\":\"x \\\" }\\n y\",\"a\":[1.50,-0e3]}");
}

#[test]
fn a_bad_zed_entry_is_named_by_the_line_of_its_brace() {
    let copy = zed_copy().replacen("\"_direction\": \"stderr\"", "\"_direction\": \"sideways\"", 1);
    let line = copy.lines().position(|l| l.contains("sideways")).unwrap();
    let mut store = Store::in_memory().unwrap();
    let err = import_text(&mut store, "z.json", &copy, &opts(ImportFormat::Zed, false)).unwrap_err();
    // The brace is on the line before the member.
    let expect = format!("z.json:{line}: unknown `_direction` `sideways`; expected outgoing, incoming or stderr");
    assert!(err.to_string().contains(&expect), "{err}");
    assert!(store.list_traces().unwrap().is_empty());
    let s = import_text(&mut store, "z.json", &copy, &opts(ImportFormat::Zed, true)).unwrap();
    assert_eq!((s.frames, s.skipped), (9, 1));

    let cut = &zed_copy()[..200];
    let err = import_text(&mut store, "cut.json", cut, &opts(ImportFormat::Auto, false)).unwrap_err();
    assert!(
        err.to_string().contains("cut.json: not a Zed ACP log (a JSON array of messages): EOF while parsing"),
        "{err}"
    );
    let err = import_text(&mut store, "e.json", "[\n]\n", &opts(ImportFormat::Auto, false)).unwrap_err();
    assert!(err.to_string().contains("holds no messages"), "{err}");
}

/// An acp-inspector-trace file of two connections, frames interleaved
/// where the second agent starts before the first's last answer is in.
fn inspector_file(frames_claimed: usize) -> String {
    let frame = |at: i64, conn: u64, dir: &str, text: &str| {
        json!({"type": "frame", "at": at, "connection": conn, "direction": dir, "encoding": "utf8", "frame": text})
            .to_string()
    };
    let lines = [
        json!({"type": "header", "format": "acp-inspector-trace", "version": 1, "at": 1785312009999_i64,
               "frames": frames_claimed, "dropped": 2,
               "warning": "ACP frames may contain prompts, file contents, and tool output; nothing is redacted"})
        .to_string(),
        frame(1785312000456, 1, "client -> agent", r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}"#),
        frame(1785312000512, 1, "agent -> client", r#"{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":1}}"#),
        frame(1785312000600, 1, "client -> agent", r#"{"jsonrpc":"2.0","id":2,"method":"session/new","params":{}}"#),
        frame(1785312001000, 2, "client -> agent", r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}"#),
        frame(1785312001100, 2, "agent -> client", "not json \u{1b}[0m"),
        frame(1785312001250, 2, "agent -> client", r#"{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":1}}"#),
        frame(1785312001300, 1, "agent -> client", r#"{"jsonrpc":"2.0","id":2,"result":{"sessionId":"s"}}"#),
    ];
    lines.join("\n") + "\n"
}

#[test]
fn an_acp_inspector_trace_of_two_connections_is_two_traces_paired_apart() {
    let mut store = Store::in_memory().unwrap();
    let s = import_text(&mut store, "insp.jsonl", &inspector_file(7), &opts(ImportFormat::Auto, false)).unwrap();
    assert_eq!((s.format, s.trace_ids.clone(), s.frames), (ImportFormat::AcpInspector, vec![1, 2], 7));
    let (c2a, a2c) = (Direction::ClientToAgent, Direction::AgentToClient);
    assert_eq!(
        rows(&store, 1),
        vec![
            (1, 0, c2a, FrameKind::Request, m("initialize"), None, None),
            (2, 56_000_000, a2c, FrameKind::Response, m("initialize"), Some(1), Some(56_000_000)),
            (3, 144_000_000, c2a, FrameKind::Request, m("session/new"), None, None),
            (4, 844_000_000, a2c, FrameKind::Response, m("session/new"), Some(3), Some(700_000_000)),
        ]
    );
    assert_eq!(
        rows(&store, 2),
        vec![
            (1, 0, c2a, FrameKind::Request, m("initialize"), None, None),
            (2, 100_000_000, a2c, FrameKind::Invalid, None, None, None),
            (3, 250_000_000, a2c, FrameKind::Response, m("initialize"), Some(1), Some(250_000_000)),
        ]
    );
    assert_eq!(raw(&frames(&store, 2)[1]), "not json \u{1b}[0m\n");
    let (t1, t2) = (store.trace(1).unwrap(), store.trace(2).unwrap());
    assert_eq!(t1.name.as_deref(), Some("insp (connection 1)"));
    assert_eq!(t2.name.as_deref(), Some("insp (connection 2)"));
    assert_eq!(t1.started_at, "2026-07-29T08:00:00.456000Z");
    assert_eq!(t2.started_at, "2026-07-29T08:00:01.000000Z");
    assert_eq!(t1.ended_at.as_deref(), Some("2026-07-29T08:00:01.300000Z"));
    // `dropped` is missing from the first trace.
    assert_eq!((t1.missing_frames, t2.missing_frames), (2, 0));
}

#[test]
fn an_acp_inspector_trace_holding_fewer_frames_than_its_header_is_cut_short() {
    let mut store = Store::in_memory().unwrap();
    let err = import_text(&mut store, "i.jsonl", &inspector_file(9), &opts(ImportFormat::Auto, false)).unwrap_err();
    assert!(err.to_string().contains("i.jsonl:1: the header says the trace has 9 frames, the file holds 7"), "{err}");
    assert!(store.list_traces().unwrap().is_empty());
    let s = import_text(&mut store, "i.jsonl", &inspector_file(9), &opts(ImportFormat::Auto, true)).unwrap();
    assert_eq!((s.frames, s.absent), (7, 2));
    assert_eq!(store.trace(1).unwrap().missing_frames, 4);

    let v2 = inspector_file(7).replacen("\"version\":1", "\"version\":2", 1);
    let err = import_text(&mut store, "v2.jsonl", &v2, &opts(ImportFormat::Auto, false)).unwrap_err();
    assert!(err.to_string().contains("acp-inspector-trace version 2 is newer than this acp-tee reads (1)"), "{err}");
    let headless: String = inspector_file(7).lines().skip(1).map(|l| format!("{l}\n")).collect();
    let err = import_text(&mut store, "h.jsonl", &headless, &opts(ImportFormat::AcpInspector, false)).unwrap_err();
    assert!(err.to_string().contains("h.jsonl:1: not an acp-inspector-trace header"), "{err}");
    let bad = inspector_file(7).replacen("\"client -> agent\"", "\"up\"", 1);
    let err = import_text(&mut store, "d.jsonl", &bad, &opts(ImportFormat::Auto, false)).unwrap_err();
    assert!(err.to_string().contains("d.jsonl:2: unknown direction `up`"), "{err}");
}

#[test]
fn acpx_session_events_keep_their_seq_and_times() {
    let line = |seq: i64, at: &str, dir: &str, message: serde_json::Value| {
        json!({"seq": seq, "at": at, "direction": dir, "message": message}).to_string() + "\n"
    };
    let text = [
        line(
            1,
            "2026-12-01T17:08:23.932Z",
            "outbound",
            json!({"jsonrpc":"2.0","id":2,"method":"session/prompt","params":{"sessionId":"s"}}),
        ),
        line(
            2,
            "2026-12-01T17:08:23.940Z",
            "inbound",
            json!({"jsonrpc":"2.0","id":0,"method":"session/request_permission","params":{"sessionId":"s"}}),
        ),
        line(
            3,
            "2026-12-01T17:08:23.950Z",
            "outbound",
            json!({"jsonrpc":"2.0","id":0,"result":{"outcome":{"outcome":"selected","optionId":"allow"}}}),
        ),
        line(
            5,
            "2026-12-01T17:08:23.969Z",
            "inbound",
            json!({"jsonrpc":"2.0","id":2,"result":{"stopReason":"end_turn"}}),
        ),
    ]
    .concat();
    let mut store = Store::in_memory().unwrap();
    let s = import_text(&mut store, "events.ndjson", &text, &opts(ImportFormat::Auto, false)).unwrap();
    assert_eq!((s.format, s.frames), (ImportFormat::Acpx, 4));
    let (c2a, a2c) = (Direction::ClientToAgent, Direction::AgentToClient);
    assert_eq!(
        rows(&store, 1),
        vec![
            (1, 0, c2a, FrameKind::Request, m("session/prompt"), None, None),
            (2, 8_000_000, a2c, FrameKind::Request, m("session/request_permission"), None, None),
            (3, 18_000_000, c2a, FrameKind::Response, m("session/request_permission"), Some(2), Some(10_000_000)),
            (5, 37_000_000, a2c, FrameKind::Response, m("session/prompt"), Some(1), Some(37_000_000)),
        ]
    );
    let t = store.trace(1).unwrap();
    assert_eq!((t.missing_frames, t.started_at.as_str()), (1, "2026-12-01T17:08:23.932000Z"));
    let dup = format!("{text}{}", line(3, "2026-12-01T17:08:24Z", "inbound", json!({})));
    let err = import_text(&mut store, "e.ndjson", &dup, &opts(ImportFormat::Acpx, false)).unwrap_err();
    assert!(err.to_string().contains("e.ndjson:5: duplicate seq 3"), "{err}");
}

#[test]
fn f_sharp_inspector_lines_read_string_or_object_messages() {
    let text = concat!(
        r#"{"ts":"2025-01-15T10:00:00.000Z","direction":"fromClient","json":"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\",\"params\":{\"protocolVersion\":1}}"}"#,
        "\n",
        r#"{"ts":1736935200250,"direction":"FROMAGENT","json":{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":1}}}"#,
        "\n",
        r#"{"direction":"a2c","json":{"jsonrpc":"2.0","method":"session/update","params":{}}}"#,
        "\n",
    );
    let mut store = Store::in_memory().unwrap();
    let s = import_text(&mut store, "fs.jsonl", text, &opts(ImportFormat::Auto, false)).unwrap();
    assert_eq!((s.format, s.frames), (ImportFormat::AcpInspectorFsharp, 3));
    let (c2a, a2c) = (Direction::ClientToAgent, Direction::AgentToClient);
    assert_eq!(
        rows(&store, 1),
        vec![
            (1, 0, c2a, FrameKind::Request, m("initialize"), None, None),
            (2, 250_000_000, a2c, FrameKind::Response, m("initialize"), Some(1), Some(250_000_000)),
            (3, 250_000_000, a2c, FrameKind::Notification, m("session/update"), None, None),
        ]
    );
    let f = frames(&store, 1);
    assert_eq!(
        raw(&f[0]),
        "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\",\"params\":{\"protocolVersion\":1}}\n"
    );
    let bad = text.replacen("fromClient", "toAgent", 1);
    let err = import_text(&mut store, "b.jsonl", &bad, &opts(ImportFormat::Auto, false)).unwrap_err();
    assert!(err.to_string().contains("b.jsonl:1: unknown direction `toagent`"), "{err}");
}
