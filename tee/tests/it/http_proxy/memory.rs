//! The proxy's memory (#31 items 2 and 6): one connection or one client
//! address cannot take the room the others' messages need, and many
//! connections sending large messages both ways keep the proxy within
//! `MEMORY_BYTES` and each recorder process within its own bound.

use super::*;
use std::io::Read;
use std::net::{IpAddr, SocketAddr, TcpStream};
use std::os::fd::FromRawFd;
use std::sync::mpsc;
use std::sync::Arc;

const INITIALIZE: &str = r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":1}}"#;

/// The proxy's `HOST:PORT`.
fn proxy_addr(proxy: &Proxy) -> SocketAddr {
    proxy.url.trim_start_matches("http://").split('/').next().unwrap().parse().unwrap()
}

/// A socket to `to` from address `from` (any of 127.0.0.0/8 is this host).
fn connect_from(from: IpAddr, to: SocketAddr) -> TcpStream {
    let (IpAddr::V4(from), SocketAddr::V4(to)) = (from, to) else { panic!("IPv4 only") };
    let sockaddr = |ip: std::net::Ipv4Addr, port: u16| libc::sockaddr_in {
        sin_family: libc::AF_INET as libc::sa_family_t,
        sin_port: port.to_be(),
        sin_addr: libc::in_addr { s_addr: u32::from(ip).to_be() },
        sin_zero: [0; 8],
    };
    let len = std::mem::size_of::<libc::sockaddr_in>() as libc::socklen_t;
    // SAFETY: a new socket, owned by the TcpStream once connected; the
    // addresses are valid sockaddr_in values of the length given.
    unsafe {
        let fd = libc::socket(libc::AF_INET, libc::SOCK_STREAM | libc::SOCK_CLOEXEC, 0);
        assert!(fd >= 0, "socket: {}", std::io::Error::last_os_error());
        let stream = TcpStream::from_raw_fd(fd);
        let local = sockaddr(from, 0);
        assert_eq!(libc::bind(fd, (&raw const local).cast(), len), 0, "bind {from}");
        let remote = sockaddr(*to.ip(), to.port());
        assert_eq!(libc::connect(fd, (&raw const remote).cast(), len), 0, "connect {to}");
        stream
    }
}

/// Reads one HTTP/1.1 answer with a `Content-Length`: its head and body.
fn read_answer(conn: &mut TcpStream) -> (String, Vec<u8>) {
    let mut head = Vec::new();
    let mut byte = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") {
        conn.read_exact(&mut byte).expect("an answer's head");
        head.push(byte[0]);
    }
    let head = String::from_utf8_lossy(&head).into_owned();
    let len = header(&head, "content-length").map_or(0, |v| v.parse().unwrap());
    let mut body = vec![0u8; len];
    conn.read_exact(&mut body).expect("an answer's body");
    (head, body)
}

/// The value of header `name` in `head`.
fn header(head: &str, name: &str) -> Option<String> {
    head.lines().find_map(|l| {
        let (n, v) = l.split_once(':')?;
        n.trim().eq_ignore_ascii_case(name).then(|| v.trim().to_owned())
    })
}

/// A new ACP connection through the proxy from address `from`: its id.
fn initialize_from(proxy: &Proxy, from: IpAddr) -> String {
    let mut conn = connect_from(from, proxy_addr(proxy));
    write!(
        conn,
        "POST /acp HTTP/1.1\r\nHost: t\r\nContent-Type: application/json\r\n\
         Accept: application/json, text/event-stream\r\nConnection: close\r\nContent-Length: {}\r\n\r\n{INITIALIZE}",
        INITIALIZE.len()
    )
    .unwrap();
    let mut answer = String::new();
    let _ = conn.read_to_string(&mut answer);
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    header(&answer, "acp-connection-id").expect("the initialize answer names the connection")
}

/// Sends, from `from` on connection `id`, a `POST` of no declared length
/// (chunked: it takes room as it comes, and is refused when it finds none)
/// with all of a `MAX_MESSAGE_BYTES` message but its last byte, then holds
/// it open. True when the proxy took those bytes in, false when it
/// refused the body. (One at a time: bodies growing side by side could
/// each find the room the others took and all be refused.)
fn stall_body(proxy: &Proxy, from: IpAddr, id: &str) -> bool {
    let mut conn = connect_from(from, proxy_addr(proxy));
    let (took_tx, took) = mpsc::channel();
    let head = format!(
        "POST /acp HTTP/1.1\r\nHost: t\r\nContent-Type: application/json\r\nAcp-Connection-Id: {id}\r\n\
         Transfer-Encoding: chunked\r\n\r\n"
    );
    std::thread::spawn(move || {
        let mut left = acp_tee::HTTP_MAX_MESSAGE_BYTES - 1;
        let chunk = vec![b' '; 1 << 20];
        let mut sent = conn.write_all(head.as_bytes());
        while sent.is_ok() && left > 0 {
            let n = left.min(chunk.len());
            sent = write!(conn, "{n:x}\r\n")
                .and_then(|()| conn.write_all(&chunk[..n]))
                .and_then(|()| conn.write_all(b"\r\n"));
            left -= n;
        }
        let _ = took_tx.send(sent.is_ok());
        // Held until the proxy gives up on it (or the test ends).
        let _ = conn.read_to_end(&mut Vec::new());
    });
    took.recv_timeout(Duration::from_secs(60)).expect("a stalled body was neither taken nor refused")
}

#[test]
fn a_connection_or_an_address_filling_its_share_locks_no_other_connection_out() {
    let agent = Agent::start();
    let store = TempStore::new();
    let proxy = Proxy::start(&store.db, &agent.url);
    // A session opened before, held open across what follows.
    let before = held_client(&proxy.url, 1);
    let big = acp_tee::HTTP_MAX_MESSAGE_BYTES;
    // One connection from the honest clients' own address: bodies past
    // what its share holds.
    let local: IpAddr = [127, 0, 0, 1].into();
    let share = acp_tee::HTTP_CONNECTION_BYTES / big;
    let greedy = initialize_from(&proxy, local);
    let mut taken = 0;
    for _ in 0..2 * share {
        taken += usize::from(stall_body(&proxy, local, &greedy));
    }
    // Connections from another address: bodies past what its share holds.
    let other: IpAddr = [127, 0, 0, 2].into();
    let address_share = acp_tee::HTTP_ADDRESS_BYTES / big;
    for _ in 0..address_share.div_ceil(share) + 1 {
        let id = initialize_from(&proxy, other);
        for _ in 0..share {
            taken += usize::from(stall_body(&proxy, other, &id));
        }
    }
    // The shares are full.
    eprintln!("the proxy took {taken} stalled bodies");
    assert!(taken >= share + address_share, "the proxy took {taken} stalled bodies");
    // The SDK's clients work as they do direct, and the session opened
    // before ends as it should.
    honest_clients_work_as_direct(&agent, &proxy, before);
}

/// An upstream of our own (axum, on 127.0.0.1): a `POST` without
/// `Acp-Connection-Id` is an `initialize`, answered with a new id; any
/// other `POST` is answered with a JSON-RPC result as large as its body.
fn answering_upstream() -> String {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
        runtime.block_on(async move {
            let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
            tx.send(listener.local_addr().unwrap()).unwrap();
            let next = Arc::new(std::sync::atomic::AtomicU64::new(0));
            let app = axum::Router::new()
                .route(
                    "/acp",
                    axum::routing::post(move |headers: axum::http::HeaderMap, body: axum::body::Bytes| {
                        let next = next.clone();
                        async move {
                            let answer = if headers.contains_key("acp-connection-id") {
                                let id: Value = serde_json::from_slice(&body).map(|v: Value| v["id"].clone()).unwrap();
                                let pad = body.len().saturating_sub(60);
                                format!(r#"{{"jsonrpc":"2.0","id":{id},"result":{{"pad":"{}"}}}}"#, "y".repeat(pad))
                            } else {
                                r#"{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":1}}"#.to_owned()
                            };
                            let id = format!("c{}", next.fetch_add(1, std::sync::atomic::Ordering::SeqCst));
                            let mut response = axum::response::Response::new(axum::body::Body::from(answer));
                            let headers = response.headers_mut();
                            headers.insert("content-type", axum::http::HeaderValue::from_static("application/json"));
                            headers.insert("acp-connection-id", axum::http::HeaderValue::from_str(&id).unwrap());
                            response
                        }
                    }),
                )
                .layer(axum::extract::DefaultBodyLimit::disable());
            axum::serve(listener, app).await.unwrap();
        });
    });
    format!("http://{}/acp", rx.recv().unwrap())
}

/// `VmHWM` (peak resident memory) of process `pid`, in bytes.
fn vm_hwm(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let kib: u64 = status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap();
    kib * 1024
}

/// Waits until the store holds `messages` requests and responses for each
/// of [`CONNECTIONS`] connections (notes, such as a message passed on
/// unrecorded, are not counted).
fn wait_for_stored(store: &TempStore, messages: usize) {
    let deadline = Instant::now() + Duration::from_secs(300);
    let want = (CONNECTIONS * messages) as i64;
    loop {
        let stored: i64 = if store.db.exists() {
            let db =
                rusqlite::Connection::open_with_flags(&store.db, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY).unwrap();
            db.query_row("SELECT count(*) FROM frames WHERE kind IN ('request', 'response')", [], |r| r.get(0))
                .unwrap_or(0)
        } else {
            0
        };
        if stored == want {
            return;
        }
        assert!(stored < want, "{stored} messages stored, more than the {want} sent");
        assert!(Instant::now() < deadline, "{stored} of {want} messages stored within 300 s");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Sends `body` on connection `id` and reads its answer, as a client the
/// proxy tells "try again" (503: it waited `BODY_DEADLINE` for room) does:
/// again, on a new socket.
fn post_until_taken(to: SocketAddr, id: &str, body: &[u8]) -> Vec<u8> {
    for _ in 0..20 {
        let mut conn = TcpStream::connect(to).unwrap();
        write!(
            conn,
            "POST /acp HTTP/1.1\r\nHost: t\r\nContent-Type: application/json\r\nAcp-Connection-Id: {id}\r\n\
             Content-Length: {}\r\n\r\n",
            body.len()
        )
        .unwrap();
        // A 503 may come (and the socket close) before all of it is sent.
        let _ = conn.write_all(body);
        let (head, answer) = read_answer(&mut conn);
        if head.starts_with("HTTP/1.1 503") {
            continue;
        }
        assert!(head.starts_with("HTTP/1.1 200"), "{head}");
        return answer;
    }
    panic!("20 POSTs of connection {id} were answered 503");
}

/// Connections of the load, and messages each way per connection.
const CONNECTIONS: usize = 32;
const MESSAGES: usize = 3;
/// Each message's size: near `MAX_MESSAGE_BYTES`.
const MESSAGE: usize = 15 << 20;

#[test]
fn many_connections_with_large_messages_both_ways_stay_within_the_memory_bound() {
    let upstream = answering_upstream();
    let store = TempStore::new();
    let proxy = Proxy::start(&store.db, &upstream);
    let to = proxy_addr(&proxy);
    // Every connection begun (and its recorder started) first: what the
    // proxy and each recorder hold then is where the bound starts.
    let ids: Vec<String> = (0..CONNECTIONS)
        .map(|_| {
            let mut conn = TcpStream::connect(to).unwrap();
            write!(
                conn,
                "POST /acp HTTP/1.1\r\nHost: t\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{INITIALIZE}",
                INITIALIZE.len()
            )
            .unwrap();
            let (head, _) = read_answer(&mut conn);
            assert!(head.starts_with("HTTP/1.1 200"), "{head}");
            header(&head, "acp-connection-id").unwrap()
        })
        .collect();
    // (Their recorders exist once they stored the initialize.)
    wait_for_stored(&store, 2);
    let recorders = recorders_of(proxy.pid());
    assert_eq!(recorders.len(), CONNECTIONS);
    let proxy_base = vm_hwm(proxy.pid());
    let recorder_base = recorders.iter().map(|&pid| vm_hwm(pid)).max().unwrap();
    let pad = "x".repeat(MESSAGE - 80);
    let pad = Arc::new(pad);
    let clients: Vec<_> = ids
        .into_iter()
        .map(|id| {
            let pad = pad.clone();
            std::thread::spawn(move || {
                for i in 1..=MESSAGES {
                    let body = format!(r#"{{"jsonrpc":"2.0","id":{i},"method":"x/big","params":{{"pad":"{pad}"}}}}"#);
                    let answer = post_until_taken(to, &id, body.as_bytes());
                    assert!(answer.len() > MESSAGE - 200, "an answer of {} bytes", answer.len());
                }
            })
        })
        .collect();
    for client in clients {
        client.join().unwrap();
    }
    // Every message stored (the recorders have done their work), each
    // recorder still running.
    wait_for_stored(&store, (1 + MESSAGES) * 2);
    let proxy_peak = vm_hwm(proxy.pid());
    let recorder_peaks: Vec<u64> = recorders.iter().map(|&pid| vm_hwm(pid)).collect();
    let recorder_peak = *recorder_peaks.iter().max().unwrap();
    let recorders_sum: u64 = recorder_peaks.iter().sum();
    let mib = |b: u64| b >> 20;
    eprintln!(
        "http-proxy memory: proxy VmHWM {} MiB (at start {} MiB, MEMORY_BYTES {} MiB); recorders' VmHWM {} MiB \
         at most each (at start {} MiB, RECORDER_BYTES {} MiB), {} MiB together",
        mib(proxy_peak),
        mib(proxy_base),
        mib(acp_tee::HTTP_MEMORY_BYTES as u64),
        mib(recorder_peak),
        mib(recorder_base),
        mib(acp_tee::HTTP_RECORDER_BYTES as u64),
        mib(recorders_sum),
    );
    assert!(
        proxy_peak <= proxy_base + acp_tee::HTTP_MEMORY_BYTES as u64,
        "the proxy peaked at {} MiB: more than its {} MiB at start and MEMORY_BYTES",
        mib(proxy_peak),
        mib(proxy_base)
    );
    let one_number = proxy_base + CONNECTIONS as u64 * recorder_base + acp_tee::HTTP_PEAK_BYTES as u64;
    assert!(proxy_peak + recorders_sum <= one_number, "the proxy and its recorders peaked past PEAK_BYTES");
    for peak in recorder_peaks {
        assert!(
            peak <= recorder_base + acp_tee::HTTP_RECORDER_BYTES as u64,
            "a recorder peaked at {} MiB: more than {} MiB at start and RECORDER_BYTES",
            mib(peak),
            mib(recorder_base)
        );
    }
}
