//! Store connections for async readers (`serve`'s handlers, `mcp`'s tools):
//! a small pool, queries run on tokio's blocking threads, scans and exports
//! kept from crowding out the rest.
//!
//! Every connection here is a [`Reader`] (`PRAGMA query_only=1`): the HTTP
//! API and the MCP tools cannot write the store, even by mistake. The one
//! writer the server runs, the background search indexer, opens its own
//! connection (`server/live.rs`, `index_behind_recorders`).

use crate::store::{Reader, Store, StoreError};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

/// Queries running at once at most: also the most connections (each with its
/// own page cache) and blocking threads the store ever takes for queries,
/// however many clients and live streams there are.
const CONCURRENT_QUERIES: usize = 8;

/// Of those, queries that may scan a trace (searches and other filtered
/// pages) take at most this many at once, so the rest (the trace list,
/// unfiltered pages, a frame, stats, live streams) always find a free slot.
const CONCURRENT_SCANS: usize = 4;

/// A query still running after this long is stopped (SQLite's progress
/// handler interrupts it) and answered 503: no client holds a slot longer.
pub const QUERY_TIME_LIMIT: Duration = Duration::from_secs(20);

/// How long a comparison of two traces (`/api/diff`) may run: it reads both
/// traces whole (two of a million frames take a few seconds in a release
/// build), in one of the scan slots, for a user who asked for it and waits.
pub const DIFF_TIME_LIMIT: Duration = Duration::from_secs(60);

/// Exports that run at once at most. An export does not take a query slot:
/// it has a connection and a blocking thread of its own, reads in short
/// steps (no read transaction lasts while it waits for the client) and is
/// stopped when its client reads nothing for `EXPORT_STALL` (`routes.rs`).
/// Beyond this many, exports are refused (503), not queued.
pub const MAX_EXPORTS: usize = 16;

/// Shared access to one store file.
#[derive(Clone)]
pub struct Db {
    path: PathBuf,
    idle: Arc<Mutex<Vec<Reader>>>,
    queries: Arc<Semaphore>,
    scans: Arc<Semaphore>,
    exports: Arc<Semaphore>,
    /// Queries at once at most, and connections kept idle.
    most: usize,
    time_limit: Duration,
}

impl Db {
    /// Opens the store at `path` (it must exist, with this build's schema:
    /// `serve` maintains it first) for reading only.
    pub fn open(path: &Path) -> Result<Db, StoreError> {
        let first = Reader::open(path)?;
        Ok(Db::around(path, first))
    }

    /// The pool of the store `first` reads, `first` its first connection,
    /// running at most `queries` queries at once (a front end with one
    /// client, `mcp`, needs fewer than the server's
    /// `CONCURRENT_QUERIES`).
    pub fn from_reader(first: Reader, queries: usize) -> Db {
        let path = first.path().to_owned();
        Db::sized(&path, first, queries.clamp(1, CONCURRENT_QUERIES))
    }

    fn around(path: &Path, first: Reader) -> Db {
        Db::sized(path, first, CONCURRENT_QUERIES)
    }

    fn sized(path: &Path, first: Reader, queries: usize) -> Db {
        Db {
            path: path.to_owned(),
            idle: Arc::new(Mutex::new(vec![first])),
            queries: Arc::new(Semaphore::new(queries)),
            scans: Arc::new(Semaphore::new(CONCURRENT_SCANS.min(queries))),
            most: queries,
            exports: Arc::new(Semaphore::new(MAX_EXPORTS)),
            time_limit: QUERY_TIME_LIMIT,
        }
    }

    /// The same store with queries stopped after `limit` instead of
    /// [`QUERY_TIME_LIMIT`].
    pub fn with_time_limit(mut self, limit: Duration) -> Db {
        self.time_limit = limit;
        self
    }

    fn take(&self) -> Result<Reader, StoreError> {
        let pooled = self.idle.lock().unwrap_or_else(|e| e.into_inner()).pop();
        match pooled {
            Some(store) => Ok(store),
            None => Reader::open(&self.path),
        }
    }

    fn give_back(&self, store: Reader) {
        let mut idle = self.idle.lock().unwrap_or_else(|e| e.into_inner());
        if idle.len() < self.most {
            idle.push(store);
        }
    }

    /// A scan's slot when one is free now: work the server starts on its
    /// own (no client waits for it) takes one only then, so it never
    /// queues ahead of a client's scan.
    pub fn try_scan_slot(&self) -> Option<OwnedSemaphorePermit> {
        self.scans.clone().try_acquire_owned().ok()
    }

    /// Runs `query` on a connection on a blocking thread, within the time limit.
    pub async fn run<T: Send + 'static>(
        &self,
        query: impl FnOnce(&Store) -> Result<T, StoreError> + Send + 'static,
    ) -> Result<T, StoreError> {
        self.run_any(query).await
    }

    /// [`Db::run`] for a query whose error is any that a store error
    /// converts into (the MCP tools' errors).
    pub async fn run_any<T: Send + 'static, E: From<StoreError> + Send + 'static>(
        &self,
        query: impl FnOnce(&Store) -> Result<T, E> + Send + 'static,
    ) -> Result<T, E> {
        let _slot = self.queries.acquire().await.expect("the semaphore is never closed");
        self.on_blocking_thread(Some(self.time_limit), query).await
    }

    /// [`Db::run`] for a query that may scan a whole trace: it waits for one
    /// of the few slots scans may have.
    pub async fn run_scan<T: Send + 'static>(
        &self,
        query: impl FnOnce(&Store) -> Result<T, StoreError> + Send + 'static,
    ) -> Result<T, StoreError> {
        let _scan = self.scans.acquire().await.expect("the semaphore is never closed");
        self.run(query).await
    }

    /// A place for one export, or `None` when [`MAX_EXPORTS`] run already.
    pub fn export_slot(&self) -> Option<OwnedSemaphorePermit> {
        self.exports.clone().try_acquire_owned().ok()
    }

    /// Runs `export` on a connection and a blocking thread of its own, with
    /// no query slot and no time limit (the caller holds an export slot).
    pub async fn run_export<T: Send + 'static>(
        &self,
        export: impl FnOnce(&Store) -> Result<T, StoreError> + Send + 'static,
    ) -> Result<T, StoreError> {
        self.on_blocking_thread(None, export).await
    }

    async fn on_blocking_thread<T: Send + 'static, E: From<StoreError> + Send + 'static>(
        &self,
        limit: Option<Duration>,
        work: impl FnOnce(&Store) -> Result<T, E> + Send + 'static,
    ) -> Result<T, E> {
        let db = self.clone();
        tokio::task::spawn_blocking(move || {
            let store = db.take()?;
            store.interrupt_after(limit);
            let result = work(&store);
            store.interrupt_after(None);
            db.give_back(store);
            result
        })
        .await
        .expect("a store query panicked")
    }
}
