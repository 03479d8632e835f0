//! The viewer's queries: trace summaries, filtered frame pages, one frame with
//! its pair, per-method timing. Every value from a request is bound as a
//! parameter, never spliced into SQL; only the names of directions and kinds,
//! which come from the fixed sets of [`Direction`] and [`FrameKind`], are
//! written into queries as literals.

use super::queries::{parse_name, trace_from_row, TRACE_COLUMNS};
use super::search::{self, Search};
use super::{frame_id, frame_id_bounds, Store, StoreError, SHOWN};
use acp_tee_shared::api::{FrameDetail, FramePage, FrameQuery, FrameSummary, MethodStats, TraceStats, TraceSummary};
use acp_tee_shared::{Direction, FrameKind};
use base64::Engine;
use rusqlite::types::{Value, ValueRef};
use rusqlite::{params, params_from_iter, Connection, OptionalExtension, Row};

/// Columns read into a [`FrameSummary`], in `summary_from_row` order.
/// Frames shorter than [`super::PREVIEW_STORED_FROM`] have no stored preview: the
/// raw bytes come along (column 14) and the preview is made from them.
const SUMMARY_COLUMNS: &str = "f.seq, f.t_ns, f.dir, f.kind, f.rpc_id, f.method, f.session_id, f.reply_to_seq,
     f.latency_ns, length(f.raw), f.preview, f.protocol, f.mcp_method,
     CASE WHEN f.kind IN ('request', 'batch') THEN coalesce(
       (SELECT r.seq FROM frames r WHERE r.trace_id = f.trace_id AND r.reply_to_seq = f.seq LIMIT 1),
       (SELECT b.batch_seq FROM batch_replies b WHERE b.trace_id = f.trace_id AND b.request_seq = f.seq))
     END,
     CASE WHEN f.preview IS NULL AND length(f.raw) < 4096 THEN f.raw END";

fn summary_from_row(row: &Row<'_>) -> rusqlite::Result<FrameSummary> {
    let id: Option<String> = row.get(4)?;
    let kind = parse_name(3, row.get(3)?)?;
    let method: Option<String> = row.get(5)?;
    let preview = match row.get_ref(14)? {
        ValueRef::Blob(raw) | ValueRef::Text(raw) => crate::frame::preview(kind, method.as_deref(), raw),
        _ => row.get(10)?,
    };
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
        mcp: row.get::<_, String>(11)? == "mcp",
        mcp_method: row.get(12)?,
        reply_seq: row.get(13)?,
    })
}

/// A trace's fields, its recorder, where it was imported from and the time
/// of its last frame (the highest rowid in its range), for [`summary_of_trace`],
/// of the traces readers are shown (callers add `AND ...`).
fn summary_select() -> String {
    let bits = super::SEQ_BITS;
    format!(
        "SELECT {TRACE_COLUMNS}, recorder_pid, imported_from,
                (SELECT f.t_ns FROM frames f WHERE f.id > (t.id << {bits}) AND f.id < ((t.id + 1) << {bits})
                 ORDER BY f.id DESC LIMIT 1),
                relay_pid, client_pid
         FROM traces t WHERE {SHOWN}"
    )
}

fn summary_of_trace(row: &Row<'_>) -> rusqlite::Result<TraceSummary> {
    let meta = trace_from_row(row)?;
    let pid: Option<i64> = row.get(13)?;
    let live = meta.ended_at.is_none() && pid.is_some_and(process_exists);
    // The run is over, or about to be, when its relay or the client that
    // started it is gone (a client's end closes the relay's input).
    let gone = |col: usize| -> rusqlite::Result<bool> {
        Ok(row.get::<_, Option<i64>>(col)?.is_some_and(|pid| !process_exists(pid)))
    };
    let finishing = live && (gone(16)? || gone(17)?);
    Ok(TraceSummary {
        meta,
        live,
        finishing,
        last_t_ns: row.get::<_, Option<i64>>(15)?.unwrap_or(0),
        imported_from: row.get(14)?,
    })
}

/// Whether process `pid` is still running. A zombie is not: its process has
/// ended and only waits to be reaped (which may never happen in a container
/// whose init does not reap orphans).
pub(super) fn process_exists(pid: i64) -> bool {
    let Ok(pid) = libc::pid_t::try_from(pid) else { return false };
    if pid <= 0 {
        return false;
    }
    if let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        // The state follows the parenthesised command name.
        let state = stat.rsplit(')').next().and_then(|rest| rest.split_whitespace().next());
        return !matches!(state, Some("Z") | Some("X"));
    }
    // SAFETY: signal 0 only checks that the process exists.
    unsafe { libc::kill(pid, 0) == 0 || std::io::Error::last_os_error().raw_os_error() == Some(libc::EPERM) }
}

/// Registers the SQL functions queries call on `conn`: `acp_match` (the
/// search scan, see [`super::search`]) and `acp_errors` (error responses
/// in a frame).
pub(super) fn register_functions(conn: &Connection) -> rusqlite::Result<()> {
    use rusqlite::functions::FunctionFlags;
    super::search::register_match(conn)?;
    let flags = FunctionFlags::SQLITE_UTF8 | FunctionFlags::SQLITE_DETERMINISTIC | FunctionFlags::SQLITE_INNOCUOUS;
    conn.create_scalar_function("acp_errors", 1, flags, |ctx| {
        let (ValueRef::Blob(raw) | ValueRef::Text(raw)) = ctx.get_raw(0) else { return Ok(0i64) };
        Ok(crate::frame::classify_with(raw, false).error_count() as i64)
    })
}

/// True when `q` searches (its `q` has a word, even one that matches nothing).
fn searching(q: &FrameQuery) -> bool {
    q.q.as_deref().is_some_and(|t| !t.trim().is_empty())
}

/// What a frame query needs to know of the store besides its parameters.
struct Extra {
    /// The search, read once.
    search: Option<Search>,
    /// The trace has batches, so "errors only" must look into them.
    batches: bool,
}

/// A frame query's filters as SQL: the frames `f` (joined to the method's
/// spans `s` when a method is asked for), the conditions, their parameters
/// and the order in which the rows come out by frame id.
struct Filters {
    from: String,
    where_sql: String,
    args: Vec<Value>,
    order: &'static str,
}

/// The SQL for the frames of trace `trace_id` after seq `after` (0: from the
/// first) that match `q`'s filters (not its limit or offset).
fn filters(trace_id: i64, q: &FrameQuery, after: i64, extra: &Extra) -> Filters {
    let (lo, hi) = (frame_id(trace_id, after.max(0)), frame_id_bounds(trace_id).1);
    let mut args = Vec::new();
    let (from, mut sql, order) = match &q.method {
        // The method's spans in seq order, each read as a rowid range: rows
        // come out in frame order without a sort. Spans ending before
        // `after` are skipped by seeking to the one that holds it.
        Some(m) => {
            let bits = super::SEQ_BITS;
            args.extend([Value::Integer(lo + 1), Value::Integer(hi - 1)]);
            args.extend([Value::Integer(trace_id), Value::Text(m.clone())]);
            args.extend([Value::Integer(trace_id), Value::Text(m.clone()), Value::Integer(after.max(0))]);
            (
                format!(
                    "method_spans s JOIN frames f
                     ON f.id BETWEEN max((s.trace_id << {bits}) + s.first_seq, ?)
                             AND min((s.trace_id << {bits}) + s.last_seq, ?)"
                ),
                String::from(
                    "s.trace_id = ? AND s.method = ?
                     AND s.first_seq >= (SELECT coalesce(max(first_seq), 0) FROM method_spans
                                         WHERE trace_id = ? AND method = ? AND first_seq <= ?)",
                ),
                "s.first_seq, f.id",
            )
        }
        // The trace's frames are a rowid range.
        None => {
            args.extend([Value::Integer(lo), Value::Integer(hi)]);
            ("frames f".to_owned(), String::from("f.id > ? AND f.id < ?"), "f.id")
        }
    };
    // The trace_id column is named as well only where it leads an index
    // that serves the filter (latency, errors), and never inside a method's
    // spans: elsewhere it would tempt the planner off the rowid ranges.
    let errors_by_index = errors_only(q) && !(q.errors == Some(true) && extra.batches);
    if q.method.is_none() && (q.min_latency_ms.is_some() || errors_by_index) {
        sql.push_str(" AND f.trace_id = ?");
        args.push(Value::Integer(trace_id));
    }
    // Direction and kind are spelled as literals (names from a fixed set):
    // SQLite uses the partial index of errors only for the literal 'error'.
    if let Some(dir) = q.dir {
        sql.push_str(&format!(" AND f.dir = '{}'", dir.as_str()));
    }
    if let Some(kind) = q.kind {
        sql.push_str(&format!(" AND f.kind = '{}'", kind.as_str()));
    }
    if q.errors == Some(true) {
        let (error, batch) = (FrameKind::Error.as_str(), FrameKind::Batch.as_str());
        if extra.batches {
            // A batch holding an error response is one of the errors too.
            sql.push_str(&format!(" AND (f.kind = '{error}' OR (f.kind = '{batch}' AND acp_errors(f.raw) > 0))"));
        } else {
            sql.push_str(&format!(" AND f.kind = '{error}'"));
        }
    }
    let mut add = |clause: &str, v: Value| {
        sql.push_str(" AND ");
        sql.push_str(clause);
        args.push(v);
    };
    if let Some(s) = &q.session {
        add("f.session_id = ?", Value::Text(s.clone()));
    }
    if let Some(ms) = q.min_latency_ms {
        add("f.latency_ns >= ?", Value::Integer((ms * 1e6) as i64));
    }
    match extra.search.as_ref().and_then(|s| Some((s.fts_query()?, s.scan_arg()))) {
        // Indexed frames through FTS5; frames beyond the index (recorded
        // while recorders were busy) by cutting them into words the same way.
        Some((fts, scan)) => {
            sql.push_str(
                " AND (f.id IN (SELECT rowid FROM frames_fts WHERE frames_fts MATCH ?)
                       OR (f.seq > coalesce((SELECT indexed_seq FROM search_progress WHERE trace_id = ?), 0)
                           AND acp_match(f.raw, ?)))",
            );
            args.extend([Value::Text(fts), Value::Integer(trace_id), Value::Text(scan)]);
        }
        // Words without letters or digits only: nothing matches.
        None if searching(q) => sql.push_str(" AND 0"),
        None => {}
    }
    Filters { from, where_sql: sql, args, order }
}

/// True when `q` asks for error responses (by `errors` or by `kind`).
fn errors_only(q: &FrameQuery) -> bool {
    q.errors == Some(true) || q.kind == Some(FrameKind::Error)
}

/// How many frames of trace `trace_id` match `q`, from the per-kind counts,
/// when `q` filters on direction and kind alone; `None` otherwise.
fn count_by_kind(conn: &Connection, trace_id: i64, q: &FrameQuery, extra: &Extra) -> Result<Option<i64>, StoreError> {
    let FrameQuery { after: _, offset: _, limit: _, dir, kind, method, session, errors, min_latency_ms, q: _ } = q;
    if method.is_some() || session.is_some() || min_latency_ms.is_some() || searching(q) {
        return Ok(None);
    }
    // Which batches hold an error response is not counted anywhere.
    if *errors == Some(true) && extra.batches {
        return Ok(None);
    }
    let kind = match (*kind, *errors == Some(true)) {
        (Some(k), true) if k != FrameKind::Error => return Ok(Some(0)),
        (_, true) => Some(FrameKind::Error),
        (k, false) => k,
    };
    let total = conn
        .prepare_cached(
            "SELECT coalesce(sum(count), 0) FROM kind_counts
             WHERE trace_id = ?1 AND (?2 IS NULL OR dir = ?2) AND (?3 IS NULL OR kind = ?3)",
        )?
        .query_row(params![trace_id, dir.map(Direction::as_str), kind.map(FrameKind::as_str)], |r| r.get(0))?;
    Ok(Some(total))
}

/// How many frames of trace `trace_id` match `q`, from the method's spans,
/// when `q` filters on the method alone; `None` otherwise.
fn count_by_method(conn: &Connection, trace_id: i64, q: &FrameQuery) -> Result<Option<i64>, StoreError> {
    let Some(method) = method_alone(q) else { return Ok(None) };
    let total = conn
        .prepare_cached(
            "SELECT coalesce(sum(last_seq - first_seq + 1), 0) FROM method_spans WHERE trace_id = ?1 AND method = ?2",
        )?
        .query_row(params![trace_id, method], |r| r.get(0))?;
    Ok(Some(total))
}

/// The method `q` filters on, when it filters on nothing else.
fn method_alone(q: &FrameQuery) -> Option<&str> {
    let FrameQuery { after: _, offset: _, limit: _, dir, kind, method, session, errors, min_latency_ms, q: _ } = q;
    let others = dir.is_some() || kind.is_some() || session.is_some() || *errors == Some(true);
    let (Some(method), false, None, false) = (method, others, min_latency_ms, searching(q)) else { return None };
    Some(method)
}

/// The seq after which the frame at `offset` (from 0) of trace `trace_id`'s
/// frames with `method` comes, read from the method's spans; past the last
/// one when there are not that many.
fn seq_before_method_offset(conn: &Connection, trace_id: i64, method: &str, offset: i64) -> Result<i64, StoreError> {
    let mut spans = conn.prepare_cached(
        "SELECT first_seq, last_seq FROM method_spans WHERE trace_id = ?1 AND method = ?2 ORDER BY first_seq",
    )?;
    let mut rows = spans.query(params![trace_id, method])?;
    // Frames of the spans before this one.
    let mut before = 0;
    while let Some(row) = rows.next()? {
        let (first, last): (i64, i64) = (row.get(0)?, row.get(1)?);
        let len = last - first + 1;
        if before + len > offset {
            return Ok(first - 1 + (offset - before));
        }
        before += len;
    }
    Ok((1 << super::SEQ_BITS) - 1)
}

/// The highest seq trace `trace_id` has stored (0 for none): one seek.
fn last_seq(conn: &Connection, trace_id: i64) -> Result<i64, StoreError> {
    let (lo, hi) = frame_id_bounds(trace_id);
    let last: Option<i64> =
        conn.query_row("SELECT max(id) FROM frames WHERE id > ?1 AND id < ?2", params![lo, hi], |r| r.get(0))?;
    Ok(last.map_or(0, |id| id - lo))
}

fn has_filters(q: &FrameQuery) -> bool {
    let FrameQuery { after: _, offset: _, limit: _, dir, kind, method, session, errors, min_latency_ms, q: _ } = q;
    dir.is_some()
        || kind.is_some()
        || method.is_some()
        || session.is_some()
        || *errors == Some(true)
        || min_latency_ms.is_some()
        || searching(q)
}

impl Store {
    /// Every trace with its live state, newest first.
    pub fn trace_summaries(&self) -> Result<Vec<TraceSummary>, StoreError> {
        let sql = format!("{} ORDER BY t.id DESC", summary_select());
        let summaries = self.conn.prepare(&sql)?.query_map([], summary_of_trace)?.collect::<Result<_, _>>()?;
        Ok(summaries)
    }

    /// One trace with its live state. A trace without an end whose recorder
    /// process is gone was cut off (both acp-tee processes killed): not live.
    pub fn trace_summary(&self, id: i64) -> Result<TraceSummary, StoreError> {
        let sql = format!("{} AND t.id = ?1", summary_select());
        self.conn.query_row(&sql, params![id], summary_of_trace).optional()?.ok_or(StoreError::NoSuchTrace(id))
    }

    /// A page of the frames of trace `trace_id` matching `q`, in seq order.
    /// `q` must already be validated (limit within bounds).
    pub fn frame_page(&self, trace_id: i64, q: &FrameQuery) -> Result<FramePage, StoreError> {
        let meta = self.trace(trace_id)?;
        let limit = q.limit.unwrap_or(200);
        let extra = Extra {
            search: q.q.as_deref().filter(|_| searching(q)).map(|t| search::parse(&self.conn, t)).transpose()?,
            batches: q.errors == Some(true) && self.has_batches(trace_id)?,
        };
        let known_total = if !has_filters(q) {
            Some(meta.frame_count)
        } else if let Some(n) = count_by_kind(&self.conn, trace_id, q, &extra)? {
            Some(n)
        } else {
            count_by_method(&self.conn, trace_id, q)?
        };
        let (mut after, mut offset) = (q.after, q.offset.unwrap_or(0));
        // Unfiltered and without gaps, the frame at offset n has seq n + 1: a
        // seek instead of stepping over n rows, so deep pages of a huge trace
        // cost what the first does. The trace has no gap when its last seq is
        // its count of frames stored; `missing_frames` cannot tell (frames
        // may be missing at the end only, a live trace counts its missing
        // frames when it ends, and older imports took a file's word for it).
        if !has_filters(q) && after.is_none() && last_seq(&self.conn, trace_id)? == meta.frame_count {
            after = Some(offset);
            offset = 0;
        }
        // Filtered on a method alone, every seq of a span is a match: whole
        // spans are stepped over by their lengths, not row by row.
        if let (Some(method), None, true) = (method_alone(q), after, offset > 0) {
            after = Some(seq_before_method_offset(&self.conn, trace_id, method, offset)?);
            offset = 0;
        }
        let Filters { from, where_sql, mut args, order } = filters(trace_id, q, after.unwrap_or(0), &extra);
        args.push(Value::Integer(limit + 1));
        args.push(Value::Integer(offset));
        let page_sql =
            format!("SELECT {SUMMARY_COLUMNS} FROM {from} WHERE {where_sql} ORDER BY {order} LIMIT ? OFFSET ?");
        let mut frames: Vec<FrameSummary> = self
            .conn
            .prepare(&page_sql)?
            .query_map(params_from_iter(args.iter()), summary_from_row)?
            .collect::<Result<_, _>>()?;
        let has_more = frames.len() as i64 > limit;
        frames.truncate(limit as usize);
        let total = match known_total {
            Some(n) => n,
            // A page that is not full scanned to the trace's end: from the
            // first match on, it saw all of them (skipping `offset`), so a
            // rare word is searched for in one scan, not two.
            None if q.after.is_none() && !has_more && (!frames.is_empty() || offset == 0) => {
                offset + frames.len() as i64
            }
            None => {
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
        let sql =
            format!("SELECT {SUMMARY_COLUMNS} FROM frames f WHERE f.id > ?1 AND f.id < ?2 ORDER BY f.id LIMIT ?3");
        let (start, end) = (frame_id(trace_id, after.max(0)), frame_id_bounds(trace_id).1);
        let frames: rusqlite::Result<Vec<FrameSummary>> =
            self.conn.prepare(&sql)?.query_map(params![start, end, limit], summary_from_row)?.collect();
        Ok(frames?)
    }

    fn frame_summary(&self, trace_id: i64, seq: i64) -> Result<Option<FrameSummary>, StoreError> {
        let sql = format!("SELECT {SUMMARY_COLUMNS} FROM frames f WHERE f.id = ?1 AND f.seq = ?2");
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
        let (raw, raw_base64) = match String::from_utf8(raw) {
            Ok(text) => (Some(text), None),
            Err(e) => (None, Some(base64::engine::general_purpose::STANDARD.encode(e.into_bytes()))),
        };
        let envelope = envelope.map(|e| String::from_utf8_lossy(&e).into_owned());
        Ok(Some(FrameDetail { frame, raw, raw_base64, envelope, pair }))
    }

    /// Per-method timing, the slowest responses and frames per direction,
    /// read from the aggregates the recorder keeps (see `stats.rs`), so the
    /// cost does not grow with the trace.
    pub fn trace_stats(&self, trace_id: i64) -> Result<TraceStats, StoreError> {
        self.trace(trace_id)?;
        let mut methods: Vec<MethodStats> = self
            .conn
            .prepare("SELECT method, count, errors, answered, max_ns FROM method_stats WHERE trace_id = ?1")?
            .query_map(params![trace_id], |r| {
                Ok(MethodStats {
                    method: r.get(0)?,
                    count: r.get(1)?,
                    errors: r.get(2)?,
                    answered: r.get(3)?,
                    p50_ns: None,
                    p95_ns: None,
                    p99_ns: None,
                    max_ns: r.get(4)?,
                    histogram: Vec::new(),
                })
            })?
            .collect::<Result<_, _>>()?;
        let mut buckets = self
            .conn
            .prepare("SELECT bucket, count FROM latency_buckets WHERE trace_id = ?1 AND method = ?2 ORDER BY bucket")?;
        for m in &mut methods {
            let rows: Vec<(i64, i64)> = buckets
                .query_map(params![trace_id, m.method], |r| Ok((r.get(0)?, r.get(1)?)))?
                .collect::<Result<_, _>>()?;
            super::stats::fill_from_buckets(m, &rows);
        }
        methods.sort_by(|a, b| b.count.cmp(&a.count).then_with(|| a.method.cmp(&b.method)));
        let slowest_sql = format!(
            "SELECT {SUMMARY_COLUMNS} FROM frames f WHERE f.trace_id = ?1 AND f.latency_ns IS NOT NULL
             ORDER BY f.latency_ns DESC LIMIT 20"
        );
        let slowest = self
            .conn
            .prepare(&slowest_sql)?
            .query_map(params![trace_id], summary_from_row)?
            .collect::<Result<_, _>>()?;
        let mut per_direction = vec![0; Direction::ALL.len()];
        let mut stmt = self.conn.prepare("SELECT dir, sum(count) FROM kind_counts WHERE trace_id = ?1 GROUP BY dir")?;
        let rows = stmt.query_map(params![trace_id], |r| Ok((r.get::<_, String>(0)?, r.get::<_, i64>(1)?)))?;
        for row in rows {
            let (dir, n) = row?;
            if let Some(i) = Direction::ALL.iter().position(|d| d.as_str() == dir) {
                per_direction[i] = n;
            }
        }
        Ok(TraceStats { methods, slowest, per_direction })
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

#[cfg(test)]
mod tests {
    use super::*;

    use crate::store::test_start;

    /// No search, no batches.
    const NO_EXTRA: Extra = Extra { search: None, batches: false };

    #[test]
    fn the_scan_answers_as_the_index_does() {
        // Every text, indexed in a table of its own, and searched for every
        // word both ways.
        let store = Store::in_memory().unwrap();
        let long_accented = format!("é {} alpha beta gamma {} beta", "word ".repeat(40), "x ".repeat(20));
        let long_plain = format!("{} alpha beta gamma delta", "a-b ".repeat(30));
        let texts: [&[u8]; 14] = [
            long_accented.as_bytes(),
            long_plain.as_bytes(),
            b"{\"text\":\"Purple ELEPHANTS\"}",
            b"token7 token70 xtoken7y",
            "Émile écrit À PARIS, ÜNÏ ünï uni".as_bytes(),
            b"bad \xff\xfe UTF-8 Zebra",
            b"",
            b"ab\x00cd ZEBRA",
            b"this OR that; an error for s%d and 5%",
            b"session/prompt then prompt session",
            "ＦＵＬＬ width ﬁ ligature straße STRASSE".as_bytes(),
            "日本語のテキスト 中文".as_bytes(),
            b"a_b snake_case camelCase x-y",
            b"\\u00fcn \\n newline",
        ];
        store
            .conn
            .execute_batch("CREATE VIRTUAL TABLE t USING fts5 (text, content = '', tokenize = 'unicode61')")
            .unwrap();
        for (i, text) in texts.iter().enumerate() {
            store
                .conn
                .execute(
                    "INSERT INTO t (rowid, text) VALUES (?1, ?2)",
                    params![i as i64, String::from_utf8_lossy(text)],
                )
                .unwrap();
        }
        let words = [
            "elephants",
            "purple elephants",
            "zebra",
            "émile",
            "emile",
            "à paris",
            "paris",
            "cd",
            "ab",
            "token7",
            "or",
            "OR",
            "s%",
            "5%",
            "ünï",
            "UNI",
            "session/prompt",
            "prompt/session",
            "full",
            "ＦＵＬＬ",
            "ﬁ",
            "fi",
            "straße",
            "strasse",
            "日本語のテキスト",
            "中文",
            "a_b",
            "snake",
            "camelcase",
            "x-y",
            "u00fcn",
            "n",
            "\"purple",
            "purple\"",
            "ZEBRA ab",
            "e\u{301}mile",
            "alpha/beta/gamma",
            "gamma/alpha",
            "beta/gamma/delta",
            "word/word/word/alpha",
            "b/a/b",
            "x/x/x/x/beta",
        ];
        let mut compared = 0;
        for word in words {
            let search = search::parse(&store.conn, word).unwrap();
            let Some(fts) = search.fts_query() else { continue };
            let indexed: Vec<i64> = store
                .conn
                .prepare("SELECT rowid FROM t WHERE t MATCH ?1 ORDER BY rowid")
                .unwrap()
                .query_map(params![fts], |r| r.get(0))
                .unwrap()
                .collect::<Result<_, _>>()
                .unwrap();
            let scanned: Vec<i64> = (0..texts.len() as i64)
                .filter(|&i| {
                    store
                        .conn
                        .query_row("SELECT acp_match(?1, ?2)", params![texts[i as usize], search.scan_arg()], |r| {
                            r.get(0)
                        })
                        .unwrap()
                })
                .collect();
            assert_eq!(scanned, indexed, "{word:?}");
            compared += 1;
        }
        assert_eq!(compared, words.len());
    }

    #[test]
    fn trace_summaries_in_one_query_match_each_trace_summary() {
        use crate::handoff::TraceEnd;
        use crate::recorder::Framer;
        let mut store = Store::in_memory().unwrap();
        let me = std::process::id();
        let ended = store.create_trace(&test_start(), me).unwrap();
        let empty = store.create_trace(&test_start(), me).unwrap();
        let gone = store.create_trace(&test_start(), u32::MAX / 2).unwrap();
        let mut framer = Framer::new();
        let mut frames = |t: u64| {
            let mut out = Vec::new();
            framer.chunk(Direction::ClientToAgent, t, b"{\"id\":1,\"method\":\"a\"}\n", |f| out.push(f));
            out
        };
        store.insert_frames(ended, &frames(5)).unwrap();
        store.insert_frames(gone, &frames(7)).unwrap();
        // A later frame of an older trace, stored after a newer trace's.
        store.insert_frames(ended, &frames(9)).unwrap();
        let end = TraceEnd { exit_code: Some(0), exit_signal: None, end_reason: "done".into() };
        store.finish_trace(ended, &end, 0, "2026-01-01T00:00:01Z").unwrap();

        let all = store.trace_summaries().unwrap();
        let got: Vec<(i64, i64, bool)> = all.iter().map(|t| (t.meta.id, t.last_t_ns, t.live)).collect();
        assert_eq!(got, [(gone, 7, false), (empty, 0, true), (ended, 9, false)]);
        for t in &all {
            assert_eq!(&store.trace_summary(t.meta.id).unwrap(), t);
        }
        assert!(matches!(store.trace_summary(gone + 1), Err(StoreError::NoSuchTrace(_))));
    }

    #[test]
    fn previews_of_short_frames_are_made_on_reading_as_the_recorder_made_them() {
        use crate::recorder::Framer;
        assert!(SUMMARY_COLUMNS.contains(&format!("length(f.raw) < {}", super::super::PREVIEW_STORED_FROM)));
        let long_text = "word ".repeat(1000);
        let to_agent = format!(
            "{}\n{}\n{}\n{}\n",
            r#"{"jsonrpc":"2.0","id":1,"method":"session/prompt","params":{"sessionId":"s","prompt":[{"type":"image"},{"type":"text","text":"Fix\n  the   bug"}]}}"#,
            r#"{"jsonrpc":"2.0","id":2,"method":"initialize","params":{}}"#,
            "not json at all",
            r#"[{"jsonrpc":"2.0","method":"a"}]"#,
        );
        let to_client = format!(
            "{}\n{}\n{}\n{}\n{}\n",
            r#"{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"H\u00e9llo\tthere"}}}}"#,
            r#"{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":{"sessionUpdate":"tool_call","title":"Read","status":"pending"}}}"#,
            r#"{"jsonrpc":"2.0","id":1,"error":{"code":-32603,"message":"boom"}}"#,
            r#"{"jsonrpc":"2.0","id":2,"result":{"protocolVersion":1}}"#,
            format_args!(
                r#"{{"jsonrpc":"2.0","method":"session/update","params":{{"update":{{"sessionUpdate":"agent_message_chunk","content":{{"type":"text","text":"{long_text}"}}}}}}}}"#
            ),
        );
        let stderr = "\u{1b}[32mINFO\u{1b}[0m agent started\n";
        let mut framer = Framer::new();
        let mut frames = Vec::new();
        framer.chunk(Direction::ClientToAgent, 1, to_agent.as_bytes(), |f| frames.push(f));
        framer.chunk(Direction::AgentToClient, 2, to_client.as_bytes(), |f| frames.push(f));
        framer.chunk(Direction::AgentStderr, 3, stderr.as_bytes(), |f| frames.push(f));
        // What the recorder stored for every frame before short frames lost
        // their stored preview: classify's, or the text of stderr and
        // unparsable lines.
        let recorded: Vec<Option<String>> = frames
            .iter()
            .map(|f| match f.kind {
                FrameKind::Stderr | FrameKind::Invalid => crate::frame::text_preview(&f.raw),
                _ => crate::frame::classify(&f.raw).preview,
            })
            .collect();
        assert_eq!(recorded.iter().filter(|p| p.is_some()).count(), 7, "{recorded:?}");
        let stored: Vec<bool> = frames.iter().map(|f| f.preview.is_some()).collect();
        assert_eq!(stored, frames.iter().map(|f| f.raw.len() >= 4096).collect::<Vec<_>>());
        assert_eq!(stored.iter().filter(|s| **s).count(), 1);

        let mut store = Store::in_memory().unwrap();
        let id = store.create_trace(&test_start(), 1).unwrap();
        store.insert_frames(id, &frames).unwrap();
        let page = store.frame_page(id, &FrameQuery::default()).unwrap();
        let read: Vec<Option<String>> = page.frames.into_iter().map(|f| f.preview).collect();
        assert_eq!(read, recorded);
    }

    #[test]
    fn search_finds_frames_before_and_after_indexing() {
        use crate::recorder::Framer;
        let mut store = Store::in_memory().unwrap();
        let start = test_start();
        let id = store.create_trace(&start, 1).unwrap();
        let mut framer = Framer::new();
        let mut frames = Vec::new();
        let lines = b"{\"id\":1,\"method\":\"session/prompt\",\"params\":{\"text\":\"Purple Elephants\"}}\n{\"method\":\"x\",\"params\":{\"text\":\"grey mice\"}}\n";
        framer.chunk(Direction::ClientToAgent, 5, lines, |f| frames.push(f));
        store.insert_frames(id, &frames).unwrap();
        let search = |store: &Store, words: &str| {
            let q = FrameQuery { q: Some(words.into()), ..FrameQuery::default() };
            store.frame_page(id, &q).unwrap().frames.iter().map(|f| f.seq).collect::<Vec<_>>()
        };
        // Not indexed yet: found by scanning.
        assert_eq!(search(&store, "purple elephants"), [1]);
        assert_eq!(search(&store, "mice"), [2]);
        assert_eq!(search(&store, "purple mice"), Vec::<i64>::new());
        // Punctuation: a query of punctuation alone matches nothing (though
        // both frames hold `{`), a word of it beside others is ignored.
        let cut_words = ["_", "{", "mice _", "session/prompt", "\"grey"];
        let scanned: Vec<Vec<i64>> = cut_words.iter().map(|w| search(&store, w)).collect();
        assert_eq!(scanned, [vec![], vec![], vec![2], vec![1], vec![2]]);
        assert_eq!(store.index_for_search(1).unwrap(), 1);
        assert_eq!(store.index_for_search(10).unwrap(), 1);
        assert_eq!(store.index_for_search(10).unwrap(), 0);
        // Indexed: found through FTS5, the same answers.
        assert_eq!(search(&store, "purple elephants"), [1]);
        assert_eq!(search(&store, "mice"), [2]);
        assert_eq!(search(&store, "purple mice"), Vec::<i64>::new());
        let indexed_answers: Vec<Vec<i64>> = cut_words.iter().map(|w| search(&store, w)).collect();
        assert_eq!(indexed_answers, scanned);
        let indexed: i64 = store.conn.query_row("SELECT count(*) FROM frames_fts", [], |r| r.get(0)).unwrap();
        assert_eq!(indexed, 2);
    }

    #[test]
    fn offsets_count_frames_even_across_missing_ones() {
        use crate::handoff::TraceEnd;
        use crate::recorder::Framer;
        let mut store = Store::in_memory().unwrap();
        let start = test_start();
        let page = |store: &Store, id: i64, offset: i64| {
            let q = FrameQuery { offset: Some(offset), limit: Some(2), ..FrameQuery::default() };
            store.frame_page(id, &q).unwrap().frames.iter().map(|f| f.seq).collect::<Vec<_>>()
        };
        let mut framer = Framer::new();
        let mut frames = Vec::new();
        framer.chunk(Direction::AgentStderr, 1, b"1\n2\n3\n4\n5\n6\n", |f| frames.push(f));
        let whole = store.create_trace(&start, 1).unwrap();
        store.insert_frames(whole, &frames).unwrap();
        assert_eq!(page(&store, whole, 2), [3, 4]);
        // A store that failed for frames 3 and 4 left a gap in seq.
        let gappy = store.create_trace(&start, 1).unwrap();
        frames.retain(|f| f.seq != 3 && f.seq != 4);
        store.insert_frames(gappy, &frames).unwrap();
        let end = TraceEnd { exit_code: Some(0), exit_signal: None, end_reason: "x".into() };
        store.finish_trace(gappy, &end, 2, "2026-01-01T00:00:01Z").unwrap();
        assert_eq!(page(&store, gappy, 2), [5, 6]);
        assert_eq!(page(&store, gappy, 0), [1, 2]);
    }

    /// Two traces of every direction and kind (errors few), stored in
    /// several batches, the first trace's frames interleaved with the second's.
    fn store_of_every_kind() -> (Store, [i64; 2]) {
        use crate::recorder::Framer;
        let mut store = Store::in_memory().unwrap();
        let ids = [store.create_trace(&test_start(), 1).unwrap(), store.create_trace(&test_start(), 1).unwrap()];
        let mut framers = [Framer::new(), Framer::new()];
        for round in 0..40u64 {
            for (t, framer) in framers.iter_mut().enumerate() {
                let mut frames = Vec::new();
                let to_agent = format!("{{\"id\":{round},\"method\":\"m\"}}\n{{\"method\":\"n\"}}\nnot json\n");
                let reply = if round % 9 == t as u64 {
                    format!("{{\"id\":{round},\"error\":{{\"code\":1,\"message\":\"no\"}}}}\n")
                } else {
                    format!("{{\"id\":{round},\"result\":{{}}}}\n")
                };
                let to_client = format!("{reply}{{\"method\":\"u\"}}\n[{{\"method\":\"b\"}}]\n");
                framer.chunk(Direction::ClientToAgent, round, to_agent.as_bytes(), |f| frames.push(f));
                framer.chunk(Direction::AgentToClient, round, to_client.as_bytes(), |f| frames.push(f));
                framer.chunk(Direction::AgentStderr, round, b"log line\n", |f| frames.push(f));
                store.insert_frames(ids[t], &frames).unwrap();
            }
        }
        (store, ids)
    }

    #[test]
    fn totals_of_direction_and_kind_filters_come_from_the_counts_and_match_the_frames() {
        let (store, ids) = store_of_every_kind();
        let mut checked = 0;
        for id in ids {
            let all = store.frame_page(id, &FrameQuery { limit: Some(1000), ..FrameQuery::default() }).unwrap();
            assert_eq!(all.frames.len(), 40 * 7);
            let dirs = std::iter::once(None).chain(Direction::ALL.map(Some));
            for dir in dirs {
                for kind in std::iter::once(None).chain(FrameKind::ALL.map(Some)) {
                    for errors in [None, Some(true)] {
                        let q = FrameQuery { dir, kind, errors, limit: Some(1000), ..FrameQuery::default() };
                        let want: Vec<i64> = all
                            .frames
                            .iter()
                            .filter(|f| dir.is_none_or(|d| f.dir == d) && kind.is_none_or(|k| f.kind == k))
                            .filter(|f| errors.is_none() || f.kind == FrameKind::Error)
                            .map(|f| f.seq)
                            .collect();
                        let counted = count_by_kind(&store.conn, id, &q, &NO_EXTRA).unwrap();
                        assert_eq!(counted, Some(want.len() as i64), "{q:?}");
                        let page = store.frame_page(id, &q).unwrap();
                        assert_eq!(page.total, want.len() as i64, "{q:?}");
                        assert_eq!(page.frames.iter().map(|f| f.seq).collect::<Vec<_>>(), want, "{q:?}");
                        checked += 1;
                    }
                }
            }
        }
        assert_eq!(checked, 2 * 4 * 8 * 2);
        // Other filters are counted from the frames.
        let q = FrameQuery { errors: Some(true), method: Some("m".into()), ..FrameQuery::default() };
        assert_eq!(count_by_kind(&store.conn, ids[0], &q, &NO_EXTRA).unwrap(), None);
        assert_eq!(store.frame_page(ids[0], &q).unwrap().total, 5);
        let stats = store.trace_stats(ids[1]).unwrap();
        assert_eq!(stats.per_direction, [120, 120, 40]);
    }

    #[test]
    fn method_filters_read_the_spans_and_match_the_frames() {
        let (store, ids) = store_of_every_kind();
        let mut checked = 0;
        for id in ids {
            let all = store.frame_page(id, &FrameQuery { limit: Some(1000), ..FrameQuery::default() }).unwrap();
            let mut methods: Vec<String> = all.frames.iter().filter_map(|f| f.method.clone()).collect();
            methods.sort();
            methods.dedup();
            assert_eq!(methods, ["m", "n", "u"]);
            methods.push("none such".into());
            for method in &methods {
                for dir in std::iter::once(None).chain(Direction::ALL.map(Some)) {
                    for kind in std::iter::once(None).chain(FrameKind::ALL.map(Some)) {
                        for errors in [None, Some(true)] {
                            let q =
                                FrameQuery { method: Some(method.clone()), dir, kind, errors, ..FrameQuery::default() };
                            let want: Vec<i64> = all
                                .frames
                                .iter()
                                .filter(|f| f.method.as_ref() == Some(method))
                                .filter(|f| dir.is_none_or(|d| f.dir == d) && kind.is_none_or(|k| f.kind == k))
                                .filter(|f| errors.is_none() || f.kind == FrameKind::Error)
                                .map(|f| f.seq)
                                .collect();
                            // Paged 7 at a time, from each page's last seq.
                            let mut got = Vec::new();
                            let mut after = None;
                            loop {
                                let page =
                                    store.frame_page(id, &FrameQuery { after, limit: Some(7), ..q.clone() }).unwrap();
                                assert_eq!(page.total, want.len() as i64, "{q:?}");
                                got.extend(page.frames.iter().map(|f| f.seq));
                                after = got.last().copied();
                                if !page.has_more {
                                    break;
                                }
                            }
                            assert_eq!(got, want, "{q:?}");
                            // And by offset, up to past the end.
                            for offset in [1, 3, 17, want.len().saturating_sub(2), want.len(), want.len() + 5] {
                                let q = FrameQuery { offset: Some(offset as i64), limit: Some(5), ..q.clone() };
                                let page = store.frame_page(id, &q).unwrap();
                                let tail: Vec<i64> = want.iter().copied().skip(offset).take(5).collect();
                                assert_eq!(page.frames.iter().map(|f| f.seq).collect::<Vec<_>>(), tail, "{q:?}");
                                assert_eq!(page.has_more, offset + 5 < want.len(), "{q:?}");
                                assert_eq!(page.total, want.len() as i64, "{q:?}");
                            }
                            checked += 1;
                        }
                    }
                }
            }
        }
        assert_eq!(checked, 2 * 4 * 4 * 8 * 2);
    }

    #[test]
    fn method_filters_page_through_the_spans_without_sorting() {
        let (store, ids) = store_of_every_kind();
        for q in [
            FrameQuery { method: Some("m".into()), ..FrameQuery::default() },
            FrameQuery { method: Some("m".into()), errors: Some(true), ..FrameQuery::default() },
            FrameQuery { method: Some("u".into()), dir: Some(Direction::AgentToClient), ..FrameQuery::default() },
            FrameQuery { method: Some("m".into()), min_latency_ms: Some(0.0), ..FrameQuery::default() },
        ] {
            let plan = plan(&store, ids[1], &q);
            assert!(plan.contains("method_spans"), "{q:?}: {plan}");
            assert!(!plan.contains("TEMP B-TREE"), "{q:?}: {plan}");
        }
    }

    /// The query plan of the page query for `q` on trace `trace_id`.
    fn plan(store: &Store, trace_id: i64, q: &FrameQuery) -> String {
        let Filters { from, where_sql, args, order } = filters(trace_id, q, 0, &NO_EXTRA);
        let sql = format!("EXPLAIN QUERY PLAN SELECT {SUMMARY_COLUMNS} FROM {from} WHERE {where_sql} ORDER BY {order}");
        let rows: Vec<String> = store
            .conn
            .prepare(&sql)
            .unwrap()
            .query_map(params_from_iter(args.iter()), |r| r.get(3))
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap();
        rows.join("; ")
    }

    #[test]
    fn errors_only_pages_through_the_index_of_errors() {
        let (store, ids) = store_of_every_kind();
        let plan = |q: &FrameQuery| plan(&store, ids[0], q);
        for q in [
            FrameQuery { errors: Some(true), ..FrameQuery::default() },
            FrameQuery { kind: Some(FrameKind::Error), ..FrameQuery::default() },
            FrameQuery { errors: Some(true), dir: Some(Direction::AgentToClient), ..FrameQuery::default() },
        ] {
            let plan = plan(&q);
            assert!(plan.contains("frames_errors"), "{q:?}: {plan}");
            assert!(!plan.contains("TEMP B-TREE"), "{q:?}: {plan}");
        }
        let plan = plan(&FrameQuery { kind: Some(FrameKind::Notification), ..FrameQuery::default() });
        assert!(!plan.contains("frames_errors"), "{plan}");
    }
}
