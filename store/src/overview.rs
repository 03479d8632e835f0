//! A whole trace's time at a glance (`/api/traces/{id}/overview`): frames,
//! error responses, open requests and sessions per interval of equal time.
//!
//! One pass over the trace's rows in rowid order, reading only the columns
//! before `raw` (`t_ns, kind, reply_to_seq, session_id`; the seq is the rowid's low bits), a bounded step
//! per read transaction; the buckets are added up here rather than by a
//! `GROUP BY`, whose sort costs SQLite twice the scan at a million frames.

use super::{Store, StoreError};
use acp_tee_shared::api::{OverviewBucket, TraceOverview, OVERVIEW_BUCKETS_MAX};
use rusqlite::params;
use std::collections::HashMap;

/// Rows one read transaction of [`Store::overview`] reads at most.
const OVERVIEW_STEP_ROWS: i64 = 1 << 16;

/// Distinct sessions [`Store::overview`] tells apart within one bucket at
/// most: past them, a session's frames in that bucket are not counted again
/// (the bucket's `sessions` stops at about this number).
pub const OVERVIEW_SESSIONS_MAX: usize = 4096;

impl Store {
    /// Trace `trace_id`'s frames added up in at most `buckets` (1..=
    /// [`OVERVIEW_BUCKETS_MAX`]) intervals of equal time, from its first
    /// frame's `t_ns` to its last (the frames stored when this starts).
    /// `findings_checked` is false: the checks are not the store's.
    ///
    /// Sessions are counted per bucket as frames come in seq order, whose
    /// times rise in every recording; a hand-made import whose times go back
    /// and forth may count a session twice in a bucket.
    pub fn overview(&self, trace_id: i64, buckets: usize) -> Result<TraceOverview, StoreError> {
        self.trace(trace_id)?;
        let buckets = buckets.clamp(1, OVERVIEW_BUCKETS_MAX) as i64;
        let mut out = TraceOverview { trace_id, ..TraceOverview::default() };
        let (lo, hi) = super::frame_id_bounds(trace_id);
        // The first and last frames' times and the last rowid: three seeks.
        let (first_t, last_t, last_id): (Option<i64>, Option<i64>, Option<i64>) = self.conn.query_row(
            "SELECT (SELECT t_ns FROM frames WHERE id > ?1 AND id < ?2 ORDER BY id LIMIT 1),
                    (SELECT t_ns FROM frames WHERE id > ?1 AND id < ?2 ORDER BY id DESC LIMIT 1),
                    (SELECT max(id) FROM frames WHERE id > ?1 AND id < ?2)",
            params![lo, hi],
            |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
        )?;
        let (Some(first_t), Some(last_t), Some(last_id)) = (first_t, last_t, last_id) else { return Ok(out) };
        let span = (last_t.saturating_sub(first_t)).max(0).saturating_add(1);
        // Ceiling division: `buckets` buckets of this width cover the span.
        let width = ((span - 1) / buckets + 1).max(1);
        let count = ((span - 1) / width + 1) as usize;
        out.start_t_ns = first_t;
        out.bucket_ns = width;
        out.buckets = vec![OverviewBucket::default(); count];
        // Per bucket: requests sent and answers paired, for the running count of open ones.
        let mut sent = vec![0i64; count];
        let mut answered = vec![0i64; count];
        // Per session: the last bucket it was counted in.
        let mut seen: HashMap<String, usize> = HashMap::new();
        let mut last_session: Option<(Vec<u8>, usize)> = None;
        let mut stmt = self.conn.prepare_cached(
            "SELECT id, t_ns, kind = 'request', kind = 'error', reply_to_seq IS NOT NULL, session_id
             FROM frames WHERE id > ?1 AND id <= ?2 ORDER BY id LIMIT ?3",
        )?;
        let mut from = lo;
        while from < last_id {
            let mut rows = stmt.query(params![from, last_id, OVERVIEW_STEP_ROWS])?;
            let mut read = 0;
            while let Some(row) = rows.next()? {
                read += 1;
                from = row.get(0)?;
                let t: i64 = row.get(1)?;
                // The rowid is the trace's bits and the seq (`frame_id`).
                let seq = from - lo;
                let i = (t.saturating_sub(first_t).max(0) / width).min(count as i64 - 1) as usize;
                let b = &mut out.buckets[i];
                b.frames += 1;
                b.first_seq = Some(b.first_seq.map_or(seq, |s| s.min(seq)));
                b.last_seq = Some(b.last_seq.map_or(seq, |s| s.max(seq)));
                if row.get::<_, bool>(2)? {
                    sent[i] += 1;
                }
                if row.get::<_, bool>(3)? {
                    b.errors += 1;
                }
                if row.get::<_, bool>(4)? {
                    answered[i] += 1;
                }
                let Some(sid) = row.get_ref(5)?.as_bytes_or_null().unwrap_or_default() else { continue };
                if last_session.as_ref().is_some_and(|(s, at)| *at == i && s == sid) {
                    continue;
                }
                last_session = Some((sid.to_vec(), i));
                let sid = String::from_utf8_lossy(sid);
                match seen.get_mut(sid.as_ref()) {
                    Some(at) if *at == i => {}
                    Some(at) => {
                        *at = i;
                        b.sessions += 1;
                    }
                    None => {
                        if seen.len() >= OVERVIEW_SESSIONS_MAX {
                            // Sessions last counted in earlier buckets need not be remembered.
                            seen.retain(|_, at| *at == i);
                        }
                        if seen.len() < OVERVIEW_SESSIONS_MAX {
                            seen.insert(sid.into_owned(), i);
                            b.sessions += 1;
                        }
                    }
                }
            }
            if read < OVERVIEW_STEP_ROWS {
                break;
            }
        }
        let mut open = 0i64;
        for (i, b) in out.buckets.iter_mut().enumerate() {
            open = (open + sent[i] - answered[i]).max(0);
            b.open = open as u64;
            out.frames += b.frames as i64;
            out.last_seq = out.last_seq.max(b.last_seq.unwrap_or(0));
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use crate::testing::{create_trace, store_from};
    use crate::Store;
    use acp_tee_shared::Direction::{AgentToClient as A2C, ClientToAgent as C2A};

    fn line(v: serde_json::Value) -> Vec<u8> {
        format!("{v}\n").into_bytes()
    }

    fn request(id: i64, sid: &str) -> Vec<u8> {
        line(serde_json::json!({"jsonrpc": "2.0", "id": id, "method": "session/prompt", "params": {"sessionId": sid}}))
    }

    fn answer(id: i64) -> Vec<u8> {
        line(serde_json::json!({"jsonrpc": "2.0", "id": id, "result": {}}))
    }

    fn failure(id: i64) -> Vec<u8> {
        line(serde_json::json!({"jsonrpc": "2.0", "id": id, "error": {"code": 1, "message": "no"}}))
    }

    #[test]
    fn buckets_cut_the_time_from_first_to_last_frame_and_count_what_the_store_holds() {
        // Frames at 100..=1099 ns: 10 buckets of 100 ns.
        let frames: Vec<(acp_tee_shared::Direction, u64, Vec<u8>)> = vec![
            (C2A, 100, request(1, "a")), // bucket 0; open 1 at its end
            (C2A, 150, request(2, "b")), // bucket 0; open 2
            (A2C, 199, answer(1)),       // bucket 0 (its last ns); open 1
            (A2C, 200, failure(2)),      // bucket 1 (its first ns); open 0
            (C2A, 550, request(3, "a")), // bucket 4; open 1 through bucket 8
            (A2C, 1099, answer(3)),      // bucket 9, the last frame
        ];
        let chunks: Vec<_> = frames.iter().map(|(d, t, b)| (*d, *t, b.as_slice())).collect();
        let store = store_from(&chunks);
        let o = store.overview(1, 10).unwrap();
        assert_eq!((o.start_t_ns, o.bucket_ns, o.buckets.len(), o.frames, o.last_seq), (100, 100, 10, 6, 6));
        let col = |f: fn(&acp_tee_shared::api::OverviewBucket) -> u64| o.buckets.iter().map(f).collect::<Vec<_>>();
        assert_eq!(col(|b| b.frames), [3, 1, 0, 0, 1, 0, 0, 0, 0, 1]);
        assert_eq!(col(|b| b.errors), [0, 1, 0, 0, 0, 0, 0, 0, 0, 0]);
        assert_eq!(col(|b| b.open), [1, 0, 0, 0, 1, 1, 1, 1, 1, 0]);
        // Responses carry their request's session.
        assert_eq!(col(|b| b.sessions), [2, 1, 0, 0, 1, 0, 0, 0, 0, 1]);
        assert_eq!((o.buckets[0].first_seq, o.buckets[0].last_seq), (Some(1), Some(3)));
        assert_eq!((o.buckets[2].first_seq, o.buckets[2].last_seq), (None, None));
        assert_eq!(o.seq_at_bucket(2), Some(5), "an empty bucket leads to the next frame");
        assert_eq!(o.bucket_of_seq(4), Some(1));
        assert_eq!(o.bucket_of_seq(5), Some(4));
        assert!(!o.findings_checked);

        // More buckets than nanoseconds: one per nanosecond.
        let fine = store.overview(1, 2000).unwrap();
        assert_eq!((fine.bucket_ns, fine.buckets.len()), (1, 1000));
        assert_eq!(fine.buckets.iter().map(|b| b.frames).sum::<u64>(), 6);
        // Widths round up: 3 buckets of 334 ns cover 1000.
        let three = store.overview(1, 3).unwrap();
        assert_eq!((three.bucket_ns, three.buckets.len()), (334, 3));
        assert_eq!(three.buckets.iter().map(|b| b.frames).collect::<Vec<_>>(), [4, 1, 1]);
    }

    #[test]
    fn an_empty_trace_has_no_buckets_one_frame_one_and_an_unknown_trace_is_an_error() {
        let mut store = Store::in_memory().unwrap();
        create_trace(&mut store);
        let empty = store.overview(1, 400).unwrap();
        assert_eq!((empty.frames, empty.buckets.len(), empty.bucket_ns), (0, 0, 0));
        assert_eq!(empty.seq_at_bucket(0), None);

        let one = store_from(&[(C2A, 5_000, &request(1, "s"))]);
        let o = one.overview(1, 400).unwrap();
        assert_eq!((o.frames, o.buckets.len(), o.bucket_ns, o.start_t_ns), (1, 1, 1, 5_000));
        assert_eq!(o.buckets[0].open, 1);
        assert_eq!(o.seq_at_bucket(0), Some(1));
        assert!(matches!(one.overview(2, 10), Err(crate::StoreError::NoSuchTrace(2))));
    }

    /// `ACP_TEE_OVERVIEW_DB=PATH cargo test --release -p acp-tee-store overview_time -- --ignored --nocapture`
    #[test]
    #[ignore = "times a given store's trace 1"]
    fn overview_time() {
        let path = std::env::var("ACP_TEE_OVERVIEW_DB").expect("ACP_TEE_OVERVIEW_DB");
        let store = Store::open_existing(std::path::Path::new(&path)).unwrap();
        for _ in 0..3 {
            let t = std::time::Instant::now();
            let o = store.overview(1, 400).unwrap();
            eprintln!("{} frames, {} buckets: {:?}", o.frames, o.buckets.len(), t.elapsed());
        }
    }
}
