//! The request table and the requests in flight over a frame: a trace's
//! JSON-RPC requests with their answers, read through the index of requests
//! (`frames_requests`, migration 15) and the pairing the store keeps
//! (`reply_to_seq` on the answer, `frames_by_reply`; `batch_replies` for
//! answers inside a batch).

use crate::{frame_id, Store, StoreError};
use acp_tee_shared::api::{
    InFlight, InFlightRequest, RequestPage, RequestQuery, RequestRow, RequestSort, RequestStatus,
    ERROR_MESSAGE_MAX_CHARS, IN_FLIGHT_MAX, REQUESTS_DEFAULT_LIMIT,
};
use acp_tee_shared::{Direction, FrameKind};
use rusqlite::{params, OptionalExtension};

/// An error frame larger than this is not read for its code and message.
const ERROR_READ_MAX_BYTES: i64 = 64 * 1024;

/// The first frame answering request `r` (its rowid), if any.
const REPLY_ID: &str =
    "(SELECT q.id FROM frames q WHERE q.trace_id = r.trace_id AND q.reply_to_seq = r.seq ORDER BY q.id LIMIT 1)";

/// One row of a page as chosen: the request's rowid, its answer's rowid
/// (a frame replying to it, or the batch holding its answer) and, for a
/// batch, the latency kept with it.
struct Chosen {
    request: i64,
    answer: Option<i64>,
    batch_latency: Option<i64>,
}

impl Store {
    /// A page of trace `trace_id`'s requests sorted as `q` asks (`q` must be
    /// validated: limit within bounds, offset not negative), with their
    /// answers; sizes as [`Store::seen_by`]'s reader sees the frames. The
    /// rows are chosen by ids first, then read: only the page's frames are
    /// measured and their errors read.
    pub fn request_page(&self, trace_id: i64, q: &RequestQuery) -> Result<RequestPage, StoreError> {
        self.trace(trace_id)?;
        let (limit, offset) = (q.limit.unwrap_or(REQUESTS_DEFAULT_LIMIT), q.offset.unwrap_or(0));
        let total: i64 = self
            .conn
            .prepare_cached("SELECT coalesce(sum(count), 0) FROM kind_counts WHERE trace_id = ?1 AND kind = 'request'")?
            .query_row(params![trace_id], |r| r.get(0))?;
        let (sort, desc) = (q.sort.unwrap_or_default(), q.desc == Some(true));
        let chosen = if sort == RequestSort::Latency && !self.has_batches(trace_id)? {
            self.chosen_by_latency(trace_id, desc, limit, offset)?
        } else {
            self.chosen(trace_id, &page_sql(sort, desc, self.length_sql()), limit, offset)?
        };
        let requests = chosen.iter().map(|c| self.request_row(c)).collect::<Result<_, _>>()?;
        Ok(RequestPage { requests, total, offset })
    }

    /// The rows `sql` ([`page_sql`]) chooses.
    fn chosen(&self, trace_id: i64, sql: &str, limit: i64, offset: i64) -> Result<Vec<Chosen>, StoreError> {
        let chosen: Vec<Chosen> = self
            .conn
            .prepare_cached(sql)?
            .query_map(params![trace_id, limit, offset], |row| {
                let batch: Option<i64> = row.get(2)?;
                Ok(Chosen {
                    request: row.get(0)?,
                    answer: row.get::<_, Option<i64>>(1)?.or(batch.map(|s| frame_id(trace_id, s))),
                    batch_latency: row.get(3)?,
                })
            })?
            .collect::<Result<_, _>>()?;
        Ok(chosen)
    }

    /// A page by latency of a trace without batches, read in the order of
    /// the index of latencies (`frames_by_latency`) rather than by sorting
    /// every request: the answered requests (ties by their answer's seq),
    /// then, in seq order, those never answered.
    fn chosen_by_latency(&self, trace_id: i64, desc: bool, limit: i64, offset: i64) -> Result<Vec<Chosen>, StoreError> {
        let order = if desc { "DESC" } else { "ASC" };
        let bits = crate::SEQ_BITS;
        let answered = format!(
            "SELECT r.id, p.id FROM frames p INDEXED BY frames_by_latency
             JOIN frames r ON r.id = (p.trace_id << {bits}) + p.reply_to_seq AND r.kind = 'request'
             WHERE p.trace_id = ?1 AND p.latency_ns IS NOT NULL AND p.reply_to_seq IS NOT NULL"
        );
        let row = |r: &rusqlite::Row<'_>| Ok(Chosen { request: r.get(0)?, answer: r.get(1)?, batch_latency: None });
        let mut chosen: Vec<Chosen> = self
            .conn
            .prepare_cached(&format!("{answered} ORDER BY p.latency_ns {order}, p.id {order} LIMIT ?2 OFFSET ?3"))?
            .query_map(params![trace_id, limit, offset], row)?
            .collect::<Result<_, _>>()?;
        if chosen.len() as i64 == limit {
            return Ok(chosen);
        }
        // Past the answered ones: how many there are says where the rest begins.
        let answered_count = match chosen.len() {
            0 => self
                .conn
                .prepare_cached(&format!("SELECT count(*) FROM ({answered})"))?
                .query_row(params![trace_id], |r| r.get(0))?,
            n => offset + n as i64,
        };
        let rest = self
            .conn
            .prepare_cached(&format!(
                "SELECT r.id, NULL FROM frames r WHERE r.trace_id = ?1 AND r.kind = 'request'
                   AND NOT EXISTS (SELECT 1 FROM frames q WHERE q.trace_id = ?1 AND q.reply_to_seq = r.seq)
                 ORDER BY r.id {order} LIMIT ?2 OFFSET ?3"
            ))?
            .query_map(params![trace_id, limit - chosen.len() as i64, (offset - answered_count).max(0)], row)?
            .collect::<Result<Vec<_>, _>>()?;
        chosen.extend(rest);
        Ok(chosen)
    }

    /// The SQL function measuring a frame as this connection's reader sees it.
    fn length_sql(&self) -> &'static str {
        if self.masking() {
            "acp_seen_len"
        } else {
            "length"
        }
    }

    /// The row of the request `c` chose, with its answer.
    fn request_row(&self, c: &Chosen) -> Result<RequestRow, StoreError> {
        let len = self.length_sql();
        let sql = format!("SELECT seq, t_ns, dir, method, rpc_id, session_id, {len}(raw) FROM frames WHERE id = ?1");
        let mut row = self.conn.prepare_cached(&sql)?.query_row(params![c.request], |r| {
            let id: Option<String> = r.get(4)?;
            Ok(RequestRow {
                seq: r.get(0)?,
                t_ns: r.get(1)?,
                dir: crate::queries::parse_name(2, r.get(2)?)?,
                method: r.get(3)?,
                id: id.map(|id| serde_json::from_str(&id).unwrap_or(serde_json::Value::String(id))),
                session_id: r.get(5)?,
                status: RequestStatus::Unanswered,
                reply_seq: None,
                latency_ns: None,
                request_size: r.get(6)?,
                response_size: None,
            })
        })?;
        let Some(answer) = c.answer else { return Ok(row) };
        let sql = format!(
            "SELECT seq, kind, latency_ns, {len}(raw), CASE WHEN kind = 'error' AND length(raw) <= ?2 THEN raw END
             FROM frames WHERE id = ?1"
        );
        let found = self
            .conn
            .prepare_cached(&sql)?
            .query_row(params![answer, ERROR_READ_MAX_BYTES], |r| {
                let kind: FrameKind = crate::queries::parse_name(1, r.get(1)?)?;
                let raw: Option<Vec<u8>> = r.get(4)?;
                Ok((r.get::<_, i64>(0)?, kind, r.get::<_, Option<i64>>(2)?, r.get::<_, i64>(3)?, raw))
            })
            .optional()?;
        let Some((seq, kind, latency, size, raw)) = found else { return Ok(row) };
        row.reply_seq = Some(seq);
        row.response_size = Some(size);
        row.status = match kind {
            FrameKind::Batch => RequestStatus::Batch,
            FrameKind::Error => error_status(raw.as_deref()),
            _ => RequestStatus::Ok,
        };
        row.latency_ns = if kind == FrameKind::Batch { c.batch_latency } else { latency };
        Ok(row)
    }

    /// The requests of trace `trace_id` in flight over frame `at`: sent
    /// before it and answered after it (by a frame or inside a batch) or
    /// not at all, newest first, at most [`IN_FLIGHT_MAX`], and how many
    /// more there are. Costs a walk of the index entries of the answers
    /// and the requests before `at` (no frame is read but those listed),
    /// and for unanswered requests a walk back from `at` that stops once
    /// it found as many as the counts say there are.
    pub fn in_flight(&self, trace_id: i64, at: i64) -> Result<InFlight, StoreError> {
        self.trace(trace_id)?;
        let at = at.clamp(0, crate::MAX_SEQ);
        let before = frame_id(trace_id, at);
        let want = IN_FLIGHT_MAX as i64;
        // Requests answered by a frame after `at`: (request seq, answer rowid).
        let answered_sql = "SELECT reply_to_seq, id FROM frames INDEXED BY frames_by_reply
             WHERE trace_id = ?1 AND reply_to_seq IS NOT NULL AND reply_to_seq < ?2 AND id > ?3";
        // One walk of the answers to requests before `at` counts those
        // answered after it and the requests answered at all.
        let (answered_after, replied): (i64, i64) = self
            .conn
            .prepare_cached(
                "SELECT coalesce(sum(id > ?3), 0), count(DISTINCT reply_to_seq) FROM frames INDEXED BY frames_by_reply
                 WHERE trace_id = ?1 AND reply_to_seq IS NOT NULL AND reply_to_seq < ?2",
            )?
            .query_row(params![trace_id, at, before], |r| Ok((r.get(0)?, r.get(1)?)))?;
        let mut open: Vec<(i64, Option<i64>)> = self
            .conn
            .prepare_cached(&format!("{answered_sql} ORDER BY reply_to_seq DESC LIMIT ?4"))?
            .query_map(params![trace_id, at, before, want], |r| Ok((r.get(0)?, Some(r.get(1)?))))?
            .collect::<Result<_, _>>()?;
        // Answered inside a batch after `at` (and by no frame of its own).
        let batch_sql = "SELECT b.request_seq, b.batch_seq FROM batch_replies b
             WHERE b.trace_id = ?1 AND b.request_seq < ?2 AND b.batch_seq > ?2
               AND NOT EXISTS (SELECT 1 FROM frames q WHERE q.trace_id = ?1 AND q.reply_to_seq = b.request_seq)";
        let batch_after: i64 = self
            .conn
            .prepare_cached(&format!("SELECT count(*) FROM ({batch_sql})"))?
            .query_row(params![trace_id, at], |r| r.get(0))?;
        let batched: Vec<(i64, Option<i64>)> = self
            .conn
            .prepare_cached(&format!("{batch_sql} ORDER BY b.request_seq DESC LIMIT ?3"))?
            .query_map(params![trace_id, at, want], |r| Ok((r.get(0)?, Some(frame_id(trace_id, r.get(1)?)))))?
            .collect::<Result<_, _>>()?;
        open.extend(batched);
        // Unanswered: the requests before `at` less those answered (by a
        // frame, or in a batch alone). A frame answering what is not a
        // request makes the count too high: the walk back then reads to
        // the trace's start, never too few.
        let requests: i64 = self
            .conn
            .prepare_cached("SELECT count(*) FROM frames WHERE trace_id = ?1 AND kind = 'request' AND id < ?2")?
            .query_row(params![trace_id, before], |r| r.get(0))?;
        let batch_only: i64 = self
            .conn
            .prepare_cached(
                "SELECT count(*) FROM batch_replies b WHERE b.trace_id = ?1 AND b.request_seq < ?2
                 AND NOT EXISTS (SELECT 1 FROM frames q WHERE q.trace_id = ?1 AND q.reply_to_seq = b.request_seq)",
            )?
            .query_row(params![trace_id, at], |r| r.get(0))?;
        let unanswered = (requests - replied - batch_only).max(0);
        let mut found_unanswered = 0;
        if unanswered > 0 {
            let rows: Vec<(i64, Option<i64>)> = self
                .conn
                .prepare_cached(
                    "SELECT r.seq FROM frames r WHERE r.trace_id = ?1 AND r.kind = 'request' AND r.id < ?2
                       AND NOT EXISTS (SELECT 1 FROM frames q WHERE q.trace_id = ?1 AND q.reply_to_seq = r.seq)
                       AND NOT EXISTS (SELECT 1 FROM batch_replies b WHERE b.trace_id = ?1 AND b.request_seq = r.seq)
                     ORDER BY r.id DESC LIMIT ?3",
                )?
                .query_map(params![trace_id, before, unanswered.min(want)], |r| Ok((r.get(0)?, None)))?
                .collect::<Result<_, _>>()?;
            found_unanswered = rows.len() as i64;
            open.extend(rows);
        }
        // The walk back found them all unless it stopped at the bound.
        let unanswered = if found_unanswered < want { found_unanswered } else { unanswered };
        open.sort_by_key(|r| std::cmp::Reverse(r.0));
        open.truncate(IN_FLIGHT_MAX);
        let requests = open
            .iter()
            .map(|&(seq, answer)| self.in_flight_request(trace_id, seq, answer))
            .collect::<Result<Vec<_>, _>>()?;
        let requests: Vec<InFlightRequest> = requests.into_iter().flatten().collect();
        let left_out = (answered_after + batch_after + unanswered - requests.len() as i64).max(0);
        Ok(InFlight { at, requests, left_out })
    }

    /// Request `seq` of trace `trace_id` answered by the frame with rowid
    /// `answer`, as listed in flight (`None` when it is not a request).
    fn in_flight_request(
        &self,
        trace_id: i64,
        seq: i64,
        answer: Option<i64>,
    ) -> Result<Option<InFlightRequest>, StoreError> {
        let request = self
            .conn
            .prepare_cached("SELECT dir, method FROM frames WHERE id = ?1 AND kind = 'request'")?
            .query_row(params![frame_id(trace_id, seq)], |r| {
                Ok((crate::queries::parse_name::<Direction>(0, r.get(0)?)?, r.get::<_, Option<String>>(1)?))
            })
            .optional()?;
        let Some((dir, method)) = request else { return Ok(None) };
        let mut out = InFlightRequest { seq, dir, method, reply_seq: None, latency_ns: None, error: false };
        if let Some(answer) = answer {
            let (reply_seq, kind, latency): (i64, String, Option<i64>) = self
                .conn
                .prepare_cached("SELECT seq, kind, latency_ns FROM frames WHERE id = ?1")?
                .query_row(params![answer], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))?;
            out.reply_seq = Some(reply_seq);
            out.error = kind == FrameKind::Error.as_str();
            out.latency_ns = match latency {
                Some(l) if kind != FrameKind::Batch.as_str() => Some(l),
                _ => self
                    .conn
                    .prepare_cached("SELECT latency_ns FROM batch_replies WHERE trace_id = ?1 AND request_seq = ?2")?
                    .query_row(params![trace_id, seq], |r| r.get(0))
                    .optional()?,
            };
        }
        Ok(Some(out))
    }
}

/// The query choosing a page of requests (`?1` the trace, `?2` the limit,
/// `?3` the offset) sorted by `sort`, largest first when `desc`; `len` is
/// the SQL function measuring a frame as served.
fn page_sql(sort: RequestSort, desc: bool, len: &str) -> String {
    let desc = if desc { "DESC" } else { "ASC" };
    let latency = "coalesce(p.latency_ns, b.latency_ns)";
    let order = match sort {
        RequestSort::Seq => format!("r.id {desc}"),
        RequestSort::Method => format!("r.method IS NULL, r.method {desc}, r.id {desc}"),
        // Numbers by value first, then strings as written.
        RequestSort::Id => format!(
            "r.rpc_id IS NULL, NOT (r.rpc_id GLOB '[0-9]*' OR r.rpc_id GLOB '-[0-9]*') {desc}, \
             CAST(r.rpc_id AS REAL) {desc}, r.rpc_id {desc}, r.id {desc}"
        ),
        RequestSort::Dir => format!("r.dir <> 'client_to_agent' {desc}, r.id {desc}"),
        RequestSort::Status => format!(
            "CASE WHEN p.id IS NULL AND b.batch_seq IS NULL THEN 2 WHEN p.kind = 'error' THEN 1 ELSE 0 END {desc}, \
             r.id {desc}"
        ),
        RequestSort::Latency => format!("{latency} IS NULL, {latency} {desc}, r.id {desc}"),
        RequestSort::Size => format!(
            "coalesce(p.id, b.batch_seq) IS NULL, {len}(coalesce(p.raw, bf.raw)) {desc}, {len}(r.raw) {desc}, \
             r.id {desc}"
        ),
        RequestSort::Session => format!("r.session_id IS NULL, r.session_id {desc}, r.id {desc}"),
    };
    // Sorting by size reads every answer's bytes; the batch frame only then.
    let batch_frame = match sort {
        RequestSort::Size => format!(
            "LEFT JOIN frames bf ON b.batch_seq IS NOT NULL AND bf.id = (r.trace_id << {}) + b.batch_seq",
            crate::SEQ_BITS
        ),
        _ => String::new(),
    };
    format!(
        "SELECT r.id, p.id, b.batch_seq, b.latency_ns FROM frames r
         LEFT JOIN frames p ON p.id = {REPLY_ID}
         LEFT JOIN batch_replies b ON p.id IS NULL AND b.trace_id = r.trace_id AND b.request_seq = r.seq
         {batch_frame}
         WHERE r.trace_id = ?1 AND r.kind = 'request'
         ORDER BY {order} LIMIT ?2 OFFSET ?3"
    )
}

/// The status an error frame's bytes (`None`: too large to read) tell.
fn error_status(raw: Option<&[u8]>) -> RequestStatus {
    let Some(raw) = raw else { return RequestStatus::Error { code: None, message: None } };
    let mut keep = None;
    let (_, error) = acp_tee_wire::acp::reply(raw, &mut keep);
    let (code, message) = match error {
        Some(e) => (e.code, e.message.map(|m| m.chars().take(ERROR_MESSAGE_MAX_CHARS).collect())),
        None => (None, None),
    };
    RequestStatus::Error { code, message }
}

#[cfg(test)]
mod tests;
