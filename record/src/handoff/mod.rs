//! The one-way channel from the relay to the recorder process.
//!
//! The relay hands every chunk it reads to the recorder *before* forwarding it.
//! The recorder is a separate process (`acp-tee __recorder`) reading a pipe, so
//! a chunk handed off survives the relay being killed with SIGKILL the instant
//! after it forwarded the chunk: the kernel keeps the pipe's contents, the
//! recorder reads them, sees end-of-file and finishes the trace.
//!
//! On the pipe, every message is a fixed 14-byte header followed by a payload:
//! `tag: u8, dir: u8, t_ns: u64 LE, len: u32 LE`, then `len` bytes.
//!
//! Where the relay reads a pipe, it does not copy a chunk at all: `tee(2)`
//! duplicates the chunk's pages into a *data pipe* of that direction, a
//! chunk-reference message (tag `R`, no payload, `len` = the chunk's size)
//! goes down the control pipe, and `splice(2)` moves the chunk on to the
//! peer. The recorder reads `len` bytes from that direction's data pipe when
//! it meets the reference; the bytes are always there before the reference,
//! and the reference before the forwarding.
//!
//! Should the recorder die mid-run, the writer starts a replacement (given
//! the means by the relay) and sends it the run's start again followed by a
//! [`Resume`] message; the replacement takes chunks by copy only.
//!
//! Architecture Invariant: nothing here knows about SQL; the relay's only cost
//! per chunk is one extra `write` into a pipe (plus a `tee` for a chunk by
//! reference), which blocks only when the recorder's intake is a whole pipe
//! behind.

mod reader;
mod writer;

pub use reader::{read_full, HandoffReader};
pub use writer::{Handed, HandoffWriter, Replacement};

use crate::model::{TraceEnd, TraceStart};
use acp_tee_shared::Direction;
use serde::{Deserialize, Serialize};

/// Size of the header in front of every message.
pub const HEADER_LEN: usize = 14;

/// The largest payload one message may carry.
pub const MAX_PAYLOAD: usize = u32::MAX as usize;

const TAG_START: u8 = b'S';
/// A chunk whose bytes follow the header.
pub const TAG_CHUNK: u8 = b'C';
const TAG_EOF: u8 = b'E';
/// The run is over (how it ended follows).
pub const TAG_END: u8 = b'X';
const TAG_FRAME: u8 = b'F';
const TAG_RESUME: u8 = b'U';
/// A chunk whose bytes wait in the data pipe of its direction.
pub const TAG_CHUNK_REF: u8 = b'R';

/// The fields of a message header: tag, direction code, t_ns, payload length.
pub fn decode_header(h: &[u8; HEADER_LEN]) -> (u8, u8, u64, usize) {
    let t_ns = u64::from_le_bytes(h[2..10].try_into().expect("8 bytes"));
    let len = u32::from_le_bytes(h[10..14].try_into().expect("4 bytes")) as usize;
    (h[0], h[1], t_ns, len)
}

/// What a replacement recorder is told right after the run's start: the
/// recorder before it died mid-run (it was killed), and how many bytes of
/// each direction had been handed to the recorders before it.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Resume {
    /// The process id of the recorder that died (its trace is continued).
    pub recorder_pid: u32,
    /// Bytes handed off so far, per direction, in [`Direction::ALL`] order.
    pub handed: [u64; 3],
}

/// One message from the relay.
#[derive(Clone, Debug, PartialEq)]
pub enum Message {
    /// The run started; always the first message.
    Start(TraceStart),
    /// This recorder replaces one that died mid-run; the second message of
    /// a replacement recorder's handoff, and only there.
    Resume(Resume),
    /// Bytes that crossed the tee going `dir`, read `t_ns` after the start.
    Chunk {
        /// Which stream the bytes came from.
        dir: Direction,
        /// Monotonic nanoseconds since the run started.
        t_ns: u64,
        /// The bytes, exactly as read.
        data: Vec<u8>,
    },
    /// One whole logical message (proxy mode), already framed.
    Frame {
        /// Which way the message went.
        dir: Direction,
        /// Monotonic nanoseconds since the run started.
        t_ns: u64,
        /// The message's exact bytes as the client side sees them.
        raw: Vec<u8>,
        /// The exact bytes on the successor side of the hop (the
        /// `proxy/successor` envelope), when there was one.
        envelope: Option<Vec<u8>>,
    },
    /// The stream going `dir` ended.
    Eof {
        /// Which stream ended.
        dir: Direction,
        /// When it ended.
        t_ns: u64,
    },
    /// The run is over; always the last message of a clean run.
    End {
        /// When it ended.
        t_ns: u64,
        /// How it ended.
        end: TraceEnd,
    },
}

fn dir_code(dir: Direction) -> u8 {
    match dir {
        Direction::ClientToAgent => 0,
        Direction::AgentToClient => 1,
        Direction::AgentStderr => 2,
    }
}

fn dir_from_code(code: u8) -> Option<Direction> {
    Direction::ALL.get(code as usize).copied()
}

fn encode_header(tag: u8, dir: u8, t_ns: u64, len: usize) -> [u8; HEADER_LEN] {
    // Chunks are 256 KiB at most and frames `MAX_LINE_BYTES`: far below.
    debug_assert!(len <= MAX_PAYLOAD, "a handoff payload of {len} bytes does not fit its header");
    let mut h = [0u8; HEADER_LEN];
    h[0] = tag;
    h[1] = dir;
    h[2..10].copy_from_slice(&t_ns.to_le_bytes());
    h[10..14].copy_from_slice(&(len as u32).to_le_bytes());
    h
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Instant;

    #[test]
    fn messages_round_trip_through_bytes() {
        let (r, w) = std::io::pipe().unwrap();
        let writer = HandoffWriter::new(w, Instant::now());
        let start = TraceStart {
            protocol: None,
            name: Some("n".into()),
            command: vec!["cat".into()],
            cwd: None,
            mode: "wrap".into(),
            started_at: "2026-01-01T00:00:00Z".into(),
        };
        writer.start(&start);
        let mut buf = vec![0u8; HEADER_LEN + 5];
        buf[HEADER_LEN..].copy_from_slice(b"ab\ncd");
        assert!(writer.chunk(Direction::AgentToClient, &mut buf));
        writer.eof(Direction::ClientToAgent);
        let end = TraceEnd { exit_code: Some(3), exit_signal: None, end_reason: "agent exited".into() };
        writer.end(&end);
        drop(writer);
        let mut reader = HandoffReader::new(r);
        assert_eq!(reader.read_message().unwrap(), Some(Message::Start(start)));
        match reader.read_message().unwrap() {
            Some(Message::Chunk { dir, data, .. }) => {
                assert_eq!(dir, Direction::AgentToClient);
                assert_eq!(data, b"ab\ncd");
            }
            other => panic!("expected a chunk, got {other:?}"),
        }
        assert!(matches!(reader.read_message().unwrap(), Some(Message::Eof { dir: Direction::ClientToAgent, .. })));
        assert!(matches!(reader.read_message().unwrap(), Some(Message::End { end: e, .. }) if e == end));
        assert_eq!(reader.read_message().unwrap(), None);
    }

    #[test]
    fn a_frame_is_refused_once_the_run_was_closed_but_never_for_want_of_a_recorder() {
        let (r, w) = std::io::pipe().unwrap();
        let writer = HandoffWriter::new(w, Instant::now());
        assert!(writer.frame(Direction::ClientToAgent, b"one", None));
        writer.close();
        assert!(!writer.frame(Direction::ClientToAgent, b"two", None));
        let mut reader = HandoffReader::new(r);
        assert!(matches!(reader.read_message().unwrap(), Some(Message::Frame { raw, .. }) if raw == b"one"));
        assert_eq!(reader.read_message().unwrap(), None);
        // No recorder, or a recorder that died: nothing is recorded, and
        // forwarding goes on.
        assert!(HandoffWriter::disconnected(Instant::now()).frame(Direction::AgentToClient, b"x", None));
        let (r, w) = std::io::pipe().unwrap();
        drop(r);
        let dead = HandoffWriter::new(w, Instant::now());
        assert!(dead.frame(Direction::AgentToClient, b"x", None));
        assert!(dead.frame(Direction::AgentToClient, b"y", None));
        assert_eq!(dead.lost_chunks(), 2);
    }

    #[test]
    fn messages_stamped_by_their_caller_keep_their_stamps_but_never_a_future_one() {
        let (r, w) = std::io::pipe().unwrap();
        let writer = HandoffWriter::new(w, Instant::now());
        assert!(writer.frame_at(Direction::ClientToAgent, 5, b"{}", Some(b"{\"via\":\"post\"}")));
        assert!(writer.chunk_at(Direction::AgentStderr, 6, b"note\n"));
        assert!(writer.frame_at(Direction::AgentToClient, u64::MAX, b"[]", None));
        writer.close();
        assert!(!writer.frame_at(Direction::ClientToAgent, 7, b"late", None));
        let mut reader = HandoffReader::new(r);
        match reader.read_message().unwrap() {
            Some(Message::Frame { t_ns: 5, raw, envelope: Some(env), .. }) => {
                assert_eq!((raw.as_slice(), env.as_slice()), (&b"{}"[..], &b"{\"via\":\"post\"}"[..]))
            }
            other => panic!("{other:?}"),
        }
        assert!(matches!(
            reader.read_message().unwrap(),
            Some(Message::Chunk { t_ns: 6, dir: Direction::AgentStderr, .. })
        ));
        match reader.read_message().unwrap() {
            Some(Message::Frame { t_ns, .. }) => assert!(t_ns < 60_000_000_000, "a stamp from the future: {t_ns}"),
            other => panic!("{other:?}"),
        }
        assert_eq!(reader.read_message().unwrap(), None);
    }

    #[test]
    fn a_dead_recorder_is_replaced_and_told_what_it_continues() {
        let (first, w1) = std::io::pipe().unwrap();
        let writer = HandoffWriter::new(w1, Instant::now());
        let (second, w2) = std::io::pipe().unwrap();
        let mut spare = Some(w2);
        writer.set_respawn(
            7,
            Box::new(move || {
                spare.take().map(|w| Replacement { out: Box::new(w), pid: 8, wait_until_recording: Box::new(|| {}) })
            }),
        );
        let start = TraceStart {
            protocol: None,
            name: None,
            command: vec!["cat".into()],
            cwd: None,
            mode: "wrap".into(),
            started_at: "2026-01-01T00:00:00Z".into(),
        };
        writer.start(&start);
        let chunk = |text: &[u8]| {
            let mut buf = vec![0u8; HEADER_LEN];
            buf.extend_from_slice(text);
            assert!(writer.chunk(Direction::ClientToAgent, &mut buf));
        };
        chunk(b"one\n");
        // The recorder dies with "one" unread: it was handed, and is lost.
        drop(first);
        chunk(b"two\n");
        writer.close();
        drop(writer);
        let mut reader = HandoffReader::new(second);
        assert_eq!(reader.read_message().unwrap(), Some(Message::Start(start)));
        assert_eq!(
            reader.read_message().unwrap(),
            Some(Message::Resume(Resume { recorder_pid: 7, handed: [4, 0, 0] }))
        );
        assert!(matches!(reader.read_message().unwrap(), Some(Message::Chunk { data, .. }) if data == b"two\n"));
        assert_eq!(reader.read_message().unwrap(), None);
    }

    #[test]
    fn truncated_message_is_invalid_data() {
        let mut bytes = encode_header(TAG_CHUNK, 0, 1, 10).to_vec();
        bytes.extend_from_slice(b"abc");
        let mut reader = HandoffReader::new(&bytes[..]);
        let err = reader.read_message().unwrap_err();
        assert_eq!(err.kind(), std::io::ErrorKind::InvalidData);
        let mut reader = HandoffReader::new(&b"C\x00\x01"[..]);
        assert_eq!(reader.read_message().unwrap_err().kind(), std::io::ErrorKind::InvalidData);
    }

    #[test]
    fn unknown_tag_is_invalid_data() {
        let bytes = encode_header(b'?', 0, 1, 0);
        let mut reader = HandoffReader::new(&bytes[..]);
        assert_eq!(reader.read_message().unwrap_err().kind(), std::io::ErrorKind::InvalidData);
    }
}
