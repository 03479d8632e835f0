//! What the MCP client sends, bounded: rmcp's stdio transport reads a line
//! however long it is, so stdin goes through [`Bounded`] first.

use std::io;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};
use tokio::io::{AsyncRead, ReadBuf};

/// Bytes of one message (one line) from the MCP client at most; a longer
/// line ends the session, unanswered, and `acp-tee mcp` exits non-zero
/// ([`Bounded::refused`]), as the memory to hold it is not spent.
pub const MAX_REQUEST_BYTES: usize = 1024 * 1024;

/// A reader that fails once a line grows past `max` bytes.
pub struct Bounded<R> {
    inner: R,
    /// Bytes since the last newline.
    line: usize,
    max: usize,
    /// Set once a line was refused.
    refused: Arc<AtomicBool>,
}

impl<R> Bounded<R> {
    /// `inner`, whose lines may be at most `max` bytes.
    pub fn new(inner: R, max: usize) -> Bounded<R> {
        Bounded { inner, line: 0, max, refused: Arc::default() }
    }

    /// What tells, after the session, whether it ended on a line too long
    /// (the transport takes the read error as an end of input).
    pub fn refused(&self) -> Arc<AtomicBool> {
        self.refused.clone()
    }
}

impl<R: AsyncRead + Unpin> AsyncRead for Bounded<R> {
    fn poll_read(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        let before = buf.filled().len();
        let polled = Pin::new(&mut self.inner).poll_read(cx, buf);
        if let Poll::Ready(Ok(())) = polled {
            let new = &buf.filled()[before..];
            self.line = match memchr::memrchr(b'\n', new) {
                Some(last) => new.len() - last - 1,
                None => self.line + new.len(),
            };
            if self.line > self.max {
                // A read that fails has read nothing.
                buf.set_filled(before);
                self.refused.store(true, Ordering::SeqCst);
                return Poll::Ready(Err(io::Error::new(
                    io::ErrorKind::InvalidData,
                    format!("a message from the MCP client is longer than {} bytes", self.max),
                )));
            }
        }
        polled
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::AsyncReadExt;

    #[tokio::test]
    async fn lines_up_to_the_bound_pass_and_a_longer_one_fails() {
        let mut ok = Vec::new();
        Bounded::new(&b"abcd\nefgh\n"[..], 4).read_to_end(&mut ok).await.unwrap();
        assert_eq!(ok, b"abcd\nefgh\n");
        let mut long = Vec::new();
        let e = Bounded::new(&b"abcd\nefghi"[..], 4).read_to_end(&mut long).await.unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::InvalidData);
    }
}
