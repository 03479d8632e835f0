//! How pages are read: the query plans of filtered pages, the cost of a
//! search page, and the search counts kept between pages.

use super::*;

#[test]
fn filtered_pages_read_their_index_without_sorting() {
    let (store, ids) = store_of_every_kind();
    // The query string, and the index SQLite's plan must use (`!` before
    // it: must not).
    let table = [
        ("method=m", "method_spans"),
        ("method=m&errors=true", "method_spans"),
        ("method=u&dir=agent_to_client", "method_spans"),
        ("method=m&min_latency_ms=0", "method_spans"),
        ("errors=true", "frames_errors"),
        ("kind=error", "frames_errors"),
        ("errors=true&dir=agent_to_client", "frames_errors"),
        ("kind=notification", "!frames_errors"),
    ];
    for (text, index) in table {
        let plan = plan(&store, ids[1], &query(text));
        match index.strip_prefix('!') {
            Some(index) => assert!(!plan.contains(index), "{text}: {plan}"),
            None => assert!(plan.contains(index), "{text}: {plan}"),
        }
        assert!(!plan.contains("TEMP B-TREE"), "{text}: {plan}");
    }
}

/// The query plan of the page query for `q` on trace `trace_id`.
fn plan(store: &Store, trace_id: i64, q: &FrameQuery) -> String {
    let Filters { from, where_sql, args, order } = filters(trace_id, q, 0, &NO_EXTRA);
    let sql = format!("EXPLAIN QUERY PLAN SELECT {SUMMARY_COLUMNS} FROM {from} WHERE {where_sql} ORDER BY {order}");
    let rows: Vec<String> = store
        .conn
        .prepare(&sql)
        .unwrap()
        .query_map(params_from_iter(args.iter()), |r| r.get(3))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    rows.join("; ")
}

/// A trace of `frames` frames, each holding the word `fox`, indexed for
/// search up to seq `indexed`.
fn store_of_foxes(frames: usize, indexed: i64) -> (Store, i64) {
    use crate::frame::Framer;
    let mut store = Store::in_memory().unwrap();
    let id = store.create_trace(&test_start(), 1).unwrap();
    let mut framer = Framer::new();
    let mut stored = Vec::new();
    let lines: String =
        (0..frames).map(|i| format!("{{\"method\":\"m\",\"params\":{{\"text\":\"fox {i}\"}}}}\n")).collect();
    framer.chunk(Direction::AgentToClient, 1, lines.as_bytes(), |f| stored.push(f));
    store.insert_frames(id, &stored).unwrap();
    assert_eq!(store.index_for_search(indexed).unwrap() as i64, indexed);
    (store, id)
}

/// SQLite virtual machine instructions `run` costs on `store`'s connection,
/// in thousands (counted by the progress handler).
fn thousand_instructions(store: &Store, run: impl FnOnce()) -> u64 {
    let counted = std::sync::Arc::new(std::sync::atomic::AtomicU64::new(0));
    let c = counted.clone();
    store.conn.progress_handler(
        1000,
        Some(move || {
            c.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            false
        }),
    );
    run();
    store.conn.progress_handler(0, None::<fn() -> bool>);
    counted.load(std::sync::atomic::Ordering::Relaxed)
}

#[test]
fn a_search_page_of_a_word_in_every_frame_reads_only_its_rows() {
    // Indexed, a page (and its total, counted by FTS5 from its lists of
    // frames: about six instructions per match) costs no more than a count
    // of the matches, not a collection of every match joined to its frame.
    const FRAMES: usize = 20_000;
    let (store, id) = store_of_foxes(FRAMES, FRAMES as i64);
    let mut page = None;
    let cost = thousand_instructions(&store, || page = Some(store.frame_page(id, &query("q=fox&limit=10")).unwrap()));
    let page = page.unwrap();
    assert_eq!((page.frames.len(), page.total, page.has_more), (10, FRAMES as i64, true));
    assert!(cost < 8 * FRAMES as u64 / 1000, "{cost} thousand instructions for a page of 10");
    // A page deep in the list pays for the matches it skips, no more.
    let cost = thousand_instructions(&store, || {
        let page = store.frame_page(id, &query("q=fox&limit=10&after=19000")).unwrap();
        assert_eq!(page.frames.first().map(|f| f.seq), Some(19_001));
    });
    assert!(cost < 8 * FRAMES as u64 / 1000, "{cost} thousand instructions for a cursor page");
}

/// A trace of `frames` frames, none indexed: frame `i` goes agent to client
/// when `i` is even, client to agent when odd, and holds `fox` always,
/// `hen` when `i` is a multiple of 3; started at `started_at`.
fn store_of_animals(frames: usize, started_at: &str) -> (Store, i64) {
    use crate::frame::Framer;
    let mut store = Store::in_memory().unwrap();
    let start = crate::model::TraceStart { started_at: started_at.into(), ..test_start() };
    let id = store.create_trace(&start, 1).unwrap();
    let mut framer = Framer::new();
    let mut stored = Vec::new();
    for i in 0..frames {
        let dir = if i % 2 == 0 { Direction::AgentToClient } else { Direction::ClientToAgent };
        let hen = if i % 3 == 0 { " hen" } else { "" };
        let line = format!("{{\"method\":\"m\",\"params\":{{\"text\":\"fox{hen} {i}\"}}}}\n");
        framer.chunk(dir, i as u64, line.as_bytes(), |f| stored.push(f));
    }
    store.insert_frames(id, &stored).unwrap();
    (store, id)
}

/// The page `text` asks for of trace `id`, its search counts kept in `counts`.
fn counted_page(store: &Store, id: i64, text: &str, counts: &SearchCounts) -> FramePage {
    store.frame_page_counted(id, &query(text), counts).unwrap()
}

#[test]
fn a_kept_search_count_stays_exact_as_the_index_grows_or_is_rebuilt() {
    const FRAMES: usize = 3000;
    let (mut store, id) = store_of_animals(FRAMES, "2026-01-01T00:00:00Z");
    let counts = SearchCounts::default();
    /// A search, and which frames (from 0) it finds.
    type Finds = (&'static str, fn(usize) -> bool);
    let searches: [Finds; 6] = [
        ("q=fox", |_| true),
        ("q=fox&dir=client_to_agent", |i| i % 2 == 1),
        ("q=fox&dir=agent_to_client", |i| i % 2 == 0),
        ("q=hen", |i| i % 3 == 0),
        ("q=hen+fox", |i| i % 3 == 0),
        ("q=hen&dir=client_to_agent&method=m", |i| i % 6 == 3),
    ];
    let check = |store: &Store, state: &str| {
        for (search, holds) in &searches {
            let want = (0..FRAMES).filter(|i| holds(*i)).count() as i64;
            for paging in ["limit=10", "limit=10&offset=25", "limit=10&after=40", "limit=10&offset=2990"] {
                let text = format!("{search}&{paging}");
                let page = counted_page(store, id, &text, &counts);
                let fresh = store.frame_page(id, &query(&text)).unwrap();
                assert_eq!(page, fresh, "{text} {state}");
                assert_eq!(page.total, want, "{text} {state}");
            }
        }
    };
    check(&store, "unindexed");
    for step in [1, 1000, 999, 500, 500] {
        assert_eq!(store.index_for_search(step).unwrap(), step as usize);
        check(&store, &format!("indexed up to {}", store.indexed_seq(id).unwrap()));
    }
    assert!(!counts.is_empty(), "no count was kept");
    // The index rebuilt from the start (as migration 5 did): the counts
    // kept reach past it.
    store
        .conn
        .execute_batch("INSERT INTO frames_fts (frames_fts) VALUES ('delete-all'); DELETE FROM search_progress")
        .unwrap();
    assert_eq!(store.index_for_search(700).unwrap(), 700);
    check(&store, "rebuilt up to 700");
    assert_eq!(store.index_for_search(FRAMES as i64).unwrap(), FRAMES - 700);
    check(&store, "rebuilt");
}

#[test]
fn a_range_pages_and_counts_only_its_frames_however_they_are_found() {
    const FRAMES: i64 = 3000;
    let (mut store, id) = store_of_animals(FRAMES as usize, "2026-01-01T00:00:00Z");
    let counts = SearchCounts::default();
    /// A filter, and which seqs it keeps (frame `seq - 1` of [`store_of_animals`]).
    type Keeps = (&'static str, fn(i64) -> bool);
    let filters: [Keeps; 6] = [
        ("", |_| true),
        ("dir=client_to_agent", |s| (s - 1) % 2 == 1),
        ("method=m", |_| true),
        ("q=hen", |s| (s - 1) % 3 == 0),
        ("q=hen&dir=client_to_agent&method=m", |s| (s - 1) % 6 == 3),
        ("q=fox", |_| true),
    ];
    let ranges = ["from=500&to=1500", "from=2900", "to=10", "from=1501", "from=2999&to=5000", "from=1&to=1"];
    let check = |store: &Store, state: &str| {
        for (filter, keeps) in &filters {
            for range in ranges {
                let q = query(range);
                let (from, to) = (q.from.unwrap_or(1), q.to.unwrap_or(i64::MAX).min(FRAMES));
                let want: Vec<i64> = (from..=to).filter(|s| keeps(*s)).collect();
                for (paging, after, offset) in
                    [("limit=10", 0, 0), ("limit=10&offset=25", 0, 25), ("limit=10&after=600", 600, 0)]
                {
                    let text = format!("{filter}&{range}&{paging}");
                    let page = counted_page(store, id, &text, &counts);
                    let seqs: Vec<i64> = page.frames.iter().map(|f| f.seq).collect();
                    let expected: Vec<i64> =
                        want.iter().copied().filter(|s| *s > after).skip(offset).take(10).collect();
                    assert_eq!(seqs, expected, "{text} {state}");
                    assert_eq!(page.total, want.len() as i64, "{text} {state}");
                    let rest = want.iter().filter(|s| **s > after).count();
                    assert_eq!(page.has_more, rest > offset + 10, "{text} {state}");
                }
            }
        }
    };
    check(&store, "unindexed");
    for step in [1000, 2000] {
        store.index_for_search(step).unwrap();
        check(&store, &format!("indexed up to {}", store.indexed_seq(id).unwrap()));
    }
}

#[test]
fn a_kept_search_count_costs_only_the_frames_indexed_since() {
    const FRAMES: usize = 20_000;
    let (mut store, id) = store_of_animals(FRAMES, "2026-01-01T00:00:00Z");
    assert_eq!(store.index_for_search(FRAMES as i64 - 1000).unwrap(), FRAMES - 1000);
    let counts = SearchCounts::default();
    let page = |store: &Store| counted_page(store, id, "q=fox&limit=10", &counts);
    // The frames beyond the index are scanned on every page: indexed all
    // but 1000, then all.
    let first = thousand_instructions(&store, || assert_eq!(page(&store).total, FRAMES as i64));
    let again = thousand_instructions(&store, || assert_eq!(page(&store).total, FRAMES as i64));
    assert!(again * 3 < first, "{again} thousand instructions for a page counted before, {first} the first time");
    assert_eq!(store.index_for_search(FRAMES as i64).unwrap(), 1000);
    let fresh = thousand_instructions(&store, || {
        assert_eq!(store.frame_page(id, &query("q=fox&limit=10")).unwrap().total, FRAMES as i64)
    });
    let grown = thousand_instructions(&store, || assert_eq!(page(&store).total, FRAMES as i64));
    assert!(
        grown * 5 < fresh,
        "{grown} thousand instructions for 1000 frames indexed since, {fresh} for a fresh count"
    );
    let kept = thousand_instructions(&store, || assert_eq!(page(&store).total, FRAMES as i64));
    assert!(kept * 20 < fresh, "{kept} thousand instructions for a page counted before, {fresh} for a fresh count");
}

#[test]
fn search_counts_kept_are_bounded() {
    use crate::frame::Framer;
    // Word `wN` in two frames each, so that a page of one is not all of
    // its matches and counts them.
    const WORDS: usize = SEARCH_COUNTS_KEPT + 30;
    let mut store = Store::in_memory().unwrap();
    let id = store.create_trace(&test_start(), 1).unwrap();
    let (mut framer, mut frames) = (Framer::new(), Vec::new());
    let mut lines: String =
        (0..2 * WORDS).map(|i| format!("{{\"method\":\"m\",\"params\":\"w{}\"}}\n", i % WORDS)).collect();
    // And two frames of a method with a name longer than a key kept.
    let long_method = "m".repeat(MAX_KEY_BYTES);
    lines.push_str(&format!("{{\"method\":\"{long_method}\",\"params\":\"long\"}}\n").repeat(2));
    framer.chunk(Direction::AgentToClient, 1, lines.as_bytes(), |f| frames.push(f));
    store.insert_frames(id, &frames).unwrap();
    store.index_for_search(frames.len() as i64).unwrap();
    let counts = SearchCounts::default();
    for n in 0..WORDS {
        assert_eq!(counted_page(&store, id, &format!("q=w{n}&limit=1"), &counts).total, 2);
        assert_eq!(counts.len(), (n + 1).min(SEARCH_COUNTS_KEPT));
    }
    // The least recently used go first: the count of w0 is gone, w{WORDS - 1}'s kept.
    let last = CountKey::new(id, &test_start().started_at, &format!("\"w{}\"", WORDS - 1), &query(""), false, false);
    let first = CountKey::new(id, &test_start().started_at, "\"w0\"", &query(""), false, false);
    assert!(counts.get(&last.unwrap()).is_some());
    assert!(counts.get(&first.unwrap()).is_none());
    // A key longer than MAX_KEY_BYTES is counted, not kept.
    let counts = SearchCounts::default();
    let page = counted_page(&store, id, &format!("q=long&limit=1&method={long_method}"), &counts);
    assert_eq!((page.frames.len(), page.total), (1, 2));
    assert!(counts.is_empty());
}

#[test]
fn a_kept_count_is_never_that_of_another_trace_under_the_same_id() {
    // Two stores whose trace 1 differ (as a store file replaced under a
    // server would), counts shared.
    let counts = SearchCounts::default();
    for (frames, started_at) in [(300, "2026-01-01T00:00:00Z"), (30, "2026-01-02T00:00:00Z")] {
        let (mut store, id) = store_of_animals(frames, started_at);
        store.index_for_search(frames as i64).unwrap();
        assert_eq!(counted_page(&store, id, "q=fox&limit=5", &counts).total, frames as i64, "{started_at}");
    }
    // A failed import's trace is deleted and its id given to the next
    // trace: it was never shown, so never searched or counted.
    let (mut store, _) = store_of_animals(300, "2026-01-01T00:00:00Z");
    store.index_for_search(300).unwrap();
    let fox = |n: usize| {
        let mut framer = crate::frame::Framer::new();
        let mut frames = Vec::new();
        let lines = "{\"method\":\"m\",\"params\":{\"text\":\"fox\"}}\n".repeat(n);
        framer.chunk(Direction::AgentToClient, 1, lines.as_bytes(), |f| frames.push(f));
        frames
    };
    let failed = {
        let mut import = store.begin_import().unwrap();
        let id = import.create_trace("import", "2026-01-03T00:00:00Z", "a.json").unwrap();
        import.insert_frames(id, &fox(50)).unwrap();
        id
    };
    assert!(matches!(
        store.frame_page_counted(failed, &query("q=fox&limit=5"), &counts),
        Err(StoreError::NoSuchTrace(_))
    ));
    let mut import = store.begin_import().unwrap();
    let again = import.create_trace("import", "2026-01-03T00:00:00Z", "a.json").unwrap();
    import.insert_frames(again, &fox(20)).unwrap();
    import.commit().unwrap();
    assert_eq!(again, failed, "the id was not given again");
    store.index_for_search(100).unwrap();
    assert_eq!(counted_page(&store, again, "q=fox&limit=5", &counts).total, 20);
}
