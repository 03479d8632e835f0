//! Trace summaries (with the live state read from /proc) and per-trace
//! stats, read from the aggregates the recorder keeps.

use super::summary_from_row;
use crate::queries::trace_from_row;
use crate::queries::TRACE_COLUMNS;
use crate::{Store, StoreError, SHOWN};
use acp_tee_shared::api::{MethodStats, TraceStats, TraceSummary};
use acp_tee_shared::Direction;
use rusqlite::{params, OptionalExtension, Row};

/// A trace's fields, its recorder, where it was imported from and the time
/// of its last frame (the highest rowid in its range), for [`summary_of_trace`],
/// of the traces readers are shown (callers add `AND ...`).
pub(super) fn summary_select() -> String {
    let bits = crate::SEQ_BITS;
    format!(
        "SELECT {TRACE_COLUMNS}, recorder_pid, imported_from,
                (SELECT f.t_ns FROM frames f WHERE f.id > (t.id << {bits}) AND f.id < ((t.id + 1) << {bits})
                 ORDER BY f.id DESC LIMIT 1),
                relay_pid, client_pid
         FROM traces t WHERE {SHOWN}"
    )
}

/// The time since `started_at` on this machine's clock, in nanoseconds.
fn now_on_trace_clock(started_at: &str) -> Option<i64> {
    let started = chrono::DateTime::parse_from_rfc3339(started_at).ok()?;
    (chrono::Utc::now() - started.with_timezone(&chrono::Utc)).num_nanoseconds()
}

pub(super) fn summary_of_trace(row: &Row<'_>) -> rusqlite::Result<TraceSummary> {
    let meta = trace_from_row(row)?;
    let at = crate::queries::TRACE_COLUMN_COUNT;
    let pid: Option<i64> = row.get(at)?;
    let live = meta.ended_at.is_none() && pid.is_some_and(crate::proc::process_exists);
    // The run is over, or about to be, when its relay or the client that
    // started it is gone (a client's end closes the relay's input).
    let gone = |col: usize| -> rusqlite::Result<bool> {
        Ok(row.get::<_, Option<i64>>(col)?.is_some_and(|pid| !crate::proc::process_exists(pid)))
    };
    let finishing = live && (gone(at + 3)? || gone(at + 4)?);
    let last_t_ns = row.get::<_, Option<i64>>(at + 2)?.unwrap_or(0);
    let now_t_ns = live.then(|| now_on_trace_clock(&meta.started_at)).flatten().map(|now| now.max(last_t_ns));
    Ok(TraceSummary { now_t_ns, meta, live, finishing, last_t_ns, imported_from: row.get(at + 1)?, findings: None })
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

    /// Trace `id`'s summary once it is no longer finishing (acp-tee gone,
    /// its recorder still storing what it was handed), waiting at most
    /// `limit`: what every reader that judges a whole trace (`show`,
    /// `export`, `check`, `diff`, the MCP tools) waits on. The summary
    /// returned may still be `live` (recording, or finishing past `limit`).
    pub fn wait_while_finishing(&self, id: i64, limit: std::time::Duration) -> Result<TraceSummary, StoreError> {
        let deadline = std::time::Instant::now() + limit;
        loop {
            let s = self.trace_summary(id)?;
            if !s.finishing || std::time::Instant::now() >= deadline {
                return Ok(s);
            }
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
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
            crate::stats::fill_from_buckets(m, &rows);
        }
        methods.sort_by(|a, b| b.count.cmp(&a.count).then_with(|| a.method.cmp(&b.method)));
        let slowest_sql = format!(
            "SELECT {} FROM frames f WHERE f.trace_id = ?1 AND f.latency_ns IS NOT NULL
             ORDER BY f.latency_ns DESC LIMIT 20",
            self.summary_columns()
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
}
