//! WebSockets that break the protocol or vanish: the proxy closes each
//! with the code a WebSocket endpoint gives directly (1007, 1002, 1001), as
//! the upstream itself would.

use super::*;
use std::io::Read;
use std::net::TcpStream;

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
