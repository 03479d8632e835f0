//! Newline framing of a byte stream.

/// Cuts a byte stream into newline-terminated frames.
///
/// Bytes are pushed in whatever chunks they arrived in; every `\n` ends a frame
/// (the `\n` belongs to the frame it ends). What is left when the stream ends is
/// one last, unterminated frame, returned by [`FrameSplitter::finish`].
///
/// Invariant: the frames handed out, in order, followed by what `finish`
/// returns, concatenate to exactly the bytes pushed.
#[derive(Debug, Default)]
pub struct FrameSplitter {
    pending: Vec<u8>,
}

impl FrameSplitter {
    /// A splitter with nothing pending.
    #[cfg(any(test, feature = "testing"))]
    pub fn new() -> Self {
        Self::default()
    }

    /// Feeds `chunk`, calling `emit` once for each frame it completes.
    pub fn push(&mut self, mut chunk: &[u8], mut emit: impl FnMut(Vec<u8>)) {
        while let Some(i) = memchr::memchr(b'\n', chunk) {
            let (line, rest) = chunk.split_at(i + 1);
            if self.pending.is_empty() {
                emit(line.to_vec());
            } else {
                self.pending.extend_from_slice(line);
                emit(std::mem::take(&mut self.pending));
            }
            chunk = rest;
        }
        self.pending.extend_from_slice(chunk);
    }

    /// Bytes of the unfinished frame held.
    pub fn pending_len(&self) -> usize {
        self.pending.len()
    }

    /// Ends the stream: the unterminated last frame, if any bytes are left.
    pub fn finish(&mut self) -> Option<Vec<u8>> {
        if self.pending.is_empty() {
            None
        } else {
            Some(std::mem::take(&mut self.pending))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn split(chunks: &[&[u8]]) -> Vec<Vec<u8>> {
        let mut s = FrameSplitter::new();
        let mut out = Vec::new();
        for c in chunks {
            s.push(c, |f| out.push(f));
        }
        out.extend(s.finish());
        out
    }

    #[test]
    fn lines_across_chunks() {
        let frames = split(&[b"{\"a\":", b"1}\n{\"b\"", b":2}\n\n", b"tail"]);
        let expect: Vec<&[u8]> = vec![b"{\"a\":1}\n", b"{\"b\":2}\n", b"\n", b"tail"];
        assert_eq!(frames, expect);
    }

    #[test]
    fn crlf_stays_in_the_frame() {
        assert_eq!(split(&[b"a\r\nb\r\n"]), vec![b"a\r\n".to_vec(), b"b\r\n".to_vec()]);
    }

    #[test]
    fn empty_stream_has_no_frames() {
        assert!(split(&[]).is_empty());
        assert!(split(&[b"", b""]).is_empty());
    }

    proptest! {
        #[test]
        fn frames_concatenate_back(data in proptest::collection::vec(
            prop_oneof![Just(b'\n'), Just(b'\r'), any::<u8>()], 0..2000),
            cuts in proptest::collection::vec(0usize..2000, 0..20))
        {
            let mut cuts: Vec<usize> = cuts.into_iter().map(|c| c.min(data.len())).collect();
            cuts.sort_unstable();
            let mut chunks = Vec::new();
            let mut last = 0;
            for c in cuts {
                chunks.push(&data[last..c]);
                last = c;
            }
            chunks.push(&data[last..]);
            let frames = split(&chunks);
            prop_assert_eq!(frames.concat(), data.clone());
            for (i, f) in frames.iter().enumerate() {
                prop_assert!(!f.is_empty());
                let newlines = f.iter().filter(|&&b| b == b'\n').count();
                if i + 1 < frames.len() || data.last() == Some(&b'\n') {
                    prop_assert_eq!(newlines, 1);
                    prop_assert_eq!(f.last(), Some(&b'\n'));
                } else {
                    prop_assert_eq!(newlines, 0);
                }
            }
        }
    }
}
