# The two loops every byte-stream transport needs: frames in, frames out.
#
# ``read_frames`` turns a ReceiveStream into decoded JSON values (or -32700 errors) on a
# session's inbox; ``write_frames`` is the single writer that drains a session's outbox.
# It batches whatever is already queued into one write, which is what makes pipelined
# clients fast, and shields each write so a frame is never cut in half.

from __future__ import annotations

import logging
from typing import Final

import trio

from .._exceptions import ProtocolError, RemoteProtocolError
from ..protocol import FrameTooLong, JSONValue, LineFramer, decode, encode
from ..runtime import Outbound

__all__ = ["read_frames", "write_frames"]

_log = logging.getLogger("mcpactor")

_RECEIVE_SIZE: Final = 65536
_MAX_BATCH: Final = 256
# How long one write may take once started; a client that reads nothing for this long is
# treated as gone.
_WRITE_TIMEOUT: Final = 30.0


async def read_frames(
    stream: trio.abc.ReceiveStream,
    inbox: trio.MemorySendChannel[JSONValue | ProtocolError],
    framer: LineFramer,
) -> None:
    """Feed newline-delimited JSON from ``stream`` to ``inbox`` until EOF; then close it."""
    async with inbox:
        while True:
            try:
                data = await stream.receive_some(_RECEIVE_SIZE)
            except (trio.BrokenResourceError, trio.ClosedResourceError):
                _log.debug("input stream broke; treating it as end of input")
                data = b""
            if not data:
                last = framer.flush()
                if last is not None:
                    await inbox.send(_decoded(last))
                return
            for frame in framer.feed(data):
                # receive_some() was this loop's checkpoint: while the inbox has room, a
                # frame costs no extra trip through the scheduler.
                item = _decoded(frame)
                try:
                    inbox.send_nowait(item)
                except trio.WouldBlock:
                    await inbox.send(item)


def _decoded(frame: bytes | FrameTooLong) -> JSONValue | ProtocolError:
    if type(frame) is FrameTooLong:
        return frame.to_exception()
    assert type(frame) is bytes
    try:
        return decode(frame)
    except RemoteProtocolError as exc:
        return exc


async def write_frames(
    stream: trio.abc.SendStream, outbox: trio.MemoryReceiveChannel[Outbound]
) -> None:
    """Write every message from ``outbox`` to ``stream`` until the outbox closes."""
    broken = False
    async with outbox:
        async for item in outbox:
            if broken:
                continue  # keep draining so senders never block on a dead peer
            chunk = [encode(item.payload)]
            while len(chunk) < _MAX_BATCH:
                try:
                    chunk.append(encode(outbox.receive_nowait().payload))
                except (trio.WouldBlock, trio.EndOfChannel):
                    break
            # One scope both shields the write and bounds it (cheaper than two).
            deadline = trio.current_time() + _WRITE_TIMEOUT
            try:
                with trio.CancelScope(shield=True, deadline=deadline) as write:
                    await stream.send_all(b"".join(chunk))
                gone = write.cancelled_caught
            except (trio.BrokenResourceError, trio.ClosedResourceError):
                gone = True
            if gone:
                _log.warning("the client stopped reading; dropping further output")
                broken = True
