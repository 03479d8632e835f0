//! `/api/traces/{id}/overview`: the per-interval counts of the overview
//! strip, compared with what the store holds frame by frame.

use super::*;
use acp_tee_shared::api::{TraceOverview, OVERVIEW_BUCKETS_DEFAULT, OVERVIEW_BUCKETS_MAX};
use acp_tee_shared::check::TraceFindings;

/// Checks every bucket of `o` against trace `id`'s frames read one by one: frames, errors, seq ranges and
/// sessions counted in each bucket's time, and the requests not answered by its end.
fn assert_matches_the_store(store: &TempStore, id: i64, o: &TraceOverview) {
    let s = store.open();
    let mut frames = Vec::new();
    s.for_each_frame(id, |f| -> Result<(), acp_tee::StoreError> {
        frames.push(f);
        Ok(())
    })
    .unwrap();
    assert_eq!(o.frames, frames.len() as i64);
    if frames.is_empty() {
        assert!(o.buckets.is_empty());
        return;
    }
    let start = frames[0].t_ns;
    assert_eq!(o.start_t_ns, start);
    let last_t = frames.last().unwrap().t_ns;
    assert!(o.bucket_ns >= 1 && o.buckets.len() as i64 * o.bucket_ns > last_t - start, "the buckets cover the trace");
    assert!((o.buckets.len() as i64 - 1) * o.bucket_ns <= last_t - start, "no bucket lies wholly after the last frame");
    for (i, b) in o.buckets.iter().enumerate() {
        let (lo, hi) = (start + i as i64 * o.bucket_ns, start + (i as i64 + 1) * o.bucket_ns);
        let inside: Vec<_> = frames.iter().filter(|f| lo <= f.t_ns && f.t_ns < hi).collect();
        assert_eq!(b.frames, inside.len() as u64, "bucket {i}: frames");
        assert_eq!(b.errors, inside.iter().filter(|f| f.kind == FrameKind::Error).count() as u64, "bucket {i}: errors");
        assert_eq!(b.first_seq, inside.first().map(|f| f.seq), "bucket {i}: first seq");
        assert_eq!(b.last_seq, inside.last().map(|f| f.seq), "bucket {i}: last seq");
        let sessions: std::collections::BTreeSet<_> = inside.iter().filter_map(|f| f.session_id.as_ref()).collect();
        assert_eq!(b.sessions, sessions.len() as u64, "bucket {i}: sessions");
        let answered: std::collections::HashSet<i64> =
            frames.iter().filter(|f| f.t_ns < hi).filter_map(|f| f.reply_to_seq).collect();
        let open = frames.iter().filter(|f| f.t_ns < hi && f.kind == FrameKind::Request && !answered.contains(&f.seq));
        assert_eq!(b.open, open.count() as u64, "bucket {i}: open requests");
    }
}

#[tokio::test]
async fn the_overview_of_a_real_session_counts_what_the_store_holds_and_places_findings_once_checked() {
    let store = recorded_session();
    let app = router(&store, None);
    let o: TraceOverview = get_as(&app, "/api/traces/1/overview").await;
    assert!(o.buckets.len() <= OVERVIEW_BUCKETS_DEFAULT && o.buckets.len() > 1, "{}", o.buckets.len());
    assert_eq!(o.frames, store.open().trace(1).unwrap().frame_count);
    assert_eq!(o.buckets.iter().map(|b| b.frames).sum::<u64>() as i64, o.frames);
    assert_matches_the_store(&store, 1, &o);
    // Before the checks have read the trace, the findings are unknown, not 0.
    assert!(!o.findings_checked && o.buckets.iter().all(|b| b.findings.is_none()));
    assert!(o.findings_note.as_deref().is_some_and(|n| n.contains("not read this trace yet")), "{o:?}");

    for n in [1, 7, OVERVIEW_BUCKETS_MAX] {
        let o: TraceOverview = get_as(&app, &format!("/api/traces/1/overview?buckets={n}")).await;
        assert!(o.buckets.len() <= n);
        assert_matches_the_store(&store, 1, &o);
    }

    let findings: TraceFindings = get_as(&app, "/api/traces/1/findings").await;
    let o: TraceOverview = get_as(&app, "/api/traces/1/overview").await;
    assert!(o.findings_checked, "{:?}", o.findings_note);
    assert_eq!(o.buckets.iter().map(|b| b.findings.unwrap()).sum::<u64>(), findings.findings.len() as u64);
    for f in &findings.findings {
        let b = o.bucket_of_seq(f.seq().unwrap()).unwrap();
        assert!(o.buckets[b].findings.unwrap() >= 1, "finding at {:?} not in bucket {b}", f.seqs);
    }
}

#[tokio::test]
async fn errors_and_requests_open_across_buckets_an_empty_and_a_one_frame_trace() {
    use Direction::{AgentToClient as A2C, ClientToAgent as C2A};
    // A microsecond apart: a prompt open over most of the trace, an error answer, two sessions.
    let lines = [
        (C2A, r#"{"jsonrpc":"2.0","id":1,"method":"session/prompt","params":{"sessionId":"a"}}"#),
        (C2A, r#"{"jsonrpc":"2.0","id":2,"method":"session/prompt","params":{"sessionId":"b"}}"#),
        (A2C, r#"{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"a","update":{}}}"#),
        (A2C, r#"{"jsonrpc":"2.0","id":2,"error":{"code":-32603,"message":"no"}}"#),
        (A2C, r#"{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"a","update":{}}}"#),
        (A2C, r#"{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"a","update":{}}}"#),
        (A2C, r#"{"jsonrpc":"2.0","id":1,"result":{"stopReason":"end_turn"}}"#),
    ];
    let (store, id) = store_of_lines(&lines);
    let mut s = acp_tee::Recording::new(store.open()).unwrap();
    let empty = add_trace(&mut s, "empty", &[], true);
    let one = add_trace(&mut s, "one", &lines[..1], true);
    drop(s);
    let app = router(&store, None);
    for n in 1..=8 {
        let o: TraceOverview = get_as(&app, &format!("/api/traces/{id}/overview?buckets={n}")).await;
        assert_matches_the_store(&store, id, &o);
    }
    let o: TraceOverview = get_as(&app, &format!("/api/traces/{id}/overview?buckets=7")).await;
    // Seven frames 1 µs apart: 6001 ns in 7 buckets of 858 ns, a frame each.
    assert_eq!((o.bucket_ns, o.buckets.len()), (858, 7));
    let col = |f: fn(&acp_tee_shared::api::OverviewBucket) -> u64| o.buckets.iter().map(f).collect::<Vec<_>>();
    assert_eq!(col(|b| b.open), [1, 2, 2, 1, 1, 1, 0]);
    assert_eq!(col(|b| b.errors), [0, 0, 0, 1, 0, 0, 0]);

    let e: TraceOverview = get_as(&app, &format!("/api/traces/{empty}/overview")).await;
    assert_eq!((e.frames, e.last_seq, e.buckets.len()), (0, 0, 0));
    let o: TraceOverview = get_as(&app, &format!("/api/traces/{one}/overview")).await;
    assert_eq!((o.frames, o.buckets.len(), o.bucket_ns), (1, 1, 1));
    assert_eq!((o.buckets[0].first_seq, o.buckets[0].open, o.buckets[0].sessions), (Some(1), 1, 1));
}

#[tokio::test]
async fn bad_bucket_counts_are_400_and_unknown_traces_404() {
    let (store, id) = store_of_lines(&[(Direction::ClientToAgent, r#"{"jsonrpc":"2.0","method":"x"}"#)]);
    let app = router(&store, None);
    for bad in ["0", "2001", "-1", "abc", "1e3", ""] {
        let e = get_error(&app, &format!("/api/traces/{id}/overview?buckets={bad}"), StatusCode::BAD_REQUEST).await;
        assert!(e.error.contains("buckets"), "{bad}: {}", e.error);
    }
    let e = get_error(&app, "/api/traces/999/overview", StatusCode::NOT_FOUND).await;
    assert!(e.error.contains("999"), "{}", e.error);
    get_error(&app, "/api/traces/x/overview", StatusCode::BAD_REQUEST).await;
}

#[tokio::test]
async fn a_live_traces_overview_grows_with_its_frames() {
    let store = TempStore::new();
    let mut s = Store::create_or_open(&store.db).unwrap();
    s.maintain(0).unwrap();
    let mut s = acp_tee::Recording::new(s).unwrap();
    let request = r#"{"jsonrpc":"2.0","id":1,"method":"session/prompt","params":{"sessionId":"a"}}"#;
    let id = add_trace(&mut s, "live", &[(Direction::ClientToAgent, request)], false);
    let app = router(&store, None);
    let first: TraceOverview = get_as(&app, &format!("/api/traces/{id}/overview")).await;
    assert!(first.live);
    assert_eq!((first.frames, first.buckets[0].open), (1, 1));
    // The recorder stores an answer later: the next overview counts it.
    let mut framer = acp_tee::Framer::new();
    let mut frames = Vec::new();
    framer.chunk(Direction::ClientToAgent, 1000, format!("{request}\n").as_bytes(), |_| {});
    framer.chunk(Direction::AgentToClient, 5_000_000, b"{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}\n", |f| {
        frames.push(f)
    });
    s.insert_frames(id, &frames).unwrap();
    let grown: TraceOverview = get_as(&app, &format!("/api/traces/{id}/overview")).await;
    assert_eq!((grown.frames, grown.last_seq), (2, 2));
    assert_eq!(grown.buckets.last().unwrap().open, 0);
    assert!(grown.buckets.len() > 1 && grown.buckets[0].open == 1);
    assert_matches_the_store(&store, id, &grown);
}
