"""A pipelining client on stdio: its first answers leave while the rest are served."""

from __future__ import annotations

from typing import Any

import orjson
import pytest
import trio
import trio.testing

from mcpactor import Server
from mcpactor.transports._stdio_input import _DISPATCH_RUN

from .test_stdio import serving
from .test_stdio_2026 import ENVELOPE

WINDOW = 64


class RecordingStream(trio.abc.SendStream):
    """The server's output: every write it makes, kept, then passed on."""

    def __init__(self, inner: trio.abc.SendStream) -> None:
        self.inner = inner
        self.writes: list[bytes] = []

    async def send_all(self, data: bytes | bytearray | memoryview) -> None:
        self.writes.append(bytes(data))
        await self.inner.send_all(data)

    async def wait_send_all_might_not_block(self) -> None:
        await self.inner.wait_send_all_might_not_block()

    async def aclose(self) -> None:
        await self.inner.aclose()


def make_server() -> Server:
    server = Server("pipelined", "1.0.0")

    @server.tool()
    async def echo(text: str) -> str:
        """Return text."""
        return text

    return server


def call(request_id: int, stateless: bool) -> bytes:
    params: dict[str, Any] = {"name": "echo", "arguments": {"text": f"call {request_id}"}}
    if stateless:
        params["_meta"] = ENVELOPE
    message = {"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": params}
    return orjson.dumps(message) + b"\n"


async def read_lines(stream: trio.abc.ReceiveStream, count: int) -> list[bytes]:
    buffer = b""
    with trio.fail_after(30):
        while buffer.count(b"\n") < count:
            data = await stream.receive_some()
            assert data, "the server's output ended"
            buffer += data
    return buffer.split(b"\n")[:count]


@pytest.mark.parametrize("stateless", [False, True], ids=["session", "2026-07-28"])
async def test_a_window_read_at_once_is_answered_in_several_writes(stateless: bool) -> None:
    send_end, from_server = trio.testing.memory_stream_one_way_pair()
    output = RecordingStream(send_end)
    async with serving(make_server(), server_output=(output, from_server)) as client:
        if not stateless:
            await client.initialize()
        await trio.testing.wait_all_tasks_blocked()
        opened = len(output.writes)
        # The whole window in one write: the server reads it in one piece.
        await client.write(b"".join(call(n, stateless) for n in range(1, WINDOW + 1)))
        answers = {}
        for line in await read_lines(from_server, WINDOW):
            message = orjson.loads(line)
            answers[message["id"]] = message["result"]["content"][0]["text"]
    assert answers == {n: f"call {n}" for n in range(1, WINDOW + 1)}
    writes = output.writes[opened:]
    per_write = [chunk.count(b"\n") for chunk in writes]
    assert sum(per_write) == WINDOW
    # Not all at the end of the window: the first answers went out while later requests
    # were still to be served ...
    assert per_write[0] < WINDOW
    # ... and still in batches, not a write per answer.
    assert len(writes) <= 2 * WINDOW // _DISPATCH_RUN
