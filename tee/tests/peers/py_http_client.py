#!/usr/bin/env python3
"""An ACP client on the official Python SDK's remote transports: its
Streamable HTTP client (`acp.http.create_http_stream`) or its WebSocket
client (`acp.ws.create_websocket_stream`), for acp-tee's `http-proxy` tests.

Each connection plays one whole conversation: `initialize`, `session/new`,
one `session/prompt` (approving the agent's permission request with
`allow-once`), then closes (the HTTP client DELETEs the connection). With
`--connections N` that many run at once. What the client saw is printed as
one JSON document on stdout: per connection, the agent's name, the session
id, the stop reason, and every session update's kind and text in the order
received; it leaves out nothing that depends on the transport, so runs
through a proxy and straight to the agent print the same.

Options:
  URL                 the ACP endpoint (http://HOST:PORT/acp)
  --ws                use the WebSocket client (the URL's http becomes ws)
  --connections N     conversations at once (default 1)
  --header NAME=VALUE an extra header on every request (repeatable)
  --hold              after the prompt, print the result, then wait for a
                      line on stdin before closing
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from typing import Any

from acp import PROTOCOL_VERSION, connect_to_agent, text_block
from acp.schema import AllowedOutcome, ClientCapabilities, Implementation, RequestPermissionResponse


class RecordingClient:
    """Approves permission requests once; keeps every session update."""

    def __init__(self) -> None:
        self.updates: list[dict[str, Any]] = []
        self.permissions = 0

    async def request_permission(self, options: Any, session_id: str, tool_call: Any, **kwargs: Any) -> Any:
        self.permissions += 1
        return RequestPermissionResponse(outcome=AllowedOutcome(outcome="selected", option_id="allow-once"))

    async def session_update(self, session_id: str, update: Any, **kwargs: Any) -> None:
        data = update.model_dump(by_alias=True, exclude_none=True)
        content = data.get("content")
        text = content.get("text") if isinstance(content, dict) else None
        self.updates.append({"kind": data.get("sessionUpdate"), "text": text, "status": data.get("status")})

    def on_connect(self, conn: Any) -> None:
        pass


async def conversation(
    url: str, ws: bool, headers: dict[str, str], hold: asyncio.Event | None, reached: asyncio.Queue[None]
) -> dict[str, Any]:
    if ws:
        from acp.ws import create_websocket_stream

        transport = await create_websocket_stream(url.replace("http://", "ws://", 1), headers=headers or None)
    else:
        from acp.http import create_http_stream

        transport = create_http_stream(url, headers=headers or None)
    client = RecordingClient()
    conn = connect_to_agent(client, transport, use_unstable_protocol=True)
    init = await conn.initialize(
        protocol_version=PROTOCOL_VERSION,
        client_capabilities=ClientCapabilities(),
        client_info=Implementation(name="acp-tee-py-http-client", version="1.0.0"),
    )
    session = await conn.new_session(cwd="/tmp", mcp_servers=[])
    answer = await conn.prompt(session_id=session.session_id, prompt=[text_block("Look at README.md")])
    result = {
        "agent": init.agent_info.name if init.agent_info else None,
        "protocolVersion": init.protocol_version,
        "session": session.session_id,
        "stopReason": answer.stop_reason,
        "permissions": client.permissions,
        "updates": client.updates,
    }
    if hold is not None:
        reached.put_nowait(None)
        await hold.wait()
    await conn.close()
    await transport.close()
    return result


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("url")
    parser.add_argument("--ws", action="store_true")
    parser.add_argument("--connections", type=int, default=1)
    parser.add_argument("--header", action="append", default=[])
    parser.add_argument("--hold", action="store_true")
    args = parser.parse_args()
    headers = dict(h.split("=", 1) for h in args.header)
    hold = asyncio.Event() if args.hold else None
    reached: asyncio.Queue[None] = asyncio.Queue()
    runs = [
        asyncio.ensure_future(conversation(args.url, args.ws, headers, hold, reached)) for _ in range(args.connections)
    ]
    if hold is not None:
        # Every conversation has had its turn, and is still open.
        for _ in runs:
            await reached.get()
        print("held", flush=True)
        await asyncio.get_running_loop().run_in_executor(None, sys.stdin.readline)
        hold.set()
    results = await asyncio.gather(*runs)
    print(json.dumps({"connections": sorted(results, key=lambda r: r["session"])}), flush=True)


if __name__ == "__main__":
    asyncio.run(main())
