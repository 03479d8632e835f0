//! The parts of ACP messages the session model reads, as borrowed serde
//! structs: a field the model does not need is skipped, not built.
//!
//! A repeated member counts as its last, as the recorder reads it: the
//! message is then read rebuilt ([`crate::frame::read_last`]), kept in the
//! caller's `keep`. A message that does not parse as these shapes (a wrong
//! type) gives nothing ([`params`], [`reply`]): the frame counts only by its
//! stored columns.

use memchr::memmem::Finder;
use serde::Deserialize;
use serde_json::value::RawValue;
use std::borrow::Cow;
use std::sync::LazyLock;

/// A JSON string, borrowed when it has no escapes.
pub type Str<'a> = Cow<'a, str>;

/// A request's or notification's params.
#[derive(Deserialize)]
struct WithParams<'a> {
    #[serde(borrow, default)]
    params: Option<SessionParams<'a>>,
}

/// A response's result or error.
#[derive(Deserialize)]
struct WithReply<'a> {
    #[serde(borrow, default)]
    result: Option<Answer<'a>>,
    #[serde(borrow, default)]
    error: Option<RpcError<'a>>,
}

/// The params of the message in `raw`, read in one pass (`None` when the
/// message is not an object of the usual shape).
pub fn params<'a>(raw: &'a [u8], keep: &'a mut Option<Vec<u8>>) -> Option<SessionParams<'a>> {
    crate::frame::read_last::<WithParams>(raw, keep).ok().and_then(|m| m.params)
}

/// The result and error of the response in `raw`.
pub fn reply<'a>(raw: &'a [u8], keep: &'a mut Option<Vec<u8>>) -> (Answer<'a>, Option<RpcError<'a>>) {
    match crate::frame::read_last::<WithReply>(raw, keep) {
        Ok(r) => (r.result.unwrap_or_default(), r.error),
        Err(_) => (Answer::default(), None),
    }
}

/// A JSON-RPC error object.
#[derive(Deserialize)]
pub struct RpcError<'a> {
    #[serde(default)]
    pub code: Option<i64>,
    #[serde(borrow, default)]
    pub message: Option<Str<'a>>,
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

/// Params that name a session.
#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase")]
pub struct SessionParams<'a> {
    #[serde(borrow, default)]
    pub cwd: Option<Str<'a>>,
    #[serde(borrow, default)]
    pub mode_id: Option<Str<'a>>,
    #[serde(borrow, default)]
    pub config_id: Option<Str<'a>>,
    #[serde(borrow, default)]
    pub value: Option<&'a RawValue>,
    #[serde(borrow, default)]
    pub prompt: Option<Vec<ContentBlock<'a>>>,
    /// `session/request_permission`.
    #[serde(borrow, default)]
    pub tool_call: Option<ToolCallFields<'a>>,
    #[serde(borrow, default)]
    pub options: Option<Vec<PermissionOption<'a>>>,
    /// `fs/*`.
    #[serde(borrow, default)]
    pub path: Option<Str<'a>>,
    /// `terminal/create`.
    #[serde(borrow, default)]
    pub command: Option<Str<'a>>,
    #[serde(borrow, default)]
    pub args: Option<Vec<Str<'a>>>,
    /// `terminal/*`.
    #[serde(borrow, default)]
    pub terminal_id: Option<Str<'a>>,
    /// `elicitation/create`.
    #[serde(borrow, default)]
    pub message: Option<Str<'a>>,
    /// `$/cancel_request`.
    #[serde(borrow, default)]
    pub request_id: Option<&'a RawValue>,
    /// `session/update`.
    #[serde(borrow, default)]
    pub update: Option<Update<'a>>,
    /// `initialize`.
    #[serde(borrow, default)]
    pub client_info: Option<Info<'a>>,
}

/// `clientInfo` / `agentInfo`.
#[derive(Deserialize)]
pub struct Info<'a> {
    #[serde(borrow, default)]
    pub name: Option<Str<'a>>,
    #[serde(borrow, default)]
    pub title: Option<Str<'a>>,
    #[serde(borrow, default)]
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

/// Results the model reads: of `initialize`, `session/new|load|resume|fork`,
/// `session/prompt`, `session/request_permission`, `terminal/*`.
#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase")]
pub struct Answer<'a> {
    #[serde(default)]
    pub protocol_version: Option<i64>,
    #[serde(borrow, default)]
    pub agent_info: Option<Info<'a>>,
    #[serde(borrow, default)]
    pub session_id: Option<Str<'a>>,
    #[serde(borrow, default)]
    pub modes: Option<Modes<'a>>,
    #[serde(borrow, default)]
    pub stop_reason: Option<Str<'a>>,
    #[serde(default)]
    pub usage: Option<Usage>,
    #[serde(borrow, default)]
    pub outcome: Option<Outcome<'a>>,
    #[serde(borrow, default)]
    pub terminal_id: Option<Str<'a>>,
    #[serde(default)]
    pub exit_code: Option<i64>,
    #[serde(borrow, default)]
    pub signal: Option<Str<'a>>,
    #[serde(borrow, default)]
    pub action: Option<Str<'a>>,
}

/// `modes` of a session's answer.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Modes<'a> {
    #[serde(borrow, default)]
    pub current_mode_id: Option<Str<'a>>,
}

/// `PromptResponse.usage`.
#[derive(Deserialize, Default, Clone, Copy)]
#[serde(rename_all = "camelCase")]
pub struct Usage {
    #[serde(default)]
    pub total_tokens: Option<u64>,
    #[serde(default)]
    pub input_tokens: Option<u64>,
    #[serde(default)]
    pub output_tokens: Option<u64>,
    #[serde(default)]
    pub thought_tokens: Option<u64>,
    #[serde(default)]
    pub cached_read_tokens: Option<u64>,
    #[serde(default)]
    pub cached_write_tokens: Option<u64>,
}

/// A permission answer's `outcome`.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Outcome<'a> {
    #[serde(borrow, default)]
    pub outcome: Option<Str<'a>>,
    #[serde(borrow, default)]
    pub option_id: Option<Str<'a>>,
}

/// One option of a permission request.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PermissionOption<'a> {
    #[serde(borrow, default)]
    pub option_id: Option<Str<'a>>,
    #[serde(borrow, default)]
    pub kind: Option<Str<'a>>,
}

/// A content block: text is read, other kinds are counted.
#[derive(Deserialize)]
pub struct ContentBlock<'a> {
    #[serde(rename = "type", borrow, default)]
    pub kind: Option<Str<'a>>,
    #[serde(borrow, default)]
    pub text: Option<Str<'a>>,
}

/// A permission request's `toolCall`.
#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase")]
pub struct ToolCallFields<'a> {
    #[serde(borrow, default)]
    pub tool_call_id: Option<Str<'a>>,
    #[serde(borrow, default)]
    pub title: Option<Str<'a>>,
}

/// A `session/update`'s `update`.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Update<'a> {
    #[serde(borrow, default)]
    pub session_update: Option<Str<'a>>,
    /// A chunk's content block, or a tool call's content list.
    #[serde(borrow, default)]
    pub content: Option<&'a RawValue>,
    #[serde(borrow, default)]
    pub message_id: Option<Str<'a>>,
    #[serde(borrow, default)]
    pub tool_call_id: Option<Str<'a>>,
    #[serde(borrow, default)]
    pub title: Option<Str<'a>>,
    #[serde(borrow, default)]
    pub kind: Option<Str<'a>>,
    #[serde(borrow, default)]
    pub status: Option<Str<'a>>,
    #[serde(borrow, default)]
    pub locations: Option<Vec<Location<'a>>>,
    #[serde(borrow, default)]
    pub raw_input: Option<&'a RawValue>,
    #[serde(borrow, default)]
    pub raw_output: Option<&'a RawValue>,
    #[serde(borrow, default)]
    pub entries: Option<Vec<PlanEntry<'a>>>,
    #[serde(borrow, default)]
    pub available_commands: Option<Vec<Command<'a>>>,
    #[serde(borrow, default)]
    pub current_mode_id: Option<Str<'a>>,
    #[serde(default)]
    pub used: Option<u64>,
    #[serde(default)]
    pub size: Option<u64>,
    #[serde(default)]
    pub cost: Option<Cost>,
    /// v2 `state_update`.
    #[serde(borrow, default)]
    pub stop_reason: Option<Str<'a>>,
}

/// A tool call's location.
#[derive(Deserialize)]
pub struct Location<'a> {
    #[serde(borrow, default)]
    pub path: Option<Str<'a>>,
}

/// One item of a tool call's `content`.
#[derive(Deserialize)]
pub struct ToolContent<'a> {
    #[serde(rename = "type", borrow, default)]
    pub kind: Option<Str<'a>>,
}

/// One entry of a plan.
#[derive(Deserialize)]
pub struct PlanEntry<'a> {
    #[serde(borrow, default)]
    pub content: Option<Str<'a>>,
    #[serde(borrow, default)]
    pub status: Option<Str<'a>>,
    #[serde(borrow, default)]
    pub priority: Option<Str<'a>>,
}

/// One available command.
#[derive(Deserialize)]
pub struct Command<'a> {
    #[serde(borrow, default)]
    pub name: Option<Str<'a>>,
}

/// `cost` of a `usage_update`.
#[derive(Deserialize)]
pub struct Cost {
    #[serde(default)]
    pub amount: Option<f64>,
    #[serde(default)]
    pub currency: Option<String>,
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

/// Update kinds the whole-trace model only counts: a frame of one of them
/// need not be parsed there.
pub use acp_tee_shared::session::CHUNK_KINDS as COUNTED_KINDS;

/// The `sessionUpdate` of the message in `raw` when its bytes name it once,
/// plainly: the member name appears exactly once and no `\u` escape is
/// anywhere (an escaped `"session\u0055pdate"` is the same name), so that
/// one occurrence is the member the full parse would read. `None` whenever
/// that cannot be told from the bytes; the caller then parses.
pub fn plain_update_kind(raw: &[u8]) -> Option<&str> {
    const NAME: &[u8] = b"\"sessionUpdate\"";
    // Built once: building a searcher per frame cost a thirtieth of the fold.
    static NAME_FINDER: LazyLock<Finder<'static>> = LazyLock::new(|| Finder::new(NAME));
    static ESCAPE_FINDER: LazyLock<Finder<'static>> = LazyLock::new(|| Finder::new(b"\\u"));
    let mut found = NAME_FINDER.find_iter(raw);
    let at = found.next()?;
    if found.next().is_some() || ESCAPE_FINDER.find(raw).is_some() {
        return None;
    }
    let skip_ws = |b: &[u8]| -> usize { b.iter().take_while(|c| matches!(c, b' ' | b'\t' | b'\r' | b'\n')).count() };
    let mut rest = &raw[at + NAME.len()..];
    rest = &rest[skip_ws(rest)..];
    rest = rest.strip_prefix(b":")?;
    rest = &rest[skip_ws(rest)..];
    rest = rest.strip_prefix(b"\"")?;
    let end = memchr::memchr2(b'"', b'\\', rest)?;
    if rest[end] != b'"' {
        return None;
    }
    std::str::from_utf8(&rest[..end]).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_plain_kind_is_read_from_the_bytes_and_anything_doubtful_is_left_to_the_parser() {
        fn kind(s: &str) -> Option<&str> {
            plain_update_kind(s.as_bytes())
        }
        assert_eq!(
            kind(r#"{"params":{"update":{"sessionUpdate" : "agent_message_chunk","content":{}}}}"#),
            Some("agent_message_chunk")
        );
        // Named twice, escaped anywhere, not a string, or an escape in the value.
        assert_eq!(
            kind(
                r#"{"params":{"_meta":{"sessionUpdate":"agent_message_chunk"},"update":{"sessionUpdate":"tool_call"}}}"#
            ),
            None
        );
        assert_eq!(
            kind(
                r#"{"params":{"update":{"session\u0055pdate":"tool_call"},"x":{"sessionUpdate":"agent_message_chunk"}}}"#
            ),
            None
        );
        assert_eq!(kind(r#"{"params":{"update":{"sessionUpdate":7}}}"#), None);
        assert_eq!(kind(r#"{"params":{"update":{"sessionUpdate":"a\"b"}}}"#), None);
        assert_eq!(kind(r#"{"params":{"update":{}}}"#), None);
        // A text holding the name is escaped (`\"`), so it is no member name.
        assert_eq!(
            kind(
                r#"{"params":{"update":{"sessionUpdate":"agent_message_chunk","content":{"text":"say \"sessionUpdate\""}}}}"#
            ),
            Some("agent_message_chunk")
        );
    }
}
