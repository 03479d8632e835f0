//! A whole trace's time at a glance (`/api/traces/{id}/overview`): frames,
//! error responses, open requests and sessions per interval of equal time.
//!
//! Added up from the trace's blocks of 128 seqs (`frame_blocks`, migration
//! 16, [`super::blocks`]): a block whose earliest and latest frames fall in
//! one interval is added whole; one that straddles an interval's edge (at
//! most one per edge when times rise with seqs), names too many sessions to
//! list, or holds the last frame is read frame by frame, reading only the
//! columns before `raw`. So a million frames cost some 8,000 block rows and
//! a few hundred blocks' frames, not a scan of every page of the trace.

use super::blocks::{Block, BLOCK_BITS, BLOCK_COLUMNS, BLOCK_SEQS};
use super::{Store, StoreError};
use acp_tee_shared::api::{OverviewBucket, TraceOverview, OVERVIEW_BUCKETS_MAX};
use rusqlite::params;
use std::collections::HashMap;

/// Distinct sessions [`Store::overview`] tells apart within one bucket at
/// most: past them, a session's frames in that bucket are not counted again
/// (the bucket's `sessions` stops at about this number).
pub const OVERVIEW_SESSIONS_MAX: usize = 4096;

/// The buckets being added up.
struct Adder {
    first_t: i64,
    width: i64,
    buckets: Vec<OverviewBucket>,
    /// Per bucket: requests sent and answers paired, for the running count of open ones.
    sent: Vec<i64>,
    answered: Vec<i64>,
    /// Per session: the last bucket it was counted in.
    seen: HashMap<String, usize>,
    /// The session of the last frame read and its bucket (most frames are of
    /// the same session as the one before).
    last_session: Option<(Vec<u8>, usize)>,
}

impl Adder {
    /// The bucket of time `t` (times outside the first and last frames' go
    /// to the first and last buckets).
    fn bucket(&self, t: i64) -> usize {
        (t.saturating_sub(self.first_t).max(0) / self.width).min(self.buckets.len() as i64 - 1) as usize
    }

    fn seqs(&mut self, i: usize, first: i64, last: i64) {
        let b = &mut self.buckets[i];
        b.first_seq = Some(b.first_seq.map_or(first, |s| s.min(first)));
        b.last_seq = Some(b.last_seq.map_or(last, |s| s.max(last)));
    }

    /// A whole block, every frame of which is in bucket `i`.
    fn block(&mut self, i: usize, block: &Block) {
        self.seqs(i, block.first_seq, block.last_seq);
        let b = &mut self.buckets[i];
        b.frames += block.frames as u64;
        b.errors += block.errors as u64;
        self.sent[i] += block.requests;
        self.answered[i] += block.answers;
        for sid in block.sessions.iter().flatten() {
            self.session(i, sid);
        }
        self.last_session = None;
    }

    /// One frame, read from its row (`id, t_ns, kind = 'request', kind =
    /// 'error', reply_to_seq IS NOT NULL, session_id`); `lo` is the trace's
    /// lowest rowid.
    fn frame(&mut self, row: &rusqlite::Row<'_>, lo: i64) -> rusqlite::Result<()> {
        // The rowid is the trace's bits and the seq (`frame_id`).
        let seq = row.get::<_, i64>(0)? - lo;
        let i = self.bucket(row.get(1)?);
        self.seqs(i, seq, seq);
        self.buckets[i].frames += 1;
        if row.get::<_, bool>(2)? {
            self.sent[i] += 1;
        }
        if row.get::<_, bool>(3)? {
            self.buckets[i].errors += 1;
        }
        if row.get::<_, bool>(4)? {
            self.answered[i] += 1;
        }
        let Some(sid) = row.get_ref(5)?.as_bytes_or_null().unwrap_or_default() else { return Ok(()) };
        if self.last_session.as_ref().is_some_and(|(s, at)| *at == i && s == sid) {
            return Ok(());
        }
        self.last_session = Some((sid.to_vec(), i));
        self.session(i, &String::from_utf8_lossy(sid));
        Ok(())
    }

    /// Session `sid` has a frame in bucket `i`: counted there unless it was already.
    fn session(&mut self, i: usize, sid: &str) {
        match self.seen.get_mut(sid) {
            Some(at) if *at == i => {}
            Some(at) => {
                *at = i;
                self.buckets[i].sessions += 1;
            }
            None => {
                if self.seen.len() >= OVERVIEW_SESSIONS_MAX {
                    // Sessions last counted in earlier buckets need not be remembered.
                    self.seen.retain(|_, at| *at == i);
                }
                if self.seen.len() < OVERVIEW_SESSIONS_MAX {
                    self.seen.insert(sid.to_owned(), i);
                    self.buckets[i].sessions += 1;
                }
            }
        }
    }
}

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
        self.overview_with(trace_id, buckets, true)
    }

    /// [`Store::overview`], adding up whole blocks where it can
    /// (`whole_blocks`) or reading every frame (what the blocks must equal).
    fn overview_with(&self, trace_id: i64, buckets: usize, whole_blocks: bool) -> Result<TraceOverview, StoreError> {
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
        let mut adder = Adder {
            first_t,
            width,
            buckets: vec![OverviewBucket::default(); count],
            sent: vec![0; count],
            answered: vec![0; count],
            seen: HashMap::new(),
            last_session: None,
        };
        // The block holding the last frame is read frame by frame up to it:
        // frames stored since this began go to it (or to later blocks).
        let last_block = (last_id - lo) >> BLOCK_BITS;
        let mut blocks = self.conn.prepare_cached(&format!(
            "SELECT block, {BLOCK_COLUMNS} FROM frame_blocks WHERE trace_id = ?1 AND block <= ?2 ORDER BY block"
        ))?;
        let mut frames = self.conn.prepare_cached(
            "SELECT id, t_ns, kind = 'request', kind = 'error', reply_to_seq IS NOT NULL, session_id
             FROM frames WHERE id >= ?1 AND id <= ?2 ORDER BY id",
        )?;
        let mut rows = blocks.query(params![trace_id, last_block])?;
        while let Some(row) = rows.next()? {
            let index: i64 = row.get(0)?;
            let block = Block::from_row(row, 1)?;
            let (first, last) = (adder.bucket(block.min_t_ns), adder.bucket(block.max_t_ns));
            if whole_blocks && first == last && block.sessions.is_some() && index < last_block {
                adder.block(first, &block);
                continue;
            }
            let from = lo + (index << BLOCK_BITS);
            let mut frames = frames.query(params![from, (from + BLOCK_SEQS - 1).min(last_id)])?;
            while let Some(frame) = frames.next()? {
                adder.frame(frame, lo)?;
            }
        }
        let mut open = 0i64;
        for (i, b) in adder.buckets.iter_mut().enumerate() {
            open = (open + adder.sent[i] - adder.answered[i]).max(0);
            b.open = open as u64;
            out.frames += b.frames as i64;
            out.last_seq = out.last_seq.max(b.last_seq.unwrap_or(0));
        }
        out.buckets = adder.buckets;
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

    #[test]
    fn whole_blocks_add_up_to_what_every_frame_read_does_as_the_trace_grows() {
        use crate::blocks::tests::{frames, store_in_batches, Lcg};
        let mut rng = Lcg(5);
        let mut store = Store::in_memory().unwrap();
        let t = create_trace(&mut store);
        let all = frames(&mut rng, 4000);
        let mut compared = 0;
        let mut whole = 0;
        store_in_batches(&mut store, t, &mut rng, all, |store| {
            for buckets in [1, 3, 40, 400, 5000] {
                let fast = store.overview(t, buckets).unwrap();
                let read = store.overview_with(t, buckets, false).unwrap();
                assert_eq!(fast, read, "{buckets} buckets");
                compared += 1;
            }
            whole += store.overview(t, 40).unwrap().buckets.len();
        });
        assert!(compared > 40, "{compared}");
        let o = store.overview(t, 400).unwrap();
        assert_eq!(o.frames, 4000);
        let filled = o.buckets.iter().filter(|b| b.frames > 0).count();
        assert!(filled > 20, "{filled} buckets hold frames");
        assert!(o.buckets.iter().any(|b| b.sessions > 1));
        assert!(whole > 0);
    }
}
