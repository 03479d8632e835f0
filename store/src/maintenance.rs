//! Maintenance: the store's upkeep, one explicit step that writers run,
//! never a side effect of opening a store.
//!
//! A step brings the schema up to date (`migrations/`), ends the traces
//! whose recorder is gone without having ended them (`CUT_OFF`), does a
//! bounded part of removing traces (`retention.rs`: what `rm` or `prune`
//! left unfinished, space to give back, the retention policy when due), and
//! adds a bounded number of frames to the search index. Who runs it:
//!
//! - the recorder, once before it creates its trace (no indexing then, so
//!   the run is not held up) and whenever its queue is idle;
//! - `acp-tee serve`, once at start ([`maintain_existing`]) and in its
//!   background indexer's loop (`server/live.rs`);
//! - the CLI's read commands (`list`, `export`, ...) and `import`, before
//!   they read or write, when the store is writable here.
//!
//! A [`super::Reader`] does no upkeep: it refuses a store whose schema is
//! older than this build's, saying which command brings it up to date.

use super::{frame_id, frame_id_bounds, migrations, retry_busy, Store, StoreError, SHOWN};
use crate::model::CUT_OFF;
use rusqlite::{params, TransactionBehavior};
use std::path::Path;

/// Frames of this many bytes or more are indexed for search from their row
/// (`index_large`), so that indexing holds such a frame once, in SQLite,
/// rather than three times (read out, decoded, bound back in).
const INDEX_IN_PLACE_FROM: i64 = 1 << 20;

/// How much of a large frame [`utf8_in_place`] reads at once.
const CHECK_READ: usize = 256 * 1024;

/// What one maintenance step did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct MaintenanceReport {
    /// The schema version found, when migrations brought it up to date.
    pub migrated_from: Option<i64>,
    /// Traces ended as cut off (their recorder was gone).
    pub ended: usize,
    /// Frames added to the search index.
    pub indexed: usize,
    /// Traces the retention policy ([`Store::retain`]) marked for removal.
    pub retained_out: usize,
    /// True when removing traces, or giving their space back, is not done:
    /// the next step goes on with it.
    pub removal_left: bool,
}

/// Opens the existing store at `path` on a short-lived connection of its own
/// and runs one maintenance step, indexing up to `index_rows` frames. A
/// store this process cannot write is left as it is (and refused, should
/// its schema be older than this build's).
pub fn maintain_existing(path: &Path, index_rows: i64) -> Result<MaintenanceReport, StoreError> {
    Store::open_existing(path)?.maintain(index_rows)
}

impl Store {
    /// One maintenance step: migrations (an error when they fail), then the
    /// traces whose recorder is gone, then up to `index_rows` frames for
    /// search. The last two only delay what readers see when they fail, so
    /// their failures are logged, not returned. Nothing is done on a
    /// connection that cannot write.
    pub fn maintain(&mut self, index_rows: i64) -> Result<MaintenanceReport, StoreError> {
        let mut report = MaintenanceReport::default();
        if self.is_read_only() {
            return Ok(report);
        }
        let found = retry_busy(|| {
            migrations::apply(&mut self.conn).map_err(|source| StoreError::Migrate { path: self.path.clone(), source })
        })?;
        report.migrated_from = (found != migrations::SCHEMA_VERSION).then_some(found);
        match self.end_abandoned_traces() {
            Ok(n) => report.ended = n,
            Err(e) => tracing::debug!("cannot mark abandoned traces in {}: {e}", self.path.display()),
        }
        match self.retention_step() {
            Ok((marked, left)) => (report.retained_out, report.removal_left) = (marked, left),
            Err(e) => tracing::debug!("retention in {}: {e}", self.path.display()),
        }
        if index_rows > 0 {
            match self.index_for_search(index_rows) {
                Ok(n) => report.indexed = n,
                Err(e) => tracing::debug!("search indexing of {}: {e}", self.path.display()),
            }
        }
        Ok(report)
    }

    /// Adds up to `max_rows` stored frames that are not yet in the search
    /// index to it, trace by trace, in one transaction; returns how many. Any
    /// recorder may do this for any trace: the progress is kept per trace.
    pub fn index_for_search(&mut self, max_rows: i64) -> Result<usize, StoreError> {
        let tx = self.conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
        let mut count = 0;
        {
            let traces: Vec<(i64, i64)> = tx
                .prepare_cached(&format!(
                    "SELECT t.id, coalesce(p.indexed_seq, 0) FROM traces t
                     LEFT JOIN search_progress p ON p.trace_id = t.id WHERE {SHOWN} ORDER BY t.id"
                ))?
                .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?
                .collect::<Result<_, _>>()?;
            // A large frame's bytes are not read here: SQLite indexes it
            // from its row (`index_large`).
            let mut rows = tx.prepare_cached(
                "SELECT id, seq, CASE WHEN length(raw) < ?4 THEN raw END FROM frames
                 WHERE id > ?1 AND id < ?2 ORDER BY id LIMIT ?3",
            )?;
            let mut index = tx.prepare_cached("INSERT INTO frames_fts (rowid, text) VALUES (?1, ?2)")?;
            let mut progress = tx.prepare_cached(
                "INSERT INTO search_progress (trace_id, indexed_seq) VALUES (?1, ?2)
                 ON CONFLICT (trace_id) DO UPDATE SET indexed_seq = excluded.indexed_seq",
            )?;
            for (trace_id, done) in traces {
                if count >= max_rows {
                    break;
                }
                let (_, end) = frame_id_bounds(trace_id);
                let mut last = None;
                let mut found =
                    rows.query(params![frame_id(trace_id, done), end, max_rows - count, INDEX_IN_PLACE_FROM])?;
                while let Some(row) = found.next()? {
                    let (id, seq, raw): (i64, i64, Option<Vec<u8>>) = (row.get(0)?, row.get(1)?, row.get(2)?);
                    match raw {
                        // Bytes that are not UTF-8 are searched as far as they decode.
                        Some(raw) => index.execute(params![id, String::from_utf8_lossy(&raw)])?,
                        None => index_large(&tx, id)?,
                    };
                    last = Some(seq);
                    count += 1;
                }
                if let Some(seq) = last {
                    progress.execute(params![trace_id, seq])?;
                }
            }
        }
        tx.commit()?;
        Ok(count as usize)
    }

    /// Ends every trace that has no end while its recorder process is gone
    /// (acp-tee and its recorder were both killed): the end is the time of its
    /// last frame, the reason says it was cut off. Returns how many. Imports
    /// are left alone: one whose process died is removed by the next import
    /// (`import.rs`).
    ///
    /// A trace whose relay left its end ([`crate::end_note`]) is ended as
    /// the relay said instead, with what was not stored counted: frames are
    /// missing in a number not known when fewer bytes were stored than
    /// crossed.
    pub fn end_abandoned_traces(&self) -> Result<usize, StoreError> {
        type Open = (i64, String, Option<i64>, Option<u32>);
        let open: Vec<Open> = self
            .conn
            .prepare(
                "SELECT id, started_at, recorder_pid, relay_pid FROM traces
                 WHERE ended_at IS NULL AND imported_from IS NULL",
            )?
            .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)))?
            .collect::<Result<_, _>>()?;
        let mut ended = 0;
        for (id, started_at, pid, relay) in open {
            // Traces that never had a recorder are not ours to end.
            if pid.is_none_or(crate::proc::process_exists) {
                continue;
            }
            if let Some(note) = relay.and_then(|relay| crate::end_note::read(&self.path, relay, &started_at)) {
                ended += self.end_from_note(id, &note)?;
                crate::end_note::remove(&self.path, note.relay_pid, &started_at);
                continue;
            }
            let (lo, hi) = frame_id_bounds(id);
            let last_t_ns: i64 = self.conn.query_row(
                "SELECT coalesce(max(t_ns), 0) FROM frames WHERE id > ?1 AND id < ?2",
                params![lo, hi],
                |r| r.get(0),
            )?;
            let ended_at = chrono::DateTime::parse_from_rfc3339(&started_at)
                .map(|s| {
                    (s + chrono::Duration::nanoseconds(last_t_ns))
                        .with_timezone(&chrono::Utc)
                        .to_rfc3339_opts(chrono::SecondsFormat::Micros, true)
                })
                .unwrap_or(started_at);
            ended += self.conn.execute(
                "UPDATE traces SET ended_at = ?1, end_reason = ?2 WHERE id = ?3 AND ended_at IS NULL",
                params![ended_at, CUT_OFF, id],
            )?;
        }
        Ok(ended)
    }

    /// Ends trace `id`, whose recorder is gone, as its relay's `note` says,
    /// comparing the bytes stored with those that crossed.
    fn end_from_note(&self, id: i64, note: &crate::end_note::EndNote) -> Result<usize, StoreError> {
        let (stored, _) = super::recording::stored_bytes(&self.conn, id)?;
        let lost: Vec<u64> = note.crossed.iter().zip(stored).map(|(c, s)| c.saturating_sub(s)).collect();
        let lost_in = lost.iter().filter(|&&l| l > 0).count() as i64;
        if note.masked {
            // Masked frames are not the bytes that crossed: whether all
            // were stored cannot be told.
            let reason = format!(
                "{}; stored from the end acp-tee left: its recorder was gone before it stored it, and whether it \
                 had stored every frame cannot be told (frames are stored masked)",
                note.end.end_reason
            );
            return Ok(self.conn.execute(
                "UPDATE traces SET ended_at = ?1, exit_code = ?2, exit_signal = ?3, end_reason = ?4,
                                   missing_unknown = 1
                 WHERE id = ?5 AND ended_at IS NULL",
                params![note.ended_at, note.end.exit_code, note.end.exit_signal, reason, id],
            )?);
        }
        let reason = if lost_in == 0 {
            format!(
                "{}; stored from the end acp-tee left: its recorder was gone before it stored it",
                note.end.end_reason
            )
        } else {
            format!(
                "{}; no recorder survived to store the whole run: {} of the {} bytes that crossed were not stored \
                 (client to agent {}, agent to client {}, agent stderr {}), in how many frames is not known",
                note.end.end_reason,
                lost.iter().sum::<u64>(),
                note.crossed.iter().sum::<u64>(),
                lost[0],
                lost[1],
                lost[2]
            )
        };
        // Each direction that lost bytes lost one frame at least.
        Ok(self.conn.execute(
            "UPDATE traces SET ended_at = ?1, exit_code = ?2, exit_signal = ?3, end_reason = ?4,
                               missing_frames = missing_frames + ?5, missing_unknown = ?6
             WHERE id = ?7 AND ended_at IS NULL",
            params![note.ended_at, note.end.exit_code, note.end.exit_signal, reason, lost_in, lost_in > 0, id],
        )?)
    }
}

/// Adds the large frame `id` to the search index. UTF-8 bytes are indexed
/// from the row as text (`CAST`); other bytes are decoded in Rust as a small
/// frame's are (invalid sequences as U+FFFD), which holds them more than once.
fn index_large(conn: &rusqlite::Connection, id: i64) -> Result<usize, StoreError> {
    if utf8_in_place(conn, id)? {
        let mut index = conn.prepare_cached(
            "INSERT INTO frames_fts (rowid, text) SELECT id, CAST(raw AS TEXT) FROM frames WHERE id = ?1",
        )?;
        return Ok(index.execute([id])?);
    }
    let raw: Vec<u8> = conn.query_row("SELECT raw FROM frames WHERE id = ?1", [id], |r| r.get(0))?;
    let mut index = conn.prepare_cached("INSERT INTO frames_fts (rowid, text) VALUES (?1, ?2)")?;
    Ok(index.execute(params![id, String::from_utf8_lossy(&raw)])?)
}

/// Whether frame `id`'s bytes are UTF-8, read a piece at a time through
/// SQLite's blob I/O (never whole).
fn utf8_in_place(conn: &rusqlite::Connection, id: i64) -> Result<bool, StoreError> {
    let blob = conn.blob_open(rusqlite::MAIN_DB, "frames", "raw", id, true)?;
    let mut buf = vec![0u8; CHECK_READ];
    // Bytes of a character cut by the end of the last piece.
    let (mut carried, mut at) = (0, 0);
    loop {
        let n = blob.read_at(&mut buf[carried..], at)?;
        at += n;
        let filled = carried + n;
        if n == 0 {
            return Ok(filled == 0);
        }
        match std::str::from_utf8(&buf[..filled]) {
            Ok(_) => carried = 0,
            Err(e) if e.error_len().is_none() => {
                let valid = e.valid_up_to();
                buf.copy_within(valid..filled, 0);
                carried = filled - valid;
            }
            Err(_) => return Ok(false),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{create_maintained, test_start, Reader};

    /// A pid no process has.
    const GONE: u32 = i32::MAX as u32;

    #[test]
    fn opening_changes_nothing_and_maintenance_ends_abandoned_traces() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.db");
        let id = create_maintained(&path).create_trace(&test_start(), GONE).unwrap();
        let mut store = Store::open_existing(&path).unwrap();
        assert_eq!(store.trace(id).unwrap().ended_at, None, "opening ended a trace");
        drop(Reader::open(&path).unwrap());
        assert_eq!(store.trace(id).unwrap().ended_at, None, "a reader ended a trace");
        let report = store.maintain(0).unwrap();
        assert_eq!(
            report,
            MaintenanceReport { migrated_from: None, ended: 1, indexed: 0, retained_out: 0, removal_left: false }
        );
        assert_eq!(store.trace(id).unwrap().end_reason.as_deref(), Some(CUT_OFF));
    }

    #[test]
    fn an_older_store_is_migrated_by_maintenance_and_refused_by_readers_until_then() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.db");
        // A new file is the oldest schema there is: version 0.
        drop(Store::create_or_open(&path).unwrap());
        let old = 0;
        let mut store = Store::open_existing(&path).unwrap();
        let refused = Reader::open(&path).err().expect("a reader opened an older store").to_string();
        assert!(refused.contains("acp-tee list"), "{refused}");
        let found: i64 = store.conn.query_row("PRAGMA user_version", [], |r| r.get(0)).unwrap();
        assert_eq!(found, old, "opening migrated the store");
        assert_eq!(store.maintain(0).unwrap().migrated_from, Some(old));
        assert!(Reader::open(&path).is_ok());
    }

    #[test]
    fn maintenance_indexes_a_bounded_step() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.db");
        let mut store = create_maintained(&path);
        let id = store.create_trace(&test_start(), std::process::id()).unwrap();
        let mut framer = crate::frame::Framer::new();
        let mut frames = Vec::new();
        framer
            .chunk(acp_tee_shared::Direction::ClientToAgent, 1, &b"{\"method\":\"a\"}\n".repeat(5), |f| frames.push(f));
        store.insert_frames(id, &frames).unwrap();
        assert_eq!(store.maintain(3).unwrap().indexed, 3);
        assert_eq!(store.maintain(3).unwrap().indexed, 2);
        assert_eq!(store.maintain(3).unwrap().indexed, 0);
    }
}
