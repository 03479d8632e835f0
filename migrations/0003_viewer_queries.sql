-- acp-tee store, migration 3: what the viewer's queries need.

-- A short text for the diagram (session/update text, error message, stderr
-- line), computed when the frame is recorded.
ALTER TABLE frames ADD COLUMN preview TEXT;

-- Filters and pairing lookups.
CREATE INDEX frames_by_method ON frames (trace_id, method);
CREATE INDEX frames_by_reply ON frames (trace_id, reply_to_seq) WHERE reply_to_seq IS NOT NULL;
CREATE INDEX frames_by_latency ON frames (trace_id, latency_ns) WHERE latency_ns IS NOT NULL;

-- Full-text search over the frames' text. Contentless: the text lives in
-- frames.raw only; frames_fts.rowid is frames.rowid. Recorders index frames
-- when they are idle, not as they store them, so indexing never slows
-- recording; search_index says how far the index reaches, and searches scan
-- the frames beyond it.
CREATE VIRTUAL TABLE frames_fts USING fts5 (text, content = '', tokenize = 'unicode61');
INSERT INTO frames_fts (rowid, text) SELECT rowid, CAST(raw AS TEXT) FROM frames;
CREATE TABLE search_index (
    id             INTEGER PRIMARY KEY CHECK (id = 1),
    indexed_rowid  INTEGER NOT NULL     -- every frame with rowid <= this is in frames_fts
);
INSERT INTO search_index (id, indexed_rowid) SELECT 1, coalesce(max(rowid), 0) FROM frames;

-- Per-method timing, kept up to date by the recorder in the same transaction
-- as the frames it summarises, so the viewer's Timing tab costs the same at
-- a million frames as at ten. Latencies go into log-linear buckets: 16 per
-- power of two of nanoseconds (bucket n < 16 holds latency n exactly).
CREATE TABLE method_stats (
    trace_id  INTEGER NOT NULL REFERENCES traces(id) ON DELETE CASCADE,
    method    TEXT    NOT NULL,
    count     INTEGER NOT NULL,   -- requests and notifications
    errors    INTEGER NOT NULL,   -- error responses
    answered  INTEGER NOT NULL,   -- responses with a latency
    max_ns    INTEGER,            -- the largest latency
    PRIMARY KEY (trace_id, method)
) WITHOUT ROWID;
CREATE TABLE latency_buckets (
    trace_id  INTEGER NOT NULL REFERENCES traces(id) ON DELETE CASCADE,
    method    TEXT    NOT NULL,
    bucket    INTEGER NOT NULL,
    count     INTEGER NOT NULL,
    PRIMARY KEY (trace_id, method, bucket)
) WITHOUT ROWID;
CREATE TABLE direction_counts (
    trace_id  INTEGER NOT NULL REFERENCES traces(id) ON DELETE CASCADE,
    dir       TEXT    NOT NULL,
    count     INTEGER NOT NULL,
    PRIMARY KEY (trace_id, dir)
) WITHOUT ROWID;
