//! The viewer's queries: trace summaries, filtered frame pages, one frame with
//! its pair, per-method timing. Every value from a request is bound as a
//! parameter, never spliced into SQL; only the names of directions and kinds,
//! which come from the fixed sets of [`Direction`] and [`FrameKind`], are
//! written into queries as literals.

use super::queries::parse_name;
use super::search::{self, Search};
use super::{frame_id, frame_id_bounds, Store, StoreError};
use acp_tee_shared::api::{FrameDetail, FramePage, FrameQuery, FrameSummary};
use acp_tee_shared::{Direction, FrameKind};
use base64::Engine;
use rusqlite::types::{Value, ValueRef};
use rusqlite::{params, params_from_iter, Connection, OptionalExtension, Row};

mod counts;
mod filters;
mod find;
mod plan;

pub use counts::SearchCounts;
use counts::{CountKey, Counted};
use filters::*;
pub use find::Toward;
pub use listing::{TraceFilter, TracePage};
use plan::{Facts, PagePlan, TotalPlan};

/// Columns read into a [`FrameSummary`], in `summary_from_row` order, with
/// `$size` as the frame's size (column 9).
/// Frames shorter than [`crate::model::PREVIEW_STORED_FROM`] have no stored preview: the
/// raw bytes come along (column 14) and the preview is made from them.
macro_rules! summary_columns {
    ($size:literal) => {
        concat!(
            "f.seq, f.t_ns, f.dir, f.kind, f.rpc_id, f.method, f.session_id, f.reply_to_seq,
     f.latency_ns, ",
            $size,
            ", f.preview, f.protocol, f.mcp_method,
     CASE WHEN f.kind IN ('request', 'batch') THEN coalesce(
       (SELECT r.seq FROM frames r WHERE r.trace_id = f.trace_id AND r.reply_to_seq = f.seq LIMIT 1),
       (SELECT b.batch_seq FROM batch_replies b WHERE b.trace_id = f.trace_id AND b.request_seq = f.seq))
     END,
     CASE WHEN f.preview IS NULL AND length(f.raw) < 4096 THEN f.raw END"
        )
    };
}

/// The summary columns, a frame's size its stored length.
const SUMMARY_COLUMNS: &str = summary_columns!("length(f.raw)");

/// The summary columns while [`Store::seen_by`] masks: a frame's size is
/// its masked length.
const SEEN_SUMMARY_COLUMNS: &str = summary_columns!("acp_seen_len(f.raw)");

fn summary_from_row(row: &Row<'_>) -> rusqlite::Result<FrameSummary> {
    let id: Option<String> = row.get(4)?;
    let kind = parse_name(3, row.get(3)?)?;
    let method: Option<String> = row.get(5)?;
    let mcp = row.get_ref(11)?.as_str().is_ok_and(|p| p == "mcp");
    let mcp_method: Option<String> = row.get(12)?;
    // A message of an MCP trace is its own MCP message (not one carried in
    // ACP's `mcp/message`): its method is its MCP method.
    let own_mcp = mcp && method.is_some() && method == mcp_method;
    let texts = match row.get_ref(14)? {
        ValueRef::Blob(raw) | ValueRef::Text(raw) => crate::frame::summary_texts(kind, method.as_deref(), raw, own_mcp),
        _ => crate::frame::SummaryTexts { preview: row.get(10)?, ..Default::default() },
    };
    let crate::frame::SummaryTexts { preview, update, spaced } = texts;
    // The one preview a `tools/call` result of an MCP trace has is its
    // tool's failure (`mcp_result_preview`), stored or made here alike.
    let tool_error =
        own_mcp && kind == FrameKind::Response && method.as_deref() == Some("tools/call") && preview.is_some();
    Ok(FrameSummary {
        seq: row.get(0)?,
        t_ns: row.get(1)?,
        dir: parse_name(2, row.get(2)?)?,
        kind,
        id: id.map(|id| serde_json::from_str(&id).unwrap_or(serde_json::Value::String(id))),
        method,
        session_id: row.get(6)?,
        reply_to_seq: row.get(7)?,
        latency_ns: row.get(8)?,
        size: row.get(9)?,
        preview,
        mcp,
        mcp_method,
        reply_seq: row.get(13)?,
        update,
        spaced,
        tool_error,
    })
}

/// Registers the SQL functions queries call on `conn`: `acp_match` and
/// `acp_seen_match` (the search scan, see [`super::search`]), `acp_seen_len`
/// (a frame's length as `seen`'s reader sees it) and `acp_errors` (error
/// responses in a frame).
pub(super) fn register_functions(conn: &Connection, seen: &search::Seen) -> rusqlite::Result<()> {
    use rusqlite::functions::FunctionFlags;
    super::search::register_match(conn, seen)?;
    let flags = FunctionFlags::SQLITE_UTF8 | FunctionFlags::SQLITE_DETERMINISTIC | FunctionFlags::SQLITE_INNOCUOUS;
    let seen = seen.clone();
    conn.create_scalar_function("acp_seen_len", 1, flags & !FunctionFlags::SQLITE_DETERMINISTIC, move |ctx| match ctx
        .get_raw(0)
    {
        ValueRef::Blob(raw) | ValueRef::Text(raw) => Ok(search::seen(&seen, raw).len() as i64),
        _ => Ok(0i64),
    })?;
    conn.create_scalar_function("acp_errors", 1, flags, |ctx| {
        let (ValueRef::Blob(raw) | ValueRef::Text(raw)) = ctx.get_raw(0) else { return Ok(0i64) };
        Ok(crate::frame::classify_with(raw, false).error_count() as i64)
    })
}

/// True when `q` searches (its `q` has a word, even one that matches nothing).
fn searching(q: &FrameQuery) -> bool {
    q.q.as_deref().is_some_and(|t| !t.trim().is_empty())
}

/// A search's FTS5 query, with where its count of indexed matches is kept.
struct Words<'a> {
    /// The FTS5 query.
    fts: String,
    /// The count's key (`None`: not kept, see [`counts::MAX_KEY_BYTES`]).
    key: Option<CountKey>,
    counts: &'a SearchCounts,
}

/// Where a search's page starts and how long it is.
#[derive(Debug, Clone, Copy)]
struct SearchPage {
    /// The seq after which matches are read (0: from the first).
    after: i64,
    /// Matches skipped from there.
    offset: i64,
    /// Frames on the page at most.
    limit: i64,
}

/// What a frame query needs to know of the store besides its parameters.
struct Extra {
    /// The search, read once.
    search: Option<Search>,
    /// The trace has batches, so "errors only" must look into them.
    batches: bool,
    /// [`Store::seen_by`] masks: a search matches the frames as masked.
    seen: bool,
}

impl Store {
    /// A page of the frames of trace `trace_id` matching `q`, in seq order.
    /// `q` must already be validated (limit within bounds). How the rows
    /// and the total are found is [`plan::plan`]'s choice. Counts of a
    /// search's indexed matches are made afresh: servers keep them between
    /// pages with [`Store::frame_page_counted`].
    pub fn frame_page(&self, trace_id: i64, q: &FrameQuery) -> Result<FramePage, StoreError> {
        self.frame_page_counted(trace_id, q, &SearchCounts::default())
    }

    /// [`Store::frame_page`], a search's count of indexed matches taken
    /// from `counts` and kept there ([`counts`]): a page of a search counted
    /// before costs its rows, the frames indexed since and the scanned tail.
    pub fn frame_page_counted(
        &self,
        trace_id: i64,
        q: &FrameQuery,
        counts: &SearchCounts,
    ) -> Result<FramePage, StoreError> {
        let meta = self.trace(trace_id)?;
        let limit = q.limit.unwrap_or(200);
        let extra = Extra {
            search: q.q.as_deref().filter(|_| searching(q)).map(|t| search::parse(&self.conn, t)).transpose()?,
            batches: q.errors == Some(true) && self.has_batches(trace_id)?,
            seen: self.masking(),
        };
        // Whether the trace is gap-free changes unfiltered pages without a
        // cursor only: one seek, asked for those alone.
        let gap_free = !has_row_filters(q) && q.after.is_none() && last_seq(&self.conn, trace_id)? == meta.frame_count;
        let (page_plan, total_plan) = plan::plan(q, Facts { gap_free, batches: extra.batches });
        // Totals the store keeps are read before the page, as the page may
        // be of a live trace.
        let known_total = match total_plan {
            TotalPlan::Stored => Some(meta.frame_count),
            TotalPlan::Range => Some(range_len(q, meta.frame_count)),
            TotalPlan::KindCounts => Some(count_by_kind(&self.conn, trace_id, q)?),
            TotalPlan::MethodSpans => Some(count_by_method(&self.conn, trace_id, q.method.as_deref().unwrap_or(""))?),
            TotalPlan::CountedInPage | TotalPlan::Count => None,
        };
        let (after, offset) = match page_plan {
            PagePlan::SeekBySeq { after } => (Some(after), 0),
            PagePlan::MethodSpans { offset } => {
                let method = q.method.as_deref().unwrap_or("");
                (Some(seq_before_method_offset(&self.conn, trace_id, method, offset)?), 0)
            }
            PagePlan::Search { after, offset } => match extra.search.as_ref().and_then(Search::fts_query) {
                Some(fts) => {
                    let page = SearchPage { after: after.unwrap_or(0).max(range_after(q)), offset, limit };
                    let key = CountKey::new(trace_id, &meta.started_at, &fts, q, extra.batches, extra.seen);
                    let words = Words { fts, key, counts };
                    return self.search_page(trace_id, q, &extra, &words, page, total_plan);
                }
                // No word to look for: the scan's conditions match nothing.
                None => (after, offset),
            },
            PagePlan::Scan { after, offset } => (after, offset),
        };
        let mut frames = self.page_rows(filters(trace_id, q, after.unwrap_or(0), &extra), limit + 1, offset)?;
        let has_more = frames.len() as i64 > limit;
        frames.truncate(limit as usize);
        let total = match (known_total, total_plan) {
            (Some(n), _) => n,
            // A page that is not full scanned to the trace's end: from the
            // first match on, it saw all of them (skipping `offset`).
            (None, TotalPlan::CountedInPage) if !has_more && (!frames.is_empty() || offset == 0) => {
                offset + frames.len() as i64
            }
            (None, _) => {
                let Filters { from, where_sql, args, .. } = filters(trace_id, q, 0, &extra);
                self.conn.query_row(
                    &format!("SELECT count(*) FROM {from} WHERE {where_sql}"),
                    params_from_iter(args.iter()),
                    |r| r.get(0),
                )?
            }
        };
        Ok(FramePage { frames, total, has_more })
    }

    /// A page of a search ([`PagePlan::Search`]) for the FTS5 query `fts`:
    /// the index's matches up to the trace's `indexed_seq` ([`indexed_matches`]),
    /// then the frames beyond it that the scan finds ([`filters`]), as two
    /// bounded queries; the page's offset runs over both in seq order.
    fn search_page(
        &self,
        trace_id: i64,
        q: &FrameQuery,
        extra: &Extra,
        words: &Words<'_>,
        page: SearchPage,
        total_plan: TotalPlan,
    ) -> Result<FramePage, StoreError> {
        let fts = &words.fts;
        let SearchPage { after, offset, limit } = page;
        // The mask's word is nowhere in the index: such a search, as a
        // masking reader sees frames, scans them all.
        let scan_all = extra.seen && extra.search.as_ref().is_some_and(Search::names_mask);
        let indexed = if scan_all { 0 } else { self.indexed_seq(trace_id)? };
        let want = limit + 1;
        let mut frames = Vec::new();
        // How many matches of the scanned tail the page skips.
        let mut tail_offset = offset;
        if after < indexed {
            frames = self.page_rows(indexed_matches(trace_id, q, after, indexed, fts.clone(), extra), want, offset)?;
            tail_offset = match frames.len() {
                // The offset reached past the index's matches: the rest of
                // it is skipped in the tail.
                0 if offset > 0 && after == 0 => offset - self.indexed_total(trace_id, q, extra, words, indexed)?,
                0 if offset > 0 => offset - self.count_indexed(trace_id, q, extra, fts, after, indexed)?,
                _ => 0,
            };
        }
        if (frames.len() as i64) < want {
            let rest = want - frames.len() as i64;
            frames.extend(self.page_rows(filters(trace_id, q, after.max(indexed), extra), rest, tail_offset)?);
        }
        let has_more = frames.len() as i64 > limit;
        frames.truncate(limit as usize);
        let total = if total_plan == TotalPlan::CountedInPage && !has_more && (!frames.is_empty() || offset == 0) {
            // The page saw every match from the first on (skipping `offset`).
            offset + frames.len() as i64
        } else {
            let Filters { from, where_sql, args, .. } = filters(trace_id, q, indexed, extra);
            let scanned: i64 = self.conn.query_row(
                &format!("SELECT count(*) FROM {from} WHERE {where_sql}"),
                params_from_iter(args.iter()),
                |r| r.get(0),
            )?;
            self.indexed_total(trace_id, q, extra, words, indexed)? + scanned
        };
        Ok(FramePage { frames, total, has_more })
    }

    /// The columns of a frame summary on this connection: its size as
    /// [`Store::seen_by`]'s reader sees it.
    fn summary_columns(&self) -> &'static str {
        if self.masking() {
            SEEN_SUMMARY_COLUMNS
        } else {
            SUMMARY_COLUMNS
        }
    }

    /// The summaries of the rows `f` selects, in its order, `limit` of them
    /// after `offset`.
    fn page_rows(&self, f: Filters, limit: i64, offset: i64) -> Result<Vec<FrameSummary>, StoreError> {
        let Filters { from, where_sql, mut args, order } = f;
        args.extend([Value::Integer(limit), Value::Integer(offset)]);
        let columns = self.summary_columns();
        let sql = format!("SELECT {columns} FROM {from} WHERE {where_sql} ORDER BY {order} LIMIT ? OFFSET ?");
        let mut stmt = self.conn.prepare(&sql)?;
        let rows = stmt.query_map(params_from_iter(args.iter()), summary_from_row)?.collect::<Result<_, _>>()?;
        Ok(rows)
    }

    /// How many frames of trace `trace_id` up to seq `indexed` (its
    /// `indexed_seq`) the index finds for `words` and `q`'s other filters:
    /// the count kept in `words.counts` plus the frames indexed since it
    /// was made, or counted whole; kept there for the next page.
    fn indexed_total(
        &self,
        trace_id: i64,
        q: &FrameQuery,
        extra: &Extra,
        words: &Words<'_>,
        indexed: i64,
    ) -> Result<i64, StoreError> {
        if indexed <= 0 {
            return Ok(0);
        }
        let kept = words.key.as_ref().and_then(|k| words.counts.get(k));
        let matches = match kept {
            // Only frames are added, so the matches up to `upto` stay what
            // they were; an index rebuilt since (`upto` past it) starts over.
            Some(Counted { upto, matches }) if upto <= indexed => {
                matches + self.count_indexed(trace_id, q, extra, &words.fts, upto, indexed)?
            }
            _ => self.count_indexed(trace_id, q, extra, &words.fts, 0, indexed)?,
        };
        if let Some(key) = &words.key {
            words.counts.put(key.clone(), Counted { upto: indexed, matches });
        }
        Ok(matches)
    }

    /// How many frames of trace `trace_id` with seq in `after + 1 ..= upto`
    /// (indexed) the index finds for `fts` and `q`'s other filters. A search
    /// alone is counted by FTS5 from its lists of frames, within the
    /// trace's rowid range, without reading a frame.
    fn count_indexed(
        &self,
        trace_id: i64,
        q: &FrameQuery,
        extra: &Extra,
        fts: &str,
        after: i64,
        upto: i64,
    ) -> Result<i64, StoreError> {
        if upto <= after {
            return Ok(0);
        }
        let Filters { from, where_sql, args, .. } = indexed_matches(trace_id, q, after, upto, fts.to_owned(), extra);
        let sql = if extra.seen || has_filters(&FrameQuery { q: None, ..q.clone() }) {
            format!("SELECT count(*) FROM {from} WHERE {where_sql}")
        } else {
            "SELECT count(*) FROM frames_fts WHERE frames_fts MATCH ? AND rowid > ? AND rowid <= ?".to_owned()
        };
        Ok(self.conn.prepare_cached(&sql)?.query_row(params_from_iter(args.iter()), |r| r.get(0))?)
    }

    /// How far trace `trace_id`'s frames are in the search index: every
    /// frame up to this seq is (0: none).
    fn indexed_seq(&self, trace_id: i64) -> Result<i64, StoreError> {
        let seq = self
            .conn
            .prepare_cached("SELECT indexed_seq FROM search_progress WHERE trace_id = ?1")?
            .query_row(params![trace_id], |r| r.get(0))
            .optional()?;
        Ok(seq.unwrap_or(0))
    }

    /// True when trace `trace_id` has a frame that is a batch.
    fn has_batches(&self, trace_id: i64) -> Result<bool, StoreError> {
        let n: i64 = self
            .conn
            .prepare_cached("SELECT coalesce(sum(count), 0) FROM kind_counts WHERE trace_id = ?1 AND kind = ?2")?
            .query_row(params![trace_id, FrameKind::Batch.as_str()], |r| r.get(0))?;
        Ok(n > 0)
    }

    /// How many frames trace `trace_id` has stored so far.
    pub fn frame_page_total(&self, trace_id: i64) -> i64 {
        self.conn
            .query_row("SELECT count(*) FROM frames WHERE id > ?1 AND id < ?2", frame_id_bounds(trace_id), |r| r.get(0))
            .unwrap_or(0)
    }

    /// Frames of trace `trace_id` with seq greater than `after` (live updates).
    pub fn frames_after(&self, trace_id: i64, after: i64, limit: i64) -> Result<Vec<FrameSummary>, StoreError> {
        let columns = self.summary_columns();
        let sql = format!("SELECT {columns} FROM frames f WHERE f.id > ?1 AND f.id < ?2 ORDER BY f.id LIMIT ?3");
        let (start, end) = (frame_id(trace_id, after.max(0)), frame_id_bounds(trace_id).1);
        let frames: rusqlite::Result<Vec<FrameSummary>> =
            self.conn.prepare(&sql)?.query_map(params![start, end, limit], summary_from_row)?.collect();
        Ok(frames?)
    }

    fn frame_summary(&self, trace_id: i64, seq: i64) -> Result<Option<FrameSummary>, StoreError> {
        let sql = format!("SELECT {} FROM frames f WHERE f.id = ?1 AND f.seq = ?2", self.summary_columns());
        Ok(self.conn.query_row(&sql, params![frame_id(trace_id, seq), seq], summary_from_row).optional()?)
    }

    /// One frame with its bytes and its pair; `None` when there is no such frame.
    pub fn frame_detail(&self, trace_id: i64, seq: i64) -> Result<Option<FrameDetail>, StoreError> {
        self.trace(trace_id)?;
        let Some(frame) = self.frame_summary(trace_id, seq)? else { return Ok(None) };
        let (raw, envelope): (Vec<u8>, Option<Vec<u8>>) = self.conn.query_row(
            "SELECT raw, envelope FROM frames WHERE id = ?1",
            params![frame_id(trace_id, seq)],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )?;
        let pair_seq = frame.reply_to_seq.or(frame.reply_seq);
        let pair = match pair_seq {
            Some(p) => self.frame_summary(trace_id, p)?,
            None => None,
        };
        let (raw_size, envelope_size) = (raw.len() as i64, envelope.as_ref().map(|e| e.len() as i64));
        let (raw, raw_base64) = match String::from_utf8(raw) {
            Ok(text) => (Some(text), None),
            Err(e) => (None, Some(base64::engine::general_purpose::STANDARD.encode(e.into_bytes()))),
        };
        let envelope = envelope.map(|e| String::from_utf8_lossy(&e).into_owned());
        Ok(Some(FrameDetail { frame, raw, raw_base64, envelope, pair, cut: false, raw_size, envelope_size }))
    }

    /// Stops any statement of this connection still running `limit` from now
    /// (SQLite's progress handler: the statement fails as interrupted, see
    /// [`StoreError::is_interrupted`]); `None` lifts the limit.
    pub fn interrupt_after(&self, limit: Option<std::time::Duration>) {
        /// Virtual machine steps between looks at the clock.
        const STEPS: std::ffi::c_int = 10_000;
        match limit {
            Some(limit) => {
                let deadline = std::time::Instant::now() + limit;
                self.conn.progress_handler(STEPS, Some(move || std::time::Instant::now() > deadline));
            }
            None => self.conn.progress_handler(0, None::<fn() -> bool>),
        }
    }

    /// SQLite's `data_version`: it changes when another connection commits,
    /// which is how the server notices new frames without reading old ones.
    pub fn data_version(&self) -> Result<i64, StoreError> {
        Ok(self.conn.query_row("PRAGMA data_version", [], |r| r.get(0))?)
    }
}

mod listing;
mod requests;
mod summaries;
#[cfg(test)]
mod tests;
