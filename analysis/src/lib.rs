//! acp-tee's readings of a recorded conversation: the session model
//! ([`session`]), the protocol checks ([`check`]), OpenTelemetry spans
//! ([`otlp`], stored or live), and the comparison of two traces ([`diff`]).
//!
//! Everything here reads frames (from the store, or live from the recorder)
//! and writes nothing to the store.

pub mod check;
pub mod diff;
pub mod family;
pub mod fold;
pub mod otlp;
pub mod session;
#[cfg(test)]
mod testing;

use acp_tee_store as store;
use acp_tee_wire::{frame, model, redact, text};
