//! The request table's pages and the requests in flight over a frame.

use crate::testing::store_from;
use crate::Store;
use acp_tee_shared::api::{RequestQuery, RequestSort, RequestStatus, IN_FLIGHT_MAX};
use acp_tee_shared::Direction::{AgentToClient as A2C, ClientToAgent as C2A};

const MS: u64 = 1_000_000;

/// A trace of four requests: `initialize` (1, answered at 2 after 5 ms),
/// a prompt (3, answered with an error at 7 after 30 ms), the agent's
/// `fs/read_text_file` (4, answered at 5 after 2 ms) and a prompt never
/// answered (8).
fn four_requests() -> (Store, i64) {
    let chunks: [(acp_tee_shared::Direction, u64, &[u8]); 9] = [
        (C2A, 0, b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\",\"params\":{}}\n"),
        (A2C, 5 * MS, b"{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}\n"),
        (
            C2A,
            10 * MS,
            b"{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"session/prompt\",\"params\":{\"sessionId\":\"s1\"}}\n",
        ),
        (
            A2C,
            11 * MS,
            b"{\"jsonrpc\":\"2.0\",\"id\":\"x\",\"method\":\"fs/read_text_file\",\"params\":{\"sessionId\":\"s1\"}}\n",
        ),
        (C2A, 13 * MS, b"{\"jsonrpc\":\"2.0\",\"id\":\"x\",\"result\":{\"content\":\"a longer answer\"}}\n"),
        (A2C, 14 * MS, b"{\"jsonrpc\":\"2.0\",\"method\":\"session/update\",\"params\":{\"sessionId\":\"s1\"}}\n"),
        (A2C, 40 * MS, b"{\"jsonrpc\":\"2.0\",\"id\":2,\"error\":{\"code\":-32603,\"message\":\"boom\"}}\n"),
        (
            C2A,
            50 * MS,
            b"{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"session/prompt\",\"params\":{\"sessionId\":\"s2\"}}\n",
        ),
        (A2C, 60 * MS, b"{\"jsonrpc\":\"2.0\",\"method\":\"session/update\",\"params\":{\"sessionId\":\"s2\"}}\n"),
    ];
    (store_from(&chunks), 1)
}

/// The seqs of the page sorted by `sort` (`desc`), `offset` and `limit`.
fn seqs(store: &Store, id: i64, sort: RequestSort, desc: bool, offset: i64, limit: i64) -> Vec<i64> {
    let q = RequestQuery { sort: Some(sort), desc: Some(desc), offset: Some(offset), limit: Some(limit) };
    store.request_page(id, &q).unwrap().requests.iter().map(|r| r.seq).collect()
}

#[test]
fn every_request_is_a_row_with_its_answer() {
    let (store, id) = four_requests();
    let page = store.request_page(id, &RequestQuery::default()).unwrap();
    assert_eq!((page.total, page.offset), (4, 0));
    let rows: Vec<_> = page
        .requests
        .iter()
        .map(|r| (r.seq, r.method.as_deref().unwrap(), r.dir, r.reply_seq, r.latency_ns, r.status.clone()))
        .collect();
    let error = RequestStatus::Error { code: Some(-32603), message: Some("boom".into()) };
    assert_eq!(
        rows,
        [
            (1, "initialize", C2A, Some(2), Some(5 * MS as i64), RequestStatus::Ok),
            (3, "session/prompt", C2A, Some(7), Some(30 * MS as i64), error),
            (4, "fs/read_text_file", A2C, Some(5), Some(2 * MS as i64), RequestStatus::Ok),
            (8, "session/prompt", C2A, None, None, RequestStatus::Unanswered),
        ]
    );
    let r = &page.requests[2];
    assert_eq!(r.id, Some(serde_json::json!("x")));
    assert_eq!(r.session_id.as_deref(), Some("s1"));
    assert_eq!(r.request_size, store.frame_raw(id, 4).unwrap().unwrap().len() as i64);
    assert_eq!(r.response_size, Some(store.frame_raw(id, 5).unwrap().unwrap().len() as i64));
    assert_eq!(page.requests[3].response_size, None);
}

#[test]
fn every_column_sorts_both_ways_and_pages() {
    let (store, id) = four_requests();
    use RequestSort::*;
    let table = [
        (Seq, [1, 3, 4, 8]),
        (Method, [4, 1, 3, 8]),
        // Numbers by value (1, 2, 3), then strings.
        (Id, [1, 3, 8, 4]),
        (Dir, [1, 3, 8, 4]),
        (Status, [1, 4, 3, 8]),
        // Unanswered last both ways.
        (Latency, [4, 1, 3, 8]),
        (Session, [3, 4, 8, 1]),
    ];
    for (sort, want) in table {
        assert_eq!(seqs(&store, id, sort, false, 0, 10), want, "{sort:?}");
        // Reversed, but for requests without the value (unanswered, no session), last both ways.
        let reversed = match sort {
            Latency => vec![3, 1, 4, 8],
            Session => vec![8, 4, 3, 1],
            _ => want.iter().rev().copied().collect(),
        };
        assert_eq!(seqs(&store, id, sort, true, 0, 10), reversed, "{sort:?} desc");
    }
    // The answer's size, then the request's; unanswered last.
    let sizes = seqs(&store, id, Size, true, 0, 10);
    assert_eq!(sizes.last(), Some(&8), "{sizes:?}");
    assert_eq!(sizes[..3], [4, 3, 1], "the longest answer first: {sizes:?}");
    // Pages of the sorted table.
    assert_eq!(seqs(&store, id, Seq, false, 1, 2), [3, 4]);
    assert_eq!(seqs(&store, id, Latency, true, 3, 2), [8]);
    assert_eq!(seqs(&store, id, Seq, false, 4, 2), Vec::<i64>::new());
}

#[test]
fn every_sort_reads_the_index_of_requests_and_by_seq_sorts_nothing() {
    let (store, id) = four_requests();
    for sort in RequestSort::ALL {
        for desc in [false, true] {
            let sql = format!("EXPLAIN QUERY PLAN {}", super::page_sql(sort, desc, "length"));
            let plan: Vec<String> = store
                .conn
                .prepare(&sql)
                .unwrap()
                .query_map(rusqlite::params![id, 10, 0], |r| r.get(3))
                .unwrap()
                .collect::<Result<_, _>>()
                .unwrap();
            let plan = plan.join("; ");
            assert!(plan.contains("frames_requests"), "{sort:?}: {plan}");
            if sort == RequestSort::Seq {
                assert!(!plan.contains("TEMP B-TREE"), "{sort:?} {desc}: {plan}");
            }
        }
    }
}

#[test]
fn in_flight_are_the_requests_sent_before_and_answered_after_or_never() {
    let (store, id) = four_requests();
    let at = |seq| {
        let f = store.in_flight(id, seq).unwrap();
        (f.requests.iter().map(|r| (r.seq, r.reply_seq, r.error)).collect::<Vec<_>>(), f.left_out)
    };
    // Frame 5 answers request 4 itself: only the prompt is in flight over it.
    assert_eq!(at(5), (vec![(3, Some(7), true)], 0));
    assert_eq!(at(6), (vec![(3, Some(7), true)], 0));
    assert_eq!(at(7), (vec![], 0));
    assert_eq!(at(9), (vec![(8, None, false)], 0));
    assert_eq!(at(1), (vec![], 0));
    let f = store.in_flight(id, 6).unwrap();
    assert_eq!(f.requests[0].latency_ns, Some(30 * MS as i64));
    assert_eq!(f.requests[0].method.as_deref(), Some("session/prompt"));
}

#[test]
fn in_flight_lists_the_newest_and_counts_the_rest() {
    let mut chunks: Vec<(acp_tee_shared::Direction, u64, Vec<u8>)> = Vec::new();
    let n = IN_FLIGHT_MAX as u64 + 36;
    for i in 0..n {
        let text = format!("{{\"jsonrpc\":\"2.0\",\"id\":{i},\"method\":\"m\",\"params\":{{}}}}\n");
        chunks.push((C2A, i * MS, text.into_bytes()));
    }
    // The first ten are answered at the end; the others never.
    for i in 0..10 {
        chunks.push((A2C, (n + i) * MS, format!("{{\"jsonrpc\":\"2.0\",\"id\":{i},\"result\":{{}}}}\n").into_bytes()));
    }
    let borrowed: Vec<_> = chunks.iter().map(|(d, t, b)| (*d, *t, b.as_slice())).collect();
    let store = store_from(&borrowed);
    let f = store.in_flight(1, n as i64 + 1).unwrap();
    assert_eq!(f.requests.len(), IN_FLIGHT_MAX);
    assert_eq!(f.requests[0].seq, n as i64, "newest first");
    // In flight over the first answer: the nine answered after it and the 90 never answered.
    assert_eq!(f.left_out, n as i64 - 1 - IN_FLIGHT_MAX as i64);
    assert!(f.requests.iter().all(|r| r.reply_seq.is_none()));
    let f = store.in_flight(1, n as i64 + 2).unwrap();
    assert_eq!(f.left_out, n as i64 - 2 - IN_FLIGHT_MAX as i64);
    // Over the last answer: only those never answered.
    let f = store.in_flight(1, (n + 10) as i64).unwrap();
    assert_eq!(f.requests.len(), IN_FLIGHT_MAX);
    assert_eq!(f.left_out, n as i64 - 10 - IN_FLIGHT_MAX as i64);
}

#[test]
fn an_unknown_trace_is_no_such_trace() {
    let (store, _) = four_requests();
    assert!(matches!(store.request_page(9, &RequestQuery::default()), Err(crate::StoreError::NoSuchTrace(9))));
    assert!(matches!(store.in_flight(9, 1), Err(crate::StoreError::NoSuchTrace(9))));
}

#[test]
fn by_latency_the_index_of_latencies_pages_as_the_sort_does() {
    let (store, id) = four_requests();
    let ids = |c: Vec<super::Chosen>| c.iter().map(|c| (c.request, c.answer)).collect::<Vec<_>>();
    for desc in [false, true] {
        let sql = super::page_sql(RequestSort::Latency, desc, "length");
        for offset in 0..6 {
            for limit in 1..6 {
                let fast = ids(store.chosen_by_latency(id, desc, limit, offset).unwrap());
                let sorted = ids(store.chosen(id, &sql, limit, offset).unwrap());
                assert_eq!(fast, sorted, "desc {desc}, offset {offset}, limit {limit}");
            }
        }
    }
    let plan: Vec<String> = store
        .conn
        .prepare(
            "EXPLAIN QUERY PLAN SELECT r.id, p.id FROM frames p INDEXED BY frames_by_latency
             JOIN frames r ON r.id = (p.trace_id << 40) + p.reply_to_seq AND r.kind = 'request'
             WHERE p.trace_id = ?1 AND p.latency_ns IS NOT NULL AND p.reply_to_seq IS NOT NULL
             ORDER BY p.latency_ns DESC, p.id DESC LIMIT 10",
        )
        .unwrap()
        .query_map([id], |r| r.get(3))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    assert!(!plan.join("; ").contains("TEMP B-TREE"), "{plan:?}");
}
