//! Tests of opening stores and writing frames.

use super::*;
use crate::model::TraceStart;
use acp_tee_shared::{Direction, FrameKind};

#[test]
fn many_processes_creating_and_opening_one_store_at_once_all_succeed() {
    // Threads stand in for processes: each has its own connection, as a
    // recorder, `acp-tee list` and `acp-tee serve` would.
    for round in 0..20 {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(format!("race-{round}.db"));
        let barrier = std::sync::Arc::new(std::sync::Barrier::new(8));
        let handles: Vec<_> = (0..8)
            .map(|i| {
                let (path, barrier) = (path.clone(), barrier.clone());
                std::thread::spawn(move || {
                    barrier.wait();
                    if i % 2 == 0 {
                        let mut store = Store::create_or_open(&path)?;
                        store.maintain(0)?;
                        let start = TraceStart {
                            protocol: None,
                            name: Some(format!("t{i}")),
                            command: vec!["a".into()],
                            cwd: None,
                            mode: crate::model::Mode::Wrap.to_string(),
                            started_at: "2026-01-01T00:00:00Z".into(),
                        };
                        Recording::new(store)?.create_trace(&start, std::process::id()).map(|_| ())
                    } else {
                        // Opening may come before the file exists: that is the
                        // one error allowed here.
                        match Store::open_existing(&path) {
                            Ok(_) | Err(StoreError::Missing { .. }) => Ok(()),
                            Err(e) => Err(e),
                        }
                    }
                })
            })
            .collect();
        for h in handles {
            h.join().unwrap().unwrap();
        }
        assert_eq!(Store::open_existing(&path).unwrap().list_traces().unwrap().len(), 4);
    }
}

/// A frame whose every column depends on `i`, NULLs included.
fn varied_frame(i: i64) -> NewFrame {
    let some = |on: bool, text: String| on.then_some(text);
    NewFrame {
        protocol_known: None,
        seq: i,
        t_ns: i * 1000 + 7,
        dir: [Direction::ClientToAgent, Direction::AgentToClient, Direction::AgentStderr][i as usize % 3],
        kind: [FrameKind::Request, FrameKind::Response, FrameKind::Notification, FrameKind::Stderr][i as usize % 4],
        rpc_id: some(i % 2 == 0, if i % 10 == 0 { String::new() } else { format!("{i}") }),
        method: some(i % 3 != 0, format!("m/{}", i % 5)),
        session_id: some(i % 4 == 0, format!("s{i}")),
        reply_to_seq: (i % 5 == 1).then_some(i - 1),
        latency_ns: (i % 5 == 1).then_some(i * 3),
        errors: i % 7 / 6,
        // Empty values are bound as empty, not NULL.
        raw: if i % 10 == 3 { Vec::new() } else { format!("{{\"n\":{i}}}\n").into_bytes() },
        envelope: (i % 6 == 0).then(|| vec![i as u8; 3]),
        mcp: i % 8 == 0,
        mcp_method: some(i % 8 == 0, "tools/call".into()),
        preview: some(i % 2 == 1, format!("p{i}")),
        sender: some(i % 9 == 0, "a".into()),
        receiver: some(i % 9 == 0, "b".into()),
        batch: Vec::new(),
    }
}

#[test]
fn batches_of_any_length_store_every_column_of_every_frame() {
    // Full multi-row statements, the single-row remainder, and a second
    // batch after them.
    let dir = tempfile::tempdir().unwrap();
    let mut store = create_maintained(&dir.path().join("t.db"));
    let id = store.create_trace(&test_start(), 1).unwrap();
    let first = 2 * insert::ROWS as i64 + 5;
    let frames: Vec<NewFrame> = (1..=first + 3).map(varied_frame).collect();
    store.insert_frames(id, &frames[..first as usize]).unwrap();
    store.insert_frames(id, &frames[first as usize..]).unwrap();

    let mut back = Vec::new();
    store
        .for_each_frame::<StoreError>(id, |f| {
            back.push(f);
            Ok(())
        })
        .unwrap();
    assert_eq!(back.len(), frames.len());
    for (f, b) in frames.iter().zip(&back) {
        let expect = queries::StoredFrame {
            seq: f.seq,
            t_ns: f.t_ns,
            dir: f.dir,
            kind: f.kind,
            rpc_id: f.rpc_id.clone(),
            method: f.method.clone(),
            session_id: f.session_id.clone(),
            reply_to_seq: f.reply_to_seq,
            latency_ns: f.latency_ns,
            raw: f.raw.clone(),
            envelope: f.envelope.clone(),
            mcp: f.mcp,
            mcp_method: f.mcp_method.clone(),
            sender: f.sender.clone(),
            receiver: f.receiver.clone(),
        };
        assert_eq!(b, &expect);
    }
    let previews: Vec<Option<String>> = store
        .conn
        .prepare("SELECT preview FROM frames ORDER BY id")
        .unwrap()
        .query_map([], |r| r.get(0))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    assert_eq!(previews, frames.iter().map(|f| f.preview.clone()).collect::<Vec<_>>());
    let trace = store.trace(id).unwrap();
    assert_eq!(trace.frame_count, frames.len() as i64);
    assert_eq!(trace.error_count, frames.iter().map(|f| f.errors).sum::<i64>());
}

#[test]
fn reading_every_frame_holds_no_read_transaction_while_the_caller_works() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("t.db");
    let mut store = create_maintained(&path);
    let id = store.create_trace(&test_start(), 1).unwrap();
    let mut frames: Vec<NewFrame> = (1..=1000).map(varied_frame).collect();
    // Frames of a step's size in bytes on their own, among small ones.
    for f in frames.iter_mut().filter(|f| f.seq % 97 == 0) {
        f.raw = vec![b'x'; queries::STEP_BYTES + 1];
    }
    store.insert_frames(id, &frames).unwrap();
    let other = Store::open_existing(&path).unwrap();
    let mut seqs = Vec::new();
    store
        .for_each_frame::<StoreError>(id, |f| {
            assert_eq!(f.raw, frames[seqs.len()].raw);
            seqs.push(f.seq);
            if seqs.len() % 300 == 0 {
                // Another connection writes and folds the whole log
                // into the file: no reader holds an older snapshot.
                other.create_trace(&test_start(), 1)?;
                let busy: i64 = other.conn.query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |r| r.get(0))?;
                assert_eq!(busy, 0, "a read transaction was open at frame {}", f.seq);
            }
            Ok(())
        })
        .unwrap();
    assert_eq!(seqs, (1..=1000).collect::<Vec<_>>());
}

#[test]
fn a_batch_with_a_bad_seq_stores_none_of_it() {
    let dir = tempfile::tempdir().unwrap();
    let mut store = create_maintained(&dir.path().join("t.db"));
    let id = store.create_trace(&test_start(), 1).unwrap();
    let mut frames: Vec<NewFrame> = (1..=insert::ROWS as i64 + 2).map(varied_frame).collect();
    frames.last_mut().unwrap().seq = 0;
    assert!(matches!(store.insert_frames(id, &frames), Err(StoreError::OutOfRange(_))));
    // A duplicate seq fails a multi-row statement: the whole batch is
    // rolled back.
    frames.last_mut().unwrap().seq = insert::ROWS as i64 + 2;
    frames[insert::ROWS - 1].seq = 1;
    assert!(store.insert_frames(id, &frames).is_err());
    let mut n = 0;
    store
        .for_each_frame::<StoreError>(id, |_| {
            n += 1;
            Ok(())
        })
        .unwrap();
    assert_eq!(n, 0);
    assert_eq!(store.trace(id).unwrap().frame_count, 0);
}
