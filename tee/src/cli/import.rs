//! `acp-tee import`: a trace file into the store, in any format
//! `crate::import` reads.

use super::args::StoreArg;
use super::progress;
use crate::import::{ImportFormat, ImportOptions};
use crate::store::Store;
use crate::text::printable;
use clap::Args;
use std::io::Write;
use std::path::{Path, PathBuf};

pub const IMPORT_ABOUT: &str = "\
Read a trace file into the store: an acp-tee export (JSON or NDJSON), the
conductor's .jsons (--trace FILE of agent-client-protocol-conductor), a
sacp-tee log (raw → / ← lines, or its --json entries), Zed's ACP log (\"Copy
All Messages\" in the ACP logs pane, saved to a file), an acp-inspector-trace
export (one trace per connection), acpx flow session events
(~/.acpx/flows/runs/RUN/sessions/SESSION/events.ndjson) or the F# ACP
Inspector's JSONL. The format is told from the file's first line.

Messages are framed, paired and timed like recorded ones; a format without
times (Zed's, sacp-tee's raw log) puts every frame at time 0 in file order.
The trace is shown only once all of the file is in (recordings into the same
store go on meanwhile): a bad line stops the import with its file and line
number and leaves the store as it was, unless --skip-bad leaves bad lines out
(and says how many). Counts are those of the frames stored; a file holding
fewer frames than its header says (acp-tee, acp-inspector) is refused as cut
short, or with --skip-bad imported with the rest counted as missing. Lines
longer than 256 MiB are refused. FILE `-` reads standard input (copied to a
temporary file first), as a file named stdin.";

#[derive(Debug, Args)]
pub struct ImportArgs {
    #[command(flatten)]
    store: StoreArg,
    /// A name for the imported trace (default: the file's name; an acp-tee export keeps its own)
    #[arg(long)]
    name: Option<String>,
    /// The file's format
    #[arg(long, value_enum, default_value = "auto")]
    format: ImportFormat,
    /// Leave out lines that cannot be read (counted) instead of failing; import a file cut short
    #[arg(long)]
    skip_bad: bool,
    /// The file to import (`-`: standard input, named `stdin` unless --name)
    #[arg(value_name = "FILE")]
    file: PathBuf,
}

/// Runs `acp-tee import`.
pub fn import_command(a: ImportArgs) -> anyhow::Result<i32> {
    let mut store = Store::create_or_open(&a.store.path()?)?;
    store.maintain(0)?;
    let format = a.format;
    // Standard input is copied to a temporary file first: the format is
    // told from the first line, then the whole is read.
    let stdin = if a.file.as_os_str() == "-" { Some(super::trace_ref::stdin_to_file()?) } else { None };
    let (read, shown) = match &stdin {
        Some((_, copy)) => (copy.as_path(), Path::new("stdin")),
        None => (a.file.as_path(), a.file.as_path()),
    };
    let size = std::fs::metadata(read).map(|m| m.len()).unwrap_or(0);
    let opts = ImportOptions { format, name: a.name, skip_bad: a.skip_bad, progress: progress::bar(size, "bytes") };
    let result = crate::import::import_as(&mut store, read, shown, &opts);
    opts.progress.finish_and_clear();
    let summary = result?;
    let ids: Vec<String> = summary.trace_ids.iter().map(i64::to_string).collect();
    let file = printable(&shown.display().to_string()).into_owned();
    let mut out = std::io::stdout().lock();
    writeln!(
        out,
        "imported {} frames from {file} ({}) as trace {}",
        summary.frames,
        summary.format.as_str(),
        ids.join(", ")
    )?;
    if summary.skipped > 0 {
        eprintln!("acp-tee: warning: {} bad lines of {file} were left out (--skip-bad)", summary.skipped);
    }
    if summary.absent > 0 {
        eprintln!(
            "acp-tee: warning: {file} holds {} frames fewer than its headers say; they are counted as missing (--skip-bad)",
            summary.absent
        );
    }
    Ok(0)
}
