"""The server every transport conformance check talks to, and a recorder of the wire.

The module is also a stdio target: ``python -m mcpactor serve`` finds ``server``.
"""

from __future__ import annotations

from typing import Any

import trio

from mcpactor import Context, Server
from mcpactor.protocol import JSONValue


class Cleanups:
    """Which sleeping handlers have run their ``finally``; tools wait on it."""

    def __init__(self) -> None:
        self.done: set[str] = set()
        self.changed = trio.Event()

    def add(self, tag: str) -> None:
        self.done.add(tag)
        self.changed.set()
        self.changed = trio.Event()

    async def wait(self, tag: str) -> None:
        while tag not in self.done:
            await self.changed.wait()


def make_server() -> Server:
    """A fresh server with its own state: echo, count, sleep, cleaned and fail."""
    server = Server("conformance", "1.0.0")
    cleanups = Cleanups()

    @server.tool()
    async def echo(text: str) -> str:
        """Answer with the text."""
        return text

    @server.tool()
    async def count(steps: int, ctx: Context) -> str:
        """Report progress ``steps`` times, then answer."""
        for step in range(steps):
            await ctx.report_progress(step + 1, steps)
        return f"counted {steps}"

    @server.tool()
    async def sleep(tag: str, ctx: Context) -> str:
        """Report progress once, then sleep until cancelled."""
        try:
            await ctx.report_progress(1)
            await trio.sleep_forever()
        finally:
            cleanups.add(tag)
        return "woke up"  # pragma: no cover - only cancellation ends the sleep

    @server.tool()
    async def cleaned(tag: str) -> bool:
        """Answer once the ``sleep`` handler tagged ``tag`` has run its ``finally``."""
        await cleanups.wait(tag)
        return True

    @server.tool()
    async def fail(reason: str) -> str:
        """Raise."""
        raise ValueError(reason)

    return server


server = make_server()


class Wire:
    """Every message the server sent to one client, in arrival order (a client hook)."""

    def __init__(self) -> None:
        self.messages: list[Any] = []
        self._changed = trio.Event()

    def __call__(self, message: JSONValue, request_method: str | None) -> None:
        self.messages.append(message)
        self._changed.set()
        self._changed = trio.Event()

    async def wait_for(self, predicate: Any) -> int:
        """Wait until a message satisfies ``predicate``; return its index."""
        while True:
            for index, message in enumerate(self.messages):
                if predicate(message):
                    return index
            await self._changed.wait()

    async def response(self, request_id: object) -> Any:
        """Wait for the response (result or error) to ``request_id`` and return it."""
        index = await self.wait_for(lambda m: is_response(m, request_id))
        return self.messages[index]

    def responses(self, request_id: object) -> list[Any]:
        """Every response to ``request_id`` seen so far."""
        return [m for m in self.messages if is_response(m, request_id)]


def is_response(message: Any, request_id: object) -> bool:
    """Whether ``message`` answers ``request_id`` (with a result or an error)."""
    return (
        isinstance(message, dict)
        and "method" not in message
        and type(message.get("id")) is type(request_id)
        and message.get("id") == request_id
    )


def progress_of(message: Any, token: object) -> bool:
    """Whether ``message`` is a progress notification for ``token``."""
    return (
        isinstance(message, dict)
        and message.get("method") == "notifications/progress"
        and message.get("params", {}).get("progressToken") == token
    )
