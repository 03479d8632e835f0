//! Where a compared or replayed trace comes from: a trace in the store
//! (found by the command line, `cli/trace_ref.rs`), or a file in a format
//! `acp-tee import` reads, imported into a temporary store of its own (the
//! user's store is not changed).

use crate::import::{ImportFormat, ImportOptions};
use crate::store::{self, Reader, Store};
use std::path::{Path, PathBuf};

/// A trace opened for reading, and what keeps it readable.
pub struct Opened {
    /// The store holding it.
    held: Held,
    /// Its id in that store.
    pub trace_id: i64,
    /// How to name it to a person: `trace 3` or the file's path.
    pub label: String,
}

enum Held {
    Store(Reader),
    /// A file imported into a store in a temporary directory, removed on
    /// drop (none for a store made in memory by a test).
    Owned(Store, #[allow(dead_code)] Option<tempfile::TempDir>),
}

impl Opened {
    /// Trace `trace_id` of `store`, which the result owns.
    #[cfg(test)]
    pub fn owning(store: Store, trace_id: i64) -> Opened {
        Opened { held: Held::Owned(store, None), trace_id, label: format!("trace {trace_id}") }
    }

    /// The store to read the trace from.
    pub fn store(&self) -> &Store {
        match &self.held {
            Held::Store(r) => r,
            Held::Owned(s, _) => s,
        }
    }
}

/// Why a trace cannot be opened.
#[derive(Debug, thiserror::Error)]
pub enum SourceError {
    /// The store failed.
    #[error(transparent)]
    Store(#[from] store::StoreError),
    /// The file could not be imported.
    #[error(transparent)]
    Import(#[from] crate::import::ImportError),
    /// No temporary directory.
    #[error("cannot make a temporary store for {path}: {cause}")]
    Temp { path: PathBuf, cause: std::io::Error },
}

/// Trace `trace_id` of the store `reader` reads (found by the caller).
pub fn stored(reader: Reader, trace_id: i64) -> Opened {
    Opened { held: Held::Store(reader), trace_id, label: format!("trace {trace_id}") }
}

/// Imports the file at `file` (called `path` in messages and the label)
/// into a store of its own in a temporary directory; the file's first
/// trace is the one read.
pub fn import_file(file: &Path, path: &Path) -> Result<Opened, SourceError> {
    let temp = tempfile::tempdir().map_err(|cause| SourceError::Temp { path: path.to_owned(), cause })?;
    let mut store = Store::create_or_open(&temp.path().join("traces.db"))?;
    store.maintain(0)?;
    let opts = ImportOptions {
        format: ImportFormat::Auto,
        name: None,
        skip_bad: false,
        progress: indicatif::ProgressBar::hidden(),
    };
    let summary = crate::import::import_as(&mut store, file, path, &opts)?;
    let trace_id = summary.trace_ids[0];
    Ok(Opened { held: Held::Owned(store, Some(temp)), trace_id, label: path.display().to_string() })
}

impl<'a> From<&'a Opened> for super::diff::SideRef<'a> {
    fn from(o: &'a Opened) -> super::diff::SideRef<'a> {
        super::diff::SideRef { store: o.store(), trace_id: o.trace_id }
    }
}
