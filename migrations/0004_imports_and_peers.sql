-- acp-tee store, migration 4: imported traces.

-- Where an imported trace came from, in words: the format and the file
-- ("jsons file /x/t.jsons"). NULL for traces recorded here.
ALTER TABLE traces ADD COLUMN imported_from TEXT;

-- The component names a multi-component source (the conductor's .jsons) gave
-- the sender and receiver of a message ("Client", "Proxy(0)", "Agent"); NULL
-- for frames recorded here, whose direction says it all.
ALTER TABLE frames ADD COLUMN sender TEXT;
ALTER TABLE frames ADD COLUMN receiver TEXT;
