//! Counts of a search's indexed matches, kept between pages.
//!
//! A search page's exact `total` counts the index's matches up to the
//! trace's `indexed_seq` (`count_indexed`), which for a word in most
//! frames of a large trace is most of the page's cost. That count cannot
//! change: frames are only ever added (no statement updates or deletes a
//! frame of a trace readers see; an import that fails deletes only traces
//! no reader was shown, and those are never indexed), and the index holds
//! every frame up to `indexed_seq` once it has reached it. So the count is
//! kept, with the seq it reached, under the trace, the FTS5 query and the
//! page query's other filters; a later page of the same search counts only
//! the frames indexed since and adds them. A count whose seq is past the
//! trace's `indexed_seq` now (the index was rebuilt) is counted afresh.
//!
//! At most [`SEARCH_COUNTS_KEPT`] counts are kept, the least recently used
//! dropped first, and none for a key longer than [`MAX_KEY_BYTES`]: the
//! memory they take is bounded whatever the requests.

use acp_tee_shared::api::FrameQuery;
use hashlink::LruCache;
use std::sync::{Arc, Mutex};

/// Search counts kept at most (per server, or per MCP server).
pub const SEARCH_COUNTS_KEPT: usize = 256;

/// The longest key kept, in bytes of its texts (the FTS5 query, method,
/// session, the trace's start time); a longer one is counted every time.
pub const MAX_KEY_BYTES: usize = 4096;

/// What a count of indexed matches depends on besides the seq it reached.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(super) struct CountKey {
    trace_id: i64,
    /// The trace's start time: should an id come to name another trace
    /// (a store file replaced under the server), its counts are not found.
    started_at: String,
    /// The FTS5 query.
    fts: String,
    dir: Option<&'static str>,
    kind: Option<&'static str>,
    method: Option<String>,
    session: Option<String>,
    errors: bool,
    /// Errors looked into batches (the trace had some).
    batches: bool,
    /// The latency filter as the query binds it, in ns.
    min_latency_ns: Option<i64>,
    /// Matches counted as a masking reader sees frames (one redactor per
    /// server, so masked or not is all that differs).
    seen: bool,
}

impl CountKey {
    /// The key of the indexed matches of `fts` in trace `trace_id` (started
    /// at `started_at`) under `q`'s other filters; `None` when it is longer
    /// than [`MAX_KEY_BYTES`] (then it is not kept).
    pub(super) fn new(
        trace_id: i64,
        started_at: &str,
        fts: &str,
        q: &FrameQuery,
        batches: bool,
        seen: bool,
    ) -> Option<CountKey> {
        let FrameQuery {
            after: _,
            offset: _,
            limit: _,
            dir,
            kind,
            method,
            session,
            errors,
            min_latency_ms,
            q: _,
            from,
            to,
        } = q;
        // A count kept runs from the trace's first frame: one of a range
        // is made afresh.
        if from.is_some() || to.is_some() {
            return None;
        }
        let texts = [Some(started_at), Some(fts), method.as_deref(), session.as_deref()];
        if texts.iter().flatten().map(|t| t.len()).sum::<usize>() > MAX_KEY_BYTES {
            return None;
        }
        Some(CountKey {
            trace_id,
            started_at: started_at.to_owned(),
            fts: fts.to_owned(),
            dir: dir.map(|d| d.as_str()),
            kind: kind.map(|k| k.as_str()),
            method: method.clone(),
            session: session.clone(),
            errors: *errors == Some(true),
            batches,
            min_latency_ns: min_latency_ms.map(super::latency_ns),
            seen,
        })
    }
}

/// A count kept: the trace's `indexed_seq` it was counted up to, and the
/// matches up to there.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Counted {
    pub upto: i64,
    pub matches: i64,
}

/// The counts of searches' indexed matches, shared by the connections that
/// serve one store: cloning shares them.
#[derive(Clone)]
pub struct SearchCounts(Arc<Mutex<LruCache<CountKey, Counted>>>);

impl Default for SearchCounts {
    fn default() -> Self {
        SearchCounts(Arc::new(Mutex::new(LruCache::new(SEARCH_COUNTS_KEPT))))
    }
}

impl SearchCounts {
    /// The count kept for `key`, if any.
    pub(super) fn get(&self, key: &CountKey) -> Option<Counted> {
        self.0.lock().unwrap_or_else(|e| e.into_inner()).get(key).copied()
    }

    /// Keeps `counted` for `key`, unless a count that reached further is
    /// kept already (another request counted more meanwhile).
    pub(super) fn put(&self, key: CountKey, counted: Counted) {
        let mut kept = self.0.lock().unwrap_or_else(|e| e.into_inner());
        if kept.peek(&key).is_none_or(|k| k.upto <= counted.upto) {
            kept.insert(key, counted);
        }
    }

    /// How many counts are kept.
    pub fn len(&self) -> usize {
        self.0.lock().unwrap_or_else(|e| e.into_inner()).len()
    }

    /// True when no count is kept.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}
