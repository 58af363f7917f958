"""A server over HTTP with the admin listener beside it, in the test's trio run."""

from __future__ import annotations

import contextlib
import functools
import logging
import math
from collections.abc import AsyncIterator
from typing import Any

import attrs
import trio

from mcpactor import Context, Server
from mcpactor.admin import create_admin_app, serve_admin
from mcpactor.runtime import Observatory, SessionOptions
from mcpactor.transports import serve_http

TOKEN = "admin-token-for-the-tests-0123456789"


@attrs.define
class Served:
    """Where the MCP endpoint and the admin listener are, and what the slow tool saw."""

    mcp_url: str
    admin_url: str
    observatory: Observatory
    #: set whenever a call of ``slow`` has started
    started: trio.Event
    #: the progress ``slow`` last reported
    progress: list[float]


def slow_server(served: list[Served]) -> Server:
    """A server with ``slow`` (progress every ``every`` seconds until cancelled), ``echo``,
    ``fail`` (always raises), ``sign_in`` (logs, then raises) and ``job`` (a task that
    runs until cancelled)."""
    server = Server("watched", "1.0.0")

    @server.tool()
    async def slow(ctx: Context, every: float = 0.3) -> str:
        """Report progress every ``every`` seconds, forever."""
        state = served[0]
        step = 0
        while True:
            step += 1
            await ctx.report_progress(step, None, f"step {step}")
            state.progress.append(step)
            state.started.set()
            await trio.sleep(every)

    @server.tool()
    async def echo(text: str) -> str:
        """Return ``text``: the quick tool of the load."""
        return text

    @server.tool()
    async def fail(why: str) -> str:
        """Raise ``why``: the failing tool."""
        raise ValueError(why)

    @server.tool()
    async def sign_in(user: str, password: str, note: str = "", data: str = "") -> str:
        """Log the attempt, then fail: a request with secrets in its arguments."""
        logging.getLogger("watched.sign_in").warning("sign-in attempt by %s", user)
        raise ValueError("wrong password")

    @server.tool(task_support="optional")
    async def job() -> str:
        """Run until cancelled."""
        await trio.sleep(math.inf)
        return "never"

    return server


@contextlib.asynccontextmanager
async def open_served(*, grace: float = 0.5, **admin: Any) -> AsyncIterator[Served]:
    """Serve the slow server on loopback, with the admin app (token ``TOKEN``) beside it.

    ``admin`` goes to ``create_admin_app`` (``resource_server``, ``scope``).
    """
    holder: list[Served] = []
    server = slow_server(holder)
    observatory = Observatory(replica="test-replica")
    observatory.install()
    observatory.serve(server)
    async with trio.open_nursery() as nursery:
        host, port = await nursery.start(
            functools.partial(
                serve_http,
                server,
                host="127.0.0.1",
                port=0,
                tune_gc=False,
                session_options=SessionOptions(shutdown_grace=grace),
            )
        )
        app = create_admin_app(observatory, token=TOKEN, **admin)
        admin_host, admin_port = await nursery.start(
            functools.partial(serve_admin, app, host="127.0.0.1", port=0)
        )
        served = Served(
            mcp_url=f"http://{host}:{port}/mcp",
            admin_url=f"http://{admin_host}:{admin_port}/",
            observatory=observatory,
            started=trio.Event(),
            progress=[],
        )
        holder.append(served)
        yield served
        nursery.cancel_scope.cancel()
