//! Per-method timing kept as running aggregates: counts, maxima and a
//! log-linear latency histogram per method, updated with every batch of frames.

use crate::model::NewFrame;
use acp_tee_shared::api::{HistogramBucket, MethodStats};
use acp_tee_shared::{Direction, FrameKind};
use rusqlite::{params, Connection};
use std::collections::HashMap;

/// Sub-buckets per power of two: the bucket width is at most 1/16 of its
/// lower bound, so a percentile read from a bucket's middle is within ~3%.
const SUB: i64 = 16;

/// The histogram bucket of a latency (negative latencies count as 0).
pub fn bucket_of(ns: i64) -> i64 {
    let ns = ns.max(0);
    if ns < SUB {
        return ns;
    }
    let e = 63 - i64::from(ns.leading_zeros());
    let sub = (ns >> (e - 4)) & (SUB - 1);
    e * SUB + sub
}

/// The latencies a bucket holds: `lo..hi`, nanoseconds; the top bucket's
/// `hi` is `i64::MAX` (which it holds too), as 2^63 is not an `i64`.
pub fn bucket_bounds(bucket: i64) -> (i64, i64) {
    if bucket < SUB {
        return (bucket, bucket + 1);
    }
    let (e, sub) = (bucket / SUB, bucket % SUB);
    let at = |n: i64| i64::try_from(i128::from(n) << (e - 4)).unwrap_or(i64::MAX);
    (at(SUB + sub), at(SUB + sub + 1))
}

#[derive(Default)]
struct MethodAgg {
    count: i64,
    errors: i64,
    answered: i64,
    max_ns: Option<i64>,
    buckets: HashMap<i64, i64>,
}

/// The aggregates of one batch of frames, to be added to the store's.
#[derive(Default)]
pub struct BatchStats {
    /// Per method, in order of first appearance: a batch holds a few
    /// methods, and consecutive frames mostly share one.
    methods: Vec<(String, MethodAgg)>,
    /// Frames per direction and kind, indexed in the order of
    /// [`Direction::ALL`] and [`FrameKind::ALL`] (their declaration order).
    kinds: [[i64; FrameKind::ALL.len()]; Direction::ALL.len()],
}

impl BatchStats {
    /// Sums up `frames` (the messages of batches each on its own).
    pub fn of(frames: &[NewFrame]) -> BatchStats {
        let mut s = BatchStats::default();
        let mut last = 0;
        for f in frames {
            s.kinds[f.dir as usize][f.kind as usize] += 1;
            if let Some(method) = &f.method {
                s.add_message(&mut last, method, f.kind, f.latency_ns);
            }
            for m in &f.batch {
                if let Some(method) = &m.method {
                    s.add_message(&mut last, method, m.kind, m.latency_ns);
                }
            }
        }
        s
    }

    /// Counts one message of `method`; `last` is the index of the method
    /// counted last, looked at first (consecutive messages mostly share
    /// one, and the method is cloned once per batch, not per message).
    fn add_message(&mut self, last: &mut usize, method: &str, kind: FrameKind, latency_ns: Option<i64>) {
        if self.methods.get(*last).is_none_or(|(name, _)| name != method) {
            *last = match self.methods.iter().position(|(name, _)| name == method) {
                Some(i) => i,
                None => {
                    self.methods.push((method.to_owned(), MethodAgg::default()));
                    self.methods.len() - 1
                }
            };
        }
        let m = &mut self.methods[*last].1;
        match kind {
            FrameKind::Request | FrameKind::Notification => m.count += 1,
            FrameKind::Error => m.errors += 1,
            _ => {}
        }
        if let Some(ns) = latency_ns {
            m.answered += 1;
            m.max_ns = Some(m.max_ns.map_or(ns, |x| x.max(ns)));
            *m.buckets.entry(bucket_of(ns)).or_default() += 1;
        }
    }

    /// Adds these aggregates to trace `trace_id`'s, inside the caller's transaction on `tx`.
    pub fn add_to(&self, tx: &Connection, trace_id: i64) -> rusqlite::Result<()> {
        let mut method = tx.prepare_cached(
            "INSERT INTO method_stats (trace_id, method, count, errors, answered, max_ns) VALUES (?1, ?2, ?3, ?4, ?5, ?6)
             ON CONFLICT (trace_id, method) DO UPDATE SET
               count = count + excluded.count, errors = errors + excluded.errors,
               answered = answered + excluded.answered,
               max_ns = CASE WHEN max_ns IS NULL OR excluded.max_ns > max_ns THEN excluded.max_ns ELSE max_ns END",
        )?;
        let mut bucket = tx.prepare_cached(
            "INSERT INTO latency_buckets (trace_id, method, bucket, count) VALUES (?1, ?2, ?3, ?4)
             ON CONFLICT (trace_id, method, bucket) DO UPDATE SET count = count + excluded.count",
        )?;
        for (name, m) in &self.methods {
            method.execute(params![trace_id, name, m.count, m.errors, m.answered, m.max_ns])?;
            for (b, n) in &m.buckets {
                bucket.execute(params![trace_id, name, b, n])?;
            }
        }
        let mut kind = tx.prepare_cached(
            "INSERT INTO kind_counts (trace_id, dir, kind, count) VALUES (?1, ?2, ?3, ?4)
             ON CONFLICT (trace_id, dir, kind) DO UPDATE SET count = count + excluded.count",
        )?;
        for (d, counts) in Direction::ALL.into_iter().zip(&self.kinds) {
            for (k, &n) in FrameKind::ALL.into_iter().zip(counts) {
                if n > 0 {
                    kind.execute(params![trace_id, d.as_str(), k.as_str(), n])?;
                }
            }
        }
        Ok(())
    }
}

/// Fills percentiles and the histogram of `m` from its buckets (ascending
/// `(bucket, count)` pairs). Percentiles are nearest-rank, read as the middle
/// of the bucket holding that rank (never above the exact maximum, and the
/// exact maximum when the rank is the last); the
/// histogram has one bar per power of two of nanoseconds.
pub fn fill_from_buckets(m: &mut MethodStats, buckets: &[(i64, i64)]) {
    let total: i64 = buckets.iter().map(|(_, n)| n).sum();
    if total == 0 {
        return;
    }
    let max = m.max_ns.unwrap_or(i64::MAX);
    let at_rank = |p: f64| {
        let rank = ((p * total as f64).ceil() as i64).clamp(1, total);
        if rank == total {
            // The last rank is the largest latency, which is known exactly.
            return max;
        }
        let mut seen = 0;
        for &(b, n) in buckets {
            seen += n;
            if seen >= rank {
                let (lo, hi) = bucket_bounds(b);
                return (lo + (hi - lo - 1) / 2).min(max);
            }
        }
        max
    };
    m.p50_ns = Some(at_rank(0.50));
    m.p95_ns = Some(at_rank(0.95));
    m.p99_ns = Some(at_rank(0.99));
    let octave = |ns: i64| if ns <= 0 { 0 } else { 63 - i64::from(ns.leading_zeros()) };
    let first = octave(bucket_bounds(buckets[0].0).0);
    let last = octave(bucket_bounds(buckets[buckets.len() - 1].0).0);
    m.histogram = (first..=last)
        .map(|e| HistogramBucket {
            lo_ns: if e == 0 { 0 } else { 1 << e },
            // The top bar, from 2^62, ends at the largest i64.
            hi_ns: 1i64.checked_shl(e as u32 + 1).filter(|hi| *hi > 0).unwrap_or(i64::MAX),
            count: 0,
        })
        .collect();
    for &(b, n) in buckets {
        m.histogram[(octave(bucket_bounds(b).0) - first) as usize].count += n;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_kind_counts_index_directions_and_kinds_in_their_listed_order() {
        for (i, d) in Direction::ALL.into_iter().enumerate() {
            assert_eq!(d as usize, i, "{d:?}");
        }
        for (i, k) in FrameKind::ALL.into_iter().enumerate() {
            assert_eq!(k as usize, i, "{k:?}");
        }
    }

    #[test]
    fn buckets_tile_the_line_and_are_narrow() {
        let mut expected_lo = 0;
        for b in 0..(40 * SUB) {
            if (SUB..4 * SUB).contains(&b) {
                continue; // unused: values 16.. start at bucket 64
            }
            let (lo, hi) = bucket_bounds(b);
            assert_eq!(lo, expected_lo, "bucket {b}");
            assert!(hi > lo);
            assert!((hi - lo) * 16 <= lo.max(16), "bucket {b} too wide: {lo}..{hi}");
            assert_eq!(bucket_of(lo), b);
            assert_eq!(bucket_of(hi - 1), b);
            expected_lo = hi;
        }
    }

    fn method(max: i64) -> MethodStats {
        MethodStats {
            method: "m".into(),
            count: 0,
            errors: 0,
            answered: 0,
            p50_ns: None,
            p95_ns: None,
            p99_ns: None,
            max_ns: Some(max),
            histogram: vec![],
        }
    }

    #[test]
    fn percentiles_are_within_the_bucket_width() {
        let latencies: Vec<i64> = (1..=1000).map(|i| i * 1000).collect(); // 1 us .. 1 ms
        let mut counts: HashMap<i64, i64> = HashMap::new();
        for &l in &latencies {
            *counts.entry(bucket_of(l)).or_default() += 1;
        }
        let mut buckets: Vec<(i64, i64)> = counts.into_iter().collect();
        buckets.sort_unstable();
        let mut m = method(1_000_000);
        fill_from_buckets(&mut m, &buckets);
        for (got, exact) in [(m.p50_ns, 500_000), (m.p95_ns, 950_000), (m.p99_ns, 990_000)] {
            let got = got.unwrap();
            assert!((got - exact).abs() * 100 <= exact * 4, "{got} vs {exact}");
        }
        assert_eq!(m.histogram.iter().map(|b| b.count).sum::<i64>(), 1000);
        assert!(m.histogram.windows(2).all(|w| w[0].hi_ns == w[1].lo_ns));
        assert_eq!(m.histogram[0].lo_ns, 512);
        let mut one = method(7);
        fill_from_buckets(&mut one, &[(7, 1)]);
        assert_eq!((one.p50_ns, one.p99_ns), (Some(7), Some(7)));
    }

    #[test]
    fn the_largest_latencies_have_bounds_that_do_not_overflow() {
        for max in [1i64 << 62, (1 << 62) + 12345, i64::MAX - 1, i64::MAX] {
            let buckets = [(bucket_of(1000), 1), (bucket_of(max), 2)];
            let (lo, hi) = bucket_bounds(bucket_of(max));
            assert!(lo <= max && max <= hi && lo < hi, "{max}: {lo}..{hi}");
            let mut m = method(max);
            fill_from_buckets(&mut m, &buckets);
            let last = m.histogram.last().unwrap();
            assert!(last.lo_ns == 1 << 62 && last.hi_ns == i64::MAX, "{last:?}");
            assert!(m.histogram.iter().all(|b| b.lo_ns < b.hi_ns), "{:?}", m.histogram);
            assert!(m.histogram.windows(2).all(|w| w[0].hi_ns == w[1].lo_ns));
            assert_eq!(m.histogram.iter().map(|b| b.count).sum::<i64>(), 3);
            assert_eq!(m.p99_ns, Some(max));
            assert!(m.p50_ns.is_some_and(|p| (1 << 62) <= p && p <= max), "{:?}", m.p50_ns);
        }
    }
}
