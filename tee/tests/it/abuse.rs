//! Server abuse: path traversal, a crowd of live streams with one reader that
//! never reads, and a non-loopback bind without a token. (Bad parameters and
//! SQL metacharacters are in api.rs; the token compare and file mode in unit
//! and store tests.)

use crate::common::*;
use acp_tee::{app, AppState, Db};
use axum::body::Body;
use axum::http::{Request, StatusCode};
use http_body_util::BodyExt;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};
use tower::ServiceExt;

fn recorded_store() -> TempStore {
    let store = TempStore::new();
    let out = run_with_input(tee_command(&store.db, &[], &["cat"]), b"{\"id\":1,\"method\":\"ping\"}\n".to_vec());
    assert!(out.status.success());
    store.only_trace();
    store
}

#[tokio::test]
async fn static_paths_never_leave_the_app_directory() {
    let store = recorded_store();
    let dist = tempfile::tempdir().unwrap();
    std::fs::write(dist.path().join("index.html"), "<!doctype html><title>app</title>").unwrap();
    std::fs::write(dist.path().join("app.js"), "// app").unwrap();
    // A secret next to the app directory, and the store itself.
    std::fs::write(dist.path().parent().unwrap().join("secret.txt"), "SECRET").ok();
    let router = app(AppState::new(Db::open(&store.db).unwrap(), &store.db, None, Some(dist.path().to_owned())));
    for path in [
        "/../secret.txt",
        "/%2e%2e/secret.txt",
        "/..%2fsecret.txt",
        "/%2e%2e%2f%2e%2e%2fetc%2fpasswd",
        "/../../../../etc/passwd",
        "/app.js/../../secret.txt",
        "/%252e%252e/secret.txt",
        "//etc/passwd",
        "/.%2e/.%2e/etc/passwd",
    ] {
        let resp = router.clone().oneshot(Request::get(path).body(Body::empty()).unwrap()).await.unwrap();
        let status = resp.status();
        let body = resp.into_body().collect().await.unwrap().to_bytes();
        let text = String::from_utf8_lossy(&body);
        assert!(!text.contains("SECRET") && !text.contains("root:"), "{path} leaked: {text}");
        // Either refused, or the app's own page (its client-side router shows "not found").
        assert!(
            status == StatusCode::NOT_FOUND || status == StatusCode::BAD_REQUEST || text.contains("<title>app</title>"),
            "{path}: {status} {text}"
        );
    }
    let resp = router.clone().oneshot(Request::get("/app.js").body(Body::empty()).unwrap()).await.unwrap();
    assert_eq!(resp.status(), StatusCode::OK);
}

/// The resident memory of process `pid` now, KiB.
fn vm_rss_kib(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .unwrap()
        .trim()
        .trim_end_matches(" kB")
        .trim()
        .parse()
        .unwrap()
}

fn open_stream(addr: std::net::SocketAddr) -> TcpStream {
    let mut conn = TcpStream::connect(addr).unwrap();
    write!(conn, "GET /api/traces/1/live?after=0 HTTP/1.1\r\nHost: t\r\nAccept: text/event-stream\r\n\r\n").unwrap();
    conn
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hundred_live_streams_and_one_reader_that_never_reads() {
    let store = TempStore::new();
    let mut tee = tee_command(&store.db, &["--name", "crowd"], &["cat"]).spawn().unwrap();
    let mut tee_in = tee.stdin.take().unwrap();
    let mut tee_out = tee.stdout.take().unwrap();
    std::thread::spawn(move || std::io::copy(&mut tee_out, &mut std::io::sink()));
    writeln!(tee_in, "{{\"id\":0,\"method\":\"first\"}}").unwrap();
    let deadline = Instant::now() + Duration::from_secs(20);
    while !store.db.exists() || store.open().frame_page_total(1) < 1 {
        assert!(Instant::now() < deadline);
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    // The real server, in a process of its own: its memory is what is
    // measured, and nothing else adds to it (this test process runs other
    // tests meanwhile).
    let served = Served::start(&store.db, &[]);
    let addr: std::net::SocketAddr = served.url.trim_start_matches("http://").parse().unwrap();
    let server = served.pid();

    let result = tokio::task::spawn_blocking(move || {
        // The slow one connects and never reads a byte.
        let _stalled = open_stream(addr);
        let mut readers: Vec<_> = (0..99).map(|_| BufReader::new(open_stream(addr))).collect();
        let big = "y".repeat(4000);
        let mut rss = Vec::new();
        let mut latency = Vec::new();
        // Three rounds of 8 MB each: far more than the stalled socket's
        // buffers hold. Memory may grow in the first round (buffers, caches,
        // allocator arenas) but must not keep growing with what the stalled
        // client fails to read.
        for round in 0..3 {
            for i in 1..2000 {
                writeln!(tee_in, "{{\"id\":{i},\"method\":\"bulk\",\"params\":\"{big}\"}}").unwrap();
            }
            let last = format!("the/last/{round}");
            writeln!(tee_in, "{{\"id\":9999,\"method\":\"{last}\"}}").unwrap();
            let sent = Instant::now();
            let waiters: Vec<_> = readers
                .into_iter()
                .map(|mut r| {
                    let last = last.clone();
                    std::thread::spawn(move || {
                        let mut line = String::new();
                        loop {
                            line.clear();
                            assert!(r.read_line(&mut line).unwrap() > 0, "stream closed");
                            if line.contains(&last) {
                                return r;
                            }
                        }
                    })
                })
                .collect();
            readers = waiters.into_iter().map(|w| w.join().expect("a reader did not get the last frame")).collect();
            latency.push(sent.elapsed());
            rss.push(vm_rss_kib(server));
        }
        drop(tee_in);
        (latency, rss)
    })
    .await
    .unwrap();
    let (latency, rss) = result;
    let later_mib = rss[2].saturating_sub(rss[1]) as f64 / 1024.0;
    eprintln!(
        "99 readers got the last of 2000 frames (8 MB) {:?} after it was sent; RSS after each round {:?} MiB",
        latency,
        rss.iter().map(|k| k / 1024).collect::<Vec<_>>()
    );
    assert!(later_mib < 16.0, "memory grew {later_mib:.1} MiB more in the third round while a client stalled");
    tee.wait().unwrap();
}

#[test]
fn a_non_loopback_bind_requires_a_token() {
    let store = recorded_store();
    let mut server = std::process::Command::new(bin())
        .args(["serve", "--bind", "0.0.0.0", "--port", "0", "--db", store.db.to_str().unwrap()])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let mut first = String::new();
    BufReader::new(server.stdout.take().unwrap()).read_line(&mut first).unwrap();
    let url = first.split(" at ").nth(1).unwrap().trim().to_owned();
    let token = url.split("?token=").nth(1).expect("a generated token in the URL").to_owned();
    assert_eq!(token.len(), 32);
    let port: u16 = url.split(':').nth(2).unwrap().split('/').next().unwrap().parse().unwrap();
    let get = |path: &str| {
        let mut conn = TcpStream::connect(("127.0.0.1", port)).unwrap();
        write!(conn, "GET {path} HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n").unwrap();
        let mut resp = String::new();
        conn.read_to_string(&mut resp).unwrap();
        resp
    };
    let refused = get("/api/traces");
    assert!(refused.starts_with("HTTP/1.1 401"), "{refused}");
    assert!(get("/api/traces?token=0123456789abcdef0123456789abcdef").starts_with("HTTP/1.1 401"));
    let allowed = get(&format!("/api/traces?token={token}"));
    assert!(allowed.starts_with("HTTP/1.1 200"), "{allowed}");
    server.kill().unwrap();
    server.wait().unwrap();
}
