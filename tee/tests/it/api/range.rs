//! `/api/traces/{id}/range`: what a range of seqs holds, compared with the
//! frames the frames API lists for the same range, masked as they are.

use super::*;
use acp_tee_shared::api::RangeSummary;
use std::collections::BTreeMap;

#[tokio::test]
async fn a_range_of_a_real_session_adds_up_what_the_frames_api_lists_for_it() {
    let store = recorded_session();
    let app = router(&store, None);
    let all: FramePage = get_as(&app, "/api/traces/1/frames?limit=1000").await;
    let n = all.frames.len() as i64;
    assert!(n >= 6, "a real session has a few frames: {n}");
    for (from, to) in [(1, n), (2, n - 1), (3, 3), (n, n + 100)] {
        let r: RangeSummary = get_as(&app, &format!("/api/traces/1/range?from={from}&to={to}")).await;
        let page: FramePage = get_as(&app, &format!("/api/traces/1/frames?from={from}&to={to}&limit=1000")).await;
        let f = &page.frames;
        assert_eq!(r.frames, f.len() as u64, "{from}..={to}");
        assert_eq!((r.first_seq, r.last_seq), (f.first().map(|f| f.seq), f.last().map(|f| f.seq)));
        assert_eq!(r.duration_ns, f.last().unwrap().t_ns - f[0].t_ns);
        assert_eq!(r.requests, f.iter().filter(|f| f.kind == FrameKind::Request).count() as u64);
        assert_eq!(r.errors, f.iter().filter(|f| f.kind == FrameKind::Error).count() as u64);
        let mut methods: BTreeMap<&str, u64> = BTreeMap::new();
        for m in f.iter().filter_map(|f| f.method.as_deref()) {
            *methods.entry(m).or_default() += 1;
        }
        let listed: BTreeMap<&str, u64> = r.methods.iter().map(|m| (m.method.as_str(), m.frames)).collect();
        assert_eq!(listed, methods, "{from}..={to}");
        assert_eq!(r.no_method, f.iter().filter(|f| f.method.is_none()).count() as u64);
    }
}

#[tokio::test]
async fn method_names_are_masked_as_the_frames_show_them() {
    let lines = [
        (Direction::ClientToAgent, r#"{"jsonrpc":"2.0","method":"https://host/x?token=SECRET7"}"#),
        (Direction::ClientToAgent, r#"{"jsonrpc":"2.0","method":"https://host/x?token=SECRET8"}"#),
        (Direction::ClientToAgent, r#"{"jsonrpc":"2.0","method":"plain"}"#),
    ];
    let (store, id) = store_of_lines(&lines);
    let app = router(&store, None);
    let (status, body) =
        get_with(&app, Request::get(format!("/api/traces/{id}/range?from=1&to=3")).body(Body::empty()).unwrap()).await;
    let text = String::from_utf8_lossy(&body);
    assert_eq!(status, StatusCode::OK, "{text}");
    assert!(!text.contains("SECRET"), "{text}");
    let r: RangeSummary = serde_json::from_slice(&body).unwrap();
    let listed: Vec<(&str, u64)> = r.methods.iter().map(|m| (m.method.as_str(), m.frames)).collect();
    // The two names mask alike: one method of two frames, as the rows show them.
    assert_eq!(listed, [("https://host/x?token=[REDACTED]", 2), ("plain", 1)]);
}

#[tokio::test]
async fn bad_ranges_are_400_and_unknown_traces_404() {
    let (store, id) = store_of_lines(&[(Direction::ClientToAgent, r#"{"jsonrpc":"2.0","method":"x"}"#)]);
    let app = router(&store, None);
    for bad in ["", "from=1", "to=3", "from=0&to=3", "from=5&to=4", "from=-1&to=2", "from=a&to=2", "from=1e3&to=2000"] {
        let e = get_error(&app, &format!("/api/traces/{id}/range?{bad}"), StatusCode::BAD_REQUEST).await;
        assert!(!e.error.is_empty(), "{bad}");
    }
    let e = get_error(&app, "/api/traces/999/range?from=1&to=2", StatusCode::NOT_FOUND).await;
    assert!(e.error.contains("999"), "{}", e.error);
    get_error(&app, "/api/traces/x/range?from=1&to=2", StatusCode::BAD_REQUEST).await;
}
