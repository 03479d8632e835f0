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
