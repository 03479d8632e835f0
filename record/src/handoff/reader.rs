//! The recorder's end of the handoff pipe.

use super::*;
use std::io::{self, BufReader, Read};

/// Reads [`Message`]s from the relay.
pub struct HandoffReader<R: Read> {
    input: BufReader<R>,
}

impl<R: Read> HandoffReader<R> {
    /// Reads from `input`.
    pub fn new(input: R) -> Self {
        HandoffReader { input: BufReader::with_capacity(256 * 1024, input) }
    }

    /// The next message; `Ok(None)` at a clean end-of-file between messages,
    /// an `InvalidData` error when the input stops inside a message or is not
    /// the handoff format.
    pub fn read_message(&mut self) -> io::Result<Option<Message>> {
        let mut header = [0u8; HEADER_LEN];
        let got = read_full(&mut self.input, &mut header)?;
        if got == 0 {
            return Ok(None);
        }
        if got < HEADER_LEN {
            return Err(invalid(format!("handoff ended inside a header ({got} of {HEADER_LEN} bytes)")));
        }
        let tag = header[0];
        let dir = header[1];
        let t_ns = u64::from_le_bytes(header[2..10].try_into().expect("8 bytes"));
        let len = u32::from_le_bytes(header[10..14].try_into().expect("4 bytes")) as usize;
        let mut payload = vec![0u8; len];
        let got = read_full(&mut self.input, &mut payload)?;
        if got < len {
            return Err(invalid(format!("handoff ended inside a message ({got} of {len} bytes)")));
        }
        let direction = || dir_from_code(dir).ok_or_else(|| invalid(format!("unknown direction code {dir}")));
        let msg = match tag {
            TAG_START => Message::Start(serde_json::from_slice(&payload).map_err(|e| invalid(e.to_string()))?),
            TAG_RESUME => Message::Resume(serde_json::from_slice(&payload).map_err(|e| invalid(e.to_string()))?),
            TAG_CHUNK => Message::Chunk { dir: direction()?, t_ns, data: payload },
            TAG_FRAME => {
                let dir = direction()?;
                let raw_len = payload
                    .get(..4)
                    .map(|b| u32::from_le_bytes(b.try_into().expect("4 bytes")) as usize)
                    .filter(|&n| n <= payload.len() - 4)
                    .ok_or_else(|| invalid("frame message with a bad length".to_owned()))?;
                let envelope = payload.split_off(4 + raw_len);
                payload.drain(..4);
                let envelope = (!envelope.is_empty()).then_some(envelope);
                Message::Frame { dir, t_ns, raw: payload, envelope }
            }
            TAG_EOF => Message::Eof { dir: direction()?, t_ns },
            TAG_END => {
                Message::End { t_ns, end: serde_json::from_slice(&payload).map_err(|e| invalid(e.to_string()))? }
            }
            other => return Err(invalid(format!("unknown handoff tag {other:#04x}"))),
        };
        Ok(Some(msg))
    }
}

/// Reads until `buf` is full or end-of-file; returns how much was read.
pub fn read_full(input: &mut impl Read, buf: &mut [u8]) -> io::Result<usize> {
    let mut got = 0;
    while got < buf.len() {
        match input.read(&mut buf[got..]) {
            Ok(0) => break,
            Ok(n) => got += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(got)
}

fn invalid(msg: String) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, msg)
}
