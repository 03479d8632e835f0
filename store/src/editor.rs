//! The editing role: what a person changes in a store by hand (names, pins,
//! removals), apart from recording, importing and upkeep.

use super::retention::{Policy, PruneReport, RemoveError};
use super::{Store, StoreError};
use std::ops::Deref;
use std::path::Path;

/// A store opened to rename, pin, unpin and remove traces: `acp-tee rm`,
/// `rename`, `pin`, `unpin`, `prune`, and the viewer's trace list when
/// `serve` allows it. The one way to change a trace after it was recorded;
/// it derefs to [`Store`] for reading.
///
/// Opening does no upkeep: a store whose schema is older than this build's
/// is refused as [`super::Reader`] refuses it, and so is a store this
/// process cannot write.
pub struct Editor(Store);

impl Editor {
    /// Opens the existing store at `path` to edit it.
    pub fn open(path: &Path) -> Result<Editor, StoreError> {
        let store = Store::open_existing(path)?;
        store.check_current()?;
        if store.is_read_only() {
            return Err(StoreError::NotWritable { path: path.to_owned() });
        }
        Ok(Editor(store))
    }

    /// Sets trace `id`'s name.
    pub fn rename(&self, id: i64, name: &str) -> Result<(), StoreError> {
        self.0.rename_trace(id, name)
    }

    /// Pins trace `id` (every prune leaves it alone) or unpins it; returns
    /// whether it was pinned before.
    pub fn set_pinned(&self, id: i64, pinned: bool) -> Result<bool, StoreError> {
        self.0.set_pinned(id, pinned)
    }

    /// Removes the traces `ids`: all, or none when one does not exist, has
    /// not ended or is pinned ([`RemoveError`]). Their space is given back
    /// by [`Editor::reclaim`].
    pub fn remove(&mut self, ids: &[i64]) -> Result<(), RemoveError> {
        self.0.remove_traces(ids)
    }

    /// What `policy` removes now, oldest first; with `dry_run`, removes nothing.
    pub fn prune(
        &mut self,
        policy: &Policy,
        now: chrono::DateTime<chrono::Utc>,
        dry_run: bool,
    ) -> Result<PruneReport, StoreError> {
        self.0.prune(policy, now, dry_run)
    }

    /// Gives every free page back to the filesystem (a store that is
    /// `auto_vacuum=INCREMENTAL`), then checkpoints so the file shrinks.
    pub fn reclaim(&self) -> Result<(), StoreError> {
        while self.0.reclaim_some(64, true)? {}
        Ok(())
    }

    /// Rewrites the store as `auto_vacuum=INCREMENTAL` ([`Store::compact`]).
    pub fn compact(&self) -> Result<(), StoreError> {
        self.0.compact()
    }
}

impl Deref for Editor {
    type Target = Store;

    fn deref(&self) -> &Store {
        &self.0
    }
}
