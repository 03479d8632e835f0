//! The run's end as the relay knew it, left beside the store for whoever
//! opens the store next.
//!
//! The recorder writes a run's end; when no recorder survives to do so
//! (killed while still storing after the relay exited, or dying more often
//! than it may be replaced), the store's next opener would have to guess
//! the end and could not tell that frames are missing. So before it tells
//! its recorder how the run ended, the relay writes the same end, with the
//! bytes that crossed it in each direction, to a small file in `DB-ends/`.
//! The recorder removes the file once the end is stored; the maintenance
//! step of the next opener ([`crate::Store::end_abandoned_traces`])
//! ends a trace whose recorder is gone from its note, counting what was
//! not stored, and removes it.
//!
//! Architecture Invariant: writing a note is a few hundred bytes to a file
//! once a run, after the last byte was forwarded: never on the relay's path.

use crate::model::TraceEnd;
use serde::{Deserialize, Serialize};
use std::io::Write;
use std::os::unix::fs::DirBuilderExt;
use std::path::{Path, PathBuf};

/// A run's end, as its relay left it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct EndNote {
    /// The relay's process id (`traces.relay_pid`).
    pub relay_pid: u32,
    /// When the run started (`traces.started_at`): with the pid, names the trace.
    pub started_at: String,
    /// When the run ended (UTC, RFC 3339).
    pub ended_at: String,
    /// How it ended.
    pub end: TraceEnd,
    /// Bytes that crossed the relay, per direction, in
    /// [`acp_tee_shared::Direction::ALL`] order.
    pub crossed: [u64; 3],
    /// The recorder masked secrets in what it stored (`--redact`): stored
    /// frames are then not the bytes that crossed, and cannot be compared.
    #[serde(default)]
    pub masked: bool,
}

/// The folder of notes for the store at `db`: `DB-ends`.
fn folder(db: &Path) -> PathBuf {
    let mut name = db.as_os_str().to_owned();
    name.push("-ends");
    name.into()
}

/// The note's file for the run relayed by `relay_pid` from `started_at`.
fn file(db: &Path, relay_pid: u32, started_at: &str) -> PathBuf {
    let stamp: String = started_at.chars().map(|c| if c.is_ascii_alphanumeric() { c } else { '-' }).collect();
    folder(db).join(format!("{relay_pid}-{stamp}.json"))
}

/// Leaves `note` for the store at `db` (written whole, then renamed into
/// place, so a reader never sees half a note). A failure is logged and
/// changes nothing else: the recorder still ends the run as usual.
pub fn write(db: &Path, note: &EndNote) {
    let path = file(db, note.relay_pid, &note.started_at);
    let written = (|| -> std::io::Result<()> {
        std::fs::DirBuilder::new().recursive(true).mode(0o700).create(folder(db))?;
        let mut part = path.clone().into_os_string();
        part.push(".part");
        let mut out = std::fs::File::create(&part)?;
        out.write_all(&serde_json::to_vec(note).expect("an EndNote always serialises"))?;
        std::fs::rename(&part, &path)
    })();
    if let Err(e) = written {
        tracing::debug!("cannot leave the run's end in {}: {e}", path.display());
    }
}

/// The note the relay `relay_pid` of the run started at `started_at` left
/// for the store at `db`, if it left one that can be read.
pub fn read(db: &Path, relay_pid: u32, started_at: &str) -> Option<EndNote> {
    let bytes = std::fs::read(file(db, relay_pid, started_at)).ok()?;
    let note: EndNote = serde_json::from_slice(&bytes).ok()?;
    (note.relay_pid == relay_pid && note.started_at == started_at).then_some(note)
}

/// Removes that note, once its end is stored; and the folder, once empty.
pub fn remove(db: &Path, relay_pid: u32, started_at: &str) {
    if std::fs::remove_file(file(db, relay_pid, started_at)).is_ok() {
        // Fails while other notes are there, as it should.
        let _ = std::fs::remove_dir(folder(db));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_note_is_read_back_for_its_run_only_and_removed() {
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("t.db");
        let note = EndNote {
            relay_pid: 42,
            started_at: "2026-12-02T09:00:00.000001Z".into(),
            ended_at: "2026-12-02T09:00:01.000000Z".into(),
            end: TraceEnd { exit_code: Some(0), exit_signal: None, end_reason: "the agent exited".into() },
            crossed: [1, 2, 3],
            masked: false,
        };
        write(&db, &note);
        assert_eq!(read(&db, 42, &note.started_at), Some(note.clone()));
        assert_eq!(read(&db, 43, &note.started_at), None);
        assert_eq!(read(&db, 42, "2026-12-02T09:00:00.000002Z"), None);
        remove(&db, 42, &note.started_at);
        assert_eq!(read(&db, 42, &note.started_at), None);
        assert!(!folder(&db).exists());
    }
}
