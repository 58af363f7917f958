"""One session per example, over stdio (in memory) or HTTP (in-process ASGI).

Each scenario opens a session, holds one request in flight, sends the hostile message,
then a good request, releases the held request, and reads until every answer it is owed
has come. Every message the server writes is checked against the revision's schema.
Time is a MockClock that jumps when everything waits, so a server→client request the
client never answers times out in no real time.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any, Final

import orjson
import trio
import trio.testing

from mcpactor.protocol import LATEST, RequestId
from mcpactor.runtime import SessionOptions
from mcpactor.transports import serve_streams
from tests.spec_schema import check_server_message

from ._hostile import Probe, fuzz_server

REVISION: Final = LATEST.version
CAPABILITIES: Final = {"sampling": {}, "elicitation": {}, "roots": {"listChanged": True}}
#: virtual seconds: longer than the server waits for a client's answer
GUARD: Final = 60
OPTIONS: Final = SessionOptions(client_request_timeout=20)


def wire(message: Any) -> bytes:
    """The JSON of ``message``, at any depth (orjson refuses 255 levels and more, and
    the json module recurses); iterative, compact."""
    out: list[str] = []
    stack: list[Any] = [message]
    while stack:
        item = stack.pop()
        if type(item) is _Raw:
            out.append(item.text)
        elif type(item) is list:
            out.append("[")
            stack.append(_Raw("]"))
            for index in range(len(item) - 1, -1, -1):
                stack.append(item[index])
                if index:
                    stack.append(_Raw(","))
        elif type(item) is dict:
            out.append("{")
            stack.append(_Raw("}"))
            pairs = list(item.items())
            for index in range(len(pairs) - 1, -1, -1):
                key, value = pairs[index]
                stack.append(value)
                stack.append(_Raw(json.dumps(key, ensure_ascii=False) + ":"))
                if index:
                    stack.append(_Raw(","))
        else:
            out.append(json.dumps(item, ensure_ascii=False))
    return "".join(out).encode()


class _Raw:
    __slots__ = ("text",)

    def __init__(self, text: str) -> None:
        self.text = text


def run(scenario: Any, *args: Any) -> Any:
    """Run one scenario in a fresh trio run on a jumping mock clock."""
    return trio.run(scenario, *args, clock=trio.testing.MockClock(autojump_threshold=0))


class LineSession:
    """The client end of one stdio session, checking every line the server writes."""

    def __init__(
        self,
        to_server: trio.abc.SendStream,
        from_server: trio.abc.ReceiveStream,
        revision: str = REVISION,
    ):
        self.revision = revision
        self.to_server = to_server
        self.from_server = from_server
        self.methods: dict[Any, str] = {}
        self.seen: list[Any] = []
        self._buffer = bytearray()

    async def send_raw(self, data: bytes) -> None:
        await self.to_server.send_all(data + b"\n")

    async def send(self, message: Any) -> None:
        if type(message) is dict and type(message.get("method")) is str:
            request_id = message.get("id")
            if type(request_id) in (int, str):
                self.methods[request_id] = message["method"]
        await self.send_raw(wire(message))

    async def receive(self) -> Any:
        with trio.fail_after(GUARD):
            while b"\n" not in self._buffer:
                data = await self.from_server.receive_some()
                assert data, "the server's output ended"
                self._buffer += data
        line, _, rest = bytes(self._buffer).partition(b"\n")
        self._buffer[:] = rest
        message = orjson.loads(line)
        items = message if type(message) is list else [message]
        for item in items:
            method = self.methods.get(item.get("id")) if "method" not in item else None
            check_server_message(item, self.revision, request_method=method)
        self.seen.append(message)
        return message

    async def answer_of(self, request_id: RequestId) -> Any:
        """Read until the response to ``request_id``; return it (earlier ones are kept)."""
        for message in self.seen:
            if (
                type(message) is dict
                and "method" not in message
                and message.get("id") == request_id
            ):
                return message
        while True:
            message = await self.receive()
            if (
                type(message) is dict
                and "method" not in message
                and message.get("id") == request_id
            ):
                return message

    async def next_request(self) -> Any:
        """Read until the server sends a request of its own."""
        while True:
            message = await self.receive()
            if type(message) is dict and "method" in message and "id" in message:
                return message

    async def initialize(self) -> None:
        await self.send(
            {
                "jsonrpc": "2.0",
                "id": "init",
                "method": "initialize",
                "params": {
                    "protocolVersion": self.revision,
                    "capabilities": CAPABILITIES,
                    "clientInfo": {"name": "fuzz", "version": "1"},
                },
            }
        )
        assert "result" in await self.answer_of("init")
        await self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})


@asynccontextmanager
async def stdio_session(probe: Probe, revision: str = REVISION) -> AsyncIterator[LineSession]:
    """An initialized stdio session of ``fuzz_server`` over in-memory streams."""
    to_server, server_input = trio.testing.memory_stream_one_way_pair()
    server_output, from_server = trio.testing.memory_stream_one_way_pair()
    session = LineSession(to_server, from_server, revision)
    async with trio.open_nursery() as nursery:
        await nursery.start(
            lambda task_status: serve_streams(
                fuzz_server(probe),
                server_input,
                server_output,
                options=OPTIONS,
                task_status=task_status,
            )
        )
        await session.initialize()
        yield session
        await to_server.aclose()
