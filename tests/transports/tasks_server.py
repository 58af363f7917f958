"""The server of the task end-to-end tests, served with ``python -m mcpactor serve``.

Nothing in it sleeps: a ``job`` waits until the test calls ``release`` with the job's
key, and ``wait_started``/``wait_ended`` let the test follow a job from outside — they
answer once the job has started, or once its ``finally`` has run (with how it ended).
The HTTP tests serve ``make_server()`` in their own process, so each gets fresh jobs.
"""

from __future__ import annotations

import collections

import trio

from mcpactor import Context, Server


class Job:
    """What one job key has been through."""

    def __init__(self) -> None:
        self.started = trio.Event()
        self.release = trio.Event()
        self.ended = trio.Event()
        self.outcome = "running"


def make_server() -> Server:
    """A server with its own jobs."""
    server = Server("tasks-e2e", version="1.0.0")
    jobs: collections.defaultdict[str, Job] = collections.defaultdict(Job)

    @server.tool(task_support="optional")
    async def job(key: str, ctx: Context) -> str:
        """Report progress, then wait until ``release`` is called with ``key``."""
        state = jobs[key]
        state.started.set()
        await ctx.report_progress(1, 2, f"job {key} waits")
        outcome = "cancelled"
        try:
            await state.release.wait()
            outcome = "finished"
        finally:
            state.outcome = outcome
            state.ended.set()
        return f"job {key} done"

    @server.tool()
    async def release(key: str) -> str:
        """Let the job ``key`` finish (now, or as soon as it starts)."""
        jobs[key].release.set()
        return f"released {key}"

    @server.tool()
    async def wait_started(key: str) -> str:
        """Answer once the job ``key`` has started."""
        await jobs[key].started.wait()
        return "started"

    @server.tool()
    async def wait_ended(key: str) -> str:
        """Answer once the job ``key`` has ended, with how: finished or cancelled."""
        state = jobs[key]
        await state.ended.wait()
        return state.outcome

    return server


server = make_server()
