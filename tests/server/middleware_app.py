"""A server with middleware of every kind, served by the middleware tests on each transport.

Run as ``mcpactor serve tests/server/middleware_app.py`` (stdio) or in process (HTTP and
WebSocket); what its middleware saw is read back with the ``journal`` tool, so a test
can ask a server in another process.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

import trio

from mcpactor import Context, RequestError, Server
from mcpactor.middleware import Call, Message, Next, Progress, Result


def make_server() -> Server:
    """A fresh server and its middleware (the journal is the server's own)."""
    server = Server("middleware-test", "1.0.0")
    journal: list[str] = []
    closed = trio.Event()

    @server.tool()
    async def add(a: int, b: int) -> str:
        """Add two numbers."""
        return str(a + b)

    @server.tool()
    async def count(steps: int, ctx: Context) -> str:
        """Report progress ``steps`` times, logging each step, then answer."""
        for step in range(1, steps + 1):
            await ctx.report_progress(step, steps)
        return f"counted {steps}"

    @server.tool()
    async def hold(ctx: Context) -> str:
        """Report progress once, then wait to be cancelled."""
        await ctx.report_progress(1, 2)
        await trio.sleep_forever()
        raise AssertionError("not reached")

    @server.tool(name="journal")
    async def read_journal(wait_closed: bool = False) -> str:
        """What the middleware saw; with ``wait_closed``, once a held call has closed."""
        if wait_closed:
            with trio.fail_after(10):
                await closed.wait()
        return "\n".join(journal)

    async def outer(call: Call, call_next: Next) -> AsyncIterator[Message]:
        # Records the order of layers, and closes through ``finally`` whatever happens.
        name = _tool(call)
        journal.append(f"outer in {call.method}{name}")
        try:
            async for message in call_next(call):
                journal.append(f"outer saw {type(message).__name__}")
                yield message
        finally:
            journal.append(f"outer out {call.method}{name}")
            if name == " hold":
                closed.set()

    async def inner(call: Call, call_next: Next) -> AsyncIterator[Message]:
        # Rewrites params on the way in and the answer on the way out; answers early,
        # refuses, fails or drops a notice for the tools named so.
        name = _tool(call)
        journal.append(f"inner in {call.method}{name}")
        try:
            if name == " add" and call.params is not None:
                arguments = dict(call.params["arguments"])
                arguments["a"] = arguments["a"] * 10
                call.params = {**call.params, "arguments": arguments}
            if name == " early":
                yield Result({"content": [{"type": "text", "text": "answered early"}]})
                return
            if name == " refused":
                raise RequestError(-32042, "refused by middleware", {"tool": "refused"})
            if name == " explode":
                raise ZeroDivisionError("middleware bug")
            async for message in call_next(call):
                if isinstance(message, Progress) and message.params["progress"] == 2:
                    continue
                if isinstance(message, Result) and name == " add":
                    content = message.payload["content"]
                    content[0] = {**content[0], "text": content[0]["text"] + " (rewritten)"}
                yield message
        finally:
            journal.append(f"inner out {call.method}{name}")

    server.middleware.use(outer)
    server.middleware.use(inner)
    return server


def _tool(call: Call) -> str:
    if call.method != "tools/call" or call.params is None:
        return ""
    return f" {call.params.get('name')}"


server = make_server()
