//! Store connections for async handlers: a small pool, queries run on
//! tokio's blocking threads.

use crate::store::{Store, StoreError};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

/// Shared access to one store file.
#[derive(Clone)]
pub struct Db {
    path: PathBuf,
    idle: Arc<Mutex<Vec<Store>>>,
}

impl Db {
    /// Opens the store at `path` (it must exist), bringing its schema up to date.
    pub fn open(path: &Path) -> Result<Db, StoreError> {
        let first = Store::open_existing(path)?;
        Ok(Db { path: path.to_owned(), idle: Arc::new(Mutex::new(vec![first])) })
    }

    /// An in-memory-free handle around an already open store (tests).
    pub fn from_store(store: Store) -> Db {
        Db { path: store.path().to_owned(), idle: Arc::new(Mutex::new(vec![store])) }
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
        // Keep a few connections around; more are opened under load and dropped after.
        if idle.len() < 8 {
            idle.push(store);
        }
    }

    /// Runs `query` on a connection on a blocking thread.
    pub async fn run<T: Send + 'static>(
        &self,
        query: impl FnOnce(&Store) -> Result<T, StoreError> + Send + 'static,
    ) -> Result<T, StoreError> {
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
