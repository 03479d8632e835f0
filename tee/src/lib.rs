//! acp-tee: a recorder for the Agent Client Protocol; this crate is the
//! top of the workspace: the command line and the readers' front ends.
//!
//! The binary (`src/main.rs`) calls [`main`]; everything else here is what
//! the integration tests drive the library through. The modules stay private:
//!
//! - `cli`: the command line.
//! - `config`: the settings of the config file and the environment (docs/config.md).
//! - `server`: `acp-tee serve`, the viewer's axum server and JSON API ([`app`]).
//! - `mcp`: `acp-tee mcp`, an MCP server over the store.
//! - `read`: the read service `server`, `mcp` and the CLI readers share (query pool, masking, folds).
//! - `export`, `import`: the trace formats acp-tee writes and reads.
//! - `replay`: `acp-tee replay` (a trace's client or agent against a live peer) and `diff`'s front end.
//!
//! The layers below, each a crate: `acp-tee-wire` (bytes to frames to
//! messages, masking; pure), `acp-tee-store` (the SQLite store),
//! `acp-tee-analysis` (sessions, checks, spans, diff) and `acp-tee-record`
//! (relay, chain, http-proxy, recorder). Their modules are brought in by
//! name below so that every crate names them alike (`crate::store`, ...).
//! See ARCHITECTURE.md.

mod cli;
mod config;
mod export;
mod import;
mod mcp;
mod read;
mod replay;
mod server;

use acp_tee_analysis::{check, family, otlp, session};
use acp_tee_record::{chain, http_proxy, recorder, relay};
use acp_tee_store::{self as store, clock, proc};
use acp_tee_wire::{frame, model, redact, text};

pub use check::MAX_SESSIONS as CHECK_MAX_SESSIONS;
pub use cli::main;
pub use config::ENV_VARS as CONFIG_ENV_VARS;
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
pub use store::{Editor, MaintenanceReport, Reader, Recording, Store, StoreError, StoredFrame};

/// The recorder's parts, for `examples/recorder_cost.rs`, which measures
/// what recording costs per frame without the processes around it.
#[doc(hidden)]
pub mod bench {
    pub use crate::clock::now_rfc3339;
    pub use crate::recorder::{ByteQueue, StoreWriter, QUEUE_BYTES};
}
