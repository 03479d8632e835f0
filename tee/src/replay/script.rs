//! A recorded trace as a replay reads it: its messages in order, parsed,
//! each with its [`Key`] and the request it answers.

use super::Key;
use crate::store::{Store, StoreError, StoredFrame};
use acp_tee_shared::{Direction, FrameKind};
use serde_json::Value;
use std::collections::HashMap;

/// Messages a replay reads from its trace at most.
pub const REPLAY_MAX_MESSAGES: usize = 100_000;

/// Bytes of messages a replay reads from its trace at most (the messages
/// are kept parsed, a few times that in memory).
pub const REPLAY_MAX_BYTES: usize = 64 << 20;

/// One recorded message.
#[derive(Debug)]
pub struct Recorded {
    /// Its seq in the recording.
    pub seq: i64,
    /// When it was recorded, ns since the trace started.
    pub t_ns: i64,
    /// What it is and where it went.
    pub key: Key,
    /// The message.
    pub value: Value,
    /// Its JSON-RPC id's key ([`crate::frame::id_key`]), if it has one.
    pub id: Option<String>,
    /// For an answer: the index of the request it answers.
    pub reply_to: Option<usize>,
}

impl Recorded {
    /// Whether this is a request (it has an id and a method).
    pub fn is_request(&self) -> bool {
        self.key.kind == FrameKind::Request
    }
}

/// A trace's messages, in order. Stderr lines, batches and lines that are
/// no message are left out (counted).
#[derive(Debug, Default)]
pub struct Script {
    /// The messages.
    pub messages: Vec<Recorded>,
    /// Frames left out: batches and lines that are no JSON-RPC message.
    pub left_out: u64,
}

/// Why a trace cannot be replayed.
#[derive(Debug, thiserror::Error)]
pub enum ScriptError {
    /// The store failed.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// The trace is too large.
    #[error(
        "trace {trace} holds more than {max_messages} messages or {max_mib} MiB of them: replay a shorter recording"
    )]
    TooLarge { trace: i64, max_messages: usize, max_mib: usize },
}

/// Reads trace `trace_id` of `store`.
pub fn load(store: &Store, trace_id: i64) -> Result<Script, ScriptError> {
    let mut script = Script::default();
    let mut bytes = 0usize;
    let mut index_of_seq: HashMap<i64, usize> = HashMap::new();
    let mut too_large = false;
    store.for_each_frame_after(trace_id, 0, |f: StoredFrame| -> Result<bool, StoreError> {
        if f.dir == Direction::AgentStderr {
            return Ok(true);
        }
        bytes += f.raw.len();
        if script.messages.len() >= REPLAY_MAX_MESSAGES || bytes > REPLAY_MAX_BYTES {
            too_large = true;
            return Ok(false);
        }
        let value: Option<Value> = serde_json::from_slice(&f.raw).ok();
        let (Some(value), FrameKind::Request | FrameKind::Notification | FrameKind::Response | FrameKind::Error) =
            (value, f.kind)
        else {
            script.left_out += 1;
            return Ok(true);
        };
        let reply_to = f.reply_to_seq.and_then(|s| index_of_seq.get(&s).copied());
        if f.kind == FrameKind::Request {
            index_of_seq.insert(f.seq, script.messages.len());
        }
        let key = Key::of(f.dir, f.kind, f.method.as_deref(), &f.raw);
        let id = f.rpc_id.as_deref().map(|id| crate::frame::id_key(id).into_owned());
        script.messages.push(Recorded { seq: f.seq, t_ns: f.t_ns, key, value, id, reply_to });
        Ok(true)
    })?;
    if too_large {
        return Err(ScriptError::TooLarge {
            trace: trace_id,
            max_messages: REPLAY_MAX_MESSAGES,
            max_mib: REPLAY_MAX_BYTES >> 20,
        });
    }
    Ok(script)
}
