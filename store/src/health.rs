//! A store's health, for `acp-tee doctor`: what a quick look can tell
//! without changing the store.

use crate::migrations::SCHEMA_VERSION;
use crate::{Store, StoreError};

/// Problems `quick_check` lists at most.
const PROBLEMS_LISTED: usize = 10;

/// What [`Store::health`] found.
#[derive(Debug)]
pub struct Health {
    /// The schema version the store is at.
    pub schema_version: i64,
    /// The schema version this build writes ([`SCHEMA_VERSION`]).
    pub known_version: i64,
    /// SQLite's `quick_check`: empty when the file is sound, else its first
    /// problems.
    pub problems: Vec<String>,
    /// Traces stored.
    pub traces: i64,
    /// The database file's bytes, and its write-ahead log's.
    pub file_bytes: u64,
    pub wal_bytes: u64,
    /// Its pages: free ones, and whether they go back to the filesystem.
    pub pages: crate::Pages,
}

impl Store {
    /// The store's health: schema version, `quick_check`, traces and sizes.
    /// Reads only.
    pub fn health(&self) -> Result<Health, StoreError> {
        let schema_version: i64 = self.conn.query_row("PRAGMA user_version", [], |r| r.get(0))?;
        let mut stmt = self.conn.prepare(&format!("PRAGMA quick_check({PROBLEMS_LISTED})"))?;
        let found: Vec<String> = stmt.query_map([], |r| r.get(0))?.collect::<Result<_, _>>()?;
        let problems = if found == ["ok"] { Vec::new() } else { found };
        let traces =
            if schema_version > 0 { self.conn.query_row("SELECT count(*) FROM traces", [], |r| r.get(0))? } else { 0 };
        let on_disk = crate::on_disk(&self.path);
        Ok(Health {
            schema_version,
            known_version: SCHEMA_VERSION,
            problems,
            traces,
            file_bytes: on_disk.file,
            wal_bytes: on_disk.wal,
            pages: self.pages()?,
        })
    }
}
