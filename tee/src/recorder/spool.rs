//! The recorder's intake: the bytes read from the handoff pipe wait here until
//! the framer takes them. Up to a memory budget they wait in memory; beyond it
//! in an unnamed file beside the store (page cache, not the recorder's RSS),
//! up to a much larger limit. So a burst of traffic passes the relay at the
//! speed of the pipes while framing and SQLite catch up afterwards, and only a
//! backlog past the file's limit (or a file that cannot be written) makes the
//! pipe fill and the relay wait: backpressure, never loss.
//!
//! Architecture Invariant: bytes leave the spool in the order they entered.
//! Everything in memory entered before anything in the file: while the file
//! holds bytes, new bytes go to the file too, and memory is read first.

use std::collections::VecDeque;
use std::fs::File;
use std::io::{self, Read};
use std::os::unix::fs::FileExt;
use std::path::PathBuf;
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

/// A backlog from which recording counts as overrun by a burst: framing and
/// storing wait (see [`Spool::wait_out_burst`]) until the burst is over...
pub const BURST_BACKLOG: usize = 1 << 20;

/// ...which it is once no bytes came for this long...
pub const BURST_QUIET: Duration = Duration::from_millis(2);

/// ...or once the backlog passes this share of the spool's limits: then
/// recording goes on whatever comes, so that the spool does not fill.
const BURST_MAX_SHARE: u64 = 2;

/// How much the framer reads from the file at once.
const FILE_READ: u64 = 1 << 20;

/// Bytes waiting between the pipe and the framer.
pub struct Spool {
    state: Mutex<State>,
    readable: Condvar,
    writable: Condvar,
    /// Waited on by [`Spool::wait_out_burst`], notified only by `close`.
    burst: Condvar,
    memory_limit: usize,
    file_limit: u64,
    /// Where the overflow file is made (the store's directory).
    dir: PathBuf,
}

struct State {
    memory: VecDeque<Vec<u8>>,
    memory_bytes: usize,
    /// Made at the first overflow; unnamed, so nothing is left behind.
    file: Option<File>,
    /// Writing to the file failed once: from then on only memory is used.
    file_failed: bool,
    /// The file holds bytes `read..written`; both are 0 when it is empty.
    read: u64,
    written: u64,
    /// The most the file ever held, for the log.
    file_peak: u64,
    /// When bytes last came.
    last_push: Instant,
    closed: bool,
}

impl Spool {
    /// An empty spool keeping up to `memory_limit` bytes in memory and
    /// `file_limit` more in a file made in `dir` when needed.
    pub fn new(dir: PathBuf, memory_limit: usize, file_limit: u64) -> Arc<Spool> {
        Arc::new(Spool {
            state: Mutex::new(State {
                memory: VecDeque::new(),
                memory_bytes: 0,
                file: None,
                file_failed: false,
                read: 0,
                written: 0,
                file_peak: 0,
                last_push: Instant::now(),
                closed: false,
            }),
            readable: Condvar::new(),
            writable: Condvar::new(),
            burst: Condvar::new(),
            memory_limit,
            file_limit,
            dir,
        })
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Adds `data` after everything added before; waits only while both
    /// memory and file are full (or the file failed and memory is full).
    pub fn push(&self, data: Vec<u8>) {
        if data.is_empty() {
            return;
        }
        let len = data.len();
        let mut s = self.lock();
        s.last_push = Instant::now();
        loop {
            let file_empty = s.read == s.written;
            if file_empty && (s.memory_bytes == 0 || s.memory_bytes + len <= self.memory_limit) {
                s.memory_bytes += len;
                s.memory.push_back(data);
                break;
            }
            if !s.file_failed && (file_empty || s.written - s.read + len as u64 <= self.file_limit) {
                if self.write_file(&mut s, &data) {
                    break;
                }
                continue;
            }
            s = self.writable.wait(s).unwrap_or_else(|e| e.into_inner());
        }
        drop(s);
        self.readable.notify_one();
    }

    /// Appends `data` to the file (made now if need be); false, with the file
    /// marked as failed, when that is not possible.
    fn write_file(&self, s: &mut State, data: &[u8]) -> bool {
        if s.file.is_none() {
            match tempfile::tempfile_in(&self.dir) {
                Ok(f) => s.file = Some(f),
                Err(e) => {
                    tracing::debug!(
                        "recorder: no spool file in {}: {e}; holding the backlog in memory",
                        self.dir.display()
                    );
                    s.file_failed = true;
                    return false;
                }
            }
        }
        let file = s.file.as_ref().expect("made above");
        // A write that fails half-way leaves `written` where it was, so the
        // part written is never read.
        match file.write_all_at(data, s.written) {
            Ok(()) => {
                s.written += data.len() as u64;
                s.file_peak = s.file_peak.max(s.written - s.read);
                true
            }
            Err(e) => {
                tracing::debug!("recorder: spool file write failed: {e}; holding the backlog in memory");
                s.file_failed = true;
                false
            }
        }
    }

    /// No more bytes will come; the reader gets end-of-file after the rest.
    pub fn close(&self) {
        self.lock().closed = true;
        self.readable.notify_all();
        self.burst.notify_all();
    }

    /// The most bytes the overflow file held at once.
    pub fn file_peak(&self) -> u64 {
        self.lock().file_peak
    }

    /// Returns once recording may go on: at once, unless a burst is being
    /// taken in (bytes keep coming and the backlog is past
    /// [`BURST_BACKLOG`]); then once it is over (no bytes for
    /// [`BURST_QUIET`], or the spool closed) or the backlog is half of what
    /// the spool can hold. So a burst passes the relay with the CPU to
    /// itself, and is stored after it.
    pub fn wait_out_burst(&self) {
        let limit = (self.memory_limit as u64 + self.file_limit) / BURST_MAX_SHARE;
        let mut s = self.lock();
        loop {
            let backlog = s.memory_bytes as u64 + (s.written - s.read);
            let quiet_for = s.last_push.elapsed();
            if s.closed || backlog < BURST_BACKLOG as u64 || backlog > limit || quiet_for >= BURST_QUIET {
                return;
            }
            s = self.burst.wait_timeout(s, BURST_QUIET - quiet_for).unwrap_or_else(|e| e.into_inner()).0;
        }
    }

    /// The next bytes in order, waiting for some; empty at the end.
    fn take(&self) -> io::Result<Vec<u8>> {
        let mut s = self.lock();
        loop {
            if let Some(data) = s.memory.pop_front() {
                s.memory_bytes -= data.len();
                drop(s);
                self.writable.notify_one();
                return Ok(data);
            }
            if s.read < s.written {
                let data = Self::read_file(&mut s)?;
                drop(s);
                self.writable.notify_one();
                return Ok(data);
            }
            if s.closed {
                return Ok(Vec::new());
            }
            s = self.readable.wait(s).unwrap_or_else(|e| e.into_inner());
        }
    }

    /// The next bytes from the file, which holds some.
    fn read_file(s: &mut State) -> io::Result<Vec<u8>> {
        let n = (s.written - s.read).min(FILE_READ);
        let mut data = vec![0u8; n as usize];
        let file = s.file.as_ref().expect("the file holds bytes");
        file.read_exact_at(&mut data, s.read)?;
        s.read += n;
        if s.read == s.written {
            // Drained: start over at the front, giving the space back.
            s.read = 0;
            s.written = 0;
            let _ = file.set_len(0);
        }
        Ok(data)
    }

    /// A reader of the bytes in order, ending when the spool is closed and empty.
    pub fn reader(self: &Arc<Self>) -> SpoolReader {
        SpoolReader { spool: self.clone(), current: Vec::new(), at: 0 }
    }
}

/// Reads a [`Spool`]'s bytes in the order they were pushed.
pub struct SpoolReader {
    spool: Arc<Spool>,
    current: Vec<u8>,
    at: usize,
}

impl Read for SpoolReader {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if self.at == self.current.len() {
            self.current = self.spool.take()?;
            self.at = 0;
        }
        let n = buf.len().min(self.current.len() - self.at);
        buf[..n].copy_from_slice(&self.current[self.at..self.at + n]);
        self.at += n;
        Ok(n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read_all(spool: &Arc<Spool>) -> Vec<u8> {
        let mut out = Vec::new();
        spool.reader().read_to_end(&mut out).unwrap();
        out
    }

    #[test]
    fn overflow_goes_to_the_file_and_order_is_kept() {
        let dir = tempfile::tempdir().unwrap();
        let spool = Spool::new(dir.path().to_owned(), 10, 1 << 20);
        let mut expect = Vec::new();
        for i in 0..100u8 {
            let data = vec![i; 1 + i as usize % 7];
            spool.push(data.clone());
            expect.extend(data);
        }
        spool.close();
        assert!(spool.file_peak() > 100, "most bytes went to the file: {}", spool.file_peak());
        assert_eq!(read_all(&spool), expect);
        // Nothing named was left in the directory.
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
    }

    #[test]
    fn concurrent_pushes_and_reads_keep_every_byte_in_order() {
        let dir = tempfile::tempdir().unwrap();
        // Small limits, so that pushes alternate between memory, file and waiting.
        let spool = Spool::new(dir.path().to_owned(), 64, 512);
        let producer = {
            let spool = spool.clone();
            std::thread::spawn(move || {
                for i in 0..20_000u32 {
                    spool.push(i.to_le_bytes().repeat(1 + (i % 5) as usize));
                }
                spool.close();
            })
        };
        let mut got = Vec::new();
        let mut reader = spool.reader();
        let mut buf = [0u8; 13];
        loop {
            let n = reader.read(&mut buf).unwrap();
            if n == 0 {
                break;
            }
            got.extend_from_slice(&buf[..n]);
        }
        producer.join().unwrap();
        let expect: Vec<u8> = (0..20_000u32).flat_map(|i| i.to_le_bytes().repeat(1 + (i % 5) as usize)).collect();
        assert_eq!(got, expect);
        assert!(spool.file_peak() > 0 && spool.file_peak() <= 512 + 20, "file peak {}", spool.file_peak());
    }

    #[test]
    fn without_a_file_the_producer_waits_for_memory_and_nothing_is_lost() {
        let spool = Spool::new(PathBuf::from("/nonexistent/acp-tee-spool"), 100, 1 << 20);
        let producer = {
            let spool = spool.clone();
            std::thread::spawn(move || {
                for i in 0..1000u32 {
                    spool.push(i.to_le_bytes().repeat(10));
                }
                spool.close();
            })
        };
        let got = read_all(&spool);
        producer.join().unwrap();
        let expect: Vec<u8> = (0..1000u32).flat_map(|i| i.to_le_bytes().repeat(10)).collect();
        assert_eq!(got, expect);
        assert_eq!(spool.file_peak(), 0);
    }
}
