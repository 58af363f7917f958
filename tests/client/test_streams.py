"""connect_streams: a client over any pair of byte streams, here to a server in process."""

from __future__ import annotations

import trio
import trio.testing

from mcpactor import Server
from mcpactor.client import connect_streams
from mcpactor.transports import serve_streams


def make_server() -> Server:
    server = Server("streams", version="1.0.0")

    @server.tool()
    async def add(a: int, b: int) -> int:
        """Add two numbers."""
        return a + b

    return server


async def test_a_client_over_memory_streams_calls_a_server_over_them() -> None:
    to_server, server_input = trio.testing.memory_stream_one_way_pair()
    server_output, from_server = trio.testing.memory_stream_one_way_pair()
    async with trio.open_nursery() as nursery:
        nursery.start_soon(serve_streams, make_server(), server_input, server_output)
        async with connect_streams(to_server, from_server, initialize=True) as client:
            assert client.server.info == {"name": "streams", "version": "1.0.0"}
            # Listed first, the tool's wrapped output schema lets the client unwrap it.
            assert [tool["name"] for tool in await client.list_tools()] == ["add"]
            result = await client.call_tool("add", {"a": 2, "b": 40})
            assert result.data == 42
        nursery.cancel_scope.cancel()


async def test_closing_the_client_closes_the_stream_to_the_server() -> None:
    to_server, server_input = trio.testing.memory_stream_one_way_pair()
    _, from_server = trio.testing.memory_stream_one_way_pair()
    async with connect_streams(to_server, from_server):
        pass
    # The server reads the end of its input once the client has closed.
    assert await server_input.receive_some(10) == b""
