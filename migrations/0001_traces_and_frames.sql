-- acp-tee store, migration 1: traces and their frames.
-- Migrations are append-only: never edit a released file, add the next one.

CREATE TABLE traces (
    id              INTEGER PRIMARY KEY,
    name            TEXT,
    command         TEXT    NOT NULL,   -- JSON array of the agent's argv
    cwd             TEXT,
    mode            TEXT    NOT NULL,   -- 'wrap' | 'proxy' | 'import'
    started_at      TEXT    NOT NULL,   -- UTC, RFC 3339
    ended_at        TEXT,               -- UTC, RFC 3339; NULL while live
    exit_code       INTEGER,
    exit_signal     INTEGER,
    end_reason      TEXT,
    frame_count     INTEGER NOT NULL DEFAULT 0,
    error_count     INTEGER NOT NULL DEFAULT 0,
    missing_frames  INTEGER NOT NULL DEFAULT 0,
    recorder_pid    INTEGER             -- the process writing this trace
);

CREATE TABLE frames (
    trace_id      INTEGER NOT NULL REFERENCES traces(id) ON DELETE CASCADE,
    seq           INTEGER NOT NULL,     -- 1, 2, ... across all directions
    t_ns          INTEGER NOT NULL,     -- monotonic ns since the trace started
    dir           TEXT    NOT NULL,     -- client_to_agent | agent_to_client | agent_stderr
    kind          TEXT    NOT NULL,     -- request | response | error | notification | batch | invalid | stderr
    rpc_id        TEXT,                 -- the JSON-RPC id as JSON text (7, "abc", null)
    method        TEXT,
    session_id    TEXT,
    reply_to_seq  INTEGER,              -- for responses: the request's seq
    latency_ns    INTEGER,              -- for responses: ns since that request
    raw           BLOB    NOT NULL,     -- the exact bytes, newline included
    PRIMARY KEY (trace_id, seq)
);
