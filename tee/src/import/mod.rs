//! Imports: our own `acp-tee-trace` exports ([`acp_tee`]), the conductor's
//! `.jsons` ([`jsons`]), sacp-tee logs ([`sacp`]), Zed's ACP log ([`zed`]),
//! `acp-inspector-trace` files ([`inspector`]), acpx flow session events
//! ([`acpx`]) and the F# ACP Inspector's JSONL ([`inspector_fs`]), read as
//! a stream.
//!
//! Every message goes through the [`Framer`] recordings use, so imported traces
//! get kinds, pairing, latency, sessions and previews exactly as recorded ones
//! do. Frames are stored in chunks of at most [`CHUNK_FRAMES`] frames or
//! [`CHUNK_BYTES`] bytes, one short transaction each, so a recorder writing
//! to the same store never waits for a whole file; the file's traces are
//! hidden from readers until all of it is in ([`Import`]). When any line is
//! bad the import fails with the file and line and the store is as readers
//! saw it, unless `skip_bad` is set, which leaves bad lines out and counts
//! them.
//!
//! Counts are those of the frames stored, never a file's word for them: a
//! trace has the frames and errors that were stored, and is missing what its
//! header says was missing, the gaps in its seqs, and (with `skip_bad`) the
//! frames its header counts that were not stored.
//!
//! Hostile input is bounded: no line is read past [`MAX_LINE_BYTES`], no
//! trace header past [`MAX_HEADER_BYTES`], so memory stays within a small
//! multiple of those whatever the file holds.
//!
//! Architecture Invariant: a failed import changes nothing readers see.

pub mod acp_tee;
pub mod acpx;
pub mod inspector;
pub mod inspector_fs;
pub mod jsons;
pub mod sacp;
mod stamps;
pub mod zed;

use crate::frame::Framer;
use crate::model::{Mode, NewFrame};
use crate::store::{Import, Store, StoreError, MAX_SEQ};
use crate::text::printable;
use acp_tee_shared::TraceMeta;
use indicatif::ProgressBar;
use stamps::Stamps;
use std::fs::File;
use std::io::{self, BufRead, BufReader, Read};
use std::path::{Path, PathBuf};

/// The longest line an import reads, its end included: 256 MiB. A frame is
/// one line, and the recorder stores lines of any length (it is tested with
/// 32 MiB ones); in an export a message's bytes grow by JSON escaping (up to
/// six times, for control bytes) or base64 (a third), so this keeps a 32 MiB
/// message importable at the worst and ordinary ones far beyond, while a
/// file without line ends (`/dev/zero`) stops here instead of taking all
/// memory. Reading a frame of this size takes about twice it in memory.
pub const MAX_LINE_BYTES: usize = 256 << 20;

/// The longest trace header an import reads (an NDJSON header line, or the
/// fields of a trace in a JSON document): 16 MiB. It holds the agent's
/// command line, which Linux keeps under 2 MiB with the default stack limit;
/// parsed, a header takes up to about ten times its size (a list of empty
/// strings), so it has its own, lower bound.
pub const MAX_HEADER_BYTES: usize = 16 << 20;

/// Frames stored per transaction at most: a few tens of milliseconds of
/// writing, which is as long as a recorder waits for an import.
pub const CHUNK_FRAMES: usize = 4096;

/// Bytes of frames stored per transaction at most (a chunk holds at least
/// one frame, however large).
pub const CHUNK_BYTES: usize = 8 << 20;

/// Which format a file is in (also the values of `import --format`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum ImportFormat {
    /// Tell from the first line.
    Auto,
    /// `acp-tee-trace`: a JSON document or NDJSON.
    AcpTee,
    /// The conductor's `.jsons`.
    Jsons,
    /// sacp-tee's log: raw `→ `/`← ` lines or its `--json` entries.
    SacpTee,
    /// Zed's ACP log pane, "Copy All Messages": a JSON array.
    Zed,
    /// sagikazarmark/acp-inspector's `acp-inspector-trace` v1 JSONL.
    AcpInspector,
    /// acpx flow session events (`events.ndjson`).
    Acpx,
    /// venikman/ACP-inspector's (F#) JSONL trace.
    AcpInspectorFsharp,
}

impl ImportFormat {
    /// The name used on the command line and in `imported_from`.
    pub fn as_str(self) -> &'static str {
        match self {
            ImportFormat::Auto => "auto",
            ImportFormat::AcpTee => "acp-tee",
            ImportFormat::Jsons => "jsons",
            ImportFormat::SacpTee => "sacp-tee",
            ImportFormat::Zed => "zed",
            ImportFormat::AcpInspector => "acp-inspector",
            ImportFormat::Acpx => "acpx",
            ImportFormat::AcpInspectorFsharp => "acp-inspector-fsharp",
        }
    }
}

/// How to import.
pub struct ImportOptions {
    /// The file's format.
    pub format: ImportFormat,
    /// A name for the imported trace instead of the file's.
    pub name: Option<String>,
    /// Leave bad lines out (counted) instead of failing.
    pub skip_bad: bool,
    /// Advanced by the bytes read (hidden when not on a terminal).
    pub progress: ProgressBar,
}

/// What an import did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ImportSummary {
    /// The format the file was read as.
    pub format: ImportFormat,
    /// The new traces' ids.
    pub trace_ids: Vec<i64>,
    /// Frames stored.
    pub frames: u64,
    /// Bad lines left out (`skip_bad`).
    pub skipped: u64,
    /// Frames the file's headers count that it does not hold, nor as bad
    /// lines (`skip_bad`: a file cut short); counted as missing.
    pub absent: u64,
}

/// Why an import failed. The store is unchanged when it did.
#[derive(Debug, thiserror::Error)]
pub enum ImportError {
    /// The file cannot be read.
    #[error("cannot read {}: {cause}; check the path", printable(&path.display().to_string()))]
    Read {
        /// The file.
        path: PathBuf,
        /// Why.
        cause: io::Error,
    },
    /// A line is not what the format says.
    #[error(
        "{}:{line}: {}; nothing was imported (fix the line, or pass --skip-bad to leave bad lines out)",
        printable(&path.display().to_string()),
        printable(why)
    )]
    BadLine {
        /// The file.
        path: PathBuf,
        /// 1-based line number.
        line: u64,
        /// What is wrong.
        why: String,
    },
    /// A line that no `--skip-bad` can leave out (a header, a line too long).
    #[error("{}:{line}: {}; nothing was imported", printable(&path.display().to_string()), printable(why))]
    Invalid {
        /// The file.
        path: PathBuf,
        /// 1-based line number.
        line: u64,
        /// What is wrong.
        why: String,
    },
    /// A trace's header counts more frames than the file holds.
    #[error(
        "{}:{line}: the header says the trace has {claimed} frames, the file holds {held}; it is cut short or was \
         edited; nothing was imported (pass --skip-bad to import the frames it holds, the rest counted as missing)",
        printable(&path.display().to_string())
    )]
    Incomplete {
        /// The file.
        path: PathBuf,
        /// The header's line (in a JSON document, the line its trace ends on).
        line: u64,
        /// Frames the header counts.
        claimed: i64,
        /// Frames the file holds.
        held: i64,
    },
    /// The file as a whole is not what the format says.
    #[error("{}: {}; nothing was imported", printable(&path.display().to_string()), printable(why))]
    BadFile {
        /// The file.
        path: PathBuf,
        /// What is wrong (with line and column where known).
        why: String,
    },
    /// The first line matches no format.
    #[error(
        "cannot tell the format of {}; pass --format acp-tee, jsons, sacp-tee, zed, acp-inspector, acpx or acp-inspector-fsharp",
        printable(&path.display().to_string())
    )]
    Unknown {
        /// The file.
        path: PathBuf,
    },
    /// The file holds nothing to import.
    #[error("{} holds no messages; nothing was imported", printable(&path.display().to_string()))]
    Empty {
        /// The file.
        path: PathBuf,
    },
    /// The store refused.
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// Imports `path` into `store`: all of it, or (on error) nothing readers see.
#[cfg(test)]
pub fn import(store: &mut Store, path: &Path, opts: &ImportOptions) -> Result<ImportSummary, ImportError> {
    import_as(store, path, path, opts)
}

/// Imports the file at `file` into `store` as if it were `path` (all of
/// it, or on error nothing readers see): errors, the default
/// name and `imported_from` say `path` (a copy of standard input is
/// imported as `stdin`).
pub fn import_as(
    store: &mut Store,
    file: &Path,
    path: &Path,
    opts: &ImportOptions,
) -> Result<ImportSummary, ImportError> {
    let format = match opts.format {
        ImportFormat::Auto => detect_as(file, path)?,
        f => f,
    };
    let read_err = |cause| ImportError::Read { path: path.to_owned(), cause };
    let file = File::open(file).map_err(read_err)?;
    let mtime = file.metadata().and_then(|m| m.modified()).ok();
    let input = BufReader::with_capacity(256 * 1024, Counted { inner: file, progress: opts.progress.clone() });
    let mut ctx = Context {
        path: path.to_owned(),
        opts,
        import: store.begin_import()?,
        imported_from: format!("{} file {}", format.as_str(), path.display()),
        mtime,
        summary: ImportSummary { format, trace_ids: Vec::new(), frames: 0, skipped: 0, absent: 0 },
        family: Vec::new(),
    };
    match format {
        ImportFormat::AcpTee => acp_tee::read(&mut ctx, input)?,
        ImportFormat::Jsons => jsons::read(&mut ctx, input)?,
        ImportFormat::SacpTee => sacp::read(&mut ctx, input)?,
        ImportFormat::Zed => zed::read(&mut ctx, input)?,
        ImportFormat::AcpInspector => inspector::read(&mut ctx, input)?,
        ImportFormat::Acpx => acpx::read(&mut ctx, input)?,
        ImportFormat::AcpInspectorFsharp => inspector_fs::read(&mut ctx, input)?,
        ImportFormat::Auto => unreachable!("resolved above"),
    }
    if ctx.summary.trace_ids.is_empty() {
        return Err(ImportError::Empty { path: path.to_owned() });
    }
    link_family(&mut ctx)?;
    ctx.import.commit()?;
    Ok(ctx.summary)
}

/// Tells the format of the file at `file` from its first non-empty line;
/// errors name it `path`.
fn detect_as(file: &Path, path: &Path) -> Result<ImportFormat, ImportError> {
    let file = File::open(file).map_err(|cause| ImportError::Read { path: path.to_owned(), cause })?;
    let mut first = Vec::new();
    let mut reader = BufReader::new(file);
    while first.iter().all(u8::is_ascii_whitespace) {
        first.clear();
        // Only the start matters; a first line of 64 MiB is not read whole.
        let n = (&mut reader)
            .take(1 << 20)
            .read_until(b'\n', &mut first)
            .map_err(|cause| ImportError::Read { path: path.to_owned(), cause })?;
        if n == 0 {
            return Err(ImportError::Empty { path: path.to_owned() });
        }
    }
    let text = String::from_utf8_lossy(&first);
    let text = text.trim();
    if text.starts_with("→ ") || text.starts_with("← ") {
        return Ok(ImportFormat::SacpTee);
    }
    // Only Zed's copy is a JSON array (pretty-printed: `[` alone on the line).
    if text.starts_with('[') {
        return Ok(ImportFormat::Zed);
    }
    if text.starts_with('{') && text.contains("\"acp-tee-trace\"") {
        return Ok(ImportFormat::AcpTee);
    }
    if text.starts_with('{') && text.contains("\"acp-inspector-trace\"") {
        return Ok(ImportFormat::AcpInspector);
    }
    let value: serde_json::Value = serde_json::from_str(text).unwrap_or_default();
    let has = |keys: &[&str]| keys.iter().all(|k| value.get(k).is_some());
    if has(&["ts", "type"]) {
        Ok(ImportFormat::Jsons)
    } else if has(&["timestamp", "direction"]) {
        Ok(ImportFormat::SacpTee)
    } else if has(&["seq", "direction", "message"]) {
        Ok(ImportFormat::Acpx)
    } else if has(&["direction", "json"]) {
        Ok(ImportFormat::AcpInspectorFsharp)
    } else {
        Err(ImportError::Unknown { path: path.to_owned() })
    }
}

/// A reader that advances a progress bar by the bytes it reads.
struct Counted {
    inner: File,
    progress: ProgressBar,
}

impl Read for Counted {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.progress.inc(n as u64);
        Ok(n)
    }
}

/// Everything a format reader needs: the open transaction and the options.
pub struct Context<'a> {
    path: PathBuf,
    opts: &'a ImportOptions,
    import: Import<'a>,
    imported_from: String,
    mtime: Option<std::time::SystemTime>,
    summary: ImportSummary,
    /// Each trace read: its id in the file, its id here and its parent's
    /// id in the file, so that a family exported together is one again.
    family: Vec<(i64, i64, Option<i64>)>,
}

impl Context<'_> {
    /// A bad line: fails the import, or is counted when `skip_bad` is set.
    fn bad_line(&mut self, line: u64, why: String) -> Result<(), ImportError> {
        if self.opts.skip_bad {
            tracing::debug!("import: {}:{line}: {}", printable(&self.path.display().to_string()), printable(&why));
            self.summary.skipped += 1;
            Ok(())
        } else {
            Err(ImportError::BadLine { path: self.path.clone(), line, why })
        }
    }

    /// A line that fails the import whatever `skip_bad` says.
    fn invalid(&self, line: u64, why: String) -> ImportError {
        ImportError::Invalid { path: self.path.clone(), line, why }
    }

    /// Calls `each` with every non-empty line (without its line end) and
    /// its 1-based number; reads one line at a time, none longer than
    /// [`MAX_LINE_BYTES`].
    fn lines(
        &mut self,
        mut input: impl BufRead,
        mut each: impl FnMut(&mut Self, u64, &str) -> Result<(), ImportError>,
    ) -> Result<(), ImportError> {
        let mut buf = Vec::new();
        let mut number = 0;
        loop {
            if buf.capacity() > CHUNK_BYTES {
                // Give back what a long line took.
                buf = Vec::new();
            }
            buf.clear();
            let n = (&mut input)
                .take(MAX_LINE_BYTES as u64 + 1)
                .read_until(b'\n', &mut buf)
                .map_err(|cause| ImportError::Read { path: self.path.clone(), cause })?;
            if n == 0 {
                return Ok(());
            }
            number += 1;
            if buf.len() > MAX_LINE_BYTES {
                return Err(self.invalid(number, format!("line longer than {MAX_LINE_BYTES} bytes")));
            }
            let Ok(text) = std::str::from_utf8(&buf) else {
                self.bad_line(number, "the line is not UTF-8".into())?;
                continue;
            };
            let text = text.strip_suffix('\n').unwrap_or(text);
            let text = text.strip_suffix('\r').unwrap_or(text);
            if !text.trim().is_empty() {
                each(self, number, text)?;
            }
        }
    }

    /// The file's modification time, UTC: what wall clock a source without
    /// one is pinned to.
    fn file_time(&self) -> chrono::DateTime<chrono::Utc> {
        self.mtime.map(chrono::DateTime::<chrono::Utc>::from).unwrap_or_else(chrono::Utc::now)
    }

    /// The name of a trace made from this file: `--name`, else the file's stem.
    fn trace_name(&self) -> String {
        self.opts.name.clone().unwrap_or_else(|| {
            self.path.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_else(|| "import".into())
        })
    }
}

/// Frames of one trace on their way into the store, in chunks.
pub struct TraceSink {
    trace_id: i64,
    framer: Framer,
    batch: Vec<NewFrame>,
    /// Bytes of the frames in `batch`.
    batch_bytes: usize,
    /// Frames queued so far.
    frames: i64,
    /// The highest seq queued so far.
    last_seq: i64,
    last_t_ns: i64,
    /// The import's count of bad lines left out when this trace began.
    skipped_before: u64,
}

/// What a trace's header says about it: counts to check the frames against.
#[derive(Debug, Clone, Copy)]
struct Claim {
    /// The header's line (in a JSON document, the line its trace ends on).
    line: u64,
    frames: i64,
    missing: i64,
}

impl Claim {
    /// The counts of `meta`, read from `line`; negative ones are refused.
    fn of(meta: &TraceMeta, line: u64) -> Result<Claim, String> {
        for (field, n) in [
            ("frame_count", meta.frame_count),
            ("error_count", meta.error_count),
            ("missing_frames", meta.missing_frames),
        ] {
            if n < 0 {
                return Err(format!("`{field}` is {n}; counts are 0 or more"));
            }
        }
        Ok(Claim { line, frames: meta.frame_count, missing: meta.missing_frames })
    }
}

impl TraceSink {
    /// A new trace, hidden until the import is complete (fields filled in
    /// by [`TraceSink::finish`]).
    fn start(ctx: &mut Context, mode: &str) -> Result<TraceSink, ImportError> {
        let started = crate::clock::now_rfc3339();
        let trace_id = ctx.import.create_trace(mode, &started, &ctx.imported_from)?;
        ctx.summary.trace_ids.push(trace_id);
        Ok(TraceSink {
            trace_id,
            framer: Framer::new(),
            batch: Vec::new(),
            batch_bytes: 0,
            frames: 0,
            last_seq: 0,
            last_t_ns: 0,
            skipped_before: ctx.summary.skipped,
        })
    }

    /// Whether this trace already has a frame with `seq` (queued or stored).
    /// Files come in seq order, so this is one comparison but for a seq that
    /// is not after the last.
    fn has_seq(&self, ctx: &Context, seq: i64) -> Result<bool, ImportError> {
        if !(1..=MAX_SEQ).contains(&seq) || seq > self.last_seq {
            return Ok(false);
        }
        Ok(self.batch.iter().any(|f| f.seq == seq) || ctx.import.has_frame(self.trace_id, seq)?)
    }

    /// Queues one frame made by [`TraceSink::framer`]; stores the queue as
    /// one chunk when it is full.
    fn push(&mut self, ctx: &mut Context, frame: NewFrame) -> Result<(), ImportError> {
        self.frames += 1;
        self.last_seq = self.last_seq.max(frame.seq);
        self.last_t_ns = self.last_t_ns.max(frame.t_ns);
        self.batch_bytes += frame.raw.len() + frame.envelope.as_ref().map_or(0, Vec::len);
        self.batch.push(frame);
        if self.batch.len() >= CHUNK_FRAMES || self.batch_bytes >= CHUNK_BYTES {
            self.flush(ctx)?;
        }
        Ok(())
    }

    /// Stores the queued frames in one transaction.
    fn flush(&mut self, ctx: &mut Context) -> Result<(), ImportError> {
        if self.batch.is_empty() {
            return Ok(());
        }
        ctx.import.insert_frames(self.trace_id, &self.batch)?;
        ctx.summary.frames += self.batch.len() as u64;
        self.batch.clear();
        self.batch_bytes = 0;
        Ok(())
    }

    /// Stores what is queued and sets the trace's fields to `meta`'s, with
    /// counts from what was stored: the frames and errors stored, and as
    /// missing the gaps in seq or, when the file has a header (`claim`), what
    /// it says was missing plus the frames it counts that were not stored
    /// (only with `skip_bad`: otherwise a file holding fewer frames than its
    /// header counts is refused as cut short).
    fn finish(mut self, ctx: &mut Context, mut meta: TraceMeta, claim: Option<Claim>) -> Result<(), ImportError> {
        self.flush(ctx)?;
        let stored = ctx.import.stored(self.trace_id)?;
        let gaps = stored.last_seq - stored.frames;
        let mut missing = 0;
        if let Some(claim) = claim {
            let unstored = (claim.frames - stored.frames).max(0);
            if unstored > 0 && !ctx.opts.skip_bad {
                return Err(ImportError::Incomplete {
                    path: ctx.path.clone(),
                    line: claim.line,
                    claimed: claim.frames,
                    held: stored.frames,
                });
            }
            let left_out = (ctx.summary.skipped - self.skipped_before) as i64;
            ctx.summary.absent += (unstored - left_out).max(0) as u64;
            missing = claim.missing.saturating_add(unstored);
        }
        meta.frame_count = stored.frames;
        meta.error_count = stored.errors;
        meta.missing_frames = missing.max(gaps);
        ctx.import.set_meta(self.trace_id, &meta)?;
        ctx.family.push((meta.id, self.trace_id, meta.parent_trace));
        Ok(())
    }
}

/// Links each imported trace whose parent (by its id in the file) was
/// imported with it; a parent the file does not hold is not guessed.
fn link_family(ctx: &mut Context) -> Result<(), ImportError> {
    let family = std::mem::take(&mut ctx.family);
    for &(_, child, parent) in &family {
        let Some(parent) = parent else { continue };
        // The first trace of the file with that id (ids are unique in an
        // export of one store; a file joined from two stores is not).
        if let Some(&(_, here, _)) = family.iter().find(|(source, here, _)| *source == parent && *here != child) {
            ctx.import.link(child, here)?;
        }
    }
    Ok(())
}

/// The fields of a trace imported from a format that has no trace fields
/// (all but `acp-tee-trace`): mode `import`, the command names the source.
fn imported_meta(ctx: &Context, format: ImportFormat, started_at: String, last_t_ns: i64) -> TraceMeta {
    let ended_at = chrono::DateTime::parse_from_rfc3339(&started_at)
        .ok()
        .and_then(|s| s.with_timezone(&chrono::Utc).checked_add_signed(chrono::Duration::nanoseconds(last_t_ns)))
        .map(crate::clock::rfc3339)
        .unwrap_or_else(|| started_at.clone());
    TraceMeta {
        protocol: None,
        parent_trace: None,
        id: 0,
        name: Some(ctx.trace_name()),
        command: vec!["import".into(), format.as_str().into(), ctx.path.display().to_string()],
        cwd: None,
        mode: Mode::Import.to_string(),
        started_at,
        ended_at: Some(ended_at),
        exit_code: None,
        exit_signal: None,
        end_reason: Some(format!("imported from {}", ctx.imported_from)),
        frame_count: 0,
        error_count: 0,
        missing_frames: 0,
        missing_unknown: false,
        pinned: false,
        bytes: 0,
    }
}

/// A JSON-RPC message line built from parts, each part's exact text kept.
fn message_line(id: Option<&str>, method: Option<&str>, params: Option<&str>, reply: Option<(&str, &str)>) -> Vec<u8> {
    let mut out = String::from("{\"jsonrpc\":\"2.0\"");
    if let Some(id) = id {
        out.push_str(",\"id\":");
        out.push_str(id);
    }
    if let Some(method) = method {
        out.push_str(",\"method\":");
        out.push_str(&serde_json::to_string(method).expect("strings always serialise"));
    }
    if let Some(params) = params.filter(|p| *p != "null") {
        out.push_str(",\"params\":");
        out.push_str(params);
    }
    if let Some((key, value)) = reply {
        out.push_str(&format!(",\"{key}\":{value}"));
    }
    out.push_str("}\n");
    out.into_bytes()
}

#[cfg(test)]
mod tests;

#[cfg(test)]
mod formats_tests;

#[cfg(test)]
mod fuzz;
