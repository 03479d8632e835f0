#!/usr/bin/env python3
"""The scripted agent of `py_agent.py` served over ACP's Streamable HTTP and
WebSocket transport by the official Python SDK (`acp.http.asgi`, the
`agent-client-protocol[http]` extra), under uvicorn, for acp-tee's
`http-proxy` tests.

Every connection (an `initialize` POST or a WebSocket) gets an agent of its
own. The endpoint is `/acp` on 127.0.0.1 and the port given (0: any free
one); once it listens, the script prints `listening on http://HOST:PORT/acp`
on stdout, and it serves until it is killed.

Options:
  --port PORT       the port to listen on (default 0)
  --tls CERT KEY    serve https (and wss) with this certificate and key
                    (PEM files); the URL printed is then https://
  --no-permission   the agent runs its tool call without asking
  --gzip            compress every answer the client accepts gzip for
                    (Starlette's GZipMiddleware, as a deployed server may)
"""

from __future__ import annotations

import argparse
import asyncio
import os
import socket
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import uvicorn  # noqa: E402
from acp.http.asgi import create_asgi_app  # noqa: E402
from py_agent import PyAgent  # noqa: E402


async def serve(port: int, permission: bool, tls: list[str] | None, gzip: bool) -> None:
    app = create_asgi_app(
        lambda _conn: PyAgent(
            permission=permission, reject_only=False, usage_update=False, tool_kind="edit", until_cancel=False
        )
    )
    if gzip:
        from starlette.middleware.gzip import GZipMiddleware

        app = GZipMiddleware(app, minimum_size=1)
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", port))
    host, bound = sock.getsockname()
    config = uvicorn.Config(
        app,
        log_level="warning",
        ws="websockets-sansio",
        ws_per_message_deflate=False,
        lifespan="on",
        ssl_certfile=tls[0] if tls else None,
        ssl_keyfile=tls[1] if tls else None,
    )
    server = uvicorn.Server(config)
    task = asyncio.ensure_future(server.serve(sockets=[sock]))
    while not server.started:
        if task.done():
            task.result()
            return
        await asyncio.sleep(0.01)
    scheme = "https" if tls else "http"
    print(f"listening on {scheme}://{host}:{bound}/acp", flush=True)
    await task


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--no-permission", action="store_true")
    parser.add_argument("--tls", nargs=2, metavar=("CERT", "KEY"))
    parser.add_argument("--gzip", action="store_true")
    args = parser.parse_args()
    asyncio.run(serve(args.port, permission=not args.no_permission, tls=args.tls, gzip=args.gzip))


if __name__ == "__main__":
    main()
