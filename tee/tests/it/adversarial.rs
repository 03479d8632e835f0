//! Traffic a peer may send that once made acp-tee lose, invent or leak
//! messages: escaped and odd ids, arrays posing as messages, repeated
//! members, batches of responses, secrets in ids and session ids, malformed
//! lines sent to the proxy. Each case goes from raw bytes through the real
//! binary into a real store and back out through the real exports.

use crate::common::*;
use acp_tee_shared::{Direction, FrameKind};
use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Command, Stdio};

/// `acp-tee ARGS --db DB`; its stdout, after checking it succeeded.
fn tee(db: &Path, args: &[&str]) -> Vec<u8> {
    let out = Command::new(bin()).args(args).arg("--db").arg(db).output().unwrap();
    assert!(out.status.success(), "acp-tee {args:?} failed: {}", String::from_utf8_lossy(&out.stderr));
    out.stdout
}

/// Records `input` going to `agent` (a shell script) and returns the one
/// trace's frames.
fn record(store: &TempStore, extra: &[&str], input: &str, agent: &str) -> Vec<acp_tee::StoredFrame> {
    let out = run_with_input(tee_command(&store.db, extra, &["sh", "-c", agent]), input.as_bytes().to_vec());
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let trace = store.only_trace();
    store.frames(trace.id)
}

fn lines(text: &[&str]) -> String {
    text.iter().map(|l| format!("{l}\n")).collect()
}

/// An agent script that reads `n` lines, then prints `answers`, one a line.
fn answering(n: usize, answers: &[&str]) -> String {
    let quoted: Vec<String> = answers.iter().map(|a| format!("'{a}'")).collect();
    format!("{} printf '%s\\n' {}", "read l;".repeat(n), quoted.join(" "))
}

#[test]
fn responses_pair_with_their_requests_by_id_value_not_spelling() {
    let store = TempStore::new();
    let frames = record(
        &store,
        &[],
        &lines(&[
            r#"{"jsonrpc":"2.0","id":"\u00e9","method":"a"}"#,
            r#"{"jsonrpc":"2.0","id":"x\/y","method":"b"}"#,
            r#"{"jsonrpc":"2.0","id":1.0,"method":"c"}"#,
            r#"{"jsonrpc":"2.0","id":"1","method":"d"}"#,
        ]),
        &answering(
            4,
            &[
                r#"{"jsonrpc":"2.0","id":"é","result":{}}"#,
                r#"{"jsonrpc":"2.0","id":"x/y","result":{}}"#,
                r#"{"jsonrpc":"2.0","id":1,"result":{}}"#,
                r#"{"jsonrpc":"2.0","id":"1","result":{}}"#,
            ],
        ),
    );
    let responses: Vec<_> = frames.iter().filter(|f| f.kind == FrameKind::Response).collect();
    let pairs: Vec<(Option<i64>, Option<&str>)> =
        responses.iter().map(|f| (f.reply_to_seq, f.method.as_deref())).collect();
    assert_eq!(pairs, vec![(Some(1), Some("a")), (Some(2), Some("b")), (Some(3), Some("c")), (Some(4), Some("d"))]);
    // Ids stay as written.
    assert_eq!(frames[0].rpc_id.as_deref(), Some(r#""\u00e9""#));
    assert_eq!(responses[0].rpc_id.as_deref(), Some("\"é\""));
}

#[test]
fn exported_ids_keep_their_exact_text_and_survive_a_round_trip() {
    let ids = ["18446744073709551616", "1e400", "-0", "1E2", "1.50", r#""\u00e9""#, "null"];
    let input: Vec<String> = ids.iter().map(|id| format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"m"}}"#)).collect();
    let store = TempStore::new();
    let input = lines(&input.iter().map(String::as_str).collect::<Vec<_>>());
    record(&store, &[], &input, "cat");
    let export = String::from_utf8(tee(&store.db, &["export", "--format", "ndjson"])).unwrap();
    for id in ids {
        // Both the request and cat's echo of it carry the id as written.
        assert_eq!(export.matches(&format!(r#""kind":"request","id":{id},"#)).count(), 2, "{id} in\n{export}");
    }
    // export -> import -> export gives the same file.
    let file = store.dir.path().join("t.ndjson");
    std::fs::write(&file, &export).unwrap();
    let again = TempStore::new();
    tee(&again.db, &["import", file.to_str().unwrap()]);
    let second = String::from_utf8(tee(&again.db, &["export", "--format", "ndjson"])).unwrap();
    assert_eq!(without_import_fields(&second), without_import_fields(&export));
}

/// An export's text without the fields an import adds to a trace (where it
/// came from), so two exports of the same frames compare equal.
fn without_import_fields(export: &str) -> Vec<String> {
    export
        .lines()
        .map(|l| match l.starts_with(r#"{"format""#) {
            true => {
                let mut header: serde_json::Value = serde_json::from_str(l).unwrap();
                header["trace"].as_object_mut().unwrap().retain(|k, _| !k.starts_with("import"));
                header.to_string()
            }
            // Frames compare as text: ids must match exactly.
            false => l.to_owned(),
        })
        .collect()
}

const SECRET_PROMPT: &str =
    r#"{"jsonrpc":"2.0","id":"t-SECRET1","method":"session/prompt","params":{"sessionId":"s-SECRET1"}}"#;
const SECRET_ANSWER: &str = r#"{"jsonrpc":"2.0","id":"t-SECRET1","result":{"stopReason":"end_turn"}}"#;

/// Every text column of every frame of the store, concatenated.
fn every_stored_value(db: &Path) -> String {
    let conn = rusqlite::Connection::open(db).unwrap();
    let mut stmt = conn
        .prepare(
            "SELECT coalesce(rpc_id, '') || ' ' || coalesce(method, '') || ' ' || coalesce(session_id, '') || ' ' ||
                    coalesce(mcp_method, '') || ' ' || coalesce(preview, '') || ' ' || cast(raw AS TEXT)
             FROM frames",
        )
        .unwrap();
    let rows: Vec<String> = stmt.query_map([], |r| r.get(0)).unwrap().map(Result::unwrap).collect();
    rows.join("\n")
}

#[test]
fn record_time_redaction_masks_the_values_stored_beside_the_bytes() {
    let store = TempStore::new();
    let frames = record(&store, &["--redact=SECRET[0-9]"], &lines(&[SECRET_PROMPT]), &answering(1, &[SECRET_ANSWER]));
    let stored = every_stored_value(&store.db);
    assert!(!stored.contains("SECRET1"), "a secret is in the store:\n{stored}");
    // The agent's command line held it too.
    let trace = store.only_trace();
    assert!(!trace.command.concat().contains("SECRET1"), "{:?}", trace.command);
    // Pairing used the original ids; the masked values are what is kept.
    let response = frames.iter().find(|f| f.kind == FrameKind::Response).unwrap();
    assert_eq!(response.reply_to_seq, Some(1));
    assert_eq!(response.rpc_id.as_deref(), Some(r#""t-[REDACTED]""#));
    assert_eq!(response.method.as_deref(), Some("session/prompt"));
    assert_eq!(response.session_id.as_deref(), Some("s-[REDACTED]"));
}

#[test]
fn export_time_redaction_masks_every_field_and_round_trips() {
    let store = TempStore::new();
    record(&store, &[], &lines(&[SECRET_PROMPT]), &answering(1, &[SECRET_ANSWER]));
    for format in ["json", "ndjson", "jsons", "perfetto"] {
        let text =
            String::from_utf8(tee(&store.db, &["export", "--format", format, "--redact", "SECRET[0-9]"])).unwrap();
        assert!(!text.contains("SECRET1"), "{format} leaks:\n{text}");
        assert!(text.contains("[REDACTED]"), "{format}");
    }
    let first = tee(&store.db, &["export", "--format", "ndjson", "--redact", "SECRET[0-9]"]);
    let file = store.dir.path().join("masked.ndjson");
    std::fs::write(&file, &first).unwrap();
    let again = TempStore::new();
    tee(&again.db, &["import", file.to_str().unwrap()]);
    let second = tee(&again.db, &["export", "--format", "ndjson", "--redact", "SECRET[0-9]"]);
    let (first, second) = (String::from_utf8(first).unwrap(), String::from_utf8(second).unwrap());
    assert_eq!(without_import_fields(&second), without_import_fields(&first));
}

#[test]
fn arrays_are_never_read_as_positional_messages() {
    let store = TempStore::new();
    let frames = record(
        &store,
        &[],
        &lines(&[r#"[[30,"session/prompt",{"sessionId":"S"}]]"#]),
        &answering(1, &[r#"{"jsonrpc":"2.0","id":30,"error":{"code":-32600,"message":"no"}}"#]),
    );
    assert_eq!(frames[0].kind, FrameKind::Batch);
    assert_eq!(frames[0].method, None);
    assert_eq!((frames[1].kind, frames[1].reply_to_seq), (FrameKind::Error, None));
    let jsons = String::from_utf8(tee(&store.db, &["export", "--format", "jsons"])).unwrap();
    assert!(!jsons.contains(r#""type":"request""#), "a request that was never sent:\n{jsons}");
    assert_eq!(jsons.lines().count(), 1, "{jsons}");
}

#[test]
fn a_repeated_member_counts_as_its_last_occurrence() {
    let store = TempStore::new();
    let frames = record(&store, &[], &lines(&[r#"{"jsonrpc":"2.0","id":15,"id":16,"method":"m"}"#]), "cat");
    for f in &frames {
        assert_eq!((f.kind, f.rpc_id.as_deref(), f.method.as_deref()), (FrameKind::Request, Some("16"), Some("m")));
    }
}

/// A turn whose messages repeat members (#30 item 8): the prompt's id
/// (`15`, then `16`), each chunk's `content` (the last is the text) and the
/// answer's `stopReason` (`cancelled` last). Imported from raw sacp-tee log
/// lines into a real store; returns it.
fn repeated_members_turn() -> TempStore {
    let store = TempStore::new();
    let chunk = |lost: &str, text: &str| {
        format!(
            r#"← {{"jsonrpc":"2.0","method":"session/update","params":{{"sessionId":"s","update":{{"sessionUpdate":"agent_message_chunk","content":{{"type":"text","text":"{lost}"}},"content":{{"type":"text","text":"{text}"}}}}}}}}"#
        )
    };
    let log = [
        r#"→ {"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":1,"clientCapabilities":{}}}"#.to_owned(),
        r#"← {"jsonrpc":"2.0","id":0,"result":{"protocolVersion":1,"agentCapabilities":{}}}"#.to_owned(),
        r#"→ {"jsonrpc":"2.0","id":1,"method":"session/new","params":{"cwd":"/tmp","mcpServers":[]}}"#.to_owned(),
        r#"← {"jsonrpc":"2.0","id":1,"result":{"sessionId":"s"}}"#.to_owned(),
        r#"→ {"jsonrpc":"2.0","id":15,"id":16,"method":"session/prompt","params":{"sessionId":"s","prompt":[{"type":"text","text":"hi"}]}}"#.to_owned(),
        chunk("lost-1", "Hello, "),
        chunk("lost-2", "repeated "),
        chunk("lost-3", "world"),
        r#"← {"jsonrpc":"2.0","id":16,"result":{"stopReason":"end_turn","stopReason":"cancelled"}}"#.to_owned(),
    ];
    let file = store.dir.path().join("repeated.log");
    std::fs::write(&file, log.iter().map(|l| format!("{l}\n")).collect::<String>()).unwrap();
    tee(&store.db, &["import", file.to_str().unwrap()]);
    store
}

/// `check` reads a repeated member as its last, as the recorder stored it:
/// the prompt is request 16, answered; nothing is unreadable or unknown.
#[test]
fn check_reads_a_repeated_member_as_its_last() {
    let store = repeated_members_turn();
    let frames = store.frames(store.only_trace().id);
    assert_eq!((frames[4].rpc_id.as_deref(), frames[8].reply_to_seq), (Some("16"), Some(5)));
    let out = Command::new(bin()).args(["check", "--format", "json", "--db"]).arg(&store.db).output().unwrap();
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let findings = &doc["traces"][0]["findings"];
    assert_eq!(findings, &serde_json::json!([]), "{}", String::from_utf8_lossy(&out.stdout));
    assert_eq!(out.status.code(), Some(0));
}

/// `show` reads them so too: the turn's stop reason is the last one, its
/// three updates count, and its message is the chunks' last contents.
#[test]
fn show_reads_a_repeated_member_as_its_last() {
    let store = repeated_members_turn();
    let doc: serde_json::Value = serde_json::from_slice(&tee(&store.db, &["show", "--format", "json"])).unwrap();
    let session = &doc["sessions"][0];
    let turn = &session["turns"][0];
    assert_eq!(turn["stop_reason"], "cancelled", "{session:#}");
    let counted = doc["overview"]["sessions"][0]["updates"].as_u64();
    assert_eq!((turn["updates"].as_u64(), counted), (Some(3), Some(3)), "{doc:#}");
    assert_eq!(turn["message"]["text"], "Hello, repeated world", "{session:#}");
    let text = String::from_utf8(tee(&store.db, &["show"])).unwrap();
    assert!(
        text.contains("stop cancelled") && text.contains("    agent #") && text.contains(": Hello, repeated world\n"),
        "{text}"
    );
    assert!(!text.contains("lost-"), "{text}");
}

/// And the OTLP export: the turn's span has its finish reason and the
/// chunks' text.
#[test]
fn otlp_export_reads_a_repeated_member_as_its_last() {
    let store = repeated_members_turn();
    let out = String::from_utf8(tee(&store.db, &["export", "--format", "otlp", "--otlp-content"])).unwrap();
    let mut turns = Vec::new();
    for line in out.lines() {
        let doc: serde_json::Value = serde_json::from_str(line).unwrap();
        for rs in doc["resourceSpans"].as_array().unwrap() {
            for ss in rs["scopeSpans"].as_array().unwrap() {
                turns.extend(ss["spans"].as_array().unwrap().iter().filter(|s| s["name"] == "invoke_agent").cloned());
            }
        }
    }
    assert_eq!(turns.len(), 1, "{out}");
    let attr = |key: &str| {
        turns[0]["attributes"].as_array().unwrap().iter().find(|a| a["key"] == key).map(|a| a["value"].clone())
    };
    assert_eq!(
        attr("gen_ai.response.finish_reasons"),
        Some(serde_json::json!({"arrayValue": {"values": [{"stringValue": "cancelled"}]}})),
        "{:#}",
        turns[0]
    );
    assert_eq!(attr("acp.turn.chunks"), Some(serde_json::json!({"intValue": "3"})), "{:#}", turns[0]);
    let output = attr("gen_ai.output.messages").and_then(|v| v["stringValue"].as_str().map(str::to_owned));
    assert!(
        output.as_deref().is_some_and(|o| o.contains("Hello, repeated world") && !o.contains("lost-")),
        "{output:?}"
    );
}

#[test]
fn a_batch_of_responses_answers_each_of_its_requests() {
    let store = TempStore::new();
    let frames = record(
        &store,
        &[],
        &lines(&[r#"{"jsonrpc":"2.0","id":1,"method":"a"}"#, r#"{"jsonrpc":"2.0","id":2,"method":"b"}"#]),
        &answering(
            2,
            &[r#"[{"jsonrpc":"2.0","id":2,"result":{}},{"jsonrpc":"2.0","id":1,"error":{"code":1,"message":"m"}}]"#],
        ),
    );
    assert_eq!(frames[2].kind, FrameKind::Batch);
    let trace = store.only_trace();
    let db = store.open();
    for request in [1, 2] {
        let detail = db.frame_detail(trace.id, request).unwrap().unwrap();
        assert_eq!(detail.frame.reply_seq, Some(3), "request {request}");
        assert_eq!(detail.pair.map(|p| p.seq), Some(3), "request {request}");
    }
    let perfetto = String::from_utf8(tee(&store.db, &["export", "--format", "perfetto"])).unwrap();
    assert!(!perfetto.contains("unanswered"), "{perfetto}");
    assert_eq!(perfetto.matches("answered in a batch").count(), 2, "{perfetto}");
}

/// A frame's seq and time are those of its last byte: a response completed
/// before the line of the request it answers is not paired with it.
#[test]
fn a_response_completed_before_its_request_line_stays_unpaired() {
    let store = TempStore::new();
    let request = r#"{"jsonrpc":"2.0","id":1,"method":"m"}"#;
    // The agent reads the request's bytes without waiting for the newline.
    let agent = format!(
        "head -c {} >/dev/null; printf '%s\\n' '{{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{{}}}}'; cat >/dev/null",
        request.len()
    );
    let mut child = tee_command(&store.db, &[], &["sh", "-c", &agent]).spawn().unwrap();
    let mut stdin = child.stdin.take().unwrap();
    stdin.write_all(request.as_bytes()).unwrap();
    stdin.flush().unwrap();
    let mut answer = String::new();
    BufReader::new(child.stdout.take().unwrap()).read_line(&mut answer).unwrap();
    stdin.write_all(b"\n").unwrap();
    drop(stdin);
    assert!(child.wait().unwrap().success());
    let frames = store.frames(store.only_trace().id);
    let summary: Vec<(i64, Direction, FrameKind, Option<i64>)> =
        frames.iter().map(|f| (f.seq, f.dir, f.kind, f.reply_to_seq)).collect();
    assert_eq!(
        summary,
        vec![
            (1, Direction::AgentToClient, FrameKind::Response, None),
            (2, Direction::ClientToAgent, FrameKind::Request, None),
        ]
    );
}

#[test]
fn the_proxy_answers_every_request_it_cannot_route() {
    let store = TempStore::new();
    let input = lines(&[
        r#"{"jsonrpc":"2.0","id":7,"method":"proxy/successor","params":{}}"#,
        r#"{"jsonrpc":"2.0","id":8,"method":42}"#,
        "garbage",
        r#"[11,"session/prompt",{"sessionId":"S"}]"#,
    ]);
    let mut cmd = Command::new(bin());
    cmd.args(["proxy", "--db"]).arg(&store.db);
    cmd.stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped());
    let out = run_with_input(cmd, input.into_bytes());
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let answers: Vec<serde_json::Value> =
        out.stdout.lines().map(|l| serde_json::from_str(&l.unwrap()).unwrap()).collect();
    assert_eq!(answers.len(), 4, "{answers:?}");
    assert_eq!((answers[0]["id"].clone(), answers[0]["error"]["code"].clone()), (7.into(), (-32602).into()));
    assert_eq!((answers[1]["id"].clone(), answers[1]["error"]["code"].clone()), (8.into(), (-32600).into()));
    assert_eq!(
        (answers[2]["id"].clone(), answers[2]["error"]["code"].clone()),
        (serde_json::Value::Null, (-32700).into())
    );
    let batch = answers[3].as_array().expect("a batch is answered with an array");
    assert_eq!(batch.len(), 3);
    assert!(batch.iter().all(|a| a["error"]["code"] == -32600 && a["id"].is_null()));
    assert!(!String::from_utf8_lossy(&out.stdout).contains("proxy/successor"), "an array was sent on as a message");
    // Every line and every answer is in the trace; the answer to the
    // envelope is paired with it (the others answer invalid frames).
    let frames = store.frames(store.only_trace().id);
    assert_eq!(frames.len(), 8);
    let paired: Vec<Option<i64>> =
        frames.iter().filter(|f| f.kind == FrameKind::Error).map(|f| f.reply_to_seq).collect();
    assert_eq!(paired, [Some(1), None, None]);
}

/// Claude Code sends `tool_call` twice for one `toolCallId` (pending
/// without its input, then with it): one tool call, in the turn and in the
/// session's count alike; a second id is a second call.
#[test]
fn a_tool_call_repeated_for_one_id_counts_once() {
    let store = TempStore::new();
    let call = |id: &str, input: &str| {
        format!(
            r#"← {{"jsonrpc":"2.0","method":"session/update","params":{{"sessionId":"s","update":{{"sessionUpdate":"tool_call","toolCallId":"{id}","title":"Read","status":"pending","rawInput":{input}}}}}}}"#
        )
    };
    let log = [
        r#"→ {"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":1,"clientCapabilities":{}}}"#.to_owned(),
        r#"← {"jsonrpc":"2.0","id":0,"result":{"protocolVersion":1,"agentCapabilities":{}}}"#.to_owned(),
        r#"→ {"jsonrpc":"2.0","id":1,"method":"session/new","params":{"cwd":"/tmp","mcpServers":[]}}"#.to_owned(),
        r#"← {"jsonrpc":"2.0","id":1,"result":{"sessionId":"s"}}"#.to_owned(),
        r#"→ {"jsonrpc":"2.0","id":2,"method":"session/prompt","params":{"sessionId":"s","prompt":[{"type":"text","text":"hi"}]}}"#.to_owned(),
        call("toolu_1", "{}"),
        call("toolu_1", r#"{"path":"/tmp/a"}"#),
        call("toolu_2", r#"{"path":"/tmp/b"}"#),
        r#"← {"jsonrpc":"2.0","id":2,"result":{"stopReason":"end_turn"}}"#.to_owned(),
    ];
    let file = store.dir.path().join("repeated-tool-call.log");
    std::fs::write(&file, log.iter().map(|l| format!("{l}\n")).collect::<String>()).unwrap();
    tee(&store.db, &["import", file.to_str().unwrap()]);
    let doc: serde_json::Value = serde_json::from_slice(&tee(&store.db, &["show", "--format", "json"])).unwrap();
    let listed = doc["sessions"][0]["turns"][0]["tool_calls"].as_array().map(Vec::len);
    assert_eq!(listed, Some(2), "{doc:#}");
    assert_eq!(doc["overview"]["sessions"][0]["tool_calls"], 2, "{doc:#}");
    let text = String::from_utf8(tee(&store.db, &["show"])).unwrap();
    assert!(!text.contains("3 tool calls"), "{text}");
}
