//! Reading traces and frames back.

use super::{Store, StoreError, SHOWN};
use acp_tee_shared::{Direction, FrameKind, TraceMeta};
use rusqlite::{params, OptionalExtension, Row};

/// One frame as stored.
#[derive(Clone, Debug, PartialEq)]
pub struct StoredFrame {
    /// Position in the trace, from 1.
    pub seq: i64,
    /// Monotonic nanoseconds since the trace started.
    pub t_ns: i64,
    /// Which way it went.
    pub dir: Direction,
    /// What it is.
    pub kind: FrameKind,
    /// JSON-RPC id as JSON text.
    pub rpc_id: Option<String>,
    /// JSON-RPC method.
    pub method: Option<String>,
    /// ACP session id.
    pub session_id: Option<String>,
    /// For responses: the request's seq.
    pub reply_to_seq: Option<i64>,
    /// For responses: nanoseconds since the request.
    pub latency_ns: Option<i64>,
    /// The exact bytes.
    pub raw: Vec<u8>,
    /// Proxy mode: the exact bytes on the successor side of the hop.
    pub envelope: Option<Vec<u8>>,
    /// An MCP-over-ACP message.
    pub mcp: bool,
    /// For `mcp/message`: the inner MCP method.
    pub mcp_method: Option<String>,
    /// Imports from a multi-component source: the sending component's name.
    pub sender: Option<String>,
    /// Imports from a multi-component source: the receiving component's name.
    pub receiver: Option<String>,
}

/// The columns of one stored frame a fold reads, borrowed from the row
/// being read ([`Store::fold_frames_after`]).
#[derive(Clone, Copy, Debug)]
pub struct FrameRef<'a> {
    /// Position in the trace, from 1.
    pub seq: i64,
    /// Monotonic nanoseconds since the trace started.
    pub t_ns: i64,
    /// Which way it went.
    pub dir: Direction,
    /// What it is.
    pub kind: FrameKind,
    /// JSON-RPC id as JSON text.
    pub rpc_id: Option<&'a str>,
    /// JSON-RPC method (for responses: their request's).
    pub method: Option<&'a str>,
    /// ACP session id (for responses: their request's).
    pub session_id: Option<&'a str>,
    /// For responses: the request's seq.
    pub reply_to_seq: Option<i64>,
    /// The exact bytes.
    pub raw: &'a [u8],
}

/// A frame about to be stored, or read whole, seen as a [`FrameRef`].
impl<'a> From<&'a crate::model::NewFrame> for FrameRef<'a> {
    fn from(f: &'a crate::model::NewFrame) -> Self {
        FrameRef {
            seq: f.seq,
            t_ns: f.t_ns,
            dir: f.dir,
            kind: f.kind,
            rpc_id: f.rpc_id.as_deref(),
            method: f.method.as_deref(),
            session_id: f.session_id.as_deref(),
            reply_to_seq: f.reply_to_seq,
            raw: &f.raw,
        }
    }
}

impl<'a> From<&'a StoredFrame> for FrameRef<'a> {
    fn from(f: &'a StoredFrame) -> Self {
        FrameRef {
            seq: f.seq,
            t_ns: f.t_ns,
            dir: f.dir,
            kind: f.kind,
            rpc_id: f.rpc_id.as_deref(),
            method: f.method.as_deref(),
            session_id: f.session_id.as_deref(),
            reply_to_seq: f.reply_to_seq,
            raw: &f.raw,
        }
    }
}

/// The rows [`frame_ref`] reads, rowids `?1 < id <= ?2`, at most `?3`.
pub(super) const FRAME_REFS_SQL: &str = "SELECT id, seq, t_ns, dir, kind, rpc_id, method, session_id, reply_to_seq, raw
     FROM frames WHERE id > ?1 AND id <= ?2 ORDER BY id LIMIT ?3";

/// The [`FrameRef`] in `row` (`id, seq, t_ns, dir, kind, rpc_id, method,
/// session_id, reply_to_seq, raw`).
pub(super) fn frame_ref<'a>(row: &'a Row<'_>) -> rusqlite::Result<FrameRef<'a>> {
    let text = |i: usize| -> rusqlite::Result<Option<&'a str>> {
        row.get_ref(i)?
            .as_str_or_null()
            .map_err(|e| rusqlite::Error::FromSqlConversionFailure(i, rusqlite::types::Type::Text, Box::new(e)))
    };
    let name = |i: usize| -> rusqlite::Result<&'a str> {
        text(i)?.ok_or(rusqlite::Error::InvalidColumnType(i, "null".into(), rusqlite::types::Type::Null))
    };
    let bad = |i: usize, e: acp_tee_shared::UnknownName| {
        rusqlite::Error::FromSqlConversionFailure(i, rusqlite::types::Type::Text, Box::new(e))
    };
    Ok(FrameRef {
        seq: row.get(1)?,
        t_ns: row.get(2)?,
        dir: name(3)?.parse().map_err(|e| bad(3, e))?,
        kind: name(4)?.parse().map_err(|e| bad(4, e))?,
        rpc_id: text(5)?,
        method: text(6)?,
        session_id: text(7)?,
        reply_to_seq: row.get(8)?,
        raw: row
            .get_ref(9)?
            .as_bytes()
            .map_err(|e| rusqlite::Error::FromSqlConversionFailure(9, rusqlite::types::Type::Blob, Box::new(e)))?,
    })
}

pub(super) const TRACE_COLUMNS: &str = "id, name, command, cwd, mode, started_at, ended_at, exit_code, exit_signal,
     end_reason, frame_count, error_count, missing_frames, missing_unknown, pinned, bytes, protocol, parent_trace";

/// How many columns [`TRACE_COLUMNS`] names (those after them start here).
pub(super) const TRACE_COLUMN_COUNT: usize = 18;

pub(super) fn trace_from_row(row: &Row<'_>) -> rusqlite::Result<TraceMeta> {
    let command: String = row.get(2)?;
    let command = serde_json::from_str(&command)
        .map_err(|e| rusqlite::Error::FromSqlConversionFailure(2, rusqlite::types::Type::Text, Box::new(e)))?;
    Ok(TraceMeta {
        id: row.get(0)?,
        name: row.get(1)?,
        command,
        cwd: row.get(3)?,
        mode: row.get(4)?,
        started_at: row.get(5)?,
        ended_at: row.get(6)?,
        exit_code: row.get(7)?,
        exit_signal: row.get(8)?,
        end_reason: row.get(9)?,
        frame_count: row.get(10)?,
        error_count: row.get(11)?,
        missing_frames: row.get(12)?,
        missing_unknown: row.get(13)?,
        pinned: row.get(14)?,
        bytes: row.get(15)?,
        protocol: row.get::<_, Option<String>>(16)?.map(|p| parse_name(16, p)).transpose()?,
        parent_trace: row.get(17)?,
    })
}

/// Column `idx` (a direction or kind name) as its enum.
pub(super) fn parse_name<T: std::str::FromStr<Err = acp_tee_shared::UnknownName>>(
    idx: usize,
    text: String,
) -> rusqlite::Result<T> {
    text.parse().map_err(|e| rusqlite::Error::FromSqlConversionFailure(idx, rusqlite::types::Type::Text, Box::new(e)))
}

/// The frame in `row`'s columns from `at` on, in [`Store::read_step`]'s order.
fn frame_from_row(row: &Row<'_>, at: usize) -> rusqlite::Result<StoredFrame> {
    Ok(StoredFrame {
        seq: row.get(at)?,
        t_ns: row.get(at + 1)?,
        dir: parse_name(at + 2, row.get(at + 2)?)?,
        kind: parse_name(at + 3, row.get(at + 3)?)?,
        rpc_id: row.get(at + 4)?,
        method: row.get(at + 5)?,
        session_id: row.get(at + 6)?,
        reply_to_seq: row.get(at + 7)?,
        latency_ns: row.get(at + 8)?,
        raw: row.get(at + 9)?,
        envelope: row.get(at + 10)?,
        mcp: row.get::<_, String>(at + 11)? == "mcp",
        mcp_method: row.get(at + 12)?,
        sender: row.get(at + 13)?,
        receiver: row.get(at + 14)?,
    })
}

/// Frames [`Store::for_each_frame`] reads per step at most.
pub const STEP_FRAMES: usize = 256;

/// How many traces [`Store::family`] returns at most: an agent with more
/// MCP servers than this is not one a person reads as one timeline.
pub const FAMILY_MAX: usize = 256;

/// Bytes (stored and envelope) after which a step of
/// [`Store::for_each_frame`] ends, even before [`STEP_FRAMES`] frames.
pub const STEP_BYTES: usize = 4 << 20;

impl Store {
    /// Every trace, newest first (not those an import is still writing).
    pub fn list_traces(&self) -> Result<Vec<TraceMeta>, StoreError> {
        let sql = format!("SELECT {TRACE_COLUMNS} FROM traces WHERE {SHOWN} ORDER BY id DESC");
        let mut stmt = self.conn.prepare(&sql)?;
        let traces = stmt.query_map([], trace_from_row)?.collect::<Result<_, _>>()?;
        Ok(traces)
    }

    /// The trace with id `id` (none while an import is still writing it).
    pub fn trace(&self, id: i64) -> Result<TraceMeta, StoreError> {
        let sql = format!("SELECT {TRACE_COLUMNS} FROM traces WHERE id = ?1 AND {SHOWN}");
        self.conn.query_row(&sql, params![id], trace_from_row).optional()?.ok_or(StoreError::NoSuchTrace(id))
    }

    /// The traces whose parent is trace `id` (`traces.parent_trace`), oldest
    /// first, at most [`FAMILY_MAX`].
    pub fn children(&self, id: i64) -> Result<Vec<TraceMeta>, StoreError> {
        let sql = format!(
            "SELECT {TRACE_COLUMNS} FROM traces WHERE parent_trace = ?1 AND id <> ?1 AND {SHOWN} ORDER BY id LIMIT ?2"
        );
        let mut stmt = self.conn.prepare_cached(&sql)?;
        let traces = stmt.query_map(params![id, FAMILY_MAX as i64], trace_from_row)?.collect::<Result<_, _>>()?;
        Ok(traces)
    }

    /// Trace `id` and its descendants, each parent before its children
    /// (at most [`FAMILY_MAX`] traces; a cycle a hand-edited store could
    /// hold is followed once).
    pub fn family(&self, id: i64) -> Result<Vec<TraceMeta>, StoreError> {
        let mut out = vec![self.trace(id)?];
        let mut next = 0;
        while next < out.len() && out.len() < FAMILY_MAX {
            let children = self.children(out[next].id)?;
            for child in children {
                if out.len() < FAMILY_MAX && !out.iter().any(|t| t.id == child.id) {
                    out.push(child);
                }
            }
            next += 1;
        }
        Ok(out)
    }

    /// The id of the newest trace.
    pub fn latest_trace_id(&self) -> Result<i64, StoreError> {
        self.conn
            .query_row(&format!("SELECT max(id) FROM traces WHERE {SHOWN}"), [], |r| r.get::<_, Option<i64>>(0))?
            .ok_or(StoreError::NoTraces)
    }

    /// The seqs of the requests that responses inside batch frame
    /// `batch_seq` of trace `trace_id` answer, in order.
    pub fn batch_replies(&self, trace_id: i64, batch_seq: i64) -> Result<Vec<i64>, StoreError> {
        let mut stmt = self.conn.prepare_cached(
            "SELECT request_seq FROM batch_replies WHERE trace_id = ?1 AND batch_seq = ?2 ORDER BY request_seq",
        )?;
        let seqs = stmt.query_map(params![trace_id, batch_seq], |r| r.get(0))?.collect::<Result<_, _>>()?;
        Ok(seqs)
    }

    /// The exact bytes of frame `seq` of trace `trace_id`, if it exists.
    pub fn frame_raw(&self, trace_id: i64, seq: i64) -> Result<Option<Vec<u8>>, StoreError> {
        let mut stmt = self.conn.prepare_cached("SELECT raw FROM frames WHERE id = ?1")?;
        Ok(stmt.query_row(params![super::frame_id(trace_id, seq)], |r| r.get(0)).optional()?)
    }

    /// Calls `each` with every frame of trace `trace_id` in `seq` order (the
    /// frames stored when it starts), reading in steps of at most
    /// `STEP_FRAMES` frames or `STEP_BYTES` bytes: memory stays flat
    /// however long the trace, and no read transaction lasts while `each`
    /// works or waits (a slow reader of an export neither holds the store
    /// nor keeps its log from being reset).
    pub fn for_each_frame<E: From<StoreError>>(
        &self,
        trace_id: i64,
        mut each: impl FnMut(StoredFrame) -> Result<(), E>,
    ) -> Result<(), E> {
        self.for_each_frame_after(trace_id, 0, |f| each(f).map(|()| true))
    }

    /// Calls `each` with trace `trace_id`'s frames after seq `after`, in
    /// order, a bounded step at a time, until it returns `false` or the
    /// frames stored when this began are all read.
    pub fn for_each_frame_after<E: From<StoreError>>(
        &self,
        trace_id: i64,
        after: i64,
        mut each: impl FnMut(StoredFrame) -> Result<bool, E>,
    ) -> Result<(), E> {
        let Some(last) = super::last_frame_id(&self.conn, trace_id).map_err(StoreError::from)? else { return Ok(()) };
        let mut from = super::frame_id(trace_id, after.max(0));
        let mut step = Vec::new();
        while from < last {
            from = self.read_step(from, last, &mut step)?;
            for frame in step.drain(..) {
                if !each(frame)? {
                    return Ok(());
                }
            }
        }
        Ok(())
    }

    /// Calls `each` with trace `trace_id`'s frames after seq `after`, in
    /// order, as [`FrameRef`]s borrowed from the row being read (nothing is
    /// copied), until it returns `false` or the frames stored when this
    /// began are all read. A read transaction lasts one step of at most
    /// `STEP_FRAMES` frames, so `each` must be quick: it is for folds over a
    /// whole trace (the session model), not for writing to a client.
    pub fn fold_frames_after(
        &self,
        trace_id: i64,
        after: i64,
        mut each: impl FnMut(&FrameRef<'_>) -> bool,
    ) -> Result<(), StoreError> {
        let Some(last) = super::last_frame_id(&self.conn, trace_id)? else { return Ok(()) };
        let mut from = super::frame_id(trace_id, after.max(0));
        let mut stmt = self.conn.prepare_cached(FRAME_REFS_SQL)?;
        while from < last {
            let mut rows = stmt.query(params![from, last, STEP_FRAMES as i64])?;
            let mut count = 0;
            while let Some(row) = rows.next()? {
                count += 1;
                from = row.get(0)?;
                let frame = frame_ref(row)?;
                if !each(&frame) {
                    return Ok(());
                }
            }
            if count < STEP_FRAMES {
                break;
            }
        }
        Ok(())
    }

    /// Reads the frames with rowids in `after + 1 ..= last` into `step`, up
    /// to a step's worth; returns the last rowid read (`last` when none is
    /// left). The statement is reset before this returns.
    fn read_step(&self, after: i64, last: i64, step: &mut Vec<StoredFrame>) -> Result<i64, StoreError> {
        let mut stmt = self.conn.prepare_cached(
            "SELECT id, seq, t_ns, dir, kind, rpc_id, method, session_id, reply_to_seq, latency_ns, raw,
                    envelope, protocol, mcp_method, sender, receiver
             FROM frames WHERE id > ?1 AND id <= ?2 ORDER BY id LIMIT ?3",
        )?;
        let mut rows = stmt.query(params![after, last, STEP_FRAMES as i64])?;
        let (mut read_to, mut bytes, mut count) = (after, 0, 0);
        while let Some(row) = rows.next()? {
            read_to = row.get(0)?;
            let frame = frame_from_row(row, 1)?;
            bytes += frame.raw.len() + frame.envelope.as_ref().map_or(0, Vec::len);
            count += 1;
            step.push(frame);
            if bytes >= STEP_BYTES {
                return Ok(read_to);
            }
        }
        Ok(if count < STEP_FRAMES { last } else { read_to })
    }
}
