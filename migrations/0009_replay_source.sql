-- acp-tee store, migration 9: the trace a replay (`acp-tee replay`) ran
-- from. NULL for every trace that is not a replay, and for replays whose
-- source was deleted since.
ALTER TABLE traces ADD COLUMN replay_of INTEGER;
