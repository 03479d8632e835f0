//! Moving bytes from one stream to another, handing a copy off first.

use crate::handoff::{HandoffWriter, HEADER_LEN};
use acp_tee_shared::Direction;
use std::io::{ErrorKind, Read, Write};

/// Bytes read per `read` at most. Pipes hold 64 KiB by default.
const CHUNK: usize = 64 * 1024;

/// Copies `from` to `to` until `from` ends, handing every chunk to the recorder
/// before forwarding it, so nothing reaches a peer that the recorder was not
/// given first. A destination that fails (peer gone) stops forwarding but not
/// reading: what still arrives is recorded.
pub fn pump(mut from: impl Read, mut to: impl Write, dir: Direction, handoff: &HandoffWriter) {
    let mut buf = vec![0u8; HEADER_LEN + CHUNK];
    let mut forwarding = true;
    loop {
        let n = match from.read(&mut buf[HEADER_LEN..]) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == ErrorKind::Interrupted => continue,
            Err(e) => {
                tracing::debug!("{dir}: read failed: {e}");
                break;
            }
        };
        handoff.chunk(dir, &mut buf[..HEADER_LEN + n]);
        if forwarding {
            if let Err(e) = to.write_all(&buf[HEADER_LEN..HEADER_LEN + n]) {
                tracing::debug!("{dir}: the receiving side closed ({e}); still recording");
                forwarding = false;
            }
        }
    }
    handoff.eof(dir);
}
