//! The borrowed shapes the checker reads messages with: the JSON-RPC
//! envelope (every member as its exact text) and the few members of params
//! and results the sequence rules need.

use serde::{Deserialize, Deserializer};
use serde_json::value::RawValue;

/// A JSON-RPC message's members, as written. A member that is present but
/// `null` is `Some("null")`; a member written twice fails the parse (read
/// it with [`crate::frame::read_last`]).
#[derive(Deserialize)]
pub struct Envelope<'a> {
    #[serde(default, borrow, deserialize_with = "present")]
    pub jsonrpc: Option<&'a RawValue>,
    #[serde(default, borrow, deserialize_with = "present")]
    pub id: Option<&'a RawValue>,
    #[serde(default, borrow, deserialize_with = "present")]
    pub method: Option<&'a RawValue>,
    #[serde(default, borrow, deserialize_with = "present")]
    pub params: Option<&'a RawValue>,
    #[serde(default, borrow, deserialize_with = "present")]
    pub result: Option<&'a RawValue>,
    #[serde(default, borrow, deserialize_with = "present")]
    pub error: Option<&'a RawValue>,
}

fn present<'de, D: Deserializer<'de>>(d: D) -> Result<Option<&'de RawValue>, D::Error> {
    <&RawValue>::deserialize(d).map(Some)
}

/// `params.sessionId`, when it is a string.
#[derive(Deserialize, Default)]
pub struct SessionRef<'a> {
    #[serde(rename = "sessionId", default, borrow)]
    pub session_id: Option<std::borrow::Cow<'a, str>>,
}

/// What `initialize`'s params say the client can do.
#[derive(Deserialize, Default)]
pub struct InitializeParams {
    #[serde(rename = "clientCapabilities", default)]
    pub client_capabilities: Option<ClientCapabilities>,
}

/// The client capabilities the rules look at.
#[derive(Deserialize, Default, Clone, Copy)]
pub struct ClientCapabilities {
    #[serde(default)]
    pub fs: Option<FsCapabilities>,
    #[serde(default)]
    pub terminal: Option<bool>,
}

/// `clientCapabilities.fs`.
#[derive(Deserialize, Default, Clone, Copy)]
pub struct FsCapabilities {
    #[serde(rename = "readTextFile", default)]
    pub read_text_file: Option<bool>,
    #[serde(rename = "writeTextFile", default)]
    pub write_text_file: Option<bool>,
}

/// What `initialize`'s result says.
#[derive(Deserialize, Default)]
pub struct InitializeResult {
    #[serde(rename = "protocolVersion", default)]
    pub protocol_version: Option<i64>,
    #[serde(rename = "agentCapabilities", default)]
    pub agent_capabilities: Option<AgentCapabilities>,
}

/// The agent capabilities the rules look at.
#[derive(Deserialize, Default)]
pub struct AgentCapabilities {
    #[serde(rename = "loadSession", default)]
    pub load_session: Option<bool>,
}

/// A result naming a session (`session/new`, `session/fork`).
#[derive(Deserialize, Default)]
pub struct SessionResult<'a> {
    #[serde(rename = "sessionId", default, borrow)]
    pub session_id: Option<std::borrow::Cow<'a, str>>,
}

/// `session/prompt`'s result.
#[derive(Deserialize, Default)]
pub struct PromptResult<'a> {
    #[serde(rename = "stopReason", default, borrow)]
    pub stop_reason: Option<std::borrow::Cow<'a, str>>,
}

/// `session/update`'s params: the update's kind and tool call.
#[derive(Deserialize, Default)]
pub struct UpdateParams<'a> {
    #[serde(default, borrow)]
    pub update: Option<ToolUpdate<'a>>,
}

/// The members of an update that name a tool call.
#[derive(Deserialize, Default)]
pub struct ToolUpdate<'a> {
    #[serde(rename = "sessionUpdate", default, borrow)]
    pub session_update: Option<std::borrow::Cow<'a, str>>,
    #[serde(rename = "toolCallId", default, borrow)]
    pub tool_call_id: Option<std::borrow::Cow<'a, str>>,
}

/// `$/cancel_request`'s params.
#[derive(Deserialize)]
pub struct CancelRequestParams<'a> {
    #[serde(rename = "requestId", borrow)]
    pub request_id: &'a RawValue,
}

/// `session/request_permission`'s params: the options offered.
#[derive(Deserialize, Default)]
pub struct PermissionParams<'a> {
    #[serde(default, borrow)]
    pub options: Vec<PermissionOption<'a>>,
}

/// One option offered.
#[derive(Deserialize)]
pub struct PermissionOption<'a> {
    #[serde(rename = "optionId", borrow)]
    pub option_id: std::borrow::Cow<'a, str>,
}

/// `session/request_permission`'s result.
#[derive(Deserialize)]
pub struct PermissionResult<'a> {
    #[serde(borrow)]
    pub outcome: PermissionOutcome<'a>,
}

/// The outcome: `selected` names an option.
#[derive(Deserialize)]
pub struct PermissionOutcome<'a> {
    #[serde(borrow)]
    pub outcome: std::borrow::Cow<'a, str>,
    #[serde(rename = "optionId", default, borrow)]
    pub option_id: Option<std::borrow::Cow<'a, str>>,
}

/// An error object's code.
#[derive(Deserialize)]
pub struct ErrorCode {
    pub code: i64,
}

/// Parses `raw` (a member's text) as `T`, `None` when it does not fit; a
/// repeated member counts as its last (rebuilt into `keep`,
/// [`crate::frame::read_last`]).
pub fn read<'a, T: Deserialize<'a>>(raw: Option<&'a RawValue>, keep: &'a mut Option<Vec<u8>>) -> Option<T> {
    crate::frame::read_last(raw?.get().as_bytes(), keep).ok()
}
