//! The domain model: what a trace is made of, shared by every part that
//! records, stores, imports or hands traces on. Plain data, no I/O; the
//! relay, the recorder, the store and the imports all depend on it and on
//! none of each other's process code.

use acp_tee_shared::{Direction, FrameKind, Protocol};
use serde::{Deserialize, Serialize};
use std::fmt;
use std::str::FromStr;

/// Frames of fewer bytes than this are stored without their preview (the
/// `preview` column is NULL): readers make it from the raw bytes, which at
/// that size costs microseconds, and recording is spared both the work and
/// the bytes. Longer frames keep theirs, so that no reader has to load a
/// large message to show one line of it.
pub const PREVIEW_STORED_FROM: usize = 4096;

/// The end reason of a trace whose recorder vanished without finishing it.
pub const CUT_OFF: &str = "cut off: acp-tee and its recorder were killed before the run ended";

/// The end reason the recorder writes when the relay died without saying how
/// the run ended.
pub const RELAY_KILLED: &str = "acp-tee was killed before the run ended";

/// How a trace came to be; stored as its lower-case name (`traces.mode`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Mode {
    /// `acp-tee -- AGENT`: the tee spawned the agent and relayed its stdio.
    Wrap,
    /// `acp-tee proxy`: a proxy in a conductor chain.
    Proxy,
    /// `acp-tee import`: read from a file another tool wrote.
    Import,
    /// `acp-tee http-proxy`: one ACP connection over HTTP or WebSocket.
    Http,
}

impl Mode {
    /// The name stored and exported for this mode.
    pub const fn as_str(self) -> &'static str {
        match self {
            Mode::Wrap => "wrap",
            Mode::Proxy => "proxy",
            Mode::Import => "import",
            Mode::Http => "http",
        }
    }

    /// The mode named `text`, or `None` for text no mode has (a trace
    /// imported from a newer version may carry one).
    pub fn parse(text: &str) -> Option<Mode> {
        text.parse().ok()
    }
}

impl fmt::Display for Mode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A mode name that is not `wrap`, `proxy`, `import` or `http`.
#[derive(Debug, thiserror::Error)]
#[error("unknown mode {0:?}: expected wrap, proxy, import or http")]
pub struct UnknownMode(String);

impl FromStr for Mode {
    type Err = UnknownMode;

    fn from_str(s: &str) -> Result<Mode, UnknownMode> {
        [Mode::Wrap, Mode::Proxy, Mode::Import, Mode::Http]
            .into_iter()
            .find(|m| m.as_str() == s)
            .ok_or_else(|| UnknownMode(s.into()))
    }
}

/// What the recorder needs to know to open a trace.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TraceStart {
    /// `--name`, or the agent program's file name.
    pub name: Option<String>,
    /// The agent's command line.
    pub command: Vec<String>,
    /// acp-tee's working directory.
    pub cwd: Option<String>,
    /// A [`Mode`]'s name; a trace imported from an `acp-tee-trace` file
    /// keeps the text its source had.
    pub mode: String,
    /// Wall-clock start, UTC, RFC 3339.
    pub started_at: String,
    /// `record --protocol acp|mcp`: the protocol the trace speaks, stored
    /// at its start; `None` (`auto`): known from its first `initialize`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub protocol: Option<Protocol>,
}

/// How a run ended, as the relay saw it.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct TraceEnd {
    /// The exit code acp-tee exits with.
    pub exit_code: Option<i32>,
    /// The signal that ended the agent, if one did.
    pub exit_signal: Option<i32>,
    /// Why the run ended, in words.
    pub end_reason: String,
}

/// One frame ready to be stored.
#[derive(Clone, Debug, PartialEq)]
pub struct NewFrame {
    /// Position in the trace, from 1.
    pub seq: i64,
    /// Monotonic nanoseconds since the trace started.
    pub t_ns: i64,
    /// Which way it went.
    pub dir: Direction,
    /// What it is.
    pub kind: FrameKind,
    /// JSON-RPC id as JSON text.
    pub rpc_id: Option<String>,
    /// JSON-RPC method (for responses, the request's).
    pub method: Option<String>,
    /// ACP session id.
    pub session_id: Option<String>,
    /// For responses: the request's seq.
    pub reply_to_seq: Option<i64>,
    /// For responses: nanoseconds since the request.
    pub latency_ns: Option<i64>,
    /// How many JSON-RPC error responses the frame holds.
    pub errors: i64,
    /// The exact bytes.
    pub raw: Vec<u8>,
    /// Proxy mode: the exact bytes on the successor side of the hop.
    pub envelope: Option<Vec<u8>>,
    /// An MCP-over-ACP message.
    pub mcp: bool,
    /// For `mcp/message`: the inner MCP method.
    pub mcp_method: Option<String>,
    /// A short text for the viewer's diagram; for frames shorter than
    /// [`PREVIEW_STORED_FROM`] it is not stored, and readers make it again.
    pub preview: Option<String>,
    /// Imports from a multi-component source: the sending component's name.
    pub sender: Option<String>,
    /// Imports from a multi-component source: the receiving component's name.
    pub receiver: Option<String>,
    /// For a batch: each of its messages, in order (their methods and
    /// latencies go into the per-method stats); empty for other frames.
    pub batch: Vec<BatchMessage>,
    /// Set on the frame that made the trace's protocol known (its first
    /// `initialize`, or the answer to it): the trace's `protocol` is stored
    /// with it, in the same transaction.
    pub protocol_known: Option<Protocol>,
}

/// One message of a batch frame, as the per-method stats count it.
#[derive(Clone, Debug, PartialEq)]
pub struct BatchMessage {
    /// Request, notification, response, error or invalid.
    pub kind: FrameKind,
    /// Its method (for a response, its request's, once paired).
    pub method: Option<String>,
    /// For a paired response: the `seq` of its request.
    pub reply_to_seq: Option<i64>,
    /// For a paired response: nanoseconds since the request.
    pub latency_ns: Option<i64>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn modes_read_and_write_the_names_stored_before_the_enum() {
        for (mode, text) in
            [(Mode::Wrap, "wrap"), (Mode::Proxy, "proxy"), (Mode::Import, "import"), (Mode::Http, "http")]
        {
            assert_eq!(mode.to_string(), text);
            assert_eq!(Mode::parse(text), Some(mode));
            assert_eq!(serde_json::to_string(&mode).unwrap(), format!("\"{text}\""));
            assert_eq!(serde_json::from_str::<Mode>(&format!("\"{text}\"")).unwrap(), mode);
        }
        assert_eq!(Mode::parse("Wrap"), None);
        assert!("replay".parse::<Mode>().unwrap_err().to_string().contains("unknown mode"));
    }
}
