//! Tests of the viewer's queries: pages, filters, search, summaries, stats.

use super::*;

use super::counts::{MAX_KEY_BYTES, SEARCH_COUNTS_KEPT};
use crate::test_start;

/// No search, no batches.
const NO_EXTRA: Extra = Extra { search: None, batches: false, seen: false };

/// The query a URL's query string (`method=m&offset=3`) asks for, read as
/// the server reads it.
pub(super) fn query(text: &str) -> FrameQuery {
    let uri: axum::http::Uri = format!("/?{text}").parse().unwrap();
    axum::extract::Query::<FrameQuery>::try_from_uri(&uri).unwrap().0
}

/// The seqs of the page `text` asks for of trace `id`, and its total.
fn page_of(store: &Store, id: i64, text: &str) -> (Vec<i64>, i64) {
    let page = store.frame_page(id, &query(text)).unwrap();
    (page.frames.iter().map(|f| f.seq).collect(), page.total)
}

#[test]
fn the_scan_answers_as_the_index_does() {
    // Every text, indexed in a table of its own, and searched for every
    // word both ways.
    let store = Store::in_memory().unwrap();
    let long_accented = format!("é {} alpha beta gamma {} beta", "word ".repeat(40), "x ".repeat(20));
    let long_plain = format!("{} alpha beta gamma delta", "a-b ".repeat(30));
    let texts: [&[u8]; 14] = [
        long_accented.as_bytes(),
        long_plain.as_bytes(),
        b"{\"text\":\"Purple ELEPHANTS\"}",
        b"token7 token70 xtoken7y",
        "Émile écrit À PARIS, ÜNÏ ünï uni".as_bytes(),
        b"bad \xff\xfe UTF-8 Zebra",
        b"",
        b"ab\x00cd ZEBRA",
        b"this OR that; an error for s%d and 5%",
        b"session/prompt then prompt session",
        "ＦＵＬＬ width ﬁ ligature straße STRASSE".as_bytes(),
        "日本語のテキスト 中文".as_bytes(),
        b"a_b snake_case camelCase x-y",
        b"\\u00fcn \\n newline",
    ];
    store.conn.execute_batch("CREATE VIRTUAL TABLE t USING fts5 (text, content = '', tokenize = 'unicode61')").unwrap();
    for (i, text) in texts.iter().enumerate() {
        store
            .conn
            .execute("INSERT INTO t (rowid, text) VALUES (?1, ?2)", params![i as i64, String::from_utf8_lossy(text)])
            .unwrap();
    }
    let words = [
        "elephants",
        "purple elephants",
        "zebra",
        "émile",
        "emile",
        "à paris",
        "paris",
        "cd",
        "ab",
        "token7",
        "or",
        "OR",
        "s%",
        "5%",
        "ünï",
        "UNI",
        "session/prompt",
        "prompt/session",
        "full",
        "ＦＵＬＬ",
        "ﬁ",
        "fi",
        "straße",
        "strasse",
        "日本語のテキスト",
        "中文",
        "a_b",
        "snake",
        "camelcase",
        "x-y",
        "u00fcn",
        "n",
        "\"purple",
        "purple\"",
        "ZEBRA ab",
        "e\u{301}mile",
        "alpha/beta/gamma",
        "gamma/alpha",
        "beta/gamma/delta",
        "word/word/word/alpha",
        "b/a/b",
        "x/x/x/x/beta",
    ];
    let mut compared = 0;
    for word in words {
        let search = search::parse(&store.conn, word).unwrap();
        let Some(fts) = search.fts_query() else { continue };
        let indexed: Vec<i64> = store
            .conn
            .prepare("SELECT rowid FROM t WHERE t MATCH ?1 ORDER BY rowid")
            .unwrap()
            .query_map(params![fts], |r| r.get(0))
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap();
        let scanned: Vec<i64> = (0..texts.len() as i64)
            .filter(|&i| {
                store
                    .conn
                    .query_row("SELECT acp_match(?1, ?2)", params![texts[i as usize], search.scan_arg()], |r| r.get(0))
                    .unwrap()
            })
            .collect();
        assert_eq!(scanned, indexed, "{word:?}");
        compared += 1;
    }
    assert_eq!(compared, words.len());
}

#[test]
fn trace_summaries_in_one_query_match_each_trace_summary() {
    use crate::frame::Framer;
    use crate::model::TraceEnd;
    let mut store = Store::in_memory().unwrap();
    let me = std::process::id();
    let ended = store.create_trace(&test_start(), me).unwrap();
    let empty = store.create_trace(&test_start(), me).unwrap();
    let gone = store.create_trace(&test_start(), u32::MAX / 2).unwrap();
    let mut framer = Framer::new();
    let mut frames = |t: u64| {
        let mut out = Vec::new();
        framer.chunk(Direction::ClientToAgent, t, b"{\"id\":1,\"method\":\"a\"}\n", |f| out.push(f));
        out
    };
    store.insert_frames(ended, &frames(5)).unwrap();
    store.insert_frames(gone, &frames(7)).unwrap();
    // A later frame of an older trace, stored after a newer trace's.
    store.insert_frames(ended, &frames(9)).unwrap();
    let end = TraceEnd { exit_code: Some(0), exit_signal: None, end_reason: "done".into() };
    store.finish_trace(ended, &end, 0, "2026-01-01T00:00:01Z").unwrap();

    let all = store.trace_summaries().unwrap();
    let got: Vec<(i64, i64, bool)> = all.iter().map(|t| (t.meta.id, t.last_t_ns, t.live)).collect();
    assert_eq!(got, [(gone, 7, false), (empty, 0, true), (ended, 9, false)]);
    for t in &all {
        // The present on a live trace's clock moves on between the reads.
        let one = store.trace_summary(t.meta.id).unwrap();
        assert_eq!(one.now_t_ns.is_some(), t.live);
        assert!(one.now_t_ns >= t.now_t_ns && t.now_t_ns.is_none_or(|now| now >= t.last_t_ns));
        assert_eq!(
            acp_tee_shared::api::TraceSummary { now_t_ns: None, ..one },
            acp_tee_shared::api::TraceSummary { now_t_ns: None, ..t.clone() }
        );
    }
    assert!(matches!(store.trace_summary(gone + 1), Err(StoreError::NoSuchTrace(_))));
}

#[test]
fn previews_of_short_frames_are_made_on_reading_as_the_recorder_made_them() {
    use crate::frame::Framer;
    assert!(SUMMARY_COLUMNS.contains(&format!("length(f.raw) < {}", crate::model::PREVIEW_STORED_FROM)));
    let long_text = "word ".repeat(1000);
    let to_agent = format!(
        "{}\n{}\n{}\n{}\n",
        r#"{"jsonrpc":"2.0","id":1,"method":"session/prompt","params":{"sessionId":"s","prompt":[{"type":"image"},{"type":"text","text":"Fix\n  the   bug"}]}}"#,
        r#"{"jsonrpc":"2.0","id":2,"method":"initialize","params":{}}"#,
        "not json at all",
        r#"[{"jsonrpc":"2.0","method":"a"}]"#,
    );
    let to_client = format!(
        "{}\n{}\n{}\n{}\n{}\n",
        r#"{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"H\u00e9llo\tthere"}}}}"#,
        r#"{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":{"sessionUpdate":"tool_call","title":"Read","status":"pending"}}}"#,
        r#"{"jsonrpc":"2.0","id":1,"error":{"code":-32603,"message":"boom"}}"#,
        r#"{"jsonrpc":"2.0","id":2,"result":{"protocolVersion":1}}"#,
        format_args!(
            r#"{{"jsonrpc":"2.0","method":"session/update","params":{{"update":{{"sessionUpdate":"agent_message_chunk","content":{{"type":"text","text":"{long_text}"}}}}}}}}"#
        ),
    );
    let stderr = "\u{1b}[32mINFO\u{1b}[0m agent started\n";
    let mut framer = Framer::new();
    let mut frames = Vec::new();
    framer.chunk(Direction::ClientToAgent, 1, to_agent.as_bytes(), |f| frames.push(f));
    framer.chunk(Direction::AgentToClient, 2, to_client.as_bytes(), |f| frames.push(f));
    framer.chunk(Direction::AgentStderr, 3, stderr.as_bytes(), |f| frames.push(f));
    // What the recorder stored for every frame before short frames lost
    // their stored preview: classify's, or the text of stderr and
    // unparsable lines.
    let recorded: Vec<Option<String>> = frames
        .iter()
        .map(|f| match f.kind {
            FrameKind::Stderr | FrameKind::Invalid => crate::frame::text_preview(&f.raw),
            _ => crate::frame::classify(&f.raw).preview,
        })
        .collect();
    assert_eq!(recorded.iter().filter(|p| p.is_some()).count(), 7, "{recorded:?}");
    let stored: Vec<bool> = frames.iter().map(|f| f.preview.is_some()).collect();
    assert_eq!(stored, frames.iter().map(|f| f.raw.len() >= 4096).collect::<Vec<_>>());
    assert_eq!(stored.iter().filter(|s| **s).count(), 1);

    let mut store = Store::in_memory().unwrap();
    let id = store.create_trace(&test_start(), 1).unwrap();
    store.insert_frames(id, &frames).unwrap();
    let page = store.frame_page(id, &FrameQuery::default()).unwrap();
    let read: Vec<Option<String>> = page.frames.into_iter().map(|f| f.preview).collect();
    assert_eq!(read, recorded);
}

/// An MCP tool's failure (a `tools/call` result with `isError: true`) is
/// marked, short (its preview made on reading) or long (stored), and is
/// no error: the errors filter leaves it out.
#[test]
fn an_mcp_tool_failure_is_marked_and_is_no_error() {
    use crate::frame::Framer;
    let long = "x ".repeat(2100);
    let result = |id: u32, error: bool, text: &str| {
        format!(
            r#"{{"jsonrpc":"2.0","id":{id},"result":{{"content":[{{"type":"text","text":"{text}"}}],"isError":{error}}}}}"#
        )
    };
    let call = |id: u32| format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"t{id}"}}}}"#);
    let lines: Vec<(Direction, String)> = vec![
        (
            Direction::ClientToAgent,
            r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{}}}"#
                .into(),
        ),
        (Direction::AgentToClient, r#"{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":"2025-06-18"}}"#.into()),
        (Direction::ClientToAgent, call(1)),
        (Direction::AgentToClient, result(1, true, "Ref 'nope' did not resolve")),
        (Direction::ClientToAgent, call(2)),
        (Direction::AgentToClient, result(2, true, &long)),
        (Direction::ClientToAgent, call(3)),
        (Direction::AgentToClient, result(3, false, "ok")),
        (Direction::ClientToAgent, call(4)),
        (Direction::AgentToClient, result(4, false, &long)),
        (Direction::ClientToAgent, call(5)),
        (Direction::AgentToClient, r#"{"jsonrpc":"2.0","id":5,"error":{"code":-32602,"message":"Unknown tool"}}"#.into()),
    ];
    let mut framer = Framer::new();
    let mut frames = Vec::new();
    for (i, (dir, line)) in lines.iter().enumerate() {
        framer.chunk(*dir, i as u64, format!("{line}\n").as_bytes(), |f| frames.push(f));
    }
    assert!(frames[5].raw.len() >= crate::model::PREVIEW_STORED_FROM && frames[5].preview.is_some());
    let mut store = Store::in_memory().unwrap();
    let id = store.create_trace(&test_start(), 1).unwrap();
    store.insert_frames(id, &frames).unwrap();
    let page = store.frame_page(id, &FrameQuery::default()).unwrap();
    let answers: Vec<(FrameKind, bool, Option<String>)> = page
        .frames
        .iter()
        .filter(|f| f.dir == Direction::AgentToClient && f.seq > 2)
        .map(|f| (f.kind, f.tool_error, f.preview.as_ref().map(|p| p.chars().take(16).collect())))
        .collect();
    let tool_error = |text: &str| (FrameKind::Response, true, Some(text.to_owned()));
    assert_eq!(
        answers,
        [
            tool_error("tool error: Ref "),
            tool_error("tool error: x x "),
            (FrameKind::Response, false, None),
            (FrameKind::Response, false, None),
            (FrameKind::Error, false, Some("-32602 Unknown t".to_owned())),
        ]
    );
    assert_eq!(page_of(&store, id, "errors=true"), (vec![12], 1));
    assert_eq!(store.trace_summary(id).unwrap().meta.error_count, 1);
}

#[test]
fn search_finds_frames_before_and_after_indexing() {
    use crate::frame::Framer;
    let mut store = Store::in_memory().unwrap();
    let start = test_start();
    let id = store.create_trace(&start, 1).unwrap();
    let mut framer = Framer::new();
    let mut frames = Vec::new();
    let lines = b"{\"id\":1,\"method\":\"session/prompt\",\"params\":{\"text\":\"Purple Elephants\"}}\n{\"method\":\"x\",\"params\":{\"text\":\"grey mice\"}}\n";
    framer.chunk(Direction::ClientToAgent, 5, lines, |f| frames.push(f));
    store.insert_frames(id, &frames).unwrap();
    // Punctuation: a query of punctuation alone matches nothing (though
    // both frames hold `{`), a word of it beside others is ignored.
    let table: &[(&str, &[i64])] = &[
        ("q=purple+elephants", &[1]),
        ("q=mice", &[2]),
        ("q=purple+mice", &[]),
        ("q=_", &[]),
        ("q=%7B", &[]),
        ("q=mice+_", &[2]),
        ("q=session%2Fprompt", &[1]),
        ("q=%22grey", &[2]),
        ("q=mice&dir=agent_to_client", &[]),
        ("q=elephants&method=session%2Fprompt", &[1]),
    ];
    let check = |store: &Store, state: &str| {
        for (text, want) in table {
            assert_eq!(page_of(store, id, text), (want.to_vec(), want.len() as i64), "{text} {state}");
        }
    };
    // Not indexed yet: found by scanning.
    check(&store, "unindexed");
    assert_eq!(store.index_for_search(1).unwrap(), 1);
    check(&store, "half indexed");
    assert_eq!(store.index_for_search(10).unwrap(), 1);
    assert_eq!(store.index_for_search(10).unwrap(), 0);
    // Indexed: found through FTS5, the same answers.
    check(&store, "indexed");
    let indexed: i64 = store.conn.query_row("SELECT count(*) FROM frames_fts", [], |r| r.get(0)).unwrap();
    assert_eq!(indexed, 2);
}

#[test]
fn offsets_count_frames_even_across_missing_ones() {
    use crate::frame::Framer;
    use crate::model::TraceEnd;
    let mut store = Store::in_memory().unwrap();
    let start = test_start();
    let mut framer = Framer::new();
    let mut frames = Vec::new();
    framer.chunk(Direction::AgentStderr, 1, b"1\n2\n3\n4\n5\n6\n", |f| frames.push(f));
    let whole = store.create_trace(&start, 1).unwrap();
    store.insert_frames(whole, &frames).unwrap();
    // A store that failed for frames 3 and 4 left a gap in seq.
    let gappy = store.create_trace(&start, 1).unwrap();
    frames.retain(|f| f.seq != 3 && f.seq != 4);
    store.insert_frames(gappy, &frames).unwrap();
    let end = TraceEnd { exit_code: Some(0), exit_signal: None, end_reason: "x".into() };
    store.finish_trace(gappy, &end, 2, "2026-01-01T00:00:01Z").unwrap();
    let table: &[(i64, &str, &[i64], i64)] = &[
        (whole, "offset=2&limit=2", &[3, 4], 6),
        (whole, "offset=5&limit=2", &[6], 6),
        (whole, "offset=6&limit=2", &[], 6),
        (whole, "after=2&limit=2", &[3, 4], 6),
        (gappy, "offset=0&limit=2", &[1, 2], 4),
        (gappy, "offset=2&limit=2", &[5, 6], 4),
        (gappy, "offset=3&limit=2", &[6], 4),
        (gappy, "after=2&limit=2", &[5, 6], 4),
        (gappy, "after=2&offset=1&limit=2", &[6], 4),
        (gappy, "dir=agent_stderr&offset=2&limit=2", &[5, 6], 4),
        (whole, "from=2&to=5&offset=1&limit=2", &[3, 4], 4),
        (whole, "from=5&limit=9", &[5, 6], 2),
        (whole, "from=7", &[], 0),
        (gappy, "from=2&to=5&limit=9", &[2, 5], 2),
        (gappy, "from=3&to=4", &[], 0),
        (whole, "from=5&to=4", &[], 0),
        (gappy, "from=5&to=2&offset=1", &[], 0),
        (gappy, "to=5&offset=1&limit=9", &[2, 5], 3),
    ];
    for (id, text, seqs, total) in table {
        assert_eq!(page_of(&store, *id, text), (seqs.to_vec(), *total), "trace {id}: {text}");
    }
}

/// Two traces of every direction and kind (errors few), stored in
/// several batches, the first trace's frames interleaved with the second's.
fn store_of_every_kind() -> (Store, [i64; 2]) {
    use crate::frame::Framer;
    let mut store = Store::in_memory().unwrap();
    let ids = [store.create_trace(&test_start(), 1).unwrap(), store.create_trace(&test_start(), 1).unwrap()];
    let mut framers = [Framer::new(), Framer::new()];
    for round in 0..40u64 {
        for (t, framer) in framers.iter_mut().enumerate() {
            let mut frames = Vec::new();
            let to_agent = format!("{{\"id\":{round},\"method\":\"m\"}}\n{{\"method\":\"n\"}}\nnot json\n");
            let reply = if round % 9 == t as u64 {
                format!("{{\"id\":{round},\"error\":{{\"code\":1,\"message\":\"no\"}}}}\n")
            } else {
                format!("{{\"id\":{round},\"result\":{{}}}}\n")
            };
            let to_client = format!("{reply}{{\"method\":\"u\"}}\n[{{\"method\":\"b\"}}]\n");
            framer.chunk(Direction::ClientToAgent, round, to_agent.as_bytes(), |f| frames.push(f));
            framer.chunk(Direction::AgentToClient, round, to_client.as_bytes(), |f| frames.push(f));
            framer.chunk(Direction::AgentStderr, round, b"log line\n", |f| frames.push(f));
            store.insert_frames(ids[t], &frames).unwrap();
        }
    }
    (store, ids)
}

#[test]
fn totals_of_direction_and_kind_filters_come_from_the_counts_and_match_the_frames() {
    let (store, ids) = store_of_every_kind();
    let mut checked = 0;
    for id in ids {
        let all = store.frame_page(id, &FrameQuery { limit: Some(1000), ..FrameQuery::default() }).unwrap();
        assert_eq!(all.frames.len(), 40 * 7);
        let dirs = std::iter::once(None).chain(Direction::ALL.map(Some));
        for dir in dirs {
            for kind in std::iter::once(None).chain(FrameKind::ALL.map(Some)) {
                for errors in [None, Some(true)] {
                    let q = FrameQuery { dir, kind, errors, limit: Some(1000), ..FrameQuery::default() };
                    let want: Vec<i64> = all
                        .frames
                        .iter()
                        .filter(|f| dir.is_none_or(|d| f.dir == d) && kind.is_none_or(|k| f.kind == k))
                        .filter(|f| errors.is_none() || f.kind == FrameKind::Error)
                        .map(|f| f.seq)
                        .collect();
                    let planned = if has_filters(&q) { TotalPlan::KindCounts } else { TotalPlan::Stored };
                    assert_eq!(plan::plan(&q, plan::Facts::default()).1, planned, "{q:?}");
                    let counted = count_by_kind(&store.conn, id, &q).unwrap();
                    assert_eq!(counted, want.len() as i64, "{q:?}");
                    let page = store.frame_page(id, &q).unwrap();
                    assert_eq!(page.total, want.len() as i64, "{q:?}");
                    assert_eq!(page.frames.iter().map(|f| f.seq).collect::<Vec<_>>(), want, "{q:?}");
                    checked += 1;
                }
            }
        }
    }
    assert_eq!(checked, 2 * 4 * 8 * 2);
    // Other filters are counted from the frames.
    let q = FrameQuery { errors: Some(true), method: Some("m".into()), ..FrameQuery::default() };
    assert_eq!(plan::plan(&q, plan::Facts::default()).1, TotalPlan::CountedInPage);
    assert_eq!(store.frame_page(ids[0], &q).unwrap().total, 5);
    let stats = store.trace_stats(ids[1]).unwrap();
    assert_eq!(stats.per_direction, [120, 120, 40]);
}

#[test]
fn method_filters_read_the_spans_and_match_the_frames() {
    let (store, ids) = store_of_every_kind();
    let mut checked = 0;
    for id in ids {
        let all = store.frame_page(id, &FrameQuery { limit: Some(1000), ..FrameQuery::default() }).unwrap();
        let mut methods: Vec<String> = all.frames.iter().filter_map(|f| f.method.clone()).collect();
        methods.sort();
        methods.dedup();
        assert_eq!(methods, ["m", "n", "u"]);
        methods.push("none such".into());
        for method in &methods {
            for dir in std::iter::once(None).chain(Direction::ALL.map(Some)) {
                for kind in std::iter::once(None).chain(FrameKind::ALL.map(Some)) {
                    for errors in [None, Some(true)] {
                        let q = FrameQuery { method: Some(method.clone()), dir, kind, errors, ..FrameQuery::default() };
                        let want: Vec<i64> = all
                            .frames
                            .iter()
                            .filter(|f| f.method.as_ref() == Some(method))
                            .filter(|f| dir.is_none_or(|d| f.dir == d) && kind.is_none_or(|k| f.kind == k))
                            .filter(|f| errors.is_none() || f.kind == FrameKind::Error)
                            .map(|f| f.seq)
                            .collect();
                        // Paged 7 at a time, from each page's last seq.
                        let mut got = Vec::new();
                        let mut after = None;
                        loop {
                            let page =
                                store.frame_page(id, &FrameQuery { after, limit: Some(7), ..q.clone() }).unwrap();
                            assert_eq!(page.total, want.len() as i64, "{q:?}");
                            got.extend(page.frames.iter().map(|f| f.seq));
                            after = got.last().copied();
                            if !page.has_more {
                                break;
                            }
                        }
                        assert_eq!(got, want, "{q:?}");
                        // And by offset, up to past the end.
                        for offset in [1, 3, 17, want.len().saturating_sub(2), want.len(), want.len() + 5] {
                            let q = FrameQuery { offset: Some(offset as i64), limit: Some(5), ..q.clone() };
                            let page = store.frame_page(id, &q).unwrap();
                            let tail: Vec<i64> = want.iter().copied().skip(offset).take(5).collect();
                            assert_eq!(page.frames.iter().map(|f| f.seq).collect::<Vec<_>>(), tail, "{q:?}");
                            assert_eq!(page.has_more, offset + 5 < want.len(), "{q:?}");
                            assert_eq!(page.total, want.len() as i64, "{q:?}");
                        }
                        checked += 1;
                    }
                }
            }
        }
    }
    assert_eq!(checked, 2 * 4 * 4 * 8 * 2);
}

mod pages;
