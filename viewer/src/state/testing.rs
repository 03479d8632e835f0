//! What the state's unit tests build frames with.

use acp_tee_shared::api::FrameSummary;
use acp_tee_shared::{Direction, FrameKind};

/// Frame `seq` at `t_ns`, going `dir`, of `kind`, one byte long, every
/// optional field absent: tests set what they need with `..summary(...)`.
pub fn summary(seq: i64, t_ns: i64, dir: Direction, kind: FrameKind) -> FrameSummary {
    FrameSummary {
        seq,
        t_ns,
        dir,
        kind,
        id: None,
        method: None,
        session_id: None,
        reply_to_seq: None,
        latency_ns: None,
        reply_seq: None,
        size: 1,
        preview: None,
        mcp: false,
        mcp_method: None,
        update: None,
        spaced: 0,
        tool_error: false,
    }
}
