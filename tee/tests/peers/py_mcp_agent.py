#!/usr/bin/env python3
"""An ACP agent on the official Python ACP SDK (`agent-client-protocol`) that
uses MCP servers through the official Python MCP SDK (`mcp`), both from
PyPI, for acp-tee's tests of traces that belong together.

On `session/new` it starts every stdio server of `mcpServers` (as an agent
does with an editor's context servers), initializes it and lists its tools.
On every `session/prompt` whose text is `TOOL ARGUMENTS_JSON` it plays one
turn: an `agent_message_chunk`, a `tool_call` (pending, titled `mcp: TOOL`)
and its `tool_call_update` to `in_progress`, then MCP `tools/call TOOL` on
the first server that lists TOOL, then a `tool_call_update` `completed`
with the tool's text (or `failed`, when the call answered an error or a
result with `isError`), and the PromptResponse with stopReason `end_turn`.

Options:
  --meta       send the ACP session and tool call ids in the `tools/call`
               request's `_meta` (`acp.sessionId`, `acp.toolCallId`), as a
               hint that names the tool call the request serves
  --mcp-first  announce the ACP `tool_call` only once `tools/call` has been
               answered, as agents that report a call after making it do
               (the MCP request then comes before its tool call)

Deterministic but for what the MCP server answers (a time server's time).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from typing import Any

from acp import (
    PROTOCOL_VERSION,
    Agent,
    InitializeResponse,
    NewSessionResponse,
    PromptResponse,
    RequestError,
    run_agent,
    start_tool_call,
    text_block,
    tool_content,
    update_agent_message_text,
    update_tool_call,
)
from acp.interfaces import Client
from acp.schema import AgentCapabilities, Implementation
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.shared.exceptions import MCPError


class Server:
    """One MCP server, served by a task of its own (the SDK's contexts must
    be entered and left by the same task); calls go through a queue."""

    def __init__(self, name: str, params: StdioServerParameters) -> None:
        self.name = name
        self.params = params
        self.tools: list[str] = []
        self.ready = asyncio.Event()
        self.failed: str | None = None
        self.calls: asyncio.Queue = asyncio.Queue()
        self.task = asyncio.ensure_future(self._serve())

    async def _serve(self) -> None:
        try:
            async with stdio_client(self.params) as (read, write):
                async with ClientSession(read, write) as session:
                    await session.initialize()
                    self.tools = [t.name for t in (await session.list_tools()).tools]
                    self.ready.set()
                    while True:
                        item = await self.calls.get()
                        if item is None:
                            return
                        name, arguments, meta, answer = item
                        try:
                            answer.set_result(await session.call_tool(name, arguments, meta=meta))
                        except Exception as e:  # noqa: BLE001 - handed to the turn
                            answer.set_exception(e)
        except Exception as e:  # noqa: BLE001 - said in the turn
            self.failed = f"{type(e).__name__}: {e}"
            self.ready.set()

    async def call(self, name: str, arguments: dict, meta: dict | None) -> Any:
        answer = asyncio.get_running_loop().create_future()
        await self.calls.put((name, arguments, meta, answer))
        return await answer


class McpAgent(Agent):
    """One tool call per prompt through the session's MCP servers."""

    def __init__(self, meta: bool, mcp_first: bool) -> None:
        self._conn: Client | None = None
        self._meta = meta
        self._mcp_first = mcp_first
        self._sessions: dict[str, list[Server]] = {}
        self._turns = 0

    def on_connect(self, conn: Client) -> None:
        self._conn = conn

    async def initialize(
        self, protocol_version: int, client_capabilities: Any = None, client_info: Any = None, **kwargs: Any
    ) -> InitializeResponse:
        return InitializeResponse(
            protocol_version=min(protocol_version, PROTOCOL_VERSION),
            agent_capabilities=AgentCapabilities(load_session=False),
            agent_info=Implementation(name="acp-tee-py-mcp-agent", title="acp-tee MCP test agent", version="1.0.0"),
        )

    async def new_session(self, cwd: str, mcp_servers: Any = None, **kwargs: Any) -> NewSessionResponse:
        session_id = f"mcp-session-{len(self._sessions) + 1}"
        servers = []
        for s in mcp_servers or []:
            command = getattr(s, "command", None)
            if command is None:
                continue  # HTTP and SSE servers are not started here
            env = {e.name: e.value for e in (getattr(s, "env", None) or [])}
            params = StdioServerParameters(command=command, args=list(s.args or []), env=env or None)
            servers.append(Server(s.name, params))
        for server in servers:
            await server.ready.wait()
            if server.failed:
                raise RequestError.internal_error({"server": server.name, "error": server.failed})
        self._sessions[session_id] = servers
        return NewSessionResponse(session_id=session_id)

    async def authenticate(self, method_id: str, **kwargs: Any) -> None:
        return None

    async def cancel(self, session_id: str, **kwargs: Any) -> None:
        return None

    async def prompt(self, session_id: str, prompt: list[Any], **kwargs: Any) -> PromptResponse:
        assert self._conn is not None
        servers = self._sessions.get(session_id)
        if servers is None:
            raise RequestError.invalid_params({"sessionId": session_id})
        text = "".join(getattr(block, "text", "") for block in prompt).strip()
        tool, _, rest = text.partition(" ")
        try:
            arguments = json.loads(rest) if rest.strip() else {}
        except json.JSONDecodeError as e:
            raise RequestError.invalid_params({"prompt": f"arguments are not JSON: {e}"})
        server = next((s for s in servers if tool in s.tools), None)
        if server is None:
            raise RequestError.invalid_params({"prompt": f"no MCP server of this session has a tool `{tool}`"})

        self._turns += 1
        tool_id = f"call-{self._turns}"
        send = self._conn.session_update
        meta = {"acp": {"sessionId": session_id, "toolCallId": tool_id}} if self._meta else None
        await send(session_id, update_agent_message_text(f"Calling {tool} on {server.name}."))
        call = asyncio.ensure_future(self._call(server, tool, arguments, meta))
        if self._mcp_first:
            await asyncio.wait({call})
        await send(session_id, start_tool_call(tool_id, f"mcp: {tool}", kind="other", status="pending",
                                               raw_input=arguments))
        await send(session_id, update_tool_call(tool_id, status="in_progress"))
        output, failed = await call
        await send(
            session_id,
            update_tool_call(tool_id, status="failed" if failed else "completed",
                             content=[tool_content(text_block(output or "(no text)"))]),
        )
        await send(session_id, update_agent_message_text(" Done." if not failed else " The tool failed."))
        return PromptResponse(stop_reason="end_turn")

    @staticmethod
    async def _call(server: Server, tool: str, arguments: dict, meta: dict | None) -> tuple[str, bool]:
        """The tool's text and whether it failed."""
        try:
            result = await server.call(tool, arguments, meta)
            return "".join(getattr(c, "text", "") for c in result.content), bool(result.is_error)
        except MCPError as e:
            return f"MCP error {e.error.code}: {e.error.message}", True


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--meta", action="store_true", help="name the tool call in the request's _meta")
    parser.add_argument("--mcp-first", action="store_true", help="send tools/call before the ACP tool_call")
    args = parser.parse_args()
    asyncio.run(run_agent(McpAgent(meta=args.meta, mcp_first=args.mcp_first), use_unstable_protocol=True))


if __name__ == "__main__":
    sys.exit(main())
