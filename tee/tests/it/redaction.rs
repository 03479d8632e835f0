//! Redaction with real sessions: secrets in `session/new` (MCP server env and
//! headers) and `authenticate` never leave through an export by default, in
//! any format, from the CLI or the API; the store keeps them unless
//! `record --redact` masked them, and the relay forwards them untouched.

use crate::common::*;
use acp_tee::{app, AppState, Db};
use axum::body::Body;
use axum::http::{Request, StatusCode};
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

/// `{"jsonrpc":"2.0","id":ID,"method":"deep","params":` + `depth` nested
/// arrays around `inner` + `}`: `inner` sits `depth + 1` levels deep.
fn deep_request(id: u64, depth: usize, inner: &str) -> String {
    format!(
        r#"{{"jsonrpc":"2.0","id":{id},"method":"deep","params":{}{inner}{}}}"#,
        "[".repeat(depth),
        "]".repeat(depth)
    )
}

/// The issue's reproduction: a 4,500-level `params` (which overflowed the
/// recorder's stack under `--redact`), then an ordinary message, then a
/// secret 5,000 levels deep. Every frame is stored, the deep one unchanged,
/// the secret masked, and the run ends as the agent's exit, not as a kill.
#[test]
fn deep_nesting_with_record_time_redaction_loses_nothing() {
    let store = TempStore::new();
    let deep = deep_request(1, 4_500, "");
    let plain = r#"{"jsonrpc":"2.0","id":2,"method":"y"}"#;
    let secret = deep_request(3, 5_000, r#"{"token":"SECRET-DEEP","n":1}"#);
    let input = format!("{deep}\n{plain}\n{secret}\n").into_bytes();
    let out = run_with_input(tee_command(&store.db, &["--redact"], &["cat"]), input.clone());
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(out.stdout, input, "the relay forwards the original bytes");
    let trace = store.only_trace();
    assert_eq!((trace.frame_count, trace.missing_frames), (6, 0), "{trace:?}");
    assert!(!trace.end_reason.as_deref().unwrap_or("").contains("killed"), "{trace:?}");
    let frames = store.frames(trace.id);
    let raws: Vec<String> = frames.iter().map(|f| String::from_utf8(f.raw.clone()).unwrap()).collect();
    assert_eq!(raws.iter().filter(|r| **r == format!("{deep}\n")).count(), 2, "the deep frame is stored as it came");
    assert_eq!(raws.iter().filter(|r| **r == format!("{plain}\n")).count(), 2);
    let masked = deep_request(3, 5_000, r#"{"token":"[REDACTED]","n":1}"#);
    assert_eq!(raws.iter().filter(|r| **r == format!("{masked}\n")).count(), 2, "the deep secret is masked");
}

/// A million levels, a secret 5,000 levels deep and one deeper than the
/// redactor tracks ([`acp_tee::REDACT_MAX_DEPTH`]): every export
/// format, from the CLI and the API, finishes and masks both secrets; what
/// lies deeper than the limit is masked whole.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deep_frames_export_masked_from_the_cli_and_the_api() {
    use acp_tee::REDACT_MAX_DEPTH;
    let store = TempStore::new();
    let million = deep_request(1, 1_000_000, "");
    let at_5000 = deep_request(2, 5_000, r#"{"apiKey":"SECRET-5000"}"#);
    let beyond = deep_request(3, REDACT_MAX_DEPTH + 10, r#""SECRET-BEYOND""#);
    let input = format!("{million}\n{at_5000}\n{beyond}\n").into_bytes();
    let db = store.db.clone();
    let out =
        tokio::task::spawn_blocking(move || run_with_input(tee_command(&db, &[], &["cat"]), input)).await.unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    store.ended_traces(1);
    for format in ["ndjson", "json", "jsons", "perfetto"] {
        let db = store.db.clone();
        let text = tokio::task::spawn_blocking(move || export(&db, &["--format", format])).await.unwrap();
        assert!(!text.contains("SECRET-"), "{format} leaks a deep secret");
        if format.ends_with("json") {
            assert!(text.contains("[REDACTED]"), "{format}");
        }
    }
    let ndjson = export(&store.db, &["--format", "ndjson"]);
    // The million levels keep the REDACT_MAX_DEPTH brackets that are no
    // deeper than the limit (`params` is the first), then the rest is one mask.
    let (open, close) = ("[".repeat(REDACT_MAX_DEPTH), "]".repeat(REDACT_MAX_DEPTH));
    let masked = format!(r#"\"params\":{open}\"[REDACTED]\"{close}}}"#);
    assert!(ndjson.contains(&masked), "the million levels are cut at the limit");
    let router = app(AppState::new(Db::open(&store.db).unwrap(), &store.db, None, None));
    for format in ["json", "ndjson", "jsons", "perfetto"] {
        let uri = format!("/api/traces/1/export?format={format}");
        let resp = router.clone().oneshot(Request::get(&uri).body(Body::empty()).unwrap()).await.unwrap();
        assert_eq!(resp.status(), StatusCode::OK, "{format}");
        let body = resp.into_body().collect().await.unwrap().to_bytes();
        assert!(!String::from_utf8_lossy(&body).contains("SECRET-"), "{format} leaks through the API");
    }
}

/// Export, import, export with the defaults and user rules (one of which
/// matches inside `[REDACTED]`, one of which selects what the first export
/// masked): the second export is the first, byte for byte but for the
/// trace's id. A frame deeper than the limit comes back cut the same way.
#[test]
fn a_redacted_export_imported_and_exported_again_is_unchanged() {
    use acp_tee::REDACT_MAX_DEPTH;
    let store = TempStore::new();
    let mut input = session_with_secrets();
    input.extend(format!("{}\n", deep_request(9, REDACT_MAX_DEPTH + 100, r#""SECRET-DEEP""#)).into_bytes());
    let out = run_with_input(tee_command(&store.db, &[], &["cat"]), input);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    store.ended_traces(1);
    let rules = ["--redact", "[A-Z]{6,}", "--redact", "$..env", "--redact", "$.params.cwd"];
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("t.ndjson");
    let mut args = vec!["--trace", "1", "--format", "ndjson", "-o", file.to_str().unwrap()];
    args.extend(rules);
    export(&store.db, &args);
    let first = std::fs::read_to_string(&file).unwrap();
    assert_eq!(leaked(&first), Vec::<&str>::new());
    assert!(!first.contains("SECRET-DEEP") && first.contains(r#"\"cwd\":\"[REDACTED]\""#), "{first}");
    let out = Command::new(bin()).arg("import").arg("--db").arg(&store.db).arg(&file).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let mut args = vec!["--trace", "2", "--format", "ndjson"];
    args.extend(rules);
    let second = export(&store.db, &args);
    let (first, second) =
        (first.replacen(r#"{"id":1,"#, r#"{"id":_,"#, 1), second.replacen(r#"{"id":2,"#, r#"{"id":_,"#, 1));
    assert_eq!(first.lines().count(), second.lines().count());
    for (a, b) in first.lines().zip(second.lines()) {
        assert_eq!(a, b);
    }
}
