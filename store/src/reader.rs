//! The read-only role: connections that SQLite itself keeps from writing.

use super::{Store, StoreError};
use std::ops::Deref;
use std::path::Path;

/// A store opened to read only: the server's connections and exports.
///
/// The connection runs with `PRAGMA query_only=1`, so every statement that
/// would change the file (an insert, an update, a schema change) fails in
/// SQLite with `SQLITE_READONLY`, whichever method issues it. It derefs to
/// [`Store`] for the typed queries, never mutably, so the methods that take
/// `&mut Store` (inserting frames) are out of reach too.
///
/// Opening does no upkeep: a store whose schema is older than this build's
/// is refused with the command that brings it up to date (the CLI's read
/// commands and `serve` run [`Store::maintain`] on a writable store before
/// they open readers). The server's background maintenance is the one
/// writer beside the recorders: it opens a [`Store`] of its own
/// (`server/live.rs`).
pub struct Reader(Store);

impl Reader {
    /// Opens the existing store at `path` for reading only.
    pub fn open(path: &Path) -> Result<Reader, StoreError> {
        let store = Store::open_existing(path)?;
        store.check_current()?;
        store.conn.pragma_update(None, "query_only", true)?;
        Ok(Reader(store))
    }
}

impl Deref for Reader {
    type Target = Store;

    fn deref(&self) -> &Store {
        &self.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_start;

    #[test]
    fn a_reader_reads_but_every_write_through_it_fails_in_sqlite() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.db");
        let store = crate::create_maintained(&path);
        let id = store.create_trace(&test_start(), 1).unwrap();

        let reader = Reader::open(&path).unwrap();
        assert_eq!(reader.list_traces().unwrap().len(), 1);
        let write = reader.create_trace(&test_start(), 1).unwrap_err();
        assert!(write.to_string().contains("readonly") || write.to_string().contains("read-only"), "{write}");
        assert!(reader.conn.execute("DELETE FROM traces", []).is_err());
        assert!(reader.conn.execute_batch("CREATE TABLE t (x)").is_err());
        // The writer's connection still writes, and the reader sees it.
        store.create_trace(&test_start(), 1).unwrap();
        assert_eq!(reader.list_traces().unwrap().len(), 2);
        assert!(reader.trace(id).is_ok());
    }
}
