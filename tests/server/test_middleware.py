"""Middleware around the one request path: over stdio, HTTP and WebSocket, in both eras.

The server (middleware_app.py) runs in a process of its own over stdio (``mcpactor
serve``) and in this process on a real socket for HTTP and WebSocket; its middleware
writes what it saw in a journal the ``journal`` tool reads back.
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import trio

from mcpactor import RequestError
from mcpactor.client import ClientSession, connect_http, connect_stdio, connect_websocket

from ..transports._http_server import socket_client
from .middleware_app import make_server

APP = Path(__file__).with_name("middleware_app.py")
SESSION = "2025-11-25"
STATELESS = "2026-07-28"


@pytest.fixture(params=["stdio", "http", "websocket"])
def transport(request: pytest.FixtureRequest) -> str:
    name: str = request.param
    return name


@pytest.fixture(params=["2024-11-05", SESSION, STATELESS])
def version(request: pytest.FixtureRequest) -> str:
    name: str = request.param
    return name


@contextlib.asynccontextmanager
async def connected(transport: str, version: str) -> AsyncIterator[ClientSession]:
    """A client of the middleware server over ``transport`` at ``version``."""
    if transport == "stdio":
        command = [sys.executable, "-m", "mcpactor", "serve", str(APP)]
        async with connect_stdio(command, initialize=True, protocol_version=version) as client:
            yield client
        return
    async with socket_client(make_server()) as http:
        if transport == "http":
            url = f"http://{http.host}:{http.port}/mcp"
            opened = connect_http(url, initialize=True, protocol_version=version)
        else:
            url = f"ws://{http.host}:{http.port}/ws"
            opened = connect_websocket(url, initialize=True, protocol_version=version)
        async with opened as client:
            yield client


async def journal(client: ClientSession, **arguments: Any) -> list[str]:
    result = await client.call_tool("journal", arguments)
    return result.text.split("\n")


async def test_layers_rewrite_the_params_and_the_result_in_order(
    transport: str, version: str
) -> None:
    async with connected(transport, version) as client:
        result = await client.call_tool("add", {"a": 2, "b": 3})
        # The inner layer made a 20 of the 2, and marked the answer.
        assert result.text == "23 (rewritten)"
        seen = await journal(client)
    # First registered is outermost: in first, out last; the inner one ends first.
    add = seen[seen.index("outer in tools/call add") :]
    assert add[:5] == [
        "outer in tools/call add",
        "inner in tools/call add",
        "outer saw Result",
        "inner out tools/call add",
        "outer out tools/call add",
    ]


async def test_a_layer_drops_a_progress_notice_and_the_others_arrive_in_order(
    transport: str, version: str
) -> None:
    got: list[float] = []

    async def progress(value: float, total: float | None, message: str | None) -> None:
        got.append(value)

    async with connected(transport, version) as client:
        result = await client.call_tool("count", {"steps": 4}, progress_handler=progress)
        assert result.text == "counted 4"
        seen = await journal(client)
    assert got == [1, 3, 4]
    # The outer layer saw what the inner one let through, and the answer last.
    count = seen[seen.index("inner in tools/call count") + 1 :]
    assert count[:4] == ["outer saw Progress"] * 3 + ["outer saw Result"]


async def test_a_layer_answers_early_refuses_or_fails_and_the_server_goes_on(
    transport: str, version: str
) -> None:
    async with connected(transport, version) as client:
        early = await client.call_tool("early")
        assert early.text == "answered early"
        with pytest.raises(RequestError) as refused:
            await client.call_tool("refused")
        assert refused.value.code == -32042
        assert refused.value.data == {"tool": "refused"}
        with pytest.raises(RequestError) as failed:
            await client.call_tool("explode")
        assert failed.value.code == -32603
        assert "middleware bug" in failed.value.message
        # The server lives on.
        assert (await client.call_tool("add", {"a": 1, "b": 1})).text == "11 (rewritten)"
        seen = await journal(client)
    for name in ("early", "refused", "explode"):
        assert f"inner out tools/call {name}" in seen
        assert f"outer out tools/call {name}" in seen


async def test_a_cancelled_request_closes_every_layer(transport: str, version: str) -> None:
    async with connected(transport, version) as client:
        started = trio.Event()

        async def progress(value: float, total: float | None, message: str | None) -> None:
            started.set()

        async def hold() -> None:
            await client.call_tool("hold", progress_handler=progress)

        async with trio.open_nursery() as nursery:
            nursery.start_soon(hold)
            await started.wait()
            nursery.cancel_scope.cancel()
        seen = await journal(client, wait_closed=True)
    inner = seen.index("inner out tools/call hold")
    outer = seen.index("outer out tools/call hold")
    assert seen.index("outer in tools/call hold") < inner < outer


@pytest.mark.parametrize("session_version", ["2024-11-05", SESSION])
async def test_a_client_notification_passes_through_the_chain(
    transport: str, session_version: str
) -> None:
    async with connected(transport, session_version) as client:
        await client.notify("notifications/example/seen", {"what": "it"})
        # A notification is served in a task of its session, beside its requests (a slow
        # handler holds no request up): each round trip lets it run, and a few suffice.
        for _ in range(50):
            seen = await journal(client)
            if "outer out notifications/example/seen" in seen:
                break
    assert seen.index("outer in notifications/example/seen") < seen.index(
        "inner in notifications/example/seen"
    )
    assert "outer out notifications/example/seen" in seen
