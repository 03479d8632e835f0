//! Removing traces: `acp-tee rm`, `acp-tee prune` and the retention policy
//! maintenance applies, and the names and pins that steer them.
//!
//! A removal has two steps. First the traces are marked `removing`, all in
//! one transaction that checks again that each is ended and not pinned: from
//! that commit on no reader lists, serves, exports or indexes them
//! ([`super::SHOWN`]). Then their rows go a chunk at a time, each chunk its
//! own short transaction bounded in frames and bytes, so that a recorder
//! writing to the same store waits for one chunk, never for a whole trace.
//! Every table that refers to a trace goes with it (found in the schema, so
//! later migrations are covered), and so do its frames' rows in the search
//! index. If the process removing dies, the next maintenance step goes on
//! where it stopped ([`Store::remove_some`]).
//!
//! Never removed: a trace without an end (recorded now, finishing, or cut
//! off and not yet ended by maintenance) and a pinned one.
//!
//! The space comes back to the filesystem in a store that is
//! `auto_vacuum=INCREMENTAL` (every store made since migration 12):
//! [`Store::reclaim_some`] gives back the free pages and checkpoints the log. An
//! older store keeps the freed pages for its next frames until it is
//! converted once ([`Store::compact`]).

use super::{frame_id_bounds, Store, StoreError, SHOWN};
use rusqlite::{params, OptionalExtension};
use std::time::Duration;

/// Frames deleted per transaction at most.
pub(super) const CHUNK_FRAMES: i64 = 5_000;

/// Bytes of frames deleted per transaction, about (SQLite reads each
/// overflow page of a large frame to free it).
const CHUNK_BYTES: i64 = 16 << 20;

/// Free pages given back to the filesystem per transaction by [`Store::reclaim_some`].
const RECLAIM_PAGES: i64 = 4_096;

/// How often maintenance plans the retention policy again, at most.
const PLAN_EVERY: Duration = Duration::from_secs(60);

/// Chunks of removal, and steps of giving space back, per maintenance step.
const STEP_CHUNKS: i64 = 2;

/// The retention policy a maintaining store applies ([`Store::retain`]) and
/// when it planned it last.
#[derive(Debug)]
pub(super) struct Retaining {
    policy: Policy,
    planned: Option<std::time::Instant>,
}

/// Which traces a prune removes: those any rule names. Pinned traces and
/// traces without an end are kept whatever the rules say.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Policy {
    /// Traces that ended longer ago than this.
    pub older_than: Option<Duration>,
    /// All but this many of the latest traces (pinned and unended ones
    /// count among the latest).
    pub keep: Option<u64>,
    /// The oldest traces until what the rest hold is at most this many bytes
    /// of the store's pages (see [`Store::prune_plan`]).
    pub max_size: Option<u64>,
}

impl Policy {
    /// True when no rule is set: nothing would go.
    pub fn is_empty(&self) -> bool {
        self.older_than.is_none() && self.keep.is_none() && self.max_size.is_none()
    }
}

/// A trace a prune removes, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Removal {
    /// Its id.
    pub id: i64,
    /// Its name, when it has one.
    pub name: Option<String>,
    /// When it started (RFC 3339).
    pub started_at: String,
    /// Its frames.
    pub frames: i64,
    /// The bytes of its frames ([`acp_tee_shared::TraceMeta::bytes`]).
    pub bytes: i64,
    /// The first rule that names it: `older-than`, `keep` or `max-size`.
    pub rule: &'static str,
}

/// What a prune did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PruneReport {
    /// The traces removed (planned, for a dry run), oldest first.
    pub removed: Vec<Removal>,
    /// Traces a rule named that were kept: pinned.
    pub kept_pinned: usize,
    /// Traces a rule named that were kept: not ended (recorded now).
    pub kept_unended: usize,
}

/// The store's pages: what its file holds and how.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Pages {
    /// The size of a page.
    pub page_size: u64,
    /// Pages in the file.
    pub count: u64,
    /// Free pages among them (reused by later writes, or given back).
    pub free: u64,
    /// True when free pages can be given back to the filesystem
    /// (`auto_vacuum=INCREMENTAL`).
    pub incremental: bool,
}

impl Pages {
    /// Bytes of pages in use.
    pub fn used_bytes(&self) -> u64 {
        (self.count - self.free.min(self.count)) * self.page_size
    }
}

/// Why a trace cannot be removed, renamed or pinned.
#[derive(Debug, thiserror::Error)]
pub enum RemoveError {
    /// The trace is being recorded (or finishing, or was cut off and not yet
    /// ended by maintenance).
    #[error("trace {0} has not ended (it is being recorded or its recorder is still storing it); it can be removed once it ends")]
    NotEnded(i64),
    /// The trace is pinned.
    #[error("trace {0} is pinned; `acp-tee unpin {0}` first")]
    Pinned(i64),
    /// Anything the store said.
    #[error(transparent)]
    Store(#[from] StoreError),
}

impl Store {
    /// Has every maintenance step ([`Store::maintain`]) apply `policy` in
    /// bounded work: it plans the policy at most every [`PLAN_EVERY`] and
    /// marks what it names, then each step removes [`STEP_CHUNKS`] chunks,
    /// or gives back as many steps of free pages.
    pub fn retain(&mut self, policy: Policy) {
        self.retention = (!policy.is_empty()).then_some(Retaining { policy, planned: None });
    }

    /// One bounded step of retention, for [`Store::maintain`]: finish
    /// removals (whoever marked them), else give space back, else plan the
    /// policy when it is due. Returns the traces its plan marked, and
    /// whether removal or reclaiming is left for the next step.
    pub(super) fn retention_step(&mut self) -> Result<(usize, bool), StoreError> {
        if self.remove_some(STEP_CHUNKS)? || self.reclaim_some(STEP_CHUNKS as u64, false)? {
            return Ok((0, true));
        }
        let due = self.retention.as_ref().is_some_and(|r| r.planned.is_none_or(|at| at.elapsed() >= PLAN_EVERY));
        let Some(retaining) = self.retention.as_mut().filter(|_| due) else { return Ok((0, false)) };
        retaining.planned = Some(std::time::Instant::now());
        let policy = retaining.policy.clone();
        let plan = self.prune_plan(&policy, chrono::Utc::now())?;
        let ids: Vec<i64> = plan.removed.iter().map(|r| r.id).collect();
        let marked = self.mark(&ids)?.len();
        Ok((marked, marked > 0))
    }

    /// The store's pages now.
    pub fn pages(&self) -> Result<Pages, StoreError> {
        let get = |pragma: &str| self.conn.query_row(&format!("PRAGMA {pragma}"), [], |r| r.get::<_, i64>(0));
        Ok(Pages {
            page_size: get("page_size")? as u64,
            count: get("page_count")? as u64,
            free: get("freelist_count")? as u64,
            incremental: get("auto_vacuum")? == 2,
        })
    }

    /// Sets trace `id`'s name.
    pub(crate) fn rename_trace(&self, id: i64, name: &str) -> Result<(), StoreError> {
        let sql = format!("UPDATE traces SET name = ?1 WHERE id = ?2 AND {SHOWN}");
        match self.write(|conn| Ok(conn.execute(&sql, params![name, id])?))? {
            0 => Err(StoreError::NoSuchTrace(id)),
            _ => Ok(()),
        }
    }

    /// Pins trace `id` (every prune leaves it alone) or unpins it; returns
    /// whether it was pinned before.
    pub(crate) fn set_pinned(&self, id: i64, pinned: bool) -> Result<bool, StoreError> {
        self.write(|conn| {
            let before: Option<bool> = conn
                .query_row(&format!("SELECT pinned FROM traces WHERE id = ?1 AND {SHOWN}"), [id], |r| r.get(0))
                .optional()?;
            let before = before.ok_or(StoreError::NoSuchTrace(id))?;
            conn.execute("UPDATE traces SET pinned = ?1 WHERE id = ?2", params![pinned, id])?;
            Ok(before)
        })
    }

    /// Removes the traces `ids` (`acp-tee rm`): all or none, refused when one
    /// does not exist, has not ended or is pinned. Their rows go in chunks
    /// before this returns; the space is given back by [`Store::reclaim_some`].
    pub(crate) fn remove_traces(&mut self, ids: &[i64]) -> Result<(), RemoveError> {
        let sql = format!("SELECT ended_at IS NOT NULL, pinned FROM traces WHERE id = ?1 AND {SHOWN}");
        self.write(|conn| {
            let mut check = conn.prepare(&sql)?;
            for &id in ids {
                let found: Option<(bool, bool)> = check.query_row([id], |r| Ok((r.get(0)?, r.get(1)?))).optional()?;
                match found {
                    None => return Ok(Err(RemoveError::Store(StoreError::NoSuchTrace(id)))),
                    Some((false, _)) => return Ok(Err(RemoveError::NotEnded(id))),
                    Some((_, true)) => return Ok(Err(RemoveError::Pinned(id))),
                    Some(_) => {}
                }
            }
            let mut mark = conn.prepare("UPDATE traces SET removing = 1 WHERE id = ?1")?;
            for &id in ids {
                mark.execute([id])?;
            }
            Ok(Ok(()))
        })??;
        while self.remove_some(i64::MAX)? {}
        Ok(())
    }

    /// The traces `policy` removes now, oldest first, with what it keeps
    /// although a rule named it. Size: the pages in use, less what the
    /// traces removed hold (their frames' bytes, scaled by the store's pages
    /// in use over all traces' bytes, which counts indexes and overhead
    /// alike), must come to `max_size` or less.
    pub(crate) fn prune_plan(
        &self,
        policy: &Policy,
        now: chrono::DateTime<chrono::Utc>,
    ) -> Result<PruneReport, StoreError> {
        let mut report = PruneReport::default();
        if policy.is_empty() {
            return Ok(report);
        }
        type Row = (i64, Option<String>, String, Option<String>, bool, i64, i64);
        let sql = format!(
            "SELECT id, name, started_at, ended_at, pinned, frame_count, bytes FROM traces WHERE {SHOWN} ORDER BY id DESC"
        );
        let traces: Vec<Row> = self
            .conn
            .prepare(&sql)?
            .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?, r.get(5)?, r.get(6)?)))?
            .collect::<Result<_, _>>()?;
        let cutoff = policy.older_than.and_then(|age| chrono::Duration::from_std(age).ok()).map(|age| now - age);
        let ended_before = |ended: &Option<String>| match (cutoff, ended) {
            (Some(cutoff), Some(ended)) => chrono::DateTime::parse_from_rfc3339(ended).is_ok_and(|e| e < cutoff),
            _ => false,
        };
        // What removing each trace gives back, in bytes of pages.
        let pages = self.pages()?;
        let all_bytes: i64 = traces.iter().map(|t| t.6).sum();
        let scale = if all_bytes > 0 { pages.used_bytes() as f64 / all_bytes as f64 } else { 1.0 };
        let mut used = pages.used_bytes() as f64;
        // Newest first: which rule, if any, names each.
        let mut named: Vec<(usize, &'static str)> = Vec::new();
        for (i, t) in traces.iter().enumerate() {
            if policy.keep.is_some_and(|keep| i as u64 >= keep) {
                named.push((i, "keep"));
            } else if ended_before(&t.3) {
                named.push((i, "older-than"));
            }
        }
        // Size: the oldest first, until the rest fit.
        let mut by_size = Vec::new();
        if let Some(max) = policy.max_size {
            let removed: std::collections::HashSet<usize> = named.iter().map(|n| n.0).collect();
            for (i, t) in traces.iter().enumerate() {
                if removed.contains(&i) && t.3.is_some() && !t.4 {
                    used -= t.6 as f64 * scale;
                }
            }
            for (i, t) in traces.iter().enumerate().rev() {
                if used <= max as f64 {
                    break;
                }
                if removed.contains(&i) {
                    continue;
                }
                by_size.push((i, "max-size"));
                if t.3.is_some() && !t.4 {
                    used -= t.6 as f64 * scale;
                }
            }
        }
        named.extend(by_size);
        named.sort_by_key(|n| std::cmp::Reverse(n.0));
        for (i, rule) in named {
            let (id, name, started_at, ended_at, pinned, frames, bytes) = traces[i].clone();
            if pinned {
                report.kept_pinned += 1;
            } else if ended_at.is_none() {
                report.kept_unended += 1;
            } else {
                report.removed.push(Removal { id, name, started_at, frames, bytes, rule });
            }
        }
        Ok(report)
    }

    /// Removes what `policy` names now ([`Store::prune_plan`]); with
    /// `dry_run`, only says it. A trace pinned, or not ended, by the time
    /// it is marked is kept (and counted so).
    pub(crate) fn prune(
        &mut self,
        policy: &Policy,
        now: chrono::DateTime<chrono::Utc>,
        dry_run: bool,
    ) -> Result<PruneReport, StoreError> {
        let mut report = self.prune_plan(policy, now)?;
        if dry_run || report.removed.is_empty() {
            return Ok(report);
        }
        let marked = self.mark(&report.removed.iter().map(|r| r.id).collect::<Vec<_>>())?;
        let late = report.removed.len() - marked.len();
        report.removed.retain(|r| marked.contains(&r.id));
        report.kept_pinned += late;
        while self.remove_some(i64::MAX)? {}
        Ok(report)
    }

    /// Marks `ids` removing, each only while it is still ended, unpinned and
    /// shown; returns those marked.
    fn mark(&self, ids: &[i64]) -> Result<Vec<i64>, StoreError> {
        self.write(|conn| {
            let sql = format!(
                "UPDATE traces SET removing = 1 WHERE id = ?1 AND ended_at IS NOT NULL AND pinned = 0 AND {SHOWN}"
            );
            let mut mark = conn.prepare(&sql)?;
            let mut marked = Vec::new();
            for &id in ids {
                if mark.execute([id])? > 0 {
                    marked.push(id);
                }
            }
            Ok(marked)
        })
    }

    /// Deletes up to `chunks` chunks of the traces marked removing (oldest
    /// first); returns whether any is left. Each chunk is one transaction.
    pub fn remove_some(&mut self, chunks: i64) -> Result<bool, StoreError> {
        let mut done = 0;
        loop {
            let next: Option<i64> =
                self.conn.query_row("SELECT min(id) FROM traces WHERE removing = 1", [], |r| r.get(0))?;
            let Some(id) = next else { return Ok(false) };
            if done >= chunks {
                return Ok(true);
            }
            self.remove_chunk(id)?;
            done += 1;
        }
    }

    /// One chunk of trace `id`'s removal: frames (and their search index
    /// rows) up to [`CHUNK_FRAMES`] and about [`CHUNK_BYTES`], or, once
    /// none is left, every other row of the trace.
    fn remove_chunk(&mut self, id: i64) -> Result<(), StoreError> {
        let (lo, hi) = frame_id_bounds(id);
        // The last frame of the chunk, found from the frames' lengths only
        // (`length` reads no overflow page).
        let mut last = None;
        {
            let mut rows = self.conn.prepare_cached(
                "SELECT id, length(raw) + coalesce(length(envelope), 0) FROM frames
                 WHERE id > ?1 AND id < ?2 ORDER BY id LIMIT ?3",
            )?;
            let mut found = rows.query(params![lo, hi, CHUNK_FRAMES])?;
            let mut bytes = 0;
            while let Some(row) = found.next()? {
                last = Some(row.get::<_, i64>(0)?);
                bytes += row.get::<_, i64>(1)?;
                if bytes >= CHUNK_BYTES {
                    break;
                }
            }
        }
        if let Some(last) = last {
            return self.write(|conn| {
                conn.prepare_cached("DELETE FROM frames_fts WHERE rowid > ?1 AND rowid <= ?2")?.execute([lo, last])?;
                conn.prepare_cached("DELETE FROM frames WHERE id > ?1 AND id <= ?2")?.execute([lo, last])?;
                Ok(())
            });
        }
        // Every other table that refers to traces, found in the schema so
        // that later migrations are covered too.
        let owned: Vec<(String, String)> = self
            .conn
            .prepare(
                "SELECT m.name, k.\"from\" FROM sqlite_master m, pragma_foreign_key_list(m.name) k
                 WHERE m.type = 'table' AND k.\"table\" = 'traces' AND m.name <> 'frames'",
            )?
            .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?
            .collect::<Result<_, _>>()?;
        // With foreign keys enforced, deleting the trace would look for its
        // frames in every row of `frames` (no index leads with trace_id); they
        // are gone, and the other rows are deleted here.
        let enforced: bool = self.conn.query_row("PRAGMA foreign_keys", [], |r| r.get(0))?;
        self.conn.pragma_update(None, "foreign_keys", false)?;
        let removed = self.write(|conn| {
            for (table, column) in &owned {
                let sql = format!(
                    "DELETE FROM \"{}\" WHERE \"{}\" = ?1",
                    table.replace('"', "\"\""),
                    column.replace('"', "\"\"")
                );
                conn.execute(&sql, params![id])?;
            }
            // A replay of it no longer names a trace that is gone.
            conn.execute("UPDATE traces SET replay_of = NULL WHERE replay_of = ?1", params![id])?;
            // Nor does a child name a parent that is gone.
            conn.execute("UPDATE traces SET parent_trace = NULL WHERE parent_trace = ?1", params![id])?;
            conn.execute("DELETE FROM traces WHERE id = ?1", params![id])?;
            Ok(())
        });
        self.conn.pragma_update(None, "foreign_keys", enforced)?;
        removed
    }

    /// Gives up to `steps` times [`RECLAIM_PAGES`] of the store's free
    /// pages back to the filesystem, one transaction each; when that leaves
    /// none, checkpoints the log so the file shrinks: waiting for readers
    /// holding older snapshots with `wait` (`TRUNCATE`, which also empties
    /// the log), else as far as they allow now (`PASSIVE`, for maintenance
    /// steps, which must not hold a recorder up). Returns whether free pages
    /// are left. A store that is not `auto_vacuum=INCREMENTAL` keeps its
    /// free pages for its next frames ([`Store::compact`]).
    pub fn reclaim_some(&self, steps: u64, wait: bool) -> Result<bool, StoreError> {
        let pages = self.pages()?;
        if !pages.incremental || pages.free == 0 {
            return Ok(false);
        }
        for _ in 0..steps {
            self.write(|conn| {
                // Each row it returns is a page freed; stepping through them
                // is what frees them.
                let mut stmt = conn.prepare(&format!("PRAGMA incremental_vacuum({RECLAIM_PAGES})"))?;
                let mut rows = stmt.query([])?;
                while rows.next()?.is_some() {}
                Ok(())
            })?;
            if self.pages()?.free == 0 {
                let mode = if wait { "TRUNCATE" } else { "PASSIVE" };
                self.conn.query_row(&format!("PRAGMA wal_checkpoint({mode})"), [], |_| Ok(()))?;
                return Ok(false);
            }
        }
        Ok(true)
    }

    /// Rewrites the store (SQLite's `VACUUM`) as `auto_vacuum=INCREMENTAL`:
    /// the file shrinks to what is in use, and from then on gives back what
    /// prunes free. Needs free disk about the store's size; writers wait
    /// while it runs. For stores made before migration 12, once.
    pub fn compact(&self) -> Result<(), StoreError> {
        self.conn.pragma_update(None, "auto_vacuum", "INCREMENTAL")?;
        self.conn.execute_batch("VACUUM")?;
        self.conn.query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |_| Ok(()))?;
        Ok(())
    }
}

#[cfg(test)]
mod tests;
