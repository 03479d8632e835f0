//! `acp-tee rm`, `rename`, `pin` and `unpin`: a person's changes to the
//! traces of a store, through the store's [`Editor`] role.

use super::args::StoreArg;
use super::trace_ref::{resolve, resolve_many, TraceRef};
use crate::store::{Editor, RemoveError};
use crate::text::printable;
use acp_tee_shared::format_bytes;
use acp_tee_shared::TraceMeta;
use clap::Args;

pub const RM_ABOUT: &str = "\
Remove traces from the store: their frames, counts and search index entries.

TRACE is an id from `acp-tee list`, `latest`, a name (the newest trace of
that name; name:NAME for a name that looks like an id) or `all`. Either every
trace named goes or none does: a trace still being recorded (or finishing)
and a pinned one (`acp-tee unpin` it first) are refused. The space comes back
to the filesystem in stores made by this version (see `acp-tee prune
--compact` for older ones). Readers stop seeing the traces at once; removing
a large trace takes a moment, and recordings to the same store go on
meanwhile.";

/// Arguments of `acp-tee rm`.
#[derive(Debug, Args)]
pub struct RmArgs {
    #[command(flatten)]
    store: StoreArg,
    /// The traces to remove
    #[arg(value_name = "TRACE", required = true)]
    traces: Vec<TraceRef>,
}

/// Arguments of `acp-tee rename`.
#[derive(Debug, Args)]
pub struct RenameArgs {
    #[command(flatten)]
    store: StoreArg,
    /// The trace: an id, `latest` or its current name
    #[arg(value_name = "TRACE")]
    trace: TraceRef,
    /// Its new name
    #[arg(value_name = "NAME")]
    name: String,
}

/// Arguments of `acp-tee pin` and `acp-tee unpin`.
#[derive(Debug, Args)]
pub struct PinArgs {
    #[command(flatten)]
    store: StoreArg,
    /// The traces: ids, `latest`, names or `all`
    #[arg(value_name = "TRACE", required = true)]
    traces: Vec<TraceRef>,
}

/// Opens the store to edit it, after the maintenance step every command
/// that opens a store runs.
fn editor(store: &StoreArg) -> anyhow::Result<Editor> {
    let path = store.path()?;
    super::maintain_before_reading(&path)?;
    Ok(Editor::open(&path)?)
}

/// A trace as a message names it: `3 "name"`.
fn named(t: &TraceMeta) -> String {
    match &t.name {
        Some(name) => format!("{} \"{}\"", t.id, printable(name)),
        None => t.id.to_string(),
    }
}

/// Runs `acp-tee rm`.
pub fn rm_command(a: RmArgs) -> anyhow::Result<i32> {
    let mut editor = editor(&a.store)?;
    let traces = resolve_many(&editor, &a.traces)?;
    let ids: Vec<i64> = traces.iter().map(|t| t.id).collect();
    match editor.remove(&ids) {
        Ok(()) => {}
        Err(e @ (RemoveError::NotEnded(_) | RemoveError::Pinned(_))) => {
            anyhow::bail!("{e}; nothing was removed")
        }
        Err(e) => return Err(e.into()),
    }
    editor.reclaim()?;
    for t in &traces {
        println!("removed trace {} ({} frames, {})", named(t), t.frame_count, format_bytes(t.bytes as u64));
    }
    Ok(0)
}

/// Runs `acp-tee rename`.
pub fn rename_command(a: RenameArgs) -> anyhow::Result<i32> {
    let name = a.name.trim();
    if let Some(problem) = acp_tee_shared::api::name_problem(name) {
        anyhow::bail!("{problem}");
    }
    let editor = editor(&a.store)?;
    let trace = resolve(&editor, &a.trace)?;
    editor.rename(trace.id, name)?;
    println!("renamed trace {} to \"{}\"", named(&trace), printable(name));
    Ok(0)
}

/// Runs `acp-tee pin` (`pinned`) or `acp-tee unpin`.
pub fn pin_command(a: PinArgs, pinned: bool) -> anyhow::Result<i32> {
    let editor = editor(&a.store)?;
    for t in resolve_many(&editor, &a.traces)? {
        let was = editor.set_pinned(t.id, pinned)?;
        let what = match (was, pinned) {
            (false, true) => "pinned",
            (true, true) => "was pinned already:",
            (true, false) => "unpinned",
            (false, false) => "was not pinned:",
        };
        println!("{what} trace {}", named(&t));
    }
    Ok(0)
}
