//! Reading the conductor's lines and writing ours: plain JSON-RPC messages and
//! `proxy/successor` envelopes, built from the exact text of ids, params,
//! results and errors so nothing is re-encoded on the way through.

use acp_tee_wire::acp::{self, Envelope};
use serde::Serialize;
use serde_json::value::RawValue;

/// The current name of the envelope for messages to and from the successor.
pub const SUCCESSOR: &str = "proxy/successor";
/// The SDK 2.x name of the envelope.
pub const LEGACY_SUCCESSOR: &str = "_proxy/successor";
/// What the conductor sends a proxy instead of `initialize`.
pub const PROXY_INITIALIZE: &str = "proxy/initialize";
/// The SDK 2.x name of `proxy/initialize`.
pub const LEGACY_PROXY_INITIALIZE: &str = "_proxy/initialize";
/// The cancellation notification; it is never wrapped and applies per hop.
pub const CANCEL_REQUEST: &str = "$/cancel_request";

/// One line from the conductor, as far as routing needs to know.
#[derive(Debug)]
pub enum Incoming<'a> {
    /// A request (with `id`) or notification, plain.
    Call {
        /// The id's exact text, absent for notifications.
        id: Option<&'a RawValue>,
        /// The method.
        method: String,
        /// The params' exact text.
        params: Option<&'a RawValue>,
    },
    /// A response: `result` or `error`, exact text.
    Response {
        /// The id's exact text.
        id: &'a RawValue,
        /// `result`, if a success.
        result: Option<&'a RawValue>,
        /// `error`, if a failure.
        error: Option<&'a RawValue>,
    },
}

/// The params of a `proxy/successor` envelope: the inner message's method and
/// params (its own `_meta`, if any, is dropped as the conductor does).
#[derive(Debug)]
pub struct Wrapped<'a> {
    /// The inner method.
    pub method: String,
    /// The inner params' exact text (absent or `null`: none).
    pub params: Option<&'a RawValue>,
}

/// Parses one line; `None` when it is not a JSON-RPC message we can route.
pub fn parse(line: &[u8]) -> Option<Incoming<'_>> {
    let text = std::str::from_utf8(line).ok()?;
    // The same probe the classifier uses: one definition of what a message is.
    let p: Envelope = serde_json::from_str(text).ok()?;
    let method = match p.method {
        Some(m) => Some(serde_json::from_str::<String>(m.get()).ok()?),
        None => None,
    };
    match (method, p.id) {
        (Some(method), id) => Some(Incoming::Call { id, method, params: p.params }),
        (None, Some(id)) if p.result.is_some() || p.error.is_some() => {
            Some(Incoming::Response { id, result: p.result, error: p.error })
        }
        _ => None,
    }
}

/// Reads the inner message of an envelope's params. They have a message's
/// `method` and `params`, so the one reading of a message's members reads
/// them ([`Envelope`]): exact text, a member written twice as its last.
pub fn unwrap_params<'a>(params: Option<&'a RawValue>) -> Option<Wrapped<'a>> {
    let inner: Envelope = serde_json::from_str(params?.get()).ok()?;
    let method = serde_json::from_str::<String>(inner.method?.get()).ok()?;
    Some(Wrapped { method, params: inner.params.filter(|p| p.get() != "null") })
}

/// The `requestId` of a `$/cancel_request`, as exact text.
pub fn cancelled_id(params: Option<&RawValue>) -> Option<String> {
    let mut keep = None;
    acp::member::<acp::Params>(params, &mut keep)?.request_id.map(|id| id.get().to_owned())
}

#[derive(Serialize)]
struct OutCall<'a, P: Serialize> {
    jsonrpc: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    id: Option<&'a RawValue>,
    method: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    params: Option<P>,
}

#[derive(Serialize)]
struct Inner<'a> {
    method: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    params: Option<&'a RawValue>,
}

#[derive(Serialize)]
struct OutResponse<'a> {
    jsonrpc: &'static str,
    id: &'a RawValue,
    #[serde(skip_serializing_if = "Option::is_none")]
    result: Option<&'a RawValue>,
    #[serde(skip_serializing_if = "Option::is_none")]
    error: Option<&'a RawValue>,
}

fn line(value: &impl Serialize) -> Vec<u8> {
    let mut out = serde_json::to_vec(value).expect("messages of raw JSON always serialise");
    out.push(b'\n');
    out
}

/// A plain request or notification line.
pub fn call(id: Option<&RawValue>, method: &str, params: Option<&RawValue>) -> Vec<u8> {
    line(&OutCall { jsonrpc: "2.0", id, method, params })
}

/// A line carrying `method(params)` to the successor inside `envelope_method`.
pub fn wrap(envelope_method: &str, id: Option<&RawValue>, method: &str, params: Option<&RawValue>) -> Vec<u8> {
    line(&OutCall { jsonrpc: "2.0", id, method: envelope_method, params: Some(Inner { method, params }) })
}

/// A response line with `result` or `error` copied exactly.
pub fn response(id: &RawValue, result: Option<&RawValue>, error: Option<&RawValue>) -> Vec<u8> {
    line(&OutResponse { jsonrpc: "2.0", id, result, error })
}

/// A `$/cancel_request` for the request with id text `request_id`.
pub fn cancel(request_id: &RawValue) -> Vec<u8> {
    #[derive(Serialize)]
    struct Params<'a> {
        #[serde(rename = "requestId")]
        request_id: &'a RawValue,
    }
    line(&OutCall { jsonrpc: "2.0", id: None, method: CANCEL_REQUEST, params: Some(Params { request_id }) })
}

/// JSON-RPC's code for a line that is not JSON.
pub const PARSE_ERROR: i64 = -32700;
/// JSON-RPC's code for JSON that is no valid request.
pub const INVALID_REQUEST: i64 = -32600;
/// JSON-RPC's code for params that do not fit the method.
pub const INVALID_PARAMS: i64 = -32602;

/// An error response to the request with id text `id`.
pub fn error_response(id: &RawValue, code: i64, message: &str) -> Vec<u8> {
    let error = serde_json::json!({ "code": code, "message": message }).to_string();
    let error = RawValue::from_string(error).expect("a serialised object is JSON");
    response(id, None, Some(&error))
}

/// How to answer a line [`parse`] could not route.
#[derive(Debug, PartialEq, Eq)]
pub enum Rejection {
    /// Nothing to answer: a response, a notification, or a batch of those.
    Silent,
    /// This line (an error response, or an array of them for a batch).
    Answer(Vec<u8>),
}

/// The answer JSON-RPC 2.0 asks for to a line that is not a message we can
/// route: `-32700` with a null id when it is not JSON, `-32600` for JSON that
/// is no valid request (with its id when it has one usable as an id, else
/// null), an array of answers for a batch (each request in it gets a
/// `-32600`: the proxy does not route batches, which ACP does not use).
pub fn reject(line: &[u8]) -> Rejection {
    let null = RawValue::from_string("null".to_owned()).expect("null is JSON");
    let value = std::str::from_utf8(line).ok().and_then(|t| serde_json::from_str::<&RawValue>(t).ok());
    let Some(value) = value else {
        return Rejection::Answer(error_response(&null, PARSE_ERROR, "parse error: the line is not JSON"));
    };
    if !value.get().starts_with('[') {
        return match invalid_request(value, &null) {
            Some(answer) => Rejection::Answer(answer),
            None => Rejection::Silent,
        };
    }
    let items: Vec<&RawValue> = serde_json::from_str(value.get()).unwrap_or_default();
    if items.is_empty() {
        return Rejection::Answer(error_response(&null, INVALID_REQUEST, "invalid request: an empty batch"));
    }
    let answers: Vec<Vec<u8>> = items.iter().filter_map(|item| invalid_request(item, &null)).collect();
    if answers.is_empty() {
        return Rejection::Silent;
    }
    let mut out = b"[".to_vec();
    for (i, answer) in answers.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        out.extend_from_slice(answer.strip_suffix(b"\n").unwrap_or(answer));
    }
    out.extend_from_slice(b"]\n");
    Rejection::Answer(out)
}

/// The `-32600` answer to one value that is no message we route, or `None`
/// when it must not be answered (a response, a notification).
fn invalid_request(value: &RawValue, null: &RawValue) -> Option<Vec<u8>> {
    let Ok(p) = serde_json::from_str::<Envelope>(value.get()) else {
        return Some(error_response(null, INVALID_REQUEST, "invalid request: not a JSON-RPC message object"));
    };
    // An id JSON-RPC allows (string, number, null) is answered under itself.
    let id = p.id.filter(|id| matches!(id.get().as_bytes()[0], b'"' | b'-' | b'0'..=b'9' | b'n')).unwrap_or(null);
    match p.kind() {
        Some((acp_tee_shared::FrameKind::Request, _)) => {
            Some(error_response(id, INVALID_REQUEST, "invalid request: acp-tee proxy does not route batches"))
        }
        Some(_) => None,
        None if p.method.is_some() => {
            Some(error_response(id, INVALID_REQUEST, "invalid request: `method` is not a string"))
        }
        None => Some(error_response(id, INVALID_REQUEST, "invalid request: neither a call nor a response")),
    }
}
