//! A body passed through the proxy, recorded on its way.
//!
//! [`Tap`] wraps a request or response body and hands every chunk on as it
//! came. It records the messages the body carries: a whole JSON body (a
//! `POST`'s message, the `initialize` answer) as one message, recorded
//! before its last chunk goes on (each chunk is held back until the next
//! one, or the end, has arrived); a Server-Sent Events body one message per
//! event, recorded before the chunk that completes the event goes on, and
//! no chunk held back. So the peer cannot have a message, nor answer it,
//! before it is queued for recording, and the recorded order is the order
//! the messages crossed the proxy.

use super::coding::Coding;
use super::connection::{Connection, Message};
use super::memory::Held;
use super::sse::{Event, SseEvents};
use super::{LIVE_BYTES, MAX_MESSAGE_BYTES};
use acp_tee_shared::Direction;
use axum::body::Bytes;
use http_body::{Body, Frame, SizeHint};
use std::collections::VecDeque;
use std::net::IpAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{ready, Context, Poll};

/// The error type of the bodies the proxy passes on.
pub type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// How a body carries its messages.
enum Reading {
    /// The body is one message (or nothing): kept until its end, up to
    /// [`MAX_MESSAGE_BYTES`]; `over` once it ran past that.
    Whole { acc: Vec<u8>, over: bool },
    /// Server-Sent Events: one message per event.
    Events(SseEvents),
}

/// A request body larger than [`MAX_MESSAGE_BYTES`]: the proxy stops
/// sending it upstream and answers 413.
#[derive(Debug, thiserror::Error)]
#[error("the body is larger than MAX_MESSAGE_BYTES ({MAX_MESSAGE_BYTES} bytes), which acp-tee http-proxy records")]
pub struct TooLarge;

/// A request body for which the proxy has no room left in [`LIVE_BYTES`]
/// (or in its connection's or address's share of it); it answers 503.
#[derive(Debug, thiserror::Error)]
#[error(
    "acp-tee http-proxy holds LIVE_BYTES ({LIVE_BYTES} bytes) of messages already, or this connection or \
     client address its share (CONNECTION_BYTES, ADDRESS_BYTES)"
)]
pub struct NoRoom;

/// A body passed on and recorded (see the module doc).
pub struct Tap<B> {
    inner: B,
    conn: Arc<Connection>,
    dir: Direction,
    facts: Arc<[u8]>,
    reading: Reading,
    /// What the body is, for the notes (`the session stream`, ...).
    what: String,
    /// An oversized request body fails (the proxy answers 413) rather than
    /// going on unrecorded.
    refuse_oversized: bool,
    /// The last chunk, held back until the next frame of the body arrived.
    held: Option<Bytes>,
    /// Messages to queue for recording before `out` goes on (each taken
    /// out of its place once queued).
    ready: VecDeque<Option<Message>>,
    /// Frames to hand on.
    out: VecDeque<Frame<Bytes>>,
    /// The body ended (or failed) and what it was is noted.
    done: bool,
    /// The event stream ended: say so once its last messages are queued.
    end_note: bool,
    messages: u64,
    /// The body is empty by its length (a `202 Accepted`): hyper need not
    /// read it at all.
    empty: bool,
    /// The room in [`LIVE_BYTES`] the message being gathered holds (a
    /// message once whole takes its part along).
    room: Held,
    /// Bytes the body declared, to take as room before it is read; taken.
    declared: Option<usize>,
    /// When a request body must have arrived whole ([`super::gather::BODY_DEADLINE`]).
    deadline: Option<Pin<Box<tokio::time::Sleep>>>,
    /// The body's content coding, decoded for the recording only.
    coding: Coding,
}

/// A request body not whole within [`super::gather::BODY_DEADLINE`]: the
/// proxy stops sending it upstream and answers 408.
#[derive(Debug, thiserror::Error)]
#[error("the body did not arrive whole within BODY_DEADLINE ({}s)", super::gather::BODY_DEADLINE.as_secs())]
pub struct Stalled;

impl<B: Body> Tap<B> {
    /// A body carrying one message (or none), going `dir`.
    /// A body of declared length waits for room for all of it before it
    /// is read; the message is gathered in exactly that much memory.
    pub fn whole(inner: B, conn: Arc<Connection>, dir: Direction, facts: Arc<[u8]>, what: String) -> Self {
        let declared = inner
            .size_hint()
            .exact()
            .map(|n| n as usize)
            .filter(|&n| n > 0 && n <= MAX_MESSAGE_BYTES && Held::could_hold(n));
        let acc = Vec::with_capacity(declared.unwrap_or(0));
        let mut tap = Self::new(inner, conn, dir, facts, what, Reading::Whole { acc, over: false });
        tap.declared = declared;
        tap
    }

    /// A Server-Sent Events body going `dir`.
    pub fn events(inner: B, conn: Arc<Connection>, dir: Direction, facts: Arc<[u8]>, what: String) -> Self {
        Self::new(inner, conn, dir, facts, what, Reading::Events(SseEvents::new(MAX_MESSAGE_BYTES)))
    }

    /// Counts the body's room in the share of client address `addr`.
    pub fn from(mut self, addr: IpAddr) -> Self {
        self.room = self.conn.hold(addr);
        self
    }

    /// Fails, rather than passes on unrecorded, a body larger than
    /// [`MAX_MESSAGE_BYTES`].
    pub fn refusing_oversized(mut self) -> Self {
        self.refuse_oversized = true;
        // A request body that stalls must not hold its room for ever.
        self.deadline = Some(Box::pin(tokio::time::sleep(super::gather::BODY_DEADLINE)));
        self
    }

    /// Records the messages of a body coded as `headers` say (`gzip`,
    /// `deflate`) decoded; the bytes go on as they came. A body in a coding
    /// the proxy does not decode is recorded as it came, and noted.
    pub fn coded(mut self, headers: &axum::http::HeaderMap) -> Self {
        self.coding = match Coding::of(headers) {
            Coding::Undecodable(name) => {
                self.conn.note(format!(
                    "{} came {name}-coded, which acp-tee does not decode: its bytes are recorded as they came",
                    self.what
                ));
                Coding::Identity
            }
            coding => coding,
        };
        self
    }

    fn new(inner: B, conn: Arc<Connection>, dir: Direction, facts: Arc<[u8]>, what: String, reading: Reading) -> Self {
        let empty = inner.size_hint().exact() == Some(0);
        Tap {
            coding: Coding::Identity,
            deadline: None,
            room: conn.hold(IpAddr::from([0, 0, 0, 0])),
            declared: None,
            empty,
            inner,
            conn,
            dir,
            facts,
            reading,
            what,
            refuse_oversized: false,
            held: None,
            ready: VecDeque::new(),
            out: VecDeque::new(),
            done: false,
            end_note: false,
            messages: 0,
        }
    }

    /// Takes in a chunk: queues the messages it completes and what to hand on.
    fn take(&mut self, data: Bytes) -> Result<(), Refused> {
        self.record_decoded(|coding, plain| coding.decode(&data, plain))?;
        match &mut self.reading {
            Reading::Events(_) => self.out.push_back(Frame::data(data)),
            Reading::Whole { .. } => {
                if let Some(prev) = self.held.replace(data) {
                    self.out.push_back(Frame::data(prev));
                }
            }
        }
        Ok(())
    }

    /// Records the plain bytes `step` decodes (a chunk, or the decoder's
    /// rest at the end); a coding that breaks is given up and noted.
    fn record_decoded(
        &mut self,
        step: impl FnOnce(&mut Coding, &mut dyn FnMut(&[u8])) -> Result<(), String>,
    ) -> Result<(), Refused> {
        let mut coding = std::mem::replace(&mut self.coding, Coding::Identity);
        let mut refused = Ok(());
        let decoded = step(&mut coding, &mut |plain| {
            if refused.is_ok() {
                refused = self.record_part(plain);
            }
        });
        self.coding = coding;
        refused?;
        if let Err(e) = decoded {
            self.undecodable(&e);
        }
        Ok(())
    }

    /// The coded body did not decode (`e`): the rest of it goes on
    /// unrecorded, and a message it was carrying is not recorded in part.
    fn undecodable(&mut self, e: &str) {
        self.conn.note(format!(
            "{} is {}-coded and did not decode ({e}): passed on unrecorded from there",
            self.what,
            self.coding.name()
        ));
        match &mut self.reading {
            // Nothing more is decoded, so the parser sees no more.
            Reading::Events(sse) => *sse = SseEvents::new(MAX_MESSAGE_BYTES),
            Reading::Whole { acc, over } => {
                *over = true;
                *acc = Vec::new();
            }
        }
        self.room.resize(0);
    }

    /// Takes in `data`, plain bytes of the body's messages.
    fn record_part(&mut self, data: &[u8]) -> Result<(), Refused> {
        match &mut self.reading {
            Reading::Events(sse) => {
                // Room for all this chunk can leave held: the event so far
                // and these bytes (an event's data is never more than its
                // lines). With none, the event is given up; a message this
                // chunk completes without room goes on unrecorded.
                if !hold_at_least(&mut self.room, sse.held() + data.len()) {
                    sse.give_up_event();
                    hold_at_least(&mut self.room, data.len());
                }
                let (ready, conn, what, room) = (&mut self.ready, &self.conn, &self.what, &mut self.room);
                let mut emit = |e| match e {
                    Event::Data(raw) if raw.len() <= room.bytes() => {
                        let held = room.split(raw.len());
                        ready.push_back(Some(Message { raw: raw.into(), held }));
                    }
                    Event::Data(raw) => {
                        conn.note(format!("an event of {} bytes on {what} passed on unrecorded: {NoRoom}", raw.len()))
                    }
                    Event::Oversized(n) => conn.note(format!(
                        "an event of {n} bytes on {what} passed on unrecorded: more than MAX_MESSAGE_BYTES, \
                         or no room left in LIVE_BYTES"
                    )),
                };
                sse.push(data, &mut emit);
                if sse.held() <= self.room.bytes() || self.room.resize(sse.held()) {
                    self.room.resize(sse.held());
                } else {
                    sse.give_up_event();
                    self.room.resize(0);
                }
            }
            Reading::Whole { acc, over } => {
                if !*over
                    && acc.len() + data.len() <= MAX_MESSAGE_BYTES
                    && !hold_at_least(&mut self.room, acc.len() + data.len())
                {
                    *over = true;
                    *acc = Vec::new();
                    self.room.resize(0);
                    if self.refuse_oversized {
                        self.conn.note(format!("{} was refused (503): {NoRoom}", self.what));
                        self.done = true;
                        return Err(Refused::NoRoom);
                    }
                    self.conn.note(format!("{} passed on unrecorded: {NoRoom}", self.what));
                }
                if !*over && acc.len() + data.len() > MAX_MESSAGE_BYTES {
                    *over = true;
                    *acc = Vec::new();
                    self.room.resize(0);
                    if self.refuse_oversized {
                        self.conn.note(format!(
                            "{} was refused (413): more than MAX_MESSAGE_BYTES ({MAX_MESSAGE_BYTES} bytes)",
                            self.what
                        ));
                        self.done = true;
                        return Err(Refused::TooLarge);
                    }
                    self.conn.note(format!(
                        "{} passed on unrecorded: more than MAX_MESSAGE_BYTES ({MAX_MESSAGE_BYTES} bytes)",
                        self.what
                    ));
                }
                if !*over {
                    acc.extend_from_slice(data);
                }
            }
        }
        Ok(())
    }

    /// The body ended: the last message is queued, then the held chunk goes.
    fn finish(&mut self) -> Result<(), Refused> {
        self.record_decoded(|coding, plain| coding.finish(plain))?;
        match &mut self.reading {
            Reading::Events(sse) => {
                let (ready, conn, what, room) = (&mut self.ready, &self.conn, &self.what, &mut self.room);
                sse.finish(|e| match e {
                    Event::Data(raw) if raw.len() <= room.bytes() => {
                        let held = room.split(raw.len());
                        ready.push_back(Some(Message { raw: raw.into(), held }));
                    }
                    Event::Data(raw) => {
                        conn.note(format!("an event of {} bytes on {what} passed on unrecorded: {NoRoom}", raw.len()))
                    }
                    Event::Oversized(n) => conn.note(format!(
                        "an event of {n} bytes on {what} passed on unrecorded: more than MAX_MESSAGE_BYTES"
                    )),
                });
            }
            Reading::Whole { acc, over } => {
                if !*over && !acc.is_empty() {
                    let held = self.room.split(acc.len());
                    self.ready.push_back(Some(Message { raw: std::mem::take(acc).into(), held }));
                }
            }
        }
        // Room taken for more than came is given back.
        self.room.resize(0);
        if let Some(last) = self.held.take() {
            self.out.push_back(Frame::data(last));
        }
        self.done = true;
        Ok(())
    }
}

impl<B> Body for Tap<B>
where
    B: Body<Data = Bytes> + Unpin,
    B::Error: Into<BoxError>,
{
    type Data = Bytes;
    type Error = BoxError;

    fn poll_frame(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Result<Frame<Bytes>, BoxError>>> {
        let this = &mut *self;
        loop {
            while let Some(message) = this.ready.front_mut() {
                ready!(this.conn.poll_record(cx, this.dir, message, &this.facts));
                this.ready.pop_front();
                this.messages += 1;
            }
            if std::mem::take(&mut this.end_note) {
                this.conn.note(format!("{} ended after {} messages", this.what, this.messages));
            }
            if let Some(frame) = this.out.pop_front() {
                return Poll::Ready(Some(Ok(frame)));
            }
            if this.done {
                return Poll::Ready(None);
            }
            if this.deadline.as_mut().is_some_and(|d| std::future::Future::poll(d.as_mut(), cx).is_ready()) {
                this.done = true;
                this.room.resize(0);
                if this.declared.is_some() {
                    // Still waiting for room to read it in.
                    this.conn.note(format!("{} was refused (503): {NoRoom}", this.what));
                    return Poll::Ready(Some(Err(BoxError::from(NoRoom))));
                }
                this.conn.note(format!("{} was refused (408): {Stalled}", this.what));
                return Poll::Ready(Some(Err(BoxError::from(Stalled))));
            }
            if let Some(declared) = this.declared {
                // Room for the whole declared body before any of it is read:
                // waiting holds nothing, so it never blocks another's room.
                ready!(this.room.poll_grow(cx, declared));
                this.declared = None;
            }
            match ready!(Pin::new(&mut this.inner).poll_frame(cx)) {
                Some(Ok(frame)) => match frame.into_data() {
                    Ok(data) => {
                        this.take(data).map_err(Refused::into_error)?;
                        // A body of known length may be dropped once it is
                        // all out, never polled for its end.
                        if this.inner.is_end_stream() {
                            this.end_note = matches!(this.reading, Reading::Events(_));
                            this.finish().map_err(Refused::into_error)?;
                        }
                    }
                    Err(trailers) => {
                        this.finish().map_err(Refused::into_error)?;
                        this.out.push_back(trailers);
                    }
                },
                Some(Err(e)) => {
                    let e: BoxError = e.into();
                    this.conn.note(format!("{} broke off after {} messages: {e}", this.what, this.messages));
                    this.done = true;
                    return Poll::Ready(Some(Err(e)));
                }
                None => {
                    this.end_note = matches!(this.reading, Reading::Events(_));
                    this.finish().map_err(Refused::into_error)?;
                }
            }
        }
    }

    fn is_end_stream(&self) -> bool {
        self.done && self.out.is_empty() && self.ready.is_empty()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

impl<B> Drop for Tap<B> {
    fn drop(&mut self) {
        if self.done || (self.empty && self.messages == 0) {
            return;
        }
        let who = match self.dir {
            _ if super::STOPPING.load(std::sync::atomic::Ordering::Relaxed) => "the proxy stopped during",
            Direction::ClientToAgent => "the upstream stopped reading",
            _ => "the client went away during",
        };
        self.conn.note(format!("{who} {} after {} messages", self.what, self.messages));
    }
}

/// Why a request body was refused.
enum Refused {
    TooLarge,
    NoRoom,
}

impl Refused {
    fn into_error(self) -> BoxError {
        match self {
            Refused::TooLarge => BoxError::from(TooLarge),
            Refused::NoRoom => BoxError::from(NoRoom),
        }
    }
}

/// Makes `room` hold at least `bytes`, if there is room; false when not.
fn hold_at_least(room: &mut Held, bytes: usize) -> bool {
    bytes <= room.bytes() || room.resize(bytes)
}
