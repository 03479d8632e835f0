//! A WebSocket on the ACP endpoint: one ACP connection, one trace.
//!
//! The upgrade request goes upstream as it came (but for
//! `Sec-WebSocket-Extensions`: no compression is negotiated, so the proxy
//! reads the frames), the upstream's `101` comes back with its headers
//! (`Acp-Connection-Id`, `Set-Cookie`, ...), and both upgraded connections
//! are read as WebSockets. Each text message is recorded, then sent on,
//! one for one and in order, each way on a task of its own; pings are
//! answered by each side's WebSocket itself; a binary message goes on
//! unrecorded (ACP sends none) and is noted; a close is passed on, and
//! ends the trace once both ways are closed.
//!
//! Memory: a text message is one buffer, shared by its recording and its
//! sending, and holds its room in [`super::LIVE_BYTES`] until it is in the
//! recorder's pipe. Each way also holds room for the write buffer its
//! WebSocket keeps, as large as the largest message sent. Room for both is
//! waited for at once, before the message goes on. (A message being read
//! is counted once it is whole: tungstenite reads it before the proxy sees
//! its size.)

use super::connection::{Connection, Message as Recorded};
use super::{end_to_end, facts, header_text, own_answer, Proxy, CONNECTION_ID, MAX_MESSAGE_BYTES};
use acp_tee_shared::Direction;
use axum::body::Body;
use axum::extract::Request;
use axum::http::StatusCode;
use axum::response::Response;
use futures_util::{Sink, SinkExt, Stream, StreamExt};
use hyper_util::rt::TokioIo;
use std::sync::Arc;
use tokio_tungstenite::tungstenite::protocol::frame::coding::CloseCode;
use tokio_tungstenite::tungstenite::protocol::{CloseFrame, Role, WebSocketConfig};
use tokio_tungstenite::tungstenite::{Error as WsError, Message};
use tokio_tungstenite::WebSocketStream;

/// Passes a WebSocket upgrade on and, once both sides are upgraded,
/// relays and records its messages.
pub async fn relay(proxy: Arc<Proxy>, mut req: Request) -> Response {
    let Some(conn) = Connection::start(&proxy.record) else {
        return super::exchange::too_many();
    };
    let client_side = hyper::upgrade::on(&mut req);
    let (parts, _) = req.into_parts();
    let addr = super::client_addr(&parts);
    let request = proxy.upstream_request(&parts, Body::empty(), true);
    let mut response = match proxy.client.request(request).await {
        Ok(response) => response,
        Err(e) => {
            let error = format!("the upstream {} failed for a WebSocket upgrade: {e}", proxy.upstream.shown);
            conn.note(&error);
            conn.fail_because(&error);
            return own_answer(StatusCode::BAD_GATEWAY, format!("acp-tee http-proxy: {error}"));
        }
    };
    let status = response.status();
    if status != StatusCode::SWITCHING_PROTOCOLS {
        let reason = format!("the upstream refused the WebSocket upgrade ({status})");
        conn.note(&reason);
        conn.fail_because(reason);
        let (mut head, body) = response.into_parts();
        head.headers = end_to_end(&head.headers, false);
        return Response::from_parts(head, Body::new(body));
    }
    let id = header_text(response.headers(), &CONNECTION_ID);
    conn.note(format!("WebSocket opened ({status}), connection {}", id.as_deref().unwrap_or("without an id")));
    let upstream_side = hyper::upgrade::on(&mut response);
    let held = proxy.websockets.lock().unwrap_or_else(|e| e.into_inner()).clone();
    let stop = proxy.stop.subscribe();
    tokio::spawn(async move {
        let _held = held;
        match tokio::try_join!(client_side, upstream_side) {
            Ok((client, upstream)) => pump(conn, id, addr, client, upstream, stop).await,
            Err(e) => {
                let reason = format!("the WebSocket upgrade did not complete: {e}");
                conn.note(&reason);
                conn.fail_because(reason);
            }
        }
    });
    let (mut head, _) = response.into_parts();
    head.headers = end_to_end(&head.headers, true);
    Response::from_parts(head, Body::empty())
}

/// Relays both ways until both are closed.
async fn pump(
    conn: Arc<Connection>,
    id: Option<String>,
    addr: std::net::IpAddr,
    client: hyper::upgrade::Upgraded,
    upstream: hyper::upgrade::Upgraded,
    stop: tokio::sync::watch::Receiver<Option<String>>,
) {
    let config =
        WebSocketConfig::default().max_message_size(Some(MAX_MESSAGE_BYTES)).max_frame_size(Some(MAX_MESSAGE_BYTES));
    let client = WebSocketStream::from_raw_socket(TokioIo::new(client), Role::Server, Some(config)).await;
    let upstream = WebSocketStream::from_raw_socket(TokioIo::new(upstream), Role::Client, Some(config)).await;
    let facts = facts(serde_json::json!({"transport": "websocket", "via": "websocket", "connectionId": id}));
    let (to_client, from_client) = client.split();
    let (to_upstream, from_upstream) = upstream.split();
    let up = one_way(&conn, Direction::ClientToAgent, &facts, addr, from_client, to_upstream, stop.clone());
    let down = one_way(&conn, Direction::AgentToClient, &facts, addr, from_upstream, to_client, stop);
    tokio::join!(up, down);
}

/// Records and sends on what `from` reads until it is closed, or the proxy
/// stops; then closes `to`.
async fn one_way<R, W>(
    conn: &Connection,
    dir: Direction,
    facts: &Arc<[u8]>,
    addr: std::net::IpAddr,
    mut from: R,
    mut to: W,
    mut stop: tokio::sync::watch::Receiver<Option<String>>,
) where
    R: Stream<Item = Result<Message, WsError>> + Unpin,
    W: Sink<Message, Error = WsError> + Unpin,
{
    // Room for what the WebSockets of this way keep (see the module doc).
    let mut buffers = conn.hold(addr);
    let side = match dir {
        Direction::ClientToAgent => "client",
        _ => "upstream",
    };
    let close = loop {
        let next = tokio::select! {
            next = from.next() => next,
            stopped = stop.wait_for(Option::is_some) => {
                let reason = stopped.ok().and_then(|r| r.clone()).unwrap_or_else(|| "the proxy stopped".into());
                break Some(Closing { code: CloseCode::Away, reason, failed: false, said: "acp-tee http-proxy stopped" });
            }
        };
        let message = match next {
            Some(Ok(message)) => message,
            Some(Err(e)) => break Some(Closing::for_error(side, e)),
            None => break Some(Closing::vanished(side, "ended without a close")),
        };
        match message {
            Message::Text(text) => {
                let len = text.len();
                let more = len.saturating_sub(buffers.bytes());
                let mut held = conn.hold(addr);
                std::future::poll_fn(|cx| held.poll_grow(cx, len + more)).await;
                buffers.absorb(held.split(more));
                conn.record(dir, Recorded { raw: text.clone().into(), held }, facts).await;
                if to.send(Message::Text(text)).await.is_err() {
                    break None;
                }
            }
            Message::Binary(data) => {
                conn.note(format!("a binary message of {} bytes from the {side} passed on unrecorded", data.len()));
                if to.send(Message::Binary(data)).await.is_err() {
                    break None;
                }
            }
            // Each side's WebSocket answers pings itself.
            Message::Ping(_) | Message::Pong(_) | Message::Frame(_) => {}
            Message::Close(frame) => {
                let said =
                    frame.as_ref().map_or("no code".to_owned(), |f| format!("{} {}", u16::from(f.code), f.reason));
                let reason = format!("the {side} closed the WebSocket ({said})");
                conn.note(&reason);
                conn.end_because(reason);
                let _ = to.send(Message::Close(frame)).await;
                break None;
            }
        }
    };
    if let Some(Closing { code, reason, failed, said }) = close {
        conn.note(&reason);
        if failed {
            conn.fail_because(&reason);
        } else {
            conn.end_because(&reason);
        }
        let _ = to.send(Message::Close(Some(CloseFrame { code, reason: said.into() }))).await;
    }
    let _ = to.close().await;
}

/// How the proxy closes a WebSocket's other side: the code and reason it
/// sends, the trace's end reason, and whether the connection failed.
struct Closing {
    code: CloseCode,
    reason: String,
    failed: bool,
    said: &'static str,
}

impl Closing {
    /// `side` is gone without a close: 1001, going away, as it did.
    fn vanished(side: &str, how: &str) -> Closing {
        Closing {
            code: CloseCode::Away,
            reason: format!("the {side}'s WebSocket {how}"),
            failed: true,
            said: "acp-tee http-proxy: the peer went away",
        }
    }

    /// `side`'s WebSocket failed with `e`: the code a WebSocket endpoint
    /// answers that failure with (RFC 6455 7.4.1), so the other side hears
    /// what it would have heard directly.
    fn for_error(side: &str, e: WsError) -> Closing {
        use tokio_tungstenite::tungstenite::error::ProtocolError;
        let (code, said) = match &e {
            WsError::Capacity(_) => (CloseCode::Size, "acp-tee http-proxy: message too big"),
            WsError::Utf8 => (CloseCode::Invalid, "acp-tee http-proxy: invalid UTF-8"),
            WsError::ConnectionClosed
            | WsError::AlreadyClosed
            | WsError::Io(_)
            | WsError::Protocol(ProtocolError::ResetWithoutClosingHandshake) => {
                return Closing::vanished(side, &format!("ended without a close ({e})"))
            }
            WsError::Protocol(_) => (CloseCode::Protocol, "acp-tee http-proxy: protocol error"),
            _ => (CloseCode::Error, "acp-tee http-proxy"),
        };
        let reason = match code {
            CloseCode::Size => format!(
                "the {side} sent a WebSocket message past MAX_MESSAGE_BYTES ({e}); closed with {}",
                u16::from(code)
            ),
            _ => format!("the {side}'s WebSocket broke off: {e}; closed with {}", u16::from(code)),
        };
        Closing { code, reason, failed: true, said }
    }
}
