//! Room kept on the store's filesystem for the run's end.
//!
//! When the filesystem fills up during a run, frames stop being stored and
//! are counted as missing; the trace's end (when, how, how many frames are
//! missing) must still be written, or the trace would later be taken for one
//! whose recorder was killed. SQLite needs room to append that last
//! transaction to its log, and a full filesystem shared with other programs
//! has none. So the store writer holds [`RESERVE_BYTES`] of allocated space
//! in an unnamed file beside the store from the start, and gives it back
//! just before it writes the end, should that find the filesystem full.
//! The file has no name, so a recorder killed with SIGKILL leaves nothing
//! behind: the kernel frees it with the process.

use std::fs::File;
use std::os::fd::AsRawFd;
use std::path::Path;

/// Bytes held for the run's end: the end's update of the trace row and the
/// log's header take a few 4 KiB pages; the rest is margin for the pages a
/// transaction of SQLite touches besides (the free list, an index page).
pub const RESERVE_BYTES: i64 = 1 << 20;

/// Allocated space on the store's filesystem, given back on [`Reserve::release`].
pub struct Reserve {
    file: Option<File>,
}

impl Reserve {
    /// Allocates [`RESERVE_BYTES`] in an unnamed file in `dir`. Where that
    /// cannot be done (the filesystem is full already, or does not allocate
    /// ahead), nothing is held and the end is written as well as it can be.
    pub fn hold(dir: &Path) -> Reserve {
        let file = tempfile::tempfile_in(dir).ok().filter(|file| {
            // SAFETY: posix_fallocate on a descriptor the File owns.
            let rc = unsafe { libc::posix_fallocate(file.as_raw_fd(), 0, RESERVE_BYTES) };
            if rc != 0 {
                tracing::debug!("no room reserved for the run's end: {}", std::io::Error::from_raw_os_error(rc));
            }
            rc == 0
        });
        Reserve { file }
    }

    /// Gives the space back to the filesystem; true when there was some.
    pub fn release(&mut self) -> bool {
        self.file.take().is_some()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_reserve_is_allocated_space_and_released_once() {
        let dir = tempfile::tempdir().unwrap();
        let mut reserve = Reserve::hold(dir.path());
        let file = reserve.file.as_ref().expect("a reserve on a temporary directory");
        let meta = file.metadata().unwrap();
        assert_eq!(meta.len(), RESERVE_BYTES as u64);
        // Allocated, not a sparse file: its blocks count.
        assert!(std::os::unix::fs::MetadataExt::blocks(&meta) * 512 >= RESERVE_BYTES as u64);
        assert!(reserve.release());
        assert!(!reserve.release());
    }
}
