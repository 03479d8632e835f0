-- acp-tee store, migration 14: traces that belong together.
--
-- `relay_key`: the relay process as `BOOT:PID:START` (the kernel's boot id,
-- the pid, its start time in clock ticks since boot), which a reused pid
-- cannot take over. `ancestors`: a JSON array of the same keys for the
-- relay's parent, its parent and so on, up to and including the first
-- acp-tee above it (at most 32). `agent_key`: in wrap mode, the agent the
-- relay started, the same way. `parent_trace`: the trace of the nearest
-- of those ancestors that relays one in this store: this trace's relay runs
-- under that trace's agent (an MCP server the agent started, wrapped in
-- acp-tee). Set while recording, and by imports of a family exported
-- together; NULL when none is known, and for traces recorded before. No
-- foreign key: removing a parent leaves its children, unlinked.

ALTER TABLE traces ADD COLUMN relay_key TEXT;
ALTER TABLE traces ADD COLUMN ancestors TEXT;
ALTER TABLE traces ADD COLUMN agent_key TEXT;
ALTER TABLE traces ADD COLUMN parent_trace INTEGER;
CREATE INDEX traces_by_relay_key ON traces (relay_key) WHERE relay_key IS NOT NULL;
CREATE INDEX traces_by_parent ON traces (parent_trace) WHERE parent_trace IS NOT NULL;
