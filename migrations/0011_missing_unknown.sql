-- acp-tee store, migration 11: a trace whose missing frames cannot be counted.
--
-- When no recorder survives to store a run, its relay leaves the run's end
-- for the next opener of the store, with the bytes that crossed; if fewer
-- were stored, frames are missing but how many is not known. Such a trace
-- says so (1) rather than claim a count: `missing_frames` is then a lower
-- bound.

ALTER TABLE traces ADD COLUMN missing_unknown INTEGER NOT NULL DEFAULT 0;
