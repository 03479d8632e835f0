//! The typed client of the `acp-tee serve` API: every call returns the shared payload types.
//!
//! Nothing here draws; the live stream hands decoded payloads to the closures it is given.

use acp_tee_shared::api::{
    ApiError, Capabilities, FindQuery, FindStep, FrameDetail, FramePage, FrameQuery, FrameSummary, InFlight, MatchList,
    RangeSummary, RequestPage, RequestQuery, SearchQuery, TraceChange, TraceFamily, TraceOverview, TraceSearch,
    TraceStats, TraceSummary,
};
use acp_tee_shared::check::TraceFindings;
use acp_tee_shared::session::{SessionDetail, SessionsQuery, TraceSessions, TurnQuery};
use gloo_net::http::Request;
use serde::de::DeserializeOwned;
use std::fmt;
use wasm_bindgen::closure::Closure;
use wasm_bindgen::JsCast;
use web_sys::{Event, EventSource, MessageEvent};

/// Why a call failed: the HTTP status when the server answered, and words for the page.
#[derive(Clone, Debug, PartialEq)]
pub struct ApiFailure {
    /// The status of the server's answer; `None` when it could not be reached.
    pub status: Option<u16>,
    /// What went wrong, for a person.
    pub message: String,
}

impl ApiFailure {
    fn unreachable(e: impl fmt::Display) -> ApiFailure {
        ApiFailure {
            status: None,
            message: format!("cannot reach the acp-tee server ({e}); is `acp-tee serve` still running?"),
        }
    }

    /// True when the server said the thing asked for does not exist.
    pub fn is_not_found(&self) -> bool {
        self.status == Some(404)
    }
}

impl fmt::Display for ApiFailure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

async fn get<T: DeserializeOwned>(url: &str) -> Result<T, ApiFailure> {
    let resp = Request::get(url).send().await.map_err(ApiFailure::unreachable)?;
    read(url, resp).await
}

/// The status of a failed answer and the server's `{"error"}` message (or the start of its body).
async fn refusal(resp: gloo_net::http::Response) -> (u16, String) {
    let status = resp.status();
    let body = resp.text().await.unwrap_or_default();
    let why = match serde_json::from_str::<ApiError>(&body) {
        Ok(e) => e.error,
        Err(_) => body.trim().chars().take(200).collect(),
    };
    (status, why)
}

async fn read<T: DeserializeOwned>(url: &str, resp: gloo_net::http::Response) -> Result<T, ApiFailure> {
    if !resp.ok() {
        let (status, why) = refusal(resp).await;
        return Err(ApiFailure { status: Some(status), message: format!("{url} answered {status}: {why}") });
    }
    resp.json::<T>().await.map_err(|e| ApiFailure {
        status: Some(resp.status()),
        message: format!("{url} answered something unexpected: {e}"),
    })
}

/// What this server lets this page do (whether it may change traces).
pub async fn capabilities() -> Result<Capabilities, ApiFailure> {
    get("/api/capabilities").await
}

/// Renames, pins or unpins a trace; returns it as changed. A failure's message is the server's words.
pub async fn change_trace(id: i64, change: &TraceChange) -> Result<TraceSummary, ApiFailure> {
    let url = format!("/api/traces/{id}");
    let resp = Request::patch(&url)
        .json(change)
        .map_err(|e| ApiFailure { status: None, message: format!("cannot send the change: {e}") })?
        .send()
        .await
        .map_err(ApiFailure::unreachable)?;
    if !resp.ok() {
        let (status, why) = refusal(resp).await;
        return Err(ApiFailure { status: Some(status), message: why });
    }
    read(&url, resp).await
}

/// Deletes a trace for good. A failure's message is the server's words.
pub async fn delete_trace(id: i64) -> Result<(), ApiFailure> {
    let resp = Request::delete(&format!("/api/traces/{id}")).send().await.map_err(ApiFailure::unreachable)?;
    if !resp.ok() {
        let (status, why) = refusal(resp).await;
        return Err(ApiFailure { status: Some(status), message: why });
    }
    Ok(())
}

/// Every trace in the store, newest first.
pub async fn traces() -> Result<Vec<TraceSummary>, ApiFailure> {
    get("/api/traces").await
}

/// One trace.
pub async fn trace(id: i64) -> Result<TraceSummary, ApiFailure> {
    get(&format!("/api/traces/{id}")).await
}

/// One page of a trace's frames under filters.
pub async fn frames(id: i64, query: &FrameQuery) -> Result<FramePage, ApiFailure> {
    get(&format!("/api/traces/{id}/frames{}", query_string(query))).await
}

/// The next (`after`) or previous (`before`) frame holding the words of `query.find`, wrapping around.
pub async fn find(id: i64, query: &FindQuery) -> Result<FindStep, ApiFailure> {
    get(&format!("/api/traces/{id}/find{}", query_string(query))).await
}

/// Which frames from `query.from` to `query.to` hold the words of `query.find`.
pub async fn matches(id: i64, query: &FindQuery) -> Result<MatchList, ApiFailure> {
    get(&format!("/api/traces/{id}/matches{}", query_string(query))).await
}

/// The traces whose frames hold the words of `q`.
pub async fn search(q: &str) -> Result<TraceSearch, ApiFailure> {
    get(&format!("/api/search{}", query_string(&SearchQuery { q: Some(q.to_owned()) }))).await
}

/// One frame with its bytes and its pair: the start of its bytes (the
/// server's limit) unless `whole`.
pub async fn frame(id: i64, seq: i64, whole: bool) -> Result<FrameDetail, ApiFailure> {
    let limit = if whole { "?max_bytes=0" } else { "" };
    get(&format!("/api/traces/{id}/frames/{seq}{limit}")).await
}

/// The address of a frame's exact bytes (masked as the detail is).
pub fn frame_raw_url(id: i64, seq: i64) -> String {
    format!("/api/traces/{id}/frames/{seq}/raw")
}

/// A trace's parent and children (the MCP servers its agent started, recorded as traces of their own).
pub async fn family(id: i64) -> Result<TraceFamily, ApiFailure> {
    get(&format!("/api/traces/{id}/family")).await
}

/// Per-method timing of a trace.
pub async fn stats(id: i64) -> Result<TraceStats, ApiFailure> {
    get(&format!("/api/traces/{id}/stats")).await
}

/// Trace `b` compared with trace `a` (`acp-tee diff a b`).
pub async fn diff(a: i64, b: i64) -> Result<acp_tee_shared::diff::TraceDiff, ApiFailure> {
    get(&format!("/api/diff/{a}/{b}")).await
}

/// The ACP sessions of a trace and its open requests, as of frame `to` when given (a replay's cursor).
pub async fn sessions(id: i64, to: Option<i64>) -> Result<TraceSessions, ApiFailure> {
    get(&format!("/api/traces/{id}/sessions{}", query_string(&SessionsQuery { to }))).await
}

/// A trace's frames, errors, open requests, sessions and findings per interval of its time, in the
/// server's default number of buckets (which it prepares while serving the trace's page).
pub async fn overview(id: i64) -> Result<TraceOverview, ApiFailure> {
    get(&format!("/api/traces/{id}/overview")).await
}

/// What the frames of a range of seqs add up to.
pub async fn range(id: i64, from: i64, to: i64) -> Result<RangeSummary, ApiFailure> {
    get(&format!("/api/traces/{id}/range?from={from}&to={to}")).await
}

/// What the protocol checks found in a trace.
pub async fn findings(id: i64) -> Result<TraceFindings, ApiFailure> {
    get(&format!("/api/traces/{id}/findings")).await
}

/// A page of the trace's request table, sorted and paged as `query` asks.
pub async fn requests(id: i64, query: &RequestQuery) -> Result<RequestPage, ApiFailure> {
    get(&format!("/api/traces/{id}/requests{}", query_string(query))).await
}

/// The requests in flight over frame `at`: sent before it, answered after it or never.
pub async fn in_flight(id: i64, at: i64) -> Result<InFlight, ApiFailure> {
    get(&format!("/api/traces/{id}/in_flight?at={at}")).await
}

/// One session of a trace with the page of its turns from `offset` on (at most `limit`), as of frame `to`
/// when given (a replay's cursor).
pub async fn session(
    id: i64,
    sid: &str,
    offset: u64,
    limit: u32,
    to: Option<i64>,
) -> Result<SessionDetail, ApiFailure> {
    let sid = String::from(js_sys::encode_uri_component(sid));
    let query = TurnQuery { offset: Some(offset), limit: Some(limit), to };
    get(&format!("/api/traces/{id}/sessions/{sid}{}", query_string(&query))).await
}

/// The address of a trace's export in a format (`json`, `ndjson`, `jsons`,
/// `perfetto`); the server masks secrets in it.
pub fn export_url(id: i64, format: &str) -> String {
    format!("/api/traces/{id}/export?format={format}")
}

/// `?k=v&...` from a serializable query (absent fields are skipped by its serde attributes), encoded by
/// the browser's `URLSearchParams`.
fn query_string<T: serde::Serialize>(query: &T) -> String {
    let Ok(serde_json::Value::Object(map)) = serde_json::to_value(query) else {
        return String::new();
    };
    let Ok(params) = web_sys::UrlSearchParams::new() else {
        return String::new();
    };
    for (k, v) in map {
        match v {
            serde_json::Value::Null => {}
            serde_json::Value::String(s) => params.append(&k, &s),
            other => params.append(&k, &other.to_string()),
        }
    }
    let text = String::from(params.to_string());
    if text.is_empty() {
        text
    } else {
        format!("?{text}")
    }
}

/// What to do with the events of a live stream.
pub struct LiveHandlers {
    /// New frames (every frame with a larger seq, unfiltered, in order).
    pub frames: Box<dyn Fn(Vec<FrameSummary>)>,
    /// The trace's new counts or its end.
    pub trace: Box<dyn Fn(TraceSummary)>,
    /// The connection failed or closed.
    pub error: Box<dyn Fn()>,
}

/// An open `/live` Server-Sent Events stream; dropping it closes the connection.
pub struct LiveStream {
    source: EventSource,
    _listeners: Vec<Closure<dyn FnMut(Event)>>,
}

impl Drop for LiveStream {
    fn drop(&mut self) {
        self.source.close();
    }
}

/// Opens the live stream of a trace for the frames after `after`.
pub fn live(id: i64, after: i64, handlers: LiveHandlers) -> Result<LiveStream, ApiFailure> {
    let url = format!("/api/traces/{id}/live?after={after}");
    let source = EventSource::new(&url)
        .map_err(|e| ApiFailure { status: None, message: format!("cannot open {url}: {e:?}") })?;
    let LiveHandlers { frames, trace, error } = handlers;
    let listeners = vec![
        listen(&source, "frames", move |data| match serde_json::from_str(&data) {
            Ok(batch) => frames(batch),
            Err(e) => leptos::logging::warn!("live frames: {e}"),
        }),
        listen(&source, "trace", move |data| match serde_json::from_str(&data) {
            Ok(t) => trace(t),
            Err(e) => leptos::logging::warn!("live trace: {e}"),
        }),
        {
            let closure = Closure::<dyn FnMut(Event)>::new(move |_: Event| error());
            source.set_onerror(Some(closure.as_ref().unchecked_ref()));
            closure
        },
    ];
    Ok(LiveStream { source, _listeners: listeners })
}

fn listen(source: &EventSource, name: &str, on_data: impl Fn(String) + 'static) -> Closure<dyn FnMut(Event)> {
    let closure = Closure::<dyn FnMut(Event)>::new(move |ev: Event| {
        if let Some(data) = ev.dyn_ref::<MessageEvent>().and_then(|m| m.data().as_string()) {
            on_data(data);
        }
    });
    if source.add_event_listener_with_callback(name, closure.as_ref().unchecked_ref()).is_err() {
        leptos::logging::warn!("cannot listen for {name} events");
    }
    closure
}
