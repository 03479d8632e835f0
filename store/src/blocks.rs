//! Each block of [`BLOCK_SEQS`] seqs of a trace, added up (`frame_blocks`,
//! migration 16), written with every batch: what the overview strip counts
//! of the block's frames ([`super::overview`] adds whole blocks up and reads
//! only those that straddle an interval's edge frame by frame).
//!
//! Invariant: a block's values are those of the trace's frames with seq in
//! its range, and every frame is in exactly one block. Frames are only
//! added (a trace is removed whole), so a batch's frames are added to the
//! block they fall in: its counts grow, its bounds widen, its sessions are
//! the union.

use crate::model::NewFrame;
use acp_tee_shared::FrameKind;
use rusqlite::{params, Connection, OptionalExtension};
use std::collections::btree_map::{BTreeMap, Entry};

/// A block's seqs are those with the same `seq >> BLOCK_BITS`.
pub(crate) const BLOCK_BITS: u32 = 7;

/// Seqs in a block.
pub(crate) const BLOCK_SEQS: i64 = 1 << BLOCK_BITS;

/// Distinct sessions a block names at most; past them its `sessions` is
/// NULL and a reader reads its frames to tell them apart.
pub(crate) const BLOCK_SESSIONS_MAX: usize = 4;

/// One block's values.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Block {
    pub frames: i64,
    pub first_seq: i64,
    pub last_seq: i64,
    pub min_t_ns: i64,
    pub max_t_ns: i64,
    pub errors: i64,
    pub requests: i64,
    pub answers: i64,
    /// The distinct sessions named, sorted; `None` past [`BLOCK_SESSIONS_MAX`].
    pub sessions: Option<Vec<String>>,
}

impl Block {
    /// A block of frame `f` alone.
    fn of(f: &NewFrame) -> Block {
        Block {
            frames: 1,
            first_seq: f.seq,
            last_seq: f.seq,
            min_t_ns: f.t_ns,
            max_t_ns: f.t_ns,
            errors: i64::from(f.kind == FrameKind::Error),
            requests: i64::from(f.kind == FrameKind::Request),
            answers: i64::from(f.reply_to_seq.is_some()),
            sessions: Some(Vec::new()),
        }
    }

    /// Frame `f` added to this block (its session is added by the caller).
    fn add_frame(&mut self, f: &NewFrame) {
        self.frames += 1;
        self.first_seq = self.first_seq.min(f.seq);
        self.last_seq = self.last_seq.max(f.seq);
        self.min_t_ns = self.min_t_ns.min(f.t_ns);
        self.max_t_ns = self.max_t_ns.max(f.t_ns);
        self.errors += i64::from(f.kind == FrameKind::Error);
        self.requests += i64::from(f.kind == FrameKind::Request);
        self.answers += i64::from(f.reply_to_seq.is_some());
    }

    /// `other`'s frames added to this block's.
    fn add(&mut self, other: Block) {
        self.frames += other.frames;
        self.first_seq = self.first_seq.min(other.first_seq);
        self.last_seq = self.last_seq.max(other.last_seq);
        self.min_t_ns = self.min_t_ns.min(other.min_t_ns);
        self.max_t_ns = self.max_t_ns.max(other.max_t_ns);
        self.errors += other.errors;
        self.requests += other.requests;
        self.answers += other.answers;
        match other.sessions {
            Some(theirs) => theirs.iter().for_each(|s| self.add_session(s)),
            None => self.sessions = None,
        }
    }

    /// Session `sid` named in this block.
    fn add_session(&mut self, sid: &str) {
        let Some(mine) = self.sessions.as_mut() else { return };
        if let Err(at) = mine.binary_search_by(|s| s.as_str().cmp(sid)) {
            if mine.len() == BLOCK_SESSIONS_MAX {
                self.sessions = None;
            } else {
                mine.insert(at, sid.to_owned());
            }
        }
    }

    /// The block as a row of `frame_blocks` reads it (`frames`, ...,
    /// `sessions`, in column order from `frames`).
    pub(crate) fn from_row(row: &rusqlite::Row<'_>, first: usize) -> rusqlite::Result<Block> {
        let sessions: Option<String> = row.get(first + 8)?;
        Ok(Block {
            frames: row.get(first)?,
            first_seq: row.get(first + 1)?,
            last_seq: row.get(first + 2)?,
            min_t_ns: row.get(first + 3)?,
            max_t_ns: row.get(first + 4)?,
            errors: row.get(first + 5)?,
            requests: row.get(first + 6)?,
            answers: row.get(first + 7)?,
            // A list this module did not write is read as "too many to tell":
            // the reader then reads the frames.
            sessions: sessions.and_then(|s| serde_json::from_str::<Vec<String>>(&s).ok()),
        })
    }
}

/// The columns [`Block::from_row`] reads, in its order.
pub(crate) const BLOCK_COLUMNS: &str =
    "frames, first_seq, last_seq, min_t_ns, max_t_ns, errors, requests, answers, sessions";

/// Adds `frames` (just stored as frames of trace `trace_id`) to the trace's
/// blocks, inside the caller's transaction: one read and one write per
/// block the batch touches (a recorder's batch mostly touches one).
pub(super) fn add(conn: &Connection, trace_id: i64, frames: &[NewFrame]) -> rusqlite::Result<()> {
    let mut touched: BTreeMap<i64, Block> = BTreeMap::new();
    // The block of the frame before: a batch's frames mostly share one.
    let mut last: Option<(i64, &mut Block)> = None;
    for f in frames {
        let index = f.seq >> BLOCK_BITS;
        let block = match last.take() {
            Some((i, block)) if i == index => {
                block.add_frame(f);
                block
            }
            _ => match touched.entry(index) {
                Entry::Occupied(e) => {
                    let block = e.into_mut();
                    block.add_frame(f);
                    block
                }
                Entry::Vacant(e) => e.insert(Block::of(f)),
            },
        };
        if let Some(sid) = &f.session_id {
            block.add_session(sid);
        }
        last = Some((index, block));
    }
    let mut read =
        conn.prepare_cached(&format!("SELECT {BLOCK_COLUMNS} FROM frame_blocks WHERE trace_id = ?1 AND block = ?2"))?;
    let mut write = conn.prepare_cached(&format!(
        "INSERT OR REPLACE INTO frame_blocks (trace_id, block, {BLOCK_COLUMNS})
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)"
    ))?;
    for (index, mut block) in touched {
        let stored = read.query_row(params![trace_id, index], |r| Block::from_row(r, 0)).optional()?;
        if let Some(mut stored) = stored {
            stored.add(block);
            block = stored;
        }
        let sessions = block.sessions.as_ref().map(|s| serde_json::Value::from(s.clone()).to_string());
        write.execute(params![
            trace_id,
            index,
            block.frames,
            block.first_seq,
            block.last_seq,
            block.min_t_ns,
            block.max_t_ns,
            block.errors,
            block.requests,
            block.answers,
            sessions
        ])?;
    }
    Ok(())
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// A deterministic stream of numbers.
    pub(crate) struct Lcg(pub(crate) u64);

    impl Lcg {
        pub(crate) fn next(&mut self, below: u64) -> u64 {
            self.0 = self.0.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            (self.0 >> 33) % below
        }
    }

    /// `n` frames from seq 1 on, some seqs missing, times rising but now
    /// and then going back, kinds and sessions (of seven) mixed.
    pub(crate) fn frames(rng: &mut Lcg, n: usize) -> Vec<NewFrame> {
        let (mut seq, mut t) = (0i64, 1_000i64);
        (0..n)
            .map(|_| {
                seq += if rng.next(50) == 0 { 2 + rng.next(300) as i64 } else { 1 };
                t += match rng.next(40) {
                    0 => -(rng.next(5_000) as i64),
                    1 => 200_000 + rng.next(1_000_000) as i64,
                    _ => rng.next(300) as i64,
                };
                let kind = [FrameKind::Request, FrameKind::Response, FrameKind::Error, FrameKind::Notification]
                    [rng.next(4) as usize];
                NewFrame {
                    t_ns: t,
                    kind,
                    session_id: (rng.next(3) > 0).then(|| format!("s{}", rng.next(7))),
                    reply_to_seq: matches!(kind, FrameKind::Response | FrameKind::Error)
                        .then_some(seq - 1)
                        .filter(|_| rng.next(5) > 0),
                    ..crate::spans::tests::frame(seq, None)
                }
            })
            .collect()
    }

    /// Stores `frames` as trace `t` in batches of 1 to 300 (some shuffled,
    /// as an import may store them), calling `each` after every batch.
    pub(crate) fn store_in_batches(
        store: &mut crate::Store,
        t: i64,
        rng: &mut Lcg,
        mut frames: Vec<NewFrame>,
        mut each: impl FnMut(&crate::Store),
    ) {
        while !frames.is_empty() {
            let n = (1 + rng.next(300) as usize).min(frames.len());
            let mut batch: Vec<NewFrame> = frames.drain(..n).collect();
            if rng.next(4) == 0 {
                batch.reverse();
            }
            store.insert_frames(t, &batch).unwrap();
            each(store);
        }
    }

    /// Blocks by index.
    type Blocks = Vec<(i64, Block)>;

    /// Trace `t`'s blocks as stored and as migration 16 computes them from
    /// its frames (sessions sorted).
    fn stored_and_recomputed(store: &crate::Store, t: i64) -> (Blocks, Blocks) {
        let read = |table: &str| -> Blocks {
            let sql = format!("SELECT block, {BLOCK_COLUMNS} FROM {table} WHERE trace_id = ?1 ORDER BY block");
            let mut stmt = store.conn.prepare(&sql).unwrap();
            let rows = stmt.query_map([t], |r| {
                let mut b = Block::from_row(r, 1)?;
                if let Some(s) = b.sessions.as_mut() {
                    s.sort();
                }
                Ok((r.get(0)?, b))
            });
            rows.unwrap().collect::<Result<_, _>>().unwrap()
        };
        let migration = include_str!("../../migrations/0016_frame_blocks.sql");
        let insert = &migration[migration.find("INSERT INTO frame_blocks").unwrap()..];
        let recompute = insert.replace("INSERT INTO frame_blocks", "INSERT INTO recomputed");
        store
            .conn
            .execute_batch(&format!(
                "DROP TABLE IF EXISTS temp.recomputed; CREATE TEMP TABLE recomputed AS SELECT * FROM frame_blocks WHERE 0;
                 {recompute}"
            ))
            .unwrap();
        (read("frame_blocks"), read("temp.recomputed"))
    }

    #[test]
    fn stored_blocks_are_the_ones_the_migration_computes_from_the_frames() {
        let mut rng = Lcg(11);
        let mut store = crate::Store::in_memory().unwrap();
        let start = crate::test_start();
        let (t, other) = (store.create_trace(&start, 1).unwrap(), store.create_trace(&start, 1).unwrap());
        let all = frames(&mut rng, 3000);
        store.insert_frames(other, &frames(&mut rng, 500)).unwrap();
        store_in_batches(&mut store, t, &mut rng, all, |_| {});
        let (stored, recomputed) = stored_and_recomputed(&store, t);
        assert!(stored.len() > 30, "{} blocks", stored.len());
        assert!(stored.iter().any(|(_, b)| b.sessions.is_none()), "no block with too many sessions");
        assert!(stored.iter().any(|(_, b)| b.sessions.as_ref().is_some_and(|s| s.len() > 1)));
        assert_eq!(stored, recomputed);
        assert_eq!(stored.iter().map(|(_, b)| b.frames).sum::<i64>(), 3000);
        let (stored, recomputed) = stored_and_recomputed(&store, other);
        assert_eq!(stored, recomputed);
        assert_eq!(stored.iter().map(|(_, b)| b.frames).sum::<i64>(), 500);
    }
}
