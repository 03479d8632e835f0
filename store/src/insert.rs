//! The statement that stores frames, bound through SQLite's C API.
//!
//! It is the recorder's hottest code: every frame goes through it. rusqlite
//! binds text and blobs with `SQLITE_TRANSIENT`, which makes SQLite copy
//! each value into memory of its own (a malloc, a copy and a free per
//! column). Bound here with `SQLITE_STATIC`, SQLite reads the values where
//! they are while the statement runs; they are unbound before this module
//! returns, so the statement never points at memory it does not own.
//!
//! One statement stores [`ROWS`] frames (a multi-row `VALUES`), which keeps
//! its B-tree cursors open from row to row: each row is appended where the
//! last went instead of being sought from the B-trees' roots.
//!
//! A frame of [`WRITE_IN_PLACE_FROM`] bytes or more is inserted as a
//! zeroblob of its length and its bytes written into the row afterwards
//! ([`write_in_place`], incremental blob I/O): SQLite builds a row in
//! memory, and with the bytes bound it would hold a second copy of them.
//! That works because `raw` is the row's last column (migration 10): SQLite
//! keeps a zeroblob unexpanded only when no column after it holds data.

use super::{frame_id, StoreError};
use crate::model::NewFrame;
use rusqlite::{ffi, Connection};
use std::ffi::{c_int, CStr};
use std::ptr::NonNull;

/// Frames per multi-row statement.
pub(super) const ROWS: usize = 32;

/// Frames of this many bytes or more are written into their row after it
/// is inserted, not bound ([`write_in_place`]). Below it, SQLite's copy of
/// the row costs little memory, and the normal path is faster: the small
/// page cache a large write gets is cold for the inserts after it (with
/// 256 KiB here, 1 MiB frames were stored a fifth slower, 8 MiB ones at a
/// third of the rate).
pub(super) const WRITE_IN_PLACE_FROM: usize = 4 << 20;

/// The page cache (KiB) while a batch with a frame of
/// [`WRITE_IN_PLACE_FROM`] bytes or more is stored.
const LARGE_WRITE_CACHE_KIB: i64 = 2048;

/// Parameters per row; `?1` is the trace id, shared by all rows.
const ROW_PARAMS: usize = 17;

/// `INSERT INTO frames ... VALUES (...), (...), ...` for `rows` rows.
fn sql(rows: usize) -> String {
    let mut sql = String::from(
        "INSERT INTO frames (id, trace_id, seq, t_ns, dir, kind, rpc_id, method, session_id, reply_to_seq,
                             latency_ns, raw, envelope, protocol, mcp_method, preview, sender, receiver) VALUES ",
    );
    for r in 0..rows {
        sql.push_str(if r == 0 { "(" } else { ", (" });
        let p = |i: usize| format!("?{}", 2 + r * ROW_PARAMS + i);
        // id, trace_id, seq, then the rest in column order.
        sql.push_str(&format!("{}, ?1", p(0)));
        for i in 1..ROW_PARAMS {
            sql.push_str(", ");
            sql.push_str(&p(i));
        }
        sql.push(')');
    }
    sql
}

/// A prepared insert of a fixed number of frames.
pub(super) struct FrameInsert {
    stmt: NonNull<ffi::sqlite3_stmt>,
    db: *mut ffi::sqlite3,
    rows: usize,
}

// SAFETY: the statement belongs to one connection and is only used through
// `&mut self` by whoever owns that connection (a `Store`, which is Send but
// not Sync): never from two threads at once.
unsafe impl Send for FrameInsert {}

impl FrameInsert {
    /// Prepares the insert of `rows` frames on `conn`.
    ///
    /// The caller must finalize it (drop it) before `conn` is closed.
    pub(super) fn prepare(conn: &Connection, rows: usize) -> Result<FrameInsert, StoreError> {
        let sql = std::ffi::CString::new(sql(rows)).expect("the SQL has no NUL");
        // SAFETY: the handle is valid while `conn` lives; SQLite writes the
        // new statement into `stmt`.
        unsafe {
            let db = conn.handle();
            let mut stmt = std::ptr::null_mut();
            let rc = ffi::sqlite3_prepare_v2(db, sql.as_ptr(), -1, &mut stmt, std::ptr::null_mut());
            check(db, rc)?;
            let stmt = NonNull::new(stmt).expect("a statement for non-empty SQL");
            Ok(FrameInsert { stmt, db, rows })
        }
    }

    /// Stores `frames` (exactly as many as the statement was prepared for)
    /// as frames of trace `trace_id`.
    pub(super) fn run(&mut self, trace_id: i64, frames: &[NewFrame]) -> Result<(), StoreError> {
        assert_eq!(frames.len(), self.rows, "a statement for {} frames", self.rows);
        let stmt = self.stmt.as_ptr();
        // SAFETY: every pointer bound below points into `frames`, which
        // outlives the step; the bindings are cleared before returning.
        unsafe {
            let result = self.bind_all(trace_id, frames).and_then(|()| match ffi::sqlite3_step(stmt) {
                ffi::SQLITE_DONE => Ok(()),
                rc => check(self.db, rc),
            });
            // reset repeats the step's error code, which is already taken.
            ffi::sqlite3_reset(stmt);
            ffi::sqlite3_clear_bindings(stmt);
            result
        }
    }

    /// SAFETY: the values must stay where they are until the bindings are cleared.
    unsafe fn bind_all(&mut self, trace_id: i64, frames: &[NewFrame]) -> Result<(), StoreError> {
        let stmt = self.stmt.as_ptr();
        let db = self.db;
        let int = |i: usize, v: i64| check(db, ffi::sqlite3_bind_int64(stmt, i as c_int, v));
        let opt_int = |i: usize, v: Option<i64>| match v {
            Some(v) => int(i, v),
            None => Ok(()),
        };
        let blob = |i: usize, v: &[u8]| {
            let len = c_int::try_from(v.len()).map_err(|_| too_big(v.len()))?;
            check(db, ffi::sqlite3_bind_blob(stmt, i as c_int, v.as_ptr().cast(), len, ffi::SQLITE_STATIC()))
        };
        let raw = |i: usize, v: &[u8]| {
            if v.len() < WRITE_IN_PLACE_FROM {
                return blob(i, v);
            }
            let len = c_int::try_from(v.len()).map_err(|_| too_big(v.len()))?;
            check(db, ffi::sqlite3_bind_zeroblob(stmt, i as c_int, len))
        };
        let text = |i: usize, v: &str| {
            let len = c_int::try_from(v.len()).map_err(|_| too_big(v.len()))?;
            check(db, ffi::sqlite3_bind_text(stmt, i as c_int, v.as_ptr().cast(), len, ffi::SQLITE_STATIC()))
        };
        let opt_text = |i: usize, v: Option<&str>| match v {
            Some(v) => text(i, v),
            None => Ok(()),
        };
        int(1, trace_id)?;
        for (r, f) in frames.iter().enumerate() {
            // Unset parameters are NULL: the bindings were cleared.
            let p = 2 + r * ROW_PARAMS;
            int(p, frame_id(trace_id, f.seq))?;
            int(p + 1, f.seq)?;
            int(p + 2, f.t_ns)?;
            text(p + 3, f.dir.as_str())?;
            text(p + 4, f.kind.as_str())?;
            opt_text(p + 5, f.rpc_id.as_deref())?;
            opt_text(p + 6, f.method.as_deref())?;
            opt_text(p + 7, f.session_id.as_deref())?;
            opt_int(p + 8, f.reply_to_seq)?;
            opt_int(p + 9, f.latency_ns)?;
            raw(p + 10, &f.raw)?;
            if let Some(envelope) = &f.envelope {
                blob(p + 11, envelope)?;
            }
            text(p + 12, if f.mcp { "mcp" } else { "acp" })?;
            opt_text(p + 13, f.mcp_method.as_deref())?;
            opt_text(p + 14, f.preview.as_deref())?;
            opt_text(p + 15, f.sender.as_deref())?;
            opt_text(p + 16, f.receiver.as_deref())?;
        }
        Ok(())
    }
}

impl Drop for FrameInsert {
    fn drop(&mut self) {
        // SAFETY: the statement is live and finalized once, here.
        unsafe {
            ffi::sqlite3_finalize(self.stmt.as_ptr());
        }
    }
}

/// SQLite's result code `rc` as a result, with the connection's message.
///
/// SAFETY: `db` must be a live connection handle.
unsafe fn check(db: *mut ffi::sqlite3, rc: c_int) -> Result<(), StoreError> {
    if rc == ffi::SQLITE_OK {
        return Ok(());
    }
    let msg = CStr::from_ptr(ffi::sqlite3_errmsg(db)).to_string_lossy().into_owned();
    Err(rusqlite::Error::SqliteFailure(ffi::Error::new(rc), Some(msg)).into())
}

fn too_big(len: usize) -> StoreError {
    StoreError::OutOfRange(format!("a value of {len} bytes (SQLite takes at most 2 GiB)"))
}

/// The prepared inserts a recording store keeps: one of [`ROWS`] frames and
/// one of a single frame for the rest of a batch.
#[derive(Default)]
pub(super) struct Inserts {
    many: Option<FrameInsert>,
    one: Option<FrameInsert>,
}

impl Inserts {
    /// Stores `frames` of trace `trace_id` on `conn` (the connection these
    /// statements were, or will be, prepared on), inside the caller's
    /// transaction.
    pub(super) fn run(&mut self, conn: &Connection, trace_id: i64, frames: &[NewFrame]) -> Result<(), StoreError> {
        if !frames.iter().any(|f| f.raw.len() >= WRITE_IN_PLACE_FROM) {
            return self.insert(conn, trace_id, frames);
        }
        // A large frame's pages pass through the page cache: a small one
        // meanwhile, so that they do not stay in memory beside the frame.
        let cache: i64 = conn.query_row("PRAGMA cache_size", [], |r| r.get(0))?;
        conn.pragma_update(None, "cache_size", -LARGE_WRITE_CACHE_KIB)?;
        let stored = self.insert(conn, trace_id, frames);
        conn.pragma_update(None, "cache_size", cache)?;
        stored
    }

    fn insert(&mut self, conn: &Connection, trace_id: i64, frames: &[NewFrame]) -> Result<(), StoreError> {
        let mut chunks = frames.chunks_exact(ROWS);
        if chunks.len() > 0 {
            let many = ensure(&mut self.many, conn, ROWS)?;
            for chunk in chunks.by_ref() {
                many.run(trace_id, chunk)?;
            }
        }
        let rest = chunks.remainder();
        if !rest.is_empty() {
            let one = ensure(&mut self.one, conn, 1)?;
            for f in rest {
                one.run(trace_id, std::slice::from_ref(f))?;
            }
        }
        for f in frames.iter().filter(|f| f.raw.len() >= WRITE_IN_PLACE_FROM) {
            write_in_place(conn, frame_id(trace_id, f.seq), &f.raw)?;
        }
        Ok(())
    }
}

/// Writes `raw` into frame `id`'s row, inserted with a zeroblob of its
/// length, through SQLite's blob I/O: page by page, through the page cache,
/// never as a whole row in memory.
fn write_in_place(conn: &Connection, id: i64, raw: &[u8]) -> Result<(), StoreError> {
    let mut blob = conn.blob_open(rusqlite::MAIN_DB, "frames", "raw", id, false)?;
    blob.write_all_at(raw, 0)?;
    Ok(blob.close()?)
}

fn ensure<'s>(
    slot: &'s mut Option<FrameInsert>,
    conn: &Connection,
    rows: usize,
) -> Result<&'s mut FrameInsert, StoreError> {
    if slot.is_none() {
        *slot = Some(FrameInsert::prepare(conn, rows)?);
    }
    Ok(slot.as_mut().expect("just prepared"))
}
