//! Proxy-chain mode under the real conductor (agent-client-protocol-conductor
//! 5.0.0) with the real elizacp agent and yopo client.

use crate::common::*;
use serde_json::Value;
use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};

const PROMPT: &str = "My proxies are watching me";

fn yopo_through(components: &[String]) -> std::process::Output {
    let mut args = vec![PROMPT.to_owned(), "--".into(), peer("agent-client-protocol-conductor"), "agent".into()];
    args.extend_from_slice(components);
    let marker = unique_marker(&format!("{}", components.len()));
    let out = Command::new(peer("yopo")).args(&args).env("ACP_TEE_TEST_MARK", &marker).output().unwrap();
    // yopo SIGKILLs the conductor, which leaves its agent running. (Our
    // recorders are left alone: they finish the traces.)
    kill_marked(&marker, "elizacp");
    out
}

fn proxy(store: &TempStore, name: &str) -> String {
    format!("{} proxy --db {} --name {name}", bin(), store.db.display())
}

fn eliza() -> String {
    format!("{} --deterministic acp", peer("elizacp"))
}

fn assert_logical_session(store: &TempStore, trace_id: i64) {
    let frames = exported_frames(&store.db, trace_id);
    for method in ["initialize", "session/new", "session/prompt"] {
        assert_paired(&frames, method);
    }
    let updates: Vec<&Value> = frames.iter().filter(|f| f["method"] == "session/update").collect();
    assert!(!updates.is_empty());
    for u in &updates {
        assert_eq!((u["dir"].as_str(), u["kind"].as_str()), (Some("agent_to_client"), Some("notification")));
        // The envelope is what came from the successor side: a proxy/successor wrapper.
        let envelope: Value = serde_json::from_str(u["envelope"].as_str().unwrap()).unwrap();
        assert_eq!(envelope["method"], "proxy/successor");
        assert_eq!(envelope["params"]["method"], "session/update");
    }
    // Every routed message keeps its other side of the hop.
    assert!(frames.iter().all(|f| f["envelope"].is_string()), "a frame without its envelope");
}

#[test]
fn one_proxy_changes_nothing_and_records_the_session() {
    let direct = yopo_through(&[eliza()]);
    assert!(direct.status.success());
    let store = TempStore::new();
    let teed = yopo_through(&[proxy(&store, "hop"), eliza()]);
    assert!(teed.status.success(), "{}", String::from_utf8_lossy(&teed.stderr));
    assert_eq!(String::from_utf8(teed.stdout).unwrap(), String::from_utf8(direct.stdout).unwrap());
    let trace = store.only_trace();
    assert_eq!(trace.mode, "proxy");
    assert_eq!(trace.name.as_deref(), Some("hop"));
    assert_logical_session(&store, trace.id);
}

#[test]
fn two_proxies_in_one_chain_record_two_traces() {
    let store = TempStore::new();
    let out = yopo_through(&[proxy(&store, "outer"), proxy(&store, "inner"), eliza()]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let traces = store.ended_traces(2);
    let mut names: Vec<&str> = traces.iter().map(|t| t.name.as_deref().unwrap()).collect();
    names.sort();
    assert_eq!(names, ["inner", "outer"]);
    for t in &traces {
        assert_logical_session(&store, t.id);
    }
}

/// Talks to a conductor chain as a scripted client; returns the raw response
/// line to each request.
fn scripted_client(components: &[String], requests: &[&str]) -> Vec<String> {
    let mut child = Command::new(peer("agent-client-protocol-conductor"))
        .arg("agent")
        .args(components)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let mut answers = Vec::new();
    for req in requests {
        let id = serde_json::from_str::<Value>(req).unwrap()["id"].clone();
        writeln!(stdin, "{req}").unwrap();
        let answer = loop {
            let line = lines.next().expect("the conductor closed its output").unwrap();
            let msg: Value = serde_json::from_str(&line).unwrap();
            if msg.get("method").is_none() && msg["id"] == id {
                break line;
            }
        };
        answers.push(answer);
    }
    drop(stdin);
    child.wait().unwrap();
    answers
}

#[test]
fn an_error_from_the_agent_reaches_the_client_unchanged_and_is_recorded() {
    let requests = [
        r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1,"clientCapabilities":{}}}"#,
        r#"{"jsonrpc":"2.0","id":2,"method":"_nosuch/method","params":{"x":1}}"#,
    ];
    let direct = scripted_client(&[eliza()], &requests);
    let store = TempStore::new();
    let teed = scripted_client(&[proxy(&store, "errors"), eliza()], &requests);
    assert_eq!(teed, direct);
    let error: Value = serde_json::from_str(&teed[1]).unwrap();
    assert_eq!(error["error"]["code"], -32601);

    let trace = store.only_trace();
    assert_eq!(trace.error_count, 1);
    let frames = exported_frames(&store.db, trace.id);
    let err = frames.iter().find(|f| f["kind"] == "error").expect("no error frame");
    assert_eq!(err["dir"], "agent_to_client");
    assert_eq!(err["method"], "_nosuch/method");
    assert!(err["latency_ns"].as_i64().unwrap() > 0);
    let recorded: Value = serde_json::from_str(err["raw"].as_str().unwrap()).unwrap();
    assert_eq!(recorded["error"], error["error"]);
}
