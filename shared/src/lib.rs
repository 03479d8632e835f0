//! The nouns of acp-tee, shared by the recorder (`tee/`), its HTTP API and the
//! browser viewer (`viewer/`).
//!
//! # Layout
//! - [`Direction`] and [`FrameKind`]: what a recorded frame is.
//! - [`TraceMeta`]: one recorded run, as listed and exported.
//! - [`ExportFrame`], [`ExportHeader`], [`NdjsonHeader`]: the `acp-tee-trace`
//!   export format, version [`FORMAT_VERSION`] (specified in
//!   `docs/trace-format.md`).
//!
//! - [`api`]: the payloads of the HTTP API the viewer reads.
//! - [`diff`]: two traces compared (`acp-tee diff`, the compare view).
//! - [`check`]: the findings of `acp-tee check` and its API route.
//!
//! This crate does no I/O and depends on serde only, so it builds for
//! `wasm32-unknown-unknown`.

pub mod api;
pub mod check;
pub mod diff;
pub mod session;

use serde::{Deserialize, Serialize};
use std::fmt;
use std::str::FromStr;

/// The `format` value of every document acp-tee exports.
pub const FORMAT_NAME: &str = "acp-tee-trace";

/// The version of the export format this crate writes.
pub const FORMAT_VERSION: u32 = 1;

/// Which way a frame crossed the tee.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Direction {
    /// From the client (editor) to the agent: the tee's stdin.
    ClientToAgent,
    /// From the agent to the client: the agent's stdout.
    AgentToClient,
    /// Free-form log text the agent wrote to its stderr.
    AgentStderr,
}

impl Direction {
    /// Every direction, in the order lanes are drawn.
    pub const ALL: [Direction; 3] = [Direction::ClientToAgent, Direction::AgentToClient, Direction::AgentStderr];

    /// The name used in the store and the export (`client_to_agent`, ...).
    pub fn as_str(self) -> &'static str {
        match self {
            Direction::ClientToAgent => "client_to_agent",
            Direction::AgentToClient => "agent_to_client",
            Direction::AgentStderr => "agent_stderr",
        }
    }

    /// The direction a reply to a message travelling this way takes, if any.
    pub fn opposite(self) -> Option<Direction> {
        match self {
            Direction::ClientToAgent => Some(Direction::AgentToClient),
            Direction::AgentToClient => Some(Direction::ClientToAgent),
            Direction::AgentStderr => None,
        }
    }
}

/// What a frame turned out to be when parsed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FrameKind {
    /// A JSON-RPC request: `method` and `id`.
    Request,
    /// A successful JSON-RPC response: `id` and `result`.
    Response,
    /// A JSON-RPC error response: `id` and `error`.
    Error,
    /// A JSON-RPC notification: `method` without `id`.
    Notification,
    /// A JSON array of JSON-RPC messages on one line.
    Batch,
    /// Bytes that are not a JSON-RPC message (including empty lines).
    Invalid,
    /// A line of the agent's stderr.
    Stderr,
}

impl FrameKind {
    /// Every kind.
    pub const ALL: [FrameKind; 7] = [
        FrameKind::Request,
        FrameKind::Response,
        FrameKind::Error,
        FrameKind::Notification,
        FrameKind::Batch,
        FrameKind::Invalid,
        FrameKind::Stderr,
    ];

    /// The name used in the store and the export (`request`, ...).
    pub fn as_str(self) -> &'static str {
        match self {
            FrameKind::Request => "request",
            FrameKind::Response => "response",
            FrameKind::Error => "error",
            FrameKind::Notification => "notification",
            FrameKind::Batch => "batch",
            FrameKind::Invalid => "invalid",
            FrameKind::Stderr => "stderr",
        }
    }
}

/// The protocol a trace speaks, known from its first `initialize` (or
/// given with `record --protocol`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Protocol {
    /// The Agent Client Protocol (integer `protocolVersion`).
    #[default]
    Acp,
    /// The Model Context Protocol (string `protocolVersion`).
    Mcp,
}

impl Protocol {
    /// The name used in the store and the export (`acp`, `mcp`).
    pub fn as_str(self) -> &'static str {
        match self {
            Protocol::Acp => "acp",
            Protocol::Mcp => "mcp",
        }
    }
}

impl fmt::Display for Protocol {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for Protocol {
    type Err = UnknownName;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        [Protocol::Acp, Protocol::Mcp]
            .into_iter()
            .find(|p| p.as_str() == s)
            .ok_or_else(|| UnknownName { what: "protocol", name: s.to_owned() })
    }
}

/// A name that is not one of the known values of an enum.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnknownName {
    /// What was being parsed (`direction`, `kind`).
    pub what: &'static str,
    /// The text that did not match.
    pub name: String,
}

impl fmt::Display for UnknownName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "unknown {} `{}`", self.what, self.name)
    }
}

impl std::error::Error for UnknownName {}

impl FromStr for Direction {
    type Err = UnknownName;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Direction::ALL
            .into_iter()
            .find(|d| d.as_str() == s)
            .ok_or_else(|| UnknownName { what: "direction", name: s.to_owned() })
    }
}

impl FromStr for FrameKind {
    type Err = UnknownName;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        FrameKind::ALL
            .into_iter()
            .find(|k| k.as_str() == s)
            .ok_or_else(|| UnknownName { what: "kind", name: s.to_owned() })
    }
}

impl fmt::Display for Direction {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl fmt::Display for FrameKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One recorded run: everything about a trace but its frames.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TraceMeta {
    /// The store's id of the trace.
    pub id: i64,
    /// The name given with `--name`, or the agent program's file name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// The agent's command line, one element per argument.
    pub command: Vec<String>,
    /// The working directory acp-tee ran in.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cwd: Option<String>,
    /// How the trace was made: `wrap`, `proxy` or `import`.
    pub mode: String,
    /// Wall-clock start, UTC, RFC 3339.
    pub started_at: String,
    /// Wall-clock end, UTC, RFC 3339; absent while the run is live.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ended_at: Option<String>,
    /// The exit code acp-tee passed on (128 + signal when the agent was killed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exit_code: Option<i32>,
    /// The signal that ended the agent, when one did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exit_signal: Option<i32>,
    /// Why the run ended, in words (`agent exited`, `acp-tee was killed`, ...).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub end_reason: Option<String>,
    /// How many frames the store holds for this trace.
    pub frame_count: i64,
    /// How many of them are JSON-RPC error responses.
    pub error_count: i64,
    /// How many frames crossed the tee but could not be stored (with
    /// `missing_unknown`, at least so many).
    pub missing_frames: i64,
    /// True when frames are missing whose number is not known (no recorder
    /// survived to count them): `missing_frames` is then a lower bound.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub missing_unknown: bool,
    /// True when every prune leaves the trace alone (`acp-tee pin`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub pinned: bool,
    /// The bytes the store holds for the trace's frames (as recorded, with
    /// their envelopes), without the store's indexes.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub bytes: i64,
    /// The protocol the trace speaks (`acp`, `mcp`); absent while not known
    /// (no `initialize` seen yet) and for traces recorded before acp-tee
    /// stored it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub protocol: Option<Protocol>,
    /// The trace this one's relay ran under (an MCP server the agent of
    /// that trace started, wrapped in acp-tee); `None` when none is known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent_trace: Option<i64>,
}

/// A size in bytes in binary units, three digits at most: `512 B`,
/// `1.50 KiB`, `12.3 MiB`, `2.04 GiB` (the viewer's and the command line's
/// one way of writing sizes).
pub fn format_bytes(n: u64) -> String {
    const UNITS: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut v = n as f64;
    let mut unit = 0;
    while v >= 1024.0 && unit + 1 < UNITS.len() {
        v /= 1024.0;
        unit += 1;
    }
    match unit {
        0 => format!("{v:.0} B"),
        _ if v < 10.0 => format!("{v:.2} {}", UNITS[unit]),
        _ if v < 100.0 => format!("{v:.1} {}", UNITS[unit]),
        _ => format!("{v:.0} {}", UNITS[unit]),
    }
}

fn is_zero(n: &i64) -> bool {
    *n == 0
}

/// A JSON value kept as its exact text: written back as it was read, never
/// through a number type that would round or reformat it.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(transparent)]
pub struct JsonText(pub Box<serde_json::value::RawValue>);

impl JsonText {
    /// `text` if it is one JSON value.
    pub fn parse(text: &str) -> Option<JsonText> {
        serde_json::from_str::<Box<serde_json::value::RawValue>>(text).ok().map(JsonText)
    }

    /// The exact text.
    pub fn get(&self) -> &str {
        self.0.get()
    }
}

impl PartialEq for JsonText {
    fn eq(&self, other: &Self) -> bool {
        self.get() == other.get()
    }
}

/// One frame of the `acp-tee-trace` export.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ExportFrame {
    /// Position in the trace, from 1, across all directions.
    pub seq: i64,
    /// Nanoseconds since the trace started (monotonic clock).
    pub t_ns: i64,
    /// Which way the frame went.
    pub dir: Direction,
    /// What the frame is.
    pub kind: FrameKind,
    /// The JSON-RPC id, as it appeared on the wire: its exact JSON text
    /// (`18446744073709551616`, `1E2` and `-0` stay as written).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<JsonText>,
    /// The JSON-RPC method; for responses, the method of the request answered.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub method: Option<String>,
    /// The ACP session the message belongs to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_id: Option<String>,
    /// For responses: the `seq` of the request they answer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reply_to_seq: Option<i64>,
    /// For responses: nanoseconds between the request and this response.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub latency_ns: Option<i64>,
    /// The exact bytes of the frame (newline included) when they are UTF-8.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub raw: Option<String>,
    /// The exact bytes, base64 (standard alphabet, padded), when they are not UTF-8.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub raw_base64: Option<String>,
    /// `"mcp"` for MCP-over-ACP messages; absent for plain ACP.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub protocol: Option<String>,
    /// For `mcp/message`: the inner MCP method.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mcp_method: Option<String>,
    /// Proxy mode: the exact bytes on the successor side of the hop (the
    /// `proxy/successor` envelope), when they are UTF-8.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub envelope: Option<String>,
    /// Proxy mode: the envelope's bytes, base64, when they are not UTF-8.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub envelope_base64: Option<String>,
    /// Imports from a multi-component source (the conductor's `.jsons`): the
    /// component that sent the message (`Client`, `Proxy(0)`, `Agent`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sender: Option<String>,
    /// Imports from a multi-component source: the component that received it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub receiver: Option<String>,
}

/// The first line of an NDJSON export of one trace; its frames follow, one a line.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct NdjsonHeader {
    /// Always [`FORMAT_NAME`].
    pub format: String,
    /// The format version, [`FORMAT_VERSION`] when written by this crate.
    pub version: u32,
    /// The trace whose frames follow.
    pub trace: TraceMeta,
}

/// The opening fields of a JSON export document.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ExportHeader {
    /// Always [`FORMAT_NAME`].
    pub format: String,
    /// The format version.
    pub version: u32,
}

impl Default for ExportHeader {
    fn default() -> Self {
        ExportHeader { format: FORMAT_NAME.to_owned(), version: FORMAT_VERSION }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_in_binary_units_three_digits_at_most() {
        assert_eq!(format_bytes(0), "0 B");
        assert_eq!(format_bytes(1023), "1023 B");
        assert_eq!(format_bytes(1024), "1.00 KiB");
        assert_eq!(format_bytes(1536), "1.50 KiB");
        assert_eq!(format_bytes(1_300_000), "1.24 MiB");
        assert_eq!(format_bytes(12_900_000), "12.3 MiB");
        assert_eq!(format_bytes(300 << 20), "300 MiB");
        assert_eq!(format_bytes(2_190_000_000), "2.04 GiB");
        assert_eq!(format_bytes(5 << 30), "5.00 GiB");
    }

    #[test]
    fn names_round_trip() {
        for d in Direction::ALL {
            assert_eq!(d.as_str().parse::<Direction>().unwrap(), d);
            assert_eq!(serde_json::to_string(&d).unwrap(), format!("\"{d}\""));
        }
        for k in FrameKind::ALL {
            assert_eq!(k.as_str().parse::<FrameKind>().unwrap(), k);
            assert_eq!(serde_json::to_string(&k).unwrap(), format!("\"{k}\""));
        }
        assert_eq!("sideways".parse::<Direction>().unwrap_err().to_string(), "unknown direction `sideways`");
    }

    #[test]
    fn absent_frame_fields_are_omitted() {
        let f = ExportFrame {
            seq: 1,
            t_ns: 5,
            dir: Direction::AgentStderr,
            kind: FrameKind::Stderr,
            id: None,
            method: None,
            session_id: None,
            reply_to_seq: None,
            latency_ns: None,
            raw: Some("hi\n".into()),
            raw_base64: None,
            protocol: None,
            mcp_method: None,
            envelope: None,
            envelope_base64: None,
            sender: None,
            receiver: None,
        };
        assert_eq!(
            serde_json::to_string(&f).unwrap(),
            r#"{"seq":1,"t_ns":5,"dir":"agent_stderr","kind":"stderr","raw":"hi\n"}"#
        );
    }
}
