//! OpenTelemetry export (#18) against a real backend: Arize Phoenix from
//! PyPI (`phoenix serve`, installed by `scripts/install-tools phoenix` into
//! `~/.cache/acp-tee-peers/phoenix-venv`), which takes OTLP/HTTP at
//! `/v1/traces` and gives the spans back through its REST API. A session of
//! yopo with the official Python SDK's agent (`tests/peers/py_agent.py`:
//! a tool call that waits for permission) is recorded with
//! `--otlp-endpoint`, another is stored and sent by `export
//! --otlp-endpoint`, and both are read back from Phoenix. A collector that
//! is down, or that accepts and never answers, leaves forwarding byte-exact
//! and the recording complete.

use crate::common::*;
use serde_json::Value;
use std::collections::HashSet;
use std::io::{BufRead, BufReader, Write};
use std::net::TcpListener;
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// How long Phoenix may take to start (it migrates its database first; on
/// a loaded machine this took over a minute).
const PHOENIX_START: Duration = Duration::from_secs(300);

/// How long spans may take to show in Phoenix after they were sent.
const SPANS_SHOW: Duration = Duration::from_secs(60);

/// A free port on 127.0.0.1 (nothing listens on it once this returns).
fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

/// `phoenix serve` on ports of its own, its database in a temporary
/// directory; killed (its process group) when dropped.
struct Phoenix {
    child: Child,
    port: u16,
    _dir: tempfile::TempDir,
}

impl Phoenix {
    fn start() -> Phoenix {
        let phoenix = installed_peer("phoenix-venv/bin/phoenix", "phoenix");
        let dir = tempfile::tempdir().unwrap();
        let (port, grpc) = (free_port(), free_port());
        let log = std::fs::File::create(dir.path().join("phoenix.log")).unwrap();
        let child = Command::new(phoenix)
            .arg("serve")
            .env("PHOENIX_PORT", port.to_string())
            .env("PHOENIX_GRPC_PORT", grpc.to_string())
            .env("PHOENIX_HOST", "127.0.0.1")
            .env("PHOENIX_WORKING_DIR", dir.path())
            .env("PHOENIX_TELEMETRY_ENABLED", "false")
            .stdin(Stdio::null())
            .stdout(log.try_clone().unwrap())
            .stderr(log)
            .process_group(0)
            .spawn()
            .expect("start phoenix serve");
        let mut phoenix = Phoenix { child, port, _dir: dir };
        let deadline = Instant::now() + PHOENIX_START;
        while ureq::get(&format!("{}/v1/projects", phoenix.url())).call().is_err() {
            if let Some(status) = phoenix.child.try_wait().unwrap() {
                let log = std::fs::read_to_string(phoenix._dir.path().join("phoenix.log")).unwrap_or_default();
                panic!("phoenix serve exited ({status}) before it answered:\n{log}");
            }
            assert!(Instant::now() < deadline, "phoenix serve did not answer within {PHOENIX_START:?}");
            std::thread::sleep(Duration::from_millis(200));
        }
        phoenix
    }

    fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// The spans of trace `trace_id` (hex) Phoenix holds.
    fn spans(&self, trace_id: &str) -> Vec<Value> {
        let url = format!("{}/v1/projects/default/spans?limit=1000&trace_id={trace_id}", self.url());
        match ureq::get(&url).call() {
            Ok(resp) => resp.into_json::<Value>().unwrap()["data"].as_array().cloned().unwrap_or_default(),
            Err(_) => Vec::new(),
        }
    }

    /// Waits until Phoenix holds every span of `ids` (trace id, span id) and
    /// returns the spans of their traces.
    fn wait_for(&self, ids: &[(String, String)]) -> Vec<Value> {
        let traces: HashSet<&str> = ids.iter().map(|(t, _)| t.as_str()).collect();
        let deadline = Instant::now() + SPANS_SHOW;
        loop {
            let spans: Vec<Value> = traces.iter().flat_map(|t| self.spans(t)).collect();
            let have: HashSet<&str> = spans.iter().filter_map(|s| s["context"]["span_id"].as_str()).collect();
            let missing: Vec<_> = ids.iter().filter(|(_, s)| !have.contains(s.as_str())).collect();
            if missing.is_empty() {
                return spans;
            }
            assert!(Instant::now() < deadline, "phoenix lacks spans {missing:?} after {SPANS_SHOW:?}; has {spans:#?}");
            std::thread::sleep(Duration::from_millis(100));
        }
    }
}

impl Drop for Phoenix {
    fn drop(&mut self) {
        // SAFETY: kill(2) on the process group of the child this test started.
        unsafe { libc::kill(-(self.child.id() as i32), libc::SIGKILL) };
        let _ = self.child.wait();
    }
}

/// `yopo PROMPT -- acp-tee --db DB EXTRA... -- python py_agent.py`, run to
/// its end.
fn record_with_yopo(db: &Path, extra: &[&str]) {
    let agent = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/peers/py_agent.py");
    let mut cmd = Command::new(peer("yopo"));
    cmd.arg("please look at README.md").arg("--").arg(bin()).arg("--db").arg(db).args(extra);
    cmd.arg("--").arg(python_acp()).arg(agent).current_dir(db.parent().unwrap());
    cmd.stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped());
    let mut child = cmd.spawn().expect("spawn yopo");
    let stderr = read_to_end_on_thread(child.stderr.take().unwrap());
    let _stdout = read_to_end_on_thread(child.stdout.take().unwrap());
    let status = wait_within(&mut child, Duration::from_secs(120)).expect("yopo hung");
    let stderr = String::from_utf8_lossy(&stderr.recv().unwrap().0).into_owned();
    assert!(status.success(), "yopo failed: {stderr}");
    assert!(!stderr.contains("otlp:"), "the export complained: {stderr}");
}

/// The spans `acp-tee export --format otlp` writes for trace `id`, as
/// `(trace id, span id, name)`.
fn exported_spans(db: &Path, id: i64) -> Vec<(String, String, String)> {
    let out = Command::new(bin())
        .args(["export", "--db"])
        .arg(db)
        .args(["--format", "otlp", "--trace", &id.to_string()])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let mut spans = Vec::new();
    for line in String::from_utf8(out.stdout).unwrap().lines() {
        let req: Value = serde_json::from_str(line).unwrap();
        for rs in req["resourceSpans"].as_array().unwrap() {
            for ss in rs["scopeSpans"].as_array().unwrap() {
                for s in ss["spans"].as_array().unwrap() {
                    let field = |k: &str| s[k].as_str().unwrap().to_owned();
                    spans.push((field("traceId"), field("spanId"), field("name")));
                }
            }
        }
    }
    spans
}

/// The span named `name` (or starting so, with a trailing `*`).
fn span<'a>(spans: &'a [Value], name: &str) -> &'a Value {
    let fits = |s: &&Value| match name.strip_suffix('*') {
        Some(prefix) => s["name"].as_str().unwrap_or("").starts_with(prefix),
        None => s["name"] == name,
    };
    spans.iter().find(fits).unwrap_or_else(|| panic!("no span {name} in {spans:#?}"))
}

/// Checks the turn, its tool call and the permission wait as Phoenix gives
/// them back.
fn assert_turn_in_phoenix(spans: &[Value]) {
    let turn = span(spans, "invoke_agent acp-tee-py-agent");
    let a = &turn["attributes"];
    assert_eq!(a["gen_ai.operation.name"], "invoke_agent");
    assert_eq!(a["gen_ai.agent.name"], "acp-tee-py-agent");
    assert_eq!(a["gen_ai.conversation.id"], "py-session-1");
    assert_eq!(a["gen_ai.response.finish_reasons"], serde_json::json!(["end_turn"]));
    assert_eq!(a["rpc.method"], "session/prompt");
    assert!(a["gen_ai.usage.input_tokens"].as_i64().unwrap() > 0, "{turn:#}");
    assert!(a["gen_ai.response.time_to_first_chunk"].as_f64().is_some(), "{turn:#}");
    let session = span(spans, "acp.session");
    assert_eq!(turn["parent_id"], session["context"]["span_id"]);

    let tool = span(spans, "execute_tool *");
    let t = &tool["attributes"];
    assert_eq!(t["gen_ai.operation.name"], "execute_tool");
    assert_eq!(t["gen_ai.tool.call.id"], "call-1");
    assert_eq!(t["acp.tool.kind"], "edit");
    assert_eq!(t["acp.tool.status"], "completed");
    assert_eq!(tool["parent_id"], turn["context"]["span_id"]);
    let permission = span(spans, "session/request_permission");
    assert_eq!(permission["parent_id"], tool["context"]["span_id"]);
    assert_eq!(permission["attributes"]["acp.permission.outcome"], "selected");
}

#[test]
fn phoenix_gets_the_spans_of_a_live_recording_and_of_an_exported_one() {
    let phoenix = Phoenix::start();
    let endpoint = format!("--otlp-endpoint={}", phoenix.url());

    // Live: spans sent by the recorder as the turn and tool call end.
    let live = TempStore::new();
    record_with_yopo(&live.db, &[&endpoint]);
    let id = live.only_trace().id;
    // A re-export gives the ids the recorder sent: the spans are found by them.
    let ids: Vec<(String, String)> = exported_spans(&live.db, id).into_iter().map(|(t, s, _)| (t, s)).collect();
    let spans = phoenix.wait_for(&ids);
    assert_turn_in_phoenix(&spans);
    let live_traces: HashSet<String> = ids.into_iter().map(|(t, _)| t).collect();

    // From the store: a run recorded without OTLP, sent by `export`.
    let stored = TempStore::new();
    record_with_yopo(&stored.db, &[]);
    let id = stored.only_trace().id;
    let out = Command::new(bin())
        .args(["export", "--db"])
        .arg(&stored.db)
        .args(["--trace", &id.to_string()])
        .arg(format!("--otlp-endpoint={}/v1/traces", phoenix.url()))
        .env("OTEL_SERVICE_NAME", "acp-tee-test")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(stderr.contains("sent "), "{stderr}");
    let exported = exported_spans(&stored.db, id);
    let ids: Vec<(String, String)> = exported.iter().map(|(t, s, _)| (t.clone(), s.clone())).collect();
    let spans = phoenix.wait_for(&ids);
    assert_turn_in_phoenix(&spans);
    assert!(exported.iter().all(|(t, _, _)| !live_traces.contains(t)), "another recording, other traces");

    // Proxy mode: `acp-tee proxy --otlp-endpoint` in a conductor chain
    // in front of elizacp, driven by yopo.
    let chained = TempStore::new();
    let proxy = format!("{} proxy --db {} --name hop {endpoint}", bin(), chained.db.display());
    let marker = unique_marker("otlp-proxy");
    let out = Command::new(peer("yopo"))
        .args(["hello there", "--", &peer("agent-client-protocol-conductor"), "agent", &proxy])
        .arg(format!("{} --deterministic acp", peer("elizacp")))
        .env("ACP_TEE_TEST_MARK", &marker)
        .output()
        .unwrap();
    // yopo SIGKILLs the conductor, which leaves its agent running.
    kill_marked(&marker, "elizacp");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let id = chained.only_trace().id;
    let ids: Vec<(String, String)> = exported_spans(&chained.db, id).into_iter().map(|(t, s, _)| (t, s)).collect();
    let spans = phoenix.wait_for(&ids);
    let turn = span(&spans, "invoke_agent*");
    assert_eq!(turn["attributes"]["gen_ai.response.finish_reasons"], serde_json::json!(["end_turn"]));
    assert_eq!(turn["parent_id"], span(&spans, "acp.session")["context"]["span_id"]);

    // The whole agent: an MCP server the agent started, recorded as a
    // child trace; its tools/call arrives under the execute_tool span.
    let family = TempStore::new();
    crate::mcp_family::record(&family.db, r#"get_current_time {"timezone": "UTC"}"#, &[]);
    let id = family.ended_traces(2)[0].id;
    let out = Command::new(bin())
        .args(["export", "--db"])
        .arg(&family.db)
        .args(["--trace", &id.to_string(), &endpoint])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let ids: Vec<(String, String)> = exported_spans(&family.db, id).into_iter().map(|(t, s, _)| (t, s)).collect();
    let spans = phoenix.wait_for(&ids);
    let call = span(&spans, "tools/call get_current_time");
    assert_eq!(call["parent_id"], span(&spans, "execute_tool*")["context"]["span_id"]);
    assert_eq!(call["attributes"]["mcp.method.name"], "tools/call");
    assert_eq!(call["attributes"]["gen_ai.tool.name"], "get_current_time");
}

/// Turns of the conversation a `cat` agent echoes: two spans end per turn,
/// so the run ends several times `QUEUE_SPANS` spans (an exporter that made
/// the recorder wait for a hanging collector would hold it for minutes).
const TURNS: usize = 10_000;

/// JSON-RPC lines a `cat` agent echoes: per turn a prompt and its answer,
/// both of which the echo pairs, so spans end all along the run.
fn conversation(turns: usize) -> Vec<u8> {
    let mut input = Vec::new();
    for i in 0..turns {
        writeln!(
            input,
            r#"{{"jsonrpc":"2.0","id":{i},"method":"session/prompt","params":{{"sessionId":"s","prompt":[{{"type":"text","text":"turn {i}"}}]}}}}"#
        )
        .unwrap();
        writeln!(input, r#"{{"jsonrpc":"2.0","id":{i},"result":{{"stopReason":"end_turn"}}}}"#).unwrap();
    }
    input
}

/// Runs `acp-tee --otlp-endpoint=URL -- cat` over a conversation, holding
/// stdin open until every byte came back and `wait_stderr` (if any) showed
/// on its stderr; checks forwarding was byte-exact and the recording
/// complete. Returns acp-tee's stderr and the recorder's pid.
fn run_cat_against(url: &str, wait_stderr: Option<&str>) -> (String, u32, TempStore) {
    let store = TempStore::new();
    let input = conversation(TURNS);
    let mut cmd = tee_command(&store.db, &[&format!("--otlp-endpoint={url}")], &["cat"]);
    let mut child = cmd.spawn().unwrap();
    let recorder = recorder_of(child.id());
    let mut stdin = child.stdin.take().unwrap();
    let feed = input.clone();
    let feeder = std::thread::spawn(move || {
        stdin.write_all(&feed).unwrap();
        stdin
    });
    let out = read_exact_from(&mut child, input.len());
    assert!(out == input, "forwarding changed the bytes");
    let stdin = feeder.join().unwrap();
    let mut stderr = BufReader::new(child.stderr.take().unwrap());
    let mut said = String::new();
    if let Some(wanted) = wait_stderr {
        // The relay is still running: the recorder's warnings reach its stderr.
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let mut line = String::new();
            while stderr.read_line(&mut line).unwrap_or(0) > 0 {
                let _ = tx.send(std::mem::take(&mut line));
            }
        });
        let deadline = Instant::now() + Duration::from_secs(60);
        while !said.contains(wanted) {
            let left = deadline.saturating_duration_since(Instant::now());
            match rx.recv_timeout(left) {
                Ok(line) => said.push_str(&line),
                Err(_) => panic!("acp-tee's stderr never said `{wanted}`: {said}"),
            }
        }
    }
    drop(stdin);
    let status = wait_within(&mut child, Duration::from_secs(60)).expect("acp-tee hung");
    assert!(status.success());
    let trace = store.only_trace();
    assert_eq!(trace.frame_count, 4 * TURNS as i64, "every frame recorded");
    assert_eq!(trace.missing_frames, 0);
    assert_eq!(store.stream(trace.id, acp_tee_shared::Direction::ClientToAgent), input);
    assert_eq!(store.stream(trace.id, acp_tee_shared::Direction::AgentToClient), input);
    (said, recorder, store)
}

#[test]
fn a_collector_that_is_down_leaves_forwarding_byte_exact_and_the_recording_complete() {
    let url = format!("http://127.0.0.1:{}", free_port());
    let (said, recorder, _store) = run_cat_against(&url, Some("otlp:"));
    assert!(said.contains("did not take the spans"), "{said}");
    wait_exit(recorder);
}

/// Waits for the recorder `pid` to exit: its exporter gives up within its
/// flush wait, however the collector behaves.
fn wait_exit(pid: u32) {
    let deadline = Instant::now() + Duration::from_secs(60);
    while process_alive(pid) {
        assert!(Instant::now() < deadline, "the recorder hung on the collector past its flush wait");
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn a_collector_that_never_answers_leaves_forwarding_byte_exact_and_the_recording_complete() {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let accepted = Arc::new(AtomicUsize::new(0));
    {
        let accepted = accepted.clone();
        // Accepts, reads nothing, answers nothing; holds every connection.
        std::thread::spawn(move || {
            let mut held = Vec::new();
            for conn in listener.incoming().flatten() {
                accepted.fetch_add(1, Ordering::SeqCst);
                held.push(conn);
            }
        });
    }
    let (_, recorder, _store) = run_cat_against(&url, None);
    // The trace ended in the store while the recorder still waited on the
    // collector: storing never waited for the export.
    assert!(accepted.load(Ordering::SeqCst) >= 1, "the collector was never called");
    assert!(process_alive(recorder), "the recorder was done before the trace ended: the hang was not exercised");
    wait_exit(recorder);
}
