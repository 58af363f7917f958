# The bytes of a stdio session: the stream they come from and go to, and the one sink.
#
# ``PipeSink`` is the one way out: every message to the client is ``send``-t to it and
# leaves first in, first out. A message is encoded in its sender's task. When nothing
# is queued and nothing else of the pipe's is being served (``quiet``), a stream that
# can write without waiting (a ``Pipe``) is written at once, in the sender's task, and
# no trip through the scheduler stands between an answer and its client. Otherwise the
# frame queues for the sink's writer task (``drain``), which joins whatever is queued
# into one write: the answers a pipelining client's requests make in one turn of the
# scheduler leave together. What a write at once leaves unwritten queues first, so the
# order holds; a full queue makes its senders wait (backpressure); a client that stops
# reading loses further output, and nothing blocks on it.

from __future__ import annotations

import collections
import errno
import logging
import os
import stat
from collections.abc import Callable
from typing import Final

import outcome
import trio

from ..protocol import describe, encode
from ..runtime import METRICS, ConflictDetector, Outbound

__all__ = ["Pipe", "PipeSink"]

_log = logging.getLogger("mcpactor")

_RECEIVE_SIZE: Final = 65536
_MAX_BATCH: Final = 256
# How long one write may take once started; a client that reads nothing for this long is
# treated as gone.
_WRITE_TIMEOUT: Final = 30.0
_BUSY: Final = "another task is writing this pipe"


class PipeSink:
    """The one way to the client: ``send`` a message; messages leave in the order sent.

    ``drain`` is the sink's writer task; ``close`` lets it end once what is queued is
    written. ``quiet``, when given, says whether nothing else of the pipe's is being
    served: only then is a frame written at once, in its sender's task.
    """

    __slots__ = (
        "_blocked",
        "_capacity",
        "_ended",
        "_frames",
        "_pipe",
        "_stream",
        "_writer",
        "broken",
        "closed",
        "max_message_bytes",
        "queued",
        "quiet",
    )

    def __init__(
        self,
        stream: trio.abc.SendStream,
        *,
        max_message_bytes: int | None = None,
        capacity: int = 256,
    ) -> None:
        self._stream = stream
        # A stream that writes without waiting is written at once when the sink is idle.
        self._pipe = stream if isinstance(stream, Pipe) else None
        # The frames for the writer task (a deque and a wake-up: a memory channel's
        # bookkeeping, per frame and per wake-up, is most of what a queued frame costs).
        self._frames: collections.deque[bytes] = collections.deque()
        self._capacity = capacity
        # The writer task while it waits for a frame.
        self._writer: trio.lowlevel.Task | None = None
        # Senders waiting for room in a full queue, with their frames, in order.
        self._blocked: collections.deque[tuple[trio.lowlevel.Task, bytes]] = collections.deque()
        # The writer task is gone: what waits for room would wait forever.
        self._ended = False
        #: the longest message written: a longer response goes as an error response
        self.max_message_bytes = max_message_bytes
        #: frames handed to the writer task and not yet written
        self.queued = 0
        #: the client stopped reading: what comes now is dropped
        self.broken = False
        #: ``close`` was called: sending raises trio.ClosedResourceError
        self.closed = False
        #: when given and false, frames wait for the writer task to leave together
        self.quiet: Callable[[], bool] | None = None

    async def send(self, item: Outbound) -> None:
        """Send ``item`` after everything sent before it, waiting while the sink is full.

        A message that cannot be written as JSON within the limit is logged and dropped
        (a response goes as an error response instead). A send that need not wait is no
        checkpoint: a message made is not lost to a cancellation that comes after it.

        Raises:
            trio.ClosedResourceError: once the sink is closed.
            trio.BrokenResourceError: the writer task is gone (the sink was not closed).
        """
        if self.closed:
            raise trio.ClosedResourceError("the pipe's sink is closed")
        data = encode(item.payload, self.max_message_bytes)
        if not data:
            _log.warning(
                "dropped a message that cannot be written as JSON within the message limit: %s",
                describe(item.payload),
            )
            return
        if self.broken:
            return
        pipe = self._pipe
        if pipe is not None and not self.queued and (self.quiet is None or self.quiet()):
            rest = self._write_what_fits(pipe, data)
            if not rest:
                return
            # The rest goes first, before anything sent after it: nothing is queued, so
            # there is room for it.
            data = rest
        self.queued += 1
        frames = self._frames
        if len(frames) < self._capacity and not self._blocked and not self._ended:
            frames.append(data)
            if self._writer is not None:
                # Only a writer waiting for frames is woken (most often it is writing).
                self._wake_writer()
            return
        try:
            await self._wait_for_room(data)
        except BaseException:
            self.queued -= 1
            raise

    async def _wait_for_room(self, data: bytes) -> None:
        # The queue is full (or others wait for room already): the frame waits its turn,
        # first come first served, and the writer queues it once it has taken frames.
        if self._ended:
            raise trio.BrokenResourceError("the pipe's writer is gone")
        await trio.lowlevel.checkpoint_if_cancelled()
        frames, blocked = self._frames, self._blocked
        if len(frames) < self._capacity and not blocked:
            frames.append(data)
            self._wake_writer()
            await trio.lowlevel.cancel_shielded_checkpoint()
            return
        entry = (trio.lowlevel.current_task(), data)
        blocked.append(entry)

        def abort(_: object) -> trio.lowlevel.Abort:
            blocked.remove(entry)
            return trio.lowlevel.Abort.SUCCEEDED

        await trio.lowlevel.wait_task_rescheduled(abort)

    def _take_blocked(self) -> None:
        # Queue the frames of senders waiting for room while there is room, in order.
        frames, blocked = self._frames, self._blocked
        while blocked and len(frames) < self._capacity:
            task, data = blocked.popleft()
            frames.append(data)
            trio.lowlevel.reschedule(task)

    def _wake_writer(self) -> None:
        writer = self._writer
        if writer is not None:
            self._writer = None
            trio.lowlevel.reschedule(writer)

    async def drain(self) -> None:
        """Write what is queued, as it comes, until the sink is closed and emptied."""
        frames = self._frames
        try:
            while True:
                if not frames:
                    if self.closed:
                        return
                    await self._wait_for_frames()
                    continue
                if len(frames) == 1:
                    taken = 1
                    data = frames.popleft()
                else:
                    taken = min(len(frames), _MAX_BATCH)
                    data = b"".join([frames.popleft() for _ in range(taken)])
                if self._blocked:
                    self._take_blocked()
                if not self.broken:
                    # Dropped once broken: senders never wait on a client that left.
                    await self._write(data)
                self.queued -= taken
        finally:
            self._ended = True
            self._fail_blocked()

    async def _wait_for_frames(self) -> None:
        self._writer = trio.lowlevel.current_task()

        def abort(_: object) -> trio.lowlevel.Abort:
            self._writer = None
            return trio.lowlevel.Abort.SUCCEEDED

        await trio.lowlevel.wait_task_rescheduled(abort)

    def close(self) -> None:
        """Say that nothing more will be sent; ``drain`` ends after what is queued."""
        self.closed = True
        self._wake_writer()
        self._fail_blocked()

    def _fail_blocked(self) -> None:
        # Senders still waiting for room: their frames will never be written.
        blocked = self._blocked
        while blocked:
            task, _ = blocked.popleft()
            error: Exception
            if self.closed:
                error = trio.ClosedResourceError("the pipe's sink is closed")
            else:
                error = trio.BrokenResourceError("the pipe's writer is gone")
            trio.lowlevel.reschedule(task, outcome.Error(error))

    def _write_what_fits(self, pipe: Pipe, data: bytes) -> bytes | None:
        # What the pipe takes now, written (no scope: no checkpoint can cut it in half).
        # Returns the rest (empty once all of it is written), or None if the pipe is lost.
        try:
            written = pipe.write_nowait(data)
        except BlockingIOError:
            return data
        except OSError:
            self._lose()
            return None
        if written:
            METRICS.sent("stdio", written)
        return data[written:] if written < len(data) else b""

    async def _write(self, data: bytes) -> None:
        pipe = self._pipe
        if pipe is not None:
            rest = self._write_what_fits(pipe, data)
            if not rest:
                return
            data = rest
        # One scope both shields the write (a frame is never cut in half) and bounds it.
        deadline = trio.current_time() + _WRITE_TIMEOUT
        try:
            with trio.CancelScope(shield=True, deadline=deadline) as write:
                await self._stream.send_all(data)
        except (trio.BrokenResourceError, trio.ClosedResourceError):
            self._lose()
            return
        if write.cancelled_caught:
            self._lose()
        else:
            METRICS.sent("stdio", len(data))

    def _lose(self) -> None:
        _log.warning("the client stopped reading; dropping further output")
        self.broken = True


class Pipe(trio.abc.Stream):
    """An FdStream for a session's one reader or one writer, entered without a checkpoint.

    FdStream's methods begin with a trip through the scheduler; the reader and writer
    loops already pass through it whenever they wait (for the pipe, for the sink), so a
    request answered at once would pay for two extra rounds of the run loop, each an
    epoll_wait. After a short read from a pipe or socket (it was drained) the next read
    waits for it first instead of trying a read that would fail; a file or a TTY is
    simply read. Cancellation is still checked on entry; the owner (the FdStream) keeps
    the fd and closes it.
    """

    def __init__(self, stream: trio.lowlevel.FdStream) -> None:
        self._stream = stream
        self._fd = stream.fileno()
        mode = os.fstat(self._fd).st_mode
        self._drains = stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode)
        self._drained = False
        # One writer at a time: the sink's writer task, or a sender writing at once.
        self._writer = ConflictDetector(_BUSY)

    async def receive_some(self, max_bytes: int | None = None) -> bytes:
        """Read what the pipe has (waiting for it); b"" at end of input."""
        await trio.lowlevel.checkpoint_if_cancelled()
        size = max_bytes or _RECEIVE_SIZE
        wait = self._drained
        while True:
            if wait:
                try:
                    await trio.lowlevel.wait_readable(self._fd)
                except OSError as exc:
                    raise _translate(exc) from None
            try:
                data = os.read(self._fd, size)
            except BlockingIOError:
                wait = True
            except OSError as exc:
                raise _translate(exc) from None
            else:
                self._drained = self._drains and 0 < len(data) < size
                return data

    async def send_all(self, data: bytes | bytearray | memoryview) -> None:
        """Write all of ``data``, waiting for room; BusyResourceError beside another write."""
        await trio.lowlevel.checkpoint_if_cancelled()
        with self._writer, memoryview(data) as view:
            sent = 0
            while sent < len(view):
                try:
                    sent += os.write(self._fd, view[sent:])
                except BlockingIOError:
                    await self.wait_send_all_might_not_block()
                except OSError as exc:
                    raise _translate(exc) from None

    def write_nowait(self, data: bytes | memoryview) -> int:
        """Write what the pipe takes now; BlockingIOError if it takes nothing.

        Other failures (the reader left) raise their OSError as it is; a write while
        ``send_all`` is under way raises ``trio.BusyResourceError``.
        """
        if self._writer.held:
            raise trio.BusyResourceError(_BUSY)
        return os.write(self._fd, data)

    async def wait_send_all_might_not_block(self) -> None:
        """Wait until the pipe has room."""
        try:
            await trio.lowlevel.wait_writable(self._fd)
        except OSError as exc:
            raise _translate(exc) from None

    async def aclose(self) -> None:
        """Close the stream this wraps."""
        await self._stream.aclose()


def _translate(exc: OSError) -> trio.ClosedResourceError | trio.BrokenResourceError:
    if exc.errno == errno.EBADF:
        return trio.ClosedResourceError("the pipe was already closed")
    return trio.BrokenResourceError(f"the pipe broke: {exc}")
