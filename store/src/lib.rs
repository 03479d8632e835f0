//! The trace store: one SQLite file (WAL) holding many traces and their frames.
//!
//! This crate and `record/src/recorder/` are the only code that speaks SQL. Everyone
//! else uses the typed operations here.
//!
//! The store's roles, each a type of its own: the recorder's writes
//! ([`Recording`]), imports ([`Import`]), reads ([`Reader`]), a person's
//! edits (names, pins, removals: [`Editor`]), and the upkeep
//! every writer runs explicitly ([`Store::maintain`], `maintenance.rs`):
//! opening a store never changes it.
//!
//! Architecture Invariant: the schema only changes through `migrations/`,
//! applied in order by [`migrations::apply`] during maintenance.

pub mod api;
mod blocks;
pub mod clock;
mod editor;
pub mod end_note;
mod error;
mod fold;
mod health;
mod import;
mod insert;
mod maintenance;
pub mod migrations;
mod overview;
pub mod proc;
mod queries;
mod range;
mod reader;
mod recording;
mod replays;
mod retention;
pub mod search;
mod spans;
pub mod stats;
#[cfg(any(test, feature = "testing"))]
pub mod testing;

pub use editor::Editor;
pub use error::StoreError;
pub use health::Health;
pub use import::Import;
pub use maintenance::{maintain_existing, MaintenanceReport};
pub use overview::OVERVIEW_SESSIONS_MAX;
pub use queries::{FrameRef, StoredFrame};
pub use reader::Reader;
pub use recording::{Recording, Relay, Resumed};
pub use retention::{Pages, Policy, PruneReport, Removal, RemoveError};

use insert::Inserts;

use crate::model::NewFrame;
use acp_tee_wire::{frame, model, redact};
use rusqlite::{params, Connection, OpenFlags, TransactionBehavior};
use std::fs::{DirBuilder, OpenOptions};
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// How long a writer waits for another process holding the store's lock.
const BUSY_TIMEOUT: Duration = Duration::from_secs(30);

/// The start of a plain wrap-mode run, for tests.
#[cfg(any(test, feature = "testing"))]
pub fn test_start() -> crate::model::TraceStart {
    crate::model::TraceStart {
        protocol: None,
        name: None,
        command: vec!["a".into()],
        cwd: None,
        mode: crate::model::Mode::Wrap.to_string(),
        started_at: "2026-01-01T00:00:00Z".into(),
    }
}

/// The store at `path`, created and maintained (migrated), for tests.
#[cfg(any(test, feature = "testing"))]
pub fn create_maintained(path: &Path) -> Store {
    let mut store = Store::create_or_open(path).expect("create the store");
    store.maintain(0).expect("maintain the store");
    store
}

/// A frame's rowid is `trace_id << SEQ_BITS | seq` (migration 5).
const SEQ_BITS: u32 = 40;

/// The largest seq a frame can have: `2^SEQ_BITS - 1`.
pub const MAX_SEQ: i64 = (1 << SEQ_BITS) - 1;

/// SQL over a `traces` row that is true for the traces readers are shown:
/// all but those an import is still writing. An import sets `recorder_pid`
/// to its own process while it writes a trace and clears it once the whole
/// file is in (recorded traces never have `imported_from`), so a trace an
/// import has not finished is never listed, served, exported or indexed
/// (see `import.rs`).
/// A trace being removed (`retention.rs`) is not shown either.
pub const SHOWN: &str = "((imported_from IS NULL OR recorder_pid IS NULL) AND removing = 0)";

/// The rowid of frame `seq` of trace `trace_id` (a seq past the range gives
/// a rowid past the trace's, never another trace's frame as long as callers
/// also compare seq or stay below the trace's bound).
pub fn frame_id(trace_id: i64, seq: i64) -> i64 {
    (trace_id << SEQ_BITS).saturating_add(seq.clamp(0, 1 << SEQ_BITS))
}

/// The rowids of trace `trace_id`'s frames lie strictly between these two.
pub fn frame_id_bounds(trace_id: i64) -> (i64, i64) {
    (trace_id << SEQ_BITS, (trace_id + 1) << SEQ_BITS)
}

/// The rowid of trace `trace_id`'s last stored frame (`None` for none): one
/// seek.
fn last_frame_id(conn: &Connection, trace_id: i64) -> rusqlite::Result<Option<i64>> {
    let (lo, hi) = frame_id_bounds(trace_id);
    conn.query_row("SELECT max(id) FROM frames WHERE id > ?1 AND id < ?2", params![lo, hi], |r| r.get(0))
}

/// The store file used when `--db` is not given:
/// `$XDG_DATA_HOME/acp-tee/traces.db`, else `~/.local/share/acp-tee/traces.db`.
pub fn default_path() -> Result<PathBuf, StoreError> {
    let data_home = std::env::var_os("XDG_DATA_HOME")
        .map(PathBuf::from)
        .filter(|p| p.is_absolute())
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".local/share")))
        .ok_or(StoreError::NoDefaultPath)?;
    Ok(data_home.join("acp-tee").join("traces.db"))
}

/// The write-ahead log of the store at `path` (`PATH-wal`).
pub fn wal_path(path: &Path) -> PathBuf {
    let mut log = path.as_os_str().to_owned();
    log.push("-wal");
    log.into()
}

/// What the store at `path` takes on disk.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OnDisk {
    /// The database file's bytes (0 when there is none).
    pub file: u64,
    /// Its write-ahead log's bytes (0 when there is none).
    pub wal: u64,
}

/// The bytes of the store at `path`: its file and its write-ahead log.
pub fn on_disk(path: &Path) -> OnDisk {
    let size = |p: &Path| std::fs::metadata(p).map_or(0, |m| m.len());
    OnDisk { file: size(path), wal: size(&wal_path(path)) }
}

/// How a store is opened.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Access {
    /// To record and read (migrated when older).
    ReadWrite,
    /// To read only, through the shared memory file a writer made.
    ReadOnly,
    /// To read only, a file nothing writes to: no lock, no log, no shared
    /// memory file (SQLite's `immutable`), for a directory this process
    /// cannot create them in.
    Immutable,
}

/// Runs `attempt` again while SQLite answers SQLITE_BUSY at once instead of
/// waiting (a writer upgrading its lock while another connection switches
/// the journal mode or migrates: SQLite returns SQLITE_BUSY rather than
/// deadlock), for up to [`BUSY_TIMEOUT`]. This happens when a store is
/// created and set up by two processes at the same moment.
fn retry_busy<T>(mut attempt: impl FnMut() -> Result<T, StoreError>) -> Result<T, StoreError> {
    let deadline = std::time::Instant::now() + BUSY_TIMEOUT;
    let mut pause = Duration::from_millis(5);
    loop {
        match attempt() {
            Err(e) if e.is_busy() && std::time::Instant::now() < deadline => {
                std::thread::sleep(pause);
                pause = (pause * 2).min(Duration::from_millis(200));
            }
            other => return other,
        }
    }
}

/// The `file:` URI of `path` opened immutable.
fn immutable_uri(path: &Path) -> String {
    use percent_encoding::{AsciiSet, NON_ALPHANUMERIC};
    use std::os::unix::ffi::OsStrExt;
    const PATH: &AsciiSet = &NON_ALPHANUMERIC.remove(b'/').remove(b'-').remove(b'_').remove(b'.').remove(b'~');
    format!("file:{}?immutable=1", percent_encoding::percent_encode(path.as_os_str().as_bytes(), PATH))
}

/// An open store.
pub struct Store {
    /// Declared before `conn`: its statements are finalized before the
    /// connection closes.
    inserts: Inserts,
    conn: Connection,
    path: PathBuf,
    /// The redactor of the reader this connection answers for, while
    /// [`Store::seen_by`] holds it.
    seen: search::Seen,
    /// The retention policy maintenance applies, when one is set.
    retention: Option<retention::Retaining>,
}

/// What [`Store::seen_by`] returns: the store answers as its reader sees
/// frames until this is dropped.
pub struct Seeing<'a>(&'a Store);

impl Seeing<'_> {
    /// Runs `f` while the store answers as the reader sees, then ends that.
    pub fn run<T>(self, f: impl FnOnce() -> T) -> T {
        f()
    }
}

impl Drop for Seeing<'_> {
    fn drop(&mut self) {
        *self.0.seen.lock().unwrap_or_else(|e| e.into_inner()) = None;
    }
}

impl Store {
    /// Opens the store at `path` for recording, creating the file (mode 0600)
    /// and its directory (mode 0700) when missing.
    pub fn create_or_open(path: &Path) -> Result<Store, StoreError> {
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            DirBuilder::new()
                .recursive(true)
                .mode(0o700)
                .create(dir)
                .map_err(|source| StoreError::CreateDir { path: dir.to_owned(), source })?;
        }
        // Create the file ourselves so that its mode is 0600 whatever the umask;
        // SQLite gives its -wal and -shm files the same mode.
        OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .mode(0o600)
            .open(path)
            .map_err(|source| StoreError::Io { path: path.to_owned(), source })?;
        Self::open_with(path, Access::ReadWrite)
    }

    /// Opens an existing store; a missing file is an error, not a new store.
    ///
    /// A store this process may not write (a read-only file or directory,
    /// a read-only mount) is opened read-only: readers work, nothing is
    /// written (see `Access`).
    pub fn open_existing(path: &Path) -> Result<Store, StoreError> {
        if !path.exists() {
            return Err(StoreError::Missing { path: path.to_owned() });
        }
        if path.is_dir() {
            // SQLite would say "disk I/O error".
            let source = std::io::Error::from(std::io::ErrorKind::IsADirectory);
            return Err(StoreError::Io { path: path.to_owned(), source });
        }
        match Self::open_with(path, Access::ReadWrite) {
            Err(e) if e.is_read_only() => match Self::open_read_only(path) {
                // Not even readable: the first error says why.
                Err(again) if again.is_read_only() => Err(e),
                other => other,
            },
            other => other,
        }
    }

    /// Opens a store that cannot be written to: through SQLite's shared
    /// memory file when it exists (a recorder that can write is at work, and
    /// its commits are seen), else as an immutable file (nothing can be
    /// writing to it, as a writer would have made that file).
    fn open_read_only(path: &Path) -> Result<Store, StoreError> {
        match Self::open_with(path, Access::ReadOnly) {
            Err(e) if e.is_read_only() => {
                let log = wal_path(path);
                if log.exists() {
                    tracing::warn!(
                        "{} cannot be read without write access to its directory; \
                         the frames in it are left out",
                        log.display()
                    );
                }
                Self::open_with(path, Access::Immutable)
            }
            other => other,
        }
    }

    /// Opens the store, retrying while another process holds it in a way
    /// SQLite reports at once ([`retry_busy`]).
    fn open_with(path: &Path, access: Access) -> Result<Store, StoreError> {
        retry_busy(|| Self::open_once(path, access))
    }

    fn open_once(path: &Path, access: Access) -> Result<Store, StoreError> {
        let wrap = |source| StoreError::Open { path: path.to_owned(), source };
        let flags = OpenFlags::SQLITE_OPEN_NO_MUTEX;
        let conn = match access {
            Access::ReadWrite => Connection::open_with_flags(path, flags | OpenFlags::SQLITE_OPEN_READ_WRITE),
            Access::ReadOnly => Connection::open_with_flags(path, flags | OpenFlags::SQLITE_OPEN_READ_ONLY),
            Access::Immutable => Connection::open_with_flags(
                immutable_uri(path),
                flags | OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_URI,
            ),
        }
        .map_err(wrap)?;
        conn.busy_timeout(BUSY_TIMEOUT).map_err(wrap)?;
        if access == Access::ReadWrite
            && conn.query_row("PRAGMA page_count", [], |r| r.get::<_, i64>(0)).map_err(wrap)? == 0
        {
            // A new store gives back the space of what is removed from it
            // (`retention.rs`); this can only be chosen before its first page.
            conn.pragma_update(None, "auto_vacuum", "INCREMENTAL").map_err(wrap)?;
        }
        let mode: String = conn.query_row("PRAGMA journal_mode", [], |r| r.get(0)).map_err(wrap)?;
        if access == Access::ReadWrite && !mode.eq_ignore_ascii_case("wal") {
            conn.pragma_update(None, "journal_mode", "WAL").map_err(wrap)?;
        }
        conn.pragma_update(None, "synchronous", "NORMAL").map_err(wrap)?;
        conn.pragma_update(None, "foreign_keys", "ON").map_err(wrap)?;
        // No upkeep here: a writable store older than this build is opened
        // as it is and brought up to date by [`Store::maintain`]; one that
        // cannot be written must already have this build's schema.
        let writable = access == Access::ReadWrite && !conn.is_readonly(rusqlite::MAIN_DB).unwrap_or(true);
        let checked = if writable { migrations::check_not_newer(&conn) } else { migrations::check(&conn) };
        checked.map_err(|source| StoreError::Migrate { path: path.to_owned(), source })?;
        let seen = search::Seen::default();
        api::register_functions(&conn, &seen).map_err(wrap)?;
        Ok(Store { inserts: Inserts::default(), conn, path: path.to_owned(), seen, retention: None })
    }

    /// An in-memory store, migrated, for tests.
    #[cfg(any(test, feature = "testing"))]
    pub fn in_memory() -> Result<Store, StoreError> {
        let mut conn = Connection::open_in_memory()?;
        let seen = search::Seen::default();
        api::register_functions(&conn, &seen)?;
        migrations::apply(&mut conn).map_err(|source| StoreError::Migrate { path: ":memory:".into(), source })?;
        Ok(Store { inserts: Inserts::default(), conn, path: PathBuf::from(":memory:"), seen, retention: None })
    }

    /// Until the guard is dropped, this connection's frame pages, searches,
    /// frame summaries and stats answer as a reader masking with `r` sees
    /// the frames: a search finds a frame only by what is left of it
    /// masked (its matches and totals alike), a word of the mask's
    /// (`REDACTED`) finds where masking put it, and a summary's `size` is
    /// the masked frame's length. A redactor that masks nothing changes
    /// nothing.
    pub fn seen_by(&self, r: &crate::redact::Redactor) -> Seeing<'_> {
        let redactor = (!r.is_noop()).then(|| std::sync::Arc::new(r.clone()));
        *self.seen.lock().unwrap_or_else(|e| e.into_inner()) = redactor;
        Seeing(self)
    }

    /// True while [`Store::seen_by`] masks this connection's answers.
    fn masking(&self) -> bool {
        self.seen.lock().unwrap_or_else(|e| e.into_inner()).is_some()
    }

    /// True when this connection cannot write (see [`Store::open_existing`]).
    pub fn is_read_only(&self) -> bool {
        self.conn.is_readonly(rusqlite::MAIN_DB).unwrap_or(true)
    }

    /// The file this store lives in.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Checks that the store has this build's schema (see
    /// [`migrations::check_current`]): what every role but upkeep requires
    /// before it reads or writes.
    fn check_current(&self) -> Result<(), StoreError> {
        migrations::check_current(&self.conn).map_err(|source| StoreError::Migrate { path: self.path.clone(), source })
    }

    /// Runs `f` in a `BEGIN IMMEDIATE` transaction: the write lock is taken
    /// first, through the busy timeout, so a concurrent writer can never make
    /// the statement fail half-way with SQLITE_BUSY.
    pub fn write<T>(&self, f: impl FnOnce(&Connection) -> Result<T, StoreError>) -> Result<T, StoreError> {
        self.conn.execute_batch("BEGIN IMMEDIATE")?;
        match f(&self.conn) {
            Ok(v) => {
                self.conn.execute_batch("COMMIT")?;
                Ok(v)
            }
            Err(e) => {
                let _ = self.conn.execute_batch("ROLLBACK");
                Err(e)
            }
        }
    }

    /// Stores `frames` of trace `trace_id` in one transaction and adds them to
    /// the trace's counts (for [`Recording`] and [`Import`]).
    pub fn insert_batch(&mut self, trace_id: i64, frames: &[NewFrame]) -> Result<(), StoreError> {
        let tx = self.conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
        insert_rows(&tx, &mut self.inserts, trace_id, frames)?;
        tx.commit()?;
        Ok(())
    }
}

/// Notes which requests the responses inside batch frames answer
/// (`batch_replies`, migration 8); batches are rare, so this costs a frame
/// that is no batch one comparison.
fn add_batch_replies(conn: &Connection, trace_id: i64, frames: &[NewFrame]) -> Result<(), StoreError> {
    for f in frames.iter().filter(|f| !f.batch.is_empty()) {
        let mut insert = conn.prepare_cached(
            "INSERT OR REPLACE INTO batch_replies (trace_id, request_seq, batch_seq, latency_ns) VALUES (?1, ?2, ?3, ?4)",
        )?;
        for m in &f.batch {
            if let (Some(request_seq), Some(latency_ns)) = (m.reply_to_seq, m.latency_ns) {
                insert.execute(params![trace_id, request_seq, f.seq, latency_ns])?;
            }
        }
    }
    Ok(())
}

/// Inserts `frames` of trace `trace_id` and adds them to the trace's counts,
/// inside the caller's transaction.
fn insert_rows(conn: &Connection, inserts: &mut Inserts, trace_id: i64, frames: &[NewFrame]) -> Result<(), StoreError> {
    if !(0..1 << (63 - SEQ_BITS)).contains(&trace_id) {
        return Err(StoreError::OutOfRange(format!("trace id {trace_id}")));
    }
    if let Some(f) = frames.iter().find(|f| !(1..=MAX_SEQ).contains(&f.seq)) {
        return Err(StoreError::OutOfRange(format!("seq {} (frames are numbered 1 to 2^40 - 1)", f.seq)));
    }
    inserts.run(conn, trace_id, frames)?;
    stats::BatchStats::of(frames).add_to(conn, trace_id)?;
    spans::add(conn, trace_id, frames)?;
    blocks::add(conn, trace_id, frames)?;
    add_batch_replies(conn, trace_id, frames)?;
    let errors: i64 = frames.iter().map(|f| f.errors).sum();
    let bytes: usize = frames.iter().map(|f| f.raw.len() + f.envelope.as_ref().map_or(0, Vec::len)).sum();
    conn.prepare_cached(
        "UPDATE traces SET frame_count = frame_count + ?1, error_count = error_count + ?2, bytes = bytes + ?4
         WHERE id = ?3",
    )?
    .execute(params![frames.len() as i64, errors, trace_id, bytes as i64])?;
    if let Some((seq, protocol)) = frames.iter().find_map(|f| Some((f.seq, f.protocol_known?))) {
        conn.prepare_cached("UPDATE traces SET protocol = ?1 WHERE id = ?2 AND protocol IS NULL")?
            .execute(params![protocol.as_str(), trace_id])?;
        if protocol == acp_tee_shared::Protocol::Mcp {
            // The few frames before the first initialize (stderr lines,
            // mostly) were not known to be MCP when they were framed.
            let (lo, _) = frame_id_bounds(trace_id);
            conn.prepare_cached("UPDATE frames SET protocol = 'mcp' WHERE id > ?1 AND id < ?2 AND protocol = 'acp'")?
                .execute(params![lo, frame_id(trace_id, seq)])?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests;
