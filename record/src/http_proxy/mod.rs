//! `acp-tee http-proxy`: a reverse proxy for ACP's Streamable HTTP and
//! WebSocket transport, recording every connection.
//!
//! The proxy serves one endpoint, [`ACP_PATH`], and passes each request on
//! to the upstream URL: `POST` (a message; the `initialize` answer carries
//! `Acp-Connection-Id`, later posts are answered `202 Accepted`), `GET` (a
//! Server-Sent Events stream, per connection or per `Acp-Session-Id`),
//! `DELETE` (the connection ends), and the WebSocket upgrade (text frames,
//! one message each). Headers go on as they came but for the hop-by-hop
//! ones (and `Host`, which names the upstream); bodies stream both ways.
//!
//! Each ACP connection is one trace ([`connection::Connection`]): its own
//! recorder process, the same framer, pairing and store as stdio. A
//! message is queued for recording before it is passed on ([`tap::Tap`],
//! [`ws`]), and each frame keeps its transport facts as its envelope (a
//! JSON object: `transport`, `via`, `status`, `connectionId`, `sessionId`,
//! `httpHeaders`). What happens to the connection itself (streams opened
//! and ended, errors, refusals) is noted on the trace's stderr lane, each
//! line starting `http-proxy: `.
//!
//! Architecture Invariant: the proxy never reorders, merges or alters what
//! it passes on; nothing waits on the store on a forwarding task (the
//! queue, bounded by [`RECORD_QUEUE_BYTES`], holds a message back when
//! full, never drops it), and no message held in memory exceeds
//! [`MAX_MESSAGE_BYTES`].

mod coding;
mod connection;
mod exchange;
mod gather;
mod memory;
mod sse;
mod tap;
mod upstream;
mod ws;

use anyhow::Context as _;
use axum::body::Body;
use axum::http::{header, HeaderMap, HeaderName, HeaderValue};
use connection::{RecordTo, Registry};
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// The one endpoint the proxy serves.
pub const ACP_PATH: &str = "/acp";

/// The largest message (a `POST` body, an SSE event's data, a WebSocket
/// message, an answer's body) the proxy records. A larger `POST` body is
/// refused with 413 (nothing of it recorded, the upstream gets a cut body
/// or none); a larger event or answer is passed on unrecorded and noted; a
/// larger WebSocket message closes that WebSocket with 1009.
pub const MAX_MESSAGE_BYTES: usize = 16 << 20;

/// Bytes the proxy holds of live connections' messages at once, at most,
/// counting every copy both ways from a message's first byte read until it
/// is in its recorder's pipe: bodies and events being gathered, WebSocket
/// messages, messages waiting for or in a connection's record queue (see
/// [`memory`]). A `POST` or WebSocket message of known size waits for room
/// (a `POST` still waiting at [`gather::BODY_DEADLINE`] is answered 503); a
/// body or event that grows as it comes and finds none is refused (a
/// `POST`, 503) or passed on unrecorded (an event, an answer) and noted.
pub const LIVE_BYTES: usize = 256 << 20;

/// Bytes of [`LIVE_BYTES`] one connection holds at once, at most: a
/// message each way, one in its queue and one more.
pub const CONNECTION_BYTES: usize = 4 * MAX_MESSAGE_BYTES;

/// Bytes of [`LIVE_BYTES`] the connections of one client address hold at
/// once, at most.
pub const ADDRESS_BYTES: usize = LIVE_BYTES / 2;

/// Bytes of messages the proxy holds in memory at most, every copy counted:
/// [`LIVE_BYTES`] for live connections and [`gather::FIRST_GATHER_BYTES`]
/// for first messages.
pub const MEMORY_BYTES: usize = LIVE_BYTES + gather::FIRST_GATHER_BYTES;

/// Bytes each recorder process of the proxy holds at most beyond what it
/// holds once its trace exists. A message of up to [`MAX_MESSAGE_BYTES`]
/// is in it about six times over on its way (read from the pipe, spooled,
/// framed, queued, parsed, stored), as `tee/tests/it/http_proxy/memory.rs` and
/// `scripts/bench` measure; this leaves room above that.
pub const RECORDER_BYTES: usize = 8 * MAX_MESSAGE_BYTES;

/// The proxy's memory bound, one number: [`MEMORY_BYTES`] in the proxy and
/// [`RECORDER_BYTES`] in each of at most [`MAX_CONNECTIONS`] recorder
/// processes, beyond what each process holds once started.
pub const PEAK_BYTES: usize = MEMORY_BYTES + MAX_CONNECTIONS * RECORDER_BYTES;

/// Allocations from this size up are mapped on their own, in the proxy and
/// its recorders, and so given back to the system once let go.
const MMAP_THRESHOLD: usize = 1 << 20;

/// Bytes of messages per connection waiting to be handed to its recorder
/// process, at most; past that, forwarding waits. (They count in
/// [`CONNECTION_BYTES`] too.)
pub const RECORD_QUEUE_BYTES: usize = 16 << 20;

/// Connections recorded at once, at most (each has a recorder process);
/// past that, new ones are answered 503.
pub const MAX_CONNECTIONS: usize = 64;

/// How long connecting to the upstream may take.
pub const UPSTREAM_CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// How long the proxy, once stopped, waits at most for its connections'
/// queues to reach their recorders.
pub const STOP_WAIT: Duration = Duration::from_secs(5);

/// The `Acp-Connection-Id` header.
pub const CONNECTION_ID: HeaderName = HeaderName::from_static("acp-connection-id");

/// The `Acp-Session-Id` header.
pub const SESSION_ID: HeaderName = HeaderName::from_static("acp-session-id");

/// Set once the proxy is stopping (what ends then is noted so).
static STOPPING: AtomicBool = AtomicBool::new(false);

/// What `acp-tee http-proxy` was asked to do.
#[derive(Debug, Clone)]
pub struct HttpProxyOptions {
    /// Where to listen.
    pub listen: SocketAddr,
    /// The upstream ACP endpoint (`http://`, `https://`, `ws://` or `wss://`).
    pub upstream: String,
    /// The store to record into.
    pub db: PathBuf,
    /// The traces' name.
    pub name: String,
    /// Mask secrets in what is stored (default rules plus these).
    pub redact: Option<Vec<String>>,
    /// A connection with no exchange under way and nothing crossing for
    /// this long is forgotten (its trace ends).
    pub idle: Duration,
}

/// The upstream client: HTTP/1.1, plain or TLS with the system's roots.
type Upstream = Client<hyper_rustls::HttpsConnector<HttpConnector>, Body>;

/// What the handlers share.
struct Proxy {
    client: Upstream,
    /// The upstream endpoint, `http` or `https`.
    upstream: upstream::UpstreamUrl,
    record: RecordTo,
    registry: Registry,
    /// Why the proxy stops, once it does: each open WebSocket closes with
    /// 1001 then, and its trace says so.
    stop: tokio::sync::watch::Sender<Option<String>>,
    /// Held by each WebSocket relay: the proxy waits (at most
    /// [`WEBSOCKETS_CLOSE_WAIT`]) for all to drop theirs once it stops.
    websockets: std::sync::Mutex<Option<tokio::sync::mpsc::Sender<()>>>,
}

/// How long a stopping proxy waits for its WebSockets to send their close.
const WEBSOCKETS_CLOSE_WAIT: Duration = Duration::from_secs(2);

/// Runs the proxy until SIGINT, SIGTERM or SIGHUP; returns the exit code.
pub fn run(opts: HttpProxyOptions) -> anyhow::Result<i32> {
    let upstream = upstream::UpstreamUrl::parse(&opts.upstream)?;
    give_back_large_allocations();
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build()?;
    let served = runtime.block_on(serve(opts, upstream));
    STOPPING.store(true, Ordering::Relaxed);
    // The tasks still passing bodies on are dropped here; their
    // connections' traces end once their queues are handed on.
    runtime.shutdown_timeout(Duration::from_millis(100));
    connection::wait_for_recordings(STOP_WAIT);
    served.map(|()| 0)
}

/// Makes allocations of [`MMAP_THRESHOLD`] and up mapped on their own, in
/// this process and the recorders it starts (they inherit the variable).
/// Messages of up to [`MAX_MESSAGE_BYTES`] come and go; by default glibc,
/// once such a block is freed, serves blocks up to 32 MiB from its arenas
/// and keeps there what they let go: memory no bound counts (the proxy held
/// 700 MiB so with 320 MiB of messages).
fn give_back_large_allocations() {
    // Before the runtime starts: no other thread reads the environment yet.
    std::env::set_var("MALLOC_MMAP_THRESHOLD_", MMAP_THRESHOLD.to_string());
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: mallopt only sets an allocator parameter.
    unsafe {
        libc::mallopt(libc::M_MMAP_THRESHOLD, MMAP_THRESHOLD as libc::c_int);
    }
}

/// Builds the upstream client.
fn client(https: bool) -> anyhow::Result<Upstream> {
    let mut http = HttpConnector::new();
    http.enforce_http(false);
    http.set_nodelay(true);
    http.set_connect_timeout(Some(UPSTREAM_CONNECT_TIMEOUT));
    let tls = match hyper_rustls::HttpsConnectorBuilder::new().with_native_roots() {
        Ok(builder) => builder,
        Err(e) if https => {
            anyhow::bail!(
                "cannot read the system's root certificates for an https upstream ({e}); install ca-certificates"
            )
        }
        // A plain upstream needs no roots.
        Err(_) => hyper_rustls::HttpsConnectorBuilder::new().with_tls_config(
            rustls::ClientConfig::builder()
                .with_root_certificates(rustls::RootCertStore::empty())
                .with_no_client_auth(),
        ),
    };
    let connector = tls.https_or_http().enable_http1().wrap_connector(http);
    Ok(Client::builder(TokioExecutor::new()).build(connector))
}

async fn serve(opts: HttpProxyOptions, upstream: upstream::UpstreamUrl) -> anyhow::Result<()> {
    let client = client(upstream.uri.scheme_str() == Some("https"))?;
    let listener = tokio::net::TcpListener::bind(opts.listen)
        .await
        .with_context(|| format!("cannot listen on {}; pass another --listen", opts.listen))?;
    let addr = listener.local_addr()?;
    // The trace's command shows the upstream without its credentials.
    let record =
        RecordTo { db: opts.db.clone(), name: opts.name, upstream: upstream.shown.clone(), redact: opts.redact };
    let shown = upstream.shown.clone();
    let (websockets, mut websockets_closed) = tokio::sync::mpsc::channel(1);
    let proxy = Arc::new(Proxy {
        client,
        upstream,
        record,
        registry: Registry::default(),
        stop: tokio::sync::watch::Sender::new(None),
        websockets: std::sync::Mutex::new(Some(websockets)),
    });
    let app = axum::Router::new().route(ACP_PATH, axum::routing::any(exchange::handle)).with_state(proxy.clone());
    // The address is what a test (or a script) reads to know the port.
    // (A closed stdout is no reason to stop.)
    {
        use std::io::Write as _;
        let mut stdout = std::io::stdout().lock();
        let _ = writeln!(
            stdout,
            "acp-tee: http-proxy at http://{addr}{ACP_PATH} to {shown}, recording into {}",
            opts.db.display()
        )
        .and_then(|()| stdout.flush());
    }
    let stopped = tokio::select! {
        served = accept(listener, app) => served.map(|()| None).map_err(anyhow::Error::from),
        signal = stop_signal() => Ok(Some(signal)),
        () = forget_idle(&proxy, opts.idle) => unreachable!("forgetting idle connections never ends"),
    };
    STOPPING.store(true, Ordering::Relaxed);
    let reason = match stopped {
        Ok(Some(signal)) => format!("the proxy was stopped by signal {signal}"),
        _ => "the proxy stopped".to_owned(),
    };
    proxy.stop.send_replace(Some(reason.clone()));
    proxy.registry.forget_all(&reason);
    // Each WebSocket sends its close (1001) both ways before the runtime goes.
    drop(proxy.websockets.lock().unwrap_or_else(|e| e.into_inner()).take());
    let _ = tokio::time::timeout(WEBSOCKETS_CLOSE_WAIT, websockets_closed.recv()).await;
    stopped.map(|_| ())
}

/// How long a client may take to send a request's headers (the first
/// request of a connection and each one after): a socket that sends part
/// of its headers and stalls is closed then, as is one kept open with
/// nothing sent.
pub const HEADER_TIMEOUT: Duration = Duration::from_secs(10);

/// Request headers taken, at most (hyper refuses more with 431).
pub const MAX_HEADERS: usize = 1000;

/// Serves `app` on every connection `listener` accepts, with
/// [`HEADER_TIMEOUT`] and WebSocket upgrades (what `axum::serve` does, with
/// the time limit it has no way to set).
async fn accept(listener: tokio::net::TcpListener, app: axum::Router) -> std::io::Result<()> {
    use hyper_util::rt::{TokioIo, TokioTimer};
    loop {
        let stream = match listener.accept().await {
            Ok((stream, _)) => stream,
            // Out of descriptors and the like: the listener itself is fine.
            Err(e) => {
                tracing::debug!("http-proxy: accept failed: {e}");
                tokio::time::sleep(Duration::from_millis(10)).await;
                continue;
            }
        };
        let _ = stream.set_nodelay(true);
        let peer = ClientAddr(stream.peer_addr().map_or(std::net::Ipv4Addr::UNSPECIFIED.into(), |a| a.ip()));
        // Each request carries its client's address (one route: cheap).
        let service = hyper_util::service::TowerToHyperService::new(app.clone().layer(axum::Extension(peer)));
        tokio::spawn(async move {
            let served = hyper::server::conn::http1::Builder::new()
                .timer(TokioTimer::new())
                .header_read_timeout(HEADER_TIMEOUT)
                .max_headers(MAX_HEADERS)
                // A header line that is not valid HTTP (a control byte in
                // its value) is left out, not the request refused, as the
                // servers the proxy fronts do not refuse it either.
                .ignore_invalid_headers(true)
                .serve_connection(TokioIo::new(stream), service)
                .with_upgrades()
                .await;
            if let Err(e) = served {
                tracing::debug!("http-proxy: a client connection ended: {e}");
            }
        });
    }
}

/// The address of the client a request came from (an extension of each
/// request): its connections share [`ADDRESS_BYTES`].
#[derive(Debug, Clone, Copy)]
struct ClientAddr(std::net::IpAddr);

/// The address `parts` came from.
fn client_addr(parts: &axum::http::request::Parts) -> std::net::IpAddr {
    parts.extensions.get::<ClientAddr>().map_or(std::net::Ipv4Addr::UNSPECIFIED.into(), |a| a.0)
}

/// Forgets idle connections (see [`Registry::forget_idle`]), looking a few
/// times per `idle`.
async fn forget_idle(proxy: &Proxy, idle: Duration) {
    let mut every = tokio::time::interval((idle / 4).clamp(Duration::from_millis(100), Duration::from_secs(30)));
    loop {
        every.tick().await;
        proxy.registry.forget_idle(idle);
    }
}

/// The first of SIGINT, SIGTERM and SIGHUP.
async fn stop_signal() -> i32 {
    use tokio::signal::unix::{signal, SignalKind};
    let (Ok(mut int), Ok(mut term), Ok(mut hup)) =
        (signal(SignalKind::interrupt()), signal(SignalKind::terminate()), signal(SignalKind::hangup()))
    else {
        return std::future::pending().await;
    };
    tokio::select! {
        _ = int.recv() => libc::SIGINT,
        _ = term.recv() => libc::SIGTERM,
        _ = hup.recv() => libc::SIGHUP,
    }
}

/// Headers that belong to one hop and are not passed on (RFC 9110 7.6.1),
/// besides those the `Connection` header names.
const HOP_BY_HOP: [HeaderName; 8] = [
    header::CONNECTION,
    HeaderName::from_static("keep-alive"),
    HeaderName::from_static("proxy-connection"),
    header::TE,
    header::TRAILER,
    header::TRANSFER_ENCODING,
    header::UPGRADE,
    header::HOST,
];

/// `headers` without the hop-by-hop ones; with `upgrade`, `Connection` and
/// `Upgrade` stay (a WebSocket handshake is passed on as one), and
/// `Sec-WebSocket-Extensions` goes (the proxy reads the frames, and
/// compressed ones it could not).
fn end_to_end(headers: &HeaderMap, upgrade: bool) -> HeaderMap {
    let named: Vec<HeaderName> = headers
        .get_all(header::CONNECTION)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .filter_map(|name| HeaderName::try_from(name.trim()).ok())
        .collect();
    let mut out = HeaderMap::with_capacity(headers.len());
    for (name, value) in headers {
        let keep_for_upgrade = upgrade && (name == header::CONNECTION || name == header::UPGRADE);
        let hop =
            HOP_BY_HOP.contains(name) || named.contains(name) || (upgrade && name == header::SEC_WEBSOCKET_EXTENSIONS);
        if keep_for_upgrade || !hop {
            out.append(name.clone(), value.clone());
        }
    }
    out
}

/// The value of header `name`, when it is text.
fn header_text(headers: &HeaderMap, name: &HeaderName) -> Option<String> {
    headers.get(name).and_then(|v| v.to_str().ok()).map(str::to_owned)
}

/// The headers as a JSON object for the transport facts (a repeated header
/// is an array). Values named like secrets (`Authorization`, `Cookie`,
/// `Set-Cookie`, `*-Key`, `*-Token`) are masked in exports and by `serve`,
/// as the default redaction masks every member named so.
fn headers_json(headers: &HeaderMap) -> serde_json::Value {
    let mut map = serde_json::Map::new();
    for name in headers.keys() {
        let values: Vec<serde_json::Value> =
            headers.get_all(name).iter().map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned().into()).collect();
        let value = if values.len() == 1 { values.into_iter().next().unwrap_or_default() } else { values.into() };
        map.insert(name.as_str().to_owned(), value);
    }
    map.into()
}

/// The transport facts as the bytes stored in a frame's envelope.
fn facts(value: serde_json::Value) -> Arc<[u8]> {
    serde_json::to_vec(&value).unwrap_or_default().into()
}

/// A JSON error answer of the proxy's own (the upstream was not asked, or
/// failed).
fn own_answer(status: axum::http::StatusCode, error: String) -> axum::response::Response {
    let mut response = axum::response::Response::new(Body::from(serde_json::json!({ "error": error }).to_string()));
    *response.status_mut() = status;
    response.headers_mut().insert(header::CONTENT_TYPE, HeaderValue::from_static("application/json"));
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hop_by_hop_headers_stay_behind_and_the_rest_goes_on() {
        let mut h = HeaderMap::new();
        h.insert(header::CONNECTION, HeaderValue::from_static("keep-alive, x-hop"));
        h.insert("x-hop", HeaderValue::from_static("1"));
        h.insert(header::HOST, HeaderValue::from_static("proxy:1"));
        h.insert(header::AUTHORIZATION, HeaderValue::from_static("Bearer t"));
        h.insert(header::UPGRADE, HeaderValue::from_static("websocket"));
        h.insert(header::SEC_WEBSOCKET_EXTENSIONS, HeaderValue::from_static("permessage-deflate"));
        h.append(header::COOKIE, HeaderValue::from_static("a=1"));
        h.append(header::COOKIE, HeaderValue::from_static("b=2"));
        let plain = end_to_end(&h, false);
        let names: Vec<&str> = plain.keys().map(HeaderName::as_str).collect();
        assert_eq!(names, ["authorization", "sec-websocket-extensions", "cookie"]);
        assert_eq!(plain.get_all(header::COOKIE).iter().count(), 2);
        let upgrade = end_to_end(&h, true);
        let names: Vec<&str> = upgrade.keys().map(HeaderName::as_str).collect();
        assert_eq!(names, ["connection", "authorization", "upgrade", "cookie"]);
    }
}
