-- acp-tee store, migration 16: each block of 128 seqs of a trace, added up.
--
-- The viewer's overview strip adds a whole trace up in 400 intervals of
-- time. Scanning a million frames for it read every page of the trace
-- (their bytes are on the same pages) and took 0.6-0.8 s. A block holds
-- what the strip counts of the frames with seq in [block * 128, block * 128
-- + 127]: how many there are, their first and last seq, their earliest and
-- latest time, error responses, requests and answers (frames with a
-- reply_to_seq), and the distinct sessions named (as a JSON array, or NULL
-- past 4, when a reader must read the block's frames to tell them). A block
-- whose earliest and latest times fall in one interval is added whole; the
-- few that straddle an interval's edge are read frame by frame. The store
-- writer adds every batch to its blocks.
--
-- Invariant: a block's values are those of the trace's frames with seq in
-- the block's range, and every frame is in exactly one block.
CREATE TABLE frame_blocks (
    trace_id   INTEGER NOT NULL REFERENCES traces(id) ON DELETE CASCADE,
    block      INTEGER NOT NULL,
    frames     INTEGER NOT NULL,
    first_seq  INTEGER NOT NULL,
    last_seq   INTEGER NOT NULL,
    min_t_ns   INTEGER NOT NULL,
    max_t_ns   INTEGER NOT NULL,
    errors     INTEGER NOT NULL,
    requests   INTEGER NOT NULL,
    answers    INTEGER NOT NULL,
    sessions   TEXT,
    PRIMARY KEY (trace_id, block)
) WITHOUT ROWID;

INSERT INTO frame_blocks (trace_id, block, frames, first_seq, last_seq, min_t_ns, max_t_ns, errors, requests,
                          answers, sessions)
    SELECT trace_id, seq >> 7, count(*), min(seq), max(seq), min(t_ns), max(t_ns),
           sum(kind = 'error'), sum(kind = 'request'), sum(reply_to_seq IS NOT NULL),
           CASE WHEN count(DISTINCT session_id) <= 4
                THEN json_group_array(DISTINCT session_id) FILTER (WHERE session_id IS NOT NULL)
           END
    FROM frames
    GROUP BY trace_id, seq >> 7;
