//! What `acp-tee check` finds in a trace: the payloads of
//! `/api/traces/{id}/findings` and of `acp-tee check --format json`.

use serde::{Deserialize, Serialize};
use std::fmt;
use std::str::FromStr;

/// How bad a finding is: an `Error` breaks the protocol, a `Warning` is
/// likely trouble, `Info` is worth knowing. Ordered from least to most severe.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    /// Worth knowing.
    Info,
    /// Likely trouble, or a rule the spec says SHOULD.
    Warning,
    /// Breaks the protocol (a MUST of JSON-RPC or ACP).
    Error,
}

impl Severity {
    /// Every severity, least severe first.
    pub const ALL: [Severity; 3] = [Severity::Info, Severity::Warning, Severity::Error];

    /// Its name: `info`, `warning` or `error`.
    pub fn as_str(self) -> &'static str {
        match self {
            Severity::Info => "info",
            Severity::Warning => "warning",
            Severity::Error => "error",
        }
    }
}

impl fmt::Display for Severity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for Severity {
    type Err = crate::UnknownName;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Severity::ALL
            .into_iter()
            .find(|v| v.as_str() == s)
            .ok_or_else(|| crate::UnknownName { what: "severity", name: s.to_owned() })
    }
}

/// One thing a rule found.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Finding {
    /// The rule's stable code (`rpc.unknown-response`).
    pub code: String,
    /// How bad it is.
    pub severity: Severity,
    /// The frames involved, in order; the last is where it was found.
    pub seqs: Vec<i64>,
    /// One sentence saying what is wrong.
    pub message: String,
}

impl Finding {
    /// The frame it was found at (its last seq).
    pub fn seq(&self) -> Option<i64> {
        self.seqs.last().copied()
    }
}

/// How many findings of each severity.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct FindingCounts {
    /// Findings of severity `error`.
    pub errors: u64,
    /// Findings of severity `warning`.
    pub warnings: u64,
    /// Findings of severity `info`.
    pub infos: u64,
}

impl FindingCounts {
    /// Counts one finding of `severity`.
    pub fn add(&mut self, severity: Severity) {
        match severity {
            Severity::Error => self.errors += 1,
            Severity::Warning => self.warnings += 1,
            Severity::Info => self.infos += 1,
        }
    }

    /// All findings counted.
    pub fn total(&self) -> u64 {
        self.errors + self.warnings + self.infos
    }
}

/// How many findings one code gave.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct CodeCount {
    /// The rule's code.
    pub code: String,
    /// Its severity.
    pub severity: Severity,
    /// Findings it gave, listed or not.
    pub count: u64,
}

/// Everything the checks found in one trace.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TraceFindings {
    /// The trace checked.
    pub trace_id: i64,
    /// Frames read.
    pub frames: u64,
    /// The protocol version the trace negotiated, if it did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub protocol_version: Option<i64>,
    /// The protocol whose rules judged the trace: `mcp` for an MCP trace
    /// (JSON-RPC, lifecycle and MCP rules), else `acp`.
    #[serde(default)]
    pub protocol: crate::Protocol,
    /// Findings by severity, all of them (listed or not).
    pub counts: FindingCounts,
    /// Findings per code, for the codes that gave any.
    pub by_code: Vec<CodeCount>,
    /// The findings in the order of the frames they were found at (at most
    /// a bounded number; the rest are in the counts only).
    pub findings: Vec<Finding>,
    /// Findings counted but not listed.
    pub left_out: u64,
    /// The trace was still being recorded: requests may be answered later.
    #[serde(default)]
    pub live: bool,
    /// What the conversation held, as the checker's fold counted it (the
    /// same fold `show` and the OTLP export count with).
    #[serde(default)]
    pub conversation: ConversationCounts,
}

/// Turns, tool calls and permission requests of the sessions a trace kept.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ConversationCounts {
    pub turns: u64,
    pub tool_calls: u64,
    pub permission_requests: u64,
}
