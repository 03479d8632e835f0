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
use std::os::fd::AsRawFd;
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
    /// False once splicing into the file proved impossible (its file
    /// system does not take it): messages are written to it instead.
    splice_works: bool,
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
                splice_works: true,
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

    /// Adds one message: `header`, then the next `len` bytes of `pipe`
    /// (which the pipe holds already, or will at its end). When the message
    /// goes to the file, its bytes move from the pipe straight into the file
    /// (`splice(2)`: not copied through this process, which matters in a
    /// burst, when everything past the memory budget goes there); otherwise
    /// they are read into memory. Returns how many of the `len` bytes the
    /// pipe had: fewer only when it ended first, and then nothing was added.
    pub fn push_from_pipe(&self, header: &[u8], pipe: &File, len: usize) -> io::Result<usize> {
        let total = header.len() + len;
        let mut message = Vec::new();
        {
            let mut s = self.lock();
            let file_empty = s.read == s.written;
            let to_memory = file_empty && (s.memory_bytes == 0 || s.memory_bytes + total <= self.memory_limit);
            let file_has_room = file_empty || s.written - s.read + total as u64 <= self.file_limit;
            if !to_memory && !s.file_failed && s.splice_works && file_has_room {
                match self.splice_to_file(&mut s, header, pipe, len)? {
                    Spliced::All => {
                        s.last_push = Instant::now();
                        drop(s);
                        self.readable.notify_one();
                        return Ok(len);
                    }
                    Spliced::Partly(got) => message = got,
                    Spliced::Nothing => {}
                }
            }
        }
        if message.is_empty() {
            message.reserve_exact(total);
            message.extend_from_slice(header);
        }
        let have = message.len() - header.len();
        let got = have + append_from(pipe, &mut message, len - have)?;
        if got == len {
            self.push(message);
        }
        Ok(got)
    }

    /// Writes `header` at the file's end and splices `len` bytes of `pipe`
    /// after it. `All` when the whole message is in the file; `Nothing`
    /// when nothing was taken from the pipe (the file cannot be made or
    /// written, or does not take splice); `Partly` with the header and the
    /// bytes that were taken, read back, when splicing stopped half-way (the
    /// pipe ended, or the file failed and is marked so); the caller reads
    /// the rest.
    fn splice_to_file(&self, s: &mut State, header: &[u8], pipe: &File, len: usize) -> io::Result<Spliced> {
        if !self.make_file(s) {
            return Ok(Spliced::Nothing);
        }
        let file = s.file.as_ref().expect("made above");
        let start = s.written;
        if let Err(e) = file.write_all_at(header, start) {
            tracing::debug!("recorder: spool file write failed: {e}; holding the backlog in memory");
            s.file_failed = true;
            return Ok(Spliced::Nothing);
        }
        let data_at = start + header.len() as u64;
        let mut moved = 0;
        while moved < len {
            let mut offset = (data_at + moved as u64) as libc::loff_t;
            // SAFETY: splice between two descriptors that stay open for the
            // call; the file's offset is ours, the pipe's is its own.
            let n = unsafe {
                libc::splice(
                    pipe.as_raw_fd(),
                    std::ptr::null_mut(),
                    file.as_raw_fd(),
                    &mut offset,
                    len - moved,
                    libc::SPLICE_F_MOVE,
                )
            };
            match n {
                0 => break,
                n if n > 0 => moved += n as usize,
                _ => {
                    let e = io::Error::last_os_error();
                    if e.kind() == io::ErrorKind::Interrupted {
                        continue;
                    }
                    if moved == 0 && e.raw_os_error() == Some(libc::EINVAL) {
                        // This file system does not take splice: write instead.
                        s.splice_works = false;
                        return Ok(Spliced::Nothing);
                    }
                    tracing::debug!("recorder: spool file write failed: {e}; holding the backlog in memory");
                    s.file_failed = true;
                    break;
                }
            }
        }
        if moved == len {
            s.written = data_at + len as u64;
            s.file_peak = s.file_peak.max(s.written - s.read);
            return Ok(Spliced::All);
        }
        if moved == 0 && s.file_failed {
            return Ok(Spliced::Nothing);
        }
        // The pipe ended, or the file failed, half-way: what was taken is in
        // the file past its end; read it back (page cache) to go on in memory.
        let mut message = header.to_vec();
        message.resize(header.len() + moved, 0);
        file.read_exact_at(&mut message[header.len()..], data_at)?;
        Ok(Spliced::Partly(message))
    }

    /// Makes the file if need be; false, with the file marked as failed,
    /// when it cannot be made.
    fn make_file(&self, s: &mut State) -> bool {
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
        true
    }

    /// Appends `data` to the file (made now if need be); false, with the file
    /// marked as failed, when that is not possible.
    fn write_file(&self, s: &mut State, data: &[u8]) -> bool {
        if !self.make_file(s) {
            return false;
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

/// How [`Spool::splice_to_file`] went.
enum Spliced {
    All,
    Nothing,
    Partly(Vec<u8>),
}

/// Appends up to `want` bytes read from `from` to `buf`, stopping early only
/// at end-of-file; returns how many. Reads straight into `buf`'s spare room,
/// which is never zeroed first (in a burst, zeroing cost as much as a copy).
pub(super) fn append_from(from: &File, buf: &mut Vec<u8>, want: usize) -> io::Result<usize> {
    buf.reserve_exact(want);
    let mut got = 0;
    while got < want {
        let spare = &mut buf.spare_capacity_mut()[..want - got];
        // SAFETY: read(2) writes at most `spare.len()` bytes into memory
        // this Vec owns; `set_len` then covers only bytes it wrote.
        let n = unsafe { libc::read(from.as_raw_fd(), spare.as_mut_ptr().cast(), spare.len()) };
        match n {
            0 => break,
            n if n > 0 => {
                // SAFETY: see above.
                unsafe { buf.set_len(buf.len() + n as usize) };
                got += n as usize;
            }
            _ => {
                let e = io::Error::last_os_error();
                if e.kind() != io::ErrorKind::Interrupted {
                    return Err(e);
                }
            }
        }
    }
    Ok(got)
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

    /// A pipe's two ends.
    fn pipe() -> (File, File) {
        use std::os::fd::FromRawFd;
        let mut fds = [0; 2];
        // SAFETY: pipe(2) fills both descriptors, each owned by one File.
        assert_eq!(unsafe { libc::pipe(fds.as_mut_ptr()) }, 0);
        unsafe { (File::from_raw_fd(fds[0]), File::from_raw_fd(fds[1])) }
    }

    /// Messages of `header` + chunk, taken from a pipe by `push_from_pipe`
    /// while a thread writes the chunks into it; returns what the spool
    /// gave back and what was expected. The spool is read meanwhile, or,
    /// with `read_after`, only once every chunk is in it.
    fn through_a_pipe(spool: &Arc<Spool>, chunks: Vec<Vec<u8>>, read_after: bool) -> (Vec<u8>, Vec<u8>) {
        let (read_end, write_end) = pipe();
        let lens: Vec<usize> = chunks.iter().map(Vec::len).collect();
        let expect: Vec<u8> = chunks.iter().flat_map(|c| [b"H:".as_slice(), c].concat()).collect();
        let writer = std::thread::spawn(move || {
            let mut w = write_end;
            for c in chunks {
                std::io::Write::write_all(&mut w, &c).unwrap();
            }
        });
        let read = |spool: &Arc<Spool>| {
            let spool = spool.clone();
            std::thread::spawn(move || read_all(&spool))
        };
        let reader = (!read_after).then(|| read(spool));
        for len in lens {
            assert_eq!(spool.push_from_pipe(b"H:", &read_end, len).unwrap(), len);
        }
        let reader = reader.unwrap_or_else(|| read(spool));
        writer.join().unwrap();
        spool.close();
        (reader.join().unwrap(), expect)
    }

    fn chunks(count: usize) -> Vec<Vec<u8>> {
        (0..count).map(|i| vec![(i % 251) as u8; 1 + (i * 7919) % 70_000]).collect()
    }

    #[test]
    fn chunks_spliced_from_a_pipe_into_the_file_come_back_whole_and_in_order() {
        let dir = tempfile::tempdir().unwrap();
        // Memory for one small message: nearly everything goes to the file,
        // all of it held there at once (nothing is read before the end).
        let spool = Spool::new(dir.path().to_owned(), 100, 1 << 30);
        let (got, expect) = through_a_pipe(&spool, chunks(300), true);
        assert!(spool.file_peak() > 1 << 20, "the chunks went to the file: {}", spool.file_peak());
        assert!(got == expect, "{} bytes back, {} expected", got.len(), expect.len());
    }

    #[test]
    fn chunks_from_a_pipe_without_a_file_are_read_into_memory() {
        let spool = Spool::new(PathBuf::from("/nonexistent/acp-tee-spool"), 200_000, 1 << 30);
        let (got, expect) = through_a_pipe(&spool, chunks(100), false);
        assert_eq!(spool.file_peak(), 0);
        assert!(got == expect, "{} bytes back, {} expected", got.len(), expect.len());
    }

    #[test]
    fn a_pipe_that_ends_inside_a_chunk_adds_nothing_of_it() {
        for memory in [1 << 20, 1] {
            let dir = tempfile::tempdir().unwrap();
            let spool = Spool::new(dir.path().to_owned(), memory, 1 << 30);
            let (read_end, mut write_end) = pipe();
            std::io::Write::write_all(&mut write_end, b"whole|cut").unwrap();
            drop(write_end);
            assert_eq!(spool.push_from_pipe(b"H:", &read_end, 6).unwrap(), 6);
            assert_eq!(spool.push_from_pipe(b"H:", &read_end, 10).unwrap(), 3, "the pipe held 3 of 10");
            spool.close();
            assert_eq!(read_all(&spool), b"H:whole|", "memory limit {memory}");
        }
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
