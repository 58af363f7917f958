"""The server the operator's test serves with ``mcpactor serve --admin``: a quick tool
for the load, a slow one reporting progress, a failing one, a task that runs until
cancelled, and a sign-in that logs and fails (the docs' screenshots show its story)."""

from __future__ import annotations

import logging
import math

import trio

from mcpactor import Context, Server

server = Server("operated", "1.0.0")


@server.tool()
async def echo(text: str) -> str:
    """Return ``text``: the quick tool of the load."""
    return text


@server.tool()
async def slow(ctx: Context, every: float = 0.3) -> str:
    """Report progress every ``every`` seconds, forever."""
    step = 0
    while True:
        step += 1
        await ctx.report_progress(step, 1000, f"step {step}")
        await trio.sleep(every)


@server.tool()
async def fail(why: str) -> str:
    """Raise ``why``: the failing tool."""
    raise ValueError(why)


@server.tool(task_support="optional")
async def job() -> str:
    """Run until cancelled."""
    await trio.sleep(math.inf)
    return "never"


@server.tool()
async def sign_in(user: str, password: str, note: str = "") -> str:
    """Log the attempt, then fail: a call with a secret in its arguments."""
    logging.getLogger("operated.sign_in").warning("sign-in attempt by %s", user)
    raise ValueError("wrong password")
