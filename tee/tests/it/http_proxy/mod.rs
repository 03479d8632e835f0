//! `acp-tee http-proxy` between the official Python ACP SDK's remote
//! transports (#19): `tests/peers/py_http_agent.py` serves the scripted
//! agent of `py_agent.py` over `acp.http` / `acp.ws` under uvicorn, and
//! `tests/peers/py_http_client.py` drives whole conversations with the
//! SDK's Streamable HTTP client or its WebSocket client. Everything runs
//! for real on 127.0.0.1, ports chosen by the system; the store is read
//! back through `acp-tee export`, the library and `acp-tee serve`.
//! `scripts/install-tools python-acp` installs the SDK with its `http`
//! extra and uvicorn.

mod faults;
mod memory;
mod stalls;
mod tls;
mod viewer;
mod websocket_faults;

use crate::common::*;
use acp_tee_shared::{Direction, FrameKind, TraceMeta};
use serde_json::Value;
use std::io::{BufRead, BufReader, Write};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A script under `tests/peers/`.
fn peer_script(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/peers").join(name)
}

/// Reads the first line `child` prints on stdout, within 30 s.
fn first_line(child: &mut Child, what: &str) -> String {
    let stdout = child.stdout.take().unwrap();
    let lines = read_to_end_on_thread_lines(stdout);
    match lines.recv_timeout(Duration::from_secs(30)) {
        Ok(line) => line,
        Err(_) => panic!("{what} printed nothing within 30 s"),
    }
}

/// Sends each line `from` has on a channel, read on a thread of its own.
fn read_to_end_on_thread_lines(from: impl std::io::Read + Send + 'static) -> std::sync::mpsc::Receiver<String> {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(from).lines() {
            let Ok(line) = line else { return };
            if tx.send(line).is_err() {
                return;
            }
        }
    });
    rx
}

/// The Python SDK's ASGI server hosting the scripted agent; killed when dropped.
pub struct Agent {
    pub child: Child,
    /// `http://127.0.0.1:PORT/acp`.
    pub url: String,
}

impl Agent {
    pub fn start() -> Agent {
        Self::start_with(&[])
    }

    /// With `extra` arguments (`--tls CERT KEY`).
    pub fn start_with(extra: &[&str]) -> Agent {
        let mut child = Command::new(python_acp())
            .arg(peer_script("py_http_agent.py"))
            .args(["--port", "0"])
            .args(extra)
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap();
        let line = first_line(&mut child, "py_http_agent.py");
        let url = line.strip_prefix("listening on ").unwrap_or_else(|| panic!("unexpected {line:?}")).to_owned();
        Agent { child, url }
    }
}

impl Drop for Agent {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `acp-tee http-proxy` on any free port; stopped (SIGTERM) when dropped.
pub struct Proxy {
    child: Child,
    /// `http://127.0.0.1:PORT/acp`.
    pub url: String,
}

impl Proxy {
    pub fn start(db: &std::path::Path, upstream: &str) -> Proxy {
        Self::start_with(db, upstream, &[])
    }

    /// With `extra` arguments.
    pub fn start_with(db: &std::path::Path, upstream: &str, extra: &[&str]) -> Proxy {
        Self::start_env(db, upstream, extra, &[])
    }

    /// With `extra` arguments and `env` set.
    pub fn start_env(db: &std::path::Path, upstream: &str, extra: &[&str], env: &[(&str, &std::path::Path)]) -> Proxy {
        let mut child = Command::new(bin())
            .args(["http-proxy", "--listen", "127.0.0.1:0", "--upstream", upstream, "--db"])
            .arg(db)
            .args(extra)
            .envs(env.iter().copied())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap();
        let line = first_line(&mut child, "acp-tee http-proxy");
        let url = line
            .split(" at ")
            .nth(1)
            .and_then(|rest| rest.split(' ').next())
            .unwrap_or_else(|| panic!("http-proxy printed no URL: {line:?}"))
            .to_owned();
        Proxy { child, url }
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Stops the proxy with SIGTERM and waits (at most 20 s) for it to exit.
    pub fn stop(&mut self) -> std::process::ExitStatus {
        kill(self.child.id(), libc::SIGTERM);
        wait_within(&mut self.child, Duration::from_secs(20)).expect("http-proxy did not exit within 20 s of SIGTERM")
    }
}

impl Drop for Proxy {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Runs `py_http_client.py URL ARGS...` to its end; what it printed.
pub fn client(url: &str, args: &[&str]) -> Value {
    let out = Command::new(python_acp()).arg(peer_script("py_http_client.py")).arg(url).args(args).output().unwrap();
    assert!(out.status.success(), "py_http_client.py {args:?} failed: {}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stdout)))
}

/// A trace's frame's envelope (its transport facts), as JSON.
fn facts(frame: &Value) -> Value {
    serde_json::from_str(frame["envelope"].as_str().expect("an envelope")).expect("the facts are JSON")
}

/// Checks one recorded conversation of `py_http_client.py`: every message
/// both ways, requests paired with their responses and latencies, and the
/// transport facts of each frame. `via` is `http` or `websocket`.
fn assert_conversation(store: &TempStore, trace: &TraceMeta, transport: &str) -> String {
    assert_eq!(trace.mode, "http");
    let frames = exported_frames(&store.db, trace.id);
    let messages: Vec<&Value> = frames.iter().filter(|f| f["kind"] != "stderr").collect();
    for method in ["initialize", "session/new", "session/prompt"] {
        assert_paired(&frames, method);
    }
    // The agent's permission request, answered by the client.
    let ask = messages.iter().find(|f| f["method"] == "session/request_permission" && f["kind"] == "request").unwrap();
    assert_eq!(ask["dir"], "agent_to_client");
    let answer = messages.iter().find(|f| f["reply_to_seq"] == ask["seq"]).expect("the permission was answered");
    assert_eq!(answer["dir"], "client_to_agent");
    assert!(answer["latency_ns"].as_i64().unwrap() > 0);
    // What the agent streams: 11 session updates (see py_agent.py).
    let updates = messages.iter().filter(|f| f["method"] == "session/update").count();
    assert_eq!(updates, 11, "{frames:#?}");
    // Nothing but these: 4 requests from the client and their answers, one
    // request from the agent and its answer, 11 notifications.
    assert_eq!(messages.len(), 3 * 2 + 2 + 11, "{messages:#?}");
    assert!(messages.iter().all(|f| f["kind"] != "invalid"), "{messages:#?}");
    // Every message carries its transport facts; all name one connection.
    let init_answer = messages.iter().find(|f| f["method"] == "initialize" && f["kind"] == "response").unwrap();
    let connection =
        facts(init_answer)["connectionId"].as_str().expect("the initialize answer names its connection").to_owned();
    for f in &messages {
        let facts = facts(f);
        assert_eq!(facts["transport"], transport, "{f}");
        if f["seq"] != messages[0]["seq"] || transport == "websocket" {
            assert_eq!(facts["connectionId"], connection.as_str(), "{f}");
        }
    }
    if transport == "http" {
        let via = |f: &&&Value| facts(f)["via"].as_str().unwrap().to_owned();
        for f in &messages {
            let (dir, facts) = (f["dir"].as_str().unwrap(), facts(f));
            match (dir, f["method"].as_str()) {
                ("client_to_agent", _) => assert_eq!(facts["via"], "post", "{f}"),
                ("agent_to_client", Some("initialize")) => {
                    assert_eq!(facts["via"], "post response");
                    assert_eq!(facts["status"], 200);
                }
                ("agent_to_client", Some("session/new")) => {
                    assert_eq!((facts["via"].as_str(), facts["stream"].as_str()), (Some("sse"), Some("connection")))
                }
                ("agent_to_client", _) => {
                    assert_eq!(facts["via"], "sse", "{f}");
                    assert_eq!(facts["stream"], "session", "{f}");
                    assert_eq!(facts["sessionId"], "py-session-1", "{f}");
                    assert_eq!(facts["status"], 200, "{f}");
                }
                _ => unreachable!(),
            }
        }
        let prompt = messages.iter().find(|f| f["method"] == "session/prompt" && f["kind"] == "request").unwrap();
        assert_eq!(via(&prompt), "post");
        assert_eq!(facts(prompt)["sessionId"], "py-session-1");
        assert_eq!(trace.end_reason.as_deref(), Some("the client ended the connection (DELETE answered 202 Accepted)"));
    } else {
        assert_eq!(trace.end_reason.as_deref(), Some("the client closed the WebSocket (1000 )"));
    }
    assert_eq!(trace.exit_code, Some(0));
    assert_eq!(trace.missing_frames, 0);
    connection
}

fn run_both_ways(ws: bool) {
    let agent = Agent::start();
    let store = TempStore::new();
    let proxy = Proxy::start(&store.db, &agent.url);
    let args: &[&str] = if ws { &["--ws"] } else { &[] };
    let direct = client(&agent.url, args);
    let through = client(&proxy.url, args);
    assert_eq!(through, direct, "the client saw something else through the proxy");
    assert_eq!(through["connections"][0]["stopReason"], "end_turn");
    assert_eq!(through["connections"][0]["updates"].as_array().unwrap().len(), 11);
    let trace = store.only_trace();
    assert_conversation(&store, &trace, if ws { "websocket" } else { "http" });
}

#[test]
fn the_sdks_http_client_gets_the_same_answers_through_the_proxy_and_every_message_is_recorded_paired() {
    run_both_ways(false);
}

#[test]
fn the_sdks_websocket_client_gets_the_same_answers_through_the_proxy_and_every_message_is_recorded_paired() {
    run_both_ways(true);
}

/// The head (status line and headers, lowercased) of the answer to one
/// `initialize` POST sent to `url` with `accept_encoding`.
fn initialize_answer_head(url: &str, accept_encoding: &str) -> String {
    use std::io::Read;
    let addr = url.trim_start_matches("http://").split('/').next().unwrap().to_owned();
    let body = r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":1}}"#;
    let mut conn = std::net::TcpStream::connect(&addr).unwrap();
    conn.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    let head = format!(
        "POST /acp HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\n\
         Accept: application/json, text/event-stream\r\nAccept-Encoding: {accept_encoding}\r\n\
         Connection: close\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    );
    conn.write_all(head.as_bytes()).unwrap();
    let mut answer = Vec::new();
    let _ = conn.read_to_end(&mut answer);
    let end = answer.windows(4).position(|w| w == b"\r\n\r\n").expect("an answer head");
    String::from_utf8_lossy(&answer[..end]).to_lowercase()
}

#[test]
fn answers_the_upstream_compresses_are_recorded_decoded_and_passed_on_as_they_came() {
    let agent = Agent::start_with(&["--gzip"]);
    // The upstream does compress what the SDK's client accepts compressed.
    assert!(initialize_answer_head(&agent.url, "gzip").contains("content-encoding: gzip"));
    let store = TempStore::new();
    let proxy = Proxy::start(&store.db, &agent.url);
    let direct = client(&agent.url, &[]);
    let through = client(&proxy.url, &[]);
    assert_eq!(through, direct, "the client saw something else through the proxy");
    // Every message is recorded as JSON, paired, none `invalid`.
    let trace = store.only_trace();
    assert_conversation(&store, &trace, "http");
    // The client gets the compressed bytes the upstream sent; a client that
    // accepts only a coding the proxy does not decode gets them plain.
    assert!(initialize_answer_head(&proxy.url, "gzip").contains("content-encoding: gzip"));
    let head = initialize_answer_head(&proxy.url, "br");
    assert!(head.starts_with("http/1.1 200") && !head.contains("content-encoding"), "{head}");
    let mut proxy = proxy;
    proxy.stop();
    for trace in store.ended_traces(3).iter().skip(1) {
        let frames = exported_frames(&store.db, trace.id);
        assert!(frames.iter().any(|f| f["method"] == "initialize" && f["kind"] == "response"), "{frames:#?}");
        assert!(frames.iter().all(|f| f["kind"] != "invalid"), "{frames:#?}");
    }
}

#[test]
fn concurrent_connections_over_http_and_websocket_are_separate_traces() {
    let agent = Agent::start();
    let store = TempStore::new();
    let proxy = Proxy::start(&store.db, &agent.url);
    let http = std::thread::spawn({
        let url = proxy.url.clone();
        move || client(&url, &["--connections", "3"])
    });
    let ws = client(&proxy.url, &["--ws", "--connections", "3"]);
    let http = http.join().unwrap();
    for run in [&http, &ws] {
        let runs = run["connections"].as_array().unwrap();
        assert_eq!(runs.len(), 3);
        assert!(runs.iter().all(|r| r["stopReason"] == "end_turn" && r["permissions"] == 1), "{run}");
    }
    let traces = store.ended_traces(6);
    assert_eq!(traces.len(), 6);
    let mut connections: Vec<String> = Vec::new();
    let (mut over_http, mut over_ws) = (0, 0);
    for trace in &traces {
        let frames = exported_frames(&store.db, trace.id);
        let transport =
            facts(frames.iter().find(|f| f["kind"] != "stderr").unwrap())["transport"].as_str().unwrap().to_owned();
        if transport == "http" {
            over_http += 1;
        } else {
            over_ws += 1;
        }
        connections.push(assert_conversation(&store, trace, &transport));
    }
    assert_eq!((over_http, over_ws), (3, 3));
    connections.sort();
    connections.dedup();
    assert_eq!(connections.len(), 6, "each trace is a connection of its own");
}

#[test]
fn auth_and_cookie_headers_reach_the_agent_are_stored_and_are_masked_in_exports() {
    let agent = Agent::start();
    let store = TempStore::new();
    let proxy = Proxy::start(&store.db, &agent.url);
    client(&proxy.url, &["--header", "Authorization=Bearer sk-live-123", "--header", "Cookie=affinity=node7"]);
    let trace = store.only_trace();
    // Stored as they crossed (the store is the user's own)...
    let stored = store.frames(trace.id);
    let first = stored.iter().find(|f| f.dir == Direction::ClientToAgent).unwrap();
    let envelope = String::from_utf8(first.envelope.clone().unwrap()).unwrap();
    assert!(envelope.contains("Bearer sk-live-123") && envelope.contains("affinity=node7"), "{envelope}");
    // ...and masked in what leaves it.
    let exported = exported_frames(&store.db, trace.id);
    let text = serde_json::to_string(&exported).unwrap();
    assert!(!text.contains("sk-live-123") && !text.contains("node7"), "a secret header was exported");
    let headers = &facts(&exported[0])["httpHeaders"];
    assert_eq!(headers["authorization"], "[REDACTED]");
    assert_eq!(headers["cookie"], "[REDACTED]");
    assert_eq!(headers["content-type"], "application/json");
}

/// Reads the Server-Sent Events of `acp-tee serve`'s live route for trace
/// `id` until `done` says the frames seen are enough.
fn live_frames(served: &str, id: i64, done: impl Fn(&[Value]) -> bool) -> Vec<Value> {
    let addr = served.trim_start_matches("http://");
    let mut conn = std::net::TcpStream::connect(addr).unwrap();
    conn.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    write!(conn, "GET /api/traces/{id}/live?after=0 HTTP/1.1\r\nHost: t\r\nAccept: text/event-stream\r\n\r\n").unwrap();
    let mut seen = Vec::new();
    let mut event = String::new();
    for line in BufReader::new(conn).lines() {
        let line = line.expect("the live stream went quiet for 30 s");
        if let Some(name) = line.strip_prefix("event: ") {
            event = name.to_owned();
        } else if let Some(data) = line.strip_prefix("data: ") {
            if event == "frames" {
                seen.extend(serde_json::from_str::<Vec<Value>>(data).unwrap());
                if done(&seen) {
                    return seen;
                }
            }
        }
    }
    panic!("the live stream ended first");
}

/// The official SDK's clients (HTTP and WebSocket) get through `proxy` what
/// they get from `agent` directly, and then `before` (a [`held_client`]
/// opened earlier) finishes its session and exits successfully.
pub fn honest_clients_work_as_direct(agent: &Agent, proxy: &Proxy, mut before: Child) {
    for args in [&[][..], &["--ws"]] {
        let direct = client(&agent.url, args);
        let through = client(&proxy.url, args);
        assert_eq!(through, direct, "{args:?}");
    }
    before.stdin.take().unwrap().write_all(b"go\n").unwrap();
    let status = wait_within(&mut before, Duration::from_secs(60)).expect("the held session ended");
    assert!(status.success(), "the session opened before failed");
}

/// `py_http_client.py URL --connections N --hold`: `connections` conversations that stay open after their
/// turn, until the client's stdin says otherwise; returned once it says `held`.
pub fn held_client(url: &str, connections: usize) -> Child {
    let mut held = Command::new(python_acp())
        .arg(peer_script("py_http_client.py"))
        .arg(url)
        .args(["--connections", &connections.to_string(), "--hold"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap();
    assert_eq!(first_line(&mut held, "py_http_client.py --hold"), "held");
    held
}

#[test]
fn serve_shows_the_connections_live_while_they_are_open() {
    let agent = Agent::start();
    let store = TempStore::new();
    let proxy = Proxy::start(&store.db, &agent.url);
    // Two conversations that stay open after their turn, until told.
    let mut held = held_client(&proxy.url, 2);
    let served = Served::start(&store.db, &[]);
    // Each connection's recorder process makes its trace; the proxy does not
    // wait for it before forwarding (only the stdio relay does), so the
    // second may appear a moment after its client has its answers.
    let deadline = Instant::now() + Duration::from_secs(20);
    let traces = loop {
        let traces: Vec<Value> = served.get("/api/traces");
        if traces.len() >= 2 {
            break traces;
        }
        assert!(Instant::now() < deadline, "serve shows {} of the 2 open connections: {traces:#?}", traces.len());
        std::thread::sleep(Duration::from_millis(20));
    };
    assert_eq!(traces.len(), 2, "{traces:#?}");
    for trace in &traces {
        assert_eq!(trace["live"], true, "{trace}");
        assert_eq!(trace["mode"], "http");
        // The whole turn is there, live, prompt answer included.
        let id = trace["id"].as_i64().unwrap();
        let frames = live_frames(&served.url, id, |seen| {
            seen.iter().any(|f| f["method"] == "session/prompt" && f["kind"] == "response")
        });
        let answer = frames.iter().find(|f| f["method"] == "session/prompt" && f["kind"] == "response").unwrap();
        assert!(answer["latency_ns"].as_i64().unwrap() > 0);
    }
    writeln!(held.stdin.take().unwrap()).unwrap();
    assert!(wait_within(&mut held, Duration::from_secs(30)).unwrap().success());
    let ended = store.ended_traces(2);
    assert!(ended.iter().all(|t| t.exit_code == Some(0)));
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let traces: Vec<Value> = served.get("/api/traces");
        if traces.iter().all(|t| t["live"] == false) {
            break;
        }
        assert!(Instant::now() < deadline, "serve still shows the connections live: {traces:#?}");
        std::thread::sleep(Duration::from_millis(20));
    }
    drop(proxy);
}

/// The notes the proxy wrote on a trace's stderr lane.
pub fn notes(store: &TempStore, trace_id: i64) -> Vec<String> {
    store
        .frames(trace_id)
        .into_iter()
        .filter(|f| f.kind == FrameKind::Stderr)
        .map(|f| String::from_utf8_lossy(&f.raw).trim_end().to_owned())
        .collect()
}
