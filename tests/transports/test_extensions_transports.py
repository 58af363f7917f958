"""An extension's methods on every transport, in both eras: asked, notified, notifying.

stdio (the transport's core over a pair of byte streams, as ``mcpactor inspect`` serves),
Streamable HTTP and WebSocket on a real socket with mcpactor's client, and the legacy
HTTP+SSE transport spoken by hand.
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import AsyncIterator
from typing import Any, Final

import orjson
import pytest
import trio
import trio.testing

from mcpactor.client import ClientSession, connect_http, connect_streams, connect_websocket
from mcpactor.protocol import JSONValue
from mcpactor.runtime import StatelessOptions
from mcpactor.transports import serve_streams

from ..server.test_extension_methods import Catalogue, make
from ._http_server import served_app

GUARD: Final = 20.0
REVISIONS: Final = ["2025-11-25", "2026-07-28"]
JSON: Final = {"content-type": "application/json"}


class Heard:
    """What the client heard of the extension's notification."""

    def __init__(self) -> None:
        self.found: list[Any] = []

    def __call__(self, message: JSONValue, stream: str | None) -> None:
        if isinstance(message, dict) and message.get("method") == "com.example/progress":
            self.found.append(message["params"])


async def exercise(client: ClientSession, catalogue: Catalogue, heard: Heard) -> None:
    """Ask, be told, and tell: the whole of the extension over one connection."""
    result = await client.request("com.example/search", {"query": "tell"})
    assert result["hits"] == ["tell-1", "tell-2"]
    assert heard.found == [{"found": 2}]
    await client.notify("com.example/selected", {"hit": "tell-1"})
    with trio.fail_after(GUARD):
        await catalogue.selected_event.wait()
    assert catalogue.selected == [{"hit": "tell-1"}]


@contextlib.asynccontextmanager
async def over_stdio(server: Any, version: str, heard: Heard) -> AsyncIterator[ClientSession]:
    to_server, server_input = trio.testing.memory_stream_one_way_pair()
    server_output, from_server = trio.testing.memory_stream_one_way_pair()
    async with trio.open_nursery() as nursery:
        nursery.start_soon(
            functools.partial(
                serve_streams, server, server_input, server_output, stateless=StatelessOptions()
            )
        )
        async with connect_streams(to_server, from_server, on_server_message=heard) as client:
            await client.start(version)
            yield client
        nursery.cancel_scope.cancel()


@pytest.mark.parametrize("version", REVISIONS)
async def test_over_stdio(version: str) -> None:
    catalogue, heard = Catalogue(), Heard()
    server = make(catalogue)
    with trio.fail_after(GUARD):
        async with server.running(), over_stdio(server, version, heard) as client:
            await exercise(client, catalogue, heard)


@pytest.mark.parametrize("version", REVISIONS)
async def test_over_streamable_http(version: str) -> None:
    catalogue, heard = Catalogue(), Heard()
    with trio.fail_after(GUARD):
        async with served_app(make(catalogue)) as (_, http):
            url = f"http://{http.host}:{http.port}/mcp"
            async with connect_http(
                url, initialize=True, protocol_version=version, on_server_message=heard
            ) as client:
                await exercise(client, catalogue, heard)


async def test_over_websocket() -> None:
    catalogue, heard = Catalogue(), Heard()
    with trio.fail_after(GUARD):
        async with served_app(make(catalogue)) as (_, http):
            url = f"ws://{http.host}:{http.port}/ws"
            async with connect_websocket(url, initialize=True, on_server_message=heard) as client:
                await exercise(client, catalogue, heard)


async def test_over_legacy_http_and_sse() -> None:
    catalogue = Catalogue()
    with trio.fail_after(GUARD):
        async with served_app(make(catalogue)) as (_, http):
            stream = await http.request("GET", "/sse", {"accept": "text/event-stream"})
            endpoint = await stream.next_event()
            assert endpoint is not None
            assert endpoint.data is not None

            async def post(message: dict[str, object]) -> None:
                response = await http.request("POST", endpoint.data, JSON, orjson.dumps(message))
                assert response.status == 202

            hello = {"protocolVersion": "2024-11-05", "capabilities": {}}
            hello["clientInfo"] = {"name": "old", "version": "1"}
            await post({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": hello})
            assert await stream.next_event() is not None
            await post({"jsonrpc": "2.0", "method": "notifications/initialized"})
            ask = {"query": "tell"}
            await post({"jsonrpc": "2.0", "id": 2, "method": "com.example/search", "params": ask})
            told = await stream.next_event()
            answer = await stream.next_event()
            assert told is not None
            assert answer is not None
            assert told.message() == {
                "jsonrpc": "2.0",
                "method": "com.example/progress",
                "params": {"found": 2},
            }
            assert answer.message()["result"] == {"hits": ["tell-1", "tell-2"]}
            await post(
                {"jsonrpc": "2.0", "method": "com.example/selected", "params": {"hit": "h"}}
            )
            await catalogue.selected_event.wait()
            bad = {"jsonrpc": "2.0", "id": 3, "method": "com.example/search", "params": {}}
            await post(bad)
            refused = await stream.next_event()
            assert refused is not None
            assert refused.message()["error"]["code"] == -32602
            await stream.disconnect()


def recording(server: Any) -> list[tuple[str, str]]:
    """Put a layer on ``server`` that notes each call it sees: its kind and method."""
    seen: list[tuple[str, str]] = []

    async def layer(call: Any, call_next: Any) -> AsyncIterator[Any]:
        seen.append((call.kind, call.method))
        async for message in call_next(call):
            yield message

    server.middleware.use(layer)
    return seen


@pytest.mark.parametrize("version", REVISIONS)
@pytest.mark.parametrize("transport", ["stdio", "http"])
async def test_the_extensions_methods_pass_through_the_servers_middleware(
    transport: str, version: str
) -> None:
    # With middleware the extension's handlers still run, inside it: the request and the
    # notification alike, in both eras.
    catalogue, heard = Catalogue(), Heard()
    server = make(catalogue)
    seen = recording(server)
    with trio.fail_after(GUARD):
        if transport == "stdio":
            async with server.running(), over_stdio(server, version, heard) as client:
                await exercise(client, catalogue, heard)
        else:
            async with served_app(server) as (_, http):
                url = f"http://{http.host}:{http.port}/mcp"
                async with connect_http(
                    url, initialize=True, protocol_version=version, on_server_message=heard
                ) as client:
                    await exercise(client, catalogue, heard)
    assert ("request", "com.example/search") in seen
    assert ("notification", "com.example/selected") in seen
