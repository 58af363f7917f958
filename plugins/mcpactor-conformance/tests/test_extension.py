"""The echo extension the package ships: declared, served and notifying when enabled."""

from __future__ import annotations

import functools
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any

import pytest
import trio
import trio.testing
from mcpactor_conformance import extension, server

from mcpactor import RequestError, Server
from mcpactor.client import ClientSession, connect_streams
from mcpactor.protocol import JSONValue
from mcpactor.runtime import StatelessOptions
from mcpactor.transports import serve_streams


def composed() -> Server:
    # The shared server is left as the suite sees it: enabled on a server mounting it.
    parent = Server("conformance-with-echo", extensions=[extension])
    parent.mount(server)
    return parent


@asynccontextmanager
async def over_stdio(
    target: Server, version: str, hear: Callable[[JSONValue, str | None], None]
) -> AsyncIterator[ClientSession]:
    # The stdio transport's core over memory streams: both eras, as on a pipe.
    to_server, server_input = trio.testing.memory_stream_one_way_pair()
    server_output, from_server = trio.testing.memory_stream_one_way_pair()
    async with target.running(), trio.open_nursery() as nursery:
        serving = functools.partial(
            serve_streams, target, server_input, server_output, stateless=StatelessOptions()
        )
        nursery.start_soon(serving)
        async with connect_streams(to_server, from_server, on_server_message=hear) as session:
            await session.start(version)
            yield session
        nursery.cancel_scope.cancel()


def test_it_is_not_enabled_by_default() -> None:
    assert extension.identifier not in server.extensions


@pytest.mark.parametrize("version", ["2025-11-25", "2026-07-28"])
async def test_echo_is_declared_served_and_notifies(version: str) -> None:
    heard: list[Any] = []

    def hear(message: JSONValue, stream: str | None) -> None:
        if isinstance(message, dict) and message.get("method") == "io.github.mcpactor/echoed":
            heard.append(message["params"])

    with trio.fail_after(10):
        async with over_stdio(composed(), version, hear) as c:
            declared = c.server.capabilities["extensions"]
            assert declared["io.github.mcpactor/echo"] == {"maxLength": 10_000}
            result = await c.request("io.github.mcpactor/echo", {"text": "hi"})
            assert result["text"] == "hi"
            assert result["clientDeclared"] is False
            with pytest.raises(RequestError) as info:
                await c.request("io.github.mcpactor/echo", {"text": 1})
            assert info.value.code == -32602
    assert heard == [{"text": "hi"}]
