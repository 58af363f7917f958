# The records a session actor and its transports share: what goes out (``Outbound``, of
# one ``OutboundKind``), where it goes (``Outbox``), and the session's options and
# statistics. The transports import these and nothing else of the actor's insides.

from __future__ import annotations

import collections
import enum
import functools
from collections.abc import Awaitable, Callable
from types import TracebackType
from typing import Any, Final

import attrs
import trio

from ..protocol import JSONValue, RequestId
from ._offload import ProcessPool
from .tasks import TaskOptions

__all__ = [
    "NOTIFICATION",
    "REQUEST",
    "RESPONSE",
    "SIGNAL",
    "Outbound",
    "OutboundKind",
    "Outbox",
    "SessionOptions",
    "StreamSignal",
    "closed_outbox",
]


class OutboundKind(enum.Enum):
    """What an ``Outbound`` carries; set where it is built, read by the transports."""

    #: a response or error response (or a batch's array of them): ends its requests
    RESPONSE = "response"
    #: a notification
    NOTIFICATION = "notification"
    #: a server→client request; its answer comes back as a message from the client
    REQUEST = "request"
    #: no message: a ``StreamSignal`` for a streaming transport
    SIGNAL = "signal"


RESPONSE: Final = OutboundKind.RESPONSE
NOTIFICATION: Final = OutboundKind.NOTIFICATION
REQUEST: Final = OutboundKind.REQUEST
SIGNAL: Final = OutboundKind.SIGNAL


class StreamSignal(enum.Enum):
    """What an ``Outbound`` without a payload tells a streaming transport."""

    #: the handler asked to close its request's response stream; the client resumes it
    CLOSE = "close"
    #: the request ended without a response (it was cancelled): its stream is over
    ABANDONED = "abandoned"


@attrs.frozen
class Outbound:
    """One message on its way to the client, built by the session core, of one ``kind``.

    ``related_request_id`` names the client request it belongs to (its response, or a
    progress/log notification or server→client request made while serving it); HTTP uses
    it to pick the response stream. None means "not tied to a request". A ``SIGNAL``
    carries no message (``payload`` is None) but a ``signal``; only actors created with
    ``stream_signals=True`` send them. Transports switch on ``kind``, never on the
    payload's keys.
    """

    kind: OutboundKind
    payload: JSONValue
    related_request_id: RequestId | None = None
    signal: StreamSignal | None = None


class Outbox:
    """Where a session's messages go: the one queue to the destination's writer.

    ``send`` hands over one message, waiting while the outbox is full (backpressure);
    ``send_nowait`` raises ``trio.WouldBlock`` instead. Both raise
    ``trio.ClosedResourceError`` (or the channel's ``trio.BrokenResourceError``) once
    closed. Closing it tells the writer nothing more will come. ``queued`` counts what
    senders queued for the one delivering.

    Two kinds of destination. One with a reader of its own (a memory channel: the
    in-memory connection, tests) gets the messages on ``channel``.

    One with a route (``deliver``: an HTTP session's streams, a pipe's sink) has no
    writer task of the session's: one sender at a time delivers, first in first out. A
    sender that finds the outbox free delivers its message in its own task, then what
    others queued meanwhile, in order, before it lets go; a sender that finds it busy
    queues its message and goes on (waiting only while ``limit`` messages wait). A
    message queued
    by ``send_nowait`` while nobody delivers is delivered by a task started in the
    nursery given to ``attach``.

    ``max_message_bytes`` is the largest message the transport writes (its peer is held
    to the same): the writer turns a longer response into an error response, and a
    server→client request that long is refused before it is sent. None: no limit.
    """

    __slots__ = (
        "_busy",
        "_channel",
        "_deliver",
        "_limit",
        "_nursery",
        "_pending",
        "_room",
        "closed",
        "max_message_bytes",
        "queued",
    )

    def __init__(
        self,
        channel: trio.MemorySendChannel[Any] | None,
        *,
        deliver: Callable[[Outbound], Awaitable[None]] | None = None,
        limit: int = 256,
        max_message_bytes: int | None = None,
    ) -> None:
        assert (channel is None) != (deliver is None)
        self.max_message_bytes = max_message_bytes
        self._channel = channel
        self._deliver = deliver
        self._limit = limit
        # A sender is delivering; what others queued for it meanwhile.
        self._busy = False
        self._pending: collections.deque[Outbound] = collections.deque()
        # Made when a sender has to wait for room: almost never.
        self._room: trio.lowlevel.ParkingLot | None = None
        self._nursery: trio.Nursery | None = None
        self.queued = 0
        self.closed = False

    @classmethod
    def of(cls, outbox: Outbox | trio.MemorySendChannel[Outbound]) -> Outbox:
        """``outbox`` itself, or an Outbox over a bare memory channel."""
        return outbox if isinstance(outbox, Outbox) else cls(outbox)

    @property
    def idle(self) -> bool:
        """Whether nothing is queued or being delivered."""
        return not self._busy and not self.queued

    def attach(self, nursery: trio.Nursery | None) -> None:
        """Deliver what ``send_nowait`` queues while nobody delivers in ``nursery``."""
        self._nursery = nursery

    def send_nowait(self, value: Outbound, /) -> None:
        """Queue one message without waiting."""
        if self.closed:
            raise trio.ClosedResourceError("the session's outbox is closed")
        channel = self._channel
        if channel is None:
            if len(self._pending) >= self._limit:
                raise trio.WouldBlock
            if not self._busy:
                nursery = self._nursery
                if nursery is None:
                    raise trio.WouldBlock
                self._busy = True
                nursery.start_soon(self._drain)
            self._pending.append(value)
            self.queued += 1
            return
        channel.send_nowait(value)

    async def send(self, value: Outbound, /) -> None:
        """Hand over one message: delivered now if the outbox is free, else queued."""
        if self.closed:
            raise trio.ClosedResourceError("the session's outbox is closed")
        channel = self._channel
        if channel is not None:
            await channel.send(value)
            return
        if self._busy:
            await self._queue(value)
            return
        self._busy = True
        deliver = self._deliver
        assert deliver is not None
        try:
            await deliver(value)
        except BaseException:
            self._hand_over()
            raise
        if self._pending:
            await self._drain()
        else:
            self._busy = False

    async def _queue(self, value: Outbound) -> None:
        # Someone delivers: it takes this in turn (room permitting) and we go on.
        while len(self._pending) >= self._limit:
            if self._room is None:
                self._room = trio.lowlevel.ParkingLot()
            await self._room.park()
            if self.closed:
                raise trio.ClosedResourceError("the session's outbox is closed")
        self._pending.append(value)
        self.queued += 1
        if self._busy:
            await trio.lowlevel.checkpoint()
            return
        # The deliverer let go while we waited for room: deliver ourselves.
        self._busy = True
        await self._drain()

    async def _drain(self) -> None:
        # Deliver what is queued, in order, then let go (``_busy`` is set by the caller).
        deliver = self._deliver
        assert deliver is not None
        pending = self._pending
        try:
            while pending:
                item = pending.popleft()
                self.queued -= 1
                if self._room is not None:
                    self._room.unpark()
                await deliver(item)
        except BaseException:
            self._hand_over()
            raise
        self._busy = False

    def _hand_over(self) -> None:
        # The deliverer failed or was cancelled: whatever is queued goes on in a task of
        # its own, if there is a nursery for one; otherwise it is dropped with the run.
        nursery = self._nursery
        if self._pending and nursery is not None and not nursery.cancel_scope.cancel_called:
            nursery.start_soon(self._drain)
        else:
            self.queued -= len(self._pending)
            self._pending.clear()
            self._busy = False

    def close(self) -> None:
        """Say that nothing more will be sent; the writer finishes what is queued."""
        self.closed = True
        if self._channel is not None:
            self._channel.close()
        if self._room is not None:
            self._room.unpark_all()

    async def __aenter__(self) -> Outbox:
        """Return the outbox; leaving the block closes it."""
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc_value: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        """Close the outbox."""
        self.close()


@attrs.frozen
class SessionOptions:
    """Limits and timeouts of a session; the defaults suit most servers."""

    #: seconds running handlers get to finish after the client went away or a signal
    shutdown_grace: float = 5.0
    #: seconds to wait for the client's answer to a server→client request (None: forever)
    client_request_timeout: float | None = 300.0
    #: requests of one client served at once; more are refused with a clear error
    max_in_flight: int = 1024
    #: the level log messages are filtered at until the client sets one
    log_level: str = "info"
    #: the limiter for blocking (``def``) handlers; None uses trio's default (40 threads)
    thread_limiter: trio.CapacityLimiter | None = None
    #: worker processes for ``offload="process"`` tools, shared between sessions; None
    #: gives each session its own pool, started on first use
    process_pool: ProcessPool | None = None
    #: limits of task-augmented requests (2025-11-25)
    tasks: TaskOptions = attrs.field(factory=TaskOptions)

    def with_message_limit(self, max_message_bytes: int | None) -> SessionOptions:
        """These options for a transport whose messages are at most ``max_message_bytes``.

        Tasks' results are held to that limit too, unless the options set their own.
        """
        if max_message_bytes is None or self.tasks.max_result_bytes is not None:
            return self
        tasks = attrs.evolve(self.tasks, max_result_bytes=max_message_bytes)
        return attrs.evolve(self, tasks=tasks)


@functools.cache
def closed_outbox() -> Outbox:
    """The outbox of an actor that has none yet: sending fails as after the session ended."""
    send, _ = trio.open_memory_channel[Outbound](0)
    outbox = Outbox(send)
    outbox.close()
    return outbox
