"""The ceiling of the HTTP stack mcpactor can run on: a bare ASGI app on hypercorn's trio worker.

    raw_hypercorn.py http HOST PORT [--sse] [--stateless]

The same canned answers as raw_http.py (canned.CannedMcp), with the HTTP/1.1 work done
by hypercorn. Against raw_http.py it shows what hypercorn costs; against an MCP framework
on hypercorn, what the framework costs. hypercorn's settings are its defaults (its listen
backlog too), with the access log off.
"""

from __future__ import annotations

import contextlib
import functools
import sys
from collections.abc import Awaitable, Callable
from typing import Any

import trio
from canned import JSON_CONTENT_TYPE, SSE_CONTENT_TYPE, CannedMcp, framed
from contract import parse_argv
from hypercorn.config import Config
from hypercorn.trio import serve

Receive = Callable[[], Awaitable[dict[str, Any]]]
Send = Callable[[dict[str, Any]], Awaitable[None]]


def make_app(
    mcp: CannedMcp, sse: bool
) -> Callable[[dict[str, Any], Receive, Send], Awaitable[None]]:
    """The ASGI application answering with mcp."""

    async def app(scope: dict[str, Any], receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            while (await receive())["type"] != "lifespan.shutdown":
                await send({"type": "lifespan.startup.complete"})
            await send({"type": "lifespan.shutdown.complete"})
            return
        chunks = []
        while True:
            event = await receive()
            chunks.append(event.get("body", b""))
            if not event.get("more_body"):
                break
        session = dict(scope["headers"]).get(b"mcp-session-id")
        verb = scope["method"].encode()
        status, body, new = await mcp.handle(verb, session, b"".join(chunks))
        headers = []
        if new is not None:
            headers.append((b"mcp-session-id", new))
        if body:
            streaming = sse and status == 200
            body = framed(body, streaming)
            headers.append((b"content-type", SSE_CONTENT_TYPE if streaming else JSON_CONTENT_TYPE))
        headers.append((b"content-length", b"%d" % len(body)))
        await send({"type": "http.response.start", "status": status, "headers": headers})
        await send({"type": "http.response.body", "body": body})

    return app


def main() -> None:
    """Serve until interrupted."""
    opts = parse_argv(sys.argv)
    config = Config()
    config.bind = [f"{opts['host']}:{opts['port']}"]
    config.loglevel = "WARNING"
    config.accesslog = None
    app = make_app(CannedMcp("raw-hypercorn", stateless=opts["stateless"]), opts["sse"])
    trio.run(functools.partial(serve, app, config))


if __name__ == "__main__":
    with contextlib.suppress(KeyboardInterrupt):
        main()
