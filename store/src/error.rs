//! What can go wrong with the store, worded for the person who can fix it.

use super::migrations::MigrationError;
use std::path::PathBuf;

/// A store operation failed.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// Neither `XDG_DATA_HOME` nor `HOME` is set.
    #[error("cannot find a place for the trace store: neither XDG_DATA_HOME nor HOME is set; pass --db")]
    NoDefaultPath,
    /// The file or its directory could not be created or opened.
    #[error("cannot open trace store {}: {source}; pass --db to use another file", path.display())]
    Io {
        /// The path that failed.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// The store's directory could not be created.
    #[error("cannot create the directory {} for the trace store: {source}; pass --db to use another file", path.display())]
    CreateDir {
        /// The directory.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// SQLite could not open the file.
    #[error("cannot open trace store {}: {source}; pass --db to use another file", path.display())]
    Open {
        /// The store's path.
        path: PathBuf,
        /// Why.
        source: rusqlite::Error,
    },
    /// There is no store at the path.
    #[error("no trace store at {}; record a session first (acp-tee -- AGENT) or pass --db", path.display())]
    Missing {
        /// The store's path.
        path: PathBuf,
    },
    /// The schema could not be brought up to date.
    #[error("cannot prepare trace store {}: {source}", path.display())]
    Migrate {
        /// The store's path.
        path: PathBuf,
        /// Why.
        source: MigrationError,
    },
    /// The store cannot be written here, and the command must write.
    #[error("cannot change trace store {}: it is read-only here (file, directory or mount)", path.display())]
    NotWritable {
        /// The store's path.
        path: PathBuf,
    },
    /// No trace has that id.
    #[error("no trace with id {0}; `acp-tee list` shows the traces there are")]
    NoSuchTrace(i64),
    /// The store has no traces.
    #[error("the store has no traces yet; record one with `acp-tee -- AGENT`")]
    NoTraces,
    /// A stored value is not what this build expects.
    #[error("the store holds a value this acp-tee cannot read: {0}")]
    Corrupt(String),
    /// A number the store cannot key a frame by.
    #[error("cannot store a frame with {0}")]
    OutOfRange(String),
    /// A search text that cannot be searched for.
    #[error(transparent)]
    Search(#[from] super::search::SearchError),
    /// Any other SQLite failure.
    #[error("trace store: {0}")]
    Sqlite(#[from] rusqlite::Error),
}

impl StoreError {
    /// True when SQLite said the store cannot be written here (a read-only
    /// file, directory or mount).
    pub fn is_read_only(&self) -> bool {
        matches!(self.sqlite_code(), Some(rusqlite::ErrorCode::ReadOnly | rusqlite::ErrorCode::CannotOpen))
    }

    /// SQLite's error code, when SQLite is where the error came from.
    fn sqlite_code(&self) -> Option<rusqlite::ErrorCode> {
        let sqlite = match self {
            StoreError::Open { source, .. } | StoreError::Sqlite(source) => source,
            StoreError::Migrate { source: super::migrations::MigrationError::Sqlite(source), .. } => source,
            _ => return None,
        };
        sqlite.sqlite_error_code()
    }

    /// True when a statement was stopped by [`super::Store::interrupt_after`]'s limit.
    pub fn is_interrupted(&self) -> bool {
        matches!(self, StoreError::Sqlite(e) if e.sqlite_error_code() == Some(rusqlite::ErrorCode::OperationInterrupted))
    }

    /// True when SQLite said the store is busy or locked by another connection.
    pub fn is_busy(&self) -> bool {
        matches!(self.sqlite_code(), Some(rusqlite::ErrorCode::DatabaseBusy | rusqlite::ErrorCode::DatabaseLocked))
    }
}
