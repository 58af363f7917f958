# One HTTP connection's hold on a session stream: the queue between the router and the
# connection's writer.
#
# Why not a trio memory channel: a channel is a state object, two ends, a deque, two
# ordered dicts and two sets — nine objects the cycle collector walks — made for every
# POST, most of which carry one answer. Measured with 1 000 requests in flight, those
# objects were a sixth of what each request kept alive. This queue is one object with
# one list; it has exactly one reader (the connection's writer) and, in practice, one
# sender (the router, or a request actor routing its own answer).
#
# The stream an attachment holds and the timer that nudges waiting writers live here
# too, beneath the session and its manager, which both use them.

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Final

import trio

from ...protocol import RequestId
from .._metrics import METRICS, QUEUED
from ._later import Later

__all__ = ["Attachment", "Item", "NudgeTimer", "Stream"]

#: (event id or None, one JSON message or b"" for a priming event, last of its stream)
Item = tuple[str | None, bytes, bool]

_NO_EVENTS: Final[frozenset[str]] = frozenset()
# Items a connection may fall behind by before the router waits for it.
_CAPACITY: Final = 64


class Stream:
    """One response stream of a session: what it still owes and who is writing it."""

    __slots__ = ("complete", "conn", "delivered", "id", "leased", "pending", "sse")

    def __init__(self, stream_id: str) -> None:
        self.id = stream_id
        #: its requests hold a lease in a shared event store (see _leases.py)
        self.leased = False
        #: ids of the requests whose responses this stream still owes
        self.pending: set[RequestId] = set()
        self.conn: Attachment | None = None
        #: the stream carries SSE (its messages get event ids when resumable)
        self.sse = False
        #: every response it owed was routed (or its requests were cancelled)
        self.complete = False
        #: the last event id a connection wrote (where a fresh GET picks up)
        self.delivered: str | None = None
        METRICS.stream_opened()


class Attachment:
    """One HTTP connection's hold on a stream: the items its writer is still to write.

    The session side puts items (``put_nowait``, ``put``) and ``end``s the queue; the
    writer ``get``s them until ``trio.EndOfChannel``, or ``abandon``s the queue when its
    connection is gone. Putting into an ended queue raises ``trio.ClosedResourceError``,
    into an abandoned one ``trio.BrokenResourceError``; a full one raises
    ``trio.WouldBlock`` (``put`` waits for room instead).
    """

    __slots__ = (
        "_abandoned",
        "_ended",
        "_items",
        "_nudge_ticket",
        "_nudgeable",
        "_nudged",
        "_reader",
        "_room",
        "_waker",
        "_writing",
        "replay",
        "skip",
        "stream",
    )

    def __init__(self, stream: Stream) -> None:
        self.stream = stream
        #: events to write before the live ones (a resumed or re-opened stream)
        self.replay: list[tuple[str, bytes]] = []
        #: live items to drop because ``replay`` already holds them
        self.skip: frozenset[str] = _NO_EVENTS
        # A list, not a deque: it holds at most _CAPACITY items and mostly one or none,
        # and an empty deque is a 64-slot block that every held stream would keep.
        self._items: list[Item] = []
        self._reader: trio.lowlevel.Task | None = None
        # Made when a sender has to wait for room: almost never.
        self._room: trio.lowlevel.ParkingLot | None = None
        # The scope of a reader waiting in get_or_gone: the next item cancels it.
        self._waker: trio.CancelScope | None = None
        self._ended = False
        self._abandoned = False
        # The reader waits in get_unless_nudged; nudge() came while it did; the ticket
        # a nudge must bring (the newest from arm_nudge: older ones are spent).
        self._nudgeable = False
        self._nudged = False
        self._nudge_ticket = 0
        # Held by the one task writing this connection's response (or socket): ``with``.
        self._writing = False

    # --- the session's side ---------------------------------------------------------

    def put_nowait(self, item: Item) -> None:
        """Queue ``item`` for the writer; ``trio.WouldBlock`` if the queue is full."""
        if self._ended:
            raise trio.ClosedResourceError("the stream's connection was released")
        if self._abandoned:
            raise trio.BrokenResourceError("the connection stopped reading")
        if len(self._items) >= _CAPACITY:
            raise trio.WouldBlock
        self._items.append(item)
        reader = self._reader
        if reader is not None:
            self._reader = None
            trio.lowlevel.reschedule(reader)
        elif self._waker is not None:
            self._waker.cancel()

    async def put(self, item: Item) -> None:
        """Queue ``item``, waiting while the queue is full."""
        while True:
            try:
                self.put_nowait(item)
            except trio.WouldBlock:
                pass
            else:
                await trio.lowlevel.checkpoint()
                return
            if self._room is None:
                self._room = trio.lowlevel.ParkingLot()
            await self._room.park()

    def end(self) -> None:
        """Say that nothing more will come; the writer drains what is queued, then stops."""
        self._ended = True
        if self._reader is not None or self._waker is not None:
            self._wake_reader()
        if self._room is not None:
            self._room.unpark_all()

    @property
    def ended(self) -> bool:
        """Whether ``end`` was called."""
        return self._ended

    @property
    def gone(self) -> bool:
        """Whether nothing more can be put: ended, or its writer left."""
        return self._ended or self._abandoned

    # --- the writer's side ------------------------------------------------------------

    def get_nowait(self) -> Item:
        """Take the next item; ``trio.WouldBlock`` if none is queued yet."""
        item = self.next_nowait()
        if item is None:
            raise trio.WouldBlock
        return item

    def next_nowait(self) -> Item | None:
        """Take the next item; None if none is queued yet, ``trio.EndOfChannel`` if none will be.

        ``get_nowait`` without the exception for an empty queue, which a writer that
        looks before it waits meets on almost every request.
        """
        items = self._items
        if items:
            item = items.pop(0)
            if self._room is not None:
                self._room.unpark()
            return item
        if self._ended:
            raise trio.EndOfChannel
        return None

    async def get(self) -> Item:
        """Take the next item, waiting for one; ``trio.EndOfChannel`` once ended and empty.

        An item that is already queued is returned without a trip through the scheduler.
        """
        if QUEUED:
            # The console watches a one-stream session: what the writer took is written.
            unwritten = METRICS.unwritten
            if unwritten is not None:
                unwritten.taken(self, self._items, trio.current_time())
        while True:
            item = self.next_nowait()
            if item is not None:
                return item
            if self._reader is not None:
                raise trio.BusyResourceError("another task is reading this stream")
            self._reader = trio.lowlevel.current_task()
            await trio.lowlevel.wait_task_rescheduled(self._abort_get)

    async def get_or_gone(self, gone: Callable[[], Awaitable[None]]) -> Item | None:
        """Like ``get``, but None once ``gone`` returns (the client left) and no item came.

        One task waits for both: ``gone`` runs in a cancel scope that the next item (or
        ``end``) cancels, where a task watching for the client beside the writer would
        cost a task and a nursery for as long as the stream is held.
        """
        while True:
            item = self.next_nowait()
            if item is not None:
                return item
            if self._reader is not None or self._waker is not None:
                raise trio.BusyResourceError("another task is reading this stream")
            with trio.CancelScope() as waker:
                self._waker = waker
                try:
                    await gone()
                finally:
                    self._waker = None
            if not waker.cancelled_caught:
                return None

    async def get_unless_nudged(self) -> Item | None:
        """Like ``get``, but None once a ``nudge`` with the newest ticket came (and no item)."""
        while True:
            item = self.next_nowait()
            if item is not None:
                return item
            if self._nudged:
                return None
            if self._reader is not None:
                raise trio.BusyResourceError("another task is reading this stream")
            self._reader = trio.lowlevel.current_task()
            self._nudgeable = True
            try:
                await trio.lowlevel.wait_task_rescheduled(self._abort_get)
            finally:
                self._nudgeable = False

    def arm_nudge(self) -> int:
        """Return the ticket a later ``nudge`` must bring; earlier tickets stop counting."""
        self._nudge_ticket += 1
        self._nudged = False
        return self._nudge_ticket

    def nudge(self, ticket: int) -> None:
        """Make ``get_unless_nudged`` give None, ending a wait in it, if ``ticket`` is newest."""
        if ticket != self._nudge_ticket:
            return
        self._nudged = True
        if self._nudgeable:
            self._wake_reader()

    def abandon(self) -> None:
        """The writer is gone: what is queued is dropped and further puts fail."""
        self._abandoned = True
        self._items.clear()
        if self._room is not None:
            self._room.unpark_all()

    def __aiter__(self) -> Attachment:
        return self

    async def __anext__(self) -> Item:
        try:
            return await self.get()
        except trio.EndOfChannel:
            raise StopAsyncIteration from None

    def __enter__(self) -> Attachment:
        """Hold the writer's role; a second task writing this stream is refused.

        Raises:
            trio.BusyResourceError: another task is writing it.
        """
        if self._writing:
            raise trio.BusyResourceError("another task is writing this stream")
        self._writing = True
        return self

    def __exit__(self, *exc_info: object) -> None:
        """Give the writer's role up."""
        self._writing = False

    # --- parking ------------------------------------------------------------------------

    def _wake_reader(self) -> None:
        reader = self._reader
        if reader is not None:
            self._reader = None
            trio.lowlevel.reschedule(reader)
        elif self._waker is not None:
            self._waker.cancel()

    def _abort_get(self, _: object) -> trio.lowlevel.Abort:
        self._reader = None
        return trio.lowlevel.Abort.SUCCEEDED


class NudgeTimer:
    """Nudges writers a fixed delay after they ask, with one timer for all of them."""

    def __init__(self, delay: float) -> None:
        self.delay = delay
        self._later: Later[tuple[Attachment, int]] = Later(delay)

    def nudge_later(self, attachment: Attachment) -> None:
        """Nudge the writer of ``attachment`` once ``delay`` seconds have passed."""
        # arm_nudge, unrolled: a POST of an SSE session arms one.
        attachment._nudge_ticket += 1
        attachment._nudged = False
        self._later.add((attachment, attachment._nudge_ticket))

    async def run(self) -> None:
        """Nudge what falls due, for ever."""
        await self._later.run(_nudge)


def _nudge(entry: tuple[Attachment, int]) -> None:
    # A writer whose item came in time is not waiting: nudging it is nothing.
    attachment, ticket = entry
    attachment.nudge(ticket)
