-- acp-tee store, migration 2: proxy-mode envelopes and MCP-over-ACP.

-- Proxy mode: the exact bytes of the message on the successor side of the hop
-- (the proxy/successor envelope); NULL in wrap mode, where raw is the wire.
ALTER TABLE frames ADD COLUMN envelope BLOB;

-- 'mcp' for MCP-over-ACP messages (mcp/connect, mcp/message, mcp/disconnect).
ALTER TABLE frames ADD COLUMN protocol TEXT NOT NULL DEFAULT 'acp';

-- For mcp/message: the inner MCP method (tools/call, ...).
ALTER TABLE frames ADD COLUMN mcp_method TEXT;
