"""The stdio outbox whose senders write frames themselves: order, backpressure, breakage."""

from __future__ import annotations

import fcntl
import functools
import os
from collections.abc import AsyncIterator, Coroutine
from contextlib import asynccontextmanager
from typing import Any

import orjson
import pytest
import trio
import trio.testing

from mcpactor.runtime import Outbound, OutboundKind, Outbox
from mcpactor.transports._pump import WriteThrough, write_frames
from mcpactor.transports.stdio import _Pipe

_F_SETPIPE_SZ = 1031


@asynccontextmanager
async def through_pipe() -> AsyncIterator[tuple[Outbox, int]]:
    """An Outbox writing through to a small real pipe, its writer running; yields the
    read end too."""
    read_fd, write_fd = os.pipe()
    fcntl.fcntl(write_fd, _F_SETPIPE_SZ, 4096)
    os.set_blocking(read_fd, False)
    stream = trio.lowlevel.FdStream(write_fd)
    outbox, writer = write_through(stream)
    try:
        async with stream, trio.open_nursery() as nursery:
            nursery.start_soon(writer)
            yield outbox, read_fd
            outbox.close()
    finally:
        os.close(read_fd)


def write_through(
    stream: trio.lowlevel.FdStream,
) -> tuple[Outbox, functools.partial[Coroutine[Any, Any, None]]]:
    """The Outbox stdio gives a session whose output is ``stream``, and its writer."""
    queue_send, queue = trio.open_memory_channel[Outbound | bytes](4)
    through = WriteThrough(_Pipe(stream))
    outbox = through.outbox = Outbox(queue_send, through=through, eager=True)
    return outbox, functools.partial(write_frames, stream, queue, outbox=outbox, through=through)


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
    async with through_pipe() as (through, read_fd):
        await trio.testing.wait_all_tasks_blocked()
        through.send_nowait(message(1))
        # Written before any other task ran: no trip through the writer.
        assert through.queued == 0
        assert orjson.loads(read_available(read_fd)) == message(1).payload


async def test_frames_keep_their_order_when_the_pipe_fills() -> None:
    async with through_pipe() as (through, read_fd):
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
                await through.send(message(n, size=2000))
        frames = [orjson.loads(line) for line in bytes(received).splitlines()]
        assert [frame["id"] for frame in frames] == ids
        assert through.queued == 0


async def test_a_sender_queues_behind_frames_the_writer_still_holds() -> None:
    async with through_pipe() as (through, read_fd):
        through.send_nowait(message(1, size=6000))  # larger than the pipe: rest queued
        assert through.queued == 1
        through.send_nowait(message(2))
        assert through.queued == 2
        data = bytearray()
        while data.count(b"\n") < 2:
            await trio.lowlevel.wait_readable(read_fd)
            data.extend(read_available(read_fd))
        assert [orjson.loads(line)["id"] for line in bytes(data).splitlines()] == [1, 2]


async def test_a_reader_that_leaves_loses_output_but_breaks_nothing() -> None:
    read_fd, write_fd = os.pipe()
    os.close(read_fd)
    stream = trio.lowlevel.FdStream(write_fd)
    through, writer = write_through(stream)
    async with stream, trio.open_nursery() as nursery:
        nursery.start_soon(writer)
        for n in range(10):
            await through.send(message(n))
        # Nothing blocks on the dead pipe: the writer drains what comes and drops it.
        await trio.testing.wait_all_tasks_blocked()
        assert through.queued == 0
        through.close()


async def test_sending_after_close_fails_like_a_closed_channel() -> None:
    async with through_pipe() as (through, _):
        through.close()
        try:
            through.send_nowait(message(1))
        except trio.ClosedResourceError:
            pass
        else:
            raise AssertionError("a closed outbox took a message")


async def test_two_writers_of_one_pipe_raise_instead_of_interleaving() -> None:
    read_fd, write_fd = os.pipe()
    fcntl.fcntl(write_fd, _F_SETPIPE_SZ, 4096)
    stream = trio.lowlevel.FdStream(write_fd)
    pipe = _Pipe(stream)
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
