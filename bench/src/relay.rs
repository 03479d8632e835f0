//! The relays compared, all in the same topology:
//!
//! ```text
//! bench client ──▶ [relay, client→agent] ──▶ agent `cat` ──▶ [relay, agent→client] ──▶ bench client
//! ```
//!
//! - `direct`: no relay; the client talks to the `cat` agent itself (2 pipes).
//! - `cat relay`: `sh -c 'cat | cat | cat'`: one `cat` per direction around the
//!   agent `cat`, the physical limit of a relay process that copies (4 pipes).
//! - `acp-tee`: `acp-tee --db DB -- cat`, recording both directions (4 pipes
//!   plus the handoff pipe to its recorder).
//! - `sacp-tee`: `sacp-tee -l LOG -- cat` (10.0.1 from crates.io), logging both
//!   directions as text lines.

use crate::procs;
use anyhow::{bail, Context, Result};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// One relay form under test.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Relay {
    /// The client and the agent joined by pipes, no relay.
    Direct,
    /// A `cat` per direction.
    Cat,
    /// acp-tee wrap mode, recording into a fresh store.
    AcpTee,
    /// sacp-tee 10.0.1, logging into a fresh file.
    SacpTee,
}

impl Relay {
    /// The name used in reports.
    pub fn name(&self) -> &'static str {
        match self {
            Relay::Direct => "direct pipe",
            Relay::Cat => "cat relay",
            Relay::AcpTee => "acp-tee",
            Relay::SacpTee => "sacp-tee 10.0.1",
        }
    }

    /// Every relay to run: sacp-tee only when it is on PATH.
    pub fn all() -> Vec<Relay> {
        let mut v = vec![Relay::Direct, Relay::Cat, Relay::AcpTee];
        if procs::which("sacp-tee").is_some() {
            v.push(Relay::SacpTee);
        }
        v
    }
}

/// Where a relay run records, so the records can be counted afterwards.
#[derive(Debug, Clone)]
pub enum Record {
    /// Nothing is recorded.
    None,
    /// An acp-tee store.
    Store(PathBuf),
    /// A sacp-tee log.
    Log(PathBuf),
}

/// The command that runs `relay` around a `cat` agent, with piped stdin and
/// stdout, recording into `dir` (which must be new for each run).
pub fn command(relay: &Relay, acp_tee: &Path, dir: &Path) -> (Command, Record) {
    let (mut cmd, record) = match relay {
        Relay::Direct => (Command::new("cat"), Record::None),
        Relay::Cat => {
            let mut c = Command::new("sh");
            c.args(["-c", "cat | cat | cat"]);
            (c, Record::None)
        }
        Relay::AcpTee => {
            let db = dir.join("traces.db");
            let mut c = Command::new(acp_tee);
            c.arg("--db").arg(&db).args(["--name", "bench", "--", "cat"]);
            (c, Record::Store(db))
        }
        Relay::SacpTee => {
            let log = dir.join("sacp-tee.log");
            let mut c = Command::new("sacp-tee");
            c.arg("-l").arg(&log).args(["--", "cat"]);
            (c, Record::Log(log))
        }
    };
    cmd.stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::null());
    (cmd, record)
}

/// What a relay recorded of one run.
#[derive(Debug, Clone, Copy, Default)]
pub struct Recorded {
    /// Frames (acp-tee) or log lines (sacp-tee) present.
    pub frames: u64,
    /// Frames the trace says are missing (acp-tee only).
    pub missing: u64,
}

/// Counts what was recorded and fails unless it is exactly `expected` frames.
pub fn check_recorded(record: &Record, expected: u64) -> Result<Option<Recorded>> {
    let got = match record {
        Record::None => return Ok(None),
        Record::Store(db) => stored_frames(db)?,
        Record::Log(log) => {
            let text = std::fs::read(log).with_context(|| format!("cannot read sacp-tee's log {}", log.display()))?;
            let lines =
                text.split(|&b| b == b'\n').filter(|l| l.starts_with("→".as_bytes()) || l.starts_with("←".as_bytes()));
            Recorded { frames: lines.count() as u64, missing: 0 }
        }
    };
    if got.frames != expected || got.missing != 0 {
        bail!(
            "LOSS: {} recorded {} frames ({} missing), expected {expected}",
            match record {
                Record::Store(_) => "acp-tee",
                _ => "sacp-tee",
            },
            got.frames,
            got.missing
        );
    }
    Ok(Some(got))
}

/// Waits until the newest trace of `db` (named `name`, when given) has
/// ended: acp-tee exits when its run ends, while its recorder may still be
/// storing what it was handed, so a trace is complete only once it ended.
pub fn wait_trace_end(db: &Path, name: Option<&str>) -> Result<()> {
    use rusqlite::OptionalExtension;
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(300);
    let conn = rusqlite::Connection::open_with_flags(db, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY)
        .with_context(|| format!("cannot open the store {}", db.display()))?;
    loop {
        // The trace may not exist yet: the relay waits for its recorder to
        // add it for a while only, and the store may be busy.
        let ended: Option<Option<String>> = conn
            .query_row(
                "SELECT ended_at FROM traces WHERE ?1 IS NULL OR name = ?1 ORDER BY id DESC LIMIT 1",
                [name],
                |r| r.get(0),
            )
            .optional()
            .with_context(|| format!("cannot read the traces of {}", db.display()))?;
        if ended.flatten().is_some() {
            return Ok(());
        }
        if std::time::Instant::now() > deadline {
            bail!("the trace in {} did not end within 300 s of acp-tee's exit", db.display());
        }
        std::thread::sleep(std::time::Duration::from_millis(2));
    }
}

/// Frames stored in the only trace of `db`, once that trace has ended.
pub fn stored_frames(db: &Path) -> Result<Recorded> {
    let conn = rusqlite::Connection::open_with_flags(db, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY)
        .with_context(|| format!("cannot open the store {}", db.display()))?;
    let (id, ended, frame_count, missing): (i64, Option<String>, i64, i64) = conn
        .query_row("SELECT id, ended_at, frame_count, missing_frames FROM traces ORDER BY id DESC LIMIT 1", [], |r| {
            Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?))
        })
        .with_context(|| format!("no trace in {}", db.display()))?;
    if ended.is_none() {
        bail!("trace {id} in {} has not ended although acp-tee exited", db.display());
    }
    let rows: i64 = conn.query_row("SELECT count(*) FROM frames WHERE trace_id = ?1", [id], |r| r.get(0))?;
    if rows != frame_count {
        bail!("trace {id} says {frame_count} frames but {rows} are stored");
    }
    Ok(Recorded { frames: rows as u64, missing: missing as u64 })
}

/// One JSON-RPC line of exactly `size` bytes (newline included): a
/// `session/update` notification whose text pads it, or a request with `id`.
pub fn line(size: usize, id: Option<u64>) -> Vec<u8> {
    let head = match id {
        Some(id) => format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"session/prompt","params":{{"sessionId":"sess-1","prompt":[{{"type":"text","text":""#),
        None => r#"{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"sess-1","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":""#.to_owned(),
    };
    let tail = if id.is_some() { "\"}]}}\n" } else { "\"}}}}\n" };
    let pad = size.saturating_sub(head.len() + tail.len());
    let words = b"the quick brown fox jumps over the lazy dog ";
    let mut out = head.into_bytes();
    out.extend((0..pad).map(|i| words[i % words.len()]));
    out.extend_from_slice(tail.as_bytes());
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_have_the_exact_size_and_are_json() {
        for size in [300, 65536, 1 << 20] {
            let l = line(size, None);
            assert_eq!(l.len(), size);
            assert_eq!(l.iter().filter(|&&b| b == b'\n').count(), 1);
            serde_json::from_slice::<serde_json::Value>(&l).unwrap();
        }
        let r = line(200, Some(7));
        assert_eq!(r.len(), 200);
        assert_eq!(serde_json::from_slice::<serde_json::Value>(&r).unwrap()["id"], 7);
    }
}
