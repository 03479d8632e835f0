//! Traffic a peer may send that once made acp-tee lose, invent or leak
//! messages: escaped and odd ids, arrays posing as messages, repeated
//! members, batches of responses, secrets in ids and session ids, malformed
//! lines sent to the proxy. Each case goes from raw bytes through the real
//! binary into a real store and back out through the real exports.

mod common;

use acp_tee_shared::{Direction, FrameKind};
use common::*;
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
fn record(store: &TempStore, extra: &[&str], input: &str, agent: &str) -> Vec<acp_tee::store::StoredFrame> {
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
