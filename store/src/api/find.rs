//! Find: the next or previous frame holding a search's words, among those
//! a view's filters (and seq range) show, with the matches counted up to a cap; which
//! frames of a seq range match; the traces whose frames match.
//!
//! Each answer reads as [`Store::frame_page`]'s search does (the index up
//! to the trace's `indexed_seq`, the scan beyond it, masked as
//! [`Store::seen_by`] says), but only as far as it needs: the first match
//! each way, at most the cap counted, a bounded range.

use super::*;
use acp_tee_shared::api::{FindStep, TraceHit, TraceSearch};
use std::time::Instant;

/// Which way to look from a seq.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Toward {
    /// The first match with a greater seq.
    After(i64),
    /// The last match with a smaller seq.
    Before(i64),
}

/// A search of one trace, read once: what the index and the scan need.
struct Finder {
    trace_id: i64,
    q: FrameQuery,
    extra: Extra,
    /// The FTS5 query (`None`: no word, nothing matches).
    fts: Option<String>,
    /// Frames up to this seq are found through the index.
    indexed: i64,
}

impl Store {
    /// The next (or previous) frame of trace `trace_id` matching `q` (its
    /// `q` the words to find, its other filters those of the view) from
    /// `toward`, wrapping around at the ends, with the matches counted up
    /// to `cap` (and which one it is, when among those).
    pub fn find_step(&self, trace_id: i64, q: &FrameQuery, toward: Toward, cap: i64) -> Result<FindStep, StoreError> {
        let f = self.finder(trace_id, q)?;
        let (found, wrapped) = match toward {
            Toward::After(after) => match f.first_after(self, after)? {
                Some(seq) => (Some(seq), false),
                None => (f.first_after(self, 0)?, true),
            },
            Toward::Before(before) => match f.last_before(self, before)? {
                Some(seq) => (Some(seq), false),
                None => (f.last_before(self, crate::MAX_SEQ + 1)?, true),
            },
        };
        let Some(seq) = found else { return Ok(FindStep::default()) };
        let (total, more) = f.count(self, None, cap)?;
        let (position, past) = f.count(self, Some(seq), cap)?;
        Ok(FindStep { seq: Some(seq), wrapped, position: (!past).then_some(position), total, more })
    }

    /// The seqs of trace `trace_id`'s frames in `from ..= to` that match
    /// `q`, in order. The caller bounds the range.
    pub fn matches_between(&self, trace_id: i64, q: &FrameQuery, from: i64, to: i64) -> Result<Vec<i64>, StoreError> {
        let f = self.finder(trace_id, q)?;
        let Some(fts) = &f.fts else { return Ok(Vec::new()) };
        let after = from.max(1) - 1;
        let mut seqs = Vec::new();
        if after < f.indexed {
            let rows = indexed_matches(trace_id, &f.q, after, to.min(f.indexed), fts.clone(), &f.extra);
            seqs = self.seqs(rows, false, -1)?;
        }
        if to > f.indexed {
            let tail = filters(trace_id, &f.upto(to), after.max(f.indexed), &f.extra);
            seqs.extend(self.seqs(tail, false, -1)?);
        }
        Ok(seqs)
    }

    /// The traces (the newest `max_traces`) whose frames hold the words of
    /// `text`, each with its first match and its matches counted up to
    /// `cap`; no trace is begun after `until`.
    pub fn search_traces(
        &self,
        text: &str,
        max_traces: usize,
        cap: i64,
        until: Instant,
    ) -> Result<TraceSearch, StoreError> {
        let traces = self.trace_summaries()?;
        let q = FrameQuery { q: Some(text.to_owned()), ..FrameQuery::default() };
        let mut found = TraceSearch { traces: traces.len(), ..TraceSearch::default() };
        for trace in traces.into_iter().take(max_traces) {
            if Instant::now() > until {
                found.stopped = Some("it ran out of time".to_owned());
                break;
            }
            found.searched += 1;
            let f = self.finder(trace.meta.id, &q)?;
            let Some(seq) = f.first_after(self, 0)? else { continue };
            let Some(first) = self.frame_summary(trace.meta.id, seq)? else { continue };
            let (count, more) = f.count(self, None, cap)?;
            found.hits.push(TraceHit { trace, first, count, more });
        }
        if found.stopped.is_none() && found.searched < found.traces {
            found.stopped = Some(format!("only the newest {max_traces} traces are searched"));
        }
        Ok(found)
    }

    fn finder(&self, trace_id: i64, q: &FrameQuery) -> Result<Finder, StoreError> {
        self.trace(trace_id)?;
        let search = q.q.as_deref().filter(|_| searching(q)).map(|t| search::parse(&self.conn, t)).transpose()?;
        let extra =
            Extra { batches: q.errors == Some(true) && self.has_batches(trace_id)?, seen: self.masking(), search };
        let fts = extra.search.as_ref().and_then(Search::fts_query);
        // The mask's word is nowhere in the index: such a search, as a
        // masking reader sees frames, scans them all.
        let scan_all = extra.seen && extra.search.as_ref().is_some_and(Search::names_mask);
        let indexed = if scan_all || fts.is_none() { 0 } else { self.indexed_seq(trace_id)? };
        Ok(Finder { trace_id, q: q.clone(), extra, fts, indexed })
    }

    /// The seqs of the rows `f` selects, in its order (reversed when
    /// `desc`), at most `limit` (-1: all).
    fn seqs(&self, f: Filters, desc: bool, limit: i64) -> Result<Vec<i64>, StoreError> {
        let Filters { from, where_sql, mut args, order } = f;
        let order = if desc {
            order.split(", ").map(|c| format!("{c} DESC")).collect::<Vec<_>>().join(", ")
        } else {
            order.to_owned()
        };
        args.push(Value::Integer(limit));
        let sql = format!("SELECT f.seq FROM {from} WHERE {where_sql} ORDER BY {order} LIMIT ?");
        let mut stmt = self.conn.prepare(&sql)?;
        let seqs = stmt.query_map(params_from_iter(args.iter()), |r| r.get(0))?.collect::<Result<_, _>>()?;
        Ok(seqs)
    }

    /// How many rows `f` selects, at most `cap + 1`.
    fn count_capped(&self, f: Filters, cap: i64) -> Result<i64, StoreError> {
        let Filters { from, where_sql, mut args, .. } = f;
        args.push(Value::Integer(cap + 1));
        let sql = format!("SELECT count(*) FROM (SELECT 1 FROM {from} WHERE {where_sql} LIMIT ?)");
        Ok(self.conn.query_row(&sql, params_from_iter(args.iter()), |r| r.get(0))?)
    }
}

impl Finder {
    /// The query, its frames ending at seq `to` or where its own range ends,
    /// whichever comes first (the frames API's range end, which [`filters`]
    /// and [`indexed_matches`] apply).
    fn upto(&self, to: i64) -> FrameQuery {
        FrameQuery { to: Some(self.q.to.map_or(to, |end| end.min(to))), ..self.q.clone() }
    }

    /// The first match after seq `after`.
    fn first_after(&self, s: &Store, after: i64) -> Result<Option<i64>, StoreError> {
        let Some(fts) = &self.fts else { return Ok(None) };
        if after < self.indexed {
            let rows = indexed_matches(self.trace_id, &self.q, after, self.indexed, fts.clone(), &self.extra);
            if let Some(seq) = s.seqs(rows, false, 1)?.first() {
                return Ok(Some(*seq));
            }
        }
        let tail = filters(self.trace_id, &self.q, after.max(self.indexed), &self.extra);
        Ok(s.seqs(tail, false, 1)?.first().copied())
    }

    /// The last match before seq `before`.
    fn last_before(&self, s: &Store, before: i64) -> Result<Option<i64>, StoreError> {
        let Some(fts) = &self.fts else { return Ok(None) };
        if before - 1 > self.indexed {
            let tail = filters(self.trace_id, &self.upto(before - 1), self.indexed, &self.extra);
            if let Some(seq) = s.seqs(tail, true, 1)?.first() {
                return Ok(Some(*seq));
            }
        }
        let upto = (before - 1).min(self.indexed);
        if upto <= 0 {
            return Ok(None);
        }
        let rows = indexed_matches(self.trace_id, &self.q, 0, upto, fts.clone(), &self.extra);
        Ok(s.seqs(rows, true, 1)?.first().copied())
    }

    /// How many matches there are up to seq `upto` (all when `None`),
    /// counted up to `cap`, and whether there are more.
    fn count(&self, s: &Store, upto: Option<i64>, cap: i64) -> Result<(i64, bool), StoreError> {
        let Some(fts) = &self.fts else { return Ok((0, false)) };
        let upto = upto.unwrap_or(crate::MAX_SEQ);
        let mut n = 0;
        if self.indexed > 0 {
            let rows = indexed_matches(self.trace_id, &self.q, 0, upto.min(self.indexed), fts.clone(), &self.extra);
            n = s.count_capped(rows, cap)?;
        }
        if n <= cap && upto > self.indexed {
            let tail = filters(self.trace_id, &self.upto(upto), self.indexed, &self.extra);
            n += s.count_capped(tail, cap - n)?;
        }
        Ok((n.min(cap), n > cap))
    }
}
