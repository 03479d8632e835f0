//! Schema migrations from `migrations/`, keyed by `PRAGMA user_version`.

use rusqlite::{Connection, TransactionBehavior};

/// Every migration, in order; migration `i` brings the schema to version `i + 1`.
/// Append-only: a released migration is never edited.
const MIGRATIONS: &[&str] = &[
    include_str!("../../../migrations/0001_traces_and_frames.sql"),
    include_str!("../../../migrations/0002_proxy_hops_and_mcp.sql"),
    include_str!("../../../migrations/0003_viewer_queries.sql"),
    include_str!("../../../migrations/0004_imports_and_peers.sql"),
];

/// The schema version this build writes.
pub const SCHEMA_VERSION: i64 = MIGRATIONS.len() as i64;

/// Brings the schema up to date in one exclusive transaction, so that several
/// processes opening a new store at once apply each migration exactly once.
/// Returns the version found before, or an error when the store is from a
/// newer acp-tee.
pub fn apply(conn: &mut Connection) -> Result<i64, MigrationError> {
    // The common case, an up-to-date store, takes no write lock at all.
    let current: i64 = conn.query_row("PRAGMA user_version", [], |r| r.get(0))?;
    if current == SCHEMA_VERSION {
        return Ok(current);
    }
    let tx = conn.transaction_with_behavior(TransactionBehavior::Exclusive)?;
    let found: i64 = tx.query_row("PRAGMA user_version", [], |r| r.get(0))?;
    if found > SCHEMA_VERSION {
        return Err(MigrationError::TooNew { found, known: SCHEMA_VERSION });
    }
    for sql in &MIGRATIONS[found as usize..] {
        tx.execute_batch(sql)?;
    }
    tx.pragma_update(None, "user_version", SCHEMA_VERSION)?;
    tx.commit()?;
    Ok(found)
}

/// Why the schema could not be brought up to date.
#[derive(Debug, thiserror::Error)]
pub enum MigrationError {
    /// The store was written by a newer acp-tee.
    #[error("the store has schema version {found}, newer than this acp-tee knows ({known}); upgrade acp-tee")]
    TooNew {
        /// The version in the file.
        found: i64,
        /// The newest version this build knows.
        known: i64,
    },
    /// SQLite refused.
    #[error(transparent)]
    Sqlite(#[from] rusqlite::Error),
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn migrations_apply_twice() {
        let mut conn = Connection::open_in_memory().unwrap();
        assert_eq!(apply(&mut conn).unwrap(), 0);
        assert_eq!(apply(&mut conn).unwrap(), SCHEMA_VERSION);
        let tables: Vec<String> = conn
            .prepare("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")
            .unwrap()
            .query_map([], |r| r.get(0))
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap();
        assert!(tables.contains(&"frames".to_owned()) && tables.contains(&"traces".to_owned()), "{tables:?}");
        assert!(tables.contains(&"frames_fts".to_owned()), "{tables:?}");
    }

    #[test]
    fn newer_store_is_refused() {
        let mut conn = Connection::open_in_memory().unwrap();
        conn.pragma_update(None, "user_version", SCHEMA_VERSION + 1).unwrap();
        let err = apply(&mut conn).unwrap_err();
        assert!(err.to_string().contains("upgrade acp-tee"), "{err}");
    }
}
