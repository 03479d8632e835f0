-- acp-tee store, migration 6: frame counts per direction and kind.
--
-- A filter on direction and kind alone (the viewer's lanes, "errors only")
-- used to count its matches by scanning the trace: 0.15-0.3 s at a million
-- frames. The recorder now keeps these counts with every batch, as it kept
-- direction_counts, which they replace (a direction's count is the sum over
-- its kinds).
CREATE TABLE kind_counts (
    trace_id  INTEGER NOT NULL REFERENCES traces(id) ON DELETE CASCADE,
    dir       TEXT    NOT NULL,
    kind      TEXT    NOT NULL,
    count     INTEGER NOT NULL,
    PRIMARY KEY (trace_id, dir, kind)
) WITHOUT ROWID;
INSERT INTO kind_counts (trace_id, dir, kind, count)
    SELECT trace_id, dir, kind, count(*) FROM frames GROUP BY trace_id, dir, kind;
DROP TABLE direction_counts;

-- Error responses are few, so an index of them alone costs the recorder
-- little and lets "errors only" page without scanning the trace. Queries
-- must spell the kind as the literal 'error' for SQLite to use it.
CREATE INDEX frames_errors ON frames (trace_id) WHERE kind = 'error';
