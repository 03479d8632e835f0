//! acp-tee: a recorder for the Agent Client Protocol.
//!
//! # Layout
//! - [`frame`]: splitting byte streams into frames, classifying and pairing them (pure).
//! - [`relay`]: wrap mode; spawns the agent and moves bytes, handing copies off.
//! - [`chain`]: proxy mode under the ACP conductor; routes `proxy/successor` envelopes.
//! - [`handoff`]: the pipe protocol from the relay to the recorder process.
//! - [`recorder`]: the recorder process; frames what it is handed and stores it.
//! - [`server`]: `acp-tee serve`, the viewer's axum server and JSON API.
//! - [`store`]: the SQLite trace store; migrations and typed queries.
//! - [`export`]: exports: `acp-tee-trace` JSON and NDJSON, the conductor's `.jsons`, Perfetto.
//! - [`import`]: imports of `acp-tee-trace`, the conductor's `.jsons` and sacp-tee logs.
//! - [`redact`]: masking secrets in frames, on export and optionally when recording.
//! - [`cli`]: the command line.
//! - [`clock`]: wall-clock timestamps.
//!
//! See ARCHITECTURE.md for the invariants each module keeps.

pub mod chain;
pub mod cli;
pub mod clock;
pub mod export;
pub mod frame;
pub mod handoff;
pub mod import;
pub mod recorder;
pub mod redact;
pub mod relay;
pub mod server;
pub mod store;
