//! Schema migrations from `migrations/`, keyed by `PRAGMA user_version`.

use rusqlite::{Connection, TransactionBehavior};

/// Every migration, in order; migration `i` brings the schema to version `i + 1`.
/// Append-only: a released migration is never edited.
const MIGRATIONS: &[&str] = &[
    include_str!("../../migrations/0001_traces_and_frames.sql"),
    include_str!("../../migrations/0002_proxy_hops_and_mcp.sql"),
    include_str!("../../migrations/0003_viewer_queries.sql"),
    include_str!("../../migrations/0004_imports_and_peers.sql"),
    include_str!("../../migrations/0005_frames_keyed_by_rowid.sql"),
    include_str!("../../migrations/0006_kind_counts.sql"),
    include_str!("../../migrations/0007_method_spans.sql"),
    include_str!("../../migrations/0008_batch_replies.sql"),
    include_str!("../../migrations/0009_replay_source.sql"),
    include_str!("../../migrations/0010_frames_raw_last.sql"),
    include_str!("../../migrations/0011_missing_unknown.sql"),
    include_str!("../../migrations/0012_retention.sql"),
    include_str!("../../migrations/0013_trace_protocol.sql"),
    include_str!("../../migrations/0014_trace_family.sql"),
    include_str!("../../migrations/0015_requests_index.sql"),
    include_str!("../../migrations/0016_frame_blocks.sql"),
];

/// The schema version this build writes.
pub const SCHEMA_VERSION: i64 = MIGRATIONS.len() as i64;

/// Brings the schema up to date in one exclusive transaction, so that several
/// processes opening a new store at once apply each migration exactly once.
/// Returns the version found before, or an error when the store is from a
/// newer acp-tee.
pub fn apply(conn: &mut Connection) -> Result<i64, MigrationError> {
    // The common case, an up-to-date store, takes no write lock at all.
    let current: i64 = conn.query_row("PRAGMA user_version", [], |r| r.get(0))?;
    if current == SCHEMA_VERSION {
        return Ok(current);
    }
    let tx = match conn.transaction_with_behavior(TransactionBehavior::Exclusive) {
        Err(e) if e.sqlite_error_code() == Some(rusqlite::ErrorCode::ReadOnly) && current < SCHEMA_VERSION => {
            return Err(MigrationError::ReadOnlyOld { found: current, known: SCHEMA_VERSION })
        }
        other => other?,
    };
    let found: i64 = tx.query_row("PRAGMA user_version", [], |r| r.get(0))?;
    if found > SCHEMA_VERSION {
        return Err(MigrationError::TooNew { found, known: SCHEMA_VERSION });
    }
    for sql in &MIGRATIONS[found as usize..] {
        tx.execute_batch(sql)?;
    }
    tx.pragma_update(None, "user_version", SCHEMA_VERSION)?;
    tx.commit()?;
    Ok(found)
}

/// Checks that a store this process cannot write to has the schema this
/// build reads (it cannot be migrated).
pub fn check(conn: &Connection) -> Result<(), MigrationError> {
    let found: i64 = conn.query_row("PRAGMA user_version", [], |r| r.get(0))?;
    match found.cmp(&SCHEMA_VERSION) {
        std::cmp::Ordering::Equal => Ok(()),
        std::cmp::Ordering::Greater => Err(MigrationError::TooNew { found, known: SCHEMA_VERSION }),
        std::cmp::Ordering::Less => Err(MigrationError::ReadOnlyOld { found, known: SCHEMA_VERSION }),
    }
}

/// Checks that a store about to be maintained ([`super::Store::maintain`])
/// is not from a newer acp-tee; an older one is fine, maintenance migrates it.
pub fn check_not_newer(conn: &Connection) -> Result<(), MigrationError> {
    let found: i64 = conn.query_row("PRAGMA user_version", [], |r| r.get(0))?;
    if found > SCHEMA_VERSION {
        return Err(MigrationError::TooNew { found, known: SCHEMA_VERSION });
    }
    Ok(())
}

/// Checks that a store is ready to read or write with this build's schema:
/// a writable store older than that is refused with the command that
/// brings it up to date, rather than migrated on the way.
pub fn check_current(conn: &Connection) -> Result<(), MigrationError> {
    check(conn).map_err(|e| match e {
        MigrationError::ReadOnlyOld { found, known } if !conn.is_readonly(rusqlite::MAIN_DB).unwrap_or(true) => {
            MigrationError::NotMaintained { found, known }
        }
        other => other,
    })
}

/// Why the schema could not be brought up to date.
#[derive(Debug, thiserror::Error)]
pub enum MigrationError {
    /// The store was written by a newer acp-tee.
    #[error("the store has schema version {found}, newer than this acp-tee knows ({known}); upgrade acp-tee")]
    TooNew {
        /// The version in the file.
        found: i64,
        /// The newest version this build knows.
        known: i64,
    },
    /// The store is older than this build and cannot be written to.
    #[error(
        "the store has schema version {found}, older than this acp-tee's ({known}), and is read-only here; \
         open it once with write access (any acp-tee command) to bring it up to date"
    )]
    ReadOnlyOld {
        /// The version in the file.
        found: i64,
        /// The version this build reads.
        known: i64,
    },
    /// The store is older than this build and was not maintained first.
    #[error(
        "the store has schema version {found}, older than this acp-tee's ({known}); run `acp-tee list` on it \
         once to bring it up to date"
    )]
    NotMaintained {
        /// The version in the file.
        found: i64,
        /// The version this build reads.
        known: i64,
    },
    /// SQLite refused.
    #[error(transparent)]
    Sqlite(#[from] rusqlite::Error),
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn migrations_apply_twice() {
        let mut conn = Connection::open_in_memory().unwrap();
        assert_eq!(apply(&mut conn).unwrap(), 0);
        assert_eq!(apply(&mut conn).unwrap(), SCHEMA_VERSION);
        let tables: Vec<String> = conn
            .prepare("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")
            .unwrap()
            .query_map([], |r| r.get(0))
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap();
        assert!(tables.contains(&"frames".to_owned()) && tables.contains(&"traces".to_owned()), "{tables:?}");
        assert!(tables.contains(&"frames_fts".to_owned()), "{tables:?}");
    }

    #[test]
    fn frames_of_a_version_4_store_get_their_rowid_keys_and_are_searchable_again() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("v4.db");
        {
            let conn = Connection::open(&path).unwrap();
            for sql in &MIGRATIONS[..4] {
                conn.execute_batch(sql).unwrap();
            }
            conn.pragma_update(None, "user_version", 4).unwrap();
            conn.execute_batch(
                "INSERT INTO traces (id, command, mode, started_at) VALUES (1, '[]', 'wrap', 'x'), (2, '[]', 'wrap', 'y');
                 INSERT INTO frames (trace_id, seq, t_ns, dir, kind, raw, method) VALUES
                   (2, 1, 5, 'client_to_agent', 'request', CAST('{\"a\":\"zebra\"}' AS BLOB), 'm'),
                   (1, 1, 1, 'client_to_agent', 'request', CAST('{\"b\":\"lion\"}' AS BLOB), 'm'),
                   (1, 2, 2, 'agent_to_client', 'response', CAST('{\"c\":\"zebra\"}' AS BLOB), 'm');
                 INSERT INTO frames_fts (rowid, text) SELECT rowid, CAST(raw AS TEXT) FROM frames;
                 UPDATE search_index SET indexed_rowid = 3;",
            )
            .unwrap();
        }
        let mut store = crate::Store::open_existing(&path).unwrap();
        assert_eq!(store.maintain(0).unwrap().migrated_from, Some(4));
        let keys: Vec<(i64, i64, i64)> = store
            .conn
            .prepare("SELECT id, trace_id, seq FROM frames ORDER BY id")
            .unwrap()
            .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap();
        assert_eq!(keys, [(1 << 40 | 1, 1, 1), (1 << 40 | 2, 1, 2), (2 << 40 | 1, 2, 1)]);
        // The old index is gone; searches scan until the frames are indexed again.
        let search = |store: &crate::Store, trace| {
            let q = acp_tee_shared::api::FrameQuery { q: Some("zebra".into()), ..Default::default() };
            store.frame_page(trace, &q).unwrap().frames.iter().map(|f| f.seq).collect::<Vec<_>>()
        };
        assert_eq!(search(&store, 1), [2]);
        assert_eq!(store.index_for_search(100).unwrap(), 3);
        assert_eq!(store.index_for_search(100).unwrap(), 0);
        assert_eq!(search(&store, 1), [2]);
        assert_eq!(search(&store, 2), [1]);
        // A frame of trace 1 stored after trace 2 was indexed has a lower
        // rowid than trace 2's frames, and is still indexed next time.
        store
            .conn
            .execute_batch(
                "INSERT INTO frames (id, trace_id, seq, t_ns, dir, kind, raw)
                 VALUES (1099511627779, 1, 3, 3, 'agent_to_client', 'notification', CAST('zebra again' AS BLOB))",
            )
            .unwrap();
        assert_eq!(store.index_for_search(100).unwrap(), 1);
        let fts: i64 = store
            .conn
            .query_row("SELECT count(*) FROM frames_fts WHERE frames_fts MATCH 'zebra'", [], |r| r.get(0))
            .unwrap();
        assert_eq!(fts, 3);
        assert_eq!(search(&store, 1), [2, 3]);
    }

    #[test]
    fn a_version_5_store_gets_kind_counts_of_its_frames() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("v5.db");
        {
            let conn = Connection::open(&path).unwrap();
            for sql in &MIGRATIONS[..5] {
                conn.execute_batch(sql).unwrap();
            }
            conn.pragma_update(None, "user_version", 5).unwrap();
            conn.execute_batch(
                "INSERT INTO traces (id, command, mode, started_at) VALUES (1, '[]', 'wrap', 'x'), (2, '[]', 'wrap', 'y');
                 INSERT INTO frames (id, trace_id, seq, t_ns, dir, kind, raw) VALUES
                   (1099511627777, 1, 1, 1, 'client_to_agent', 'request', X'00'),
                   (1099511627778, 1, 2, 2, 'agent_to_client', 'error', X'00'),
                   (1099511627779, 1, 3, 3, 'agent_to_client', 'error', X'00'),
                   (2199023255553, 2, 1, 1, 'agent_stderr', 'stderr', X'00');
                 INSERT INTO direction_counts VALUES (1, 'client_to_agent', 1), (1, 'agent_to_client', 2), (2, 'agent_stderr', 1);",
            )
            .unwrap();
        }
        let mut store = crate::Store::open_existing(&path).unwrap();
        assert!(store.maintain(0).unwrap().migrated_from.is_some());
        let counts: Vec<(i64, String, String, i64)> = store
            .conn
            .prepare("SELECT trace_id, dir, kind, count FROM kind_counts ORDER BY trace_id, dir, kind")
            .unwrap()
            .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)))
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap();
        let want = [
            (1, "agent_to_client", "error", 2),
            (1, "client_to_agent", "request", 1),
            (2, "agent_stderr", "stderr", 1),
        ]
        .map(|(t, d, k, n)| (t, d.to_owned(), k.to_owned(), n));
        assert_eq!(counts, want);
        assert_eq!(store.trace_stats(1).unwrap().per_direction, [1, 2, 0]);
        let old: i64 = store
            .conn
            .query_row("SELECT count(*) FROM sqlite_master WHERE name = 'direction_counts'", [], |r| r.get(0))
            .unwrap();
        assert_eq!(old, 0);
    }

    #[test]
    fn a_version_6_store_gets_the_method_spans_of_its_frames() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("v6.db");
        {
            let conn = Connection::open(&path).unwrap();
            for sql in &MIGRATIONS[..6] {
                conn.execute_batch(sql).unwrap();
            }
            conn.pragma_update(None, "user_version", 6).unwrap();
            // Trace 1: a a (none) a b b, 8 missing, b; trace 2: a.
            conn.execute_batch(
                "INSERT INTO traces (id, command, mode, started_at) VALUES (1, '[]', 'wrap', 'x'), (2, '[]', 'wrap', 'y');
                 INSERT INTO frames (id, trace_id, seq, t_ns, dir, kind, raw, method) VALUES
                   (1099511627777, 1, 1, 1, 'client_to_agent', 'request', X'00', 'a'),
                   (1099511627778, 1, 2, 2, 'agent_to_client', 'response', X'00', 'a'),
                   (1099511627779, 1, 3, 3, 'agent_stderr', 'stderr', X'00', NULL),
                   (1099511627780, 1, 4, 4, 'client_to_agent', 'notification', X'00', 'a'),
                   (1099511627781, 1, 5, 5, 'client_to_agent', 'notification', X'00', 'b'),
                   (1099511627782, 1, 6, 6, 'client_to_agent', 'notification', X'00', 'b'),
                   (1099511627783, 1, 7, 7, 'client_to_agent', 'notification', X'00', 'c'),
                   (1099511627785, 1, 9, 9, 'client_to_agent', 'notification', X'00', 'c'),
                   (2199023255553, 2, 1, 1, 'client_to_agent', 'notification', X'00', 'a');",
            )
            .unwrap();
        }
        let mut store = crate::Store::open_existing(&path).unwrap();
        assert!(store.maintain(0).unwrap().migrated_from.is_some());
        let spans: Vec<(i64, String, i64, i64)> = store
            .conn
            .prepare("SELECT trace_id, method, first_seq, last_seq FROM method_spans ORDER BY trace_id, first_seq")
            .unwrap()
            .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)))
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap();
        let want = [(1, "a", 1, 2), (1, "a", 4, 4), (1, "b", 5, 6), (1, "c", 7, 7), (1, "c", 9, 9), (2, "a", 1, 1)]
            .map(|(t, m, first, last)| (t, m.to_owned(), first, last));
        assert_eq!(spans, want);
        let q = acp_tee_shared::api::FrameQuery { method: Some("a".into()), ..Default::default() };
        let page = store.frame_page(1, &q).unwrap();
        assert_eq!((page.total, page.frames.iter().map(|f| f.seq).collect::<Vec<_>>()), (3, vec![1, 2, 4]));
        let old: i64 = store
            .conn
            .query_row("SELECT count(*) FROM sqlite_master WHERE name = 'frames_by_method'", [], |r| r.get(0))
            .unwrap();
        assert_eq!(old, 0);
    }

    #[test]
    fn a_version_15_store_gets_the_blocks_of_its_frames() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("v15.db");
        {
            let conn = Connection::open(&path).unwrap();
            for sql in &MIGRATIONS[..15] {
                conn.execute_batch(sql).unwrap();
            }
            conn.pragma_update(None, "user_version", 15).unwrap();
            // Trace 1: seqs 1, 2, 127 (block 0; sessions a, b) and 128, 300
            // (blocks 1 and 2); trace 2: seq 1 with five sessions' frames.
            let mut sql = String::from(
                "INSERT INTO traces (id, command, mode, started_at) VALUES (1, '[]', 'wrap', 'x'), (2, '[]', 'wrap', 'y');
                 INSERT INTO frames (id, trace_id, seq, t_ns, dir, kind, raw, session_id, reply_to_seq) VALUES
                   (1099511627777, 1, 1, 50, 'client_to_agent', 'request', X'00', 'b', NULL),
                   (1099511627778, 1, 2, 40, 'agent_to_client', 'error', X'00', 'a', 1),
                   (1099511627903, 1, 127, 90, 'agent_to_client', 'notification', X'00', 'b', NULL),
                   (1099511627904, 1, 128, 95, 'agent_stderr', 'stderr', X'00', NULL, NULL),
                   (1099511628076, 1, 300, 99, 'client_to_agent', 'request', X'00', NULL, NULL)",
            );
            for (i, s) in ["p", "q", "r", "s", "t"].iter().enumerate() {
                let seq = i + 1;
                sql.push_str(&format!(
                    ", ({}, 2, {seq}, {seq}, 'agent_to_client', 'notification', X'00', '{s}', NULL)",
                    (2i64 << 40) + seq as i64
                ));
            }
            conn.execute_batch(&sql).unwrap();
        }
        let mut store = crate::Store::open_existing(&path).unwrap();
        assert_eq!(store.maintain(0).unwrap().migrated_from, Some(15));
        type Row = (i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, Option<String>);
        let blocks: Vec<Row> = store
            .conn
            .prepare(
                "SELECT trace_id, block, frames, first_seq, last_seq, min_t_ns, max_t_ns, errors, requests, answers,
                        sessions FROM frame_blocks ORDER BY trace_id, block",
            )
            .unwrap()
            .query_map([], |r| {
                Ok((
                    r.get(0)?,
                    r.get(1)?,
                    r.get(2)?,
                    r.get(3)?,
                    r.get(4)?,
                    r.get(5)?,
                    r.get(6)?,
                    r.get(7)?,
                    r.get(8)?,
                    r.get(9)?,
                    r.get(10)?,
                ))
            })
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap();
        let sessions = |s: &str| Some(s.to_owned());
        let mut first = blocks[0].clone();
        // The order of a block's sessions is SQLite's.
        let mut names: Vec<String> = serde_json::from_str(first.10.as_deref().unwrap()).unwrap();
        names.sort();
        first.10 = Some(serde_json::to_string(&names).unwrap());
        assert_eq!(first, (1, 0, 3, 1, 127, 40, 90, 1, 1, 1, sessions(r#"["a","b"]"#)));
        assert_eq!(
            &blocks[1..],
            [
                (1, 1, 1, 128, 128, 95, 95, 0, 0, 0, sessions("[]")),
                (1, 2, 1, 300, 300, 99, 99, 0, 1, 0, sessions("[]")),
                (2, 0, 5, 1, 5, 1, 5, 0, 0, 0, None),
            ]
        );
        // The overview reads them: five sessions in trace 2's one bucket.
        assert_eq!(store.overview(2, 1).unwrap().buckets[0].sessions, 5);
        assert_eq!(store.overview(1, 1).unwrap().buckets[0].open, 1);
    }

    #[test]
    fn a_version_9_store_keeps_every_column_of_its_frames_with_raw_last() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("v9.db");
        let columns = "id, trace_id, seq, t_ns, dir, kind, rpc_id, method, session_id, reply_to_seq, latency_ns, raw, \
                       envelope, protocol, mcp_method, preview, sender, receiver";
        let rows = |conn: &Connection| -> Vec<Vec<rusqlite::types::Value>> {
            let sql = format!("SELECT {columns} FROM frames ORDER BY id");
            let mut stmt = conn.prepare(&sql).unwrap();
            stmt.query_map([], |r| (0..18).map(|i| r.get(i)).collect()).unwrap().collect::<Result<_, _>>().unwrap()
        };
        let before = {
            let conn = Connection::open(&path).unwrap();
            for sql in &MIGRATIONS[..9] {
                conn.execute_batch(sql).unwrap();
            }
            conn.pragma_update(None, "user_version", 9).unwrap();
            conn.execute_batch(
                "INSERT INTO traces (id, command, mode, started_at) VALUES (1, '[]', 'wrap', 'x');
                 INSERT INTO frames (id, trace_id, seq, t_ns, dir, kind, rpc_id, method, session_id, reply_to_seq,
                                     latency_ns, raw, envelope, protocol, mcp_method, preview, sender, receiver) VALUES
                   (1099511627777, 1, 1, 10, 'client_to_agent', 'request', '7', 'mcp/message', 's1', NULL, NULL,
                    CAST('{\"id\":7,\"zebra\":1}' AS BLOB), X'0102', 'mcp', 'tools/list', 'a preview', 'client', 'agent'),
                   (1099511627778, 1, 2, 20, 'agent_to_client', 'error', '7', NULL, 's1', 1, 10,
                    X'FF00FE', NULL, 'acp', NULL, NULL, NULL, NULL);
                 INSERT INTO frames_fts (rowid, text) VALUES (1099511627777, 'zebra');
                 INSERT INTO search_progress (trace_id, indexed_seq) VALUES (1, 1);",
            )
            .unwrap();
            rows(&conn)
        };
        let mut store = crate::Store::open_existing(&path).unwrap();
        assert_eq!(store.maintain(0).unwrap().migrated_from, Some(9));
        assert_eq!(rows(&store.conn), before);
        let last: String = store
            .conn
            .query_row("SELECT name FROM pragma_table_info('frames') ORDER BY cid DESC LIMIT 1", [], |r| r.get(0))
            .unwrap();
        assert_eq!(last, "raw");
        let indexes: Vec<String> = store
            .conn
            .prepare("SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = 'frames' ORDER BY name")
            .unwrap()
            .query_map([], |r| r.get(0))
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap();
        assert_eq!(indexes, ["frames_by_latency", "frames_by_reply", "frames_errors", "frames_requests"]);
        // The search index still points at the same frames, and the reads work.
        let q = acp_tee_shared::api::FrameQuery { q: Some("zebra".into()), ..Default::default() };
        assert_eq!(store.frame_page(1, &q).unwrap().frames.iter().map(|f| f.seq).collect::<Vec<_>>(), [1]);
        let mut sizes = Vec::new();
        store
            .for_each_frame(1, |f| -> Result<(), crate::StoreError> {
                sizes.push((f.seq, f.raw.len(), f.mcp));
                Ok(())
            })
            .unwrap();
        assert_eq!(sizes, [(1, 18, true), (2, 3, false)]);
    }

    #[test]
    fn newer_store_is_refused() {
        let mut conn = Connection::open_in_memory().unwrap();
        conn.pragma_update(None, "user_version", SCHEMA_VERSION + 1).unwrap();
        let err = apply(&mut conn).unwrap_err();
        assert!(err.to_string().contains("upgrade acp-tee"), "{err}");
    }
}
