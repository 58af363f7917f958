"""A small server for the stdio tests, run as ``python -m mcpactor serve <this file>``."""

from __future__ import annotations

import os

import trio

from mcpactor import Context, Server, TextContent

server = Server("stdio-test", version="1.0.0")

_cancelled = trio.Event()


@server.tool()
def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


@server.tool()
def pid() -> int:
    """The server's process id."""
    return os.getpid()


@server.tool()
async def wait_forever(ctx: Context) -> str:
    """Report progress once, then wait until cancelled."""
    try:
        await ctx.report_progress(1, message="waiting")
        await trio.sleep_forever()
    finally:
        _cancelled.set()
    return "unreachable"


@server.tool()
async def was_cancelled() -> bool:
    """Wait until a call of wait_forever has been cancelled."""
    await _cancelled.wait()
    return True


@server.tool()
async def ask(question: str, ctx: Context) -> str:
    """Ask the client's model."""
    result = await ctx.sample(question, max_tokens=10)
    assert isinstance(result.content, TextContent)
    return result.content.text


@server.resource("test://greeting")
def greeting() -> str:
    """A greeting."""
    return "hello"


@server.prompt()
def greet(name: str) -> str:
    """Greet someone."""
    return f"Hello {name}"
