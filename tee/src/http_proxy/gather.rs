//! Gathering a connection's first message (the `initialize` `POST`) before
//! the connection takes a recording.
//!
//! A recording is a slot of [`MAX_CONNECTIONS`](super::MAX_CONNECTIONS)
//! and a recorder process. A client that sends headers and then stalls, or
//! a body that never ends, must not hold one: so the first message is
//! gathered whole, within [`BODY_DEADLINE`], before the connection exists.
//! Bodies declared at most [`FREE_BODY_BYTES`] (every `initialize` an ACP
//! client sends) gather without asking for room; larger or undeclared
//! ones draw on [`FIRST_GATHER_BYTES`], a budget of their own, so bodies
//! stalled there can never take the room live connections gather their
//! messages in ([`GATHER_BYTES`](super::GATHER_BYTES)).

use super::{own_answer, MAX_MESSAGE_BYTES};
use axum::body::{Body, Bytes};
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::Response;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

/// How long a request's body may take to arrive whole, from the end of its
/// headers; a body still coming then is refused (408) and its connection
/// closed.
pub const BODY_DEADLINE: Duration = Duration::from_secs(30);

/// A first message declared at most this long gathers without drawing on
/// [`FIRST_GATHER_BYTES`].
pub const FREE_BODY_BYTES: usize = 1 << 20;

/// Bytes the first messages larger than [`FREE_BODY_BYTES`] (or of no
/// declared length, counted as [`MAX_MESSAGE_BYTES`]) gather at once, at most.
pub const FIRST_GATHER_BYTES: usize = 64 << 20;

/// Bytes held of [`FIRST_GATHER_BYTES`] now.
static FIRST_GATHERING: AtomicUsize = AtomicUsize::new(0);

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
struct Room(usize);

impl Room {
    fn take(bytes: usize) -> Option<Room> {
        if bytes == 0 {
            return Some(Room(0));
        }
        let before = FIRST_GATHERING.fetch_add(bytes, Ordering::SeqCst);
        if before + bytes > FIRST_GATHER_BYTES {
            FIRST_GATHERING.fetch_sub(bytes, Ordering::SeqCst);
            return None;
        }
        Some(Room(bytes))
    }
}

impl Drop for Room {
    fn drop(&mut self) {
        FIRST_GATHERING.fetch_sub(self.0, Ordering::SeqCst);
    }
}

/// The whole body of a first message with `headers`, or why not.
pub async fn initialize(headers: &HeaderMap, body: Body) -> Result<Bytes, Refused> {
    let declared = headers.get(header::CONTENT_LENGTH).and_then(|v| v.to_str().ok()?.trim().parse::<u64>().ok());
    let charge = match declared {
        Some(n) if n > MAX_MESSAGE_BYTES as u64 => return Err(Refused::TooLarge),
        Some(n) if n as usize <= FREE_BODY_BYTES => 0,
        Some(n) => n as usize,
        None => MAX_MESSAGE_BYTES,
    };
    let _room = Room::take(charge).ok_or(Refused::NoRoom)?;
    match tokio::time::timeout(BODY_DEADLINE, axum::body::to_bytes(body, MAX_MESSAGE_BYTES)).await {
        Err(_) => Err(Refused::Stalled),
        Ok(Ok(whole)) => Ok(whole),
        Ok(Err(e)) if is_length_limit(&e) => Err(Refused::TooLarge),
        Ok(Err(e)) => Err(Refused::Broken(e.to_string())),
    }
}

/// Whether `to_bytes` stopped at its limit.
fn is_length_limit(e: &axum::Error) -> bool {
    let mut cause: Option<&(dyn std::error::Error + 'static)> = Some(e);
    while let Some(c) = cause {
        if c.is::<http_body_util::LengthLimitError>() {
            return true;
        }
        cause = c.source();
    }
    false
}
