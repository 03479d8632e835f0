//! The read service: what every reader of a store shares, so `serve`, `mcp`
//! and the CLI's readers answer alike.
//!
//! # Layout
//! - [`pool`]: the query pool ([`Db`]): connections opened `query_only`,
//!   queries on blocking threads under [`QUERY_TIME_LIMIT`], a few slots for
//!   scans and exports.
//! - [`mask`]: the one redaction policy of readers ([`mask::policy`]) and the
//!   masking of what is served (a trace's columns, a frame's stored values,
//!   a detail cut to its limit).
//! - [`folds`]: a bounded cache of whole-trace folds kept between requests
//!   (the session model, the checker), each fed only the frames stored
//!   since it was last asked.
//! - [`query`]: the bounds a page of frames must keep before it reaches SQL.
//!
//! Architecture Invariant: nothing here writes the store; the server and the
//! MCP server are front ends of this module and reach nothing of each other.

pub mod family;
pub mod folds;
pub mod mask;
pub mod pool;
pub mod query;

pub use folds::{Folds, Models, Replays};
pub use pool::{Db, DIFF_TIME_LIMIT, MAX_EXPORTS, QUERY_TIME_LIMIT};
