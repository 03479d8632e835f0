//! Tests of removing, pinning and pruning traces.

use super::*;
use crate::create_maintained;
use crate::model::{NewFrame, TraceEnd, TraceStart};
use acp_tee_shared::Direction;
use acp_tee_wire::frame::Framer;

/// Every table but `traces` that holds rows of trace `id`, and its rows.
fn rows_of(store: &Store, id: i64) -> Vec<(String, i64)> {
    let (lo, hi) = frame_id_bounds(id);
    let mut counts = vec![(
        "frames_fts".to_owned(),
        store
            .conn
            .query_row("SELECT count(*) FROM frames_fts WHERE rowid > ?1 AND rowid < ?2", [lo, hi], |r| r.get(0))
            .unwrap(),
    )];
    for table in ["frames", "method_stats", "latency_buckets", "kind_counts", "method_spans", "search_progress"] {
        let n = store
            .conn
            .query_row(&format!("SELECT count(*) FROM {table} WHERE trace_id = ?1"), [id], |r| r.get(0))
            .unwrap();
        counts.push((table.to_owned(), n));
    }
    counts
}

/// A trace named `name` of `n` frames (requests and their answers, each
/// about `size` bytes), ended at `ended_at` (`None`: still recorded).
fn trace(store: &mut Store, name: &str, n: usize, size: usize, ended_at: Option<&str>) -> i64 {
    let start = TraceStart {
        protocol: None,
        name: Some(name.into()),
        command: vec!["agent".into()],
        cwd: None,
        mode: "wrap".into(),
        started_at: "2026-01-01T00:00:00.000000Z".into(),
    };
    let id = store.create_trace(&start, std::process::id()).unwrap();
    let mut framer = Framer::new();
    let mut frames: Vec<NewFrame> = Vec::new();
    let pad = "x".repeat(size);
    for i in 0..n as u64 {
        let line = if i % 2 == 0 {
            format!("{{\"jsonrpc\":\"2.0\",\"id\":{i},\"method\":\"session/prompt\",\"params\":{{\"pad\":\"{pad} word{i}\"}}}}\n")
        } else {
            format!("{{\"jsonrpc\":\"2.0\",\"id\":{},\"result\":{{}}}}\n", i - 1)
        };
        let dir = if i % 2 == 0 { Direction::ClientToAgent } else { Direction::AgentToClient };
        framer.chunk(dir, i * 1000, line.as_bytes(), |f| frames.push(f));
    }
    for chunk in frames.chunks(1000) {
        store.insert_batch(id, chunk).unwrap();
    }
    if let Some(at) = ended_at {
        let end = TraceEnd { exit_code: Some(0), exit_signal: None, end_reason: "the agent exited".into() };
        store.finish_trace(id, &end, 0, at).unwrap();
    }
    id
}

#[test]
fn a_removed_trace_leaves_every_table_and_the_others_stay_whole() {
    let dir = tempfile::tempdir().unwrap();
    let mut store = create_maintained(&dir.path().join("t.db"));
    let gone = trace(&mut store, "gone", 12_001, 40, Some("2026-01-01T00:01:00Z"));
    let kept = trace(&mut store, "kept", 10, 40, Some("2026-01-01T00:02:00Z"));
    store.index_for_search(100_000).unwrap();
    let kept_before = rows_of(&store, kept);
    assert!(rows_of(&store, gone).iter().all(|(_, n)| *n > 0), "{:?}", rows_of(&store, gone));

    store.remove_traces(&[gone]).unwrap();
    assert!(rows_of(&store, gone).iter().all(|(_, n)| *n == 0), "{:?}", rows_of(&store, gone));
    assert!(matches!(store.trace(gone), Err(StoreError::NoSuchTrace(_))));
    assert_eq!(rows_of(&store, kept), kept_before);
    let listed: Vec<i64> = store.list_traces().unwrap().iter().map(|t| t.id).collect();
    assert_eq!(listed, [kept]);
    // The index still finds the kept trace's words, and no more.
    let hits: i64 = store
        .conn
        .query_row("SELECT count(*) FROM frames_fts WHERE frames_fts MATCH 'word2'", [], |r| r.get(0))
        .unwrap();
    assert_eq!(hits, 1);
}

#[test]
fn rm_refuses_a_trace_not_ended_pinned_or_missing_and_then_removes_none() {
    let mut store = Store::in_memory().unwrap();
    let ended = trace(&mut store, "ended", 4, 10, Some("2026-01-01T00:01:00Z"));
    let live = trace(&mut store, "live", 4, 10, None);
    let pinned = trace(&mut store, "pinned", 4, 10, Some("2026-01-01T00:01:00Z"));
    assert!(!store.set_pinned(pinned, true).unwrap());
    for (ids, want) in [
        (vec![ended, live], format!("trace {live} has not ended")),
        (vec![ended, pinned], format!("trace {pinned} is pinned; `acp-tee unpin {pinned}` first")),
        (vec![ended, 99], "no trace with id 99".to_owned()),
    ] {
        let err = store.remove_traces(&ids).unwrap_err().to_string();
        assert!(err.starts_with(&want), "{err}");
        assert_eq!(store.list_traces().unwrap().len(), 3, "none removed for {ids:?}");
    }
    assert!(store.set_pinned(pinned, false).unwrap());
    store.remove_traces(&[ended, pinned]).unwrap();
    assert_eq!(store.list_traces().unwrap().iter().map(|t| t.id).collect::<Vec<_>>(), [live]);
}

#[test]
fn rename_and_pin_show_in_the_trace_and_name_no_missing_trace() {
    let mut store = Store::in_memory().unwrap();
    let id = trace(&mut store, "before", 2, 10, Some("2026-01-01T00:01:00Z"));
    store.rename_trace(id, "after").unwrap();
    store.set_pinned(id, true).unwrap();
    let meta = store.trace(id).unwrap();
    assert_eq!((meta.name.as_deref(), meta.pinned), (Some("after"), true));
    assert!(matches!(store.rename_trace(7, "x"), Err(StoreError::NoSuchTrace(7))));
    assert!(matches!(store.set_pinned(7, true), Err(StoreError::NoSuchTrace(7))));
}

#[test]
fn bytes_count_what_the_frames_hold() {
    let mut store = Store::in_memory().unwrap();
    let id = trace(&mut store, "t", 7, 100, Some("2026-01-01T00:01:00Z"));
    let stored: i64 = store
        .conn
        .query_row(
            "SELECT sum(length(raw) + coalesce(length(envelope), 0)) FROM frames WHERE trace_id = ?1",
            [id],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(store.trace(id).unwrap().bytes, stored);
    assert!(stored > 7 * 30);
}

fn at(text: &str) -> chrono::DateTime<chrono::Utc> {
    chrono::DateTime::parse_from_rfc3339(text).unwrap().with_timezone(&chrono::Utc)
}

#[test]
fn a_plan_names_by_age_count_and_size_and_keeps_the_pinned_and_the_unended() {
    let dir = tempfile::tempdir().unwrap();
    let mut store = create_maintained(&dir.path().join("t.db"));
    // Ten traces, a day apart, about 200 KB each; the 3rd pinned, the 1st
    // not ended.
    let ids: Vec<i64> = (1..=10)
        .map(|day| {
            let ended = format!("2026-01-{day:02}T12:00:00Z");
            trace(&mut store, &format!("t{day}"), 200, 1000, (day != 1).then_some(ended.as_str()))
        })
        .collect();
    store.set_pinned(ids[2], true).unwrap();
    let now = at("2026-01-11T00:00:00Z");
    let names = |p: &PruneReport| p.removed.iter().map(|r| (r.id, r.rule)).collect::<Vec<_>>();

    let age = Policy { older_than: Some(Duration::from_secs(3 * 86_400 + 60)), ..Policy::default() };
    let plan = store.prune_plan(&age, now).unwrap();
    // Ended before Jan 7 23:59: days 2..=7, but the 3rd is pinned, the 1st unended.
    assert_eq!(names(&plan), [2, 4, 5, 6, 7].map(|d| (ids[d - 1], "older-than")));
    assert_eq!((plan.kept_pinned, plan.kept_unended), (1, 0));

    let keep = Policy { keep: Some(8), ..Policy::default() };
    let plan = store.prune_plan(&keep, now).unwrap();
    assert_eq!(names(&plan), [(ids[1], "keep")]);
    assert_eq!((plan.kept_pinned, plan.kept_unended), (0, 1));

    let used = store.pages().unwrap().used_bytes();
    let size = Policy { max_size: Some(used / 2), ..Policy::default() };
    let plan = store.prune_plan(&size, now).unwrap();
    // The oldest go first until half is left: five of about the same size,
    // the pinned and unended ones kept besides.
    let gone: Vec<i64> = plan.removed.iter().map(|r| r.id).collect();
    assert!(gone.iter().all(|id| ![ids[0], ids[2]].contains(id)), "{gone:?}");
    assert!(plan.removed.iter().all(|r| r.rule == "max-size"));
    assert!((4..=6).contains(&gone.len()), "{gone:?}");
    assert_eq!(gone, ids[1..].iter().filter(|id| **id != ids[2]).take(gone.len()).copied().collect::<Vec<_>>());

    assert!(store.prune_plan(&Policy::default(), now).unwrap().removed.is_empty());
}

#[test]
fn a_new_store_gives_the_space_of_a_prune_back_to_the_filesystem() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("t.db");
    let mut store = create_maintained(&path);
    assert!(store.pages().unwrap().incremental);
    for day in 1..=6 {
        trace(&mut store, "t", 2_000, 2_000, Some(&format!("2026-01-0{day}T00:00:00Z")));
    }
    store.index_for_search(1_000_000).unwrap();
    store.conn.query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |_| Ok(())).unwrap();
    let before = std::fs::metadata(&path).unwrap().len();
    let report =
        store.prune(&Policy { keep: Some(2), ..Policy::default() }, at("2026-02-01T00:00:00Z"), false).unwrap();
    assert_eq!(report.removed.len(), 4);
    while store.reclaim_some(u64::MAX, true).unwrap() {}
    let after = std::fs::metadata(&path).unwrap().len();
    assert!(after < before / 2, "{before} -> {after}");
    assert_eq!(store.pages().unwrap().free, 0);
}

#[test]
fn a_dry_run_removes_nothing() {
    let mut store = Store::in_memory().unwrap();
    for day in 1..=3 {
        trace(&mut store, "t", 4, 10, Some(&format!("2026-01-0{day}T00:00:00Z")));
    }
    let report = store.prune(&Policy { keep: Some(1), ..Policy::default() }, at("2026-02-01T00:00:00Z"), true).unwrap();
    assert_eq!(report.removed.len(), 2);
    assert_eq!(store.list_traces().unwrap().len(), 3);
}

#[test]
fn maintenance_applies_the_policy_in_bounded_steps() {
    let dir = tempfile::tempdir().unwrap();
    let mut store = create_maintained(&dir.path().join("t.db"));
    let old = trace(&mut store, "old", 3 * CHUNK_FRAMES as usize, 10, Some("2020-01-01T00:00:00Z"));
    let new = trace(&mut store, "new", 4, 10, Some(&crate::clock::rfc3339(chrono::Utc::now())));
    store.retain(Policy { older_than: Some(Duration::from_secs(86_400)), ..Policy::default() });
    // The first step marks the old trace: it leaves every reader at once.
    assert_eq!(store.maintain(0).unwrap().retained_out, 1);
    assert_eq!(store.list_traces().unwrap().iter().map(|t| t.id).collect::<Vec<_>>(), [new]);
    let frames = |store: &Store| -> i64 {
        store.conn.query_row("SELECT count(*) FROM frames WHERE trace_id = ?1", [old], |r| r.get(0)).unwrap()
    };
    let mut steps = 0;
    let mut last = frames(&store);
    while store.conn.query_row("SELECT count(*) FROM traces WHERE id = ?1", [old], |r| r.get::<_, i64>(0)).unwrap() > 0
    {
        store.maintain(0).unwrap();
        let now = frames(&store);
        // Each step removes at most STEP_CHUNKS chunks.
        assert!(last - now <= STEP_CHUNKS * CHUNK_FRAMES, "{last} -> {now}");
        last = now;
        steps += 1;
        assert!(steps < 100, "removal does not end");
    }
    assert!(steps >= 2, "{steps}");
    assert_eq!(rows_of(&store, old).iter().map(|r| r.1).sum::<i64>(), 0);
    // Planned again only after PLAN_EVERY: the new trace stays.
    assert_eq!(store.maintain(0).unwrap().retained_out, 0);
    assert_eq!(store.list_traces().unwrap().len(), 1);
}

#[test]
fn an_older_store_compacted_becomes_incremental_and_smaller() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("t.db");
    {
        // A store made before migration 12: no auto_vacuum.
        let conn = rusqlite::Connection::open(&path).unwrap();
        conn.pragma_update(None, "auto_vacuum", "NONE").unwrap();
        conn.execute_batch("CREATE TABLE early (x)").unwrap();
    }
    let mut store = create_maintained(&path);
    assert!(!store.pages().unwrap().incremental);
    for day in 1..=4 {
        trace(&mut store, "t", 1_000, 2_000, Some(&format!("2026-01-0{day}T00:00:00Z")));
    }
    store.prune(&Policy { keep: Some(1), ..Policy::default() }, at("2026-02-01T00:00:00Z"), false).unwrap();
    assert!(!store.reclaim_some(10, true).unwrap(), "an older store keeps its free pages");
    assert!(store.pages().unwrap().free > 0);
    store.conn.query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |_| Ok(())).unwrap();
    let before = std::fs::metadata(&path).unwrap().len();
    store.compact().unwrap();
    let after = std::fs::metadata(&path).unwrap().len();
    assert!(store.pages().unwrap().incremental);
    assert!(after < before / 2, "{before} -> {after}");
    assert_eq!(store.list_traces().unwrap().len(), 1);
}
