"""Middleware: a layer of the server's own around every request, and the built-in ones.

``audit`` counts each tool call by caller and marks its result in ``_meta``; the
built-in layers log each request's duration (``timing``), limit each caller to a burst
of 20 calls refilled at 10 a second (``RateLimit``), hide the operators' tool
(``ToolFilter``) and answer repeated reads from a cache for as long as the server's
cache hints allow at 2026-07-28 (``ResponseCache``). The first added is the outermost.

Serve it with ``mcpactor serve examples/middleware.py`` (stdio) or with ``--http 8000``.
"""

from __future__ import annotations

import collections
from collections.abc import AsyncIterator
from typing import Final

import trio

from mcpactor import Context, Server
from mcpactor.middleware import (
    Call,
    Message,
    Next,
    RateLimit,
    ResponseCache,
    Result,
    ToolFilter,
    caller_of,
    timing,
)
from mcpactor.server import CacheHint
from mcpactor.transports import serve_stdio

AUDITED: Final = "example.com/audit"

server = Server("notes", version="1.0.0", cache=CacheHint(ttl_ms=30_000, scope="public"))
notes: list[str] = []
reads = 0
#: tool calls by caller, for the audit
calls: collections.Counter[tuple[object, str]] = collections.Counter()


@server.tool()
async def add_note(text: str, ctx: Context) -> str:
    """Keep a note."""
    await ctx.report_progress(1, 1, "saved")
    notes.append(text)
    server.notify_resource_updated("notes://all")
    return f"{len(notes)} note(s)"


@server.tool()
async def drop_all() -> str:
    """Forget every note (for operators: hidden by the ToolFilter)."""
    notes.clear()
    return "dropped"


@server.resource("notes://all", cache=CacheHint(ttl_ms=5_000, scope="public"))
async def all_notes() -> str:
    """Every note, one a line, and how often the notes were read."""
    global reads
    reads += 1
    return "\n".join([*notes, f"(read {reads} time(s))"])


@server.middleware.use
async def audit(call: Call, call_next: Next) -> AsyncIterator[Message]:
    """Count tool calls by caller; mark each tool result with the caller's count."""
    tool = (call.params or {}).get("name") if call.method == "tools/call" else None
    if isinstance(tool, str):
        calls[(caller_of(call), tool)] += 1
    async for message in call_next(call):
        if isinstance(tool, str) and isinstance(message, Result):
            meta = dict(message.payload.get("_meta") or {})
            meta[AUDITED] = {"tool": tool, "calls": calls[(caller_of(call), tool)]}
            message.payload = {**message.payload, "_meta": meta}
        yield message


server.middleware.use(timing())
server.middleware.use(RateLimit(rate=10, burst=20))
server.middleware.use(ToolFilter(deny={"drop_all"}))
server.middleware.use(ResponseCache())


if __name__ == "__main__":
    trio.run(serve_stdio, server)
