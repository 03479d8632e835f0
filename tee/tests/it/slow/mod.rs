//! The slow tier: suites that drive a browser or a separate backend and
//! take minutes. `scripts/test` runs them; `scripts/test --quick` skips
//! every test under `slow::` (`cargo test --test it -- --skip slow::`), and
//! `cargo test -p acp-tee --test it slow::` runs only them.

mod browser;
mod otlp;
