//! The recorder's role: the one connection that writes a recorded trace.
//!
//! A [`Recording`] creates the trace (or takes over a dead recorder's),
//! appends batches of frames, ends the trace, and keeps the write-ahead log
//! in check (`recorder/checkpointer.rs` and the writer call its
//! checkpoints). Its methods are nowhere else: readers ([`super::Reader`])
//! and imports ([`super::Import`]) cannot reach them.

use super::{frame_id_bounds, MaintenanceReport, Store, StoreError};
use crate::model::{NewFrame, TraceEnd, TraceStart};
use acp_tee_shared::Direction;
use rusqlite::{params, OptionalExtension};
use std::ops::Deref;

/// The trace a replacement recorder continues ([`Store::resume_trace`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Resumed {
    /// The trace's id.
    pub trace_id: i64,
    /// The seq of its last stored frame (0 when none).
    pub last_seq: i64,
    /// Bytes of its stored frames, per direction, in [`Direction::ALL`] order.
    pub stored_bytes: [u64; 3],
    /// Its protocol, when known.
    pub protocol: Option<acp_tee_shared::Protocol>,
}

/// A store opened to record: see the module's documentation. It derefs to
/// [`Store`] for reads, never mutably.
pub struct Recording(Store);

impl Recording {
    /// Records into `store`, which must have this build's schema: run
    /// [`Store::maintain`] on it first (the recorder does, when it starts).
    pub fn new(store: Store) -> Result<Recording, StoreError> {
        store.check_current()?;
        Ok(Recording(store))
    }

    /// Sets this connection up for a long stream of inserts: a 16 MiB page
    /// cache (a transaction of frames never spills to the log half-way, and
    /// the index pages stay in memory) and a checkpoint every 64 MiB of log
    /// instead of every 4 MiB (fewer copies of the pages every commit
    /// touches, fewer fsyncs).
    ///
    /// It also stops enforcing foreign keys on this connection: checking that
    /// each frame's trace exists opened a cursor on `traces` per row, about
    /// 900 instructions a frame (a tenth of the writer's work), and a
    /// recording connection only writes rows of the trace it created.
    /// Every other connection (imports, the server) still enforces them.
    pub fn tune_for_recording(&self) -> Result<(), StoreError> {
        self.0.conn.pragma_update(None, "cache_size", -16384)?;
        self.0.conn.pragma_update(None, "wal_autocheckpoint", 16384)?;
        self.0.conn.pragma_update(None, "foreign_keys", "OFF")?;
        Ok(())
    }

    /// Adds a trace for a run that is starting; returns its id.
    pub fn create_trace(&self, start: &TraceStart, recorder_pid: u32) -> Result<i64, StoreError> {
        self.create_relayed_trace(start, recorder_pid, &Relay::default())
    }

    /// [`Recording::create_trace`], naming the process that relays the run and
    /// the client that started it too (so readers can tell a trace still
    /// recorded from one whose run is over while its recorder is finishing),
    /// and the relay's ancestors (so that the trace finds its parent,
    /// [`Recording::link_parent`]).
    pub fn create_relayed_trace(
        &self,
        start: &TraceStart,
        recorder_pid: u32,
        relay: &Relay,
    ) -> Result<i64, StoreError> {
        add_trace(&self.0, start, recorder_pid, relay)
    }

    /// Links trace `trace_id` to its parent, when it has none yet: the
    /// newest trace relayed by the nearest of its relay's ancestors that
    /// relays one in this store. Returns the parent, if it has one now.
    pub fn link_parent(&self, trace_id: i64) -> Result<Option<i64>, StoreError> {
        // Read first: the write lock is taken only to link.
        let conn = &self.0.conn;
        let (parent, ancestors): (Option<i64>, Option<String>) = conn
            .prepare_cached("SELECT parent_trace, ancestors FROM traces WHERE id = ?1")?
            .query_row(params![trace_id], |r| Ok((r.get(0)?, r.get(1)?)))?;
        if parent.is_some() {
            return Ok(parent);
        }
        let keys: Vec<String> = ancestors.and_then(|a| serde_json::from_str(&a).ok()).unwrap_or_default();
        let mut relayed_by =
            conn.prepare_cached("SELECT max(id) FROM traces WHERE relay_key = ?1 AND id <> ?2 AND removing = 0")?;
        for key in &keys {
            if let Some(parent) = relayed_by.query_row(params![key, trace_id], |r| r.get::<_, Option<i64>>(0))? {
                self.0.write(|conn| {
                    conn.prepare_cached("UPDATE traces SET parent_trace = ?1 WHERE id = ?2")?
                        .execute(params![parent, trace_id])?;
                    Ok(())
                })?;
                return Ok(Some(parent));
            }
        }
        Ok(None)
    }

    /// Takes over, for recorder `own_pid`, the trace of the run `start` that
    /// recorder `dead_pid` was writing when it died (whether or not a reader
    /// ended it as cut off meanwhile): it is open again, and says where its
    /// frames end. `None` when that recorder had not added the trace.
    pub fn resume_trace(&self, start: &TraceStart, dead_pid: u32, own_pid: u32) -> Result<Option<Resumed>, StoreError> {
        self.0.write(|conn| {
            let id: Option<(i64, Option<String>)> = conn
                .query_row(
                    "SELECT id, protocol FROM traces WHERE recorder_pid = ?1 AND started_at = ?2 AND mode = ?3
                     ORDER BY id DESC LIMIT 1",
                    params![dead_pid, start.started_at, start.mode],
                    |r| Ok((r.get(0)?, r.get(1)?)),
                )
                .optional()?;
            let Some((trace_id, protocol)) = id else { return Ok(None) };
            let protocol = protocol.and_then(|p| p.parse().ok());
            conn.execute(
                "UPDATE traces SET recorder_pid = ?1, ended_at = NULL, end_reason = NULL, exit_code = NULL,
                                   exit_signal = NULL
                 WHERE id = ?2",
                params![own_pid, trace_id],
            )?;
            let (stored_bytes, last_seq) = stored_bytes(conn, trace_id)?;
            Ok(Some(Resumed { trace_id, last_seq, stored_bytes, protocol }))
        })
    }

    /// Moves the write-ahead log into the database file and empties it, so
    /// that a store that ran out of space has room for a last small write.
    pub fn checkpoint(&self) -> Result<(), StoreError> {
        self.0.conn.query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |_| Ok(()))?;
        Ok(())
    }

    /// Copies the whole write-ahead log into the database file and empties
    /// the log file, waiting (up to the busy timeout) for a checkpoint in
    /// progress and for readers; false when it could not finish (a reader
    /// kept an older snapshot).
    pub fn checkpoint_truncate(&self) -> Result<bool, StoreError> {
        let busy: i64 = self.0.conn.query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |r| r.get(0))?;
        Ok(busy == 0)
    }

    /// Copies what the write-ahead log holds into the database file as far
    /// as it can without waiting for anyone (`PASSIVE`); the log restarts
    /// from its beginning at the next write once all of it is copied.
    /// Returns the log's pages and how many of them are copied, or `None`
    /// when another connection's checkpoint is running.
    pub fn checkpoint_passive(&self) -> Result<Option<(i64, i64)>, StoreError> {
        let (busy, log, copied): (i64, i64, i64) =
            self.0.conn.query_row("PRAGMA wal_checkpoint(PASSIVE)", [], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))?;
        Ok((busy == 0 && log >= 0).then_some((log, copied)))
    }

    /// Sets after how many pages (4 KiB) of log a commit on this connection
    /// checkpoints by itself.
    pub fn set_autocheckpoint(&self, pages: u32) -> Result<(), StoreError> {
        self.0.conn.pragma_update(None, "wal_autocheckpoint", pages)?;
        Ok(())
    }

    /// Marks trace `trace_id` as ended at `ended_at` (UTC, RFC 3339).
    pub fn finish_trace(
        &self,
        trace_id: i64,
        end: &TraceEnd,
        missing_frames: u64,
        ended_at: &str,
    ) -> Result<(), StoreError> {
        end_trace(&self.0, trace_id, end, missing_frames, ended_at)
    }

    /// Stores `frames` of trace `trace_id` in one transaction and adds them to
    /// the trace's counts.
    pub fn insert_frames(&mut self, trace_id: i64, frames: &[NewFrame]) -> Result<(), StoreError> {
        self.0.insert_batch(trace_id, frames)
    }

    /// A maintenance step on this connection ([`Store::maintain`]; the
    /// recorder runs one while its queue is idle).
    pub fn maintain(&mut self, index_rows: i64) -> Result<MaintenanceReport, StoreError> {
        self.0.maintain(index_rows)
    }
}

impl Deref for Recording {
    type Target = Store;

    fn deref(&self) -> &Store {
        &self.0
    }
}

/// The processes a recorded run hangs from.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Relay {
    /// The relay (acp-tee itself, or acp-tee proxy).
    pub pid: Option<u32>,
    /// The process that started the relay.
    pub client_pid: Option<u32>,
    /// The relay as `BOOT:PID:START` ([`crate::proc::process_key`]).
    pub key: Option<String>,
    /// The keys of the relay's ancestors, nearest first, up to the first
    /// acp-tee ([`crate::proc::ancestry`]).
    pub ancestors: Vec<String>,
    /// Whether an acp-tee ends `ancestors` (the trace may have a parent).
    pub ancestors_end_at_acp_tee: bool,
    /// Wrap mode: the agent the relay started, as `BOOT:PID:START`.
    pub agent_key: Option<String>,
}

impl Relay {
    /// The relay `pid` as /proc tells it now: its parent is the client.
    pub fn of(pid: u32) -> Relay {
        let (ancestors, ancestors_end_at_acp_tee) = crate::proc::ancestry(pid);
        Relay {
            pid: Some(pid),
            client_pid: crate::proc::parent_of(pid),
            key: crate::proc::process_key(pid),
            ancestors,
            ancestors_end_at_acp_tee,
            agent_key: None,
        }
    }
}

/// Adds the trace row of a run that is starting; returns its id.
fn add_trace(store: &Store, start: &TraceStart, recorder_pid: u32, relay: &Relay) -> Result<i64, StoreError> {
    let command = serde_json::to_string(&start.command).expect("strings always serialise");
    let ancestors = (!relay.ancestors.is_empty())
        .then(|| serde_json::to_string(&relay.ancestors).expect("strings always serialise"));
    store.write(|conn| {
        conn.execute(
            "INSERT INTO traces (name, command, cwd, mode, started_at, recorder_pid, relay_pid, client_pid, protocol,
                                 relay_key, ancestors, agent_key)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12)",
            params![
                start.name,
                command,
                start.cwd,
                start.mode,
                start.started_at,
                recorder_pid,
                relay.pid,
                relay.client_pid,
                start.protocol.map(|p| p.as_str()),
                relay.key,
                ancestors,
                relay.agent_key
            ],
        )?;
        Ok(conn.last_insert_rowid())
    })
}

/// Sets how trace `trace_id`'s run ended.
fn end_trace(
    store: &Store,
    trace_id: i64,
    end: &TraceEnd,
    missing_frames: u64,
    ended_at: &str,
) -> Result<(), StoreError> {
    store.write(|conn| {
        conn.execute(
            "UPDATE traces SET ended_at = ?1, exit_code = ?2, exit_signal = ?3, end_reason = ?4,
                               missing_frames = ?5
             WHERE id = ?6",
            params![ended_at, end.exit_code, end.exit_signal, end.end_reason, missing_frames as i64, trace_id],
        )?;
        Ok(())
    })
}

/// The test-only way to write fixtures through a plain [`Store`] (unit
/// tests build traces frame by frame; outside tests only a [`Recording`]
/// has these).
#[cfg(any(test, feature = "testing"))]
impl Store {
    pub fn create_trace(&self, start: &TraceStart, recorder_pid: u32) -> Result<i64, StoreError> {
        add_trace(self, start, recorder_pid, &Relay::default())
    }

    pub fn insert_frames(&mut self, trace_id: i64, frames: &[NewFrame]) -> Result<(), StoreError> {
        self.insert_batch(trace_id, frames)
    }

    pub fn finish_trace(
        &self,
        trace_id: i64,
        end: &TraceEnd,
        missing_frames: u64,
        ended_at: &str,
    ) -> Result<(), StoreError> {
        end_trace(self, trace_id, end, missing_frames, ended_at)
    }
}

/// The bytes trace `trace_id` holds per direction ([`Direction::ALL`]
/// order) and its last seq: what a recorder stored of the bytes that crossed.
pub(super) fn stored_bytes(conn: &rusqlite::Connection, trace_id: i64) -> rusqlite::Result<([u64; 3], i64)> {
    let (lo, hi) = frame_id_bounds(trace_id);
    let (mut bytes_of, mut last_seq) = ([0u64; 3], 0);
    let mut rows = conn.prepare(
        "SELECT dir, coalesce(sum(length(raw)), 0), coalesce(max(seq), 0) FROM frames
         WHERE id > ?1 AND id < ?2 GROUP BY dir",
    )?;
    let mut found = rows.query(params![lo, hi])?;
    while let Some(row) = found.next()? {
        let (dir, bytes, last): (String, i64, i64) = (row.get(0)?, row.get(1)?, row.get(2)?);
        if let Some(i) = Direction::ALL.iter().position(|d| d.as_str() == dir) {
            bytes_of[i] = bytes as u64;
        }
        last_seq = last_seq.max(last);
    }
    Ok((bytes_of, last_seq))
}
