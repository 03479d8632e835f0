//! Small stores for the unit tests of this crate and the crates above it
//! (feature `testing`).

use crate::model::{TraceEnd, TraceStart};
use crate::Store;
use acp_tee_shared::Direction;
use acp_tee_wire::frame::Framer;

/// A store holding one finished trace made from `chunks`, each going
/// its direction at its time.
pub fn store_from(chunks: &[(Direction, u64, &[u8])]) -> Store {
    let mut store = Store::in_memory().unwrap();
    let id = create_trace(&mut store);
    let mut framer = Framer::new();
    let mut frames = Vec::new();
    for (dir, t, bytes) in chunks {
        framer.chunk(*dir, *t, bytes, |f| frames.push(f));
    }
    framer.eof_all(chunks.last().map_or(0, |c| c.1), |f| frames.push(f));
    store.insert_frames(id, &frames).unwrap();
    finish_trace(&store, id);
    store
}

/// A new trace of a wrap-mode run of `agent`.
pub fn create_trace(store: &mut Store) -> i64 {
    let start = TraceStart {
        protocol: None,
        name: None,
        command: vec!["agent".into()],
        cwd: None,
        mode: "wrap".into(),
        started_at: "2026-11-30T10:00:00.000000Z".into(),
    };
    store.create_trace(&start, 1).unwrap()
}

/// Ends trace `id` as a clean exit of the agent.
pub fn finish_trace(store: &Store, id: i64) {
    let end = TraceEnd { exit_code: Some(0), exit_signal: None, end_reason: "the agent exited".into() };
    store.finish_trace(id, &end, 0, "2026-11-30T10:00:01.000000Z").unwrap();
}
