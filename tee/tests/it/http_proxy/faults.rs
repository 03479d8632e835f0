//! What goes wrong around `acp-tee http-proxy`: an upstream that is down,
//! bodies past `MAX_MESSAGE_BYTES`, clients that vanish, the proxy stopped
//! mid-connection. Each is answered (or passed on) and noted in the trace.

use super::*;
use std::io::Read;
use std::net::TcpStream;

pub(super) const INITIALIZE: &str = r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":1}}"#;

/// Sends `head` and then `body` on a new connection to the proxy; the
/// status line and body of the answer.
pub(super) fn raw_exchange(proxy: &Proxy, head: &str, body: &[u8]) -> (String, String) {
    let addr = proxy.url.trim_start_matches("http://").split('/').next().unwrap().to_owned();
    let mut conn = TcpStream::connect(addr).unwrap();
    conn.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    conn.write_all(head.as_bytes()).unwrap();
    // The proxy may answer (and close) before it read all of a body it refuses.
    let _ = conn.write_all(body);
    let mut answer = Vec::new();
    let _ = conn.read_to_end(&mut answer);
    let answer = String::from_utf8_lossy(&answer).into_owned();
    let status = answer.lines().next().unwrap_or_default().to_owned();
    let body = answer.split("\r\n\r\n").nth(1).unwrap_or_default().to_owned();
    (status, body)
}

#[test]
fn an_upstream_that_is_down_is_answered_502_and_the_trace_ends_failed_with_the_failure_noted() {
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let upstream = format!("http://{}/acp", closed.local_addr().unwrap());
    drop(closed);
    let store = TempStore::new();
    let proxy = Proxy::start(&store.db, &upstream);
    let head = format!(
        "POST /acp HTTP/1.1\r\nHost: t\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        INITIALIZE.len()
    );
    let (status, body) = raw_exchange(&proxy, &head, INITIALIZE.as_bytes());
    assert!(status.contains(" 502 "), "{status}");
    let error: Value = serde_json::from_str(body.trim()).unwrap_or_else(|e| panic!("{e}: {body:?}"));
    let error = error["error"].as_str().unwrap();
    assert!(
        error.starts_with("acp-tee http-proxy: the upstream http://") && error.contains("failed for POST"),
        "{error}"
    );
    let trace = store.only_trace();
    assert_eq!(trace.exit_code, Some(1));
    assert!(trace.end_reason.as_deref().unwrap().contains("failed for POST"), "{trace:?}");
    // The message never left the proxy: only the failure is in the trace.
    let frames = store.frames(trace.id);
    assert!(frames.iter().all(|f| f.kind == FrameKind::Stderr), "{frames:?}");
    let notes = notes(&store, trace.id);
    assert!(
        notes.iter().any(|n| n.starts_with("http-proxy: the upstream") && n.contains("failed for POST")),
        "{notes:?}"
    );
}

#[test]
fn a_post_past_max_message_bytes_is_refused_413_whether_its_length_is_declared_or_not() {
    let agent = Agent::start();
    let store = TempStore::new();
    let proxy = Proxy::start(&store.db, &agent.url);
    let max = acp_tee::HTTP_MAX_MESSAGE_BYTES;
    // Declared: refused before anything goes upstream.
    let head = format!(
        "POST /acp HTTP/1.1\r\nHost: t\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        max + 1
    );
    let (status, body) = raw_exchange(&proxy, &head, b"");
    assert!(status.contains(" 413 "), "{status}");
    assert!(body.contains("MAX_MESSAGE_BYTES"), "{body}");
    // Chunked: refused once past the limit; the upstream gets a cut body.
    let chunk = vec![b' '; 1 << 20];
    let mut chunked = Vec::new();
    for _ in 0..=max / chunk.len() {
        chunked.extend_from_slice(format!("{:x}\r\n", chunk.len()).as_bytes());
        chunked.extend_from_slice(&chunk);
        chunked.extend_from_slice(b"\r\n");
    }
    chunked.extend_from_slice(b"0\r\n\r\n");
    let head = "POST /acp HTTP/1.1\r\nHost: t\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n";
    let (status, _) = raw_exchange(&proxy, head, &chunked);
    assert!(status.contains(" 413 "), "{status}");
    // A first message refused makes no connection, so no trace; the proxy
    // goes on serving, and the one trace is the next client's.
    client(&proxy.url, &[]);
    let traces = store.ended_traces(1);
    assert_eq!(traces.len(), 1, "{traces:?}");
    assert_eq!(traces[0].exit_code, Some(0), "{traces:?}");
}

#[test]
fn a_websocket_message_past_max_message_bytes_closes_that_websocket() {
    let agent = Agent::start();
    let store = TempStore::new();
    let proxy = Proxy::start(&store.db, &agent.url);
    let script = format!(
        r#"
import sys
from websockets.sync.client import connect
with connect(sys.argv[1].replace("http://", "ws://", 1), max_size=None, compression=None) as ws:
    ws.send({init:?})
    print(ws.recv()[:40], flush=True)
    try:
        ws.send("x" * ({max} + 1))
        ws.recv()
    except Exception as e:
        print(type(e).__name__, ws.close_code, flush=True)
"#,
        init = INITIALIZE,
        max = acp_tee::HTTP_MAX_MESSAGE_BYTES
    );
    let out = Command::new(python_acp()).args(["-c", &script, &proxy.url]).output().unwrap();
    let printed = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{printed} {}", String::from_utf8_lossy(&out.stderr));
    let lines: Vec<&str> = printed.lines().collect();
    assert!(lines[0].contains("\"id\":0") || lines[0].contains("\"id\": 0"), "{printed}");
    // The proxy closed it: 1009 went out both ways, but a client still
    // sending the rest of its message may see the connection reset first.
    assert!(lines[1].starts_with("ConnectionClosed"), "{printed}");
    let trace = store.only_trace();
    assert_eq!(trace.exit_code, Some(1));
    assert!(trace.end_reason.as_deref().unwrap().contains("past MAX_MESSAGE_BYTES"), "{trace:?}");
    let frames = store.frames(trace.id);
    let messages: Vec<_> = frames.iter().filter(|f| f.kind != FrameKind::Stderr).collect();
    assert_eq!(messages.len(), 2, "the initialize and its answer, nothing of the oversized message");
    assert_eq!(messages[1].reply_to_seq, Some(messages[0].seq));
}

#[test]
fn a_vanished_client_and_a_stopped_proxy_are_noted_and_end_the_trace_with_every_message_stored() {
    let agent = Agent::start();
    let store = TempStore::new();
    let mut proxy = Proxy::start(&store.db, &agent.url);
    let mut held = held_client(&proxy.url, 1);
    // The client dies without closing anything.
    held.kill().unwrap();
    held.wait().unwrap();
    let deadline = Instant::now() + Duration::from_secs(20);
    let trace_id = loop {
        let traces = if store.db.exists() { store.open().list_traces().unwrap() } else { Vec::new() };
        if let Some(t) = traces.first() {
            let gone = notes(&store, t.id).iter().filter(|n| n.contains("the client went away during the SSE")).count();
            if gone == 2 {
                assert!(t.ended_at.is_none(), "the connection is still open upstream");
                break t.id;
            }
        }
        assert!(Instant::now() < deadline, "the vanished client was not noted on both SSE streams");
        std::thread::sleep(Duration::from_millis(20));
    };
    assert!(proxy.stop().success());
    let trace = store.only_trace();
    assert_eq!(trace.id, trace_id);
    assert_eq!(trace.end_reason.as_deref(), Some("the proxy was stopped by signal 15"));
    assert_eq!(trace.exit_code, Some(0));
    let frames = exported_frames(&store.db, trace.id);
    for method in ["initialize", "session/new", "session/prompt"] {
        assert_paired(&frames, method);
    }
}

/// An upstream of our own (axum, on 127.0.0.1): `GET /acp` streams `events`
/// Server-Sent Events of about `size` bytes each, as fast as they are
/// taken. Returns its URL and how many bytes it has handed out so far.
fn sse_upstream(events: usize, size: usize) -> (String, std::sync::Arc<std::sync::atomic::AtomicUsize>) {
    use futures_util::StreamExt;
    use std::sync::atomic::{AtomicUsize, Ordering};
    let produced = std::sync::Arc::new(AtomicUsize::new(0));
    let (tx, rx) = std::sync::mpsc::channel();
    let counter = produced.clone();
    std::thread::spawn(move || {
        let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        runtime.block_on(async move {
            let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
            tx.send(listener.local_addr().unwrap()).unwrap();
            let app = axum::Router::new().route(
                "/acp",
                axum::routing::get(move || {
                    let counter = counter.clone();
                    async move {
                        let stream = futures_util::stream::iter(0..events).map(move |i| {
                            let pad = "x".repeat(size);
                            let event = format!(
                                "data: {{\"jsonrpc\":\"2.0\",\"method\":\"x/big\",\"params\":{{\"i\":{i},\"pad\":\"{pad}\"}}}}\n\n"
                            );
                            counter.fetch_add(event.len(), Ordering::SeqCst);
                            Ok::<_, std::convert::Infallible>(axum::body::Bytes::from(event))
                        });
                        ([("content-type", "text/event-stream")], axum::body::Body::from_stream(stream))
                    }
                })
                // The initialize, which makes the connection the GET names.
                .post(|| async {
                    (
                        [("content-type", "application/json"), ("acp-connection-id", "c1")],
                        r#"{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":1}}"#,
                    )
                }),
            );
            axum::serve(listener, app).await.unwrap();
        });
    });
    (format!("http://{}/acp", rx.recv().unwrap()), produced)
}

/// Resident memory of process `pid`, in bytes.
fn rss(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let kb: u64 = status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap();
    kb * 1024
}

#[test]
fn a_slow_sse_reader_holds_the_upstream_back_without_the_proxy_buffering_and_then_gets_every_event() {
    const EVENTS: usize = 256;
    const SIZE: usize = 256 << 10;
    let (upstream, produced) = sse_upstream(EVENTS, SIZE);
    let store = TempStore::new();
    let mut proxy = Proxy::start(&store.db, &upstream);
    let addr = proxy.url.trim_start_matches("http://").split('/').next().unwrap().to_owned();
    let head =
        format!("POST /acp HTTP/1.1\r\nHost: t\r\nContent-Length: {}\r\nConnection: close\r\n\r\n", INITIALIZE.len());
    let (status, _) = raw_exchange(&proxy, &head, INITIALIZE.as_bytes());
    assert!(status.contains(" 200 "), "{status}");
    let mut reader = TcpStream::connect(&addr).unwrap();
    write!(reader, "GET /acp HTTP/1.1\r\nHost: t\r\nAccept: text/event-stream\r\nAcp-Connection-Id: c1\r\n\r\n")
        .unwrap();
    // The reader reads nothing: the upstream must come to a stop, far short
    // of the whole stream, with the proxy's memory flat.
    let deadline = Instant::now() + Duration::from_secs(30);
    let mut last = (0, Instant::now());
    loop {
        let now = produced.load(std::sync::atomic::Ordering::SeqCst);
        if now != last.0 {
            last = (now, Instant::now());
        } else if now > 0 && last.1.elapsed() > Duration::from_millis(500) {
            break;
        }
        assert!(Instant::now() < deadline, "the upstream never stopped: {now} bytes handed out");
        std::thread::sleep(Duration::from_millis(10));
    }
    let total = EVENTS * (SIZE + 60);
    let held_back = produced.load(std::sync::atomic::Ordering::SeqCst);
    let proxy_rss = rss(proxy.pid());
    eprintln!("slow reader: upstream stopped after {held_back} of {total} bytes; proxy RSS {proxy_rss} bytes");
    assert!(held_back < total / 2, "the upstream was not held back: {held_back} of {total} bytes out");
    assert!(proxy_rss < 64 << 20, "the proxy holds {proxy_rss} bytes");
    // Now the reader takes it all, in order.
    reader.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    let (mut ends, mut last) = (0, 0u8);
    let mut buf = vec![0u8; 1 << 20];
    while ends < EVENTS {
        let n = reader.read(&mut buf).expect("the stream stalled");
        assert!(n > 0, "the stream ended early");
        for &b in &buf[..n] {
            ends += usize::from(b == b'\n' && last == b'\n');
            last = b;
        }
    }
    drop(reader);
    assert!(proxy.stop().success());
    let trace = store.only_trace();
    let messages: Vec<_> = store
        .frames(trace.id)
        .into_iter()
        .filter(|f| f.kind != FrameKind::Stderr && f.method.as_deref() == Some("x/big"))
        .collect();
    assert_eq!(messages.len(), EVENTS);
    for (i, f) in messages.iter().enumerate() {
        let json: Value = serde_json::from_slice(&f.raw).unwrap();
        assert_eq!(json["params"]["i"], i, "events are recorded one for one, in order");
        assert_eq!(f.dir, Direction::AgentToClient);
    }
}

#[test]
fn an_upstream_that_dies_mid_connection_is_noted_on_each_stream_and_later_requests_get_502() {
    let mut agent = Agent::start();
    let store = TempStore::new();
    let mut proxy = Proxy::start(&store.db, &agent.url);
    let mut held = held_client(&proxy.url, 1);
    // The agent's server dies with both event streams open.
    agent.child.kill().unwrap();
    agent.child.wait().unwrap();
    let deadline = Instant::now() + Duration::from_secs(20);
    let trace_id = loop {
        let traces = if store.db.exists() { store.open().list_traces().unwrap() } else { Vec::new() };
        if let Some(t) = traces.first() {
            let cut = notes(&store, t.id).iter().filter(|n| n.contains("SSE") && n.contains("broke off")).count();
            if cut == 2 {
                break t.id;
            }
        }
        assert!(Instant::now() < deadline, "the streams the upstream cut were not noted");
        std::thread::sleep(Duration::from_millis(20));
    };
    // The client's DELETE finds no upstream: answered 502, noted.
    writeln!(held.stdin.take().unwrap()).unwrap();
    let _ = wait_within(&mut held, Duration::from_secs(30)).expect("the client did not finish");
    let deadline = Instant::now() + Duration::from_secs(20);
    while !notes(&store, trace_id).iter().any(|n| n.contains("failed for DELETE")) {
        assert!(Instant::now() < deadline, "the failed DELETE was not noted: {:?}", notes(&store, trace_id));
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(proxy.stop().success());
    let trace = store.only_trace();
    assert_eq!(trace.end_reason.as_deref(), Some("the proxy was stopped by signal 15"));
    let frames = exported_frames(&store.db, trace.id);
    for method in ["initialize", "session/new", "session/prompt"] {
        assert_paired(&frames, method);
    }
}

#[test]
fn a_connection_left_without_delete_ends_after_idle_seconds() {
    let agent = Agent::start();
    let store = TempStore::new();
    let proxy = Proxy::start_with(&store.db, &agent.url, &["--idle", "1"]);
    let mut held = held_client(&proxy.url, 1);
    held.kill().unwrap();
    held.wait().unwrap();
    // The proxy runs on; the trace ends by itself.
    let trace = store.only_trace();
    assert_eq!(trace.end_reason.as_deref(), Some("the connection was idle for 1 s with no stream open"));
    assert_eq!(trace.exit_code, Some(0));
    let notes = notes(&store, trace.id);
    assert!(notes.iter().any(|n| n.contains("the client went away without DELETE")), "{notes:?}");
    let frames = exported_frames(&store.db, trace.id);
    for method in ["initialize", "session/new", "session/prompt"] {
        assert_paired(&frames, method);
    }
    drop(proxy);
}

/// Like [`raw_exchange`], to any `http://HOST:PORT/...` URL.
pub(super) fn raw_exchange_to(url: &str, head: &str, body: &[u8]) -> (String, String) {
    let addr = url.trim_start_matches("http://").split('/').next().unwrap().to_owned();
    let mut conn = TcpStream::connect(addr).unwrap();
    conn.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    conn.write_all(head.as_bytes()).unwrap();
    let _ = conn.write_all(body);
    let mut answer = Vec::new();
    let _ = conn.read_to_end(&mut answer);
    let answer = String::from_utf8_lossy(&answer).into_owned();
    (
        answer.lines().next().unwrap_or_default().to_owned(),
        answer.split("\r\n\r\n").nth(1).unwrap_or_default().to_owned(),
    )
}

#[test]
fn the_upstreams_credentials_reach_the_upstream_only() {
    // An upstream that takes one request and tells what it got.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let seen = std::thread::spawn(move || {
        let (mut conn, _) = listener.accept().unwrap();
        conn.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
        let mut head = Vec::new();
        let mut byte = [0u8; 1];
        while !head.ends_with(b"\r\n\r\n") && conn.read(&mut byte).unwrap() == 1 {
            head.push(byte[0]);
        }
        conn.write_all(b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\nConnection: close\r\n\r\n").unwrap();
        String::from_utf8(head).unwrap()
    });
    let upstream = format!("http://alice:USERINFO_SECRET@127.0.0.1:{port}/acp?token=QUERY_SECRET");
    let store = TempStore::new();
    let proxy = Proxy::start_with(&store.db, &upstream, &["--redact"]);
    let head = format!(
        "POST /acp?token=other&x=1 HTTP/1.1\r\nHost: t\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        INITIALIZE.len()
    );
    let (status, _) = raw_exchange(&proxy, &head, INITIALIZE.as_bytes());
    assert!(status.contains(" 400 "), "{status}");
    let got = seen.join().unwrap().to_lowercase();
    // The userinfo as the Basic credentials it means; the configured query
    // kept (the client's `token` cannot replace it), the client's added.
    use base64::Engine as _;
    let basic = base64::engine::general_purpose::STANDARD.encode("alice:USERINFO_SECRET").to_lowercase();
    assert!(got.contains(&format!("authorization: basic {basic}")), "{got}");
    assert!(got.starts_with("post /acp?token=query_secret&x=1 http/1.1"), "{got}");
    assert!(!got.contains("userinfo_secret@"), "{got}");

    // Unreachable now: the 502 says which upstream without its secrets,
    // and nothing stored or shown holds them.
    let (status, body) = raw_exchange(&proxy, &head, INITIALIZE.as_bytes());
    assert!(status.contains(" 502 "), "{status}");
    assert!(body.contains("127.0.0.1") && !body.contains("SECRET"), "{body}");
    let traces = store.ended_traces(2);
    for trace in &traces {
        assert!(!trace.command.join(" ").contains("SECRET"), "{:?}", trace.command);
    }
    let export =
        Command::new(bin()).args(["export", "--trace", "all", "--no-redact", "--db"]).arg(&store.db).output().unwrap();
    assert!(export.status.success());
    assert!(!String::from_utf8_lossy(&export.stdout).contains("SECRET"), "the store holds a secret of --upstream");
}

#[test]
fn requests_of_no_connection_pass_on_unrecorded_and_make_no_trace() {
    let agent = Agent::start();
    let store = TempStore::new();
    let proxy = Proxy::start(&store.db, &agent.url);
    for head in [
        "GET /acp HTTP/1.1\r\nHost: t\r\nAccept: text/event-stream\r\nConnection: close\r\n\r\n",
        "OPTIONS /acp HTTP/1.1\r\nHost: t\r\nOrigin: http://x\r\nAccess-Control-Request-Method: POST\r\nConnection: close\r\n\r\n",
        "DELETE /acp HTTP/1.1\r\nHost: t\r\nAcp-Connection-Id: never-seen\r\nConnection: close\r\n\r\n",
    ] {
        for _ in 0..20 {
            let (through, _) = raw_exchange(&proxy, head, b"");
            let (direct, _) = raw_exchange_to(&agent.url, head, b"");
            assert_eq!(through, direct, "{head}");
        }
    }
    assert!(recorders_of(proxy.pid()).is_empty(), "a recorder for a request of no connection");
    // The one trace is the honest client's.
    client(&proxy.url, &[]);
    assert_eq!(store.ended_traces(1).len(), 1);
}

/// An upstream of our own whose event stream (`GET /acp`) is gzip-coded:
/// three events, compressed whole, or (with `?broken`) bytes that claim
/// to be gzip and are not. Returns its URL and the coded stream.
fn gzip_sse_upstream() -> (String, Vec<u8>) {
    use flate2::write::GzEncoder;
    let mut gz = GzEncoder::new(Vec::new(), flate2::Compression::default());
    for i in 0..3 {
        write!(gz, "data: {{\"jsonrpc\":\"2.0\",\"method\":\"x/zipped\",\"params\":{{\"i\":{i}}}}}\n\n").unwrap();
    }
    let coded = gz.finish().unwrap();
    let body = coded.clone();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        runtime.block_on(async move {
            let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
            tx.send(listener.local_addr().unwrap()).unwrap();
            let app = axum::Router::new().route(
                "/acp",
                axum::routing::get(move |q: axum::extract::RawQuery| {
                    let body = if q.0.is_some() { b"data: not gzip at all\n\n".to_vec() } else { body.clone() };
                    async move { ([("content-type", "text/event-stream"), ("content-encoding", "gzip")], body) }
                })
                .post(|| async {
                    (
                        [("content-type", "application/json"), ("acp-connection-id", "c1")],
                        r#"{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":1}}"#,
                    )
                }),
            );
            axum::serve(listener, app).await.unwrap();
        });
    });
    (format!("http://{}/acp", rx.recv().unwrap()), coded)
}

#[test]
fn a_gzip_coded_event_stream_goes_on_as_it_came_and_is_recorded_decoded() {
    let (upstream, coded) = gzip_sse_upstream();
    let store = TempStore::new();
    let mut proxy = Proxy::start(&store.db, &upstream);
    let head =
        format!("POST /acp HTTP/1.1\r\nHost: t\r\nContent-Length: {}\r\nConnection: close\r\n\r\n", INITIALIZE.len());
    let (status, _) = raw_exchange(&proxy, &head, INITIALIZE.as_bytes());
    assert!(status.contains(" 200 "), "{status}");
    let get = |query: &str| {
        let addr = proxy.url.trim_start_matches("http://").split('/').next().unwrap().to_owned();
        let mut conn = TcpStream::connect(addr).unwrap();
        conn.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
        write!(
            conn,
            "GET /acp{query} HTTP/1.1\r\nHost: t\r\nAccept: text/event-stream\r\nAccept-Encoding: gzip\r\n\
             Acp-Connection-Id: c1\r\nConnection: close\r\n\r\n"
        )
        .unwrap();
        let mut answer = Vec::new();
        let _ = conn.read_to_end(&mut answer);
        answer
    };
    let answer = get("");
    let end = answer.windows(4).position(|w| w == b"\r\n\r\n").unwrap() + 4;
    let head = String::from_utf8_lossy(&answer[..end]).to_lowercase();
    assert!(head.contains("content-encoding: gzip"), "{head}");
    // The body came as the upstream sent it (one chunk, or its length).
    let body = &answer[end..];
    assert!(body.windows(coded.len()).any(|w| w == coded.as_slice()), "the coded bytes did not come through as sent");
    let broken = get("?broken");
    assert!(broken.ends_with(b"data: not gzip at all\n\n") || broken.windows(8).any(|w| w == b"not gzip"));
    assert!(proxy.stop().success());
    let trace = store.only_trace();
    let zipped: Vec<Value> = store
        .frames(trace.id)
        .into_iter()
        .filter(|f| f.method.as_deref() == Some("x/zipped"))
        .map(|f| serde_json::from_slice(&f.raw).unwrap())
        .collect();
    assert_eq!(zipped.iter().map(|m| m["params"]["i"].as_i64().unwrap()).collect::<Vec<_>>(), [0, 1, 2]);
    assert!(store.frames(trace.id).iter().all(|f| f.kind != FrameKind::Invalid));
    let notes = notes(&store, trace.id);
    assert!(notes.iter().any(|n| n.contains("is gzip-coded and did not decode")), "{notes:#?}");
    assert!(!notes.iter().any(|n| n.contains("MAX_MESSAGE_BYTES")), "{notes:#?}");
}

#[test]
fn an_initialize_whose_client_went_away_unanswered_is_noted_and_ends_failed() {
    // An upstream that takes requests and never answers.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let upstream = format!("http://{}/acp", listener.local_addr().unwrap());
    let (seen_tx, seen) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut held = Vec::new();
        for conn in listener.incoming().flatten() {
            let _ = seen_tx.send(());
            held.push(conn);
        }
    });
    let store = TempStore::new();
    let _proxy = Proxy::start(&store.db, &upstream);
    let addr = _proxy.url.trim_start_matches("http://").split('/').next().unwrap().to_owned();
    let mut client = TcpStream::connect(addr).unwrap();
    write!(client, "POST /acp HTTP/1.1\r\nHost: t\r\nContent-Length: {}\r\n\r\n{INITIALIZE}", INITIALIZE.len())
        .unwrap();
    seen.recv_timeout(Duration::from_secs(20)).expect("the initialize reached the upstream");
    drop(client);
    let trace = store.only_trace();
    let reason = "the client went away before the upstream answered its POST";
    assert_eq!(trace.end_reason.as_deref(), Some(reason), "{trace:?}");
    assert_eq!(trace.exit_code, Some(1));
    assert!(notes(&store, trace.id).iter().any(|n| n.ends_with(reason)));
}

#[test]
fn many_headers_and_a_control_byte_in_one_are_taken_as_the_upstream_takes_them() {
    let agent = Agent::start();
    let store = TempStore::new();
    let proxy = Proxy::start(&store.db, &agent.url);
    let many: String = (0..150).map(|i| format!("X-Many-{i}: {i}\r\n")).collect();
    for extra in [many, "X-Odd: a\u{1}b\r\n".to_owned()] {
        let head = format!(
            "POST /acp HTTP/1.1\r\nHost: t\r\nContent-Type: application/json\r\n\
             Accept: application/json, text/event-stream\r\n{extra}Connection: close\r\nContent-Length: {}\r\n\r\n",
            INITIALIZE.len()
        );
        let (direct, _) = raw_exchange_to(&agent.url, &head, INITIALIZE.as_bytes());
        let (through, _) = raw_exchange(&proxy, &head, INITIALIZE.as_bytes());
        assert!(direct.contains(" 200 "), "{direct}");
        assert_eq!(through, direct);
    }
}
