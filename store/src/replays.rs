//! The link from a replay's trace to the trace it replayed (`acp-tee
//! replay`, migration 9).

use super::{Store, StoreError};
use rusqlite::{params, OptionalExtension};

impl Store {
    /// The newest trace relayed by process `relay_pid` (the `acp-tee record`
    /// a replay started).
    pub fn trace_of_relay(&self, relay_pid: u32) -> Result<Option<i64>, StoreError> {
        let mut stmt = self.conn.prepare_cached("SELECT max(id) FROM traces WHERE relay_pid = ?1")?;
        Ok(stmt.query_row(params![relay_pid], |r| r.get::<_, Option<i64>>(0)).optional()?.flatten())
    }

    /// Records that trace `trace_id` is a replay of trace `source`.
    pub fn link_replay(&self, trace_id: i64, source: i64) -> Result<(), StoreError> {
        self.conn.execute("UPDATE traces SET replay_of = ?2 WHERE id = ?1", params![trace_id, source])?;
        Ok(())
    }

    /// The trace that trace `trace_id` is a replay of, if it is one.
    pub fn replay_of(&self, trace_id: i64) -> Result<Option<i64>, StoreError> {
        let mut stmt = self.conn.prepare_cached("SELECT replay_of FROM traces WHERE id = ?1")?;
        Ok(stmt.query_row(params![trace_id], |r| r.get::<_, Option<i64>>(0)).optional()?.flatten())
    }
}
