"""The console's latency ends when the answer was written, on every transport.

While the history is kept, a request's duration in the history and in the rates runs
from its arrival to the moment its sink handed the answer's bytes to the socket or
pipe; the ``mcpactor_request_duration_seconds`` histogram keeps ending when the answer
was ready. Over stdio a sink whose writes take 5 seconds (trio's MockClock) shows it
exactly; over HTTP (Streamable HTTP's JSON and SSE answers, a server whose sessions have
no ids, a 2026-07-28 request, WebSocket), on loopback with the real clock, every call's
console duration lies between the time to its ready answer and the round trip its
client measured.
"""

from __future__ import annotations

import functools
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager
from typing import Any

import pytest
import trio
import trio.testing

from mcpactor import Server
from mcpactor.client import ClientSession, connect_http, connect_streams, connect_websocket
from mcpactor.runtime import METRICS, SessionOptions
from mcpactor.transports import HttpOptions, serve_http, serve_streams

STATELESS = "2026-07-28"
#: how long the slow pipe takes to write anything
WRITE = 5.0
CALLS = 12


def make_server() -> Server:
    server = Server("written", "1.0.0")

    @server.tool()
    async def echo(text: str) -> str:
        """Answer at once."""
        return text

    return server


@pytest.fixture
async def history() -> AsyncIterator[None]:
    METRICS.keep_history()
    try:
        yield
    finally:
        METRICS.drop_history()


class SlowPipe(trio.abc.SendStream):
    """A pipe to the client whose every write takes ``WRITE`` seconds."""

    def __init__(self, stream: trio.abc.SendStream) -> None:
        self._stream = stream

    async def send_all(self, data: bytes | bytearray | memoryview) -> None:
        await trio.sleep(WRITE)
        await self._stream.send_all(data)

    async def wait_send_all_might_not_block(self) -> None:
        await self._stream.wait_send_all_might_not_block()

    async def aclose(self) -> None:
        await self._stream.aclose()


def _ready_seconds() -> float:
    # What the metrics' histogram summed for tools/call: the time to the ready answer.
    return METRICS.latency().get("tools/call", ([], 0.0))[1]


def _echoes() -> list[dict[str, Any]]:
    assert METRICS.history is not None
    return METRICS.history.items(tool="echo", limit=1000)


async def test_over_stdio_the_latency_ends_when_the_pipe_took_the_answer(
    history: None, autojump_clock: trio.testing.MockClock
) -> None:
    to_server, server_in = trio.testing.memory_stream_pair()
    server_out, from_server = trio.testing.memory_stream_pair()
    ready_before = _ready_seconds()
    async with trio.open_nursery() as nursery:
        nursery.start_soon(
            functools.partial(serve_streams, make_server(), server_in, SlowPipe(server_out))
        )
        async with connect_streams(to_server, from_server, initialize=True) as client:
            await client.call_tool("echo", {"text": "a session's call"})
            envelope = {
                "io.modelcontextprotocol/protocolVersion": STATELESS,
                "io.modelcontextprotocol/clientCapabilities": {},
                "io.modelcontextprotocol/clientInfo": {"name": "lone", "version": "1"},
            }
            answer = await client.request(
                "tools/call", {"name": "echo", "arguments": {"text": "b"}, "_meta": envelope}
            )
            assert answer["content"][0]["text"] == "b"
        nursery.cancel_scope.cancel()
    echoes = _echoes()
    assert len(echoes) == 2
    # Each answer waited for the pipe's write: 5 seconds, which the metrics do not see.
    assert all(WRITE <= echo["seconds"] < WRITE + 1 for echo in echoes), echoes
    assert _ready_seconds() - ready_before < 1
    rates = METRICS.rates
    assert rates is not None
    row = next(row for row in rates.read(trio.current_time())["tools"] if row["name"] == "echo")
    assert row["requests"] == 2
    assert WRITE <= row["p50"] <= (WRITE + 1) * 1.05
    assert WRITE * 2 <= row["mean"] * 2 < (WRITE + 1) * 2


Connect = Callable[[str], AbstractAsyncContextManager[ClientSession]]


def _streamable(url: str) -> AbstractAsyncContextManager[ClientSession]:
    return connect_http(f"{url}/mcp", initialize=True, protocol_version="2025-11-25")


def _json_answers(url: str) -> AbstractAsyncContextManager[ClientSession]:
    return connect_http(f"{url}/mcp", initialize=True, protocol_version="2025-06-18")


def _stateless(url: str) -> AbstractAsyncContextManager[ClientSession]:
    return connect_http(f"{url}/mcp", initialize=True, protocol_version=STATELESS)


def _websocket(url: str) -> AbstractAsyncContextManager[ClientSession]:
    return connect_websocket(f"{url.replace('http', 'ws', 1)}/ws", initialize=True)


@pytest.mark.parametrize(
    ("connect", "options"),
    [
        (_streamable, HttpOptions()),
        (_json_answers, HttpOptions()),
        (_json_answers, HttpOptions(stateless=True)),
        (_stateless, HttpOptions()),
        (_websocket, HttpOptions()),
    ],
    ids=["streamable-sse", "streamable-json", "sessions-without-ids", "2026-07-28", "websocket"],
)
async def test_over_http_the_latency_ends_between_the_ready_answer_and_the_client(
    history: None, connect: Connect, options: HttpOptions
) -> None:
    round_trips = []
    async with trio.open_nursery() as nursery:
        host, port = await nursery.start(
            functools.partial(
                serve_http,
                make_server(),
                host="127.0.0.1",
                port=0,
                tune_gc=False,
                options=options,
                session_options=SessionOptions(shutdown_grace=0.5),
            )
        )
        async with connect(f"http://{host}:{port}") as client:
            await client.call_tool("echo", {"text": "warm"})
            first = len(_echoes())
            ready_before = _ready_seconds()
            for index in range(CALLS):
                sent = trio.current_time()
                await client.call_tool("echo", {"text": f"call {index}"})
                round_trips.append(trio.current_time() - sent)
            ready = _ready_seconds() - ready_before
            # The last answer's write is settled once its connection lets go of it.
            await trio.testing.wait_all_tasks_blocked()
            echoes = _echoes()[: len(_echoes()) - first]
        nursery.cancel_scope.cancel()
    assert len(echoes) == CALLS
    written = [echo["seconds"] for echo in echoes]
    # Later than the ready answer (by more than the history's rounding to microseconds
    # could make up: each write takes a few)...
    assert sum(written) > ready + CALLS * 2e-6, (written, ready)
    # ... and within what the client measured, call by call.
    for console, client_side in zip(sorted(written), sorted(round_trips), strict=True):
        assert console <= client_side, (written, round_trips)
