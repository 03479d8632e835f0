//! A frame query's filters as SQL, and the counts that let a page skip
//! scanning (by kind, by method, the last seq). Every value from a request
//! is a bound parameter; only direction and kind names, from their fixed
//! sets, are written into the SQL.

use super::*;

/// A frame query's filters as SQL: the frames `f` (joined to the method's
/// spans `s` when a method is asked for), the conditions, their parameters
/// and the order in which the rows come out by frame id.
pub(super) struct Filters {
    pub(super) from: String,
    pub(super) where_sql: String,
    pub(super) args: Vec<Value>,
    pub(super) order: &'static str,
}

/// The SQL for the frames of trace `trace_id` after seq `after` (0: from the
/// first) that match `q`'s filters (not its limit or offset).
pub(super) fn filters(trace_id: i64, q: &FrameQuery, after: i64, extra: &Extra) -> Filters {
    let after = after.max(range_after(q));
    let hi = match q.to {
        Some(to) => frame_id(trace_id, to.clamp(0, crate::MAX_SEQ) + 1),
        None => frame_id_bounds(trace_id).1,
    };
    let lo = frame_id(trace_id, after.max(0));
    let mut args = Vec::new();
    let (from, mut sql, order) = match &q.method {
        // The method's spans in seq order, each read as a rowid range: rows
        // come out in frame order without a sort. Spans ending before
        // `after` are skipped by seeking to the one that holds it.
        Some(m) => {
            let bits = crate::SEQ_BITS;
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
    row_conditions(q, extra, &mut sql, &mut args);
    match &extra.search {
        // Every frame is cut into words the way FTS5 cuts them: this is how
        // the frames beyond the index are searched ([`indexed_matches`]
        // finds the others).
        Some(search) if search.has_words() => {
            sql.push_str(if extra.seen { " AND acp_seen_match(f.raw, ?)" } else { " AND acp_match(f.raw, ?)" });
            args.push(Value::Text(search.scan_arg()));
        }
        // Words without letters or digits only: nothing matches.
        _ if searching(q) => sql.push_str(" AND 0"),
        _ => {}
    }
    Filters { from, where_sql: sql, args, order }
}

/// Adds `q`'s conditions on a frame's own columns (direction, kind,
/// errors, session, latency) to `sql` and their values to `args`.
pub(super) fn row_conditions(q: &FrameQuery, extra: &Extra, sql: &mut String, args: &mut Vec<Value>) {
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
        add("f.latency_ns >= ?", Value::Integer(latency_ns(ms)));
    }
}

/// A latency filter's milliseconds as the nanoseconds it compares.
pub(super) fn latency_ns(ms: f64) -> i64 {
    (ms * 1e6) as i64
}

/// The SQL for the frames of trace `trace_id` with seq in `after + 1 ..=
/// upto` that the search index `fts` matches and that match `q`'s other
/// filters: FTS5 reads its lists of frames for the words within the rowid
/// range in rowid order (no match outside it is read, none is collected
/// or sorted), and each match is joined to its frame for the filters and
/// the page. So a page costs its rows (and those it skips), whether the
/// word is rare or in every frame. `upto` must not pass the trace's
/// `search_progress.indexed_seq`.
pub(super) fn indexed_matches(
    trace_id: i64,
    q: &FrameQuery,
    after: i64,
    upto: i64,
    fts: String,
    extra: &Extra,
) -> Filters {
    let (after, upto) = (after.max(range_after(q)), upto.min(q.to.unwrap_or(upto)));
    let mut args = vec![
        Value::Text(fts),
        Value::Integer(frame_id(trace_id, after.max(0))),
        Value::Integer(frame_id(trace_id, upto.max(after).max(0))),
    ];
    // The index leads (CROSS JOIN keeps it outside): its rowid order is
    // the page's order.
    let mut sql = String::from("frames_fts MATCH ? AND frames_fts.rowid > ? AND frames_fts.rowid <= ?");
    if let Some(m) = &q.method {
        // The same frames as the method's spans (every frame with a method
        // is in one of its spans).
        sql.push_str(" AND f.method = ?");
        args.push(Value::Text(m.clone()));
    }
    row_conditions(q, extra, &mut sql, &mut args);
    // The index has the stored text: a match a masking reader would not see
    // (the word only inside a masked value) is checked away.
    if let Some(search) = extra.search.as_ref().filter(|_| extra.seen) {
        sql.push_str(" AND acp_seen_match(f.raw, ?)");
        args.push(Value::Text(search.scan_arg()));
    }
    Filters {
        from: "frames_fts CROSS JOIN frames f ON f.id = frames_fts.rowid".to_owned(),
        where_sql: sql,
        args,
        order: "frames_fts.rowid",
    }
}

/// The seq after which `q`'s range begins (0: at the first frame).
pub(super) fn range_after(q: &FrameQuery) -> i64 {
    q.from.map_or(0, |from| (from - 1).clamp(0, crate::MAX_SEQ))
}

/// How many seqs `q`'s range holds of a gap-free trace of `count` frames.
pub(super) fn range_len(q: &FrameQuery, count: i64) -> i64 {
    let last = q.to.map_or(count, |to| to.min(count));
    (last - range_after(q)).max(0)
}

/// True when `q` asks for error responses (by `errors` or by `kind`).
pub(super) fn errors_only(q: &FrameQuery) -> bool {
    q.errors == Some(true) || q.kind == Some(FrameKind::Error)
}

/// How many frames of trace `trace_id` match `q`, which filters on
/// direction, kind and errors alone ([`TotalPlan::KindCounts`]), from the
/// per-kind counts.
pub(super) fn count_by_kind(conn: &Connection, trace_id: i64, q: &FrameQuery) -> Result<i64, StoreError> {
    let kind = match (q.kind, q.errors == Some(true)) {
        (Some(k), true) if k != FrameKind::Error => return Ok(0),
        (_, true) => Some(FrameKind::Error),
        (k, false) => k,
    };
    let total = conn
        .prepare_cached(
            "SELECT coalesce(sum(count), 0) FROM kind_counts
             WHERE trace_id = ?1 AND (?2 IS NULL OR dir = ?2) AND (?3 IS NULL OR kind = ?3)",
        )?
        .query_row(params![trace_id, q.dir.map(Direction::as_str), kind.map(FrameKind::as_str)], |r| r.get(0))?;
    Ok(total)
}

/// How many frames of trace `trace_id` have `method` ([`TotalPlan::MethodSpans`]),
/// from the method's spans.
pub(super) fn count_by_method(conn: &Connection, trace_id: i64, method: &str) -> Result<i64, StoreError> {
    let total = conn
        .prepare_cached(
            "SELECT coalesce(sum(last_seq - first_seq + 1), 0) FROM method_spans WHERE trace_id = ?1 AND method = ?2",
        )?
        .query_row(params![trace_id, method], |r| r.get(0))?;
    Ok(total)
}

/// The method `q` filters on, when it filters on nothing else.
pub(super) fn method_alone(q: &FrameQuery) -> Option<&str> {
    let FrameQuery {
        after: _,
        offset: _,
        limit: _,
        dir,
        kind,
        method,
        session,
        errors,
        min_latency_ms,
        q: _,
        from,
        to,
    } = q;
    let others =
        dir.is_some() || kind.is_some() || session.is_some() || *errors == Some(true) || from.is_some() || to.is_some();
    let (Some(method), false, None, false) = (method, others, min_latency_ms, searching(q)) else { return None };
    Some(method)
}

/// The seq after which the frame at `offset` (from 0) of trace `trace_id`'s
/// frames with `method` comes, read from the method's spans; past the last
/// one when there are not that many.
pub(super) fn seq_before_method_offset(
    conn: &Connection,
    trace_id: i64,
    method: &str,
    offset: i64,
) -> Result<i64, StoreError> {
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
    Ok((1 << crate::SEQ_BITS) - 1)
}

/// The highest seq trace `trace_id` has stored (0 for none): one seek.
pub(super) fn last_seq(conn: &Connection, trace_id: i64) -> Result<i64, StoreError> {
    let last = crate::last_frame_id(conn, trace_id)?;
    Ok(last.map_or(0, |id| id - frame_id_bounds(trace_id).0))
}

/// True when `q` filters the frames, by a range of seqs or otherwise.
pub(super) fn has_filters(q: &FrameQuery) -> bool {
    has_row_filters(q) || q.from.is_some() || q.to.is_some()
}

/// True when `q` filters the frames by more than a range of seqs.
pub(super) fn has_row_filters(q: &FrameQuery) -> bool {
    let FrameQuery {
        after: _,
        offset: _,
        limit: _,
        dir,
        kind,
        method,
        session,
        errors,
        min_latency_ms,
        q: _,
        from: _,
        to: _,
    } = q;
    dir.is_some()
        || kind.is_some()
        || method.is_some()
        || session.is_some()
        || *errors == Some(true)
        || min_latency_ms.is_some()
        || searching(q)
}
