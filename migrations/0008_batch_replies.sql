-- acp-tee store, migration 8: the requests that responses inside batches
-- answer, and the relay process of a trace.
--
-- A frame's reply_to_seq holds one request; a batch of responses answers
-- several. Each response in a batch that answered a request gets a row here
-- (the first one's request is also the batch frame's reply_to_seq), so a
-- request answered inside a batch finds its answer. Batches recorded before
-- this migration have no rows.
CREATE TABLE batch_replies (
    trace_id     INTEGER NOT NULL REFERENCES traces(id) ON DELETE CASCADE,
    request_seq  INTEGER NOT NULL,
    batch_seq    INTEGER NOT NULL,
    latency_ns   INTEGER NOT NULL,
    PRIMARY KEY (trace_id, request_seq)
) WITHOUT ROWID;
CREATE INDEX batch_replies_by_batch ON batch_replies (trace_id, batch_seq);

-- The process that relayed the run (acp-tee itself, or acp-tee proxy) and
-- the process that started it (the client: an editor, yopo, the conductor),
-- beside the recorder: a trace without an end whose recorder runs but whose
-- relay or client is gone is finishing (the run is over or about to be; the
-- recorder still stores what it was handed), not being recorded. NULL for
-- traces from before.
ALTER TABLE traces ADD COLUMN relay_pid INTEGER;
ALTER TABLE traces ADD COLUMN client_pid INTEGER;
