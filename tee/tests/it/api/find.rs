//! Find through the API: `/find` steps to the next and previous match and
//! wraps, `/matches` lists a range's, `/search` finds the traces; the same
//! answers scanned, half indexed and indexed; masked secrets find nothing;
//! counts stop at their cap; bad parameters are 400s.

use super::*;
use acp_tee_shared::api::{FindStep, MatchList, TraceSearch, FIND_COUNT_CAP};
use acp_tee_shared::Direction::{AgentToClient as Out, ClientToAgent as In};

/// Frame `n` (from 1) of [`lines`]: `needle` at 3, 7 and 10 (7 sent by the
/// agent), a secret `hush` (masked when shown) at 5.
fn line(n: usize) -> (acp_tee_shared::Direction, String) {
    let text = match n {
        3 | 7 | 10 => "a needle here",
        5 => return (In, r#"{"method":"m","params":{"text":"plain"},"_meta":{"Authorization":"hush"}}"#.to_owned()),
        _ => "hay",
    };
    (if n == 7 { Out } else { In }, format!(r#"{{"method":"m","params":{{"text":"{text}"}}}}"#))
}

const FRAMES: usize = 12;

fn step(seq: Option<i64>, wrapped: bool, position: Option<i64>, total: i64) -> FindStep {
    FindStep { seq, wrapped, position, total, more: false }
}

#[tokio::test]
async fn find_steps_both_ways_and_wraps_the_same_scanned_half_indexed_and_indexed() {
    let lines: Vec<_> = (1..=FRAMES).map(line).collect();
    let lines: Vec<_> = lines.iter().map(|(d, l)| (*d, l.as_str())).collect();
    for indexed in [0, 6, FRAMES] {
        let (store, id) = store_of_lines(&lines);
        let mut s = Store::open_existing(&store.db).unwrap();
        assert_eq!(s.index_for_search(indexed as i64).unwrap(), indexed);
        drop(s);
        // The server's own indexer is held off meanwhile.
        let lock = rusqlite::Connection::open(&store.db).unwrap();
        lock.execute_batch("BEGIN IMMEDIATE").unwrap();
        let app = router(&store, None);
        let find = |query: &str| format!("/api/traces/{id}/find?{query}");
        let cases = [
            ("find=needle", step(Some(3), false, Some(1), 3)),
            ("find=NEEDLE&after=3", step(Some(7), false, Some(2), 3)),
            ("find=needle&after=7", step(Some(10), false, Some(3), 3)),
            ("find=needle&after=10", step(Some(3), true, Some(1), 3)),
            ("find=needle&before=10", step(Some(7), false, Some(2), 3)),
            ("find=needle&before=3", step(Some(10), true, Some(3), 3)),
            ("find=needle&before=1", step(Some(10), true, Some(3), 3)),
            // Among the frames the filters show only.
            ("find=needle&dir=client_to_agent&after=3", step(Some(10), false, Some(2), 2)),
            ("find=needle&q=here&before=3", step(Some(10), true, Some(3), 3)),
            // Within the view's seq range only (a range filtered to, a replay's cursor), wrapping inside it.
            ("find=needle&from=4", step(Some(7), false, Some(1), 2)),
            ("find=needle&to=9&after=7", step(Some(3), true, Some(1), 2)),
            ("find=needle&from=4&to=9", step(Some(7), false, Some(1), 1)),
            ("find=needle&from=4&to=9&before=7", step(Some(7), true, Some(1), 1)),
            ("find=needle&to=9&before=1", step(Some(7), true, Some(2), 2)),
            ("find=needle&from=8&to=9", step(None, false, None, 0)),
            // Not found: no step, nothing counted.
            ("find=nothing", step(None, false, None, 0)),
            ("find=needle&q=hay", step(None, false, None, 0)),
            // The secret is masked where it is shown, so it finds nothing; the mask does.
            ("find=hush", step(None, false, None, 0)),
            ("find=hush&after=4", step(None, false, None, 0)),
            ("find=REDACTED", step(Some(5), false, Some(1), 1)),
        ];
        for (query, want) in cases {
            let got: FindStep = get_as(&app, &find(query)).await;
            assert_eq!(got, want, "{query} with {indexed} indexed");
        }
        let matches = |query: &str| format!("/api/traces/{id}/matches?{query}");
        let cases: [(&str, &[i64]); 5] = [
            ("find=needle&from=1&to=12", &[3, 7, 10]),
            ("find=needle&from=4&to=9", &[7]),
            ("find=needle&from=7&to=7", &[7]),
            ("find=needle&from=11&to=2000", &[]),
            ("find=hush&from=1&to=12", &[]),
        ];
        for (query, want) in cases {
            let got: MatchList = get_as(&app, &matches(query)).await;
            assert_eq!(got.seqs, want, "{query} with {indexed} indexed");
        }
        drop(lock);
    }
}

/// A word in more frames than the cap: counting stops there and says so,
/// and a match past the cap has no position.
#[tokio::test]
async fn counts_stop_at_the_cap_and_say_so() {
    let n = FIND_COUNT_CAP as usize + 50;
    let lines: Vec<_> = (0..n).map(|_| (In, r#"{"method":"m","params":{"text":"common"}}"#)).collect();
    let (store, id) = store_of_lines(&lines);
    let app = router(&store, None);
    let first: FindStep = get_as(&app, &format!("/api/traces/{id}/find?find=common")).await;
    let want = FindStep { seq: Some(1), wrapped: false, position: Some(1), total: FIND_COUNT_CAP, more: true };
    assert_eq!(first, want);
    let at_cap: FindStep =
        get_as(&app, &format!("/api/traces/{id}/find?find=common&after={}", FIND_COUNT_CAP - 1)).await;
    assert_eq!((at_cap.seq, at_cap.position), (Some(FIND_COUNT_CAP), Some(FIND_COUNT_CAP)));
    let past: FindStep = get_as(&app, &format!("/api/traces/{id}/find?find=common&before={}", n + 1)).await;
    assert_eq!((past.seq, past.position, past.total, past.more), (Some(n as i64), None, FIND_COUNT_CAP, true));
}

#[tokio::test]
async fn bad_find_parameters_are_clear_400s() {
    let lines: Vec<_> = (1..=FRAMES).map(line).collect();
    let lines: Vec<_> = lines.iter().map(|(d, l)| (*d, l.as_str())).collect();
    let (store, id) = store_of_lines(&lines);
    let app = router(&store, None);
    let long = "w".repeat(1001);
    let cases = [
        (format!("/api/traces/{id}/find"), "find must name"),
        (format!("/api/traces/{id}/find?find=%20"), "find must name"),
        (format!("/api/traces/{id}/find?find={long}"), "at most 1000 bytes"),
        (format!("/api/traces/{id}/find?find=a&q={long}"), "at most 1000 bytes"),
        (format!("/api/traces/{id}/find?find=a&after=1&before=3"), "not both"),
        (format!("/api/traces/{id}/find?find=a&before=0"), "before must be"),
        (format!("/api/traces/{id}/find?find=a&after=-1"), "after must be"),
        (format!("/api/traces/{id}/find?find=a&after=x"), "after"),
        (format!("/api/traces/{id}/find?find=a&min_latency_ms=-1"), "min_latency_ms"),
        (format!("/api/traces/{id}/find?find=a%00b"), "NUL"),
        (format!("/api/traces/{id}/matches?find=a"), "needs from and to"),
        (format!("/api/traces/{id}/matches?find=a&from=5"), "needs from and to"),
        (format!("/api/traces/{id}/matches?find=a&from=5&to=4"), "from <= to"),
        (format!("/api/traces/{id}/matches?find=a&from=0&to=4"), "1 or more"),
        (format!("/api/traces/{id}/matches?find=a&from=1&to=2001"), "at most 2000 apart"),
        ("/api/search".to_owned(), "q must name"),
        ("/api/search?q=%7B".to_owned(), ""),
        (format!("/api/search?q={long}"), "at most 1000 bytes"),
    ];
    for (uri, says) in cases {
        if says.is_empty() {
            // Words without letters or digits are no error: they find nothing.
            let found: TraceSearch = get_as(&app, &uri).await;
            assert!(found.hits.is_empty(), "{uri}");
            continue;
        }
        let error = get_error(&app, &uri, StatusCode::BAD_REQUEST).await;
        assert!(error.error.contains(says), "{uri}: {}", error.error);
    }
    get_error(&app, "/api/traces/99/find?find=a", StatusCode::NOT_FOUND).await;
    get_error(&app, "/api/traces/99/matches?find=a&from=1&to=2", StatusCode::NOT_FOUND).await;
}

/// `/api/search` finds the trace whose payload holds the words, with its
/// first match (previewed masked) and count, and not by a masked secret.
#[tokio::test]
async fn search_finds_the_traces_whose_frames_match_and_not_by_secrets() {
    let store = TempStore::new();
    let mut s = Store::create_or_open(&store.db).unwrap();
    s.maintain(0).unwrap();
    let mut s = acp_tee::Recording::new(s).unwrap();
    let lines: Vec<_> = (1..=FRAMES).map(line).collect();
    let lines: Vec<_> = lines.iter().map(|(d, l)| (*d, l.as_str())).collect();
    let with = add_trace(&mut s, "with needles", &lines, true);
    let hay = [(In, r#"{"method":"m","params":{"text":"hay"}}"#); 4];
    let without = add_trace(&mut s, "hay only", &hay, true);
    drop(s);
    let app = router(&store, None);
    let found: TraceSearch = get_as(&app, "/api/search?q=needle").await;
    assert_eq!((found.searched, found.traces, found.stopped.as_deref()), (2, 2, None));
    assert_eq!(found.hits.len(), 1, "{found:?}");
    let hit = &found.hits[0];
    assert_eq!((hit.trace.meta.id, hit.trace.meta.name.as_deref()), (with, Some("with needles")));
    assert_eq!((hit.first.seq, hit.count, hit.more), (3, 3, false));
    let found: TraceSearch = get_as(&app, "/api/search?q=hay").await;
    let ids: Vec<i64> = found.hits.iter().map(|h| h.trace.meta.id).collect();
    assert_eq!(ids, [without, with], "newest first");
    let found: TraceSearch = get_as(&app, "/api/search?q=hush").await;
    assert!(found.hits.is_empty(), "a masked secret finds nothing: {found:?}");
}
