"""The server each replica of tests/store/replicas.py serves: a few tools that say who ran them.

Every tool answers with the process id of the replica that ran it, so a test can tell
which replica served which request. ``slow`` appends to the file named by
``MCPACTOR_REPLICA_LOG`` when it starts and how it ended, so a test can see a
cancellation reach the handler whatever replica runs it.
"""

from __future__ import annotations

import os
from typing import Final

import trio

from mcpactor import Context, Server

server = Server("replica", version="1.0.0")

#: the longest any tool waits, so nothing a test starts outlives it by much
MAX_SECONDS: Final = 60.0

PID: Final = os.getpid()


def _note(line: str) -> None:
    # One short line per write with O_APPEND: the replicas append to one file without
    # interleaving their lines.
    path = os.environ.get("MCPACTOR_REPLICA_LOG")
    if path:
        with open(path, "a", encoding="utf-8") as log:
            log.write(line + "\n")


@server.tool()
async def whoami() -> int:
    """The process id of the replica that ran this call."""
    return PID


@server.tool(task_support="optional")
async def slow(seconds: float, label: str) -> str:
    """Sleep ``seconds``, noting when it starts and how it ends; cancel it to stop it.

    A task for a client that asks for one, so that a task's cancel can be seen too.
    """
    _note(f"started {label} {PID}")
    try:
        await trio.sleep(max(0.0, min(seconds, MAX_SECONDS)))
    except trio.Cancelled:
        _note(f"cancelled {label} {PID}")
        raise
    _note(f"finished {label} {PID}")
    return f"{label} slept {seconds:g} s on {PID}"


@server.tool()
async def steps(count: int, pause: float, ctx: Context) -> str:
    """Report progress ``count`` times, ``pause`` seconds apart (an SSE stream to resume)."""
    for step in range(1, count + 1):
        await ctx.report_progress(step, count, f"step {step} on {PID}")
        await trio.sleep(max(0.0, min(pause, MAX_SECONDS)))
    return f"{count} steps on {PID}"


@server.tool()
async def ask(question: str, ctx: Context) -> str:
    """Ask the user ``question`` (elicitation) and say what they answered, and where."""
    answer = await ctx.elicit(
        question, {"type": "object", "properties": {"seats": {"type": "integer"}}}
    )
    seats = (answer.content or {}).get("seats")
    return f"{answer.action}: {seats} seats, asked on {PID}"


@server.tool(task_support="optional")
async def chore(seconds: float) -> str:
    """Work ``seconds``, then say where; a task for a client that asks for one."""
    await trio.sleep(max(0.0, min(seconds, MAX_SECONDS)))
    return f"chore done on {PID}"


counter = 0


@server.resource("replica://counter", mime_type="text/plain")
async def counter_value() -> str:
    """This replica's counter; ``bump`` changes it and tells subscribers."""
    return str(counter)


@server.tool()
async def bump() -> int:
    """Add one to this replica's counter and say the resource changed (to every replica)."""
    global counter
    counter += 1
    server.notify_resource_updated("replica://counter")
    return PID
