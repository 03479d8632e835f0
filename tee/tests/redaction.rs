//! Redaction with real sessions: secrets in `session/new` (MCP server env and
//! headers) and `authenticate` never leave through an export by default, in
//! any format, from the CLI or the API; the store keeps them unless
//! `record --redact` masked them, and the relay forwards them untouched.

mod common;

use acp_tee::server::{app, AppState, Db};
use axum::body::Body;
use axum::http::{Request, StatusCode};
use common::*;
use http_body_util::BodyExt;
use std::path::Path;
use std::process::Command;
use tower::ServiceExt;

const SECRETS: [&str; 5] = ["SECRET-AUTH-KEY", "SECRET-AUTH-PASS", "SECRET-ENV", "SECRET-HEADER", "SECRET-COOKIE"];

/// A client's side of a session carrying secrets, one message a line.
fn session_with_secrets() -> Vec<u8> {
    [
        r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":1,"clientCapabilities":{}}}"#,
        r#"{"jsonrpc":"2.0","id":1,"method":"authenticate","params":{"methodId":"api-key","_meta":{"apiKey":"SECRET-AUTH-KEY","password":"SECRET-AUTH-PASS"}}}"#,
        r#"{"jsonrpc":"2.0","id":2,"method":"session/new","params":{"cwd":"/home/me/project","mcpServers":[{"name":"gh","command":"/bin/gh-mcp","args":["--stdio"],"env":[{"name":"GITHUB_TOKEN","value":"SECRET-ENV"}]},{"type":"http","name":"web","url":"https://example.test/mcp","headers":[{"name":"Authorization","value":"Bearer SECRET-HEADER"},{"name":"Cookie","value":"SECRET-COOKIE"}]}]}}"#,
        r#"{"jsonrpc":"2.0","id":3,"method":"session/prompt","params":{"sessionId":"s","prompt":[{"type":"text","text":"my name is Zebediah"}]}}"#,
    ]
    .map(|l| format!("{l}\n"))
    .concat()
    .into_bytes()
}

/// Records the session with `cat` as the agent (it echoes every message, so
/// the secrets cross both ways); returns what the client got back.
fn record(store: &TempStore, extra: &[&str]) -> Vec<u8> {
    let out = run_with_input(tee_command(&store.db, extra, &["cat"]), session_with_secrets());
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    store.ended_traces(1);
    out.stdout
}

fn export(db: &Path, args: &[&str]) -> String {
    let out = Command::new(bin()).arg("export").arg("--db").arg(db).args(args).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).unwrap()
}

fn leaked(text: &str) -> Vec<&'static str> {
    SECRETS.into_iter().filter(|s| text.contains(s)).collect()
}

#[test]
fn no_secret_leaves_through_any_export_by_default() {
    let store = TempStore::new();
    record(&store, &[]);
    for format in ["json", "ndjson", "jsons", "perfetto"] {
        let text = export(&store.db, &["--format", format]);
        assert_eq!(leaked(&text), Vec::<&str>::new(), "{format} leaks");
        if format != "perfetto" {
            assert!(text.contains("[REDACTED]"), "{format}");
            // What is not secret is still there.
            assert!(text.contains("GITHUB_TOKEN") && text.contains("/home/me/project"), "{format}");
        }
    }
    // The store is unchanged: --no-redact shows everything.
    let all = export(&store.db, &["--no-redact"]);
    assert_eq!(leaked(&all), SECRETS.to_vec());
    assert!(!all.contains("[REDACTED]"));
}

#[test]
fn user_rules_add_paths_and_patterns() {
    let store = TempStore::new();
    record(&store, &[]);
    let text = export(&store.db, &["--format", "ndjson", "--redact", "$.params.cwd", "--redact", "Zebedi[a-z]+"]);
    assert!(!text.contains("/home/me/project") && !text.contains("Zebediah"), "{text}");
    assert!(text.contains(r#"\"cwd\":\"[REDACTED]\""#), "{text}");
    assert!(text.contains("my name is [REDACTED]"), "{text}");
    assert_eq!(leaked(&text), Vec::<&str>::new());
    let out = Command::new(bin()).args(["export", "--redact", "(bad"]).arg("--db").arg(&store.db).output().unwrap();
    let err = String::from_utf8(out.stderr).unwrap();
    assert!(err.contains("redaction rule `(bad` is not usable"), "{err}");
    let out = Command::new(bin())
        .args(["export", "--redact", "x", "--no-redact"])
        .arg("--db")
        .arg(&store.db)
        .output()
        .unwrap();
    assert!(!out.status.success(), "--redact and --no-redact together must be refused");
}

#[test]
fn record_time_redaction_masks_the_store_not_the_wire() {
    let store = TempStore::new();
    let forwarded = record(&store, &["--redact", "--redact=Zebedi[a-z]+"]);
    // cat echoed the exact bytes back through the relay: nothing was masked on the wire.
    assert_eq!(forwarded, session_with_secrets());
    let trace = store.only_trace();
    let stored: Vec<u8> = store.frames(trace.id).into_iter().flat_map(|f| f.raw).collect();
    let stored = String::from_utf8(stored).unwrap();
    assert_eq!(leaked(&stored), Vec::<&str>::new(), "{stored}");
    assert!(!stored.contains("Zebediah"));
    let all = export(&store.db, &["--no-redact", "--format", "ndjson"]);
    assert_eq!(leaked(&all), Vec::<&str>::new());
    // Classification and pairing were made from the original messages.
    let frames = exported_frames(&store.db, trace.id);
    assert_eq!(frames.iter().filter(|f| f["kind"] == "request").count(), 8);
    let page = store.open().frame_page(trace.id, &Default::default()).unwrap();
    let prompt = page.frames.iter().find(|f| f.method.as_deref() == Some("session/prompt")).unwrap();
    assert_eq!(prompt.preview.as_deref(), Some("my name is [REDACTED]"));
    let bad = run_with_input(tee_command(&store.db, &["--redact=(bad"], &["cat"]), Vec::new());
    assert_eq!(bad.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&bad.stderr).contains("redaction rule `(bad` is not usable"));
}

#[tokio::test]
async fn the_api_exports_every_format_redacted() {
    let store = TempStore::new();
    record(&store, &[]);
    let router = app(AppState::new(Db::open(&store.db).unwrap(), &store.db, None, None));
    for format in ["json", "ndjson", "jsons", "perfetto"] {
        let uri = format!("/api/traces/1/export?format={format}");
        let resp = router.clone().oneshot(Request::get(&uri).body(Body::empty()).unwrap()).await.unwrap();
        assert_eq!(resp.status(), StatusCode::OK, "{format}");
        let body = resp.into_body().collect().await.unwrap().to_bytes();
        let text = String::from_utf8(body.to_vec()).unwrap();
        assert_eq!(leaked(&text), Vec::<&str>::new(), "{format} leaks through the API");
        // Byte for byte what the CLI exports by default.
        assert_eq!(text, export(&store.db, &["--trace", "1", "--format", format]), "{format}");
    }
    let uri = "/api/traces/1/export?format=ndjson&redact=false";
    let resp = router.clone().oneshot(Request::get(uri).body(Body::empty()).unwrap()).await.unwrap();
    let body = resp.into_body().collect().await.unwrap().to_bytes();
    assert_eq!(leaked(std::str::from_utf8(&body).unwrap()), SECRETS.to_vec());
    let resp =
        router.oneshot(Request::get("/api/traces/1/export?format=xml").body(Body::empty()).unwrap()).await.unwrap();
    assert_eq!(resp.status(), StatusCode::BAD_REQUEST);
}
