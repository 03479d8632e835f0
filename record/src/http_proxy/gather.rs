//! Gathering a connection's first message (the `initialize` `POST`) before
//! the connection takes a recording.
//!
//! A recording is a slot of [`MAX_CONNECTIONS`](super::MAX_CONNECTIONS)
//! and a recorder process. A client that sends headers and then stalls, or
//! a body that never ends, must not hold one: so the first message is
//! gathered whole, within [`BODY_DEADLINE`], before the connection exists.
//! First messages draw on [`FIRST_GATHER_BYTES`], a budget of their own, so
//! bodies stalled there can never take the room live connections hold
//! their messages in ([`LIVE_BYTES`](super::LIVE_BYTES)). A body declared
//! at most [`FREE_BODY_BYTES`] (every `initialize` an ACP client sends)
//! takes room as its bytes come; a larger or undeclared one takes its whole
//! size first, and such bodies together at most half the budget, so large
//! bodies that stall leave room for every small `initialize`. The room is
//! held until the message has gone on upstream.

use super::{own_answer, MAX_MESSAGE_BYTES};
use axum::body::{Body, Bytes};
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::Response;
use http_body_util::BodyExt as _;
use std::sync::Mutex;
use std::time::Duration;

/// How long a request's body may take to arrive whole, from the end of its
/// headers; a body still coming then is refused (408) and its connection
/// closed.
pub const BODY_DEADLINE: Duration = Duration::from_secs(30);

/// A first message declared at most this long takes room in
/// [`FIRST_GATHER_BYTES`] as it comes, not its declared size first.
pub const FREE_BODY_BYTES: usize = 1 << 20;

/// Bytes of first messages the proxy holds at once, at most (a body of no
/// declared length counts as [`MAX_MESSAGE_BYTES`]); those declared larger
/// than [`FREE_BODY_BYTES`] or not declared hold half of it at most.
pub const FIRST_GATHER_BYTES: usize = 64 << 20;

/// Bytes held of [`FIRST_GATHER_BYTES`] now: all, and those of large bodies.
static FIRST_GATHERING: Mutex<(usize, usize)> = Mutex::new((0, 0));

/// Why a first message was not taken.
#[derive(Debug, thiserror::Error)]
pub enum Refused {
    /// Declared or found larger than [`MAX_MESSAGE_BYTES`].
    #[error("the body is larger than MAX_MESSAGE_BYTES ({MAX_MESSAGE_BYTES} bytes), which acp-tee http-proxy records")]
    TooLarge,
    /// No room in [`FIRST_GATHER_BYTES`].
    #[error("acp-tee http-proxy is gathering FIRST_GATHER_BYTES ({FIRST_GATHER_BYTES} bytes) of first messages already; try again")]
    NoRoom,
    /// Not whole within [`BODY_DEADLINE`].
    #[error("the body did not arrive whole within BODY_DEADLINE ({}s)", BODY_DEADLINE.as_secs())]
    Stalled,
    /// The client broke the body off.
    #[error("the body broke off: {0}")]
    Broken(String),
}

impl Refused {
    /// The answer to the client.
    pub fn answer(&self) -> Response {
        let status = match self {
            Refused::TooLarge => StatusCode::PAYLOAD_TOO_LARGE,
            Refused::NoRoom => StatusCode::SERVICE_UNAVAILABLE,
            Refused::Stalled => StatusCode::REQUEST_TIMEOUT,
            Refused::Broken(_) => StatusCode::BAD_REQUEST,
        };
        let mut answer = own_answer(status, format!("acp-tee http-proxy: {self}"));
        if matches!(self, Refused::Stalled) {
            // The rest of the body would be read as the next request.
            answer.headers_mut().insert(header::CONNECTION, header::HeaderValue::from_static("close"));
        }
        answer
    }
}

/// Room held in [`FIRST_GATHER_BYTES`], given back when dropped.
pub struct Room {
    bytes: usize,
    /// Taken whole for a large body.
    large: bool,
}

impl Room {
    fn first_gathering() -> std::sync::MutexGuard<'static, (usize, usize)> {
        FIRST_GATHERING.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The whole room of a large body, or `None`.
    fn large(bytes: usize) -> Option<Room> {
        let mut held = Self::first_gathering();
        if held.0 + bytes > FIRST_GATHER_BYTES || held.1 + bytes > FIRST_GATHER_BYTES / 2 {
            return None;
        }
        *held = (held.0 + bytes, held.1 + bytes);
        Some(Room { bytes, large: true })
    }

    /// Holds at least `now` bytes, if there is room.
    fn grow(&mut self, now: usize) -> bool {
        if now <= self.bytes {
            return true;
        }
        let mut held = Self::first_gathering();
        let more = now - self.bytes;
        if held.0 + more > FIRST_GATHER_BYTES || (self.large && held.1 + more > FIRST_GATHER_BYTES / 2) {
            return false;
        }
        held.0 += more;
        if self.large {
            held.1 += more;
        }
        self.bytes = now;
        true
    }
}

impl Drop for Room {
    fn drop(&mut self) {
        let mut held = Self::first_gathering();
        held.0 -= self.bytes;
        if self.large {
            held.1 -= self.bytes;
        }
    }
}

/// The whole body of a first message with `headers`, and the room it holds
/// (to be kept until it has gone on), or why not.
pub async fn initialize(headers: &HeaderMap, body: Body) -> Result<(Bytes, Room), Refused> {
    let declared = headers.get(header::CONTENT_LENGTH).and_then(|v| v.to_str().ok()?.trim().parse::<u64>().ok());
    let mut room = match declared {
        Some(n) if n > MAX_MESSAGE_BYTES as u64 => return Err(Refused::TooLarge),
        Some(n) if n as usize <= FREE_BODY_BYTES => Room { bytes: 0, large: false },
        Some(n) => Room::large(n as usize).ok_or(Refused::NoRoom)?,
        None => Room::large(MAX_MESSAGE_BYTES).ok_or(Refused::NoRoom)?,
    };
    let gathered = tokio::time::timeout(BODY_DEADLINE, async {
        let mut body = body;
        let mut whole = Vec::new();
        while let Some(frame) = body.frame().await {
            let frame = frame.map_err(|e| Refused::Broken(e.to_string()))?;
            let Ok(data) = frame.into_data() else { continue };
            let now = whole.len() + data.len();
            if now > MAX_MESSAGE_BYTES {
                return Err(Refused::TooLarge);
            }
            if !room.grow(now) {
                return Err(Refused::NoRoom);
            }
            whole.extend_from_slice(&data);
        }
        Ok(Bytes::from(whole))
    })
    .await;
    match gathered {
        Err(_) => Err(Refused::Stalled),
        Ok(Ok(whole)) => Ok((whole, room)),
        Ok(Err(refused)) => Err(refused),
    }
}
