//! Store connections for async handlers: a small pool, queries run on
//! tokio's blocking threads.

use crate::store::{Store, StoreError};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use tokio::sync::Semaphore;

/// Queries running at once at most: also the most connections (each with its
/// own page cache) and blocking threads the store ever takes, however many
/// clients and live streams there are.
const CONCURRENT_QUERIES: usize = 8;

/// Shared access to one store file.
#[derive(Clone)]
pub struct Db {
    path: PathBuf,
    idle: Arc<Mutex<Vec<Store>>>,
    permits: Arc<Semaphore>,
}

impl Db {
    /// Opens the store at `path` (it must exist), bringing its schema up to date.
    pub fn open(path: &Path) -> Result<Db, StoreError> {
        let first = Store::open_existing(path)?;
        Ok(Db::around(path, first))
    }

    fn around(path: &Path, first: Store) -> Db {
        Db {
            path: path.to_owned(),
            idle: Arc::new(Mutex::new(vec![first])),
            permits: Arc::new(Semaphore::new(CONCURRENT_QUERIES)),
        }
    }

    fn take(&self) -> Result<Store, StoreError> {
        let pooled = self.idle.lock().unwrap_or_else(|e| e.into_inner()).pop();
        match pooled {
            Some(store) => Ok(store),
            None => Store::open_existing(&self.path),
        }
    }

    fn give_back(&self, store: Store) {
        let mut idle = self.idle.lock().unwrap_or_else(|e| e.into_inner());
        if idle.len() < CONCURRENT_QUERIES {
            idle.push(store);
        }
    }

    /// Runs `query` on a connection on a blocking thread.
    pub async fn run<T: Send + 'static>(
        &self,
        query: impl FnOnce(&Store) -> Result<T, StoreError> + Send + 'static,
    ) -> Result<T, StoreError> {
        let _permit = self.permits.acquire().await.expect("the semaphore is never closed");
        let db = self.clone();
        tokio::task::spawn_blocking(move || {
            let store = db.take()?;
            let result = query(&store);
            db.give_back(store);
            result
        })
        .await
        .expect("a store query panicked")
    }
}
