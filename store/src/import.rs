//! Writing imported traces: a file's frames go in in chunks, each its own
//! short transaction, so that a recorder writing to the same store waits for
//! one chunk at most, never for a whole file.
//!
//! Readers never see a trace before its import is complete: the import sets
//! the trace's `recorder_pid` to its own process while it writes, and clears
//! it for all of a file's traces in one last transaction ([`SHOWN`]). An
//! import that fails deletes its traces (chunk by chunk too); one whose
//! process died (killed, out of memory) left its rows hidden, and the next
//! import into the store deletes them. So a failed import leaves the store as
//! every reader saw it.
//!
//! [`SHOWN`]: super::SHOWN

use super::{frame_id, frame_id_bounds, Store, StoreError};
use crate::model::NewFrame;
use acp_tee_shared::TraceMeta;
use rusqlite::params;

/// An import in progress: the traces it has created, hidden until
/// [`Import::commit`]. Dropping it without committing deletes them.
pub struct Import<'a> {
    store: &'a mut Store,
    traces: Vec<i64>,
    committed: bool,
}

/// What a trace being imported holds so far.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Stored {
    /// Frames stored.
    pub frames: i64,
    /// JSON-RPC error responses among them.
    pub errors: i64,
    /// The highest seq stored (0 for none).
    pub last_seq: i64,
}

impl Store {
    /// Starts an import, first deleting what imports whose process is gone
    /// left behind. The store must have this build's schema: run
    /// [`Store::maintain`] on it first (`acp-tee import` does).
    pub fn begin_import(&mut self) -> Result<Import<'_>, StoreError> {
        self.check_current()?;
        self.remove_abandoned_imports()?;
        Ok(Import { store: self, traces: Vec::new(), committed: false })
    }

    /// Deletes the traces of imports that were killed before they were
    /// complete (their process is gone); returns how many.
    fn remove_abandoned_imports(&mut self) -> Result<usize, StoreError> {
        let left: Vec<(i64, i64)> = self
            .conn
            .prepare(
                "SELECT id, recorder_pid FROM traces WHERE imported_from IS NOT NULL AND recorder_pid IS NOT NULL",
            )?
            .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?
            .collect::<Result<_, _>>()?;
        let mut removed = 0;
        for (id, pid) in left {
            if !crate::proc::process_exists(pid) {
                self.remove_trace(id)?;
                removed += 1;
            }
        }
        Ok(removed)
    }

    /// Deletes trace `trace_id`, hidden by its import, and everything that
    /// belongs to it, a chunk at a time (`retention.rs`).
    fn remove_trace(&mut self, trace_id: i64) -> Result<(), StoreError> {
        self.write(|conn| Ok(conn.execute("UPDATE traces SET removing = 1 WHERE id = ?1", [trace_id])?))?;
        while self.remove_some(i64::MAX)? {}
        Ok(())
    }
}

impl Import<'_> {
    /// Adds a trace with no frames yet, hidden until [`Import::commit`], for
    /// `mode` (`import` or the mode the file says it was recorded in), and
    /// returns its id.
    pub fn create_trace(&mut self, mode: &str, started_at: &str, imported_from: &str) -> Result<i64, StoreError> {
        let id = self.store.write(|conn| {
            conn.execute(
                "INSERT INTO traces (command, mode, started_at, imported_from, recorder_pid)
                 VALUES ('[]', ?1, ?2, ?3, ?4)",
                params![mode, started_at, imported_from, std::process::id()],
            )?;
            Ok(conn.last_insert_rowid())
        })?;
        self.traces.push(id);
        Ok(id)
    }

    /// Stores frames of trace `trace_id` in one transaction and adds them to
    /// its counts.
    pub fn insert_frames(&mut self, trace_id: i64, frames: &[NewFrame]) -> Result<(), StoreError> {
        self.store.insert_batch(trace_id, frames)
    }

    /// Whether trace `trace_id` has stored a frame with `seq`.
    pub fn has_frame(&self, trace_id: i64, seq: i64) -> Result<bool, StoreError> {
        let found = self.store.conn.query_row(
            "SELECT count(*) FROM frames WHERE id = ?1 AND seq = ?2",
            params![frame_id(trace_id, seq), seq],
            |r| r.get::<_, i64>(0),
        )?;
        Ok(found > 0)
    }

    /// What trace `trace_id` holds so far.
    pub fn stored(&self, trace_id: i64) -> Result<Stored, StoreError> {
        let (lo, hi) = frame_id_bounds(trace_id);
        Ok(self.store.conn.query_row(
            "SELECT frame_count, error_count,
                    coalesce((SELECT max(id) FROM frames WHERE id > ?2 AND id < ?3), ?2) - ?2
             FROM traces WHERE id = ?1",
            params![trace_id, lo, hi],
            |r| Ok(Stored { frames: r.get(0)?, errors: r.get(1)?, last_seq: r.get(2)? }),
        )?)
    }

    /// Sets the fields of trace `trace_id` to what `meta` says, but for its
    /// id and its counts of frames and errors, which are always those of the
    /// frames stored, and its protocol when `meta` has none (then what its
    /// frames' `initialize` told stays).
    pub fn set_meta(&mut self, trace_id: i64, meta: &TraceMeta) -> Result<(), StoreError> {
        let command = serde_json::to_string(&meta.command).expect("strings always serialise");
        self.store.write(|conn| {
            conn.execute(
                "UPDATE traces SET name = ?1, command = ?2, cwd = ?3, mode = ?4, started_at = ?5, ended_at = ?6,
                                   exit_code = ?7, exit_signal = ?8, end_reason = ?9, missing_frames = ?10,
                                   missing_unknown = ?12, protocol = coalesce(?13, protocol)
                 WHERE id = ?11",
                params![
                    meta.name,
                    command,
                    meta.cwd,
                    meta.mode,
                    meta.started_at,
                    meta.ended_at,
                    meta.exit_code,
                    meta.exit_signal,
                    meta.end_reason,
                    meta.missing_frames,
                    trace_id,
                    meta.missing_unknown,
                    meta.protocol.map(|p| p.as_str())
                ],
            )?;
            Ok(())
        })
    }

    /// Makes trace `parent` the parent of trace `child` (both of this
    /// import: a family exported together).
    pub fn link(&mut self, child: i64, parent: i64) -> Result<(), StoreError> {
        self.store.write(|conn| {
            conn.execute("UPDATE traces SET parent_trace = ?1 WHERE id = ?2", params![parent, child])?;
            Ok(())
        })
    }

    /// The trace as stored so far in this import, shown or not.
    pub fn trace(&self, trace_id: i64) -> Result<TraceMeta, StoreError> {
        let sql = format!("SELECT {} FROM traces WHERE id = ?1", super::queries::TRACE_COLUMNS);
        Ok(self.store.conn.query_row(&sql, params![trace_id], super::queries::trace_from_row)?)
    }

    /// Shows every trace of the import to readers, all at once.
    pub fn commit(mut self) -> Result<(), StoreError> {
        let traces = std::mem::take(&mut self.traces);
        self.store.write(|conn| {
            let mut show = conn.prepare_cached("UPDATE traces SET recorder_pid = NULL WHERE id = ?1")?;
            for id in &traces {
                show.execute(params![id])?;
            }
            Ok(())
        })?;
        self.committed = true;
        Ok(())
    }
}

impl Drop for Import<'_> {
    /// An import that was not committed takes its traces away again. If
    /// that fails too (the store is full or gone), they stay hidden and the
    /// next import deletes them.
    fn drop(&mut self) {
        if self.committed {
            return;
        }
        for id in std::mem::take(&mut self.traces) {
            if let Err(e) = self.store.remove_trace(id) {
                tracing::debug!("cannot remove the failed import's trace {id}: {e}; the next import will");
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::frame::Framer;
    use acp_tee_shared::Direction;

    fn frame(framer: &mut Framer, seq: i64) -> NewFrame {
        framer.message_at(seq, Direction::ClientToAgent, 5, b"{\"id\":1,\"method\":\"a\"}\n".to_vec(), None)
    }

    /// Rows in `table`, hidden ones included.
    fn rows(store: &Store, table: &str) -> i64 {
        store.conn.query_row(&format!("SELECT count(*) FROM {table}"), [], |r| r.get(0)).unwrap()
    }

    #[test]
    fn an_import_dropped_before_commit_leaves_nothing() {
        let mut store = Store::in_memory().unwrap();
        {
            let mut import = store.begin_import().unwrap();
            let id = import.create_trace("import", "2026-01-01T00:00:00.000000Z", "jsons file x").unwrap();
            let mut framer = Framer::new();
            let frames: Vec<NewFrame> =
                (1..=crate::retention::CHUNK_FRAMES + 3).map(|seq| frame(&mut framer, seq)).collect();
            import.insert_frames(id, &frames).unwrap();
            assert_eq!(import.trace(id).unwrap().frame_count, crate::retention::CHUNK_FRAMES + 3);
        }
        assert!(store.list_traces().unwrap().is_empty());
        for table in ["traces", "frames", "method_spans", "kind_counts", "method_stats"] {
            assert_eq!(rows(&store, table), 0, "{table}");
        }
    }

    #[test]
    fn an_import_is_hidden_until_committed() {
        let mut store = Store::in_memory().unwrap();
        let mut import = store.begin_import().unwrap();
        let id = import.create_trace("import", "2026-01-01T00:00:00.000000Z", "jsons file x").unwrap();
        import.insert_frames(id, &[frame(&mut Framer::new(), 1)]).unwrap();
        let reader = |import: &Import| {
            let s = &import.store;
            (
                s.list_traces().unwrap().len(),
                s.trace_summaries().unwrap().len(),
                s.trace(id).is_ok(),
                s.latest_trace_id().is_ok(),
            )
        };
        assert_eq!(reader(&import), (0, 0, false, false));
        assert_eq!(import.store.index_for_search(100).unwrap(), 0, "a hidden trace is not indexed");
        assert_eq!(import.store.end_abandoned_traces().unwrap(), 0);
        import.commit().unwrap();
        assert_eq!((store.list_traces().unwrap().len(), store.trace_summaries().unwrap().len()), (1, 1));
        assert_eq!(store.index_for_search(100).unwrap(), 1);
    }

    #[test]
    fn a_committed_import_has_the_meta_it_was_given_but_counts_of_its_frames() {
        let mut store = Store::in_memory().unwrap();
        let mut import = store.begin_import().unwrap();
        let id = import.create_trace("import", "2026-01-01T00:00:00.000000Z", "jsons file x").unwrap();
        let mut framer = Framer::new();
        import.insert_frames(id, &[frame(&mut framer, 2), frame(&mut framer, 7)]).unwrap();
        assert_eq!(import.stored(id).unwrap(), Stored { frames: 2, errors: 0, last_seq: 7 });
        let mut meta = import.trace(id).unwrap();
        meta.name = Some("n".into());
        meta.command = vec!["a".into()];
        meta.ended_at = Some("2026-01-01T00:00:01.000000Z".into());
        meta.missing_frames = 5;
        import.set_meta(id, &TraceMeta { frame_count: 99, error_count: 9, ..meta.clone() }).unwrap();
        import.commit().unwrap();
        assert_eq!(store.trace(id).unwrap(), TraceMeta { frame_count: 2, error_count: 0, ..meta });
        let summary = store.trace_summary(id).unwrap();
        assert_eq!(summary.imported_from.as_deref(), Some("jsons file x"));
        assert!(!summary.live);
    }

    #[test]
    fn what_a_dead_import_left_is_removed_by_the_next() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.db");
        let mut store = crate::create_maintained(&path);
        let mut import = store.begin_import().unwrap();
        let id = import.create_trace("import", "2026-01-01T00:00:00.000000Z", "jsons file x").unwrap();
        import.insert_frames(id, &[frame(&mut Framer::new(), 1)]).unwrap();
        // As if its process had died: a pid that no process has.
        import.store.conn.execute("UPDATE traces SET recorder_pid = ?1", params![i32::MAX]).unwrap();
        std::mem::forget(import);
        // Maintenance leaves it alone (it is not a cut-off recording).
        let mut store = Store::open_existing(&path).unwrap();
        assert_eq!(store.maintain(100).unwrap().ended, 0);
        assert_eq!((rows(&store, "traces"), rows(&store, "frames")), (1, 1));
        let import = store.begin_import().unwrap();
        drop(import);
        assert_eq!((rows(&store, "traces"), rows(&store, "frames"), rows(&store, "kind_counts")), (0, 0, 0));
    }
}
