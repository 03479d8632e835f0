//! The whole agent: acpx (npm) → acp-tee → an agent on the official Python
//! ACP SDK (`tests/peers/py_mcp_agent.py`) that starts the MCP servers of
//! its `mcpServers` with the official Python MCP SDK; the one server is the
//! reference `mcp-server-time` (PyPI) wrapped in `acp-tee --name time`.
//! The MCP trace is linked to the ACP trace while recording, `list` shows
//! it under its parent, `show` puts its `tools/call` under the ACP tool call
//! it served (by time, or by the `_meta` hint), a failing tool marks its
//! call, the API tells the family, and an export with the children imports
//! as a family again.

use crate::common::*;
use acp_tee_shared::api::TraceFamily;
use acp_tee_shared::Protocol;
use serde_json::Value;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

/// `mcp-server-time` of the MCP venv.
fn mcp_server_time() -> String {
    installed_peer("mcp-venv/bin/mcp-server-time", "python-mcp")
}

/// Runs one acpx turn `prompt` against the test agent (with `flags`)
/// wrapped in acp-tee, its MCP server `time` wrapped in acp-tee too, both
/// recording into `db`.
pub(crate) fn record(db: &Path, prompt: &str, flags: &[&str]) {
    let dir = tempfile::tempdir().unwrap();
    let (home, work) = (dir.path().join("home"), dir.path().join("work"));
    std::fs::create_dir_all(&home).unwrap();
    std::fs::create_dir_all(&work).unwrap();
    let config = serde_json::json!({"mcpServers": [{
        "name": "time",
        "command": bin(),
        "args": ["--db", db, "--name", "time", "--", mcp_server_time()],
    }]});
    let config_file = dir.path().join("mcp.json");
    std::fs::write(&config_file, config.to_string()).unwrap();
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/peers/py_mcp_agent.py");
    let agent = [bin().to_owned(), "--db".into(), db.display().to_string(), "--".into(), python_mcp()]
        .into_iter()
        .chain([script.display().to_string()])
        .chain(flags.iter().map(|f| f.to_string()))
        .map(|a| format!("'{}'", a.replace('\'', r"'\''")))
        .collect::<Vec<_>>()
        .join(" ");
    let mut child = Command::new(acpx())
        .args(["--approve-all", "--cwd", work.to_str().unwrap(), "--mcp-config", config_file.to_str().unwrap()])
        .args(["--agent", &agent, "exec", prompt])
        .env("HOME", &home)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let status = wait_within(&mut child, Duration::from_secs(120)).expect("acpx hung");
    assert!(status.success(), "acpx failed: {status}");
}

fn run(args: &[&str]) -> String {
    let out = Command::new(bin()).args(args).output().unwrap();
    assert!(out.status.success(), "acp-tee {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).unwrap()
}

/// `show --format json` of trace `id`: its one turn's tool calls.
fn tool_calls(db: &Path, id: i64) -> Vec<Value> {
    let doc: Value =
        serde_json::from_str(&run(&["show", "--db", db.to_str().unwrap(), &id.to_string(), "--format", "json"]))
            .unwrap();
    let turns = doc["sessions"][0]["turns"].as_array().unwrap();
    assert_eq!(turns.len(), 1, "{doc}");
    turns[0]["tool_calls"].as_array().unwrap().clone()
}

/// When the tool call reached `status`.
fn status_t(call: &Value, status: &str) -> i64 {
    call["statuses"].as_array().unwrap().iter().find(|s| s["status"] == status).unwrap()["t_ns"].as_i64().unwrap()
}

#[test]
fn an_mcp_server_the_agent_started_is_a_linked_child_shown_under_the_tool_call_it_served() {
    let store = TempStore::new();
    record(&store.db, r#"get_current_time {"timezone": "UTC"}"#, &[]);
    let traces = store.ended_traces(2);
    let (acp, mcp) = (&traces[0], &traces[1]);
    assert_eq!((acp.protocol, mcp.protocol), (Some(Protocol::Acp), Some(Protocol::Mcp)));
    assert_eq!(acp.parent_trace, None);
    assert_eq!(mcp.parent_trace, Some(acp.id), "the MCP trace is linked to the ACP trace of its agent");
    assert_eq!(mcp.name.as_deref(), Some("time"));
    // acpx closes the agent with a SIGTERM to every process under it: the
    // recorders store all the same.
    assert_eq!((acp.missing_frames, mcp.missing_frames), (0, 0), "{:?} / {:?}", acp.end_reason, mcp.end_reason);

    // The chain: the MCP relay's parent is the agent the ACP relay started,
    // and the chain ends at the ACP relay.
    let conn = rusqlite::Connection::open(&store.db).unwrap();
    let keys = |id: i64| -> (Option<String>, Option<String>, Option<String>) {
        conn.query_row("SELECT relay_key, ancestors, agent_key FROM traces WHERE id = ?1", [id], |r| {
            Ok((r.get(0)?, r.get(1)?, r.get(2)?))
        })
        .unwrap()
    };
    let ((acp_relay, _, acp_agent), (_, mcp_chain, mcp_agent)) = (keys(acp.id), keys(mcp.id));
    let chain: Vec<String> = serde_json::from_str(&mcp_chain.unwrap()).unwrap();
    assert_eq!(chain.first(), acp_agent.as_ref(), "{chain:?}");
    assert_eq!(chain.last(), acp_relay.as_ref(), "{chain:?}");
    assert!(mcp_agent.is_some(), "wrap mode names its agent");

    // `list`: the child right under its parent.
    let db = store.db.to_str().unwrap();
    let list = run(&["list", "--db", db]);
    let rows: Vec<&str> = list.lines().skip(1).collect();
    assert!(rows[0].starts_with(&format!("{}  ", acp.id)) && rows[1].contains("└ time [mcp]"), "{list}");

    // `show`: the tools/call under the tool call, sent while it was in
    // progress, answered without error.
    let calls = tool_calls(&store.db, acp.id);
    assert_eq!(calls.len(), 1);
    let mcp_calls = calls[0]["mcp_calls"].as_array().unwrap();
    assert_eq!(mcp_calls.len(), 1, "{calls:?}");
    let m = &mcp_calls[0];
    assert_eq!((m["trace_id"].as_i64(), m["method"].as_str()), (Some(mcp.id), Some("tools/call")));
    assert_eq!((m["name"].as_str(), m["server"].as_str()), (Some("get_current_time"), Some("mcp-time")));
    assert_eq!((m["linked_by"].as_str(), m["candidates"].as_u64()), (Some("time"), Some(1)));
    assert!(m.get("error").is_none(), "{m}");
    // Each relay stamps what it reads when it reads it: the agent sent the
    // request after its in_progress, but the ACP relay may read that later
    // than the MCP relay reads the request (the rule's early tolerance).
    let t = m["t_ns"].as_i64().unwrap();
    let early = 50_000_000;
    assert!(status_t(&calls[0], "pending") - early <= t && t <= status_t(&calls[0], "completed"), "{calls:?}");
    assert!(m["latency_ns"].as_i64().unwrap() > 0);
    let text = run(&["show", "--db", db, &acp.id.to_string()]);
    assert!(text.contains(&format!("MCP servers recorded: mcp-time (trace {})", mcp.id)), "{text}");
    assert!(text.contains("      mcp mcp-time tools/call get_current_time (trace"), "{text}");

    // The API tells the family, with the child's start on the parent's clock.
    let served = Served::start(&store.db, &[]);
    let family: TraceFamily = served.get(&format!("/api/traces/{}/family", acp.id));
    assert_eq!(family.children.len(), 1);
    assert_eq!((family.children[0].meta.id, family.children[0].server.as_deref()), (mcp.id, Some("mcp-time")));
    let parent_start = chrono::DateTime::parse_from_rfc3339(&acp.started_at).unwrap();
    let child_start = chrono::DateTime::parse_from_rfc3339(&mcp.started_at).unwrap();
    assert_eq!(family.children[0].offset_ns, (child_start - parent_start).num_nanoseconds().unwrap());
    assert!(family.children[0].offset_ns > 0);
    let of_child: TraceFamily = served.get(&format!("/api/traces/{}/family", mcp.id));
    assert_eq!((of_child.parent_trace, of_child.children.len()), (Some(acp.id), 0));

    // OTLP: the MCP call is a span under the execute_tool span it served.
    let otlp = run(&["export", "--db", db, &acp.id.to_string(), "--format", "otlp"]);
    let spans: Vec<Value> = otlp
        .lines()
        .flat_map(|l| {
            let doc: Value = serde_json::from_str(l).unwrap();
            doc["resourceSpans"][0]["scopeSpans"][0]["spans"].as_array().unwrap().clone()
        })
        .collect();
    let named = |prefix: &str| -> Vec<&Value> {
        spans.iter().filter(|s| s["name"].as_str().unwrap().starts_with(prefix)).collect()
    };
    let (tool, call) = (named("execute_tool"), named("tools/call get_current_time"));
    assert_eq!((tool.len(), call.len()), (1, 1), "{otlp}");
    assert_eq!(call[0]["parentSpanId"], tool[0]["spanId"]);
    assert_eq!(call[0]["traceId"], tool[0]["traceId"]);
    assert_eq!(call[0]["kind"], 3, "a CLIENT span");
    let attr = |s: &Value, k: &str| {
        s["attributes"].as_array().unwrap().iter().find(|a| a["key"] == k).map(|a| a["value"]["stringValue"].clone())
    };
    assert_eq!(attr(call[0], "mcp.method.name"), Some(Value::from("tools/call")));
    assert_eq!(attr(call[0], "gen_ai.tool.name"), Some(Value::from("get_current_time")));
    let ns = |s: &Value, k: &str| s[k].as_str().unwrap().parse::<u64>().unwrap();
    assert!(ns(tool[0], "startTimeUnixNano") <= ns(call[0], "startTimeUnixNano") + early as u64);
    assert!(ns(call[0], "endTimeUnixNano") <= ns(tool[0], "endTimeUnixNano"));

    // The MCP trace alone is clean by the checks.
    let out = Command::new(bin()).args(["check", "--db", db, &mcp.id.to_string()]).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stdout));
}

#[test]
fn a_failing_mcp_tool_marks_its_tool_call_and_a_meta_hint_links_a_request_sent_first() {
    let store = TempStore::new();
    // --mcp-first: tools/call is answered before the ACP tool_call
    // announces it (so time alone would not link it); --meta: the request
    // names the tool call in its _meta.
    record(&store.db, r#"get_current_time {"timezone": "Not/AZone"}"#, &["--meta", "--mcp-first"]);
    let traces = store.ended_traces(2);
    let calls = tool_calls(&store.db, traces[0].id);
    let call = &calls[0];
    assert_eq!(call["status"], "failed");
    let m = &call["mcp_calls"][0];
    assert_eq!(m["linked_by"], "meta", "{call}");
    assert!(m["t_ns"].as_i64().unwrap() < call["first_t_ns"].as_i64().unwrap(), "sent before the tool call: {call}");
    let error = m["error"].as_str().unwrap();
    assert!(error.contains("Invalid timezone"), "the isError result's text: {error}");
    let text = run(&["show", "--db", store.db.to_str().unwrap(), &traces[0].id.to_string()]);
    assert!(text.contains("→ failed after") && text.contains("(named by its _meta)"), "{text}");
    // In OTLP the MCP span says it failed and why.
    let otlp = run(&["export", "--db", store.db.to_str().unwrap(), &traces[0].id.to_string(), "--format", "otlp"]);
    let failed = otlp.lines().flat_map(|l| {
        let doc: Value = serde_json::from_str(l).unwrap();
        doc["resourceSpans"][0]["scopeSpans"][0]["spans"].as_array().unwrap().clone()
    });
    let call: Vec<Value> = failed.filter(|s| s["name"] == "tools/call get_current_time").collect();
    assert_eq!(call.len(), 1, "{otlp}");
    assert_eq!(call[0]["status"]["code"], 2, "{}", call[0]);
    assert!(call[0]["status"]["message"].as_str().unwrap().contains("Invalid timezone"));
}

#[test]
fn a_family_exported_with_its_children_imports_as_a_family() {
    let store = TempStore::new();
    record(&store.db, r#"get_current_time {"timezone": "UTC"}"#, &[]);
    let traces = store.ended_traces(2);
    // An MCP server recorded on its own, under no ACP trace, is nobody's child.
    let alone = Command::new(bin())
        .args(["--db", store.db.to_str().unwrap(), "--name", "alone", "--", &mcp_server_time()])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .status()
        .unwrap();
    assert!(alone.success());
    let all = store.ended_traces(3);
    assert_eq!(all[2].parent_trace, None, "{:?}", all[2]);

    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("family.json");
    let db = store.db.to_str().unwrap();
    run(&["export", "--db", db, &traces[0].id.to_string(), "--with-children", "-o", file.to_str().unwrap()]);
    let doc: Value = serde_json::from_slice(&std::fs::read(&file).unwrap()).unwrap();
    let exported: Vec<(i64, Option<i64>)> = doc["traces"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| (t["id"].as_i64().unwrap(), t["parent_trace"].as_i64()))
        .collect();
    assert_eq!(exported, [(traces[0].id, None), (traces[1].id, Some(traces[0].id))]);
    // Without --with-children: the trace alone, still naming its parent.
    let one: Value = serde_json::from_str(&run(&["export", "--db", db, &traces[1].id.to_string()])).unwrap();
    assert_eq!(one["traces"].as_array().unwrap().len(), 1);

    // Imported into a store that already holds traces: new ids, linked.
    let other = TempStore::new();
    run(&["import", "--db", other.db.to_str().unwrap(), file.to_str().unwrap()]);
    run(&["import", "--db", other.db.to_str().unwrap(), file.to_str().unwrap()]);
    let imported = other.ended_traces(4);
    let links: Vec<(i64, Option<i64>)> = imported.iter().map(|t| (t.id, t.parent_trace)).collect();
    assert_eq!(links, [(1, None), (2, Some(1)), (3, None), (4, Some(3))]);
    // Removing a parent leaves its child, naming no parent.
    run(&["rm", "--db", other.db.to_str().unwrap(), "3"]);
    let left: Vec<(i64, Option<i64>)> =
        other.open().list_traces().unwrap().iter().map(|t| (t.id, t.parent_trace)).collect();
    assert_eq!(left, [(4, None), (2, Some(1)), (1, None)]);
    // The child alone imports without a parent: the file does not hold it.
    let lone = dir.path().join("child.json");
    std::fs::write(&lone, one.to_string()).unwrap();
    let third = TempStore::new();
    run(&["import", "--db", third.db.to_str().unwrap(), lone.to_str().unwrap()]);
    assert_eq!(third.only_trace().parent_trace, None);
}

#[test]
fn a_child_with_more_requests_than_are_read_says_so_and_a_tool_call_lists_a_bounded_number() {
    let store = TempStore::new();
    record(&store.db, r#"get_current_time {"timezone": "UTC"}"#, &[]);
    let traces = store.ended_traces(2);
    let db = store.db.to_str().unwrap();
    let mut doc: Value =
        serde_json::from_str(&run(&["export", "--db", db, &traces[0].id.to_string(), "--with-children"])).unwrap();
    // The child gets 10,050 more copies of its real tools/call, each with
    // an id of its own, sent when the real one was (inside the tool call).
    let child = &mut doc["traces"][1];
    let frames = child["frames"].as_array_mut().unwrap();
    let call = frames.iter().find(|f| f["method"] == "tools/call" && f["kind"] == "request").unwrap().clone();
    let mut seq = frames.iter().map(|f| f["seq"].as_i64().unwrap()).max().unwrap();
    for n in 0..10_050 {
        seq += 1;
        let mut copy = call.clone();
        let mut raw: Value = serde_json::from_str(copy["raw"].as_str().unwrap()).unwrap();
        raw["id"] = Value::from(format!("copy-{n}"));
        copy["raw"] = Value::from(format!("{raw}\n"));
        copy["id"] = raw["id"].clone();
        copy["seq"] = Value::from(seq);
        frames.push(copy);
    }
    let count = frames.len();
    child["frame_count"] = Value::from(count);
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("big.json");
    std::fs::write(&file, doc.to_string()).unwrap();
    let other = TempStore::new();
    run(&["import", "--db", other.db.to_str().unwrap(), file.to_str().unwrap()]);

    let odb = other.db.to_str().unwrap();
    let text = run(&["show", "--db", odb, "1"]);
    assert!(text.contains("note: MCP trace 2 was read in part"), "{text}");
    assert!(
        text.contains("… 9936 more MCP calls not listed"),
        "the tool call lists 64 MCP calls and counts the rest read: {text}"
    );
    let json: Value = serde_json::from_str(&run(&["show", "--db", odb, "1", "--format", "json"])).unwrap();
    assert_eq!(json["mcp_read_in_part"], serde_json::json!([2]));
    let call = &json["sessions"][0]["turns"][0]["tool_calls"][0];
    assert_eq!(call["mcp_calls"].as_array().unwrap().len(), 64);
    // 10,000 requests read, of which the 64 listed and the rest counted.
    assert_eq!(call["mcp_calls_left_out"], 10_000 - 64);
}
