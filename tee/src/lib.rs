//! acp-tee: a recorder for the Agent Client Protocol.
//!
//! The binary (`src/main.rs`) calls [`main`]; everything else here is what
//! the integration tests drive the library through. The modules stay private:
//!
//! - `model`: what a trace is made of ([`TraceStart`], [`TraceEnd`], [`NewFrame`], [`Mode`], end reasons).
//! - `frame`: splitting byte streams into frames, classifying and pairing them ([`Framer`]; pure).
//! - `relay`: wrap mode; spawns the agent and moves bytes, handing copies off.
//! - `chain`: proxy mode under the ACP conductor; routes `proxy/successor` envelopes.
//! - `http_proxy`: `acp-tee http-proxy`, ACP over HTTP and WebSocket passed on and recorded.
//! - `handoff`: the pipe protocol from the relay to the recorder process.
//! - `end_note`: the run's end as the relay knew it, left beside the store should no recorder survive to store it.
//! - `recorder`: the recorder process; frames what it is handed and stores it.
//! - `server`: `acp-tee serve`, the viewer's axum server and JSON API ([`app`]).
//! - `store`: the SQLite trace store ([`Store`]; its roles [`Recording`], `Import` and [`Reader`], and maintenance).
//! - `export`: exports: `acp-tee-trace` JSON and NDJSON, the conductor's `.jsons`, Perfetto.
//! - `import`: imports of `acp-tee-trace`, the conductor's `.jsons` and sacp-tee logs.
//! - `check`: protocol checks over a stored trace (`acp-tee check`, the findings route).
//! - `session`: the session model (turns, tool calls, permission waits, open requests), derived on read.
//! - `redact`: masking secrets in frames, on export and optionally when recording.
//! - `replay`: `acp-tee diff` and `acp-tee replay` (a trace's client or agent against a live peer).
//! - `cli`: the command line.
//! - `clock`: wall-clock timestamps; `proc`: process liveness and thread priority.
//!
//! See ARCHITECTURE.md for the invariants each module keeps.

mod chain;
mod check;
mod cli;
mod clock;
mod end_note;
mod export;
mod frame;
mod handoff;
mod http_proxy;
mod import;
mod mcp;
mod model;
mod otlp;
mod proc;
mod read;
mod recorder;
mod redact;
mod relay;
mod replay;
mod server;
mod session;
mod store;
mod text;

pub use check::MAX_SESSIONS as CHECK_MAX_SESSIONS;
pub use cli::main;
pub use frame::Framer;
pub use http_proxy::{
    ADDRESS_BYTES as HTTP_ADDRESS_BYTES, CONNECTION_BYTES as HTTP_CONNECTION_BYTES,
    MAX_CONNECTIONS as HTTP_MAX_CONNECTIONS, MAX_MESSAGE_BYTES as HTTP_MAX_MESSAGE_BYTES,
    MEMORY_BYTES as HTTP_MEMORY_BYTES, PEAK_BYTES as HTTP_PEAK_BYTES, RECORDER_BYTES as HTTP_RECORDER_BYTES,
};
pub use import::MAX_LINE_BYTES;
pub use mcp::{MAX_ANSWER_BYTES as MCP_MAX_ANSWER_BYTES, MAX_REQUEST_BYTES as MCP_MAX_REQUEST_BYTES};
pub use model::{BatchMessage, Mode, NewFrame, TraceEnd, TraceStart, CUT_OFF, PREVIEW_STORED_FROM, RELAY_KILLED};
pub use proc::process_exists;
pub use read::{Db, MAX_EXPORTS, QUERY_TIME_LIMIT};
pub use redact::REDACT_MAX_DEPTH;
pub use server::{app, AppState};
pub use store::migrations::SCHEMA_VERSION;
pub use store::search::MAX_SEARCH_TERMS;
pub use store::{MaintenanceReport, Reader, Recording, Store, StoreError, StoredFrame};

/// The recorder's parts, for `examples/recorder_cost.rs`, which measures
/// what recording costs per frame without the processes around it.
#[doc(hidden)]
pub mod bench {
    pub use crate::clock::now_rfc3339;
    pub use crate::recorder::{ByteQueue, StoreWriter, QUEUE_BYTES};
}
