//! An MCP stdio server recorded as an MCP trace: the official Python MCP
//! client (`mcp` from PyPI, through `tests/peers/mcp_client.py`) against the
//! reference `mcp-server-git` (PyPI), with `acp-tee` in between
//! (`scripts/install-tools python-mcp` installs both). The trace says it is
//! MCP, its frames speak MCP, every request is paired, `check` judges it by
//! the JSON-RPC rules and finds nothing, `show` tells its calls, and an
//! export imported again keeps the protocol.

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
    assert!(show.contains("MCP trace: 4 requests (4 answered, 0 with an error), 1 notifications"), "{show}");
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
