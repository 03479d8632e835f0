-- acp-tee store, migration 3: what the viewer's queries need.

-- A short text for the diagram (session/update text, error message, stderr
-- line), computed when the frame is recorded.
ALTER TABLE frames ADD COLUMN preview TEXT;

-- Filters and pairing lookups. frames_by_method also covers the per-method
-- timing queries (counts by kind, latencies in order) without reading rows.
CREATE INDEX frames_by_method ON frames (trace_id, method, latency_ns, kind);
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
