//! Schema checks: a message's params, result or error deserialized into the
//! official ACP v1 types (crates.io `agent-client-protocol-schema`) for its
//! method and direction. The crate's method dispatch
//! (`from_method_and_params`, `from_method_and_result`) picks the type;
//! the frequent messages (`session/update`, `session/prompt` and its result)
//! are read straight from their text into their type, without a
//! `serde_json::Value` in between. Unknown members, `_meta` and
//! `_`-prefixed methods are allowed, as the spec says.

use agent_client_protocol_schema::v1;
use agent_client_protocol_schema::MethodDispatchError;
use serde::de::DeserializeOwned;
use serde_json::value::RawValue;
use serde_json::Value;

/// Characters kept of a schema error's text.
const PROBLEM_MAX_CHARS: usize = 300;

/// Why a message does not fit the schema.
#[derive(Debug, PartialEq, Eq)]
pub enum Problem {
    /// The schema has no such method, either way.
    Unknown,
    /// The schema has the method, sent by the other peer.
    WrongDirection,
    /// The payload does not fit the method's type; what serde said.
    Invalid(String),
}

/// Methods the schema crate names but has no dispatch for, and the
/// conductor's older names: not checked, not unknown.
fn unmodelled(method: &str) -> bool {
    matches!(method, "proxy/successor" | "mcp/connect" | "mcp/disconnect")
}

/// The method the schema knows `method` as: proxies receive `initialize` as
/// `proxy/initialize`.
fn schema_name(method: &str) -> &str {
    match method {
        "proxy/initialize" => "initialize",
        m => m,
    }
}

/// Checks a request's params; `from_client` says who sent it.
pub fn request(from_client: bool, method: &str, params: Option<&RawValue>) -> Result<(), Problem> {
    let method = schema_name(method);
    if unmodelled(method) {
        return Ok(());
    }
    match (from_client, method) {
        (true, "session/prompt") => return typed::<v1::PromptRequest>(params),
        (false, "session/request_permission") => return typed::<v1::RequestPermissionRequest>(params),
        _ => {}
    }
    with_value(params, |v| match from_client {
        true => v1::ClientRequest::from_method_and_params(method, v).map(drop),
        false => v1::AgentRequest::from_method_and_params(method, v).map(drop),
    })
    .map_err(|p| {
        let other = match from_client {
            true => v1::AgentRequest::supports_method(method),
            false => v1::ClientRequest::supports_method(method),
        };
        wrong_way(p, other)
    })
}

/// Checks a notification's params; `from_client` says who sent it.
pub fn notification(from_client: bool, method: &str, params: Option<&RawValue>) -> Result<(), Problem> {
    if unmodelled(method) {
        return Ok(());
    }
    match (from_client, method) {
        (false, "session/update") => return typed::<v1::SessionNotification>(params),
        (_, "$/cancel_request") => return typed::<v1::CancelRequestNotification>(params),
        _ => {}
    }
    with_value(params, |v| match from_client {
        true => v1::ClientNotification::from_method_and_params(method, v).map(drop),
        false => v1::AgentNotification::from_method_and_params(method, v).map(drop),
    })
    .map_err(|p| {
        let other = match from_client {
            true => v1::AgentNotification::supports_method(method),
            false => v1::ClientNotification::supports_method(method),
        };
        wrong_way(p, other)
    })
}

/// Checks a result against the method of the request it answers;
/// `request_from_client` says who sent the request.
pub fn result(request_from_client: bool, method: &str, result: &RawValue) -> Result<(), Problem> {
    let method = schema_name(method);
    if unmodelled(method) {
        return Ok(());
    }
    if request_from_client && method == "session/prompt" {
        return typed::<v1::PromptResponse>(Some(result));
    }
    let value: Value = serde_json::from_str(result.get()).map_err(|e| Problem::Invalid(said(&e.to_string())))?;
    let checked = match request_from_client {
        true => v1::AgentResponse::from_method_and_result(method, value).map(drop),
        false => v1::ClientResponse::from_method_and_result(method, value).map(drop),
    };
    match checked {
        Ok(()) => Ok(()),
        // The request was unknown: said once, at the request.
        Err(MethodDispatchError::UnknownMethod { .. }) => Ok(()),
        Err(e) => Err(dispatch_problem(e)),
    }
}

/// Checks an error object.
pub fn error(error: &RawValue) -> Result<(), Problem> {
    typed::<v1::Error>(Some(error))
}

/// Deserializes `params` (absent: `{}`) straight into `T`, a repeated
/// member as its last.
fn typed<T: DeserializeOwned>(params: Option<&RawValue>) -> Result<(), Problem> {
    let text = params.map_or("{}", RawValue::get);
    // A repeated member counts as its last, as the recorder reads it.
    crate::frame::read_last::<T>(text.as_bytes(), &mut None)
        .map(drop)
        .map_err(|e| Problem::Invalid(said(&e.to_string())))
}

/// Runs `dispatch` on `params` as a `Value`; absent params are tried as
/// `null`, then as `{}` (a method whose params are all optional).
fn with_value(
    params: Option<&RawValue>,
    dispatch: impl Fn(&Value) -> Result<(), MethodDispatchError>,
) -> Result<(), Problem> {
    let value = match params {
        Some(p) => serde_json::from_str(p.get()).map_err(|e| Problem::Invalid(said(&e.to_string())))?,
        None => Value::Null,
    };
    match dispatch(&value) {
        Ok(()) => Ok(()),
        Err(MethodDispatchError::InvalidPayload { .. }) if params.is_none() => {
            dispatch(&Value::Object(Default::default())).map_err(dispatch_problem)
        }
        Err(e) => Err(dispatch_problem(e)),
    }
}

fn dispatch_problem(e: MethodDispatchError) -> Problem {
    match e {
        MethodDispatchError::UnknownMethod { .. } => Problem::Unknown,
        MethodDispatchError::InvalidPayload { source, .. } => Problem::Invalid(said(&source.to_string())),
        _ => Problem::Invalid(said(&e.to_string())),
    }
}

fn wrong_way(p: Problem, other_side_has_it: bool) -> Problem {
    match p {
        Problem::Unknown if other_side_has_it => Problem::WrongDirection,
        p => p,
    }
}

/// What serde said, without the values it quotes (they may be secrets; a
/// finding is not masked like a frame) and without its line and column
/// (a frame is one line), cut to [`PROBLEM_MAX_CHARS`].
fn said(text: &str) -> String {
    let text = text.split(" at line ").next().unwrap_or(text);
    let mut out = String::new();
    let mut quoted = false;
    for c in text.chars() {
        if c == '"' {
            if !quoted {
                out.push_str("\"…\"");
            }
            quoted = !quoted;
        } else if !quoted {
            out.push(c);
        }
        if out.chars().count() >= PROBLEM_MAX_CHARS {
            out.push('…');
            break;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn raw(s: &str) -> Box<RawValue> {
        RawValue::from_string(s.to_owned()).unwrap()
    }

    #[test]
    fn known_messages_fit() {
        let p = raw(r#"{"sessionId":"s","prompt":[{"type":"text","text":"hi"}],"_meta":{"x":1}}"#);
        assert_eq!(request(true, "session/prompt", Some(&p)), Ok(()));
        let p = raw(r#"{"protocolVersion":1,"clientCapabilities":{}}"#);
        assert_eq!(request(true, "initialize", Some(&p)), Ok(()));
        let r = raw(r#"{"stopReason":"end_turn","extra":true}"#);
        assert_eq!(result(true, "session/prompt", &r), Ok(()));
        let u = raw(
            r#"{"sessionId":"s","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"x"}}}"#,
        );
        assert_eq!(notification(false, "session/update", Some(&u)), Ok(()));
        assert_eq!(notification(true, "_zed.dev/anything", Some(&raw("[1]"))), Ok(()));
        assert_eq!(request(true, "_x/y", None), Ok(()));
        assert_eq!(error(&raw(r#"{"code":-32800,"message":"cancelled"}"#)), Ok(()));
    }

    #[test]
    fn misfits_are_told() {
        let r = raw(r#"{"stopReason":"tired"}"#);
        assert!(matches!(result(true, "session/prompt", &r), Err(Problem::Invalid(_))));
        assert_eq!(request(true, "session/frobnicate", None), Err(Problem::Unknown));
        assert_eq!(notification(true, "session/update", Some(&raw("{}"))), Err(Problem::WrongDirection));
        assert!(matches!(error(&raw(r#"{"code":"x","message":"m"}"#)), Err(Problem::Invalid(_))));
        assert!(matches!(request(true, "session/new", Some(&raw(r#"{"cwd":5}"#))), Err(Problem::Invalid(_))));
    }

    #[test]
    fn quoted_values_are_not_repeated() {
        let p = raw(r#"{"sessionId":"s","prompt":"sk-secret-value"}"#);
        let Err(Problem::Invalid(text)) = request(true, "session/prompt", Some(&p)) else { panic!() };
        assert!(!text.contains("sk-secret"), "{text}");
    }
}
