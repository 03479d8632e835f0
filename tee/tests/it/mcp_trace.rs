//! An MCP stdio server recorded as an MCP trace: the official Python MCP
//! client (`mcp` from PyPI, through `tests/peers/mcp_client.py`) against the
//! reference `mcp-server-git` (PyPI), with `acp-tee` in between
//! (`scripts/install-tools python-mcp` installs both). The trace says it is
//! MCP, its frames speak MCP, every request is paired, `check` judges it by
//! the JSON-RPC, lifecycle and MCP rules and finds nothing, `show` tells its
//! calls, and an export imported again keeps the protocol; a tool's failure
//! is marked, and a tool never listed is told.

use crate::check::check_json;
use crate::common::*;
use acp_tee_shared::api::FrameSummary;
use acp_tee_shared::{FrameKind, Protocol};
use serde_json::{json, Value};
use std::path::Path;
use std::process::{Command, Stdio};

/// `mcp-server-git` of the MCP venv.
fn mcp_server_git() -> String {
    installed_peer("mcp-venv/bin/mcp-server-git", "python-mcp")
}

/// A git repository with one commit, in `dir`.
fn repository(dir: &Path) {
    let git = |args: &[&str]| {
        let out = Command::new("git")
            .args(["-c", "user.name=t", "-c", "user.email=t@example.com", "-c", "init.defaultBranch=main"])
            .args(args)
            .current_dir(dir)
            .output()
            .unwrap();
        assert!(out.status.success(), "git {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    };
    git(&["init", "-q"]);
    std::fs::write(dir.join("README"), "hello\n").unwrap();
    git(&["add", "README"]);
    git(&["commit", "-q", "-m", "first"]);
}

/// Records the Python MCP client against `acp-tee [extra] -- mcp-server-git
/// --repository REPO` into `db`, calling `calls`; returns the client's document.
fn record(db: &Path, repo: &Path, extra: &[&str], calls: &Value) -> Value {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/peers/mcp_client.py");
    let mut command = Command::new(python_mcp());
    command.arg(script).args([bin(), "--db", db.to_str().unwrap(), "--name", "git"]).args(extra).args([
        "--",
        &mcp_server_git(),
        "--repository",
        repo.to_str().unwrap(),
    ]);
    command.stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped());
    let out = run_with_input(command, calls.to_string().into_bytes());
    assert!(out.status.success(), "the MCP client failed: {}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_slice(&out.stdout).unwrap()
}

#[test]
fn an_mcp_server_is_recorded_as_an_mcp_trace() {
    let store = TempStore::new();
    let repo = tempfile::tempdir().unwrap();
    repository(repo.path());
    let r = repo.path().to_str().unwrap();
    let calls = json!([["git_status", {"repo_path": r}], ["git_log", {"repo_path": r}]]);
    let doc = record(&store.db, repo.path(), &[], &calls);
    assert_eq!(doc["calls"][0]["result"]["isError"], false, "{doc}");
    assert!(doc["calls"][1]["result"]["content"][0]["text"].as_str().unwrap().contains("first"), "{doc}");

    let trace = store.ended_traces(1).remove(0);
    assert_eq!(trace.protocol, Some(Protocol::Mcp));
    let frames: Vec<FrameSummary> = store.open().frames_after(trace.id, 0, 10_000).unwrap();
    let rpc: Vec<&FrameSummary> = frames.iter().filter(|f| f.kind != FrameKind::Stderr).collect();
    // Every frame is MCP, its method its MCP method.
    assert!(frames.iter().all(|f| f.mcp), "{frames:#?}");
    for f in &rpc {
        assert!(f.method.is_some(), "{f:?}");
        assert_eq!(f.mcp_method, f.method, "{f:?}");
    }
    let methods: Vec<&str> =
        rpc.iter().filter(|f| f.kind != FrameKind::Response).filter_map(|f| f.method.as_deref()).collect();
    assert_eq!(
        methods,
        ["initialize", "notifications/initialized", "tools/list", "tools/call", "tools/call"],
        "{rpc:#?}"
    );
    let previews: Vec<Option<&str>> = rpc
        .iter()
        .filter(|f| f.method.as_deref() == Some("tools/call") && f.kind == FrameKind::Request)
        .map(|f| f.preview.as_deref())
        .collect();
    assert_eq!(previews, [Some("git_status"), Some("git_log")]);
    // Every request is answered by a response that names it.
    for req in rpc.iter().filter(|f| f.kind == FrameKind::Request) {
        let answer = rpc.iter().find(|f| f.reply_to_seq == Some(req.seq)).unwrap_or_else(|| panic!("{req:?} unpaired"));
        assert_eq!(answer.kind, FrameKind::Response, "{answer:?}");
        assert_eq!(answer.method, req.method);
        assert!(answer.latency_ns.is_some_and(|l| l > 0));
    }

    // The JSON-RPC rules, not ACP's: nothing to find.
    let (code, reports) = check_json(&["--db", store.db.to_str().unwrap(), "--trace", &trace.id.to_string()]);
    assert_eq!(code, 0);
    assert_eq!(reports[0].protocol, Protocol::Mcp);
    assert_eq!(reports[0].findings, Vec::new());
    assert_eq!(reports[0].by_code, Vec::new());
    let text = Command::new(bin()).args(["check", "--db", store.db.to_str().unwrap()]).output().unwrap();
    let text = String::from_utf8(text.stdout).unwrap();
    assert!(text.contains("0 errors, 0 warnings, 0 infos") && text.contains("an MCP trace"), "{text}");

    // `show` tells the calls; `list` marks the trace.
    let show = Command::new(bin()).args(["show", "--db", store.db.to_str().unwrap()]).output().unwrap();
    let show = String::from_utf8(show.stdout).unwrap();
    assert!(
        show.contains("MCP trace: 4 requests (4 answered, 0 with an error, 0 with a tool error), 1 notifications"),
        "{show}"
    );
    assert!(show.contains(" tools/call git_status: ") && show.contains(" tools/call git_log: "), "{show}");
    assert!(!show.contains("ACP session"), "{show}");
    let list = Command::new(bin()).args(["list", "--db", store.db.to_str().unwrap()]).output().unwrap();
    assert!(String::from_utf8(list.stdout).unwrap().contains("git [mcp]"));

    // An export carries the protocol, and acp-tee's import keeps it.
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("git.ndjson");
    let out = Command::new(bin())
        .args(["export", "--db", store.db.to_str().unwrap(), "--format", "ndjson", "-o", file.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let header: Value = serde_json::from_str(std::fs::read_to_string(&file).unwrap().lines().next().unwrap()).unwrap();
    assert_eq!(header["trace"]["protocol"], "mcp", "{header}");
    let other = TempStore::new();
    let out = Command::new(bin())
        .args(["import", "--db", other.db.to_str().unwrap(), file.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let imported = other.only_trace();
    assert_eq!(imported.protocol, Some(Protocol::Mcp));
    let said = |fs: &[FrameSummary]| -> Vec<_> {
        fs.iter()
            .map(|f| (f.seq, f.kind, f.method.clone(), f.mcp, f.mcp_method.clone(), f.preview.clone(), f.reply_to_seq))
            .collect()
    };
    assert_eq!(said(&other.open().frames_after(imported.id, 0, 10_000).unwrap()), said(&frames));
}

/// The real server's two ways to fail: `git_show` of a revision that does
/// not resolve is a tool error (a result with `isError: true`, no JSON-RPC
/// error), a tool it does not have a JSON-RPC error. The first is marked as
/// the tool's failure and not counted as an error; the second was never
/// listed, which `check` tells.
#[test]
fn a_real_servers_tool_failure_is_marked_and_an_unlisted_tool_is_told() {
    let store = TempStore::new();
    let repo = tempfile::tempdir().unwrap();
    repository(repo.path());
    let r = repo.path().to_str().unwrap();
    let calls =
        json!([["git_status", {"repo_path": r}], ["git_show", {"repo_path": r, "revision": "nope"}], ["git_nope", {}]]);
    let doc = record(&store.db, repo.path(), &[], &calls);
    assert_eq!(doc["calls"][1]["result"]["isError"], true, "{doc}");
    assert_eq!(doc["calls"][2]["error"]["code"], -32602, "{doc}");
    let listed: Vec<&str> = doc["tools"].as_array().unwrap().iter().map(|t| t["name"].as_str().unwrap()).collect();
    assert!(listed.contains(&"git_show") && !listed.contains(&"git_nope"), "{listed:?}");

    let trace = store.ended_traces(1).remove(0);
    assert_eq!(trace.error_count, 1, "the unknown tool's error only: a tool error is no JSON-RPC error");
    let frames: Vec<FrameSummary> = store.open().frames_after(trace.id, 0, 10_000).unwrap();
    let answers: Vec<&FrameSummary> =
        frames.iter().filter(|f| f.method.as_deref() == Some("tools/call") && f.kind != FrameKind::Request).collect();
    let said: Vec<(FrameKind, bool)> = answers.iter().map(|f| (f.kind, f.tool_error)).collect();
    assert_eq!(said, [(FrameKind::Response, false), (FrameKind::Response, true), (FrameKind::Error, false)]);
    let failed = answers[1].preview.as_deref().unwrap();
    assert!(failed.starts_with("tool error: ") && failed.contains("nope"), "{failed}");
    assert_eq!(answers[0].preview, None, "a tool that did not fail has no preview");

    // The unlisted tool, a warning: the exit status stays 0.
    let (code, reports) = check_json(&["--db", store.db.to_str().unwrap(), "--trace", &trace.id.to_string()]);
    assert_eq!(code, 0);
    let found: Vec<(&str, &[i64])> = reports[0].findings.iter().map(|f| (f.code.as_str(), f.seqs.as_slice())).collect();
    let list_answer =
        frames.iter().find(|f| f.method.as_deref() == Some("tools/list") && f.kind == FrameKind::Response);
    let nope = answers[2].reply_to_seq.unwrap();
    assert_eq!(found, [("mcp.unlisted-tool", &[list_answer.unwrap().seq, nope][..])], "{:#?}", reports[0].findings);
    let message = &reports[0].findings[0].message;
    assert!(
        message.starts_with("the client called the tool `git_nope`, which the tools/list answer of frame")
            && message.contains(&format!("(it listed {} tools: `{}`", listed.len(), listed[0])),
        "{message}"
    );

    // `show` tells the tool's failure apart from the error.
    let show = Command::new(bin()).args(["show", "--db", store.db.to_str().unwrap()]).output().unwrap();
    let show = String::from_utf8(show.stdout).unwrap();
    assert!(show.contains("MCP trace: 5 requests (5 answered, 1 with an error, 1 with a tool error)"), "{show}");
    assert!(show.contains(" tools/call git_show: ") && show.contains(", tool error: "), "{show}");
    assert!(show.contains(" tools/call git_nope: ") && show.contains(", error -32602 "), "{show}");
    let json =
        Command::new(bin()).args(["show", "--db", store.db.to_str().unwrap(), "--format", "json"]).output().unwrap();
    let json: Value = serde_json::from_slice(&json.stdout).unwrap();
    let tool_errors: Vec<&Value> =
        json["mcp"]["calls"].as_array().unwrap().iter().filter_map(|c| c.get("tool_error")).collect();
    assert_eq!(tool_errors.len(), 1, "{json}");
    assert!(tool_errors[0].as_str().unwrap().starts_with("tool error: "), "{json}");
}

#[test]
fn protocol_given_on_the_command_line_is_stored_at_the_start() {
    let store = TempStore::new();
    let repo = tempfile::tempdir().unwrap();
    repository(repo.path());
    record(&store.db, repo.path(), &["--protocol", "mcp"], &json!([]));
    let trace = store.ended_traces(1).remove(0);
    assert_eq!(trace.protocol, Some(Protocol::Mcp));
    // Every frame, from the first, is MCP.
    assert!(store.open().frames_after(trace.id, 0, 10_000).unwrap().iter().all(|f| f.mcp));
}
