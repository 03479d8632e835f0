//! What a range of a trace's seqs holds (`/api/traces/{id}/range`): frames,
//! duration, requests, errors and the most frequent methods, for the
//! viewer's range panel.
//!
//! One pass over the range's rows in rowid order (the seq is the rowid's low
//! bits, so the range is one seek), reading only columns before `raw`, a
//! bounded step per read; the methods are counted here, at most
//! [`RANGE_METHODS_COUNTED`] distinct names, so a trace of a million made-up
//! method names costs no more memory than one of a few.

use super::{frame_id, Store, StoreError};
use acp_tee_shared::api::{MethodCount, RangeSummary, RANGE_METHODS_SHOWN};
use rusqlite::params;
use std::collections::HashMap;

/// Rows one read of [`Store::range_summary`] reads at most.
const RANGE_STEP_ROWS: i64 = 1 << 16;

/// Distinct method names [`Store::range_summary`] counts apart at most;
/// frames of names past them are counted in `other_frames` (and the names
/// once each in `other_methods`, as far as they can be told: a lower bound).
pub const RANGE_METHODS_COUNTED: usize = 4096;

impl Store {
    /// What trace `trace_id`'s frames with seq `from..=to` add up to; their
    /// method names masked as the reader of [`Store::seen_by`] sees them
    /// (names that mask alike are counted as one).
    pub fn range_summary(&self, trace_id: i64, from: i64, to: i64) -> Result<RangeSummary, StoreError> {
        self.trace(trace_id)?;
        let mut out = RangeSummary::default();
        let mut counts: HashMap<Vec<u8>, u64> = HashMap::new();
        let mut uncounted: Option<Vec<u8>> = None;
        let (mut first_t, mut last_t) = (None, 0i64);
        let mut stmt = self.conn.prepare_cached(
            "SELECT id, seq, t_ns, kind = 'request', kind = 'error', method FROM frames
             WHERE id >= ?1 AND id <= ?2 ORDER BY id LIMIT ?3",
        )?;
        let (mut at, last) = (frame_id(trace_id, from), frame_id(trace_id, to));
        loop {
            let mut rows = stmt.query(params![at, last, RANGE_STEP_ROWS])?;
            let mut read = 0;
            while let Some(row) = rows.next()? {
                read += 1;
                at = row.get::<_, i64>(0)? + 1;
                let (seq, t): (i64, i64) = (row.get(1)?, row.get(2)?);
                out.first_seq.get_or_insert(seq);
                out.last_seq = Some(seq);
                first_t.get_or_insert(t);
                last_t = t;
                out.frames += 1;
                out.requests += u64::from(row.get::<_, bool>(3)?);
                out.errors += u64::from(row.get::<_, bool>(4)?);
                let Some(method) = row.get_ref(5)?.as_bytes_or_null().unwrap_or_default() else {
                    out.no_method += 1;
                    continue;
                };
                if let Some(n) = counts.get_mut(method) {
                    *n += 1;
                } else if counts.len() < RANGE_METHODS_COUNTED {
                    counts.insert(method.to_vec(), 1);
                } else {
                    // Consecutive frames mostly share a name: each run of one counts it once.
                    if uncounted.as_deref() != Some(method) {
                        out.other_methods += 1;
                        uncounted = Some(method.to_vec());
                    }
                    out.other_frames += 1;
                }
            }
            if read < RANGE_STEP_ROWS {
                break;
            }
        }
        out.duration_ns = first_t.map_or(0, |f| last_t.saturating_sub(f));
        let seen = self.seen.lock().unwrap_or_else(|e| e.into_inner()).clone();
        let mut named: HashMap<String, u64> = HashMap::with_capacity(counts.len());
        for (name, n) in counts {
            let name = String::from_utf8_lossy(&name).into_owned();
            let name = match &seen {
                Some(r) => r.mask_value(&name).unwrap_or(name),
                None => name,
            };
            *named.entry(name).or_default() += n;
        }
        let mut methods: Vec<MethodCount> =
            named.into_iter().map(|(method, frames)| MethodCount { method, frames }).collect();
        methods.sort_by(|a, b| b.frames.cmp(&a.frames).then_with(|| a.method.cmp(&b.method)));
        for rest in methods.drain(methods.len().min(RANGE_METHODS_SHOWN)..) {
            out.other_methods += 1;
            out.other_frames += rest.frames;
        }
        out.methods = methods;
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use crate::testing::store_from;
    use acp_tee_shared::api::RANGE_METHODS_SHOWN;
    use acp_tee_shared::Direction::{AgentStderr as ERR, AgentToClient as A2C, ClientToAgent as C2A};

    fn line(v: serde_json::Value) -> Vec<u8> {
        format!("{v}\n").into_bytes()
    }

    #[test]
    fn a_range_counts_its_frames_methods_requests_and_errors_and_its_time() {
        let req = |id: i64, m: &str| line(serde_json::json!({"jsonrpc": "2.0", "id": id, "method": m}));
        let note = |m: &str| line(serde_json::json!({"jsonrpc": "2.0", "method": m}));
        let fail =
            |id: i64| line(serde_json::json!({"jsonrpc": "2.0", "id": id, "error": {"code": 1, "message": "no"}}));
        let frames: Vec<(acp_tee_shared::Direction, u64, Vec<u8>)> = vec![
            (C2A, 1_000, req(1, "initialize")),      // #1
            (C2A, 2_000, req(2, "session/prompt")),  // #2
            (A2C, 3_000, note("session/update")),    // #3
            (A2C, 4_000, note("session/update")),    // #4
            (ERR, 5_000, b"a line\n".to_vec()),      // #5
            (A2C, 9_000, fail(2)),                   // #6
            (C2A, 20_000, req(3, "session/cancel")), // #7
        ];
        let chunks: Vec<_> = frames.iter().map(|(d, t, b)| (*d, *t, b.as_slice())).collect();
        let store = store_from(&chunks);
        let r = store.range_summary(1, 2, 6).unwrap();
        assert_eq!((r.first_seq, r.last_seq, r.frames, r.duration_ns), (Some(2), Some(6), 5, 7_000));
        assert_eq!((r.requests, r.errors, r.no_method), (1, 1, 1));
        let methods: Vec<(&str, u64)> = r.methods.iter().map(|m| (m.method.as_str(), m.frames)).collect();
        // The error response is listed under its request's method, as its row shows it.
        assert_eq!(methods, [("session/prompt", 2), ("session/update", 2)]);
        assert_eq!((r.other_methods, r.other_frames), (0, 0));
        // Past the last frame, a range holds what is there; before the first, nothing.
        let tail = store.range_summary(1, 7, 1_000).unwrap();
        assert_eq!((tail.first_seq, tail.last_seq, tail.frames, tail.duration_ns), (Some(7), Some(7), 1, 0));
        let none = store.range_summary(1, 50, 60).unwrap();
        assert_eq!((none.first_seq, none.frames, none.methods.len()), (None, 0, 0));
        assert!(matches!(store.range_summary(2, 1, 2), Err(crate::StoreError::NoSuchTrace(2))));
    }

    #[test]
    fn methods_past_those_shown_are_added_up_not_listed() {
        let frames: Vec<(acp_tee_shared::Direction, u64, Vec<u8>)> = (0..RANGE_METHODS_SHOWN + 3)
            .map(|i| (C2A, i as u64, line(serde_json::json!({"jsonrpc": "2.0", "method": format!("m/{i:02}")}))))
            .collect();
        let chunks: Vec<_> = frames.iter().map(|(d, t, b)| (*d, *t, b.as_slice())).collect();
        let r = store_from(&chunks).range_summary(1, 1, 1_000).unwrap();
        assert_eq!((r.methods.len(), r.other_methods, r.other_frames), (RANGE_METHODS_SHOWN, 3, 3));
        assert_eq!(r.methods[0].method, "m/00", "ties are listed by name");
    }
}
