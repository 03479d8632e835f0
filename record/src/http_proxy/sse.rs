//! Cutting a Server-Sent Events stream into its events' data, as the ACP
//! HTTP transport sends messages: one JSON-RPC message (or batch) per
//! event, in `data:` lines, an event ended by a blank line. As the SSE
//! standard says: a line ends at `\r\n`, `\n` or a lone `\r`; comments
//! (the keepalives) and other fields are skipped; several `data:` lines
//! join with `\n`; an event whose data is empty dispatches nothing.
//!
//! Pure and bounded: an event's data (or a `data` line) longer than the
//! limit it is given is not kept; the event is reported as
//! [`Event::Oversized`] with its size instead. A comment or another field
//! that long is skipped, and the event it is in read on.

/// A line buffer up to this large is kept for the next line.
const KEPT_LINE_BYTES: usize = 64 << 10;

/// What an event of the stream was.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Event {
    /// Its data: the message text, exactly as the `data:` lines carried it.
    Data(Vec<u8>),
    /// Its data (or one of its lines) ran past the limit, or it was given
    /// up: this many bytes of the event were seen, none kept.
    Oversized(usize),
}

/// The state between chunks of one stream.
#[derive(Debug)]
pub struct SseEvents {
    /// The line read so far (without its end).
    line: Vec<u8>,
    /// Bytes of the line so far, kept or not.
    line_seen: usize,
    /// The event's data so far.
    data: Vec<u8>,
    /// The event has a `data` field (possibly empty).
    has_data: bool,
    /// Bytes of the event seen while it is oversized (0: it is not).
    oversized: usize,
    /// The most bytes a line or an event's data may hold.
    max: usize,
    /// The line is a comment or a field other than `data` too long to
    /// keep: the rest of it is skipped.
    skipping: bool,
    /// The last chunk ended in `\r`: a `\n` first in the next one ends
    /// no other line.
    after_cr: bool,
}

impl SseEvents {
    /// A stream whose events may hold up to `max` bytes of data.
    pub fn new(max: usize) -> Self {
        SseEvents {
            line: Vec::new(),
            line_seen: 0,
            data: Vec::new(),
            has_data: false,
            oversized: 0,
            max,
            skipping: false,
            after_cr: false,
        }
    }

    /// Feeds `chunk`; every event it completes goes to `emit`, in order.
    pub fn push(&mut self, chunk: &[u8], mut emit: impl FnMut(Event)) {
        let mut rest = chunk;
        if self.after_cr && !rest.is_empty() {
            self.after_cr = false;
            if rest[0] == b'\n' {
                rest = &rest[1..];
            }
        }
        while let Some(at) = memchr::memchr2(b'\n', b'\r', rest) {
            self.take_line_part(&rest[..at]);
            self.end_line(&mut emit);
            let cr = rest[at] == b'\r';
            rest = &rest[at + 1..];
            if cr {
                match rest.first() {
                    Some(b'\n') => rest = &rest[1..],
                    Some(_) => {}
                    None => self.after_cr = true,
                }
            }
        }
        self.take_line_part(rest);
    }

    /// The stream ended: an event not yet ended by a blank line counts as
    /// ended (the Python SDK's reader does so too).
    pub fn finish(&mut self, mut emit: impl FnMut(Event)) {
        if self.line_seen > 0 {
            self.end_line(&mut emit);
        }
        self.dispatch(&mut emit);
    }

    /// Bytes held for the event being read.
    pub fn held(&self) -> usize {
        self.line.len() + self.data.len()
    }

    /// Gives up the event being read (there is no room for it): its bytes
    /// are let go and it is reported as [`Event::Oversized`].
    pub fn give_up_event(&mut self) {
        if self.oversized == 0 {
            self.oversized = (self.data.len() + self.line.len()).max(1);
            self.line = Vec::new();
            self.data = Vec::new();
        }
    }

    fn take_line_part(&mut self, part: &[u8]) {
        self.line_seen += part.len();
        if self.oversized > 0 {
            self.oversized += part.len();
            return;
        }
        if self.skipping {
            return;
        }
        if self.line.len() + part.len() <= self.max + 16 {
            self.line.extend_from_slice(part);
            return;
        }
        // Too long to keep: skipped when it is not a `data` line (its field
        // name is done within the first bytes), else the event is
        // oversized. `data: ` comes on top of the data's own bytes.
        let head: Vec<u8> = self.line.iter().chain(part).take(5).copied().collect();
        if head.starts_with(b"data:") || head == b"data" {
            self.oversized = self.data.len() + self.line_seen;
            self.data = Vec::new();
        } else {
            self.skipping = true;
        }
        self.line = Vec::new();
    }

    fn end_line(&mut self, emit: &mut impl FnMut(Event)) {
        let seen = std::mem::replace(&mut self.line_seen, 0);
        let mut line = std::mem::take(&mut self.line);
        if std::mem::take(&mut self.skipping) {
            // A comment or another field: nothing of the event.
        } else if self.oversized > 0 {
            self.oversized += 1;
            // An oversized event ends at its blank line like any other.
            if seen == 0 {
                self.dispatch(emit);
            }
        } else if line.is_empty() {
            self.dispatch(emit);
        } else if line[0] != b':' {
            let (field, value) = match memchr::memchr(b':', &line) {
                Some(at) => (&line[..at], &line[at + 1..]),
                None => (&line[..], &[][..]),
            };
            let value = value.strip_prefix(b" ").unwrap_or(value);
            if field == b"data" {
                if self.has_data {
                    self.data.push(b'\n');
                }
                self.has_data = true;
                if self.data.len() + value.len() > self.max {
                    self.oversized = self.data.len() + value.len();
                    self.data = Vec::new();
                } else {
                    self.data.extend_from_slice(value);
                }
            }
        }
        line.clear();
        // A long line's buffer is let go, not kept: kept, it would hold
        // memory that `held` does not count.
        if line.capacity() <= KEPT_LINE_BYTES {
            self.line = line;
        }
    }

    fn dispatch(&mut self, emit: &mut impl FnMut(Event)) {
        if self.oversized > 0 {
            emit(Event::Oversized(self.oversized));
        } else if self.has_data && !self.data.is_empty() {
            emit(Event::Data(std::mem::take(&mut self.data)));
        }
        self.oversized = 0;
        self.has_data = false;
        self.data.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn events(chunks: &[&[u8]], max: usize) -> Vec<Event> {
        let mut sse = SseEvents::new(max);
        let mut out = Vec::new();
        for chunk in chunks {
            sse.push(chunk, |e| out.push(e));
        }
        sse.finish(|e| out.push(e));
        out
    }

    fn data(s: &str) -> Event {
        Event::Data(s.as_bytes().to_vec())
    }

    #[test]
    fn events_are_cut_wherever_the_chunks_end() {
        let stream = b"data: {\"a\":1}\n\n: keepalive\n\ndata: [1,\r\ndata: 2]\r\n\r\nid: 7\ndata:x\n\n";
        let whole = events(&[stream], 100);
        assert_eq!(whole, vec![data("{\"a\":1}"), data("[1,\n2]"), data("x")]);
        for cut in 0..stream.len() {
            assert_eq!(events(&[&stream[..cut], &stream[cut..]], 100), whole, "cut at {cut}");
        }
        let bytewise: Vec<&[u8]> = stream.chunks(1).collect();
        assert_eq!(events(&bytewise, 100), whole);
    }

    /// What `stream` gives, whole and split at every byte (one cut, and
    /// byte by byte): all must agree.
    fn events_at_every_split(stream: &[u8], max: usize) -> Vec<Event> {
        let whole = events(&[stream], max);
        for cut in 0..stream.len() {
            assert_eq!(events(&[&stream[..cut], &stream[cut..]], max), whole, "cut at {cut}");
        }
        let bytewise: Vec<&[u8]> = stream.chunks(1).collect();
        assert_eq!(events(&bytewise, max), whole);
        whole
    }

    #[test]
    fn a_lone_cr_ends_a_line_as_crlf_and_lf_do() {
        assert_eq!(events_at_every_split(b"data: {a}\r\rdata: {b}\r\r", 100), vec![data("{a}"), data("{b}")]);
        assert_eq!(
            events_at_every_split(b"data: 1\r\ndata: 2\rdata: 3\n\r\ndata: 4\r\n\n", 100),
            vec![data("1\n2\n3"), data("4")]
        );
    }

    #[test]
    fn an_event_with_empty_data_dispatches_nothing() {
        assert_eq!(events_at_every_split(b"data\n\ndata:\n\ndata: \r\n\r\ndata: x\n\n", 100), vec![data("x")]);
        // Two empty data lines make data of one line end, which is not empty.
        assert_eq!(events_at_every_split(b"data:\ndata:\n\n", 100), vec![data("\n")]);
    }

    #[test]
    fn a_comment_or_other_field_past_the_limit_is_skipped_and_its_event_read() {
        let long = format!(": {}\nevent: {}\r\ndata: {{small}}\n\n", "c".repeat(300), "e".repeat(300));
        assert_eq!(events_at_every_split(long.as_bytes(), 100), vec![data("{small}")]);
        // A long data line still makes its event oversized, and only it.
        let long = format!("data: {}\n\ndata: ok\n\n", "d".repeat(300));
        let out = events_at_every_split(long.as_bytes(), 100);
        assert!(matches!(out[..], [Event::Oversized(n), ref ok] if n >= 300 && *ok == data("ok")), "{out:?}");
    }

    #[test]
    fn an_event_left_open_at_the_end_counts() {
        assert_eq!(events(&[b"data: {}\n"], 100), vec![data("{}")]);
        assert_eq!(events(&[b"data: {}"], 100), vec![data("{}")]);
        assert_eq!(events(&[b": only a comment\n"], 100), vec![]);
    }

    #[test]
    fn an_oversized_event_is_reported_with_its_size_and_the_next_one_read() {
        let big = format!("data: {}\n\ndata: ok\n\n", "x".repeat(50));
        let out = events(&[big.as_bytes()], 20);
        assert!(matches!(out[0], Event::Oversized(n) if n >= 50), "{out:?}");
        assert_eq!(out[1], data("ok"));
        // Over several data lines, each short.
        let lines = format!("{}\ndata: ok\n\n", "data: 0123456789\n".repeat(5));
        let out = events(&[lines.as_bytes()], 20);
        assert!(matches!(out[0], Event::Oversized(_)), "{out:?}");
        assert_eq!(out[1], data("ok"));
        assert_eq!(out.len(), 2);
        // Given up halfway (no room left for it).
        let mut sse = SseEvents::new(100);
        let mut out = Vec::new();
        sse.push(b"data: {\"a\":", |e| out.push(e));
        assert_eq!(sse.held(), 11);
        sse.give_up_event();
        assert_eq!(sse.held(), 0);
        sse.push(b"1}\n\ndata: ok\n\n", |e| out.push(e));
        assert!(matches!(out[0], Event::Oversized(_)), "{out:?}");
        assert_eq!(out[1], data("ok"));
    }
}
