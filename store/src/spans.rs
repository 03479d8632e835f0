//! Where each method's frames are: spans of consecutive seqs with the same
//! method (`method_spans`, migration 7), written with every batch. A method
//! filter reads the frames of its spans by rowid ranges, so the store keeps
//! no per-frame index of methods.
//!
//! Invariant: every seq from a span's `first_seq` to its `last_seq` is a
//! frame of the trace with the span's method, and every frame with a method
//! is in exactly one span. Hence a run of a batch only continues a stored
//! span whose `last_seq` is the run's first seq minus one, and a missing
//! frame (a seq never stored) ends a span.

use crate::model::NewFrame;
use rusqlite::{params, Connection};

/// A run of frames with consecutive seqs and the same method.
#[derive(Debug, PartialEq, Eq)]
struct Run<'a> {
    method: &'a str,
    first: i64,
    last: i64,
}

/// The runs of `frames`' methods, in seq order (frames without a method are
/// in none).
fn runs(frames: &[NewFrame]) -> Vec<Run<'_>> {
    let mut by_seq: Vec<(i64, &str)> = frames.iter().filter_map(|f| f.method.as_deref().map(|m| (f.seq, m))).collect();
    // The recorder's batches are in seq order already; an import need not be.
    if !by_seq.is_sorted_by_key(|(seq, _)| *seq) {
        by_seq.sort_unstable_by_key(|(seq, _)| *seq);
    }
    let mut runs: Vec<Run> = Vec::new();
    for (seq, method) in by_seq {
        match runs.last_mut() {
            Some(run) if run.method == method && run.last + 1 == seq => run.last = seq,
            _ => runs.push(Run { method, first: seq, last: seq }),
        }
    }
    runs
}

/// Adds the spans of `frames` (just stored as frames of trace `trace_id`)
/// to the trace's, inside the caller's transaction: a run that starts right
/// after a stored span of its method extends it, the others are new spans.
pub(super) fn add(conn: &Connection, trace_id: i64, frames: &[NewFrame]) -> rusqlite::Result<()> {
    let mut extend = conn.prepare_cached(
        "UPDATE method_spans SET last_seq = ?4
         WHERE trace_id = ?1 AND method = ?2 AND last_seq = ?3 - 1
           AND first_seq = (SELECT max(first_seq) FROM method_spans
                            WHERE trace_id = ?1 AND method = ?2 AND first_seq < ?3)",
    )?;
    let mut insert = conn
        .prepare_cached("INSERT INTO method_spans (trace_id, method, first_seq, last_seq) VALUES (?1, ?2, ?3, ?4)")?;
    for run in runs(frames) {
        if extend.execute(params![trace_id, run.method, run.first, run.last])? == 0 {
            insert.execute(params![trace_id, run.method, run.first, run.last])?;
        }
    }
    Ok(())
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// A notification of trace time `seq` ns with `method`, nothing else set.
    pub(crate) fn frame(seq: i64, method: Option<&str>) -> NewFrame {
        NewFrame {
            protocol_known: None,
            seq,
            t_ns: seq,
            dir: acp_tee_shared::Direction::AgentToClient,
            kind: acp_tee_shared::FrameKind::Notification,
            rpc_id: None,
            method: method.map(str::to_owned),
            session_id: None,
            reply_to_seq: None,
            latency_ns: None,
            errors: 0,
            raw: b"{}".to_vec(),
            envelope: None,
            mcp: false,
            mcp_method: None,
            preview: None,
            sender: None,
            receiver: None,
            batch: Vec::new(),
        }
    }

    /// Spans as (method, first seq, last seq).
    type Spans = Vec<(String, i64, i64)>;

    /// The spans of trace `trace_id`, and the spans migration 7 computes from its frames.
    fn stored_and_recomputed(store: &crate::Store, trace_id: i64) -> (Spans, Spans) {
        let read = |sql: &str| -> Spans {
            store
                .conn
                .prepare(sql)
                .unwrap()
                .query_map([trace_id], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
                .unwrap()
                .collect::<Result<_, _>>()
                .unwrap()
        };
        let stored =
            read("SELECT method, first_seq, last_seq FROM method_spans WHERE trace_id = ?1 ORDER BY first_seq");
        let recomputed = read(
            "SELECT method, min(seq), max(seq)
             FROM (SELECT method, seq, seq - row_number() OVER (PARTITION BY method ORDER BY seq) AS run
                   FROM frames WHERE trace_id = ?1 AND method IS NOT NULL)
             GROUP BY method, run ORDER BY min(seq)",
        );
        (stored, recomputed)
    }

    #[test]
    fn batches_extend_the_span_they_continue_and_a_missing_frame_ends_one() {
        let mut store = crate::Store::in_memory().unwrap();
        let start = crate::test_start();
        let (t, other) = (store.create_trace(&start, 1).unwrap(), store.create_trace(&start, 1).unwrap());
        let batch =
            |frames: &[(i64, Option<&str>)]| -> Vec<NewFrame> { frames.iter().map(|&(s, m)| frame(s, m)).collect() };
        store.insert_frames(t, &batch(&[(1, Some("a")), (2, Some("a")), (3, Some("a"))])).unwrap();
        // Another trace's frames in between change nothing.
        store.insert_frames(other, &batch(&[(1, Some("a")), (2, Some("b"))])).unwrap();
        store.insert_frames(t, &batch(&[(4, Some("a")), (5, Some("a")), (6, Some("b"))])).unwrap();
        store.insert_frames(t, &batch(&[(7, Some("b"))])).unwrap();
        // Frame 8 is missing: 9 starts a span of its own.
        store.insert_frames(t, &batch(&[(9, Some("b"))])).unwrap();
        store.insert_frames(t, &batch(&[(10, None)])).unwrap();
        store.insert_frames(t, &batch(&[(11, Some("a"))])).unwrap();
        // An import may store a batch out of order.
        store.insert_frames(t, &batch(&[(14, Some("a")), (12, Some("a")), (13, Some("c"))])).unwrap();
        let (stored, recomputed) = stored_and_recomputed(&store, t);
        let want = [("a", 1, 5), ("b", 6, 7), ("b", 9, 9), ("a", 11, 12), ("c", 13, 13), ("a", 14, 14)]
            .map(|(m, first, last)| (m.to_owned(), first, last));
        assert_eq!(stored, want);
        assert_eq!(recomputed, want);
        let (stored, recomputed) = stored_and_recomputed(&store, other);
        assert_eq!(stored, [("a".to_owned(), 1, 1), ("b".to_owned(), 2, 2)]);
        assert_eq!(recomputed, stored);
    }

    #[test]
    fn recorded_spans_are_the_ones_the_migration_computes() {
        use crate::frame::Framer;
        use acp_tee_shared::Direction;
        let mut store = crate::Store::in_memory().unwrap();
        let t = store.create_trace(&crate::test_start(), 1).unwrap();
        let mut framer = Framer::new();
        // Requests, their responses, streams of updates across batch ends,
        // stderr lines without a method, in batches of every size.
        let mut seed = 7u64;
        for round in 0..200u64 {
            let mut frames = Vec::new();
            seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            for i in 0..(seed >> 59) {
                let line = match (seed >> (i % 50)) % 5 {
                    0 => format!("{{\"id\":{round}{i},\"method\":\"session/prompt\"}}\n"),
                    1 => format!("{{\"id\":{round}{i},\"result\":{{}}}}\n"),
                    2 => "not json\n".to_owned(),
                    _ => "{\"method\":\"session/update\"}\n".to_owned(),
                };
                let dir = if i % 3 == 0 { Direction::ClientToAgent } else { Direction::AgentToClient };
                framer.chunk(dir, round * 64 + i, line.as_bytes(), |f| frames.push(f));
            }
            store.insert_frames(t, &frames).unwrap();
        }
        let (stored, recomputed) = stored_and_recomputed(&store, t);
        assert!(stored.len() > 50, "{}", stored.len());
        assert_eq!(stored, recomputed);
    }

    #[test]
    fn runs_follow_consecutive_seqs_of_one_method() {
        let frames: Vec<NewFrame> =
            [(5, Some("a")), (1, Some("a")), (2, Some("a")), (3, None), (4, Some("a")), (6, Some("b")), (8, Some("b"))]
                .into_iter()
                .map(|(s, m)| frame(s, m))
                .collect();
        let got = runs(&frames);
        let want = [("a", 1, 2), ("a", 4, 5), ("b", 6, 6), ("b", 8, 8)].map(|(method, first, last)| Run {
            method,
            first,
            last,
        });
        assert_eq!(got, want);
    }
}
