-- acp-tee store, migration 13: the protocol a trace speaks.
--
-- `protocol`: 'acp' or 'mcp', from the first `initialize` the recorder saw
-- (MCP's `protocolVersion` is a string, ACP's an integer) or given with
-- `record --protocol`; NULL while not known, and for traces recorded before
-- (readers take those as ACP, as they were recorded).

ALTER TABLE traces ADD COLUMN protocol TEXT CHECK (protocol IN ('acp', 'mcp'));
