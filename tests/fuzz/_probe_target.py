"""A server mounted beside the bundled plugins in the attack probe: what they do not have.

Its tools raise with their argument in the message (what reaches the log from a
handler), answer with many bytes (for clients that do not read) and hold a request in
flight until told (for ids and cancellations across sessions).
"""

from __future__ import annotations

import trio

from mcpactor import Context, Server

server = Server("probe", version="1.0.0")

#: what ``hold`` waits for, by key: set by ``release``
_released: dict[str, trio.Event] = {}


@server.tool()
async def fail(text: str) -> str:
    """Raise an exception whose message quotes ``text``."""
    raise RuntimeError(f"could not handle {text}")


@server.tool()
async def blob(kib: int) -> str:
    """Answer with ``kib`` KiB of text (at most 4 MiB)."""
    return "x" * (min(max(kib, 0), 4096) * 1024)


@server.tool()
async def hold(key: str, ctx: Context) -> str:
    """Stay in flight until ``release`` is called with the same key (or 20 s pass)."""
    event = _released.setdefault(key[:100], trio.Event())
    await ctx.report_progress(0, 1)
    with trio.move_on_after(20):
        await event.wait()
    _released.pop(key[:100], None)
    return f"held {key[:100]}"


@server.tool()
async def release(key: str) -> bool:
    """Let the ``hold`` call of ``key`` answer."""
    event = _released.get(key[:100])
    if event is None:
        return False
    event.set()
    return True


@server.tool()
async def chatter(count: int, size: int, ctx: Context) -> str:
    """Report progress ``count`` times, each with a message of ``size`` characters."""
    text = "c" * min(max(size, 0), 100_000)
    count = min(max(count, 0), 100_000)
    for step in range(count):
        await ctx.report_progress(step, count, text)
    return f"said {count}"
