//! The API's write path (#33): renaming, pinning and deleting traces from
//! the viewer's list, on real stores; who may (loopback, the token, the
//! server's own origin) and who may not (`serve --read-only`, another site,
//! beyond loopback without the token), through `app().oneshot(...)` and
//! through the real `acp-tee serve` on 127.0.0.1:0.

use super::*;
use acp_tee::Editor;
use acp_tee_shared::api::{Capabilities, MAX_NAME_CHARS};
use std::net::SocketAddr;

/// A store of `ended` ended traces (named `t1`, `t2`, ..., each with `n`
/// frames for trace `n`) and then one that has not ended (its recorder is
/// this process, so no maintenance ends it); returns the ids, the unended
/// one last.
fn store_of_traces(ended: usize) -> (TempStore, Vec<i64>) {
    let store = TempStore::new();
    let mut s = Store::create_or_open(&store.db).unwrap();
    s.maintain(0).unwrap();
    let mut s = acp_tee::Recording::new(s).unwrap();
    let ids = (1..=ended + 1)
        .map(|n| {
            let lines: Vec<String> = (0..n)
                .map(|i| format!("{{\"jsonrpc\":\"2.0\",\"method\":\"m{i}\",\"params\":{{\"n\":{i}}}}}"))
                .collect();
            let lines: Vec<_> = lines.iter().map(|l| (Direction::ClientToAgent, l.as_str())).collect();
            super::add_trace(&mut s, &format!("t{n}"), &lines, n <= ended)
        })
        .collect();
    (store, ids)
}

/// The app over `store` taking changes through an editor of its own.
fn editing(store: &TempStore, token: Option<&str>) -> Router {
    let db = Db::open(&store.db).unwrap();
    let state = AppState::new(db, &store.db, token.map(String::from), None);
    app(state.with_editor(Editor::open(&store.db).unwrap()))
}

/// A request as the viewer at http://127.0.0.1:7878 sends it.
fn from_viewer(method: &str, uri: &str, body: Option<&str>) -> Request<Body> {
    let req = Request::builder()
        .method(method)
        .uri(uri)
        .header("host", "127.0.0.1:7878")
        .header("origin", "http://127.0.0.1:7878")
        .header("sec-fetch-site", "same-origin");
    match body {
        Some(b) => req.header("content-type", "application/json").body(Body::from(b.to_owned())).unwrap(),
        None => req.body(Body::empty()).unwrap(),
    }
}

/// Sends `req`; the status and the body's text.
async fn send(app: &Router, req: Request<Body>) -> (StatusCode, String) {
    let (status, body) = get_with(app, req).await;
    (status, String::from_utf8_lossy(&body).into_owned())
}

/// Sends `req`, which must be refused with `status` and a JSON error; returns its words.
async fn refused(app: &Router, req: Request<Body>, status: StatusCode) -> String {
    let what = format!("{} {}", req.method(), req.uri());
    let (got, body) = send(app, req).await;
    assert_eq!(got, status, "{what}: {body}");
    let error: ApiError = serde_json::from_str(&body).unwrap_or_else(|e| panic!("{what}: not an error: {e}: {body}"));
    assert!(!error.error.is_empty(), "{what}");
    error.error
}

/// Every trace the store lists now, as `(id, name, frames, pinned)`.
fn in_store(store: &TempStore) -> Vec<(i64, Option<String>, i64, bool)> {
    let traces = Store::open_existing(&store.db).unwrap().list_traces().unwrap();
    traces.into_iter().map(|t| (t.id, t.name, t.frame_count, t.pinned)).collect()
}

#[tokio::test]
async fn rename_pin_and_delete_round_trip_and_the_trace_leaves_every_route() {
    let (store, ids) = store_of_traces(3);
    let (first, second, third, unended) = (ids[0], ids[1], ids[2], ids[3]);
    let app = editing(&store, None);
    let caps: Capabilities = get_as(&app, "/api/capabilities").await;
    assert!(!caps.edit, "a request naming no loopback host may not change traces: {caps:?}");
    let (status, caps) = send(&app, from_viewer("GET", "/api/capabilities", None)).await;
    assert_eq!(status, StatusCode::OK);
    let caps: Capabilities = serde_json::from_str(&caps).unwrap();
    assert_eq!(caps, Capabilities { edit: true, edit_off: None });

    // Rename: the name is trimmed, and every listing shows it.
    let uri = format!("/api/traces/{second}");
    let (status, body) = send(&app, from_viewer("PATCH", &uri, Some(r#"{"name": "  renamed <b>two</b> ✓ "}"#))).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let changed: TraceSummary = serde_json::from_str(&body).unwrap();
    assert_eq!((changed.meta.id, changed.meta.name.as_deref()), (second, Some("renamed <b>two</b> ✓")));
    let listed: Vec<TraceSummary> = get_as(&app, "/api/traces").await;
    assert_eq!(listed.iter().find(|t| t.meta.id == second).unwrap().meta.name.as_deref(), Some("renamed <b>two</b> ✓"));

    // Pin: shown, and a pinned trace cannot be deleted.
    let (status, body) = send(&app, from_viewer("PATCH", &uri, Some(r#"{"pinned": true}"#))).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let one: TraceSummary = get_as(&app, &uri).await;
    assert!(one.meta.pinned);
    assert_eq!(one.meta.name.as_deref(), Some("renamed <b>two</b> ✓"), "pinning keeps the name");
    let why = refused(&app, from_viewer("DELETE", &uri, None), StatusCode::CONFLICT).await;
    assert!(why.contains("pinned"), "{why}");
    // Both at once; unpinned, it goes.
    let (status, body) = send(&app, from_viewer("PATCH", &uri, Some(r#"{"name": "two", "pinned": false}"#))).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let changed: TraceSummary = serde_json::from_str(&body).unwrap();
    assert_eq!((changed.meta.name.as_deref(), changed.meta.pinned), (Some("two"), false));
    let before = in_store(&store);
    let (status, body) = send(&app, from_viewer("DELETE", &uri, None)).await;
    assert_eq!((status, body.as_str()), (StatusCode::NO_CONTENT, ""));

    // Gone from every route; the others are as they were.
    for gone in [
        uri.clone(),
        format!("{uri}/frames"),
        format!("{uri}/frames/1"),
        format!("{uri}/stats"),
        format!("{uri}/sessions"),
        format!("{uri}/findings"),
        format!("{uri}/live"),
        format!("{uri}/export"),
        format!("/api/diff/{first}/{second}"),
    ] {
        get_error(&app, &gone, StatusCode::NOT_FOUND).await;
    }
    let listed: Vec<TraceSummary> = get_as(&app, "/api/traces").await;
    let mut listed: Vec<i64> = listed.iter().map(|t| t.meta.id).collect();
    listed.sort();
    assert_eq!(listed, [first, third, unended]);
    let after = in_store(&store);
    assert_eq!(after, before.into_iter().filter(|t| t.0 != second).collect::<Vec<_>>());
    let page: FramePage = get_as(&app, &format!("/api/traces/{third}/frames")).await;
    assert_eq!(page.total, 3, "the other traces keep their frames");

    // A trace that is no more, or never was: 404 for every change.
    for id in [second, 999] {
        let uri = format!("/api/traces/{id}");
        refused(&app, from_viewer("DELETE", &uri, None), StatusCode::NOT_FOUND).await;
        refused(&app, from_viewer("PATCH", &uri, Some(r#"{"name": "x"}"#)), StatusCode::NOT_FOUND).await;
        refused(&app, from_viewer("PATCH", &uri, Some(r#"{"pinned": true}"#)), StatusCode::NOT_FOUND).await;
    }
    // A trace still recorded can be renamed and pinned, not deleted.
    let uri = format!("/api/traces/{unended}");
    let why = refused(&app, from_viewer("DELETE", &uri, None), StatusCode::CONFLICT).await;
    assert!(why.contains("has not ended"), "{why}");
    let (status, body) = send(&app, from_viewer("PATCH", &uri, Some(r#"{"name": "still going"}"#))).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(in_store(&store).len(), 3);
}

#[tokio::test]
async fn a_change_that_is_not_one_is_refused_and_changes_nothing() {
    let (store, ids) = store_of_traces(1);
    let app = editing(&store, None);
    let uri = format!("/api/traces/{}", ids[0]);
    let before = in_store(&store);
    let long = "n".repeat(MAX_NAME_CHARS + 1);
    for body in [
        "{}".to_owned(),
        r#"{"name": ""}"#.to_owned(),
        r#"{"name": "   "}"#.to_owned(),
        r#"{"name": "two\nlines"}"#.to_owned(),
        r#"{"name": "\u001b[31mred"}"#.to_owned(),
        format!(r#"{{"name": "{long}"}}"#),
        r#"{"name": 5}"#.to_owned(),
        r#"{"name": null, "pinned": null}"#.to_owned(),
        r#"{"pinned": "yes"}"#.to_owned(),
        r#"{"name": "x", "removing": true}"#.to_owned(),
        "not json".to_owned(),
        "[]".to_owned(),
    ] {
        refused(&app, from_viewer("PATCH", &uri, Some(&body)), StatusCode::BAD_REQUEST).await;
    }
    let why =
        refused(&app, from_viewer("PATCH", &uri, Some(&format!(r#"{{"name": "{long}"}}"#))), StatusCode::BAD_REQUEST)
            .await;
    assert!(why.contains(&MAX_NAME_CHARS.to_string()), "{why}");
    // Not sent as JSON (a form another site could post): 415.
    for content_type in [None, Some("text/plain"), Some("application/x-www-form-urlencoded")] {
        let mut req = from_viewer("PATCH", &uri, None);
        if let Some(ct) = content_type {
            req.headers_mut().insert("content-type", ct.parse().unwrap());
        }
        *req.body_mut() = Body::from(r#"{"name": "x"}"#);
        refused(&app, req, StatusCode::UNSUPPORTED_MEDIA_TYPE).await;
    }
    // A body beyond the bound is not read whole.
    let huge = format!(r#"{{"name": "{}"}}"#, "x".repeat(64 * 1024));
    refused(&app, from_viewer("PATCH", &uri, Some(&huge)), StatusCode::PAYLOAD_TOO_LARGE).await;
    refused(&app, from_viewer("PATCH", "/api/traces/abc", Some(r#"{"name": "x"}"#)), StatusCode::BAD_REQUEST).await;
    refused(&app, from_viewer("DELETE", "/api/traces/abc", None), StatusCode::BAD_REQUEST).await;
    assert_eq!(in_store(&store), before);
}

#[tokio::test]
async fn read_only_and_a_server_without_an_editor_refuse_every_change() {
    let (store, ids) = store_of_traces(2);
    let before = in_store(&store);
    let read_only = app(AppState::new(Db::open(&store.db).unwrap(), &store.db, None, None).read_only());
    let plain = router(&store, None);
    for (app, words) in [(&read_only, "--read-only"), (&plain, "takes no changes")] {
        let (_, caps) = send(app, from_viewer("GET", "/api/capabilities", None)).await;
        let caps: Capabilities = serde_json::from_str(&caps).unwrap();
        assert!(!caps.edit && caps.edit_off.as_deref().is_some_and(|w| w.contains(words)), "{caps:?}");
        for &id in &ids {
            let uri = format!("/api/traces/{id}");
            for req in [
                from_viewer("DELETE", &uri, None),
                from_viewer("PATCH", &uri, Some(r#"{"name": "x"}"#)),
                from_viewer("PATCH", &uri, Some(r#"{"pinned": true}"#)),
                // Refused before the body is looked at.
                from_viewer("PATCH", &uri, Some("not json")),
            ] {
                let why = refused(app, req, StatusCode::FORBIDDEN).await;
                assert!(why.contains(words), "{why}");
            }
        }
        // Reads go on.
        let listed: Vec<TraceSummary> = get_as(app, "/api/traces").await;
        assert_eq!(listed.len(), 3);
    }
    assert_eq!(in_store(&store), before);
}

#[tokio::test]
async fn a_change_needs_the_token_when_there_is_one_and_the_servers_own_origin() {
    let (store, ids) = store_of_traces(1);
    let token = "a-token-of-20-chars+&";
    let app = editing(&store, Some(token));
    let uri = format!("/api/traces/{}", ids[0]);
    let pin = || from_viewer("PATCH", &uri, Some(r#"{"pinned": true}"#));
    // Without it, or with another: 401, as for reads.
    refused(&app, pin(), StatusCode::UNAUTHORIZED).await;
    refused(&app, from_viewer("DELETE", &uri, None), StatusCode::UNAUTHORIZED).await;
    let mut wrong = pin();
    wrong.headers_mut().insert("authorization", "Bearer a-token-of-20-chars+?".parse().unwrap());
    refused(&app, wrong, StatusCode::UNAUTHORIZED).await;
    // The cookie the first visit set, from a page with any host name.
    let cookie = format!("acp_tee_token={}", percent_encode(token));
    let mut req = pin();
    req.headers_mut().insert("cookie", cookie.parse().unwrap());
    req.headers_mut().insert("host", "box.example:7878".parse().unwrap());
    req.headers_mut().insert("origin", "http://box.example:7878".parse().unwrap());
    let (status, body) = send(&app, req).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert!(in_store(&store)[1].3, "pinned");

    // Another site's page, even with the cookie (it is SameSite=Strict, but
    // the check does not rest on that): 403.
    for (origin, site) in
        [("http://evil.example", "cross-site"), ("null", "cross-site"), ("http://box.example:7878", "same-site")]
    {
        let mut req = from_viewer("DELETE", &uri, None);
        req.headers_mut().insert("authorization", format!("Bearer {token}").parse().unwrap());
        req.headers_mut().insert("host", "box.example:7878".parse().unwrap());
        req.headers_mut().insert("origin", origin.parse().unwrap());
        req.headers_mut().insert("sec-fetch-site", site.parse().unwrap());
        let why = refused(&app, req, StatusCode::FORBIDDEN).await;
        assert!(why.contains("own pages"), "{why}");
    }
    assert_eq!(in_store(&store).len(), 2);

    // Without a token, only at a loopback name: a page whose name was made to
    // point at 127.0.0.1 (DNS rebinding) is its own origin, and is refused.
    let app = editing(&store, None);
    let mut rebound = from_viewer("PATCH", &uri, Some(r#"{"pinned": false}"#));
    rebound.headers_mut().insert("host", "rebound.example:7878".parse().unwrap());
    rebound.headers_mut().insert("origin", "http://rebound.example:7878".parse().unwrap());
    let why = refused(&app, rebound, StatusCode::FORBIDDEN).await;
    assert!(why.contains("loopback") && why.contains("--token"), "{why}");
    let mut caps = from_viewer("GET", "/api/capabilities", None);
    caps.headers_mut().insert("host", "rebound.example:7878".parse().unwrap());
    let (_, caps) = send(&app, caps).await;
    let caps: Capabilities = serde_json::from_str(&caps).unwrap();
    assert!(!caps.edit && caps.edit_off.as_deref().is_some_and(|w| w.contains("loopback")), "{caps:?}");
    for host in ["localhost:7878", "[::1]:7878"] {
        let mut req = from_viewer("PATCH", &uri, Some(r#"{"pinned": false}"#));
        req.headers_mut().insert("host", host.parse().unwrap());
        req.headers_mut().insert("origin", format!("http://{host}").parse().unwrap());
        let (status, body) = send(&app, req).await;
        assert_eq!(status, StatusCode::OK, "{host}: {body}");
    }
    assert!(!in_store(&store)[1].3, "unpinned");
}

fn percent_encode(s: &str) -> String {
    s.bytes().map(|b| if b.is_ascii_alphanumeric() { (b as char).to_string() } else { format!("%{b:02X}") }).collect()
}

/// `acp-tee serve` with `args`, killed when dropped; the address it listens
/// on (connected to at 127.0.0.1) and the URL it printed.
struct Serving {
    child: std::process::Child,
    addr: SocketAddr,
    url: String,
}

impl Serving {
    fn start(db: &std::path::Path, args: &[&str]) -> Serving {
        let mut child = std::process::Command::new(bin())
            .args(["serve", "--db", db.to_str().unwrap(), "--port", "0"])
            .args(args)
            .stdout(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap()).read_line(&mut line).unwrap();
        let url = line.trim().split(" at ").nth(1).unwrap_or_else(|| panic!("no URL in {line:?}")).to_owned();
        let port: u16 = url
            .strip_prefix("http://")
            .unwrap()
            .split(['/', '?'])
            .next()
            .unwrap()
            .rsplit(':')
            .next()
            .unwrap()
            .parse()
            .unwrap();
        Serving { child, addr: SocketAddr::from(([127, 0, 0, 1], port)), url }
    }

    /// Sends `method path` with `headers` and `body` on a new connection;
    /// the status and the body, within 20 s.
    fn request(&self, method: &str, path: &str, headers: &[(&str, &str)], body: &str) -> (u16, String) {
        use std::io::Read;
        let mut conn = std::net::TcpStream::connect(self.addr).unwrap();
        conn.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
        let mut head = format!("{method} {path} HTTP/1.1\r\nHost: {}\r\nConnection: close\r\n", self.addr);
        for (k, v) in headers {
            head.push_str(&format!("{k}: {v}\r\n"));
        }
        head.push_str(&format!("Content-Length: {}\r\n\r\n{body}", body.len()));
        conn.write_all(head.as_bytes()).unwrap();
        let mut answer = String::new();
        conn.read_to_string(&mut answer).unwrap();
        let status = answer.split(' ').nth(1).and_then(|s| s.parse().ok()).unwrap_or_else(|| panic!("{answer:?}"));
        let body = answer.split_once("\r\n\r\n").map(|(_, b)| b.to_owned()).unwrap_or_default();
        (status, body)
    }
}

impl Drop for Serving {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

const JSON: (&str, &str) = ("Content-Type", "application/json");

#[test]
fn the_real_server_takes_changes_on_loopback_refuses_them_read_only_and_beyond_loopback_without_the_token() {
    let (store, ids) = store_of_traces(3);
    let paths: Vec<String> = ids.iter().map(|id| format!("/api/traces/{id}")).collect();

    let read_only = Serving::start(&store.db, &["--read-only"]);
    for path in &paths[..3] {
        assert_eq!(read_only.request("DELETE", path, &[], "").0, 403);
        let (status, body) = read_only.request("PATCH", path, &[JSON], r#"{"pinned": true}"#);
        assert!(status == 403 && body.contains("--read-only"), "{status} {body}");
    }
    let (status, caps) = read_only.request("GET", "/api/capabilities", &[], "");
    assert_eq!(status, 200);
    assert!(caps.contains(r#""edit":false"#) && caps.contains("--read-only"), "{caps}");
    drop(read_only);

    let loopback = Serving::start(&store.db, &[]);
    assert!(!loopback.url.contains("token"), "{}", loopback.url);
    let (status, caps) = loopback.request("GET", "/api/capabilities", &[], "");
    assert_eq!((status, caps.as_str()), (200, r#"{"edit":true}"#));
    let (status, body) = loopback.request("PATCH", &paths[0], &[JSON], r#"{"name": "first", "pinned": true}"#);
    assert!(status == 200 && body.contains(r#""name":"first""#) && body.contains(r#""pinned":true"#), "{body}");
    assert_eq!(loopback.request("DELETE", &paths[1], &[], "").0, 204);
    drop(loopback);

    // Beyond loopback a token is generated: without it, nothing; with it, changes.
    let wide = Serving::start(&store.db, &["--bind", "0.0.0.0"]);
    let token = wide.url.split("token=").nth(1).expect("the URL carries the token").to_owned();
    let bearer = format!("Bearer {token}");
    assert_eq!(wide.request("DELETE", &paths[2], &[], "").0, 401);
    assert_eq!(wide.request("PATCH", &paths[2], &[JSON], r#"{"name": "x"}"#).0, 401);
    assert_eq!(wide.request("DELETE", &paths[2], &[("Authorization", &bearer)], "").0, 204);
    drop(wide);

    let left = in_store(&store);
    assert_eq!(
        left.iter().map(|t| (t.0, t.1.as_deref(), t.3)).collect::<Vec<_>>(),
        [(ids[3], Some("t4"), false), (ids[0], Some("first"), true)]
    );
}
