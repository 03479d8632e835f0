//! The integration tests of acp-tee, in one test binary (`cargo test -p
//! acp-tee --test it`): one module per suite, so a test is named by its
//! suite (`lifecycle::...`, `http_proxy::faults::...`) and every suite
//! shares one build and one link. The tests of all modules run in parallel
//! in this one process: a test looks only at the processes it started
//! (their pids, or a marker from `common::unique_marker` in their
//! environment) and measures the memory of a child, never of this process.
//!
//! `slow` is the slow tier: headless Chromium and Arize Phoenix.
//! `scripts/test` runs it; `scripts/test --quick` leaves it out with
//! `--skip slow::`. Data the tests read sit beside this folder:
//! `tests/corpus/` (conversations and their snapshots), `tests/fixtures/`
//! and `tests/peers/` (the Python peers).

mod common;

mod abuse;
mod adversarial;
mod analysis;
mod api;
mod byte_exact;
mod chain;
mod check;
mod config;
mod corpus;
mod docs;
mod doctor;
mod embedded;
mod faults;
mod finishing;
mod formats;
mod hostile_api;
mod http_proxy;
mod import;
mod import_formats;
mod lifecycle;
mod limits;
mod manual;
mod mcp;
mod mcp_family;
mod mcp_trace;
mod naming;
mod peers;
mod redaction;
mod replay;
mod retention;
mod sessions;
mod slow;
mod store_failures;
