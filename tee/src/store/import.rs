//! Writing imported traces: everything a file holds goes in in one
//! transaction, so a failed import leaves the store as it was.

use super::{insert_rows, Inserts, NewFrame, Store, StoreError};
use acp_tee_shared::TraceMeta;
use rusqlite::{params, Transaction, TransactionBehavior};

/// An import in progress: an open write transaction. Dropping it without
/// [`Import::commit`] rolls everything back.
///
/// The transaction holds the store's write lock until it ends; recorders
/// writing to the same store wait for it (up to the 30 s busy timeout).
pub struct Import<'a> {
    tx: Transaction<'a>,
    inserts: &'a mut Inserts,
}

impl Store {
    /// Starts an import: one write transaction for every trace of a file.
    pub fn begin_import(&mut self) -> Result<Import<'_>, StoreError> {
        let Store { inserts, conn, .. } = self;
        Ok(Import { tx: conn.transaction_with_behavior(TransactionBehavior::Immediate)?, inserts })
    }
}

impl Import<'_> {
    /// Adds a trace with no frames yet, for `mode` (`import` or the mode the
    /// file says it was recorded in), and returns its id. It has no recorder
    /// process, so it never counts as live.
    pub fn create_trace(&self, mode: &str, started_at: &str, imported_from: &str) -> Result<i64, StoreError> {
        self.tx.execute(
            "INSERT INTO traces (command, mode, started_at, imported_from) VALUES ('[]', ?1, ?2, ?3)",
            params![mode, started_at, imported_from],
        )?;
        Ok(self.tx.last_insert_rowid())
    }

    /// Stores frames of trace `trace_id` and adds them to its counts.
    pub fn insert_frames(&mut self, trace_id: i64, frames: &[NewFrame]) -> Result<(), StoreError> {
        insert_rows(&self.tx, self.inserts, trace_id, frames)
    }

    /// Sets every field of trace `trace_id` but its id to what `meta` says
    /// (counts included: a file's own counts win over the frames inserted).
    pub fn set_meta(&self, trace_id: i64, meta: &TraceMeta) -> Result<(), StoreError> {
        let command = serde_json::to_string(&meta.command).expect("strings always serialise");
        self.tx.execute(
            "UPDATE traces SET name = ?1, command = ?2, cwd = ?3, mode = ?4, started_at = ?5, ended_at = ?6,
                               exit_code = ?7, exit_signal = ?8, end_reason = ?9, frame_count = ?10,
                               error_count = ?11, missing_frames = ?12
             WHERE id = ?13",
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
                meta.frame_count,
                meta.error_count,
                meta.missing_frames,
                trace_id
            ],
        )?;
        Ok(())
    }

    /// The trace as stored so far in this import.
    pub fn trace(&self, trace_id: i64) -> Result<TraceMeta, StoreError> {
        let sql = format!("SELECT {} FROM traces WHERE id = ?1", super::queries::TRACE_COLUMNS);
        Ok(self.tx.query_row(&sql, params![trace_id], super::queries::trace_from_row)?)
    }

    /// Makes the import visible to every reader, all at once.
    pub fn commit(self) -> Result<(), StoreError> {
        self.tx.commit()?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::recorder::Framer;
    use acp_tee_shared::Direction;

    #[test]
    fn an_import_dropped_before_commit_leaves_nothing() {
        let mut store = Store::in_memory().unwrap();
        {
            let mut import = store.begin_import().unwrap();
            let id = import.create_trace("import", "2026-01-01T00:00:00.000000Z", "jsons file x").unwrap();
            let frame =
                Framer::new().message(Direction::ClientToAgent, 5, b"{\"id\":1,\"method\":\"a\"}".to_vec(), None);
            import.insert_frames(id, &[frame]).unwrap();
            assert_eq!(import.trace(id).unwrap().frame_count, 1);
        }
        assert!(store.list_traces().unwrap().is_empty());
    }

    #[test]
    fn a_committed_import_has_the_meta_it_was_given() {
        let mut store = Store::in_memory().unwrap();
        let import = store.begin_import().unwrap();
        let id = import.create_trace("import", "2026-01-01T00:00:00.000000Z", "jsons file x").unwrap();
        let mut meta = import.trace(id).unwrap();
        meta.name = Some("n".into());
        meta.command = vec!["a".into()];
        meta.ended_at = Some("2026-01-01T00:00:01.000000Z".into());
        meta.frame_count = 7;
        import.set_meta(id, &meta).unwrap();
        import.commit().unwrap();
        assert_eq!(store.trace(id).unwrap(), meta);
        let summary = store.trace_summary(id).unwrap();
        assert_eq!(summary.imported_from.as_deref(), Some("jsons file x"));
        assert!(!summary.live);
    }
}
