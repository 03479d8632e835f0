//! The server and the readers under hostile use: downloads that never read,
//! expensive searches, a store with a corrupted page, a read-only store,
//! tokens with URL-special characters, errors worded once. Each runs the real
//! `acp-tee` binary (or a real server on 127.0.0.1:0) on real SQLite files,
//! and talks raw HTTP where what is on the wire matters.

mod read_only;

use crate::common::*;
use acp_tee::Framer;
use acp_tee::{NewFrame, Store};
use acp_tee::{TraceEnd, TraceStart};
use acp_tee_shared::Direction;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// Stores one ended trace made of `lines` (each sent one way, a frame per
/// line) in a new store at `db`; returns its id.
fn store_lines(db: &Path, lines: impl IntoIterator<Item = (Direction, String)>) -> i64 {
    let mut store = Store::create_or_open(db).unwrap();
    store.maintain(0).unwrap();
    let mut store = acp_tee::Recording::new(store).unwrap();
    let start = TraceStart {
        protocol: None,
        name: Some("hostile".into()),
        command: vec!["agent".into()],
        cwd: None,
        mode: "wrap".into(),
        started_at: "2026-01-01T00:00:00Z".into(),
    };
    let id = store.create_trace(&start, std::process::id()).unwrap();
    let mut framer = Framer::new();
    let mut batch: Vec<NewFrame> = Vec::new();
    for (t, (dir, line)) in lines.into_iter().enumerate() {
        framer.chunk(dir, t as u64 * 1000, format!("{line}\n").as_bytes(), |f| batch.push(f));
        if batch.len() >= 500 {
            store.insert_frames(id, &batch).unwrap();
            batch.clear();
        }
    }
    store.insert_frames(id, &batch).unwrap();
    let end = TraceEnd { exit_code: Some(0), exit_signal: None, end_reason: "done".into() };
    store.finish_trace(id, &end, 0, "2026-01-01T00:00:01Z").unwrap();
    id
}

/// `acp-tee serve` on 127.0.0.1, any free port; killed when dropped.
struct Served {
    child: Child,
    url: String,
    addr: SocketAddr,
}

impl Served {
    fn start(db: &Path, extra: &[&str]) -> Served {
        Served::start_as(Command::new(bin()), db, extra)
    }

    /// Runs `acp-tee serve` through `cmd` (the binary, or a wrapper that
    /// runs it as another user).
    fn start_as(mut cmd: Command, db: &Path, extra: &[&str]) -> Served {
        let mut child = cmd
            .args(["serve", "--db", db.to_str().unwrap(), "--port", "0"])
            .args(extra)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap()).read_line(&mut line).unwrap();
        let Some(url) = line.trim().split(" at ").nth(1).map(str::to_owned) else {
            let mut err = String::new();
            child.stderr.take().unwrap().read_to_string(&mut err).unwrap();
            panic!("serve printed no URL: {line:?}, stderr: {err}");
        };
        let host = url.strip_prefix("http://").unwrap().split('/').next().unwrap();
        let addr = host.parse().unwrap();
        Served { child, url, addr }
    }
}

impl Drop for Served {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A response read off the wire.
#[derive(Debug)]
struct Raw {
    status: u16,
    head: String,
    body: Vec<u8>,
    /// For a chunked body: whether the last (empty) chunk arrived, which is
    /// how a client tells a whole body from one cut off.
    complete: bool,
}

/// Sends `GET path` on a new connection and reads the whole response, for
/// at most `wait`; `Err` when it did not come in time.
fn get_raw(addr: SocketAddr, path: &str, wait: Duration) -> Result<Raw, String> {
    let deadline = Instant::now() + wait;
    let mut conn = TcpStream::connect(addr).map_err(|e| e.to_string())?;
    write!(conn, "GET {path} HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n").unwrap();
    let mut all = Vec::new();
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(format!("GET {path}: no whole answer within {wait:?} ({} bytes)", all.len()));
        }
        conn.set_read_timeout(Some(left)).unwrap();
        match conn.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => all.extend_from_slice(&buf[..n]),
            Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => break,
            Err(e) if matches!(e.kind(), std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut) => continue,
            Err(e) => return Err(format!("GET {path}: {e}")),
        }
    }
    parse_response(&all).ok_or_else(|| format!("GET {path}: not an HTTP response: {:?}", String::from_utf8_lossy(&all)))
}

fn parse_response(all: &[u8]) -> Option<Raw> {
    let end = all.windows(4).position(|w| w == b"\r\n\r\n")?;
    let head = String::from_utf8_lossy(&all[..end]).into_owned();
    let status = head.split(' ').nth(1)?.parse().ok()?;
    let rest = &all[end + 4..];
    if !head.to_ascii_lowercase().contains("transfer-encoding: chunked") {
        return Some(Raw { status, head, body: rest.to_vec(), complete: true });
    }
    let (mut body, mut at) = (Vec::new(), 0);
    loop {
        let Some(eol) = rest[at..].windows(2).position(|w| w == b"\r\n") else {
            return Some(Raw { status, head, body, complete: false });
        };
        let size = usize::from_str_radix(std::str::from_utf8(&rest[at..at + eol]).ok()?.trim(), 16).ok()?;
        at += eol + 2;
        if size == 0 {
            return Some(Raw { status, head, body, complete: true });
        }
        if rest.len() < at + size + 2 {
            body.extend_from_slice(&rest[at..]);
            return Some(Raw { status, head, body, complete: false });
        }
        body.extend_from_slice(&rest[at..at + size]);
        at += size + 2;
    }
}

/// The JSON body of `GET path`, which must answer `status` within `wait`.
fn get_json(addr: SocketAddr, path: &str, status: u16, wait: Duration) -> serde_json::Value {
    let resp = get_raw(addr, path, wait).unwrap();
    assert_eq!(resp.status, status, "GET {path}: {}", String::from_utf8_lossy(&resp.body));
    assert!(resp.head.to_ascii_lowercase().contains("content-type: application/json"), "GET {path}: {}", resp.head);
    serde_json::from_slice(&resp.body).unwrap_or_else(|e| panic!("GET {path}: {e}"))
}

/// A `session/update` notification of about `size` bytes, numbered `n`.
fn update(n: usize, size: usize) -> String {
    let text = "lorem ipsum dolor sit amet ".repeat(size / 27 + 1);
    format!(r#"{{"jsonrpc":"2.0","method":"session/update","params":{{"n":{n},"text":"{text}"}}}}"#)
}

#[test]
fn stalled_export_downloads_never_hold_up_the_api() {
    let store = TempStore::new();
    // 2,500 frames of 24 KB: a 60 MB export, far more than the socket
    // buffers of a client that does not read can take.
    let id = store_lines(&store.db, (0..2500).map(|n| (Direction::AgentToClient, update(n, 24_000))));
    let served = Served::start(&store.db, &[]);
    let export = format!("/api/traces/{id}/export?format=ndjson");
    // More stalled downloads than the server has query slots (8).
    let stalled: Vec<TcpStream> = (0..12)
        .map(|_| {
            let mut conn = TcpStream::connect(served.addr).unwrap();
            write!(conn, "GET {export} HTTP/1.1\r\nHost: t\r\n\r\n").unwrap();
            conn
        })
        .collect();
    // Each download has started (its head arrived); none is read further.
    for (i, conn) in stalled.iter().enumerate() {
        conn.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
        let mut head = Vec::new();
        let mut byte = [0u8; 1];
        while !head.ends_with(b"\r\n\r\n") {
            (&*conn).read_exact(&mut byte).unwrap_or_else(|e| panic!("download {i} never started: {e}"));
            head.push(byte[0]);
        }
        assert!(head.starts_with(b"HTTP/1.1 200"), "{}", String::from_utf8_lossy(&head));
    }
    // The API answers as if they were not there.
    let wait = Duration::from_secs(5);
    for path in
        ["/api/traces".to_owned(), format!("/api/traces/{id}/frames?limit=5"), format!("/api/traces/{id}/stats")]
    {
        let started = Instant::now();
        get_json(served.addr, &path, 200, wait);
        eprintln!("{path} with 12 stalled downloads: {:?}", started.elapsed());
    }
    // A search scans the 60 MB (nothing is indexed yet): not instant in a
    // debug build, but not held up either.
    let started = Instant::now();
    let found = get_json(served.addr, &format!("/api/traces/{id}/frames?q=lorem&limit=1"), 200, wait * 12);
    eprintln!("a search of the 60 MB with 12 stalled downloads: {:?}", started.elapsed());
    assert_eq!(found["total"], 2500);
    // A stalled download that is read again goes on to the whole export.
    let cli = Command::new(bin())
        .args(["export", "--db", store.db.to_str().unwrap(), "--trace", &id.to_string(), "--format", "ndjson"])
        .output()
        .unwrap();
    assert!(cli.status.success());
    let mut rest = Vec::new();
    let mut conn = &stalled[0];
    conn.set_read_timeout(Some(Duration::from_secs(60))).unwrap();
    let mut buf = vec![0u8; 1 << 20];
    let body = loop {
        let n = conn.read(&mut buf).unwrap();
        assert!(n > 0, "the download ended early");
        rest.extend_from_slice(&buf[..n]);
        let mut framed = b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n".to_vec();
        framed.extend_from_slice(&rest);
        let resp = parse_response(&framed).unwrap();
        if resp.complete {
            break resp.body;
        }
    };
    assert!(body == cli.stdout, "the resumed download differs from the CLI export");
}

#[test]
fn more_exports_than_the_server_runs_at_once_are_refused_not_queued() {
    let store = TempStore::new();
    let id = store_lines(&store.db, (0..2500).map(|n| (Direction::AgentToClient, update(n, 24_000))));
    let served = Served::start(&store.db, &[]);
    let export = format!("/api/traces/{id}/export?format=json");
    let stalled: Vec<TcpStream> = (0..acp_tee::MAX_EXPORTS)
        .map(|_| {
            let mut conn = TcpStream::connect(served.addr).unwrap();
            write!(conn, "GET {export} HTTP/1.1\r\nHost: t\r\n\r\n").unwrap();
            let mut first = [0u8; 12];
            conn.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
            conn.read_exact(&mut first).unwrap();
            assert_eq!(&first, b"HTTP/1.1 200");
            conn
        })
        .collect();
    let refused = get_json(served.addr, &export, 503, Duration::from_secs(5));
    assert!(refused["error"].as_str().unwrap().contains("exports"), "{refused}");
    get_json(served.addr, "/api/traces", 200, Duration::from_secs(5));
    // Once one ends, another may start.
    drop(stalled);
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let resp = get_raw(served.addr, &format!("/api/traces/{id}/export?format=jsons"), Duration::from_secs(30));
        match resp {
            Ok(r) if r.status == 200 => {
                assert!(r.complete);
                break;
            }
            other => assert!(Instant::now() < deadline, "exports stay refused: {other:?}"),
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn a_search_of_one_word_repeated_costs_what_the_word_costs() {
    let store = TempStore::new();
    let id = store_lines(&store.db, (0..30_000).map(|n| (Direction::AgentToClient, update(n, 60))));
    let mut s = Store::open_existing(&store.db).unwrap();
    while s.index_for_search(10_000).unwrap() > 0 {}
    drop(s);
    let served = Served::start(&store.db, &[]);
    let search = |q: &str| {
        let started = Instant::now();
        let page =
            get_json(served.addr, &format!("/api/traces/{id}/frames?limit=5&q={q}"), 200, Duration::from_secs(120));
        (started.elapsed(), page["total"].as_i64().unwrap())
    };
    let (once, total) = search("lorem");
    assert_eq!(total, 30_000);
    // 996 bytes: "lorem" 166 times.
    let repeated = "lorem+".repeat(166);
    let (many, total) = search(&repeated);
    assert_eq!(total, 30_000);
    eprintln!("q=lorem: {once:?}; q=lorem x166: {many:?}");
    assert!(many < once * 3 + Duration::from_millis(500), "q=lorem {once:?}, repeated {many:?}");
    // Too many different words are refused, saying how many are allowed.
    let words: String = (0..200).map(|i| format!("w{i}+")).collect();
    let refused = get_json(served.addr, &format!("/api/traces/{id}/frames?q={words}"), 400, Duration::from_secs(5));
    let max = acp_tee::MAX_SEARCH_TERMS.to_string();
    assert!(refused["error"].as_str().unwrap().contains(&max), "{refused}");
}

#[test]
fn slow_searches_in_parallel_leave_room_for_other_queries() {
    let store = TempStore::new();
    // Not indexed: every search scans the whole trace.
    let id = store_lines(&store.db, (0..60_000).map(|n| (Direction::AgentToClient, update(n, 400))));
    let served = Served::start(&store.db, &[]);
    let addr = served.addr;
    let done = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let searches: Vec<_> = (0..8)
        .map(|i| {
            let done = done.clone();
            std::thread::spawn(move || {
                let started = Instant::now();
                // A word found nowhere: the scan reads every frame.
                get_json(addr, &format!("/api/traces/{id}/frames?q=absent{i}"), 200, Duration::from_secs(300));
                done.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                started.elapsed()
            })
        })
        .collect();
    // While they run (until the first is answered), the list of traces is
    // answered at once, every time it is asked for.
    let mut lists = Vec::new();
    while done.load(std::sync::atomic::Ordering::SeqCst) == 0 {
        let started = Instant::now();
        get_json(addr, "/api/traces", 200, Duration::from_secs(300));
        lists.push(started.elapsed());
    }
    let listed = lists.iter().copied().max().expect("the searches took longer than one listing");
    let slowest = searches.into_iter().map(|h| h.join().unwrap()).max().unwrap();
    eprintln!("/api/traces during 8 scans, {} times: at most {listed:?}; slowest scan {slowest:?}", lists.len());
    assert!(listed * 4 < slowest, "/api/traces took {listed:?} while searches took {slowest:?}");
}

/// Overwrites the page of `db` (a closed store) that holds `marker` with
/// bytes no page can hold.
fn corrupt_page_holding(db: &Path, marker: &str) {
    let page_size = page_size(db);
    let mut bytes = std::fs::read(db).unwrap();
    let at = bytes.windows(marker.len()).position(|w| w == marker.as_bytes()).expect("marker in the file");
    let page = at / page_size * page_size;
    bytes[page..page + page_size].fill(0xA5);
    std::fs::write(db, bytes).unwrap();
}

/// The store's page size, read from its header.
fn page_size(db: &Path) -> usize {
    let mut header = [0u8; 18];
    std::fs::File::open(db).unwrap().read_exact(&mut header).unwrap();
    match u16::from_be_bytes([header[16], header[17]]) {
        1 => 65536,
        n => n as usize,
    }
}

#[test]
fn a_read_error_mid_export_fails_the_download_and_the_cli() {
    let store = TempStore::new();
    let id = store_lines(
        &store.db,
        (0..3000).map(|n| {
            (Direction::AgentToClient, format!(r#"{{"method":"m","params":{{"text":"frame-{n:05}-marker"}}}}"#))
        }),
    );
    assert!(!store.db.with_extension("db-wal").exists(), "the log was folded into the file on close");
    corrupt_page_holding(&store.db, "frame-01500-marker");

    let served = Served::start(&store.db, &[]);
    let resp =
        get_raw(served.addr, &format!("/api/traces/{id}/export?format=ndjson"), Duration::from_secs(30)).unwrap();
    assert_eq!(resp.status, 200, "the error comes after the download started");
    assert!(!resp.body.is_empty(), "frames before the bad page were sent");
    assert!(!resp.complete, "a download cut off by a read error must not look complete");

    let cli = Command::new(bin())
        .args(["export", "--db", store.db.to_str().unwrap(), "--trace", &id.to_string(), "--format", "ndjson"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&cli.stderr);
    assert_eq!(cli.status.code(), Some(1), "stderr: {stderr}");
    assert!(stderr.contains("malformed"), "{stderr}");
}

#[test]
fn weak_tokens_are_refused() {
    let store = TempStore::new();
    store_lines(&store.db, [(Direction::ClientToAgent, update(0, 10))]);
    for (token, bind) in
        [("", "0.0.0.0"), ("", "127.0.0.1"), ("short", "0.0.0.0"), ("tab\tinside-a-long-token", "0.0.0.0")]
    {
        let mut child = Command::new(bin())
            .args(["serve", "--db", store.db.to_str().unwrap(), "--port", "0", "--bind", bind, "--token", token])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let deadline = Instant::now() + Duration::from_secs(10);
        while child.try_wait().unwrap().is_none() {
            if Instant::now() > deadline {
                let _ = child.kill();
                let out = child.wait_with_output().unwrap();
                panic!("--token {token:?} --bind {bind} was accepted: {}", String::from_utf8_lossy(&out.stdout));
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let out = child.wait_with_output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "--token {token:?} --bind {bind}: {stderr}");
        assert!(stderr.contains("--token"), "{stderr}");
        assert!(out.stdout.is_empty(), "nothing was served");
    }
}

#[test]
fn tokens_with_url_special_characters_work_as_printed() {
    let store = TempStore::new();
    store_lines(&store.db, [(Direction::ClientToAgent, update(0, 10))]);
    let token = "a+b&c=d%41 #x/?é;,\"long";
    let served = Served::start(&store.db, &["--bind", "0.0.0.0", "--token", token]);
    // The printed URL works as printed.
    let path_and_query = &served.url[served.url.find("/?").unwrap()..];
    assert!(!path_and_query.contains(' ') && !path_and_query.contains('#'), "{}", served.url);
    let query = path_and_query.replacen('/', "/api/traces", 1);
    let port = served.addr.port();
    let local: SocketAddr = format!("127.0.0.1:{port}").parse().unwrap();
    get_json(local, &query, 200, Duration::from_secs(10));
    // So does another correct encoding, and the bearer header.
    let encoded: String = token.bytes().map(|b| format!("%{b:02X}")).collect();
    get_json(local, &format!("/api/traces?token={encoded}"), 200, Duration::from_secs(10));
    get_json(local, "/api/traces?token=a+b", 401, Duration::from_secs(10));
    get_json(local, "/api/traces?token=", 401, Duration::from_secs(10));
    let mut conn = TcpStream::connect(local).unwrap();
    write!(conn, "GET /api/traces HTTP/1.1\r\nHost: t\r\nConnection: close\r\nAuthorization: Bearer {token}\r\n\r\n")
        .unwrap();
    let mut all = Vec::new();
    conn.read_to_end(&mut all).unwrap();
    let resp = parse_response(&all).unwrap();
    assert_eq!(resp.status, 200, "{}", resp.head);
    // The cookie the first visit sets lets the next one in.
    let cookie = resp
        .head
        .lines()
        .find_map(|l| l.strip_prefix("set-cookie: "))
        .map(|c| c.split(';').next().unwrap().to_owned())
        .expect("a cookie");
    let mut conn = TcpStream::connect(local).unwrap();
    write!(conn, "GET /api/traces HTTP/1.1\r\nHost: t\r\nConnection: close\r\nCookie: {cookie}\r\n\r\n").unwrap();
    let mut all = Vec::new();
    conn.read_to_end(&mut all).unwrap();
    assert_eq!(parse_response(&all).unwrap().status, 200, "cookie {cookie}");
}

#[test]
fn errors_are_worded_once() {
    let store = TempStore::new();
    store_lines(&store.db, [(Direction::ClientToAgent, update(0, 10))]);
    set_user_version(&store.db, 999);
    let out = Command::new(bin()).args(["list", "--db", store.db.to_str().unwrap()]).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(stderr.matches("newer than this acp-tee knows").count(), 1, "{stderr}");
    assert_eq!(stderr.lines().count(), 1, "{stderr}");

    let other = TempStore::new();
    store_lines(&other.db, (0..100).map(|n| (Direction::ClientToAgent, update(n, 1000))));
    let out =
        Command::new(bin()).args(["export", "--db", other.db.to_str().unwrap(), "-o", "/dev/full"]).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(stderr.matches("No space left on device").count(), 1, "{stderr}");
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
}

/// Sets the schema version of the store at `db` to `version`, as a newer
/// acp-tee would have left it.
fn set_user_version(db: &Path, version: i64) {
    let conn = rusqlite::Connection::open(db).unwrap();
    conn.pragma_update(None, "user_version", version).unwrap();
}

/// A `session/new` with an http MCP server whose header and URL carry
/// secrets, and its response.
fn session_new_with_secrets() -> Vec<(Direction, String)> {
    let new = concat!(
        r#"{"jsonrpc":"2.0","id":1,"method":"session/new","params":{"cwd":"/w","mcpServers":[{"type":"http","name":"web","#,
        r#""url":"https://host/mcp?api_key=SECRET2&v=1","headers":[{"name":"Authorization","value":"Bearer SECRET"}]}]}}"#
    );
    vec![
        (Direction::ClientToAgent, new.to_owned()),
        (Direction::AgentToClient, r#"{"jsonrpc":"2.0","id":1,"result":{"sessionId":"s1"}}"#.to_owned()),
    ]
}

#[test]
fn the_api_masks_secrets_as_exports_do_unless_served_with_no_redact() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("t.db");
    let id = store_lines(&db, session_new_with_secrets());
    let wait = Duration::from_secs(20);
    let served = Served::start(&db, &[]);
    let detail = get_json(served.addr, &format!("/api/traces/{id}/frames/1"), 200, wait).to_string();
    let raw = get_raw(served.addr, &format!("/api/traces/{id}/frames/1/raw"), wait).unwrap();
    assert_eq!(raw.status, 200, "{}", raw.head);
    assert!(raw.head.to_ascii_lowercase().contains("content-type: application/octet-stream"), "{}", raw.head);
    let raw = String::from_utf8(raw.body).unwrap();
    for shown in [&detail, &raw] {
        assert!(!shown.contains("SECRET"), "{shown}");
        assert!(shown.contains("[REDACTED]") && shown.contains("v=1"), "{shown}");
    }
    drop(served);
    let unmasked = Served::start(&db, &["--no-redact"]);
    let detail = get_json(unmasked.addr, &format!("/api/traces/{id}/frames/1"), 200, wait).to_string();
    let raw = get_raw(unmasked.addr, &format!("/api/traces/{id}/frames/1/raw"), wait).unwrap();
    let raw = String::from_utf8(raw.body).unwrap();
    for shown in [&detail, &raw] {
        assert!(shown.contains("Bearer SECRET") && shown.contains("api_key=SECRET2"), "{shown}");
    }
    // Exports mask the URL's secret too.
    let out = Command::new(bin()).args(["export", "--db"]).arg(&db).output().unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(out.status.success() && text.contains("api_key=[REDACTED]&v=1"), "{text}");
    assert!(!text.contains("SECRET"), "{text}");
}

#[test]
fn a_32_mib_frame_has_a_small_fast_detail_and_downloads_whole() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("t.db");
    let text = "0123456789abcdef".repeat(2 * 1024 * 1024);
    let prompt = format!(
        r#"{{"jsonrpc":"2.0","id":1,"method":"session/prompt","params":{{"sessionId":"s","prompt":[{{"type":"text","text":"{text}"}}]}}}}"#
    );
    let id = store_lines(&db, [(Direction::ClientToAgent, prompt.clone())]);
    let served = Served::start(&db, &[]);
    let started = Instant::now();
    let resp = get_raw(served.addr, &format!("/api/traces/{id}/frames/1"), Duration::from_secs(30)).unwrap();
    let took = started.elapsed();
    assert_eq!(resp.status, 200);
    let limit = acp_tee_shared::api::DETAIL_MAX_BYTES;
    assert!(resp.body.len() < limit + 4096, "the detail is {} bytes", resp.body.len());
    assert!(took < Duration::from_secs(5), "the detail took {took:?}");
    let detail: serde_json::Value = serde_json::from_slice(&resp.body).unwrap();
    assert_eq!(detail["cut"], true);
    assert_eq!(detail["raw_size"], prompt.len() + 1);
    assert!(prompt.starts_with(detail["raw"].as_str().unwrap()));
    // A smaller limit, no limit, and a bad one.
    let small =
        get_json(served.addr, &format!("/api/traces/{id}/frames/1?max_bytes=100"), 200, Duration::from_secs(30));
    assert_eq!(small["raw"].as_str().unwrap().len(), 100);
    let whole = get_json(served.addr, &format!("/api/traces/{id}/frames/1?max_bytes=0"), 200, Duration::from_secs(60));
    assert_eq!(whole["raw"].as_str().unwrap(), format!("{prompt}\n"));
    assert!(whole.get("cut").is_none(), "{}", whole["cut"]);
    get_json(served.addr, &format!("/api/traces/{id}/frames/1?max_bytes=-1"), 400, Duration::from_secs(10));
    let raw = get_raw(served.addr, &format!("/api/traces/{id}/frames/1/raw"), Duration::from_secs(60)).unwrap();
    assert_eq!(raw.body, format!("{prompt}\n").into_bytes());
}

#[test]
fn trace_names_and_command_lines_are_masked_in_the_api() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("t.db");
    let name = "https://host/mcp?token=SECRET4";
    let agent = sh("cat >/dev/null # https://host/x?api_key=SECRET5");
    let out = run_with_input(tee_command(&db, &["--name", name], &as_strs(&agent)), b"{}\n".to_vec());
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let served = Served::start(&db, &[]);
    let wait = Duration::from_secs(20);
    for path in ["/api/traces", "/api/traces/1"] {
        let text = get_json(served.addr, path, 200, wait).to_string();
        assert!(!text.contains("SECRET") && text.contains("token=[REDACTED]"), "{path}: {text}");
    }
    drop(served);
    let unmasked = Served::start(&db, &["--no-redact"]);
    let text = get_json(unmasked.addr, "/api/traces", 200, wait).to_string();
    assert!(text.contains("SECRET4") && text.contains("SECRET5"), "{text}");
}
