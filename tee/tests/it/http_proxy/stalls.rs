//! Clients that stall: headers or bodies that never finish, made-up
//! connection ids; none of them may lock an honest client out.

use super::faults::{raw_exchange, raw_exchange_to, INITIALIZE};
use super::*;
use std::io::Read;
use std::net::TcpStream;

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
    let before = held_client(&proxy.url, 1);
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
    // While all of that is held open, the SDK's clients work as they do
    // direct, and the session opened before the stalls ends as it should
    // (its close goes through).
    honest_clients_work_as_direct(&agent, &proxy, before);
    drop(held);
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
