"""The contract's tools, resource and prompt as plain functions, for a framework to register.

Both frameworks compared here run on anyio and find the context parameter by its
annotation, so the functions are made for the framework's own Context class.
echo and add are async, so a call measures the framework rather than a thread pool;
echo_sync is the same tool as a plain function, run in the framework's worker threads.
"""

from collections.abc import Callable
from typing import Any

import anyio
from contract import log_event


def tools(context_type: type) -> list[Callable[..., Any]]:
    """echo, echo_sync, add, sleep and progress; progress takes a context_type."""

    async def echo(text: str) -> str:
        """Return text unchanged."""
        return text

    def echo_sync(text: str) -> str:
        """Return text unchanged (plain function: runs in a worker thread)."""
        return text

    async def add(a: int, b: int) -> int:
        """Add two integers."""
        return a + b

    async def sleep(seconds: float) -> str:
        """Sleep for `seconds`."""
        log_event("start", seconds)
        how = "error"
        try:
            await anyio.sleep(seconds)
            how = "completed"
            return "slept"
        except anyio.get_cancelled_exc_class():
            how = "cancelled"
            raise
        finally:
            log_event("end", seconds, how)

    async def progress(steps: int, ctx: context_type) -> str:  # type: ignore[valid-type]
        """Report progress `steps` times."""
        for i in range(steps):
            await ctx.report_progress(i + 1, steps)
        return f"done {steps}"

    return [echo, echo_sync, add, sleep, progress]


STATIC_URI = "bench://static"


def static_resource() -> str:
    """A static text resource."""
    return "static resource"


def greet(name: str) -> str:
    """A one-line prompt."""
    return f"Say hello to {name}."
