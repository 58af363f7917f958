"""The stdio sink whose senders write frames themselves: order, backpressure, breakage."""

from __future__ import annotations

import fcntl
import os
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import orjson
import pytest
import trio
import trio.testing

from mcpactor import Server
from mcpactor.runtime import Outbound, OutboundKind
from mcpactor.transports import serve_streams
from mcpactor.transports._pipe import Pipe, PipeSink

_F_SETPIPE_SZ = 1031


def small_pipe() -> tuple[int, trio.lowlevel.FdStream]:
    """A real pipe of 4 KiB: its read end (non-blocking) and its write end as a stream."""
    read_fd, write_fd = os.pipe()
    fcntl.fcntl(write_fd, _F_SETPIPE_SZ, 4096)
    os.set_blocking(read_fd, False)
    return read_fd, trio.lowlevel.FdStream(write_fd)


@asynccontextmanager
async def open_sink() -> AsyncIterator[tuple[PipeSink, int]]:
    """A sink writing to a small real pipe, its writer running; yields the read end too."""
    read_fd, stream = small_pipe()
    sink = pipe_sink(stream)
    try:
        async with stream, trio.open_nursery() as nursery:
            nursery.start_soon(sink.drain)
            yield sink, read_fd
            sink.close()
    finally:
        os.close(read_fd)


def pipe_sink(stream: trio.lowlevel.FdStream) -> PipeSink:
    """The sink stdio gives a session whose output is ``stream`` (a short queue)."""
    return PipeSink(Pipe(stream), capacity=4)


def message(n: int, size: int = 0) -> Outbound:
    return Outbound(
        OutboundKind.RESPONSE, {"jsonrpc": "2.0", "id": n, "result": {"pad": "x" * size}}, n
    )


def read_available(fd: int) -> bytes:
    chunks = []
    while True:
        try:
            chunk = os.read(fd, 65536)
        except BlockingIOError:
            return b"".join(chunks)
        if not chunk:
            return b"".join(chunks)
        chunks.append(chunk)


async def test_a_frame_is_written_by_its_sender_when_nothing_waits() -> None:
    async with open_sink() as (sink, read_fd):
        await trio.testing.wait_all_tasks_blocked()
        await sink.send(message(1))
        # Written before any other task ran: no trip through the writer.
        assert sink.queued == 0
        assert orjson.loads(read_available(read_fd)) == message(1).payload


async def test_frames_keep_their_order_when_the_pipe_fills() -> None:
    async with open_sink() as (sink, read_fd):
        received = bytearray()
        ids = list(range(40))

        async def reader() -> None:
            while received.count(b"\n") < len(ids):
                await trio.lowlevel.wait_readable(read_fd)
                received.extend(read_available(read_fd))

        async with trio.open_nursery() as nursery:
            nursery.start_soon(reader)
            for n in ids:
                # Each frame is about half the pipe: some go out whole, some are cut,
                # some wait in the writer's queue, and the queue fills (backpressure).
                await sink.send(message(n, size=2000))
        frames = [orjson.loads(line) for line in bytes(received).splitlines()]
        assert [frame["id"] for frame in frames] == ids
        assert sink.queued == 0


async def test_a_sender_queues_behind_frames_the_writer_still_holds() -> None:
    async with open_sink() as (sink, read_fd):
        await sink.send(message(1, size=6000))  # larger than the pipe: rest queued
        assert sink.queued == 1
        await sink.send(message(2))
        assert sink.queued == 2
        data = bytearray()
        while data.count(b"\n") < 2:
            await trio.lowlevel.wait_readable(read_fd)
            data.extend(read_available(read_fd))
        assert [orjson.loads(line)["id"] for line in bytes(data).splitlines()] == [1, 2]


async def test_a_reader_that_leaves_loses_output_but_breaks_nothing() -> None:
    read_fd, write_fd = os.pipe()
    os.close(read_fd)
    stream = trio.lowlevel.FdStream(write_fd)
    sink = pipe_sink(stream)
    async with stream, trio.open_nursery() as nursery:
        nursery.start_soon(sink.drain)
        for n in range(10):
            await sink.send(message(n))
        # Nothing blocks on the dead pipe: the writer drains what comes and drops it.
        await trio.testing.wait_all_tasks_blocked()
        assert sink.queued == 0
        sink.close()


async def test_sending_after_close_fails_like_a_closed_channel() -> None:
    async with open_sink() as (sink, _):
        sink.close()
        try:
            await sink.send(message(1))
        except trio.ClosedResourceError:
            pass
        else:
            raise AssertionError("a closed sink took a message")


async def test_two_writers_of_one_pipe_raise_instead_of_interleaving() -> None:
    read_fd, stream = small_pipe()
    pipe = Pipe(stream)
    try:
        async with stream, trio.open_nursery() as nursery:
            # The first writer fills the pipe and waits in send_all for room.
            nursery.start_soon(pipe.send_all, b"x" * 65536)
            await trio.testing.wait_all_tasks_blocked()
            with pytest.raises(trio.BusyResourceError):
                await pipe.send_all(b"y")
            with pytest.raises(trio.BusyResourceError):
                pipe.write_nowait(b"y")
            nursery.cancel_scope.cancel()
        # Once the first writer is gone, the pipe takes a writer again.
    finally:
        os.close(read_fd)


@pytest.mark.parametrize("stateless", [False, True], ids=["session", "2026-07-28"])
async def test_a_lone_requests_answer_is_written_by_its_own_task(
    monkeypatch: pytest.MonkeyPatch, stateless: bool
) -> None:
    server = Server("lone")

    @server.tool()
    async def echo(text: str) -> str:
        """Return text unchanged."""
        return text

    taken: list[tuple[object, bool]] = []
    write_nowait = Pipe.write_nowait

    def noted(self: Pipe, data: bytes | memoryview) -> int:
        written = write_nowait(self, data)
        taken.append((orjson.loads(data).get("id"), written == len(data)))
        return written

    monkeypatch.setattr(Pipe, "write_nowait", noted)
    to_server_read, to_server_write = os.pipe()
    from_server_read, from_server_write = os.pipe()
    server_in = Pipe(trio.lowlevel.FdStream(to_server_read))
    server_out = Pipe(trio.lowlevel.FdStream(from_server_write))
    client_out = trio.lowlevel.FdStream(to_server_write)
    client_in = trio.lowlevel.FdStream(from_server_read)
    meta = (
        {
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {},
        }
        if stateless
        else None
    )

    async def ask(request_id: int, method: str, params: dict[str, Any]) -> dict[str, Any]:
        if meta is not None:
            params = {**params, "_meta": meta}
        line = {"jsonrpc": "2.0", "id": request_id, "method": method, "params": params}
        await client_out.send_all(orjson.dumps(line) + b"\n")
        data = b""
        while not data.endswith(b"\n"):
            data += await client_in.receive_some()
        answer: dict[str, Any] = orjson.loads(data)
        return answer

    with trio.fail_after(10):
        async with client_in, trio.open_nursery() as nursery:
            await nursery.start(serve_streams, server, server_in, server_out)
            if not stateless:
                await ask(
                    0,
                    "initialize",
                    {
                        "protocolVersion": "2025-11-25",
                        "capabilities": {},
                        "clientInfo": {"name": "t", "version": "1"},
                    },
                )
                await client_out.send_all(
                    b'{"jsonrpc":"2.0","method":"notifications/initialized"}\n'
                )
            for n in (1, 2):
                answer = await ask(n, "tools/call", {"name": "echo", "arguments": {"text": "x"}})
                assert answer["result"]["content"] == [{"type": "text", "text": "x"}]
            await client_out.aclose()
    # With nothing else in flight, each answer went out in the task that made it.
    assert [written for request_id, written in taken if request_id in (1, 2)] == [True, True]


async def test_senders_waiting_for_room_fail_as_on_a_closed_channel_when_it_closes() -> None:
    read_fd, stream = small_pipe()
    sink = pipe_sink(stream)
    failed: list[int] = []

    async def sender(n: int) -> None:
        try:
            await sink.send(message(n))
        except trio.ClosedResourceError:
            failed.append(n)

    try:
        async with stream, trio.open_nursery() as nursery:
            # No writer runs: the first frame fills the pipe, the queue (4) fills behind
            # it, and the next two senders wait for room.
            await sink.send(message(1, size=6000))
            for n in (2, 3, 4):
                await sink.send(message(n))
            assert sink.queued == 4
            for n in (5, 6):
                nursery.start_soon(sender, n)
                await trio.testing.wait_all_tasks_blocked()
            assert sink.queued == 6
            sink.close()
        assert sorted(failed) == [5, 6]
        assert sink.queued == 4
    finally:
        os.close(read_fd)


async def test_senders_waiting_for_room_go_out_in_the_order_they_came() -> None:
    read_fd, stream = small_pipe()
    sink = pipe_sink(stream)
    try:
        async with stream, trio.open_nursery() as nursery:
            await sink.send(message(1, size=6000))
            for n in (2, 3, 4):
                await sink.send(message(n))
            for n in (5, 6, 7):
                nursery.start_soon(sink.send, message(n))
                await trio.testing.wait_all_tasks_blocked()
            # The writer starts: the waiting senders' frames follow the queued ones.
            nursery.start_soon(sink.drain)
            received = bytearray()
            while received.count(b"\n") < 7:
                await trio.lowlevel.wait_readable(read_fd)
                received.extend(read_available(read_fd))
            sink.close()
        ids = [orjson.loads(line)["id"] for line in bytes(received).splitlines()]
        assert ids == [1, 2, 3, 4, 5, 6, 7]
        assert sink.queued == 0
    finally:
        os.close(read_fd)
