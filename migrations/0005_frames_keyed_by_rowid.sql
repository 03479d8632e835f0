-- acp-tee store, migration 5: frames keyed by their rowid.
--
-- A frame's rowid is trace_id * 2^40 + seq, so one B-tree holds the frames
-- in (trace, seq) order and storing a frame no longer also writes the
-- (trace_id, seq) primary-key index: a quarter of the work of an insert.
-- Queries for a trace's frames ask for the rowid range
-- [trace_id * 2^40, (trace_id + 1) * 2^40).

CREATE TABLE frames_v5 (
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
    raw           BLOB    NOT NULL,
    envelope      BLOB,
    protocol      TEXT    NOT NULL DEFAULT 'acp',
    mcp_method    TEXT,
    preview       TEXT,
    sender        TEXT,
    receiver      TEXT
);
INSERT INTO frames_v5 (id, trace_id, seq, t_ns, dir, kind, rpc_id, method, session_id, reply_to_seq,
                       latency_ns, raw, envelope, protocol, mcp_method, preview, sender, receiver)
    SELECT trace_id * 1099511627776 + seq, trace_id, seq, t_ns, dir, kind, rpc_id, method, session_id,
           reply_to_seq, latency_ns, raw, envelope, protocol, mcp_method, preview, sender, receiver
    FROM frames ORDER BY trace_id, seq;
DROP TABLE frames;
ALTER TABLE frames_v5 RENAME TO frames;

CREATE INDEX frames_by_method ON frames (trace_id, method);
CREATE INDEX frames_by_reply ON frames (trace_id, reply_to_seq) WHERE reply_to_seq IS NOT NULL;
CREATE INDEX frames_by_latency ON frames (trace_id, latency_ns) WHERE latency_ns IS NOT NULL;

-- The rowids changed, so the search index starts over; and with rowids
-- ordered by trace, not by time, how far it reaches is kept per trace.
INSERT INTO frames_fts (frames_fts) VALUES ('delete-all');
DROP TABLE search_index;
CREATE TABLE search_progress (
    trace_id     INTEGER PRIMARY KEY REFERENCES traces(id) ON DELETE CASCADE,
    indexed_seq  INTEGER NOT NULL   -- every frame of the trace with seq <= this is in frames_fts
);
