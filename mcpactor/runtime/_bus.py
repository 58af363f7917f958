# The change bus: how a Server's change notices reach the listen streams of a process.
#
# Sessions hear their Server directly (ServerListener). A stateless revision has no
# session to tell: a change reaches the ``subscriptions/listen`` streams open at that
# moment, and those may be on any process serving the same catalog. So the fan-out
# sits behind ``ChangeBus``: ``publish`` a ``ChangeEvent``, ``listen`` for the ones
# published from then on. ``InMemoryBus`` is the one-process bus; a shared one (Redis)
# implements the same two methods. ``BusFeed`` is the Server listener that publishes the
# Server's notices on a bus.
#
# ``publish`` never waits and never fails because a listener is slow: each listener has
# a bounded buffer where list changes coalesce (one pending "tools changed" says all
# there is to say) and the oldest resource updates and task notices are dropped when it
# is full. A listener that fell behind thereby loses detail, never the news that a list
# changed.

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from contextlib import AbstractContextManager
from typing import Final, Literal, Protocol

import attrs
import trio

from ..protocol import JSONObject

__all__ = ["BusFeed", "ChangeBus", "ChangeEvent", "InMemoryBus", "Listener"]

ChangeKind = Literal["tools", "prompts", "resources", "resource_updated", "task"]

#: list-changed kinds: at most one of each waits in a listener's buffer
LIST_KINDS: Final = frozenset({"tools", "prompts", "resources"})
#: resource updates and task notices one listener keeps before dropping the oldest
DEFAULT_BUFFER: Final = 256


@attrs.frozen
class ChangeEvent:
    """One change a listen stream may carry: a list changed, a resource or a task."""

    kind: ChangeKind
    #: the resource that changed (``resource_updated``)
    uri: str | None = None
    #: the task whose status changed (``task``)
    task_id: str | None = None
    #: what a task notice carries (its ``notifications/tasks`` params)
    payload: JSONObject | None = None


class Listener(Protocol):
    """One subscriber's view of a bus: the events published since it started listening."""

    async def next(self) -> ChangeEvent:
        """Wait for the next event."""


class ChangeBus(Protocol):
    """Fan-out of change events to every listener of every process sharing the bus."""

    def publish(self, event: ChangeEvent) -> None:
        """Hand ``event`` to every listener; never waits, never fails on a slow one."""

    def listen(self) -> AbstractContextManager[Listener]:
        """Listen for events published from now on until the block ends."""


class _Buffer:
    # One listener's pending events: list kinds coalesced, the rest bounded FIFO.
    __slots__ = ("_events", "_lists", "_wakeup", "dropped", "limit")

    def __init__(self, limit: int) -> None:
        self._lists: dict[str, None] = {}
        # A list, not a deque: mostly empty, and an empty deque is a 64-slot block that
        # every listen stream would keep (at most ``limit`` events to shift).
        self._events: list[ChangeEvent] = []
        self._wakeup = trio.Event()
        self.limit = limit
        #: events dropped because the listener fell behind
        self.dropped = 0

    def put(self, event: ChangeEvent) -> None:
        if event.kind in LIST_KINDS:
            self._lists[event.kind] = None
        else:
            if len(self._events) >= self.limit:
                del self._events[0]
                self.dropped += 1
            self._events.append(event)
        self._wakeup.set()

    async def next(self) -> ChangeEvent:
        # The checkpoint comes before taking an event: cancelled there, nothing is lost.
        await trio.lowlevel.checkpoint()
        while True:
            if self._lists:
                kind = next(iter(self._lists))
                del self._lists[kind]
                return ChangeEvent(kind)  # type: ignore[arg-type]
            if self._events:
                return self._events.pop(0)
            self._wakeup = trio.Event()
            await self._wakeup.wait()


class InMemoryBus:
    """The bus of one process: every listener hears every event published after it began.

    Not thread-safe: publish from the event loop's thread (``BusFeed`` does).
    """

    def __init__(self, *, buffer: int = DEFAULT_BUFFER) -> None:
        if buffer < 1:
            raise ValueError(f"a listener's buffer holds at least one event, got {buffer}")
        self._buffer = buffer
        self._listeners: set[_Buffer] = set()

    @property
    def listeners(self) -> int:
        """How many listeners are attached right now."""
        return len(self._listeners)

    def publish(self, event: ChangeEvent) -> None:
        """Hand ``event`` to every listener's buffer."""
        for listener in self._listeners:
            listener.put(event)

    @contextlib.contextmanager
    def listen(self) -> Iterator[Listener]:
        """Listen until the block ends."""
        listener = _Buffer(self._buffer)
        self._listeners.add(listener)
        try:
            yield listener
        finally:
            self._listeners.discard(listener)


class BusFeed:
    """A Server listener that publishes the Server's change notices on a bus.

    The Server may call it from a worker thread (a blocking handler changed the catalog):
    the event is then published on the event loop's thread.
    """

    def __init__(self, bus: ChangeBus) -> None:
        self.bus = bus
        self._token: trio.lowlevel.TrioToken | None = None

    def attach(self) -> None:
        """Remember the running event loop, for notices from worker threads."""
        self._token = trio.lowlevel.current_trio_token()

    def list_changed(self, kind: str) -> None:
        """Publish that the list of ``kind`` changed."""
        if kind in LIST_KINDS:
            self._publish(ChangeEvent(kind))  # type: ignore[arg-type]

    def resource_updated(self, uri: str) -> None:
        """Publish that the resource at ``uri`` changed."""
        self._publish(ChangeEvent("resource_updated", uri=uri))

    def _publish(self, event: ChangeEvent) -> None:
        if trio.lowlevel.in_trio_run():
            self.bus.publish(event)
        elif self._token is not None:
            with contextlib.suppress(trio.RunFinishedError):
                self._token.run_sync_soon(self.bus.publish, event)
