//! `/api/traces/{id}/requests` (the request table) and
//! `/api/traces/{id}/in_flight` (requests in flight over a frame), on real
//! stores: a recorded session and traces made of lines.

use super::*;
use acp_tee_shared::api::{InFlight, RequestPage, RequestStatus};
use acp_tee_shared::Direction::{AgentToClient as A2C, ClientToAgent as C2A};

/// The rows' seqs.
fn rows(page: &RequestPage) -> Vec<i64> {
    page.requests.iter().map(|r| r.seq).collect()
}

#[tokio::test]
async fn the_table_of_a_real_session_is_its_requests_with_their_answers() {
    let store = recorded_session();
    let app = router(&store, None);
    let id = 1;
    let page: RequestPage = get_as(&app, &format!("/api/traces/{id}/requests")).await;
    let s = Store::open_existing(&store.db).unwrap();
    let mut want = Vec::new();
    s.for_each_frame::<acp_tee::StoreError>(id, |f| {
        if f.kind == FrameKind::Request {
            want.push((f.seq, f.method.clone()));
        }
        Ok(())
    })
    .unwrap();
    assert!(!want.is_empty());
    let got: Vec<_> = page.requests.iter().map(|r| (r.seq, r.method.clone())).collect();
    assert_eq!(got, want);
    assert_eq!(page.total, want.len() as i64);
    for r in &page.requests {
        // Every request of a finished session was answered, by the frame the frames page names.
        assert_eq!(r.status, RequestStatus::Ok, "{r:?}");
        let frames: FramePage = get_as(&app, &format!("/api/traces/{id}/frames?offset={}&limit=1", r.seq - 1)).await;
        assert_eq!(frames.frames[0].reply_seq, r.reply_seq, "{r:?}");
        assert_eq!(frames.frames[0].size, r.request_size, "{r:?}");
    }
    // Sorted by latency, slowest first: the latencies never grow.
    let slow: RequestPage = get_as(&app, &format!("/api/traces/{id}/requests?sort=latency&desc=true")).await;
    let latencies: Vec<i64> = slow.requests.iter().map(|r| r.latency_ns.unwrap()).collect();
    assert!(latencies.windows(2).all(|w| w[0] >= w[1]), "{latencies:?}");
}

/// A trace of three prompts: the first answered after two notifications, the second with an error, the last
/// never; and the agent's `fs/read_text_file` answered at once inside the first.
fn prompts() -> (TempStore, i64) {
    let prompt =
        |id: i64| format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"session/prompt","params":{{"sessionId":"s"}}}}"#);
    let update = r#"{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":{}}}"#.to_owned();
    let lines = [
        (C2A, prompt(1)),
        (A2C, update.clone()),
        (A2C, r#"{"jsonrpc":"2.0","id":"f","method":"fs/read_text_file","params":{"sessionId":"s","path":"/a"}}"#.into()),
        (C2A, r#"{"jsonrpc":"2.0","id":"f","result":{"content":"x"}}"#.into()),
        (A2C, update.clone()),
        (A2C, r#"{"jsonrpc":"2.0","id":1,"result":{"stopReason":"end_turn"}}"#.into()),
        (C2A, prompt(2)),
        (A2C, r#"{"jsonrpc":"2.0","id":2,"error":{"code":-32000,"message":"https://example.com/x?token=hunter2 refused"}}"#.into()),
        (C2A, prompt(3)),
        (A2C, update),
    ];
    let borrowed: Vec<_> = lines.iter().map(|(d, l)| (*d, l.as_str())).collect();
    store_of_lines(&borrowed)
}

#[tokio::test]
async fn statuses_sorts_and_pages() {
    let (store, id) = prompts();
    let app = router(&store, None);
    let page = |q: &str| format!("/api/traces/{id}/requests?{q}");
    let all: RequestPage = get_as(&app, &page("")).await;
    assert_eq!((rows(&all), all.total), (vec![1, 3, 7, 9], 4));
    let statuses: Vec<_> = all.requests.iter().map(|r| r.status.clone()).collect();
    match &statuses[2] {
        RequestStatus::Error { code: Some(-32000), message: Some(m) } => {
            assert!(m.contains("refused") && !m.contains("hunter2"), "masked as a preview is: {m}")
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(
        (&statuses[0], &statuses[1], &statuses[3]),
        (&RequestStatus::Ok, &RequestStatus::Ok, &RequestStatus::Unanswered)
    );
    // Each line is a microsecond apart: latency is distance in lines (ties by seq, in the same order).
    let by_latency: RequestPage = get_as(&app, &page("sort=latency&desc=true")).await;
    assert_eq!(rows(&by_latency), [1, 7, 3, 9]);
    let by_latency: RequestPage = get_as(&app, &page("sort=latency")).await;
    assert_eq!(rows(&by_latency), [3, 7, 1, 9], "unanswered last both ways");
    let by_status: RequestPage = get_as(&app, &page("sort=status&desc=false")).await;
    assert_eq!(rows(&by_status), [1, 3, 7, 9]);
    let by_dir: RequestPage = get_as(&app, &page("sort=dir&desc=true")).await;
    assert_eq!(rows(&by_dir), [3, 9, 7, 1]);
    let second: RequestPage = get_as(&app, &page("limit=2&offset=2")).await;
    assert_eq!((rows(&second), second.offset, second.total), (vec![7, 9], 2, 4));
    let past: RequestPage = get_as(&app, &page("offset=1000")).await;
    assert_eq!((rows(&past), past.total), (vec![], 4));
    let most: RequestPage = get_as(&app, &page("limit=500")).await;
    assert_eq!(most.requests.len(), 4);
}

#[tokio::test]
async fn bad_table_and_in_flight_parameters_are_400() {
    let (store, id) = prompts();
    let app = router(&store, None);
    for q in ["sort=nope", "desc=maybe", "limit=0", "limit=501", "offset=-1", "limit=x", "offset=1e3"] {
        let e = get_error(&app, &format!("/api/traces/{id}/requests?{q}"), StatusCode::BAD_REQUEST).await;
        assert!(!e.error.is_empty(), "{q}");
    }
    let e = get_error(&app, &format!("/api/traces/{id}/requests?sort=nope"), StatusCode::BAD_REQUEST).await;
    assert!(e.error.contains("latency"), "names the columns: {}", e.error);
    let e = get_error(&app, &format!("/api/traces/{id}/requests?limit=501"), StatusCode::BAD_REQUEST).await;
    assert!(e.error.contains("between 1 and 500"), "{}", e.error);
    for q in ["", "at=x", "at=-1"] {
        get_error(&app, &format!("/api/traces/{id}/in_flight?{q}"), StatusCode::BAD_REQUEST).await;
    }
    get_error(&app, "/api/traces/99/requests", StatusCode::NOT_FOUND).await;
    get_error(&app, "/api/traces/99/in_flight?at=1", StatusCode::NOT_FOUND).await;
}

#[tokio::test]
async fn in_flight_over_a_frame() {
    let (store, id) = prompts();
    let app = router(&store, None);
    let at = |seq: i64| format!("/api/traces/{id}/in_flight?at={seq}");
    // Inside the first prompt, its answer far below (seq 6); the fs request (3) answered at 4 is not in
    // flight over 5.
    let over: InFlight = get_as(&app, &at(5)).await;
    let got: Vec<_> = over.requests.iter().map(|r| (r.seq, r.reply_seq, r.method.as_deref())).collect();
    assert_eq!(got, [(1, Some(6), Some("session/prompt"))]);
    assert_eq!((over.at, over.left_out), (5, 0));
    assert_eq!(over.requests[0].latency_ns, Some(5_000));
    let over: InFlight = get_as(&app, &at(4)).await;
    assert_eq!(over.requests.iter().map(|r| r.seq).collect::<Vec<_>>(), [1], "answered at 4 itself: drawn");
    let over: InFlight = get_as(&app, &at(3)).await;
    assert_eq!(over.requests.iter().map(|r| r.seq).collect::<Vec<_>>(), [1], "sent at 3 itself: drawn");
    // The unanswered last prompt, over the last frame; nothing over the first, or before it.
    let over: InFlight = get_as(&app, &at(10)).await;
    assert_eq!(over.requests.iter().map(|r| (r.seq, r.reply_seq)).collect::<Vec<_>>(), [(9, None)]);
    let over: InFlight = get_as(&app, &at(8)).await;
    assert!(over.requests.iter().all(|r| r.seq != 7), "{over:?}");
    assert_eq!(over.requests.len(), 0, "{over:?}");
    for seq in [0, 1] {
        let none: InFlight = get_as(&app, &at(seq)).await;
        assert_eq!((none.requests.len(), none.left_out), (0, 0));
    }
}
