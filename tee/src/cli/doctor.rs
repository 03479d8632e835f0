//! `acp-tee doctor`: the store's health, whether the viewer is built in,
//! and which peers the README's examples use are on PATH; each line that
//! is not well says the fix.

use super::args::StoreArg;
use crate::store::Store;
use clap::Args;
use std::fmt::Write as _;
use std::io::Write as _;
use std::path::Path;

pub(super) const DOCTOR_ABOUT: &str = "\
Check what acp-tee needs and say the fix for what is wrong: the trace store
(it exists, its schema version, SQLite's quick integrity check, its size and
its write-ahead log's, the disk space left beside it), whether the viewer is
built into this binary, and which peers of the README's examples are on
PATH. Reads only. Exit status 1 when the store is unsound or newer than this
build, else 0.";

/// `acp-tee doctor`.
#[derive(Debug, Args)]
pub(super) struct DoctorArgs {
    #[command(flatten)]
    store: StoreArg,
}

/// The peers the README's examples run, and how to get each.
const PEERS: [(&str, &str); 3] = [
    ("yopo", "cargo install yopo"),
    ("elizacp", "cargo install elizacp"),
    ("agent-client-protocol-conductor", "cargo install agent-client-protocol-conductor"),
];

pub(super) fn doctor_command(a: DoctorArgs) -> anyhow::Result<i32> {
    let path = a.store.path()?;
    let mut out = String::new();
    let mut failed = false;
    match Store::open_existing(&path) {
        Err(crate::store::StoreError::Missing { .. }) => {
            writeln!(out, "store: {} does not exist yet: the first recording makes it", path.display())?;
        }
        Err(e) => {
            failed = true;
            writeln!(out, "store: {e}: fix: point --db at a trace store, or move this file aside to start a new one")?;
        }
        Ok(store) => match store.health() {
            Err(e) => {
                failed = true;
                writeln!(
                    out,
                    "store: {}: {e}: fix: export what reads (`acp-tee export --trace all`) and start a new store",
                    path.display()
                )?;
            }
            Ok(h) => {
                let sizes =
                    format!("{} traces, {} file, {} write-ahead log", h.traces, mib(h.file_bytes), mib(h.wal_bytes));
                if h.schema_version > h.known_version {
                    failed = true;
                    writeln!(
                        out,
                        "store: {}: schema {} is newer than this build's {}: fix: update acp-tee",
                        path.display(),
                        h.schema_version,
                        h.known_version
                    )?;
                } else if h.schema_version < h.known_version {
                    writeln!(
                    out,
                    "store: {}: schema {} (this build writes {}; the next recording or `acp-tee list` updates it), {sizes}",
                    path.display(),
                    h.schema_version,
                    h.known_version
                )?;
                } else {
                    writeln!(out, "store: {}: schema {}, {sizes}", path.display(), h.schema_version)?;
                }
                let free = mib(h.pages.free * h.pages.page_size);
                if h.pages.incremental {
                    writeln!(out, "space: {free} free in the file; removed traces give their space back")?;
                } else {
                    writeln!(
                        out,
                        "space: {free} free in the file, kept for new frames (a store made before acp-tee gave space back): fix: `acp-tee prune --compact` once"
                    )?;
                }
                if h.problems.is_empty() {
                    writeln!(out, "integrity: ok (SQLite quick_check)")?;
                } else {
                    failed = true;
                    let problems =
                        h.problems.iter().map(|p| crate::text::printable(p).into_owned()).collect::<Vec<_>>();
                    writeln!(
                        out,
                        "integrity: {}: fix: export what reads (`acp-tee export --trace all`) and start a new store",
                        problems.join("; ")
                    )?;
                }
            }
        },
    }
    let dir = path.parent().filter(|d| !d.as_os_str().is_empty()).unwrap_or(Path::new("."));
    match free_bytes(dir) {
        Some(free) => writeln!(out, "disk: {} free in {}", mib(free), dir.display())?,
        None => writeln!(out, "disk: unknown for {} (it does not exist yet)", dir.display())?,
    }
    if crate::server::viewer_embedded() {
        writeln!(out, "viewer: built in")?;
    } else {
        writeln!(
            out,
            "viewer: not built in (`serve` answers the API only): fix: scripts/build-viewer, then rebuild acp-tee"
        )?;
    }
    for (peer, fix) in PEERS {
        match on_path(peer) {
            Some(at) => writeln!(out, "peer {peer}: {}", at.display())?,
            None => writeln!(out, "peer {peer}: not on PATH (only the README's examples need it): fix: {fix}")?,
        }
    }
    std::io::stdout().lock().write_all(out.as_bytes())?;
    Ok(i32::from(failed))
}

fn mib(bytes: u64) -> String {
    format!("{:.1} MiB", bytes as f64 / (1 << 20) as f64)
}

/// Bytes free for an unprivileged user on the filesystem of `dir`.
fn free_bytes(dir: &Path) -> Option<u64> {
    use std::os::unix::ffi::OsStrExt;
    let c = std::ffi::CString::new(dir.as_os_str().as_bytes()).ok()?;
    let mut s = std::mem::MaybeUninit::<libc::statvfs>::uninit();
    // SAFETY: `c` is a NUL-terminated path and `s` is written by statvfs
    // before it is read, on success only.
    if unsafe { libc::statvfs(c.as_ptr(), s.as_mut_ptr()) } != 0 {
        return None;
    }
    let s = unsafe { s.assume_init() };
    Some(s.f_bavail.saturating_mul(s.f_frsize))
}

/// The file `name` resolves to on PATH, if any (an executable file).
fn on_path(name: &str) -> Option<std::path::PathBuf> {
    use std::os::unix::fs::PermissionsExt;
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|d| d.join(name))
        .find(|p| p.metadata().is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0))
}
