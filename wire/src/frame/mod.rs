//! Frames: cutting byte streams into messages and saying what each one is.
//!
//! Pure functions and small state machines, no I/O, so that everything here is
//! tested (and fuzzed) from raw bytes.
//!
//! Architecture Invariant: the frames [`FrameSplitter`] hands out concatenate
//! back to exactly the bytes it was fed.

mod classify;
mod framer;
#[cfg(test)]
pub mod fuzz;
mod id;
mod mcp;
mod pairing;
mod preview;
mod repeats;
mod splitter;

pub use classify::{classify, classify_with, Classified};
pub use framer::Framer;
pub use id::id_key;
pub use mcp::{mcp_preview, mcp_result_preview, protocol_of_initialize, protocol_of_initialize_members};
pub use pairing::{Pairer, Pairing};
pub use preview::{summary_texts, text_preview, SummaryTexts, SPACED_AFTER, SPACED_BEFORE};
pub use repeats::read_last;
pub use splitter::FrameSplitter;
