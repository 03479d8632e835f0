//! acp-tee's pure layer: what a trace is made of ([`model`]), bytes split
//! into frames and frames classified and paired ([`frame`]), secrets masked
//! ([`redact`]), text made printable ([`text`]).
//!
//! Nothing here does IO: every other crate builds on it, and it depends on
//! none of them but `acp-tee-shared`.

pub mod acp;
pub mod frame;
pub mod model;
pub mod redact;
pub mod text;

/// How many cases each randomized (proptest) suite of the workspace runs:
/// `ACP_TEE_FUZZ_CASES`, else 10,000. `scripts/test --quick` sets it low.
pub fn fuzz_cases() -> u32 {
    std::env::var("ACP_TEE_FUZZ_CASES").ok().and_then(|c| c.parse().ok()).unwrap_or(10_000)
}
