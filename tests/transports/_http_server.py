"""The server the HTTP transport tests talk to, and ways to run it."""

from __future__ import annotations

import contextlib
import functools
from collections.abc import AsyncIterator
from typing import Any

import trio

from mcpactor import Context, Server
from mcpactor.runtime import SessionOptions
from mcpactor.transports import HttpOptions, McpHttpApp, open_http_app, serve_http
from mcpactor.transports.http import HttpServerKind, serve_app

from ._http_client import AsgiClient, McpClient, SocketClient


class Probe:
    """What the tools of one test server saw; tests wait on its events."""

    def __init__(self) -> None:
        self.started = trio.Event()
        self.release = trio.Event()
        self.finished = trio.Event()
        self.cancelled = trio.Event()
        self.answers: list[Any] = []


def make_server(probe: Probe) -> Server:
    server = Server("http-test", "1.0.0")

    @server.tool()
    async def add(a: int, b: int) -> int:
        """Add two numbers."""
        return a + b

    @server.tool()
    async def count(steps: int, ctx: Context) -> str:
        """Report progress ``steps`` times, then answer."""
        for step in range(steps):
            await ctx.report_progress(step + 1, steps, f"step {step + 1}")
        return f"counted {steps}"

    @server.tool()
    async def ask(prompt: str, ctx: Context) -> str:
        """Ask the client's model (sampling) and answer with its text."""
        result = await ctx.sample(prompt, max_tokens=10)
        probe.answers.append(result)
        text = getattr(result.content, "text", None)
        return f"model said: {text}"

    @server.tool()
    async def hold(ctx: Context) -> str:
        """Report progress once, then wait until the test releases it."""
        await ctx.report_progress(1, 2)
        probe.started.set()
        try:
            await probe.release.wait()
        except trio.Cancelled:
            probe.cancelled.set()
            raise
        finally:
            probe.finished.set()
        return "released"

    @server.tool()
    async def hold_quietly() -> str:
        """Wait until the test releases it, sending nothing before the answer."""
        probe.started.set()
        try:
            await probe.release.wait()
        except trio.Cancelled:
            probe.cancelled.set()
            raise
        finally:
            probe.finished.set()
        return "released"

    @server.tool()
    async def reconnect(ctx: Context) -> str:
        """Close this request's stream, then answer once the test releases it."""
        await ctx.info("before the stream closes")
        await ctx.close_sse_stream()
        probe.started.set()
        await probe.release.wait()
        await ctx.info("after the stream closed")
        return "answered after reconnecting"

    @server.tool()
    async def change_tools() -> str:
        """Register a new tool, which makes sessions send tools/list_changed."""
        server.add_tool(_extra, name=f"extra_{len(probe.answers)}")
        probe.answers.append("changed")
        return "changed"

    return server


async def _extra() -> str:
    """An extra tool."""
    return "extra"


@contextlib.asynccontextmanager
async def asgi_client(
    server: Server,
    *,
    options: HttpOptions | None = None,
    session_options: SessionOptions | None = None,
    bind_host: str = "127.0.0.1",
) -> AsyncIterator[tuple[McpHttpApp, AsgiClient]]:
    """An app for ``server`` and an in-process client; everything ends on exit."""
    async with trio.open_nursery() as nursery:
        async with open_http_app(
            server, options=options, session_options=session_options, bind_host=bind_host
        ) as app:
            yield app, AsgiClient(app, nursery)
        nursery.cancel_scope.cancel()


@contextlib.asynccontextmanager
async def socket_client(
    server: Server,
    *,
    options: HttpOptions | None = None,
    session_options: SessionOptions | None = None,
    stop: trio.Event | None = None,
    http_server: HttpServerKind = "builtin",
) -> AsyncIterator[SocketClient]:
    """``serve_http`` on 127.0.0.1 and an ephemeral port, and a client for it."""
    async with trio.open_nursery() as nursery:
        host, port = await nursery.start(
            functools.partial(
                serve_http,
                server,
                port=0,
                options=options,
                session_options=session_options,
                stop=stop,
                http_server=http_server,
            )
        )
        client = SocketClient(host, port, nursery)
        try:
            yield client
        finally:
            await client.aclose()
        nursery.cancel_scope.cancel()


@contextlib.asynccontextmanager
async def served_app(
    server: Server,
    *,
    options: HttpOptions | None = None,
    session_options: SessionOptions | None = None,
    http_server: HttpServerKind = "builtin",
) -> AsyncIterator[tuple[McpHttpApp, SocketClient]]:
    """Like ``socket_client``, with a handle on the app (and its SessionManager)."""
    async with (
        trio.open_nursery() as nursery,
        open_http_app(server, options=options, session_options=session_options) as app,
    ):
        host, port = await nursery.start(
            functools.partial(serve_app, app, port=0, http_server=http_server)
        )
        client = SocketClient(host, port, nursery)
        try:
            yield app, client
        finally:
            await client.aclose()
        nursery.cancel_scope.cancel()


async def initialized(http: AsgiClient | SocketClient, version: str = "2025-11-25") -> McpClient:
    client = McpClient(http)
    await client.initialize(version, capabilities={"sampling": {}})
    return client
