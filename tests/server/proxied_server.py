"""A server for the proxy tests: run as ``python -m mcpactor serve <this file>``.

The same module is also imported and served in memory, so the tests can compare what a
client sees of it directly with what it sees through a proxy.
"""

from __future__ import annotations

import os

import trio

from mcpactor import Completion, Context, Server, TextContent

server = Server("proxied", version="1.2.3", instructions="a server behind a proxy")

_cancelled = trio.Event()


@server.tool()
def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


@server.tool()
async def steps(n: int, ctx: Context) -> str:
    """Report progress and log a line at each of ``n`` steps."""
    for step in range(1, n + 1):
        await ctx.report_progress(step, n, f"step {step}")
        await ctx.info(f"did step {step}", logger="steps")
    return f"{n} steps"


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


@server.tool()
async def roots(ctx: Context) -> list[str]:
    """The client's roots."""
    return [str(root.uri) for root in await ctx.list_roots()]


@server.tool()
def grow() -> str:
    """Register one more tool."""
    server.add_tool(lambda: "grown", name="grown")
    return "grew"


@server.tool()
def touch() -> str:
    """Tell subscribers that the greeting changed."""
    server.notify_resource_updated("proxied://greeting")
    return "touched"


@server.tool()
def die() -> str:
    """Exit the process at once, without answering."""
    os._exit(3)


@server.tool(task_support="optional")
async def job() -> str:
    """A tool that may run as a task (where tasks are not proxied, it is a plain call)."""
    return "job done"


@server.resource("proxied://greeting", mime_type="text/plain")
def greeting() -> str:
    """A greeting."""
    return "hello"


@server.resource("proxied://items/{item}")
def item(item: str) -> str:
    """One item."""
    return f"item {item}"


@server.completion("proxied://items/{item}", "item")
def complete_item(value: str, context: dict[str, str]) -> Completion:
    return Completion(values=[v for v in ("apple", "apricot", "banana") if v.startswith(value)])


@server.prompt()
def greet(name: str) -> str:
    """Greet someone."""
    return f"Hello {name}"
