-- acp-tee store, migration 12: traces that can be removed, pinned and sized.
--
-- `pinned`: a trace every prune leaves alone (`acp-tee pin`).
-- `bytes`: what the trace's frames hold (raw bytes and envelopes), kept by
-- every insert; what `list` shows and `prune --max-size` weighs.
-- `removing`: a trace being deleted. Marked first, in one transaction, so
-- that it leaves every reader at once; its rows then go a chunk at a time
-- (a recorder waits for one chunk, never for a whole trace), resumed by the
-- next maintenance step if the process doing it dies.

ALTER TABLE traces ADD COLUMN pinned INTEGER NOT NULL DEFAULT 0;
ALTER TABLE traces ADD COLUMN bytes INTEGER NOT NULL DEFAULT 0;
ALTER TABLE traces ADD COLUMN removing INTEGER NOT NULL DEFAULT 0;
UPDATE traces SET bytes = (
    SELECT coalesce(sum(length(f.raw) + coalesce(length(f.envelope), 0)), 0) FROM frames f
    WHERE f.id > traces.id * 1099511627776 AND f.id < (traces.id + 1) * 1099511627776);

-- The search index lets rows be deleted by rowid (FTS5's
-- contentless_delete), so a removed trace leaves the index too. The index is
-- rebuilt from nothing: the maintenance steps of recorders and `serve` index
-- every trace again, a bounded number of frames a step, and searches scan
-- what is not indexed yet meanwhile (search.rs), so no answer changes.
DROP TABLE frames_fts;
CREATE VIRTUAL TABLE frames_fts USING fts5 (text, content = '', contentless_delete = 1, tokenize = 'unicode61');
DELETE FROM search_progress;
