# The two loops every byte-stream transport needs: frames in, frames out.
#
# ``read_frames`` turns a ReceiveStream into decoded JSON values (or -32700 errors) on a
# session's inbox; ``write_frames`` is the single writer that drains a session's outbox.
# It batches whatever is already queued into one write, which is what makes pipelined
# clients fast, and shields each write so a frame is never cut in half.
#
# ``WriteThrough`` is the shortcut of the Outbox of a session whose output is a pipe: a
# sender whose message finds nothing queued and the writer idle writes the frame
# itself, at once, with one non-blocking write (no trip through the scheduler to reach
# the writer, a third of a request's round trip when one is in flight). Only what
# cannot go out that way at once — the writer is busy, or the pipe is full — goes to
# the writer, so frames still leave in the order they were sent and a slow reader
# still means backpressure. While other requests are in flight (a pipelining client)
# frames go to the writer too, which joins those answered in the same turn into one
# write.

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Final, Protocol

import trio

from .._exceptions import ProtocolError, RemoteProtocolError
from ..protocol import FrameTooLong, JSONValue, LineFramer, decode, describe, encode
from ..runtime import METRICS, Outbound, Outbox

__all__ = ["NonBlockingWriter", "WriteThrough", "read_frames", "write_frames"]

_log = logging.getLogger("mcpactor")

_RECEIVE_SIZE: Final = 65536
_MAX_BATCH: Final = 256
# Frames of one read handed on before the reader lets the scheduler run what they
# started. A pipelining client's read holds its whole window; handed on at once, every
# answer waited for the last request, the client refilled its window only then, and the
# server idled meanwhile. In runs the first answers leave while the rest are served and
# the client's next requests overlap them (docs/performance.md has the measurements).
_DISPATCH_RUN: Final = 16
# How long one write may take once started; a client that reads nothing for this long is
# treated as gone.
_WRITE_TIMEOUT: Final = 30.0


async def read_frames(
    stream: trio.abc.ReceiveStream,
    inbox: trio.MemorySendChannel[JSONValue | ProtocolError],
    framer: LineFramer,
    *,
    route: Callable[[JSONValue | ProtocolError], bool] | None = None,
) -> None:
    """Feed newline-delimited JSON from ``stream`` to ``inbox`` until EOF; then close it.

    ``route`` sees each message first and says True when it took it (stateless requests
    on a pipe); the rest go to ``inbox``.
    """
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
                    item = _decoded(last)
                    if route is None or not route(item):
                        await inbox.send(item)
                return
            METRICS.received("stdio", len(data))
            for handed, frame in enumerate(framer.feed(data)):
                if handed and not handed % _DISPATCH_RUN:
                    # A schedule point, not a cancel point: a frame read is never lost
                    # to a cancellation before it is handed on.
                    await trio.lowlevel.cancel_shielded_checkpoint()
                # Within a run, while the inbox has room, a frame costs no trip through
                # the scheduler.
                item = _decoded(frame)
                if route is not None and route(item):
                    continue
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


class NonBlockingWriter(Protocol):
    """A send stream that can also write without waiting (a pipe or a socket)."""

    def write_nowait(self, data: bytes | memoryview, /) -> int:
        """Write what fits now and return how much; raise BlockingIOError if nothing."""


class WriteThrough:
    """The shortcut of a pipe's Outbox: a sender whose frame finds nothing queued writes it.

    Give it to the Outbox as ``through`` (and the Outbox to it as ``outbox``);
    ``write_frames`` with ``through=`` this drains what could not be written at once.
    """

    def __init__(self, pipe: NonBlockingWriter, *, max_message_bytes: int | None = None) -> None:
        self._pipe = pipe
        #: the longest frame written (an over-long response goes as an error response)
        self.max_message_bytes = max_message_bytes
        #: the Outbox this writes through for: the rest of a cut frame queues there
        self.outbox: Outbox | None = None
        #: the client stopped reading: what comes now is dropped
        self.broken = False
        #: when given and false, senders leave their frames to the writer to batch
        self.quiet: Callable[[], bool] | None = None

    def __call__(self, value: Outbound) -> bool:
        """Write ``value`` now and return True; False if it must queue for the writer."""
        if self.broken or (self.quiet is not None and not self.quiet()):
            return False
        data = _frame(value, self.max_message_bytes)
        if not data:
            return True
        try:
            written = self._pipe.write_nowait(data)
        except BlockingIOError:
            return False
        except OSError:
            _log.warning("the client stopped reading; dropping further output")
            self.broken = True
            return True
        METRICS.sent("stdio", written)
        if written < len(data):
            # The rest goes first, before anything sent after this frame.
            assert self.outbox is not None
            self.outbox.send_raw(data[written:])
        return True


async def write_frames(
    stream: trio.abc.SendStream,
    queue: trio.MemoryReceiveChannel[Outbound] | trio.MemoryReceiveChannel[Outbound | bytes],
    *,
    outbox: Outbox | None = None,
    through: WriteThrough | None = None,
) -> None:
    """Write every message from ``queue`` to ``stream`` until the queue closes.

    ``outbox``, the sending side, hears how many have gone out. With ``through``, items
    are what its senders could not write themselves (raw bytes are the rest of a frame
    cut short).
    """
    broken = False
    limit = outbox.max_message_bytes if outbox is not None else None
    async with queue:
        async for item in queue:
            if broken or (through is not None and through.broken):
                if outbox is not None:
                    outbox.done()
                continue  # keep draining so senders never block on a dead peer
            chunk = [_frame(item, limit)]
            while len(chunk) < _MAX_BATCH:
                try:
                    chunk.append(_frame(queue.receive_nowait(), limit))
                except (trio.WouldBlock, trio.EndOfChannel):
                    break
            # One scope both shields the write and bounds it (cheaper than two).
            deadline = trio.current_time() + _WRITE_TIMEOUT
            data = b"".join(chunk)
            try:
                with trio.CancelScope(shield=True, deadline=deadline) as write:
                    await stream.send_all(data)
                gone = write.cancelled_caught
            except (trio.BrokenResourceError, trio.ClosedResourceError):
                gone = True
            if not gone:
                METRICS.sent("stdio", len(data))
            if outbox is not None:
                outbox.done(len(chunk))
            if through is not None and gone:
                through.broken = True
            if gone:
                _log.warning("the client stopped reading; dropping further output")
                broken = True


def _frame(item: Outbound | bytes, limit: int | None) -> bytes:
    if isinstance(item, bytes):
        return item
    data = encode(item.payload, limit)
    if not data:
        # A request or notification JSON cannot carry, or longer than the limit (such a
        # response is an error response by now): a handler's bug, reported here.
        _log.warning(
            "dropped a message that cannot be written as JSON within the message limit: %s",
            describe(item.payload),
        )
    return data
