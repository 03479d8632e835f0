//! The rules: each a stable code, a severity and what it means.

use acp_tee_shared::check::Severity;

/// A rule the checker applies. Codes are stable: CI scripts filter on them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Rule {
    /// A line that is not JSON (on the agent's stdout, or the client's).
    NotJson,
    /// JSON that is not a JSON-RPC message.
    NotAMessage,
    /// `jsonrpc` missing or not `"2.0"`.
    JsonrpcVersion,
    /// An id that is not a string or an integer.
    IdType,
    /// A response with both `result` and `error`.
    ResultAndError,
    /// A response to an id that was never asked.
    UnknownResponse,
    /// A second response to one request.
    AnsweredTwice,
    /// A request reusing the id of one still unanswered.
    DuplicateId,
    /// A request still unanswered at the trace's end.
    Unanswered,
    /// A line longer than the limit.
    LineTooLarge,
    /// A request before `initialize`.
    BeforeInitialize,
    /// A second `initialize`.
    SecondInitialize,
    /// MCP: a request other than a ping while initialization is under way.
    DuringInitialization,
    /// MCP: a `tools/call` of a tool the whole tool list does not have.
    UnlistedTool,
    /// A `sessionId` no session/new, load, resume or fork made.
    UnknownSession,
    /// A second `session/prompt` while one is in flight on the session.
    PromptInFlight,
    /// A turn cancelled with `session/cancel` that did not end `cancelled`.
    CancelNotHonoured,
    /// A request `$/cancel_request` named, answered with an error other than -32800.
    CancelRequestAnswer,
    /// MCP: an error object without an integer `code` or a string `message`.
    ErrorShape,
    /// `session/load` answered without replaying the conversation.
    LoadWithoutReplay,
    /// A method the peer did not advertise the capability for.
    CapabilityNotAdvertised,
    /// A permission outcome naming an option that was not offered.
    PermissionUnknownOption,
    /// A `tool_call_update` for a `toolCallId` no `tool_call` announced.
    UnknownToolCall,
    /// Params that do not fit the method's schema.
    SchemaParams,
    /// A result that does not fit the schema of the request's method.
    SchemaResult,
    /// An error object that does not fit the schema.
    SchemaError,
    /// A method the schema does not have (and not `_`-prefixed), or sent the wrong way.
    UnknownMethod,
    /// The trace negotiated a protocol version whose schema is not checked.
    VersionUnchecked,
    /// A limit of the checker was reached: what is beyond was not followed.
    CheckLimit,
}

impl Rule {
    /// Every rule, in the order docs/checks.md lists them.
    pub const ALL: [Rule; 29] = [
        Rule::NotJson,
        Rule::NotAMessage,
        Rule::JsonrpcVersion,
        Rule::IdType,
        Rule::ResultAndError,
        Rule::ErrorShape,
        Rule::UnknownResponse,
        Rule::AnsweredTwice,
        Rule::DuplicateId,
        Rule::Unanswered,
        Rule::LineTooLarge,
        Rule::BeforeInitialize,
        Rule::SecondInitialize,
        Rule::DuringInitialization,
        Rule::UnknownSession,
        Rule::PromptInFlight,
        Rule::CancelNotHonoured,
        Rule::CancelRequestAnswer,
        Rule::LoadWithoutReplay,
        Rule::UnknownToolCall,
        Rule::CapabilityNotAdvertised,
        Rule::PermissionUnknownOption,
        Rule::SchemaParams,
        Rule::SchemaResult,
        Rule::SchemaError,
        Rule::UnknownMethod,
        Rule::VersionUnchecked,
        Rule::UnlistedTool,
        Rule::CheckLimit,
    ];

    /// The stable code.
    pub fn code(self) -> &'static str {
        match self {
            Rule::NotJson => "transport.not-json",
            Rule::LineTooLarge => "transport.line-too-large",
            Rule::NotAMessage => "rpc.not-a-message",
            Rule::JsonrpcVersion => "rpc.jsonrpc-version",
            Rule::IdType => "rpc.id-type",
            Rule::ResultAndError => "rpc.result-and-error",
            Rule::UnknownResponse => "rpc.unknown-response",
            Rule::AnsweredTwice => "rpc.answered-twice",
            Rule::DuplicateId => "rpc.duplicate-id",
            Rule::Unanswered => "rpc.unanswered",
            Rule::CancelRequestAnswer => "rpc.cancel-request-answer",
            Rule::ErrorShape => "rpc.error-shape",
            Rule::BeforeInitialize => "lifecycle.before-initialize",
            Rule::SecondInitialize => "lifecycle.second-initialize",
            Rule::DuringInitialization => "lifecycle.during-initialization",
            Rule::UnknownSession => "session.unknown",
            Rule::PromptInFlight => "session.prompt-in-flight",
            Rule::CancelNotHonoured => "session.cancel-not-honoured",
            Rule::LoadWithoutReplay => "session.load-without-replay",
            Rule::UnknownToolCall => "session.unknown-tool-call",
            Rule::CapabilityNotAdvertised => "capability.not-advertised",
            Rule::PermissionUnknownOption => "permission.unknown-option",
            Rule::SchemaParams => "schema.params",
            Rule::SchemaResult => "schema.result",
            Rule::SchemaError => "schema.error",
            Rule::UnknownMethod => "schema.unknown-method",
            Rule::VersionUnchecked => "schema.version-unchecked",
            Rule::UnlistedTool => "mcp.unlisted-tool",
            Rule::CheckLimit => "check.limit",
        }
    }

    /// How bad a finding of this rule is.
    pub fn severity(self) -> Severity {
        match self {
            Rule::Unanswered
            | Rule::LineTooLarge
            | Rule::LoadWithoutReplay
            | Rule::UnknownToolCall
            | Rule::UnknownMethod
            | Rule::DuringInitialization
            | Rule::UnlistedTool => Severity::Warning,
            Rule::VersionUnchecked | Rule::CheckLimit => Severity::Info,
            _ => Severity::Error,
        }
    }

    /// Its index in [`Rule::ALL`].
    pub fn index(self) -> usize {
        Rule::ALL.iter().position(|r| *r == self).unwrap_or(0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_are_distinct_and_indexed() {
        let mut codes: Vec<&str> = Rule::ALL.iter().map(|r| r.code()).collect();
        codes.sort_unstable();
        codes.dedup();
        assert_eq!(codes.len(), Rule::ALL.len());
        for (i, r) in Rule::ALL.iter().enumerate() {
            assert_eq!(r.index(), i);
        }
    }
}
