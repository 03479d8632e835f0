//! What goes wrong around `acp-tee http-proxy`: an upstream that is down,
//! bodies past `MAX_MESSAGE_BYTES`, clients that vanish, the proxy stopped
//! mid-connection. Each is answered (or passed on) and noted in the trace.

use super::*;
use std::io::Read;
use std::net::TcpStream;

const INITIALIZE: &str = r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":1}}"#;

/// Sends `head` and then `body` on a new connection to the proxy; the
/// status line and body of the answer.
fn raw_exchange(proxy: &Proxy, head: &str, body: &[u8]) -> (String, String) {
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

/// A socket to the proxy that sent `head` (and `body`) and then stalls,
/// holding the connection open.
fn stalled(proxy: &Proxy, head: &str, body: &[u8]) -> TcpStream {
    let addr = proxy.url.trim_start_matches("http://").split('/').next().unwrap().to_owned();
    let mut conn = TcpStream::connect(addr).unwrap();
    conn.write_all(head.as_bytes()).unwrap();
    // A refused body may be answered (and its connection closed) early.
    let _ = conn.write_all(body);
    conn
}

#[test]
fn stalled_requests_and_made_up_connection_ids_lock_no_honest_client_out() {
    let agent = Agent::start();
    let store = TempStore::new();
    let proxy = Proxy::start(&store.db, &agent.url);
    // A session opened before the stalls, held open across them.
    let mut before = held_client(&proxy.url, 1);
    let mut held = Vec::new();
    // 1: headers of a body that never comes, as many as connections are recorded.
    let head = "POST /acp HTTP/1.1\r\nHost: t\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n";
    for _ in 0..acp_tee::HTTP_MAX_CONNECTIONS {
        held.push(stalled(&proxy, head, b""));
    }
    // 2: sixteen bodies of MAX_MESSAGE_BYTES, all but the last byte sent.
    let big = acp_tee::HTTP_MAX_MESSAGE_BYTES;
    let head =
        format!("POST /acp HTTP/1.1\r\nHost: t\r\nContent-Type: application/json\r\nContent-Length: {big}\r\n\r\n");
    let body = vec![b' '; big - 1];
    for _ in 0..16 {
        held.push(stalled(&proxy, &head, &body));
    }
    // 3: connection ids the proxy never saw: passed on, answered by the
    // upstream (its 400 for a body that is no JSON), holding nothing.
    for i in 0..acp_tee::HTTP_MAX_CONNECTIONS {
        let head = format!(
            "POST /acp HTTP/1.1\r\nHost: t\r\nAcp-Connection-Id: made-up-{i}\r\nContent-Length: 1\r\nConnection: close\r\n\r\n"
        );
        let (status, _) = raw_exchange(&proxy, &head, b"x");
        let direct = raw_exchange_to(&agent.url, &head, b"x").0;
        assert_eq!(status, direct, "a made-up connection id is answered as the upstream answers it");
    }
    // No stall and no made-up id took a recording: only the held session has a recorder.
    assert_eq!(recorders_of(proxy.pid()).len(), 1, "recorders besides the held session's");
    // While all of that is held open, the SDK's clients work as they do direct.
    for args in [&[][..], &["--ws"]] {
        let direct = client(&agent.url, args);
        let through = client(&proxy.url, args);
        assert_eq!(through, direct, "{args:?}");
    }
    // And the session opened before the stalls ends as it should (its
    // close goes through).
    before.stdin.take().unwrap().write_all(b"go\n").unwrap();
    let status = wait_within(&mut before, Duration::from_secs(60)).expect("the held session ended");
    assert!(status.success(), "the session opened before the stalls failed");
    drop(held);
}

/// Like [`raw_exchange`], to any `http://HOST:PORT/...` URL.
fn raw_exchange_to(url: &str, head: &str, body: &[u8]) -> (String, String) {
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

#[test]
fn headers_and_bodies_that_stall_are_cut_off_in_time() {
    let agent = Agent::start();
    let store = TempStore::new();
    let proxy = Proxy::start(&store.db, &agent.url);
    let started = Instant::now();
    // Half a request head, then nothing: closed after the header timeout.
    let mut half = stalled(&proxy, "POST /acp HTTP/1.1\r\nHost: t\r\n", b"");
    half.set_read_timeout(Some(Duration::from_secs(60))).unwrap();
    // A whole head and part of its body: 408 after the body deadline.
    let head = format!("POST /acp HTTP/1.1\r\nHost: t\r\nContent-Length: {}\r\n\r\n", INITIALIZE.len());
    let mut part = stalled(&proxy, &head, &INITIALIZE.as_bytes()[..10]);
    part.set_read_timeout(Some(Duration::from_secs(90))).unwrap();
    let mut answer = Vec::new();
    let _ = half.read_to_end(&mut answer);
    let closed_after = started.elapsed();
    assert!(closed_after < Duration::from_secs(30), "half a head held its socket {closed_after:?}");
    let mut answer = Vec::new();
    let _ = part.read_to_end(&mut answer);
    let answer = String::from_utf8_lossy(&answer);
    assert!(answer.starts_with("HTTP/1.1 408"), "{answer}");
    assert!(answer.contains("BODY_DEADLINE"), "{answer}");
    assert!(started.elapsed() < Duration::from_secs(80), "the stalled body was held {:?}", started.elapsed());
    // Neither ever made a trace.
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

/// Opens a WebSocket to `url` by hand (`ws` path of an `http://` URL): the
/// socket once the `101` came, or the status line it got instead.
fn raw_websocket(url: &str) -> TcpStream {
    let addr = url.trim_start_matches("http://").split('/').next().unwrap().to_owned();
    let mut conn = TcpStream::connect(&addr).unwrap();
    conn.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    write!(
        conn,
        "GET /acp HTTP/1.1\r\nHost: {addr}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\
         Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n"
    )
    .unwrap();
    let mut head = Vec::new();
    let mut byte = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") {
        assert_eq!(conn.read(&mut byte).unwrap(), 1, "the upgrade was not answered: {head:?}");
        head.push(byte[0]);
    }
    let head = String::from_utf8_lossy(&head);
    assert!(head.starts_with("HTTP/1.1 101"), "{head}");
    conn
}

/// Reads WebSocket frames from `conn` until a close: its code (`Some(0)`
/// for a close without one), or `None` when the socket ended first.
fn close_code(conn: &mut TcpStream) -> Option<u16> {
    close_code_seeing_text(conn, &mut || {})
}

/// [`close_code`], calling `text` for each text frame before the close.
fn close_code_seeing_text(conn: &mut TcpStream, text: &mut dyn FnMut()) -> Option<u16> {
    let mut read = |n: usize| -> Option<Vec<u8>> {
        let mut buf = vec![0u8; n];
        conn.read_exact(&mut buf).ok().map(|()| buf)
    };
    loop {
        let head = read(2)?;
        let masked = head[1] & 0x80 != 0;
        let len = match head[1] & 0x7f {
            126 => u16::from_be_bytes(read(2)?.try_into().unwrap()) as usize,
            127 => u64::from_be_bytes(read(8)?.try_into().unwrap()) as usize,
            n => n as usize,
        };
        let key = if masked { read(4)? } else { vec![0; 4] };
        let payload: Vec<u8> = read(len)?.iter().enumerate().map(|(i, b)| b ^ key[i % 4]).collect();
        if head[0] & 0x0f == 0x1 {
            text();
        }
        if head[0] & 0x0f == 0x8 {
            return Some(if payload.len() >= 2 { u16::from_be_bytes([payload[0], payload[1]]) } else { 0 });
        }
    }
}

/// A client frame: `first` (FIN, RSV and opcode bits), masked (with the
/// zero key, so the payload reads as it is) unless `unmasked`.
fn client_frame(first: u8, payload: &[u8], unmasked: bool) -> Vec<u8> {
    let mut frame = vec![first, payload.len() as u8 | if unmasked { 0 } else { 0x80 }];
    if !unmasked {
        frame.extend_from_slice(&[0; 4]);
    }
    frame.extend_from_slice(payload);
    frame
}

#[test]
fn websocket_protocol_errors_are_closed_with_the_code_the_upstream_gives_directly() {
    let agent = Agent::start();
    let store = TempStore::new();
    let proxy = Proxy::start(&store.db, &agent.url);
    let cases: [(&str, Vec<u8>); 5] = [
        ("invalid UTF-8", client_frame(0x81, &[0xff, 0xfe, 0xfd], false)),
        ("RSV1 without an extension", client_frame(0xc1, b"{}", false)),
        ("an unmasked frame", client_frame(0x81, b"{}", true)),
        ("a stray continuation", client_frame(0x80, b"{}", false)),
        ("a close of one byte", client_frame(0x88, &[3], false)),
    ];
    for (what, frame) in &cases {
        let mut direct = raw_websocket(&agent.url);
        direct.write_all(frame).unwrap();
        let direct = close_code(&mut direct);
        assert!(matches!(direct, Some(1002 | 1007)), "{what}: the upstream itself closes with {direct:?}");
        let mut through = raw_websocket(&proxy.url);
        through.write_all(frame).unwrap();
        assert_eq!(close_code(&mut through), direct, "{what}: through the proxy");
    }
}

/// An upstream of our own that takes one WebSocket at a time by hand and
/// reports the close code the proxy sent it (`None`: the socket ended
/// without a close). Its URL.
/// A message on `texts` for each text message it got.
fn websocket_upstream() -> (String, std::sync::mpsc::Receiver<Option<u16>>, std::sync::mpsc::Receiver<()>) {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/acp", listener.local_addr().unwrap());
    let (tx, rx) = std::sync::mpsc::channel();
    let (texts_tx, texts) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for conn in listener.incoming() {
            let Ok(mut conn) = conn else { return };
            let (tx, texts_tx) = (tx.clone(), texts_tx.clone());
            std::thread::spawn(move || {
                let mut head = Vec::new();
                let mut byte = [0u8; 1];
                while !head.ends_with(b"\r\n\r\n") {
                    if conn.read(&mut byte).unwrap_or(0) == 0 {
                        return;
                    }
                    head.push(byte[0]);
                }
                conn.write_all(
                    b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\
                      Acp-Connection-Id: ws1\r\nSec-WebSocket-Accept: s3pPLMBiTxaQ9kYGzzhZRbK+xOo=\r\n\r\n",
                )
                .unwrap();
                let _ = tx.send(close_code_seeing_text(&mut conn, &mut || {
                    let _ = texts_tx.send(());
                }));
            });
        }
    });
    (url, rx, texts)
}

#[test]
fn a_vanished_websocket_client_and_a_stopped_proxy_close_with_1001_going_away() {
    let (upstream, closes, texts) = websocket_upstream();
    let store = TempStore::new();
    let mut proxy = Proxy::start(&store.db, &upstream);
    // A client that vanishes without a close: the upstream hears 1001.
    let mut gone = raw_websocket(&proxy.url);
    gone.write_all(&client_frame(0x81, br#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{}}"#, false))
        .unwrap();
    drop(gone);
    assert_eq!(closes.recv_timeout(Duration::from_secs(20)).unwrap(), Some(1001));
    // (Its text came before its close.)
    texts.try_recv().expect("the upstream got the first initialize");
    let traces = store.ended_traces(1);
    // The proxy stopped with a WebSocket open: both sides hear 1001, and
    // the trace says the proxy was stopped.
    let mut open = raw_websocket(&proxy.url);
    open.write_all(&client_frame(0x81, br#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{}}"#, false))
        .unwrap();
    // The message is recorded before it goes on: once the upstream has it
    // the trace holds it.
    texts.recv_timeout(Duration::from_secs(20)).expect("the upstream got the second initialize");
    assert!(proxy.stop().success());
    assert_eq!(close_code(&mut open), Some(1001), "the client heard no going-away close");
    assert_eq!(closes.recv_timeout(Duration::from_secs(20)).unwrap(), Some(1001));
    let all = store.ended_traces(2);
    let gone_trace = &all[0];
    assert_eq!(gone_trace.id, traces[0].id);
    assert!(
        gone_trace.end_reason.as_deref().unwrap_or_default().contains("the client's WebSocket ended"),
        "{gone_trace:?}"
    );
    let stopped = &all[1];
    assert_eq!(stopped.end_reason.as_deref(), Some("the proxy was stopped by signal 15"), "{stopped:?}");
    assert_eq!(stopped.exit_code, Some(0));
    assert!(notes(&store, stopped.id).iter().any(|n| n.contains("the proxy was stopped by signal 15")));
    assert_eq!(store.frames(stopped.id).iter().filter(|f| f.method.as_deref() == Some("initialize")).count(), 1);
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
