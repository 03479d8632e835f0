//! The shapes of ACP messages acp-tee reads, as borrowed serde structs: a
//! member no reader needs is skipped, not built. Every member is optional
//! and lenient ([`super::lenient`]): absent, `null` and a value of the
//! wrong type all read as `None`.
//!
//! One struct per kind of object, the union of what every reader needs:
//! [`Params`] for every request's and notification's params, [`Answer`] for
//! every result, [`Update`] for a `session/update`'s update and a
//! permission request's tool call.

use super::lenient::{leaf, list, object, strings};
use super::Str;
use serde::de::{value::MapAccessDeserializer, MapAccess, Visitor};
use serde::{Deserialize, Deserializer};
use serde_json::value::RawValue;

/// The members of a message the session model and the OTLP mapping read,
/// in one pass. Only a JSON object is a message: anything else is an error
/// to read, an array included (serde's derived structs would read one
/// positionally, its first element as `params`).
#[derive(Default)]
pub struct Message<'a> {
    pub params: Option<Params<'a>>,
    pub result: Option<Answer<'a>>,
    pub error: Option<RpcError<'a>>,
}

/// [`Message`]'s members, read from an object.
#[derive(Deserialize)]
struct MessageMembers<'a> {
    #[serde(borrow, default, deserialize_with = "object")]
    params: Option<Params<'a>>,
    #[serde(borrow, default, deserialize_with = "object")]
    result: Option<Answer<'a>>,
    #[serde(borrow, default, deserialize_with = "object")]
    error: Option<RpcError<'a>>,
}

impl<'de> Deserialize<'de> for Message<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct MessageVisitor;
        impl<'de> Visitor<'de> for MessageVisitor {
            type Value = Message<'de>;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a JSON-RPC message (an object)")
            }
            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Message<'de>, A::Error> {
                let m = MessageMembers::deserialize(MapAccessDeserializer::new(map))?;
                Ok(Message { params: m.params, result: m.result, error: m.error })
            }
        }
        d.deserialize_map(MessageVisitor)
    }
}

/// A JSON-RPC error object.
#[derive(Deserialize, Default)]
pub struct RpcError<'a> {
    #[serde(default, deserialize_with = "leaf")]
    pub code: Option<i64>,
    #[serde(borrow, default, deserialize_with = "leaf")]
    pub message: Option<Str<'a>>,
    /// `data`, as written: what the peer adds to the message (a cause, a
    /// backtrace, the details an agent has).
    #[serde(borrow, default)]
    pub data: Option<&'a RawValue>,
}

impl RpcError<'_> {
    /// `code: message`.
    pub fn describe(&self) -> String {
        match (self.code, &self.message) {
            (Some(c), Some(m)) => format!("{c}: {m}"),
            (Some(c), None) => c.to_string(),
            (None, Some(m)) => m.to_string(),
            (None, None) => "error".into(),
        }
    }
}

/// The params of a request or notification: of `initialize`,
/// `session/*`, `fs/*`, `terminal/*`, `elicitation/create`,
/// `$/cancel_request`, and MCP-over-ACP's `mcp/*`.
#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase")]
pub struct Params<'a> {
    /// `_meta`: a W3C `traceparent` joins the caller's trace.
    #[serde(rename = "_meta", borrow, default, deserialize_with = "object")]
    pub meta: Option<Meta<'a>>,
    #[serde(borrow, default, deserialize_with = "leaf")]
    pub session_id: Option<Str<'a>>,
    #[serde(borrow, default, deserialize_with = "leaf")]
    pub cwd: Option<Str<'a>>,
    #[serde(borrow, default, deserialize_with = "leaf")]
    pub mode_id: Option<Str<'a>>,
    #[serde(borrow, default, deserialize_with = "leaf")]
    pub config_id: Option<Str<'a>>,
    /// `session/set_config_option`'s value, as written.
    #[serde(borrow, default)]
    pub value: Option<&'a RawValue>,
    /// `session/prompt`.
    #[serde(borrow, default, deserialize_with = "list")]
    pub prompt: Option<Vec<ContentBlock<'a>>>,
    /// `session/request_permission`.
    #[serde(borrow, default, deserialize_with = "object")]
    pub tool_call: Option<Update<'a>>,
    #[serde(borrow, default, deserialize_with = "list")]
    pub options: Option<Vec<PermissionOption<'a>>>,
    /// `fs/*`.
    #[serde(borrow, default, deserialize_with = "leaf")]
    pub path: Option<Str<'a>>,
    /// `terminal/create`.
    #[serde(borrow, default, deserialize_with = "leaf")]
    pub command: Option<Str<'a>>,
    #[serde(borrow, default, deserialize_with = "strings")]
    pub args: Option<Vec<Str<'a>>>,
    /// `terminal/*`.
    #[serde(borrow, default, deserialize_with = "leaf")]
    pub terminal_id: Option<Str<'a>>,
    /// `elicitation/create`.
    #[serde(borrow, default, deserialize_with = "leaf")]
    pub message: Option<Str<'a>>,
    /// `$/cancel_request`: the id as written, `null` included (an id the
    /// schema allows, and the envelope keeps).
    #[serde(borrow, default, deserialize_with = "written")]
    pub request_id: Option<&'a RawValue>,
    /// `session/update`.
    #[serde(borrow, default, deserialize_with = "object")]
    pub update: Option<Update<'a>>,
    /// `initialize`.
    #[serde(borrow, default, deserialize_with = "object")]
    pub client_info: Option<Info<'a>>,
    #[serde(default, deserialize_with = "object")]
    pub client_capabilities: Option<ClientCapabilities>,
    /// `mcp/*`.
    #[serde(borrow, default, deserialize_with = "leaf")]
    pub connection_id: Option<Str<'a>>,
    /// `mcp/message`: the inner MCP method and params.
    #[serde(borrow, default, deserialize_with = "leaf")]
    pub method: Option<Str<'a>>,
    #[serde(borrow, default, deserialize_with = "object")]
    pub params: Option<McpParams<'a>>,
}

/// A member's text as written, whatever it is: `Option<&RawValue>` alone
/// reads `null` as absent.
fn written<'de, D: Deserializer<'de>>(d: D) -> Result<Option<&'de RawValue>, D::Error> {
    <&RawValue>::deserialize(d).map(Some)
}

/// `_meta`.
#[derive(Deserialize, Default)]
pub struct Meta<'a> {
    #[serde(borrow, default, deserialize_with = "leaf")]
    pub traceparent: Option<Str<'a>>,
}

/// The params of an MCP request carried by `mcp/message`.
#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase")]
pub struct McpParams<'a> {
    #[serde(borrow, default, deserialize_with = "leaf")]
    pub name: Option<Str<'a>>,
    #[serde(borrow, default, deserialize_with = "leaf")]
    pub uri: Option<Str<'a>>,
    #[serde(borrow, default, deserialize_with = "leaf")]
    pub protocol_version: Option<Str<'a>>,
}

/// `clientCapabilities` (what the rules look at).
#[derive(Deserialize, Default, Clone, Copy)]
pub struct ClientCapabilities {
    #[serde(default, deserialize_with = "object")]
    pub fs: Option<FsCapabilities>,
    #[serde(default, deserialize_with = "leaf")]
    pub terminal: Option<bool>,
}

/// `clientCapabilities.fs`.
#[derive(Deserialize, Default, Clone, Copy)]
#[serde(rename_all = "camelCase")]
pub struct FsCapabilities {
    #[serde(default, deserialize_with = "leaf")]
    pub read_text_file: Option<bool>,
    #[serde(default, deserialize_with = "leaf")]
    pub write_text_file: Option<bool>,
}

/// `agentCapabilities` (what the rules look at).
#[derive(Deserialize, Default, Clone, Copy)]
#[serde(rename_all = "camelCase")]
pub struct AgentCapabilities {
    #[serde(default, deserialize_with = "leaf")]
    pub load_session: Option<bool>,
}

/// `clientInfo` / `agentInfo`.
#[derive(Deserialize, Default)]
pub struct Info<'a> {
    #[serde(borrow, default, deserialize_with = "leaf")]
    pub name: Option<Str<'a>>,
    #[serde(borrow, default, deserialize_with = "leaf")]
    pub title: Option<Str<'a>>,
    #[serde(borrow, default, deserialize_with = "leaf")]
    pub version: Option<Str<'a>>,
}

impl Info<'_> {
    /// `name version`.
    pub fn describe(&self) -> Option<String> {
        let name = self.name.as_deref().or(self.title.as_deref())?;
        Some(match &self.version {
            Some(v) => format!("{name} {v}"),
            None => name.to_owned(),
        })
    }
}

/// A result: of `initialize`, `session/new|load|resume|fork`,
/// `session/prompt`, `session/request_permission`, `terminal/*`,
/// `mcp/connect`.
#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase")]
pub struct Answer<'a> {
    #[serde(default, deserialize_with = "leaf")]
    pub protocol_version: Option<i64>,
    #[serde(borrow, default, deserialize_with = "object")]
    pub agent_info: Option<Info<'a>>,
    #[serde(default, deserialize_with = "object")]
    pub agent_capabilities: Option<AgentCapabilities>,
    #[serde(borrow, default, deserialize_with = "leaf")]
    pub session_id: Option<Str<'a>>,
    #[serde(borrow, default, deserialize_with = "object")]
    pub modes: Option<Modes<'a>>,
    #[serde(borrow, default, deserialize_with = "leaf")]
    pub stop_reason: Option<Str<'a>>,
    #[serde(default, deserialize_with = "object")]
    pub usage: Option<Usage>,
    #[serde(borrow, default, deserialize_with = "object")]
    pub outcome: Option<Outcome<'a>>,
    #[serde(borrow, default, deserialize_with = "leaf")]
    pub terminal_id: Option<Str<'a>>,
    #[serde(default, deserialize_with = "leaf")]
    pub exit_code: Option<i64>,
    #[serde(borrow, default, deserialize_with = "leaf")]
    pub signal: Option<Str<'a>>,
    #[serde(borrow, default, deserialize_with = "leaf")]
    pub action: Option<Str<'a>>,
    /// `mcp/connect`.
    #[serde(borrow, default, deserialize_with = "leaf")]
    pub connection_id: Option<Str<'a>>,
}

/// `modes` of a session's answer.
#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase")]
pub struct Modes<'a> {
    #[serde(borrow, default, deserialize_with = "leaf")]
    pub current_mode_id: Option<Str<'a>>,
}

/// `PromptResponse.usage`.
#[derive(Deserialize, Default, Clone, Copy, Debug, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct Usage {
    #[serde(default, deserialize_with = "leaf")]
    pub total_tokens: Option<u64>,
    #[serde(default, deserialize_with = "leaf")]
    pub input_tokens: Option<u64>,
    #[serde(default, deserialize_with = "leaf")]
    pub output_tokens: Option<u64>,
    #[serde(default, deserialize_with = "leaf")]
    pub thought_tokens: Option<u64>,
    #[serde(default, deserialize_with = "leaf")]
    pub cached_read_tokens: Option<u64>,
    #[serde(default, deserialize_with = "leaf")]
    pub cached_write_tokens: Option<u64>,
}

/// A permission answer's `outcome`: `selected` names an option.
#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase")]
pub struct Outcome<'a> {
    #[serde(borrow, default, deserialize_with = "leaf")]
    pub outcome: Option<Str<'a>>,
    #[serde(borrow, default, deserialize_with = "leaf")]
    pub option_id: Option<Str<'a>>,
}

/// One option of a permission request.
#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase")]
pub struct PermissionOption<'a> {
    #[serde(borrow, default, deserialize_with = "leaf")]
    pub option_id: Option<Str<'a>>,
    /// What the client shows the user.
    #[serde(borrow, default, deserialize_with = "leaf")]
    pub name: Option<Str<'a>>,
    #[serde(borrow, default, deserialize_with = "leaf")]
    pub kind: Option<Str<'a>>,
}

/// A content block: its type and, for text, the text.
#[derive(Deserialize, Default)]
pub struct ContentBlock<'a> {
    #[serde(rename = "type", borrow, default, deserialize_with = "leaf")]
    pub kind: Option<Str<'a>>,
    #[serde(borrow, default, deserialize_with = "leaf")]
    pub text: Option<Str<'a>>,
}

/// A content block whose text is kept as written (a preview decodes only
/// the start of a long text).
#[derive(Deserialize, Default)]
pub struct RawText<'a> {
    #[serde(borrow, default)]
    pub text: Option<&'a RawValue>,
}

/// A `session/update`'s `update`, or a permission request's `toolCall`.
#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase")]
pub struct Update<'a> {
    #[serde(borrow, default, deserialize_with = "leaf")]
    pub session_update: Option<Str<'a>>,
    /// A chunk's content block, or a tool call's content list, as written.
    #[serde(borrow, default)]
    pub content: Option<&'a RawValue>,
    #[serde(borrow, default, deserialize_with = "leaf")]
    pub message_id: Option<Str<'a>>,
    #[serde(borrow, default, deserialize_with = "leaf")]
    pub tool_call_id: Option<Str<'a>>,
    #[serde(borrow, default, deserialize_with = "leaf")]
    pub title: Option<Str<'a>>,
    #[serde(borrow, default, deserialize_with = "leaf")]
    pub kind: Option<Str<'a>>,
    #[serde(borrow, default, deserialize_with = "leaf")]
    pub status: Option<Str<'a>>,
    #[serde(borrow, default, deserialize_with = "list")]
    pub locations: Option<Vec<Location<'a>>>,
    #[serde(borrow, default)]
    pub raw_input: Option<&'a RawValue>,
    #[serde(borrow, default)]
    pub raw_output: Option<&'a RawValue>,
    /// `plan`.
    #[serde(borrow, default, deserialize_with = "list")]
    pub entries: Option<Vec<PlanEntry<'a>>>,
    /// `available_commands_update`.
    #[serde(borrow, default, deserialize_with = "list")]
    pub available_commands: Option<Vec<Command<'a>>>,
    /// `current_mode_update`.
    #[serde(borrow, default, deserialize_with = "leaf")]
    pub current_mode_id: Option<Str<'a>>,
    /// `usage_update`.
    #[serde(default, deserialize_with = "leaf")]
    pub used: Option<u64>,
    #[serde(default, deserialize_with = "leaf")]
    pub size: Option<u64>,
    #[serde(default, deserialize_with = "object")]
    pub cost: Option<Cost>,
    /// v2 `state_update`.
    #[serde(borrow, default, deserialize_with = "leaf")]
    pub stop_reason: Option<Str<'a>>,
}

/// A tool call's location.
#[derive(Deserialize, Default)]
pub struct Location<'a> {
    #[serde(borrow, default, deserialize_with = "leaf")]
    pub path: Option<Str<'a>>,
}

/// One item of a tool call's `content`.
#[derive(Deserialize, Default)]
pub struct ToolContent<'a> {
    #[serde(rename = "type", borrow, default, deserialize_with = "leaf")]
    pub kind: Option<Str<'a>>,
}

/// One entry of a plan.
#[derive(Deserialize, Default)]
pub struct PlanEntry<'a> {
    #[serde(borrow, default, deserialize_with = "leaf")]
    pub content: Option<Str<'a>>,
    #[serde(borrow, default, deserialize_with = "leaf")]
    pub status: Option<Str<'a>>,
    #[serde(borrow, default, deserialize_with = "leaf")]
    pub priority: Option<Str<'a>>,
}

/// One available command.
#[derive(Deserialize, Default)]
pub struct Command<'a> {
    #[serde(borrow, default, deserialize_with = "leaf")]
    pub name: Option<Str<'a>>,
}

/// `cost` of a `usage_update`.
#[derive(Deserialize, Default)]
pub struct Cost {
    #[serde(default, deserialize_with = "leaf")]
    pub amount: Option<f64>,
    #[serde(default, deserialize_with = "leaf_string")]
    pub currency: Option<String>,
}

fn leaf_string<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<String>, D::Error> {
    leaf::<D, Str<'de>>(d).map(|s| s.map(Str::into_owned))
}

impl Cost {
    /// `amount currency`.
    pub fn describe(&self) -> Option<String> {
        let amount = self.amount?;
        Some(match &self.currency {
            Some(c) => format!("{amount} {c}"),
            None => amount.to_string(),
        })
    }
}

/// Only `sessionId` of a message's params: what a reader that needs no
/// more reads, without parsing the rest.
#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase")]
pub struct SessionRef<'a> {
    #[serde(borrow, default, deserialize_with = "leaf")]
    pub session_id: Option<Str<'a>>,
}
