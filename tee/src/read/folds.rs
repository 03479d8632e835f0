//! A bounded cache of whole-trace folds (`crate::session::Model`,
//! `crate::check::Checker`) kept between requests.
//!
//! A fold is kept per trace and brought up to date with the frames stored
//! since it was last asked (the caller's `catch_up`), so asking again about
//! a live trace costs only its new frames. At most `kept` traces' folds are
//! kept, the least recently asked about dropped first; one request at a time
//! brings a fold up to date, the others wait for it on its lock rather than
//! each reading the trace.

use crate::redact::Redactor;
use crate::session::Model;
use crate::store::{Store, StoreError};
use std::sync::{Arc, Mutex};

/// A trace's id and its fold, shared with the requests using it.
type Kept<F> = (i64, Arc<Mutex<F>>);

/// The folds of the last `kept` traces asked about, most recently used last.
pub struct Folds<F> {
    kept: Arc<Mutex<Vec<Kept<F>>>>,
    most: usize,
}

impl<F> Clone for Folds<F> {
    fn clone(&self) -> Self {
        Folds { kept: self.kept.clone(), most: self.most }
    }
}

impl<F> Folds<F> {
    /// A cache keeping the folds of at most `most` traces.
    pub fn new(most: usize) -> Folds<F> {
        assert!(most > 0, "a cache of folds keeps at least one");
        Folds { kept: Arc::default(), most }
    }

    /// Trace `id`'s fold (`make` builds an empty one when none is kept),
    /// now the most recently used.
    pub fn of(&self, id: i64, make: impl FnOnce() -> F) -> Arc<Mutex<F>> {
        let mut kept = self.kept.lock().unwrap_or_else(|e| e.into_inner());
        let fold = match kept.iter().position(|(t, _)| *t == id) {
            Some(i) => kept.remove(i).1,
            None => Arc::new(Mutex::new(make())),
        };
        kept.push((id, fold.clone()));
        if kept.len() > self.most {
            kept.remove(0);
        }
        fold
    }

    /// Trace `id`'s fold if one is kept, without making one or changing
    /// which is the most recently used.
    pub fn peek(&self, id: i64) -> Option<Arc<Mutex<F>>> {
        let kept = self.kept.lock().unwrap_or_else(|e| e.into_inner());
        kept.iter().find(|(t, _)| *t == id).map(|(_, f)| f.clone())
    }

    /// Whether trace `id`'s fold is kept.
    #[cfg(test)]
    pub fn holds(&self, id: i64) -> bool {
        self.kept.lock().unwrap_or_else(|e| e.into_inner()).iter().any(|(t, _)| *t == id)
    }
}

/// Traces whose session models are kept between requests.
pub const MODELS_KEPT: usize = 4;

/// The session models (`crate::session::Model`) of the last [`MODELS_KEPT`]
/// traces asked about.
#[derive(Clone)]
pub struct Models(Folds<Model>);

impl Default for Models {
    fn default() -> Self {
        Models(Folds::new(MODELS_KEPT))
    }
}

impl Models {
    /// Runs `read` on trace `id`'s model, brought up to date with what
    /// `store` holds, masked by `redactor`.
    pub fn with_current<T>(
        &self,
        store: &Store,
        id: i64,
        redactor: &Redactor,
        read: impl FnOnce(&Model) -> Result<T, StoreError>,
    ) -> Result<T, StoreError> {
        let model = self.0.of(id, Model::default);
        let mut model = model.lock().unwrap_or_else(|e| e.into_inner());
        model.catch_up(store, id, (!redactor.is_noop()).then_some(redactor))?;
        read(&model)
    }

    /// Whether trace `id`'s model is kept (built or being built).
    #[cfg(test)]
    pub fn holds(&self, id: i64) -> bool {
        self.0.holds(id)
    }
}

/// The session models of replays (`?to=SEQ`) of the last [`MODELS_KEPT`]
/// traces replayed, apart from [`Models`] so that a replay does not push
/// out the whole-trace models. A replay's model is fed forward as its
/// cursor advances and folded again from the start only when it moves back.
#[derive(Clone)]
pub struct Replays(Folds<Model>);

impl Default for Replays {
    fn default() -> Self {
        Replays(Folds::new(MODELS_KEPT))
    }
}

impl Replays {
    /// Runs `read` on the model of trace `id`'s frames up to seq `to`,
    /// masked by `redactor`.
    pub fn with_to<T>(
        &self,
        store: &Store,
        id: i64,
        to: i64,
        redactor: &Redactor,
        read: impl FnOnce(&Model) -> Result<T, StoreError>,
    ) -> Result<T, StoreError> {
        let model = self.0.of(id, Model::default);
        let mut model = model.lock().unwrap_or_else(|e| e.into_inner());
        if model.last_seq() > to {
            *model = Model::default();
        }
        model.catch_up_to(store, id, to, (!redactor.is_noop()).then_some(redactor))?;
        read(&model)
    }
}

/// `missing` ("trace N has no session S"), saying so of the sessions the
/// model keeps when it left `left_out` out: S may be one of them.
pub fn past_the_bound(missing: String, left_out: u64) -> String {
    match left_out {
        0 => missing,
        n => format!(
            "{missing} among the first {} it keeps; {n} sessions past them are left out \
             (`acp-tee show --session` shows any of them)",
            acp_tee_shared::session::SESSIONS_MAX
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_least_recently_asked_about_is_dropped_first() {
        let folds: Folds<Vec<i64>> = Folds::new(2);
        folds.of(1, Vec::new).lock().unwrap().push(10);
        folds.of(2, Vec::new);
        // Asking about 1 again keeps its fold and makes 2 the oldest.
        assert_eq!(*folds.of(1, Vec::new).lock().unwrap(), [10]);
        folds.of(3, Vec::new);
        assert!(folds.holds(1) && folds.holds(3) && !folds.holds(2));
        assert!(folds.of(2, Vec::new).lock().unwrap().is_empty(), "a dropped fold starts again");
    }
}
