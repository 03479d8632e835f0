-- acp-tee store, migration 7: where each method's frames are, as spans.
--
-- The index frames_by_method (trace_id, method) cost the store writer about
-- 2,000 instructions per frame (a seek and an insert into a second B-tree),
-- a sixth of its work. A method filter now reads spans instead: runs of
-- frames with consecutive seq numbers and the same method. The recorder
-- writes one row per run in each batch, and extends the trace's last span
-- when a batch goes on where it ended, so a stream of session/update
-- notifications takes one row, however long it is.
--
-- Invariant: every seq from first_seq to last_seq is a frame of the trace
-- with this method, and every frame with a method is in exactly one span.
CREATE TABLE method_spans (
    trace_id   INTEGER NOT NULL REFERENCES traces(id) ON DELETE CASCADE,
    method     TEXT    NOT NULL,
    first_seq  INTEGER NOT NULL,
    last_seq   INTEGER NOT NULL,
    PRIMARY KEY (trace_id, method, first_seq)
) WITHOUT ROWID;

-- Within one method, seq minus the frame's rank is the same along a run of
-- consecutive seqs and grows at every frame of another method (or a missing
-- frame) in between.
INSERT INTO method_spans (trace_id, method, first_seq, last_seq)
    SELECT trace_id, method, min(seq), max(seq)
    FROM (SELECT trace_id, method, seq,
                 seq - row_number() OVER (PARTITION BY trace_id, method ORDER BY seq) AS run
          FROM frames WHERE method IS NOT NULL)
    GROUP BY trace_id, method, run;

DROP INDEX frames_by_method;
