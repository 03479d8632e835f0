//! `acp-tee prune`: remove traces by age, count and the store's size, and
//! `--compact`, the one-time conversion of an older store.

use super::args::StoreArg;
use crate::store::{Editor, Policy, PruneReport};
use crate::text::printable;
use acp_tee_shared::format_bytes;
use clap::Args;
use std::io::Write;
use std::time::Duration;

pub const PRUNE_ABOUT: &str = "\
Remove the traces a retention policy names: those that ended longer ago
than --older-than, all but the --keep latest, and the oldest until the
store's pages in use come to --max-size. A trace any rule names goes; a
pinned trace (`acp-tee pin`) and one still recorded or finishing stay.
--dry-run says what would go and about how much it frees.

A rule not given as a flag comes from the environment or the config file
([retention] older_than, keep, max_size; see `acp-tee config`), which
recorders and `acp-tee serve` also apply by themselves, a bounded step at a
time, while they run. Recordings to the same store go on while a prune
runs.

The space comes back to the filesystem in stores made by this version
(auto_vacuum=INCREMENTAL). A store made earlier keeps freed space for its
next frames; --compact rewrites it once (it needs free disk about the
store's size, and is refused while a trace is being recorded), after which
every prune gives space back.";

/// Arguments of `acp-tee prune`.
#[derive(Debug, Args)]
pub struct PruneArgs {
    #[command(flatten)]
    store: StoreArg,
    /// Remove traces that ended longer ago than AGE (90m, 12h, 30d, 2w)
    #[arg(long, value_name = "AGE", value_parser = crate::config::parse_age)]
    older_than: Option<Duration>,
    /// Keep the N latest traces, remove the rest
    #[arg(long, value_name = "N")]
    keep: Option<u64>,
    /// Remove the oldest traces until the store's pages in use come to SIZE (200MB, 2GB, 1GiB)
    #[arg(long, value_name = "SIZE", value_parser = crate::config::parse_size)]
    max_size: Option<u64>,
    /// Say what would be removed, and about how much space it frees; remove nothing
    #[arg(long)]
    dry_run: bool,
    /// Rewrite an older store so it shrinks and gives space back after every prune from now on
    #[arg(long, conflicts_with = "dry_run")]
    compact: bool,
}

/// Runs `acp-tee prune`.
pub fn prune_command(a: PruneArgs) -> anyhow::Result<i32> {
    let (policy, sources) = policy(&a);
    if policy.is_empty() && !a.compact {
        anyhow::bail!(
            "nothing to prune by: give --older-than, --keep or --max-size, or set [retention] in the config file (`acp-tee config` shows where it is)"
        );
    }
    let path = a.store.path()?;
    super::maintain_before_reading(&path)?;
    let mut editor = Editor::open(&path)?;
    let mut out = std::io::stdout().lock();
    if !policy.is_empty() {
        writeln!(out, "{} by {}", if a.dry_run { "pruning (dry run)" } else { "pruning" }, sources.join(", "))?;
        let before = crate::store::on_disk(&path).file;
        let pages = editor.pages()?;
        let report = editor.prune(&policy, chrono::Utc::now(), a.dry_run)?;
        say_removed(&mut out, &report, a.dry_run)?;
        let frame_bytes: i64 = report.removed.iter().map(|r| r.bytes).sum();
        if a.dry_run {
            let all: i64 = editor.list_traces()?.iter().map(|t| t.bytes).sum();
            let share = if all > 0 { frame_bytes as f64 / all as f64 } else { 0.0 };
            writeln!(
                out,
                "would free about {} of the store's {} in use",
                format_bytes((pages.used_bytes() as f64 * share) as u64),
                format_bytes(pages.used_bytes())
            )?;
        } else {
            editor.reclaim()?;
            let after = crate::store::on_disk(&path).file;
            let note = if editor.pages()?.incremental {
                String::new()
            } else {
                "; this store keeps freed space for its next frames (`acp-tee prune --compact` gives it back)"
                    .to_owned()
            };
            writeln!(out, "store file: {} -> {}{note}", format_bytes(before), format_bytes(after))?;
        }
    }
    if a.compact {
        compact(&editor, &path, &mut out)?;
    }
    Ok(0)
}

/// The policy: each rule from its flag, else from the environment or the
/// config file; and where each came from, for the first line.
fn policy(a: &PruneArgs) -> (Policy, Vec<String>) {
    let config = crate::config::current();
    let mut sources = Vec::new();
    let older_than = config.older_than.or_flag(a.older_than.map(Some));
    let keep = config.keep.or_flag(a.keep.map(Some));
    let max_size = config.max_size.or_flag(a.max_size.map(Some));
    if let Some(d) = older_than.value {
        sources.push(format!("ended more than {} ago ({})", age_text(d), older_than.source));
    }
    if let Some(n) = keep.value {
        sources.push(format!("keep the {n} latest ({})", keep.source));
    }
    if let Some(size) = max_size.value {
        sources.push(format!("at most {} ({size} bytes) in use ({})", format_bytes(size), max_size.source));
    }
    (Policy { older_than: older_than.value, keep: keep.value, max_size: max_size.value }, sources)
}

/// Writes what was (or would be) removed, and what a rule named but was kept.
fn say_removed(out: &mut impl Write, report: &PruneReport, dry_run: bool) -> std::io::Result<()> {
    let verb = if dry_run { "would remove" } else { "removed" };
    for r in &report.removed {
        let name = r.name.as_deref().map(|n| format!(" \"{}\"", printable(n))).unwrap_or_default();
        let started = printable(r.started_at.get(..19).unwrap_or(&r.started_at)).replace('T', " ");
        writeln!(
            out,
            "{verb} trace {}{name}, started {started}, {} frames, {} ({})",
            r.id,
            r.frames,
            format_bytes(r.bytes as u64),
            r.rule
        )?;
    }
    let frames: i64 = report.removed.iter().map(|r| r.frames).sum();
    let bytes: i64 = report.removed.iter().map(|r| r.bytes).sum();
    writeln!(
        out,
        "{verb} {} ({frames} frames, {} of frames); kept {} pinned and {} not ended that a rule named",
        traces(report.removed.len()),
        format_bytes(bytes as u64),
        report.kept_pinned,
        report.kept_unended
    )
}

/// `n traces`, or `1 trace`.
fn traces(n: usize) -> String {
    if n == 1 {
        "1 trace".to_owned()
    } else {
        format!("{n} traces")
    }
}

/// `--compact`: refused while a trace is recorded; a progress bar follows
/// the rewrite by what it has written to the store's log.
fn compact(editor: &Editor, path: &std::path::Path, out: &mut impl Write) -> anyhow::Result<()> {
    if let Some(live) = editor.trace_summaries()?.iter().find(|t| t.live) {
        anyhow::bail!(
            "trace {} is being recorded; compacting holds every recording to this store up while it runs: run it when nothing records",
            live.meta.id
        );
    }
    let before = crate::store::on_disk(path).file;
    let total = editor.pages()?.used_bytes();
    let bar = super::progress::bar(total, "bytes");
    let done = std::sync::atomic::AtomicBool::new(false);
    let result = std::thread::scope(|scope| {
        scope.spawn(|| {
            while !done.load(std::sync::atomic::Ordering::Relaxed) {
                bar.set_position(crate::store::on_disk(path).wal.min(total));
                std::thread::sleep(Duration::from_millis(100));
            }
        });
        let result = editor.compact();
        done.store(true, std::sync::atomic::Ordering::Relaxed);
        result
    });
    bar.finish_and_clear();
    result?;
    writeln!(
        out,
        "compacted: store file {} -> {}; it now gives space back after every prune",
        format_bytes(before),
        format_bytes(crate::store::on_disk(path).file)
    )?;
    Ok(())
}

/// `d` in the largest whole unit of `parse_age` (2w, 30d, 12h, 90m, 45s).
fn age_text(d: Duration) -> String {
    let secs = d.as_secs();
    for (unit, size) in [("w", 7 * 86_400), ("d", 86_400), ("h", 3_600), ("m", 60)] {
        if secs >= size && secs.is_multiple_of(size) {
            return format!("{}{unit}", secs / size);
        }
    }
    format!("{secs}s")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ages_read_back_as_written() {
        for text in ["2w", "30d", "12h", "90m", "45s"] {
            assert_eq!(age_text(crate::config::parse_age(text).unwrap()), text);
        }
        assert_eq!(age_text(Duration::from_secs(86_400 + 1)), "86401s");
    }
}
