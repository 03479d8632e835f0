//! The intake: the recorder's first thread, which empties the relay's pipes
//! into the [`Spool`] so that the relay never waits on the recorder.
//!
//! It reads the handoff pipe's messages; a chunk reference's bytes wait in
//! the data pipe of its direction. Small references are gathered while more
//! messages are at hand, and their bytes fetched with one read per data pipe
//! and handed to the spool as one piece, so an interactive stream's window
//! of messages (see [`Pacer`]) costs a few system calls and one wake-up of
//! the framer, not a few per message: work the intake does while a round
//! trip is being relayed on the other core is work that round trip may wait
//! for. A large reference goes on its own ([`Spool::push_from_pipe`]: spliced
//! into the spool's file when it goes there).

use super::pace::Pacer;
use super::spool::{append_from, Spool};
use crate::handoff::{decode_header, read_full, HEADER_LEN, TAG_CHUNK, TAG_CHUNK_REF, TAG_END};
use std::fs::File;
use std::io::{self, BufReader, Read};

/// Chunk references below this many bytes are gathered; larger ones go to
/// the spool on their own.
const GATHER_BELOW: usize = 64 * 1024;

/// Bytes of gathered references at most before they go to the spool.
const GATHER_BYTES: usize = 1 << 20;

/// How much of the handoff pipe is read at once.
const HANDOFF_READ: usize = 256 * 1024;

/// Moves handoff messages from `input` into `spool` until end-of-file, each
/// whole, with the bytes of chunk references fetched from their data pipe,
/// so that the spool holds plain handoff messages. True when the run's end
/// message came (the relay ended the run rather than vanished).
pub(super) fn intake(input: impl Read, data: &[Option<File>; 3], spool: &Spool) -> io::Result<bool> {
    let mut input = BufReader::with_capacity(HANDOFF_READ, input);
    let mut ended = false;
    let mut pacer = Pacer::default();
    let mut gathered = Gathered::default();
    loop {
        if input.buffer().is_empty() {
            gathered.flush(data, spool)?;
            pacer.before_reading();
        }
        let mut header = [0u8; HEADER_LEN];
        match read_full(&mut input, &mut header)? {
            0 => {
                gathered.flush(data, spool)?;
                return Ok(ended);
            }
            HEADER_LEN => {}
            got => {
                gathered.flush(data, spool)?;
                return Err(cut_short(format!("a header ({got} of {HEADER_LEN} bytes)")));
            }
        }
        let (tag, dir, _, len) = decode_header(&header);
        ended |= tag == TAG_END;
        pacer.took(HEADER_LEN + len);
        if tag == TAG_CHUNK_REF {
            header[0] = TAG_CHUNK;
            let Some(pipe) = data.get(dir as usize).and_then(Option::as_ref) else {
                gathered.flush(data, spool)?;
                return Err(cut_short(format!("a chunk reference to data pipe {dir}, which is not there")));
            };
            if len < GATHER_BELOW {
                gathered.add(header, dir as usize, len);
                if gathered.bytes >= GATHER_BYTES {
                    gathered.flush(data, spool)?;
                }
                continue;
            }
            gathered.flush(data, spool)?;
            let got = spool.push_from_pipe(&header, pipe, len)?;
            if got < len {
                return Err(cut_short(format!("a chunk in its data pipe ({got} of {len} bytes)")));
            }
        } else {
            gathered.flush(data, spool)?;
            let mut message = Vec::with_capacity(HEADER_LEN + len);
            message.extend_from_slice(&header);
            message.resize(HEADER_LEN + len, 0);
            let got = read_full(&mut input, &mut message[HEADER_LEN..])?;
            if got < len {
                return Err(cut_short(format!("a message ({got} of {len} bytes)")));
            }
            spool.push(message);
        }
    }
}

/// Chunk references taken from the handoff pipe, in order, whose bytes are
/// still in their data pipes.
#[derive(Default)]
struct Gathered {
    /// Each reference's header (its tag already [`TAG_CHUNK`]), data pipe
    /// and length.
    refs: Vec<([u8; HEADER_LEN], usize, usize)>,
    /// Bytes waiting in each data pipe for them.
    per_pipe: [usize; 3],
    /// All of those.
    bytes: usize,
}

impl Gathered {
    fn add(&mut self, header: [u8; HEADER_LEN], pipe: usize, len: usize) {
        self.refs.push((header, pipe, len));
        self.per_pipe[pipe] += len;
        self.bytes += len;
    }

    /// Fetches the gathered references' bytes, one read per data pipe, and
    /// pushes them as whole messages, in order, in one piece. When a pipe
    /// ended short, the messages before the first incomplete one are pushed
    /// and the error says so.
    fn flush(&mut self, data: &[Option<File>; 3], spool: &Spool) -> io::Result<()> {
        if self.refs.is_empty() {
            return Ok(());
        }
        let mut fetched: [Vec<u8>; 3] = Default::default();
        for (pipe, want) in self.per_pipe.iter().enumerate() {
            if *want > 0 {
                let file = data[pipe].as_ref().expect("checked when the reference was gathered");
                append_from(file, &mut fetched[pipe], *want)?;
            }
        }
        let mut messages = Vec::with_capacity(self.bytes + self.refs.len() * HEADER_LEN);
        let mut at = [0usize; 3];
        let mut short = None;
        for (header, pipe, len) in self.refs.drain(..) {
            let Some(bytes) = fetched[pipe].get(at[pipe]..at[pipe] + len) else {
                short = Some((len, fetched[pipe].len() - at[pipe]));
                break;
            };
            messages.extend_from_slice(&header);
            messages.extend_from_slice(bytes);
            at[pipe] += len;
        }
        self.refs.clear();
        self.per_pipe = [0; 3];
        self.bytes = 0;
        spool.push(messages);
        match short {
            Some((len, got)) => Err(cut_short(format!("a chunk in its data pipe ({got} of {len} bytes)"))),
            None => Ok(()),
        }
    }
}

fn cut_short(what: String) -> io::Error {
    io::Error::new(io::ErrorKind::UnexpectedEof, format!("the handoff ended inside {what}"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;
    use std::os::fd::FromRawFd;

    fn header(tag: u8, dir: u8, len: usize) -> [u8; HEADER_LEN] {
        let mut h = [0u8; HEADER_LEN];
        h[0] = tag;
        h[1] = dir;
        h[2..10].copy_from_slice(&7u64.to_le_bytes());
        h[10..14].copy_from_slice(&(len as u32).to_le_bytes());
        h
    }

    fn pipe() -> (File, File) {
        let mut fds = [0; 2];
        // SAFETY: pipe(2) fills both descriptors, each owned by one File.
        assert_eq!(unsafe { libc::pipe(fds.as_mut_ptr()) }, 0);
        unsafe { (File::from_raw_fd(fds[0]), File::from_raw_fd(fds[1])) }
    }

    /// A relay's handoff: `parts` in order, each a reference to `len` bytes
    /// of pipe `dir` (written there first) or, for `dir` 9, an inline chunk;
    /// returns what the intake put in the spool, its result, and what a
    /// recorder that copies everything would have.
    fn run(parts: &[(u8, Vec<u8>)], short: Option<(usize, usize)>) -> (Vec<u8>, io::Result<bool>, Vec<u8>) {
        let (mut data, mut writers): (Vec<Option<File>>, Vec<File>) = (Vec::new(), Vec::new());
        for _ in 0..3 {
            let (r, w) = pipe();
            data.push(Some(r));
            writers.push(w);
        }
        let (mut handoff, mut expect) = (Vec::new(), Vec::new());
        for (i, (dir, bytes)) in parts.iter().enumerate() {
            let before_short = short.is_none_or(|(at, _)| i < at);
            if *dir == 9 {
                handoff.extend_from_slice(&header(TAG_CHUNK, 0, bytes.len()));
                handoff.extend_from_slice(bytes);
                if before_short {
                    expect.extend_from_slice(&header(TAG_CHUNK, 0, bytes.len()));
                    expect.extend_from_slice(bytes);
                }
                continue;
            }
            // A reference that claims more than its pipe will hold.
            let claimed = match short {
                Some((at, more)) if at == i => bytes.len() + more,
                _ => bytes.len(),
            };
            handoff.extend_from_slice(&header(TAG_CHUNK_REF, *dir, claimed));
            if before_short {
                expect.extend_from_slice(&header(TAG_CHUNK, *dir, claimed));
                expect.extend_from_slice(bytes);
            }
        }
        let feeders: Vec<_> = writers
            .into_iter()
            .enumerate()
            .map(|(pipe, mut w)| {
                let bytes: Vec<u8> =
                    parts.iter().filter(|(d, _)| *d as usize == pipe).flat_map(|(_, b)| b.clone()).collect();
                // After a short pipe the intake stops reading: the rest fails.
                std::thread::spawn(move || drop(w.write_all(&bytes)))
            })
            .collect();
        let dir = tempfile::tempdir().unwrap();
        // Memory for a few small pieces, so that large chunks go to the file.
        let spool = Spool::new(dir.path().to_owned(), 4096, 1 << 30);
        let reader = {
            let spool = spool.clone();
            std::thread::spawn(move || {
                let mut out = Vec::new();
                spool.reader().read_to_end(&mut out).unwrap();
                out
            })
        };
        let data: [Option<File>; 3] = data.try_into().unwrap();
        let result = intake(io::Cursor::new(handoff), &data, &spool);
        spool.close();
        drop(data);
        for f in feeders {
            f.join().unwrap();
        }
        (reader.join().unwrap(), result, expect)
    }

    fn parts() -> Vec<(u8, Vec<u8>)> {
        (0..200u32)
            .map(|i| {
                let len = match i % 7 {
                    0 => GATHER_BELOW + 3 * i as usize,
                    1 => 1,
                    _ => 10 + (i as usize * 131) % 5000,
                };
                let dir = if i % 11 == 0 { 9 } else { (i % 3) as u8 };
                (dir, vec![i as u8; len])
            })
            .collect()
    }

    #[test]
    fn gathered_spliced_and_inline_chunks_reach_the_spool_in_handoff_order() {
        let (got, result, expect) = run(&parts(), None);
        assert!(matches!(result, Ok(false)), "{result:?}");
        assert!(got == expect, "{} bytes spooled, {} expected", got.len(), expect.len());
    }

    #[test]
    fn a_data_pipe_that_ends_short_keeps_every_whole_message_before_it() {
        let parts = parts();
        // The last reference to each data pipe claims 17 bytes more than the
        // pipe will ever hold.
        for pipe in 0..3u8 {
            let at = parts.iter().rposition(|(d, _)| *d == pipe).unwrap();
            let (got, result, expect) = run(&parts, Some((at, 17)));
            let e = result.expect_err("the pipe ended inside a chunk");
            assert!(e.to_string().contains("data pipe"), "{e}");
            // Messages after the short one may or may not have been taken;
            // every one before it was.
            let same = got.iter().zip(&expect).take_while(|(a, b)| a == b).count();
            assert!(
                got.starts_with(&expect),
                "reference {at}: {} bytes spooled, {} expected first; they part at {same}",
                got.len(),
                expect.len()
            );
        }
    }
}
