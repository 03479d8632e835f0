use super::*;
use crate::model::Mode;
use crate::store::StoredFrame;
use acp_tee_shared::{Direction, FrameKind};

pub(super) fn opts(format: ImportFormat, skip_bad: bool) -> ImportOptions {
    ImportOptions { format, name: None, skip_bad, progress: ProgressBar::hidden() }
}

/// Imports `text` (written to a temp file named `name`) into `store`.
pub(super) fn import_text(
    store: &mut Store,
    name: &str,
    text: &str,
    o: &ImportOptions,
) -> Result<ImportSummary, ImportError> {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join(name);
    std::fs::write(&path, text).unwrap();
    import(store, &path, o)
}

pub(super) fn frames(store: &Store, id: i64) -> Vec<StoredFrame> {
    let mut out = Vec::new();
    store
        .for_each_frame(id, |f| -> Result<(), StoreError> {
            out.push(f);
            Ok(())
        })
        .unwrap();
    out
}

pub(super) type Row = (i64, i64, Direction, FrameKind, Option<String>, Option<i64>, Option<i64>);

pub(super) fn rows(store: &Store, id: i64) -> Vec<Row> {
    frames(store, id)
        .into_iter()
        .map(|f| (f.seq, f.t_ns, f.dir, f.kind, f.method, f.reply_to_seq, f.latency_ns))
        .collect()
}

const RAW_LOG: &str = "\
→ {\"jsonrpc\":\"2.0\",\"id\":0,\"method\":\"initialize\",\"params\":{\"protocolVersion\":1}}
← {\"jsonrpc\":\"2.0\",\"id\":0,\"result\":{\"protocolVersion\":1}}
→ {\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"session/new\",\"params\":{\"cwd\":\"/w\",\"mcpServers\":[]}}
← {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"sessionId\":\"s1\"}}
";

#[test]
fn raw_sacp_tee_lines_are_paired_at_time_zero() {
    let mut store = Store::in_memory().unwrap();
    let s = import_text(&mut store, "eliza.log", RAW_LOG, &opts(ImportFormat::Auto, false)).unwrap();
    assert_eq!((s.format, s.trace_ids.clone(), s.frames, s.skipped), (ImportFormat::SacpTee, vec![1], 4, 0));
    let m = |s: &str| Some(s.to_owned());
    assert_eq!(
        rows(&store, 1),
        vec![
            (1, 0, Direction::ClientToAgent, FrameKind::Request, m("initialize"), None, None),
            (2, 0, Direction::AgentToClient, FrameKind::Response, m("initialize"), Some(1), Some(0)),
            (3, 0, Direction::ClientToAgent, FrameKind::Request, m("session/new"), None, None),
            (4, 0, Direction::AgentToClient, FrameKind::Response, m("session/new"), Some(3), Some(0)),
        ]
    );
    let f = frames(&store, 1);
    assert_eq!(f[1].raw, b"{\"jsonrpc\":\"2.0\",\"id\":0,\"result\":{\"protocolVersion\":1}}\n");
    assert_eq!(f[3].session_id.as_deref(), Some("s1"));
    let t = store.trace_summary(1).unwrap();
    assert_eq!(Mode::parse(&t.meta.mode), Some(Mode::Import));
    assert_eq!(t.meta.name.as_deref(), Some("eliza"));
    assert_eq!(t.meta.frame_count, 4);
    assert!(t.imported_from.unwrap().starts_with("sacp-tee file "));
}

#[test]
fn sacp_tee_json_entries_keep_their_times() {
    let log = concat!(
        r#"{"timestamp":"2026-01-02T03:04:05.000000+00:00","direction":"downstream","message":{"id":1,"method":"session/prompt","params":{"sessionId":"s"}}}"#,
        "\n",
        r#"{"timestamp":"2026-01-02T03:04:05.250000+00:00","direction":"downstream","message":{"method":"session/cancel","params":{"sessionId":"s"}}}"#,
        "\n",
        r#"{"timestamp":"2026-01-02T03:04:05.500000+00:00","direction":"upstream","message":{"id":1,"result":{"stopReason":"cancelled"}}}"#,
        "\n",
    );
    let mut store = Store::in_memory().unwrap();
    import_text(&mut store, "j.log", log, &opts(ImportFormat::Auto, false)).unwrap();
    let m = |s: &str| Some(s.to_owned());
    assert_eq!(
        rows(&store, 1),
        vec![
            (1, 0, Direction::ClientToAgent, FrameKind::Request, m("session/prompt"), None, None),
            (2, 250_000_000, Direction::ClientToAgent, FrameKind::Notification, m("session/cancel"), None, None),
            (
                3,
                500_000_000,
                Direction::AgentToClient,
                FrameKind::Response,
                m("session/prompt"),
                Some(1),
                Some(500_000_000)
            ),
        ]
    );
    let t = store.trace(1).unwrap();
    assert_eq!(
        (t.started_at.as_str(), t.ended_at.as_deref()),
        ("2026-01-02T03:04:05.000000Z", Some("2026-01-02T03:04:05.500000Z"))
    );
}

const JSONS: &str = concat!(
    r#"{"type":"request","ts":0.5,"protocol":"acp","from":"Client","to":"Proxy(0)","id":"a","method":"session/new","params":{"cwd":"/w"}}"#,
    "\n",
    r#"{"type":"request","ts":0.75,"protocol":"acp","from":"Proxy(0)","to":"Agent","id":"b","method":"session/new","params":{"cwd":"/w"}}"#,
    "\n",
    r#"{"type":"response","ts":1.0,"from":"Agent","to":"Proxy(0)","id":"b","is_error":true,"payload":{"code":-32603,"message":"no"}}"#,
    "\n",
    r#"{"type":"response","ts":1.25,"from":"Proxy(0)","to":"Client","id":"a","is_error":true,"payload":{"code":-32603,"message":"no"}}"#,
    "\n",
);

#[test]
fn conductor_hops_keep_their_names_and_pair_per_hop() {
    let mut store = Store::in_memory().unwrap();
    import_text(&mut store, "chain.jsons", JSONS, &opts(ImportFormat::Auto, false)).unwrap();
    let m = |s: &str| Some(s.to_owned());
    assert_eq!(
        rows(&store, 1),
        vec![
            (1, 500_000_000, Direction::ClientToAgent, FrameKind::Request, m("session/new"), None, None),
            (2, 750_000_000, Direction::ClientToAgent, FrameKind::Request, m("session/new"), None, None),
            (
                3,
                1_000_000_000,
                Direction::AgentToClient,
                FrameKind::Error,
                m("session/new"),
                Some(2),
                Some(250_000_000)
            ),
            (
                4,
                1_250_000_000,
                Direction::AgentToClient,
                FrameKind::Error,
                m("session/new"),
                Some(1),
                Some(750_000_000)
            ),
        ]
    );
    let f = frames(&store, 1);
    assert_eq!((f[1].sender.as_deref(), f[1].receiver.as_deref()), (Some("Proxy(0)"), Some("Agent")));
    assert_eq!(f[2].raw, b"{\"jsonrpc\":\"2.0\",\"id\":\"b\",\"error\":{\"code\":-32603,\"message\":\"no\"}}\n");
    assert_eq!(store.trace(1).unwrap().error_count, 2);
}

#[test]
fn a_bad_line_fails_the_whole_file_with_its_number() {
    let mut store = Store::in_memory().unwrap();
    let text = format!("{JSONS}{{\"type\":\"request\",\"ts\":2.0\n{JSONS}");
    let err = import_text(&mut store, "bad.jsons", &text, &opts(ImportFormat::Jsons, false)).unwrap_err();
    let msg = err.to_string();
    assert!(msg.contains("bad.jsons:5: not a conductor trace event: EOF while parsing"), "{msg}");
    assert!(msg.ends_with("nothing was imported (fix the line, or pass --skip-bad to leave bad lines out)"), "{msg}");
    assert!(store.list_traces().unwrap().is_empty());

    let s = import_text(&mut store, "bad.jsons", &text, &opts(ImportFormat::Jsons, true)).unwrap();
    assert_eq!((s.frames, s.skipped), (8, 1));
}

#[test]
fn unknown_components_and_types_are_bad_lines() {
    let mut store = Store::in_memory().unwrap();
    let line = r#"{"type":"request","ts":0,"from":"Editor","to":"Agent","id":1,"method":"x","params":{}}"#;
    let err = import_text(&mut store, "x.jsons", line, &opts(ImportFormat::Jsons, false)).unwrap_err();
    assert!(err.to_string().contains("x.jsons:1: unknown component `Editor` or `Agent`"), "{err}");
    let line = r#"{"type":"event","ts":0,"from":"Client","to":"Agent"}"#;
    let err = import_text(&mut store, "x.jsons", line, &opts(ImportFormat::Jsons, false)).unwrap_err();
    assert!(err.to_string().contains("unknown event type `event`"), "{err}");
}

#[test]
fn newer_versions_and_unknown_files_are_refused() {
    let mut store = Store::in_memory().unwrap();
    let doc = r#"{"format":"acp-tee-trace","version":2,"traces":[]}"#;
    let err = import_text(&mut store, "v2.json", doc, &opts(ImportFormat::Auto, false)).unwrap_err();
    assert!(
        err.to_string().contains("acp-tee-trace version 2 is newer than this acp-tee reads (1); upgrade acp-tee"),
        "{err}"
    );
    let err = import_text(&mut store, "x.txt", "hello\n", &opts(ImportFormat::Auto, false)).unwrap_err();
    assert!(err.to_string().contains("cannot tell the format of"), "{err}");
    let err = import_text(&mut store, "e.jsons", "\n\n", &opts(ImportFormat::Auto, false)).unwrap_err();
    assert!(err.to_string().contains("holds no messages"), "{err}");
    assert!(store.list_traces().unwrap().is_empty());
}

#[test]
fn a_document_broken_halfway_leaves_nothing() {
    let mut store = Store::in_memory().unwrap();
    let doc = "{\"format\":\"acp-tee-trace\",\"version\":1,\"traces\":[\n{\"id\":1,\"command\":[],\"mode\":\"wrap\",\"started_at\":\"x\",\"frame_count\":1,\"error_count\":0,\"missing_frames\":0,\"frames\":[\n{\"seq\":1,\"t_ns\":5,\"dir\":\"client_to_agent\",\"kind\":\"request\",\"raw\":\"{}\\n\"},\n{\"seq\":2,\"t_ns\":";
    let err = import_text(&mut store, "cut.json", doc, &opts(ImportFormat::Auto, false)).unwrap_err();
    assert!(
        err.to_string().contains("cut.json: not an acp-tee-trace document: EOF while parsing a value at line 4"),
        "{err}"
    );
    assert!(store.list_traces().unwrap().is_empty());
}
