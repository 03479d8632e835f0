//! Search through the API: the same answers before, during and after
//! indexing, pages of a common word, and kept totals as frames come.

use super::*;

#[test]
fn search_answers_the_same_before_and_after_indexing() {
    use acp_tee_shared::api::FrameQuery;
    use acp_tee_shared::Direction::ClientToAgent as In;
    let texts = [
        "token7",
        "token70 and token71",
        "xtoken7y",
        "this OR that",
        "an error for you",
        "it's 5%",
        "s%d",
        "plans% off",
        "ÜNÏ upper",
        "uni plain",
        "ünï lower",
        "unicode",
        "Émile écrit",
        "session/prompt here",
        "prompt then session",
        "Purple Elephants",
        "tab\\there",
    ];
    let lines: Vec<String> = texts.iter().map(|t| format!(r#"{{"method":"m","params":{{"text":"{t}"}}}}"#)).collect();
    let lines: Vec<_> = lines.iter().map(|l| (In, l.as_str())).collect();
    // No server here: nothing indexes the trace behind the test's back.
    let (store, id) = store_of_lines(&lines);
    let queries = [
        ("token7", vec!["token7"]),
        ("OR", vec!["this OR that"]),
        ("s%", vec!["it's 5%", "s%d"]),
        ("ünï", vec!["ÜNÏ upper", "uni plain", "ünï lower"]),
        ("ÜNÏ", vec!["ÜNÏ upper", "uni plain", "ünï lower"]),
        ("emile", vec!["Émile écrit"]),
        ("session/prompt", vec!["session/prompt here"]),
        ("prompt session", vec!["session/prompt here", "prompt then session"]),
        ("purple ELEPHANTS", vec!["Purple Elephants"]),
        ("{", vec![]),
        ("_", vec![]),
        ("\"purple", vec!["Purple Elephants"]),
        // The frame's bytes are searched, JSON escapes and all: `\t` ends a word.
        ("there", vec!["tab\\there"]),
        ("ttab", vec![]),
        ("method", texts.to_vec()),
    ];
    let search = |s: &Store, q: &str| {
        let page = s.frame_page(id, &FrameQuery { q: Some(q.to_owned()), ..FrameQuery::default() }).unwrap();
        let found: Vec<&str> = page.frames.iter().map(|f| texts[f.seq as usize - 1]).collect();
        assert_eq!(page.total, found.len() as i64, "q={q}");
        found
    };
    let mut s = Store::open_existing(&store.db).unwrap();
    for (q, want) in &queries {
        assert_eq!(search(&s, q), *want, "q={q} before indexing");
    }
    // Half indexed: a query reads both ways at once.
    assert_eq!(s.index_for_search(8).unwrap(), 8);
    for (q, want) in &queries {
        assert_eq!(search(&s, q), *want, "q={q} half indexed");
    }
    assert_eq!(s.index_for_search(1000).unwrap(), texts.len() - 8);
    for (q, want) in &queries {
        assert_eq!(search(&s, q), *want, "q={q} after indexing");
    }
}

/// A search pages the same whether the trace is indexed, scanned, or its
/// head indexed and its tail scanned: by offset, by cursor and one frame at
/// a time across the boundary, with the same totals. The server's own
/// indexer is held off by a write transaction kept open meanwhile.
#[tokio::test]
async fn a_common_word_pages_the_same_indexed_scanned_and_half_of_each() {
    use acp_tee_shared::Direction::{AgentToClient as Out, ClientToAgent as In};
    const FRAMES: usize = 240;
    let word = |i: usize| {
        if i % 37 == 5 {
            "zebra"
        } else if i.is_multiple_of(3) {
            "cat"
        } else {
            "fox"
        }
    };
    let lines: Vec<(Direction, String)> = (0..FRAMES)
        .map(|i| {
            let dir = if i % 2 == 0 { In } else { Out };
            (dir, format!(r#"{{"method":"m{}","params":{{"text":"the quick {} {i}"}}}}"#, i % 4, word(i)))
        })
        .collect();
    let lines: Vec<_> = lines.iter().map(|(d, l)| (*d, l.as_str())).collect();
    // Each search and the seqs it must find (frame i has seq i + 1).
    let find =
        |keep: &dyn Fn(usize) -> bool| (0..FRAMES).filter(|&i| keep(i)).map(|i| i as i64 + 1).collect::<Vec<_>>();
    let searches = [
        ("q=fox", find(&|i| word(i) == "fox")),
        ("q=quick+FOX", find(&|i| word(i) == "fox")),
        ("q=zebra", find(&|i| word(i) == "zebra")),
        ("q=fox&dir=agent_to_client", find(&|i| word(i) == "fox" && i % 2 == 1)),
        ("q=fox&method=m2", find(&|i| word(i) == "fox" && i % 4 == 2)),
        ("q=absent", vec![]),
    ];
    for indexed in [0, 1, 100, FRAMES - 1, FRAMES] {
        let (store, id) = store_of_lines(&lines);
        let mut s = Store::open_existing(&store.db).unwrap();
        assert_eq!(s.index_for_search(indexed as i64).unwrap(), indexed);
        drop(s);
        let lock = rusqlite::Connection::open(&store.db).unwrap();
        lock.execute_batch("BEGIN IMMEDIATE").unwrap();
        let app = router(&store, None);
        for (search, want) in &searches {
            let state = format!("{search} with {indexed} of {FRAMES} indexed");
            let page_at = |at: String, limit: usize| {
                let app = app.clone();
                let uri = format!("/api/traces/{id}/frames?{search}&limit={limit}&{at}");
                async move { get_as::<FramePage>(&app, &uri).await }
            };
            // By offset, 7 at a time, to past the end.
            let mut got = Vec::new();
            for offset in (0..want.len() + 8).step_by(7) {
                let page = page_at(format!("offset={offset}"), 7).await;
                assert_eq!((page.total, page.has_more), (want.len() as i64, offset + 7 < want.len()), "{state}");
                got.extend(seqs(&page));
            }
            assert_eq!(got, *want, "{state}: by offset");
            // By cursor.
            let (mut got, mut after) = (Vec::new(), 0);
            loop {
                let page = page_at(format!("after={after}"), 7).await;
                assert_eq!(page.total, want.len() as i64, "{state}");
                got.extend(seqs(&page));
                after = got.last().copied().unwrap_or(0);
                if !page.has_more {
                    break;
                }
            }
            assert_eq!(got, *want, "{state}: by cursor");
            // Each frame on a page of its own.
            for (offset, seq) in want.iter().enumerate() {
                let page = page_at(format!("offset={offset}"), 1).await;
                assert_eq!(seqs(&page), [*seq], "{state}: offset {offset}");
            }
        }
        let reached: i64 =
            lock.query_row("SELECT coalesce(max(indexed_seq), 0) FROM search_progress", [], |r| r.get(0)).unwrap();
        assert_eq!(reached, indexed as i64, "the index grew behind the test's back");
        drop(app);
        lock.execute_batch("ROLLBACK").unwrap();
    }
}

/// A live trace of `n` frames from seq `from`, alternately agent to
/// client and client to agent, each holding `fox`.
fn foxes(framer: &mut acp_tee::Framer, from: usize, n: usize) -> Vec<acp_tee::NewFrame> {
    let mut frames = Vec::new();
    for i in from..from + n {
        let dir = if i % 2 == 0 { Direction::AgentToClient } else { Direction::ClientToAgent };
        let line = format!("{{\"method\":\"m\",\"params\":{{\"text\":\"fox {i}\"}}}}\n");
        framer.chunk(dir, i as u64, line.as_bytes(), |f| frames.push(f));
    }
    frames
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_search_total_counted_before_stays_exact_as_frames_come_and_the_index_grows() {
    let store = TempStore::new();
    let mut s = Store::create_or_open(&store.db).unwrap();
    s.maintain(0).unwrap();
    let mut recording = acp_tee::Recording::new(s).unwrap();
    let start = acp_tee::TraceStart {
        protocol: None,
        name: None,
        command: vec!["agent".into()],
        cwd: None,
        mode: "wrap".into(),
        started_at: "2026-01-01T00:00:00Z".into(),
    };
    let id = recording.create_trace(&start, std::process::id()).unwrap();
    let mut framer = acp_tee::Framer::new();
    recording.insert_frames(id, &foxes(&mut framer, 0, 3000)).unwrap();
    assert_eq!(Store::open_existing(&store.db).unwrap().index_for_search(1000).unwrap(), 1000);
    // Held so that the server's indexer does not write, but when the test says.
    let lock = rusqlite::Connection::open(&store.db).unwrap();
    let indexed = || -> i64 {
        lock.query_row("SELECT coalesce(max(indexed_seq), 0) FROM search_progress", [], |r| r.get(0)).unwrap()
    };
    lock.execute_batch("BEGIN IMMEDIATE").unwrap();

    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/api/traces/{id}/frames", listener.local_addr().unwrap());
    let router = router(&store, None);
    tokio::spawn(async move { axum::serve(listener, router).await.unwrap() });
    let totals = move |all: i64| {
        let url = url.clone();
        async move {
            tokio::task::spawn_blocking(move || {
                for (search, want) in [("q=fox", all), ("q=fox&dir=client_to_agent", all / 2)] {
                    for paging in ["limit=10", "limit=10&offset=700", "limit=10&after=1500"] {
                        let page: FramePage =
                            ureq::get(&format!("{url}?{search}&{paging}")).call().unwrap().into_json().unwrap();
                        assert_eq!(page.total, want, "{search}&{paging} with {all} frames");
                    }
                }
            })
            .await
            .unwrap()
        }
    };
    totals(3000).await;
    assert_eq!(indexed(), 1000);
    // More frames stored (the server's indexer may index some meanwhile),
    // more indexed, the searches counted before asked again.
    lock.execute_batch("ROLLBACK").unwrap();
    recording.insert_frames(id, &foxes(&mut framer, 3000, 1000)).unwrap();
    lock.execute_batch("BEGIN IMMEDIATE").unwrap();
    totals(4000).await;
    lock.execute_batch("ROLLBACK").unwrap();
    Store::open_existing(&store.db).unwrap().index_for_search(2500).unwrap();
    lock.execute_batch("BEGIN IMMEDIATE").unwrap();
    assert!(indexed() >= 3500, "indexed up to {}", indexed());
    totals(4000).await;
    lock.execute_batch("ROLLBACK").unwrap();
    Store::open_existing(&store.db).unwrap().index_for_search(4000).unwrap();
    lock.execute_batch("BEGIN IMMEDIATE").unwrap();
    assert_eq!(indexed(), 4000);
    totals(4000).await;
    lock.execute_batch("ROLLBACK").unwrap();
}
