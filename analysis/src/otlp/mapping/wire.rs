//! The members of ACP (and MCP-over-ACP) messages the OTLP mapping reads,
//! as borrowed serde structs: a member it does not need is skipped, not
//! built.

use serde::Deserialize;
use serde_json::value::RawValue;
use std::borrow::Cow;

/// The members of a message the mapping reads.
#[derive(Deserialize, Default)]
pub(super) struct Message<'a> {
    #[serde(borrow, default)]
    pub(super) params: Option<Params<'a>>,
    #[serde(borrow, default)]
    pub(super) result: Option<Params<'a>>,
    #[serde(borrow, default)]
    pub(super) error: Option<RpcError<'a>>,
}

#[derive(Deserialize)]
pub(super) struct RpcError<'a> {
    #[serde(default)]
    pub(super) code: Option<i64>,
    #[serde(borrow, default)]
    pub(super) message: Option<Cow<'a, str>>,
}

/// Params or result members, whichever the message has.
#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase")]
pub(super) struct Params<'a> {
    #[serde(rename = "_meta", borrow, default)]
    pub(super) meta: Option<Meta<'a>>,
    #[serde(borrow, default)]
    pub(super) session_id: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    pub(super) prompt: Option<&'a RawValue>,
    #[serde(borrow, default)]
    pub(super) update: Option<Update<'a>>,
    #[serde(borrow, default)]
    pub(super) tool_call: Option<Update<'a>>,
    /// `mcp/*`.
    #[serde(borrow, default)]
    pub(super) connection_id: Option<Cow<'a, str>>,
    /// `mcp/message`: the inner MCP method and params.
    #[serde(borrow, default)]
    pub(super) method: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    pub(super) params: Option<McpParams<'a>>,
    /// `initialize` result.
    #[serde(borrow, default)]
    pub(super) agent_info: Option<Info<'a>>,
    #[serde(default)]
    pub(super) protocol_version: Option<serde_json::Number>,
    /// `session/prompt` result.
    #[serde(borrow, default)]
    pub(super) stop_reason: Option<Cow<'a, str>>,
    #[serde(default)]
    pub(super) usage: Option<Usage>,
    /// `session/request_permission` result.
    #[serde(borrow, default)]
    pub(super) outcome: Option<Outcome<'a>>,
}

#[derive(Deserialize)]
pub(super) struct Meta<'a> {
    #[serde(borrow, default)]
    pub(super) traceparent: Option<Cow<'a, str>>,
}

#[derive(Deserialize)]
pub(super) struct McpParams<'a> {
    #[serde(borrow, default)]
    pub(super) name: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    pub(super) uri: Option<Cow<'a, str>>,
    #[serde(rename = "protocolVersion", borrow, default)]
    pub(super) protocol_version: Option<Cow<'a, str>>,
}

#[derive(Deserialize)]
pub(super) struct Info<'a> {
    #[serde(borrow, default)]
    pub(super) name: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    pub(super) version: Option<Cow<'a, str>>,
}

#[derive(Deserialize, Default, Clone, Copy)]
#[serde(rename_all = "camelCase")]
pub(super) struct Usage {
    #[serde(default)]
    pub(super) input_tokens: Option<i64>,
    #[serde(default)]
    pub(super) output_tokens: Option<i64>,
    #[serde(default)]
    pub(super) cached_read_tokens: Option<i64>,
    #[serde(default)]
    pub(super) cached_write_tokens: Option<i64>,
    #[serde(default)]
    pub(super) thought_tokens: Option<i64>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct Outcome<'a> {
    #[serde(borrow, default)]
    pub(super) outcome: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    pub(super) option_id: Option<Cow<'a, str>>,
}

/// A `session/update`'s `update`, or a permission request's `toolCall`.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct Update<'a> {
    #[serde(borrow, default)]
    pub(super) session_update: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    pub(super) tool_call_id: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    pub(super) title: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    pub(super) kind: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    pub(super) status: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    pub(super) content: Option<&'a RawValue>,
    #[serde(borrow, default)]
    pub(super) raw_input: Option<&'a RawValue>,
    #[serde(borrow, default)]
    pub(super) raw_output: Option<&'a RawValue>,
}

/// A text content block.
#[derive(Deserialize)]
pub(super) struct Block<'a> {
    #[serde(rename = "type", borrow, default)]
    pub(super) kind: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    pub(super) text: Option<Cow<'a, str>>,
}
