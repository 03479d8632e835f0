-- acp-tee store, migration 10: a frame's bytes are its row's last column.
--
-- SQLite builds a row with its bytes in one piece unless every column after
-- them is empty; as the last column, a large frame's bytes are stored as a
-- zeroblob and written in pieces (incremental blob I/O), so the recorder
-- never holds a second copy of them while storing. Rowids are kept, so the
-- search index and every table keyed by frame ids stay valid.

CREATE TABLE frames_v10 (
    id            INTEGER PRIMARY KEY,  -- trace_id * 2^40 + seq
    trace_id      INTEGER NOT NULL REFERENCES traces(id) ON DELETE CASCADE,
    seq           INTEGER NOT NULL,     -- 1, 2, ... across all directions (below 2^40)
    t_ns          INTEGER NOT NULL,
    dir           TEXT    NOT NULL,
    kind          TEXT    NOT NULL,
    rpc_id        TEXT,
    method        TEXT,
    session_id    TEXT,
    reply_to_seq  INTEGER,
    latency_ns    INTEGER,
    envelope      BLOB,
    protocol      TEXT    NOT NULL DEFAULT 'acp',
    mcp_method    TEXT,
    preview       TEXT,
    sender        TEXT,
    receiver      TEXT,
    raw           BLOB    NOT NULL      -- last: see above
);
INSERT INTO frames_v10 (id, trace_id, seq, t_ns, dir, kind, rpc_id, method, session_id, reply_to_seq,
                        latency_ns, envelope, protocol, mcp_method, preview, sender, receiver, raw)
    SELECT id, trace_id, seq, t_ns, dir, kind, rpc_id, method, session_id, reply_to_seq,
           latency_ns, envelope, protocol, mcp_method, preview, sender, receiver, raw
    FROM frames ORDER BY id;
DROP TABLE frames;
ALTER TABLE frames_v10 RENAME TO frames;

CREATE INDEX frames_by_reply ON frames (trace_id, reply_to_seq) WHERE reply_to_seq IS NOT NULL;
CREATE INDEX frames_by_latency ON frames (trace_id, latency_ns) WHERE latency_ns IS NOT NULL;
CREATE INDEX frames_errors ON frames (trace_id) WHERE kind = 'error';
