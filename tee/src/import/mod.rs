//! Imports: our own `acp-tee-trace` exports ([`acp_tee`]), the conductor's
//! `.jsons` ([`jsons`]) and sacp-tee logs ([`sacp`]), read as a stream.
//!
//! Every message goes through the recorder's [`Framer`], so imported traces
//! get kinds, pairing, latency, sessions and previews exactly as recorded ones
//! do. A whole file goes in in one store transaction: when any line is bad
//! the import fails with the file and line and the store is unchanged, unless
//! `skip_bad` is set, which leaves bad lines out and counts them.
//!
//! Architecture Invariant: a failed import changes nothing in the store.

pub mod acp_tee;
pub mod jsons;
pub mod sacp;

use crate::recorder::Framer;
use crate::store::{Import, NewFrame, Store, StoreError};
use acp_tee_shared::TraceMeta;
use indicatif::ProgressBar;
use std::fs::File;
use std::io::{self, BufRead, BufReader, Read};
use std::path::{Path, PathBuf};

/// Which format a file is in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ImportFormat {
    /// Tell from the first line.
    Auto,
    /// `acp-tee-trace`: a JSON document or NDJSON.
    AcpTee,
    /// The conductor's `.jsons`.
    Jsons,
    /// sacp-tee's log: raw `→ `/`← ` lines or its `--json` entries.
    SacpTee,
}

impl ImportFormat {
    /// The name used on the command line and in `imported_from`.
    pub fn as_str(self) -> &'static str {
        match self {
            ImportFormat::Auto => "auto",
            ImportFormat::AcpTee => "acp-tee",
            ImportFormat::Jsons => "jsons",
            ImportFormat::SacpTee => "sacp-tee",
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
}

/// Why an import failed. The store is unchanged when it did.
#[derive(Debug, thiserror::Error)]
pub enum ImportError {
    /// The file cannot be read.
    #[error("cannot read {}: {cause}; check the path", path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// Why.
        cause: io::Error,
    },
    /// A line is not what the format says.
    #[error("{}:{line}: {why}; nothing was imported (fix the line, or pass --skip-bad to leave bad lines out)", path.display())]
    BadLine {
        /// The file.
        path: PathBuf,
        /// 1-based line number.
        line: u64,
        /// What is wrong.
        why: String,
    },
    /// The file as a whole is not what the format says.
    #[error("{}: {why}; nothing was imported", path.display())]
    BadFile {
        /// The file.
        path: PathBuf,
        /// What is wrong (with line and column where known).
        why: String,
    },
    /// The first line matches no format.
    #[error("cannot tell the format of {}; pass --format acp-tee, jsons or sacp-tee", path.display())]
    Unknown {
        /// The file.
        path: PathBuf,
    },
    /// The file holds nothing to import.
    #[error("{} holds no messages; nothing was imported", path.display())]
    Empty {
        /// The file.
        path: PathBuf,
    },
    /// The store refused.
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// Imports `path` into `store`: all of it, or (on error) nothing.
pub fn import(store: &mut Store, path: &Path, opts: &ImportOptions) -> Result<ImportSummary, ImportError> {
    let format = match opts.format {
        ImportFormat::Auto => detect(path)?,
        f => f,
    };
    let read_err = |cause| ImportError::Read { path: path.to_owned(), cause };
    let file = File::open(path).map_err(read_err)?;
    let mtime = file.metadata().and_then(|m| m.modified()).ok();
    let input = BufReader::with_capacity(256 * 1024, Counted { inner: file, progress: opts.progress.clone() });
    let mut ctx = Context {
        path: path.to_owned(),
        opts,
        import: store.begin_import()?,
        imported_from: format!("{} file {}", format.as_str(), path.display()),
        mtime,
        summary: ImportSummary { format, trace_ids: Vec::new(), frames: 0, skipped: 0 },
    };
    match format {
        ImportFormat::AcpTee => acp_tee::read(&mut ctx, input)?,
        ImportFormat::Jsons => jsons::read(&mut ctx, input)?,
        ImportFormat::SacpTee => sacp::read(&mut ctx, input)?,
        ImportFormat::Auto => unreachable!("resolved above"),
    }
    if ctx.summary.trace_ids.is_empty() {
        return Err(ImportError::Empty { path: path.to_owned() });
    }
    ctx.import.commit()?;
    Ok(ctx.summary)
}

/// Tells a file's format from its first non-empty line.
pub fn detect(path: &Path) -> Result<ImportFormat, ImportError> {
    let file = File::open(path).map_err(|cause| ImportError::Read { path: path.to_owned(), cause })?;
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
    if text.starts_with('{') && text.contains("\"acp-tee-trace\"") {
        return Ok(ImportFormat::AcpTee);
    }
    let value: serde_json::Value = serde_json::from_str(text).unwrap_or_default();
    if value.get("ts").is_some() && value.get("type").is_some() {
        Ok(ImportFormat::Jsons)
    } else if value.get("timestamp").is_some() && value.get("direction").is_some() {
        Ok(ImportFormat::SacpTee)
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
}

impl Context<'_> {
    /// A bad line: fails the import, or is counted when `skip_bad` is set.
    fn bad_line(&mut self, line: u64, why: String) -> Result<(), ImportError> {
        if self.opts.skip_bad {
            tracing::debug!("import: {}:{line}: {why}", self.path.display());
            self.summary.skipped += 1;
            Ok(())
        } else {
            Err(ImportError::BadLine { path: self.path.clone(), line, why })
        }
    }

    /// Calls `each` with every non-empty line (without its line end) and
    /// its 1-based number; reads one line at a time.
    fn lines(
        &mut self,
        mut input: impl BufRead,
        mut each: impl FnMut(&mut Self, u64, &str) -> Result<(), ImportError>,
    ) -> Result<(), ImportError> {
        let mut buf = Vec::new();
        let mut number = 0;
        loop {
            buf.clear();
            let n = input
                .read_until(b'\n', &mut buf)
                .map_err(|cause| ImportError::Read { path: self.path.clone(), cause })?;
            if n == 0 {
                return Ok(());
            }
            number += 1;
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

/// Frames of one trace on their way into the store, in batches.
pub struct TraceSink {
    trace_id: i64,
    framer: Framer,
    batch: Vec<NewFrame>,
    frames: i64,
    errors: i64,
    last_t_ns: i64,
}

/// Frames stored per statement batch.
const BATCH: usize = 512;

impl TraceSink {
    /// A new trace (fields filled in by [`TraceSink::finish`]).
    fn start(ctx: &mut Context, mode: &str) -> Result<TraceSink, ImportError> {
        let started = crate::clock::now_rfc3339();
        let trace_id = ctx.import.create_trace(mode, &started, &ctx.imported_from)?;
        ctx.summary.trace_ids.push(trace_id);
        Ok(TraceSink { trace_id, framer: Framer::new(), batch: Vec::new(), frames: 0, errors: 0, last_t_ns: 0 })
    }

    /// Queues one frame made by [`TraceSink::framer`].
    fn push(&mut self, ctx: &mut Context, frame: NewFrame) -> Result<(), ImportError> {
        self.frames += 1;
        self.errors += frame.errors;
        self.last_t_ns = self.last_t_ns.max(frame.t_ns);
        self.batch.push(frame);
        if self.batch.len() >= BATCH {
            self.flush(ctx)?;
        }
        Ok(())
    }

    fn flush(&mut self, ctx: &mut Context) -> Result<(), ImportError> {
        ctx.import.insert_frames(self.trace_id, &self.batch)?;
        ctx.summary.frames += self.batch.len() as u64;
        self.batch.clear();
        Ok(())
    }

    /// Stores what is queued and sets the trace's fields; `meta` gets the
    /// counts of the frames stored unless `keep_counts`.
    fn finish(mut self, ctx: &mut Context, mut meta: TraceMeta, keep_counts: bool) -> Result<(), ImportError> {
        self.flush(ctx)?;
        if !keep_counts {
            meta.frame_count = self.frames;
            meta.error_count = self.errors;
            meta.missing_frames = 0;
        }
        ctx.import.set_meta(self.trace_id, &meta)?;
        Ok(())
    }
}

/// The fields of a trace imported from a format that has no trace fields
/// (`.jsons`, sacp-tee logs): mode `import`, the command names the source.
fn imported_meta(ctx: &Context, format: ImportFormat, started_at: String, last_t_ns: i64) -> TraceMeta {
    let ended_at = chrono::DateTime::parse_from_rfc3339(&started_at)
        .map(|s| crate::clock::rfc3339(s.with_timezone(&chrono::Utc) + chrono::Duration::nanoseconds(last_t_ns)))
        .unwrap_or_else(|_| started_at.clone());
    TraceMeta {
        id: 0,
        name: Some(ctx.trace_name()),
        command: vec!["import".into(), format.as_str().into(), ctx.path.display().to_string()],
        cwd: None,
        mode: "import".into(),
        started_at,
        ended_at: Some(ended_at),
        exit_code: None,
        exit_signal: None,
        end_reason: Some(format!("imported from {}", ctx.imported_from)),
        frame_count: 0,
        error_count: 0,
        missing_frames: 0,
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
