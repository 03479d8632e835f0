//! acp-tee's recording side: the relay between an editor and an agent
//! ([`relay`]), the proxy in a conductor's chain ([`chain`]), the HTTP and
//! WebSocket proxy ([`http_proxy`]), the pipe to the recorder process
//! ([`handoff`]) and the recorder that stores what it is handed
//! ([`recorder`]).
//!
//! Bytes are forwarded first and copied second: nothing here may slow or
//! change what passes between the peers.

pub mod chain;
pub mod handoff;
pub mod http_proxy;
pub mod recorder;
pub mod relay;

use acp_tee_analysis::otlp;
use acp_tee_store::{self as store, clock, end_note, proc};
use acp_tee_wire::{frame, model, redact};
