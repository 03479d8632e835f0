"""A real MCP client for tests/mcp.rs: the official Python SDK's (`mcp` from
PyPI) stdio client.

    mcp_client.py COMMAND [ARGS...] < CALLS_JSON

Starts COMMAND ARGS as an MCP server on stdio, initializes, lists the
tools, calls each tool of CALLS_JSON (on stdin: a JSON list of [name,
arguments]; an element that is a list of such pairs is called all at once,
its answers in its order) in order, and prints one JSON document on stdout:
{"server": InitializeResult, "tools": [Tool], "calls": [{"tool", "arguments",
"result": CallToolResult} or {"tool", "arguments", "error": {"code",
"message"}}]}, each MCP object as the SDK dumps it (camelCase keys).
"""

import asyncio
import json
import sys

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.shared.exceptions import MCPError


def dump(obj):
    return obj.model_dump(mode="json", by_alias=True, exclude_none=True)


async def call(session, name, arguments):
    out = {"tool": name, "arguments": arguments}
    try:
        out["result"] = dump(await session.call_tool(name, arguments))
    except MCPError as e:
        out["error"] = {"code": e.error.code, "message": e.error.message}
    return out


async def main():
    calls = json.load(sys.stdin)
    server = StdioServerParameters(command=sys.argv[1], args=sys.argv[2:])
    out = {"calls": []}
    async with stdio_client(server) as (read, write):
        async with ClientSession(read, write) as session:
            out["server"] = dump(await session.initialize())
            out["tools"] = [dump(t) for t in (await session.list_tools()).tools]
            for c in calls:
                if isinstance(c[0], list):
                    out["calls"].append(await asyncio.gather(*(call(session, *p) for p in c)))
                else:
                    out["calls"].append(await call(session, *c))
    json.dump(out, sys.stdout)


asyncio.run(main())
