//! One HTTP exchange on the ACP endpoint, passed on and recorded: `POST`
//! (its message client to agent, its answer's body agent to client), `GET`
//! (each event of the stream agent to client), `DELETE` (ends the
//! connection's trace); a WebSocket upgrade goes to [`super::ws`].

use super::connection::Connection;
use super::tap::{NoRoom, Stalled, Tap, TooLarge};
use super::{
    end_to_end, facts, header_text, headers_json, own_answer, Proxy, CONNECTION_ID, MAX_CONNECTIONS, MAX_MESSAGE_BYTES,
    SESSION_ID,
};
use acp_tee_shared::Direction;
use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::{header, request::Parts, Method, StatusCode};
use axum::response::Response;
use std::sync::Arc;

/// The ids an exchange names in its headers.
struct Ids {
    connection: Option<String>,
    session: Option<String>,
}

/// Handles one request on the ACP endpoint.
pub async fn handle(State(proxy): State<Arc<Proxy>>, req: Request) -> Response {
    if is_websocket_upgrade(&req) {
        return super::ws::relay(proxy, req).await;
    }
    let (parts, body) = req.into_parts();
    let addr = super::client_addr(&parts);
    let ids = Ids {
        connection: header_text(&parts.headers, &CONNECTION_ID),
        session: header_text(&parts.headers, &SESSION_ID),
    };
    let known = ids.connection.as_deref().and_then(|id| proxy.registry.get(id));
    // A first message's room in FIRST_GATHER_BYTES, held until it has gone on.
    let mut first_room = None;
    let (conn, fresh, body) = match known {
        Some(conn) => (conn, false, body),
        // The initialize: it takes a recording (a slot, a recorder process)
        // only once its message is whole, so a client that stalls takes none.
        None if parts.method == Method::POST && ids.connection.is_none() => {
            let whole = match super::gather::initialize(&parts.headers, body).await {
                Ok((whole, room)) => {
                    first_room = Some(room);
                    whole
                }
                Err(refused) => return refused.answer(),
            };
            let Some(conn) = Connection::start(&proxy.record) else { return too_many() };
            (conn, true, Body::from(whole))
        }
        // A connection the proxy never saw begin (a made-up id, or one from
        // before the proxy started), a GET or DELETE naming none, a CORS
        // preflight: no connection to record it in.
        None => return proxy.pass_on_unrecorded(parts, body).await,
    };
    let method = parts.method.clone();
    let body = if method == Method::POST {
        let declared = parts.headers.get(header::CONTENT_LENGTH).and_then(|v| v.to_str().ok()?.parse::<u64>().ok());
        if declared.is_some_and(|n| n > MAX_MESSAGE_BYTES as u64) {
            conn.note(format!(
                "a POST of {} bytes was refused (413): more than MAX_MESSAGE_BYTES ({MAX_MESSAGE_BYTES} bytes)",
                declared.unwrap_or_default()
            ));
            proxy.unknown_ends(fresh, &ids, &conn, "its first POST was refused as too large");
            return too_large();
        }
        let facts = facts(serde_json::json!({
            "transport": "http", "via": "post",
            "connectionId": ids.connection, "sessionId": ids.session,
            "httpHeaders": headers_json(&parts.headers),
        }));
        Body::new(
            Tap::whole(body, conn.clone(), Direction::ClientToAgent, facts, "a POST's body".into())
                .from(addr)
                .coded(&parts.headers)
                .refusing_oversized(),
        )
    } else {
        // ACP's GET and DELETE carry no message.
        body
    };
    let request = proxy.upstream_request(&parts, body, false);
    let awaiting = Awaiting { conn: &conn, fresh, method: &method, answered: false };
    let answered = proxy.client.request(request).await;
    awaiting.answered();
    // The first message has gone on whole by now.
    drop(first_room);
    let response = match answered {
        Ok(response) => response,
        Err(e) if caused_by::<TooLarge>(&e) => {
            proxy.unknown_ends(fresh, &ids, &conn, "its first POST was refused as too large");
            return too_large();
        }
        Err(e) if caused_by::<Stalled>(&e) => {
            proxy.unknown_ends(fresh, &ids, &conn, "its first POST stalled");
            return super::gather::Refused::Stalled.answer();
        }
        Err(e) if caused_by::<NoRoom>(&e) => {
            proxy.unknown_ends(fresh, &ids, &conn, "its first POST was refused: no room to gather it");
            return own_answer(StatusCode::SERVICE_UNAVAILABLE, format!("{NoRoom}; try again"));
        }
        Err(e) => {
            let error = format!("the upstream {} failed for {method}: {}", proxy.upstream.shown, error_chain(&e));
            conn.note(&error);
            proxy.unknown_ends(fresh, &ids, &conn, &error);
            return own_answer(StatusCode::BAD_GATEWAY, format!("acp-tee http-proxy: {error}"));
        }
    };
    let (mut head, body) = response.into_parts();
    let status = head.status;
    let answered_id = header_text(&head.headers, &CONNECTION_ID);
    match (&ids.connection, &answered_id) {
        // The initialize: the connection is known by its id from now on.
        (None, Some(id)) => proxy.registry.insert(id.clone(), conn.clone()),
        (None, None) => {
            conn.fail_because(format!("{method} without a connection id was answered {status} without one"))
        }
        (Some(id), _) if status == StatusCode::NOT_FOUND => proxy
            .registry
            .forget_failed(id, format!("the upstream does not know connection {id} ({method} answered 404)")),
        (Some(id), _) if method == Method::DELETE && status.is_success() => {
            proxy.registry.forget(id, format!("the client ended the connection (DELETE answered {status})"))
        }
        _ => {}
    }
    let connection = answered_id.or(ids.connection);
    let sse = head.headers.get(header::CONTENT_TYPE).and_then(|v| v.to_str().ok()).is_some_and(is_event_stream);
    let body = if sse {
        let stream = match (&method, &ids.session) {
            (&Method::POST, _) => "post",
            (_, Some(_)) => "session",
            _ => "connection",
        };
        let what = match &ids.session {
            Some(session) if stream == "session" => format!("the SSE stream of session {session}"),
            _ => format!("the SSE {stream} stream"),
        };
        conn.note(format!("{method}: {what} opened ({status})"));
        let facts = facts(serde_json::json!({
            "transport": "http", "via": "sse", "stream": stream, "status": status.as_u16(),
            "connectionId": connection, "sessionId": ids.session,
        }));
        Body::new(Tap::events(body, conn, Direction::AgentToClient, facts, what).from(addr).coded(&head.headers))
    } else {
        if !status.is_success() || method != Method::POST {
            conn.note(format!("{method} answered {status}"));
        }
        let facts = facts(serde_json::json!({
            "transport": "http", "via": format!("{} response", method.as_str().to_lowercase()),
            "status": status.as_u16(), "connectionId": connection, "sessionId": ids.session,
            "httpHeaders": headers_json(&head.headers),
        }));
        let what = format!("the answer to a {method}");
        Body::new(Tap::whole(body, conn, Direction::AgentToClient, facts, what).from(addr).coded(&head.headers))
    };
    head.headers = end_to_end(&head.headers, false);
    Response::from_parts(head, body)
}

/// An exchange waiting for the upstream's answer. Dropped unanswered, the
/// client went away first (hyper drops the exchange then): that is noted,
/// and a connection begun by it fails so.
struct Awaiting<'a> {
    conn: &'a Connection,
    fresh: bool,
    method: &'a Method,
    answered: bool,
}

impl Awaiting<'_> {
    fn answered(mut self) {
        self.answered = true;
    }
}

impl Drop for Awaiting<'_> {
    fn drop(&mut self) {
        if self.answered {
            return;
        }
        let what = if super::STOPPING.load(std::sync::atomic::Ordering::Relaxed) {
            format!("the proxy stopped before the upstream answered a {}", self.method)
        } else {
            format!("the client went away before the upstream answered its {}", self.method)
        };
        self.conn.note(&what);
        if self.fresh {
            self.conn.fail_because(what);
        }
    }
}

impl Proxy {
    /// Passes a request that belongs to no recorded connection on as it
    /// came, and its answer back, recording neither: what the upstream
    /// says to it (a 400, a 404 for a made-up id) is the client's to see.
    async fn pass_on_unrecorded(&self, parts: Parts, body: Body) -> Response {
        let method = parts.method.clone();
        let request = self.upstream_request(&parts, body, false);
        match self.client.request(request).await {
            Ok(response) => {
                let (mut head, body) = response.into_parts();
                head.headers = end_to_end(&head.headers, false);
                Response::from_parts(head, Body::new(body))
            }
            Err(e) => {
                let error = format!("the upstream {} failed for {method}: {}", self.upstream.shown, error_chain(&e));
                own_answer(StatusCode::BAD_GATEWAY, format!("acp-tee http-proxy: {error}"))
            }
        }
    }

    /// The exchange failed for `reason`: a connection begun by it (`fresh`)
    /// is forgotten, its trace ended.
    fn unknown_ends(&self, fresh: bool, ids: &Ids, conn: &Connection, reason: &str) {
        match (&ids.connection, fresh) {
            (Some(id), true) => self.registry.forget_failed(id, reason),
            (None, _) => conn.fail_because(reason),
            (Some(_), false) => {}
        }
    }

    /// The request passed on upstream: the same method, the upstream's
    /// endpoint with the request's query, the end-to-end headers (with an
    /// `Accept-Encoding` of the codings the proxy decodes), `body`.
    pub(super) fn upstream_request(&self, parts: &Parts, body: Body, upgrade: bool) -> axum::http::Request<Body> {
        let mut request = axum::http::Request::new(body);
        *request.method_mut() = parts.method.clone();
        *request.uri_mut() = self.upstream.with_query(parts.uri.query());
        *request.headers_mut() = end_to_end(&parts.headers, upgrade);
        // Only codings the proxy can decode for the recording.
        request.headers_mut().insert(header::ACCEPT_ENCODING, super::coding::accepted(&parts.headers));
        if let Some(basic) = &self.upstream.basic {
            // The URL's userinfo, unless the client brought credentials of its own.
            request.headers_mut().entry(header::AUTHORIZATION).or_insert_with(|| basic.clone());
        }
        request
    }
}

fn is_event_stream(content_type: &str) -> bool {
    content_type.split(';').next().is_some_and(|t| t.trim().eq_ignore_ascii_case("text/event-stream"))
}

fn is_websocket_upgrade(req: &Request) -> bool {
    req.method() == Method::GET
        && req
            .headers()
            .get(header::UPGRADE)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v.trim().eq_ignore_ascii_case("websocket"))
}

pub(super) fn too_many() -> Response {
    own_answer(
        StatusCode::SERVICE_UNAVAILABLE,
        format!(
            "acp-tee http-proxy records at most MAX_CONNECTIONS ({MAX_CONNECTIONS}) connections at once; \
             end one (DELETE) or start another proxy"
        ),
    )
}

fn too_large() -> Response {
    own_answer(StatusCode::PAYLOAD_TOO_LARGE, format!("acp-tee http-proxy: {TooLarge}; send smaller messages"))
}

/// True when the upstream request failed because its body was refused so.
fn caused_by<E: std::error::Error + 'static>(e: &(dyn std::error::Error + 'static)) -> bool {
    let mut cause = Some(e);
    while let Some(c) = cause {
        if c.is::<E>() {
            return true;
        }
        cause = c.source();
    }
    false
}

/// An error and its causes in one line.
fn error_chain(e: &(dyn std::error::Error + 'static)) -> String {
    let mut text = e.to_string();
    let mut cause = e.source();
    while let Some(c) = cause {
        let said = c.to_string();
        if !text.contains(&said) {
            text.push_str(": ");
            text.push_str(&said);
        }
        cause = c.source();
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn event_streams_are_told_by_their_content_type() {
        assert!(is_event_stream("text/event-stream"));
        assert!(is_event_stream("Text/Event-Stream; charset=utf-8"));
        assert!(!is_event_stream("application/json"));
    }
}
