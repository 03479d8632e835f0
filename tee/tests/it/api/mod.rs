//! The HTTP API on real SQLite stores: `app().oneshot(...)` for routes, and a
//! real server on 127.0.0.1:0 for the live stream while a real acp-tee
//! process records into the same store.

mod edits;
mod find;
mod overview;
mod range;
mod requests;
mod search;

use crate::common::*;
use acp_tee::Store;
use acp_tee::{app, AppState, Db};
use acp_tee_shared::api::{ApiError, FramePage, FrameSummary, TraceStats, TraceSummary};
use acp_tee_shared::{Direction, FrameKind};
use axum::body::Body;
use axum::http::{Request, StatusCode};
use axum::Router;
use http_body_util::BodyExt;
use std::io::{BufRead, BufReader, Write};
use std::time::{Duration, Instant};
use tower::ServiceExt;

/// A store holding one real session: yopo talking to elizacp through acp-tee.
fn recorded_session() -> TempStore {
    let store = TempStore::new();
    let out = std::process::Command::new(peer("yopo"))
        .args([
            "Please help me with my tools",
            "--",
            bin(),
            "--db",
            store.db.to_str().unwrap(),
            "--name",
            "eliza",
            "--",
        ])
        .args([peer("elizacp").as_str(), "--deterministic", "acp"])
        .output()
        .unwrap();
    assert!(out.status.success());
    store.only_trace();
    store
}

fn router(store: &TempStore, token: Option<&str>) -> Router {
    let db = Db::open(&store.db).unwrap();
    app(AppState::new(db, &store.db, token.map(String::from), None))
}

async fn get_with(app: &Router, req: Request<Body>) -> (StatusCode, Vec<u8>) {
    let resp = app.clone().oneshot(req).await.unwrap();
    let status = resp.status();
    (status, resp.into_body().collect().await.unwrap().to_bytes().to_vec())
}

/// The body of `GET uri` as the shared API type `T`: the answer must be 200
/// and parse as the type the viewer reads it as.
async fn get_as<T: serde::de::DeserializeOwned>(app: &Router, uri: &str) -> T {
    let (status, body) = get_with(app, Request::get(uri).body(Body::empty()).unwrap()).await;
    let text = String::from_utf8_lossy(&body);
    assert_eq!(status, StatusCode::OK, "{uri}: {text}");
    serde_json::from_slice(&body).unwrap_or_else(|e| panic!("{uri}: not a {}: {e}: {text}", std::any::type_name::<T>()))
}

/// The error body of `GET uri`, which must answer `status`.
async fn get_error(app: &Router, uri: &str, status: StatusCode) -> ApiError {
    let (got, body) = get_with(app, Request::get(uri).body(Body::empty()).unwrap()).await;
    let text = String::from_utf8_lossy(&body);
    assert_eq!(got, status, "{uri}: {text}");
    let error: ApiError = serde_json::from_slice(&body).unwrap_or_else(|e| panic!("{uri}: not an error: {e}: {text}"));
    assert!(!error.error.is_empty(), "{uri}");
    error
}

/// The seqs of a page's frames.
fn seqs(page: &FramePage) -> Vec<i64> {
    page.frames.iter().map(|f| f.seq).collect()
}

#[tokio::test]
async fn traces_frames_detail_and_stats_of_a_real_session() {
    let store = recorded_session();
    let app = router(&store, None);
    let traces: Vec<TraceSummary> = get_as(&app, "/api/traces").await;
    assert_eq!(traces.len(), 1);
    let t = &traces[0];
    assert_eq!((t.meta.name.as_deref(), t.live), (Some("eliza"), false));
    let (id, total) = (t.meta.id, t.meta.frame_count);
    let frames = |query: &str| format!("/api/traces/{id}/frames?{query}");

    // Paging: two pages of 4 cover the start of the trace, in order.
    let p1: FramePage = get_as(&app, &frames("limit=4")).await;
    let p2: FramePage = get_as(&app, &frames("limit=4&offset=4")).await;
    let p3: FramePage = get_as(&app, &frames("limit=4&after=4")).await;
    assert_eq!((p1.total, p1.has_more), (total, true));
    assert_eq!(seqs(&p1), [1, 2, 3, 4]);
    assert_eq!(seqs(&p2), [5, 6, 7, 8]);
    assert_eq!(seqs(&p3), seqs(&p2));

    // Filters.
    let prompts: FramePage = get_as(&app, &frames("method=session%2Fprompt")).await;
    assert_eq!(prompts.total, 2);
    let kinds: Vec<FrameKind> = prompts.frames.iter().map(|f| f.kind).collect();
    assert_eq!(kinds, [FrameKind::Request, FrameKind::Response]);
    let request = &prompts.frames[0];
    assert_eq!(request.preview.as_deref(), Some("Please help me with my tools"));
    let agent_side: FramePage = get_as(&app, &frames("dir=agent_to_client&kind=notification")).await;
    assert!(agent_side.total >= 1);
    assert!(agent_side.frames[0].preview.as_deref().is_some_and(|p| !p.is_empty()));
    assert_eq!(agent_side.frames[0].dir, Direction::AgentToClient);
    // Each `session/update` names its kind (the diagram collapses runs of chunks by it); nothing else does.
    let updates: Vec<Option<&str>> = agent_side.frames.iter().map(|f| f.update.as_deref()).collect();
    assert!(updates.contains(&Some("agent_message_chunk")), "{updates:?}");
    assert!(agent_side.frames.iter().all(|f| f.update.is_some() == (f.method.as_deref() == Some("session/update"))));
    assert_eq!(request.update, None);
    let slow: FramePage = get_as(&app, &frames("min_latency_ms=100000")).await;
    assert_eq!(slow.total, 0);
    // The largest latency a frame can have (i64::MAX ns) is a valid bound.
    let slowest: FramePage = get_as(&app, &frames("min_latency_ms=9223372036854")).await;
    assert_eq!(slowest.total, 0);
    let errors: FramePage = get_as(&app, &frames("errors=true")).await;
    assert_eq!(errors.total, 0);

    // Full-text search finds the prompt text in the request frame.
    let found: FramePage = get_as(&app, &frames("q=help+tools")).await;
    assert!(seqs(&found).contains(&request.seq), "{found:?}");
    let none: FramePage = get_as(&app, &frames("q=zyxwvut")).await;
    assert_eq!(none.total, 0);

    // One frame with its pair.
    let seq = request.seq;
    let detail: acp_tee_shared::api::FrameDetail = get_as(&app, &format!("/api/traces/{id}/frames/{seq}")).await;
    assert!(detail.raw.as_deref().unwrap().contains("\"session/prompt\""));
    let pair = detail.pair.as_ref().expect("the request's response");
    assert_eq!(pair.reply_to_seq, Some(seq));
    assert_eq!(detail.frame.reply_seq, Some(pair.seq));

    // Stats.
    let stats: TraceStats = get_as(&app, &format!("/api/traces/{id}/stats")).await;
    let prompt = stats.methods.iter().find(|m| m.method == "session/prompt").unwrap();
    assert_eq!((prompt.count, prompt.answered), (1, 1));
    assert_eq!(prompt.p50_ns, prompt.max_ns);
    assert_eq!(prompt.histogram.iter().map(|b| b.count).sum::<i64>(), 1);
    assert_eq!(stats.slowest.len(), 3);
    assert_eq!(stats.per_direction.iter().sum::<i64>(), total);
}

#[tokio::test]
async fn bad_parameters_are_400_and_unknown_ids_404_with_json() {
    let store = recorded_session();
    let app = router(&store, None);
    for uri in [
        "/api/traces/abc",
        "/api/traces/1/frames?limit=0",
        "/api/traces/1/frames?limit=100000",
        "/api/traces/1/frames?offset=-1",
        "/api/traces/1/frames?dir=sideways",
        "/api/traces/1/frames?kind=request%27%3B",
        "/api/traces/1/frames?errors=maybe",
        "/api/traces/1/frames?min_latency_ms=-5",
        "/api/traces/1/frames?min_latency_ms=NaN",
        "/api/traces/1/frames?min_latency_ms=9223372036855",
        "/api/traces/1/frames?after=x",
        "/api/traces/1/frames?from=0",
        "/api/traces/1/frames?to=-3",
        "/api/traces/1/frames?from=1e3",
        "/api/traces/1/sessions?to=0",
        "/api/traces/1/sessions?to=soon",
        "/api/traces/1/sessions/s1?to=-2",
        "/api/traces/1/frames/first",
        "/api/traces/1/export?format=xml",
        "/api/traces/1/live?after=soon",
        "/api/traces/99999999999999999999999",
    ] {
        get_error(&app, uri, StatusCode::BAD_REQUEST).await;
    }
    for uri in [
        "/api/traces/42",
        "/api/traces/42/frames",
        "/api/traces/1/frames/100000",
        "/api/traces/42/stats",
        "/api/nothing",
    ] {
        get_error(&app, uri, StatusCode::NOT_FOUND).await;
    }
}

#[tokio::test]
async fn sessions_up_to_a_seq_are_the_sessions_as_that_frame_arrived() {
    use acp_tee_shared::session::{SessionDetail, TraceSessions};
    let store = recorded_session();
    let app = router(&store, None);
    let all: TraceSessions = get_as(&app, "/api/traces/1/sessions").await;
    let sid = all.sessions[0].session_id.clone();
    let prompt: FramePage = get_as(&app, "/api/traces/1/frames?method=session/prompt&kind=request").await;
    let at = prompt.frames[0].seq;
    let turn_of = |d: &SessionDetail| d.turns[0].clone();

    // At the prompt: the turn has begun and nothing has answered it.
    let then: TraceSessions = get_as(&app, &format!("/api/traces/1/sessions?to={at}")).await;
    assert_eq!((then.sessions[0].turns, then.sessions[0].last_seq), (1, at));
    let detail: SessionDetail = get_as(&app, &format!("/api/traces/1/sessions/{sid}?to={at}")).await;
    let turn = turn_of(&detail);
    assert_eq!((turn.request_seq, turn.response_seq, turn.stop_reason), (at, None, None));
    assert!(turn.message.text.is_empty(), "no reply yet: {:?}", turn.message);

    // Forward to the last frame: the whole trace; back again: the same as before.
    let last = all.sessions[0].last_seq;
    let end: SessionDetail = get_as(&app, &format!("/api/traces/1/sessions/{sid}?to={last}")).await;
    let whole: SessionDetail = get_as(&app, &format!("/api/traces/1/sessions/{sid}")).await;
    assert_eq!(end, whole);
    assert!(turn_of(&end).stop_reason.is_some());
    let again: SessionDetail = get_as(&app, &format!("/api/traces/1/sessions/{sid}?to={at}")).await;
    assert_eq!(again, detail);
}

#[tokio::test]
async fn sql_metacharacters_are_only_data() {
    let store = recorded_session();
    let app = router(&store, None);
    for text in
        ["' OR 1=1 --", "\"; DROP TABLE frames; --", "%", "_", "x') UNION SELECT * FROM traces --", "NEAR(", "*"]
    {
        let enc: String = text.bytes().map(|b| format!("%{b:02X}")).collect();
        for param in ["method", "session", "q"] {
            let page: FramePage = get_as(&app, &format!("/api/traces/1/frames?{param}={enc}")).await;
            assert_eq!(page.total, 0, "{param}={text}");
        }
    }
    // The store is intact.
    assert_eq!(Store::open_existing(&store.db).unwrap().list_traces().unwrap().len(), 1);
}

#[tokio::test]
async fn a_token_guards_everything_when_set() {
    let store = recorded_session();
    let app = router(&store, Some("s3cret"));
    get_error(&app, "/api/traces", StatusCode::UNAUTHORIZED).await;
    get_error(&app, "/api/traces?token=wrong", StatusCode::UNAUTHORIZED).await;
    let _: Vec<TraceSummary> = get_as(&app, "/api/traces?token=s3cret").await;
    let bearer = Request::get("/api/traces").header("authorization", "Bearer s3cret").body(Body::empty()).unwrap();
    assert_eq!(get_with(&app, bearer).await.0, StatusCode::OK);
    let cookie = Request::get("/api/traces").header("cookie", "a=b; acp_tee_token=s3cret").body(Body::empty()).unwrap();
    assert_eq!(get_with(&app, cookie).await.0, StatusCode::OK);
    // The app's page (built in, or the page saying how to get it) goes only
    // to those with the token.
    let (status, _) = get_with(&app, Request::get("/").body(Body::empty()).unwrap()).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    let (status, page) = get_with(&app, Request::get("/?token=s3cret").body(Body::empty()).unwrap()).await;
    let page = String::from_utf8(page).unwrap();
    let app_page = status == StatusCode::OK && page.contains("<html");
    let no_app_page = status == StatusCode::SERVICE_UNAVAILABLE && page.contains("has no viewer app");
    assert!(app_page || no_app_page, "{status}: {page}");
}

#[tokio::test]
async fn the_export_route_streams_what_the_cli_exports() {
    let store = recorded_session();
    let app = router(&store, None);
    let (status, body) =
        get_with(&app, Request::get("/api/traces/1/export?format=ndjson").body(Body::empty()).unwrap()).await;
    assert_eq!(status, StatusCode::OK);
    let cli = std::process::Command::new(bin())
        .args(["export", "--db", store.db.to_str().unwrap(), "--trace", "1", "--format", "ndjson"])
        .output()
        .unwrap();
    assert!(body == cli.stdout, "the API export differs from the CLI export");
}

/// Reads SSE `event:`/`data:` pairs from a raw HTTP response (chunked or not).
fn next_event(lines: &mut impl Iterator<Item = std::io::Result<String>>) -> (String, String) {
    let mut event = String::new();
    loop {
        let line = lines.next().expect("the stream ended").unwrap();
        if let Some(e) = line.strip_prefix("event: ") {
            event = e.to_owned();
        } else if let Some(d) = line.strip_prefix("data: ") {
            return (event, d.to_owned());
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn live_stream_pushes_frames_another_process_records() {
    let store = TempStore::new();
    let mut tee = tee_command(&store.db, &["--name", "live"], &["cat"]).spawn().unwrap();
    let mut tee_in = tee.stdin.take().unwrap();
    writeln!(tee_in, r#"{{"jsonrpc":"2.0","id":0,"method":"initialize","params":{{}}}}"#).unwrap();
    assert!(!read_exact_from(&mut tee, 1).is_empty());
    // The recorder has the trace once its first frame is stored.
    let deadline = Instant::now() + Duration::from_secs(20);
    while !store.db.exists() || Store::open_existing(&store.db).unwrap().frame_page_total(1) < 1 {
        assert!(Instant::now() < deadline, "the first frame was never stored");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let router = router(&store, None);
    tokio::spawn(async move { axum::serve(listener, router).await.unwrap() });

    let events = tokio::task::spawn_blocking(move || {
        let mut conn = std::net::TcpStream::connect(addr).unwrap();
        write!(conn, "GET /api/traces/1/live?after=0 HTTP/1.1\r\nHost: t\r\nAccept: text/event-stream\r\n\r\n")
            .unwrap();
        let mut lines = BufReader::new(conn).lines();
        let (event, data) = next_event(&mut lines);
        assert_eq!(event, "frames");
        let first: Vec<FrameSummary> = serde_json::from_str(&data).unwrap();
        assert_eq!(first[0].method.as_deref(), Some("initialize"));
        let mut seen = first;
        // Now a frame recorded after the stream opened must arrive.
        writeln!(tee_in, r#"{{"jsonrpc":"2.0","method":"session/cancel","params":{{"sessionId":"late"}}}}"#).unwrap();
        let sent = Instant::now();
        let latency = loop {
            let (event, data) = next_event(&mut lines);
            if event == "frames" {
                let frames: Vec<FrameSummary> = serde_json::from_str(&data).unwrap();
                let max_seen = seen.last().unwrap().seq;
                assert!(frames.iter().all(|f| f.seq > max_seen), "a frame was sent twice");
                seen.extend(frames);
                if seen.iter().any(|f| f.session_id.as_deref() == Some("late")) {
                    break sent.elapsed();
                }
            }
        };
        eprintln!("live push: frame written to SSE event received in {latency:?}");
        drop(tee_in);
        let seqs: Vec<i64> = seen.iter().map(|f| f.seq).collect();
        assert_eq!(seqs, (1..=seqs.len() as i64).collect::<Vec<_>>(), "frames arrive in order without gaps");
    })
    .await;
    events.unwrap();
    tee.wait().unwrap();
}

/// A store holding one ended trace made of `lines`, each a frame sent `dir`
/// (classified and paired as the recorder does).
fn store_of_lines(lines: &[(acp_tee_shared::Direction, &str)]) -> (TempStore, i64) {
    let store = TempStore::new();
    let mut s = Store::create_or_open(&store.db).unwrap();
    s.maintain(0).unwrap();
    let mut s = acp_tee::Recording::new(s).unwrap();
    let id = add_trace(&mut s, "lines", lines, true);
    (store, id)
}

/// Adds a trace named `name` to `s`, made of `lines` (each a frame sent
/// `dir`, a microsecond apart from 1 µs on, classified and paired as the
/// recorder does), ended when `ended`; else its recorder is this process, so
/// no maintenance ends it. Returns its id.
fn add_trace(s: &mut acp_tee::Recording, name: &str, lines: &[(acp_tee_shared::Direction, &str)], ended: bool) -> i64 {
    use acp_tee::{TraceEnd, TraceStart};
    let start = TraceStart {
        protocol: None,
        name: Some(name.into()),
        command: vec!["agent".into()],
        cwd: None,
        mode: "wrap".into(),
        started_at: "2026-01-01T00:00:00Z".into(),
    };
    let id = s.create_trace(&start, std::process::id()).unwrap();
    let mut framer = acp_tee::Framer::new();
    let mut frames = Vec::new();
    for (t, (dir, line)) in lines.iter().enumerate() {
        framer.chunk(*dir, t as u64 * 1000 + 1000, format!("{line}\n").as_bytes(), |f| frames.push(f));
    }
    s.insert_frames(id, &frames).unwrap();
    if ended {
        let end = TraceEnd { exit_code: Some(0), exit_signal: None, end_reason: "done".into() };
        s.finish_trace(id, &end, 0, "2026-01-01T00:00:01Z").unwrap();
    }
    id
}

#[tokio::test]
async fn a_nul_in_the_search_is_a_bad_request() {
    let store = recorded_session();
    let app = router(&store, None);
    for q in ["%00", "a%00", "help%00tools", "%00%00%00"] {
        let error = get_error(&app, &format!("/api/traces/1/frames?q={q}"), StatusCode::BAD_REQUEST).await;
        assert!(error.error.contains("NUL"), "q={q}: {error:?}");
    }
}

#[tokio::test]
async fn unknown_api_paths_are_json_404s_even_with_the_app_built() {
    let store = recorded_session();
    let dist = tempfile::tempdir().unwrap();
    std::fs::write(dist.path().join("index.html"), "<!doctype html><title>app</title>").unwrap();
    let app = app(AppState::new(Db::open(&store.db).unwrap(), &store.db, None, Some(dist.path().to_owned())));
    for uri in ["/api", "/api/", "/api/nothing", "/api/traces/1/nothing", "/api/traces/1/frames/1/x", "/api//traces"] {
        get_error(&app, uri, StatusCode::NOT_FOUND).await;
    }
    // The app's own routes still get the app.
    let (status, page) = get_with(&app, Request::get("/traces/1").body(Body::empty()).unwrap()).await;
    assert_eq!(status, StatusCode::OK);
    assert!(String::from_utf8(page).unwrap().contains("<title>app</title>"));
}

#[tokio::test]
async fn errors_only_includes_batches_holding_an_error_and_stats_count_them() {
    use acp_tee_shared::Direction::{AgentToClient as Out, ClientToAgent as In};
    let (store, id) = store_of_lines(&[
        (In, r#"{"jsonrpc":"2.0","id":1,"method":"a"}"#),
        (In, r#"[{"jsonrpc":"2.0","id":2,"method":"b"},{"jsonrpc":"2.0","id":3,"method":"c"}]"#),
        (Out, r#"{"jsonrpc":"2.0","id":1,"error":{"code":-1,"message":"no"}}"#),
        (
            Out,
            r#"[{"jsonrpc":"2.0","id":2,"error":{"code":-2,"message":"nope"}},{"jsonrpc":"2.0","id":3,"result":{}}]"#,
        ),
        (Out, r#"[{"jsonrpc":"2.0","method":"n"}]"#),
    ]);
    let app = router(&store, None);
    let trace: TraceSummary = get_as(&app, &format!("/api/traces/{id}")).await;
    assert_eq!(trace.meta.error_count, 2);
    for (filter, want) in [
        ("errors=true", vec![3, 4]),
        ("errors=true&dir=agent_to_client", vec![3, 4]),
        ("errors=true&dir=client_to_agent", vec![]),
        ("errors=true&kind=batch", vec![4]),
        ("errors=true&kind=error", vec![3]),
        ("errors=true&kind=request", vec![]),
        ("errors=true&limit=1", vec![3]),
        ("errors=true&offset=1", vec![4]),
        ("errors=true&after=3", vec![4]),
        ("kind=error", vec![3]),
    ] {
        let page: FramePage = get_as(&app, &format!("/api/traces/{id}/frames?{filter}")).await;
        assert_eq!(seqs(&page), want, "{filter}: {page:?}");
        let total = if filter.contains("after") || filter.contains("offset") || filter.contains("limit") {
            2
        } else {
            want.len() as i64
        };
        assert_eq!(page.total, total, "{filter}: {page:?}");
    }
    let stats: TraceStats = get_as(&app, &format!("/api/traces/{id}/stats")).await;
    let of = |m: &str| {
        let s = stats.methods.iter().find(|s| s.method == m).unwrap_or_else(|| panic!("{m}: {stats:?}"));
        (s.count, s.errors, s.answered)
    };
    assert_eq!(of("a"), (1, 1, 1));
    assert_eq!(of("b"), (1, 1, 1));
    assert_eq!(of("c"), (1, 0, 1));
    assert_eq!(of("n"), (1, 0, 0));
}

#[tokio::test]
async fn a_query_past_the_time_limit_is_stopped_with_503() {
    use acp_tee_shared::Direction::ClientToAgent as In;
    let lines: Vec<String> = (0..3000).map(|i| format!(r#"{{"method":"m","params":{{"n":{i}}}}}"#)).collect();
    let lines: Vec<_> = lines.iter().map(|l| (In, l.as_str())).collect();
    let (store, id) = store_of_lines(&lines);
    let limited = |limit| {
        let db = Db::open(&store.db).unwrap().with_time_limit(limit);
        app(AppState::new(db, &store.db, None, None))
    };
    let uri = format!("/api/traces/{id}/frames?q=absent&session=none");
    let error = get_error(&limited(Duration::ZERO), &uri, StatusCode::SERVICE_UNAVAILABLE).await;
    assert!(error.error.contains("took too long"), "{error:?}");
    let page: FramePage = get_as(&limited(acp_tee::QUERY_TIME_LIMIT), &uri).await;
    assert_eq!(page.total, 0);
}

/// The server's connections are opened `query_only`: a write slipped into a
/// query, through the same pool the routes use, fails in SQLite and leaves
/// the store as it was. (The recorder's writes are not even reachable from
/// a reader: they are `Recording`'s; maintenance's are, on `&Store`.)
#[tokio::test]
async fn the_servers_connections_cannot_write_the_store() {
    let (store, _) = store_of_lines(&[(acp_tee_shared::Direction::ClientToAgent, r#"{"jsonrpc":"2.0","method":"m"}"#)]);
    let start = acp_tee::TraceStart {
        protocol: None,
        name: None,
        command: vec!["x".into()],
        cwd: None,
        mode: acp_tee::Mode::Wrap.to_string(),
        started_at: "2026-01-01T00:00:00Z".into(),
    };
    // A trace whose recorder (a pid no process has) is gone: maintenance
    // would end it.
    let recording = acp_tee::Recording::new(Store::open_existing(&store.db).unwrap()).unwrap();
    let open = recording.create_trace(&start, i32::MAX as u32).unwrap();
    let db = Db::open(&store.db).unwrap();
    let ended = db.run(move |s| s.end_abandoned_traces()).await;
    assert!(ended.is_err(), "the server's connection ended a trace: {ended:?}");
    let traces = Store::open_existing(&store.db).unwrap().list_traces().unwrap();
    assert_eq!(traces.len(), 2);
    assert_eq!(traces.iter().find(|t| t.id == open).unwrap().ended_at, None);
    assert_eq!(traces.iter().find(|t| t.id != open).unwrap().end_reason.as_deref(), Some("done"));
}
