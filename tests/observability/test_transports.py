"""At the transports: spans carry the HTTP session id; bytes and streams are counted."""

from __future__ import annotations

import socket
from collections.abc import Iterator

import pytest
import trio
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from mcpactor.observability import disable_tracing, enable_tracing
from mcpactor.runtime._metrics import METRICS
from mcpactor.server import Server
from mcpactor.transports import serve_streams
from tests.transports._http_server import Probe, asgi_client, initialized, make_server


@pytest.fixture
def spans() -> Iterator[InMemorySpanExporter]:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    enable_tracing(provider)
    try:
        yield exporter
    finally:
        disable_tracing()
        provider.shutdown()


async def test_a_sessions_requests_carry_its_id_and_are_counted(
    spans: InMemorySpanExporter,
) -> None:
    received = METRICS.bytes_in.get("http", 0)
    sent = METRICS.bytes_out.get("http", 0)
    streams = METRICS.streams_opened
    async with asgi_client(make_server(Probe())) as (_, http):
        client = await initialized(http)
        reply = await client.call("tools/call", {"name": "add", "arguments": {"a": 2, "b": 3}})
        assert reply["result"]["structuredContent"] == {"result": 5}
    (span,) = [s for s in spans.get_finished_spans() if s.name == "mcp tools/call add"]
    assert client.session_id is not None
    assert (span.attributes or {})["mcp.session.id"] == client.session_id
    # initialize, initialized and the call came in; their answers went out.
    assert METRICS.bytes_in["http"] - received > 100
    assert METRICS.bytes_out["http"] - sent > 100
    assert METRICS.streams_opened - streams >= 1


async def test_stdio_bytes_are_counted_both_ways() -> None:
    server = Server("stdio-bytes")

    @server.tool()
    async def echo(text: str) -> str:
        """Echo."""
        return text

    received = METRICS.bytes_in.get("stdio", 0)
    sent = METRICS.bytes_out.get("stdio", 0)
    client_sock, server_sock = socket.socketpair()
    client = trio.SocketStream(trio.socket.from_stdlib_socket(client_sock))
    stream = trio.SocketStream(trio.socket.from_stdlib_socket(server_sock))
    lines = (
        b'{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":'
        b'"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}\n'
        b'{"jsonrpc":"2.0","method":"notifications/initialized"}\n'
        b'{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo",'
        b'"arguments":{"text":"hi"}}}\n'
    )
    async with trio.open_nursery() as nursery:
        await nursery.start(serve_streams, server, stream, stream)
        await client.send_all(lines)
        answers = b""
        with trio.fail_after(10):
            while answers.count(b"\n") < 2:
                answers += await client.receive_some()
        await client.send_eof()
    await client.aclose()
    await stream.aclose()
    assert METRICS.bytes_in["stdio"] - received == len(lines)
    assert METRICS.bytes_out["stdio"] - sent == len(answers)
