# Where SSE events wait for a client that reconnects with ``Last-Event-ID``.
#
# Every message a resumable Streamable HTTP stream carries is appended here first; the
# store names it with an event id that also identifies its stream (the spec asks for ids
# unique within the session that "encode sufficient information to identify the
# originating stream"). A GET with ``Last-Event-ID`` asks for everything after that id
# on that id's stream.
#
# The interface is keyed by (session id, stream id) and is async, so that a store shared
# between processes (Redis streams: one key per session and stream, XADD/XRANGE) can be
# dropped in later; the in-memory store below is the default and never blocks.
#
# ``wait_after`` is what a replica uses to follow a stream another replica is still
# writing (_follow.py): the events after an id, waiting a while for one if none is there
# yet. A store that can wait for an append (the in-memory one, Redis streams' XREAD
# BLOCK) overrides it; the default looks again at a short interval.
#
# Leases: a replica following another's stream must learn when nothing more will come,
# or a client resuming a request whose replica died waits for ever. So the first event
# of a request's stream in a shared session is appended with a lease (``append_leased``):
# the ids of the requests the stream owes, kept as long as the events, and a mark that
# lives ``seconds`` unless renewed. The replica running the requests renews the marks of
# all its streams together (``renew_leases``, _leases.py) and drops them once answered;
# a follower asks ``lease`` when the stream is quiet, and a mark that is gone while no
# answer is stored means the requests died with their replica. A store that keeps no
# leases (the defaults below) leaves followers to their quiet timeout.

from __future__ import annotations

import abc
from collections.abc import Collection, Sequence
from typing import Final

import attrs
import trio

from ...protocol import RequestId

__all__ = [
    "DEFAULT_MAX_BYTES",
    "DEFAULT_MAX_BYTES_PER_SESSION",
    "DEFAULT_MAX_BYTES_PER_STREAM",
    "DEFAULT_MAX_EVENTS_PER_STREAM",
    "EventStore",
    "EventStoreStatistics",
    "MemoryEventStore",
    "Replay",
    "StreamKey",
    "StreamLease",
]

DEFAULT_MAX_EVENTS_PER_STREAM: Final = 1000
#: the most bytes of events a MemoryEventStore keeps for one stream (its newest event
#: is always kept, whatever its size)
DEFAULT_MAX_BYTES_PER_STREAM: Final = 16 * 1024 * 1024
#: the most bytes of events a MemoryEventStore keeps for one session, its streams
#: together (each stream's newest event is always kept)
DEFAULT_MAX_BYTES_PER_SESSION: Final = 32 * 1024 * 1024
#: the most bytes of events a MemoryEventStore keeps in all (each stream's newest event
#: is always kept)
DEFAULT_MAX_BYTES: Final = 256 * 1024 * 1024
# Seconds between looks of the default ``wait_after``.
_POLL_INTERVAL: Final = 0.1


@attrs.frozen
class Replay:
    """The events of one stream after a client's ``Last-Event-ID``, oldest first."""

    stream_id: str
    #: (event id, message bytes); an empty message is a priming event
    events: list[tuple[str, bytes]]


@attrs.frozen
class StreamLease:
    """What a store knows of a request stream's lease: the requests it owes, and if held."""

    #: the ids of the requests whose answers the stream carries
    requests: tuple[RequestId, ...]
    #: whether the replica running them still holds the lease (renewed it in time)
    held: bool


#: a stream by (session id, stream id)
StreamKey = tuple[str, str]


@attrs.frozen
class EventStoreStatistics:
    """How much a MemoryEventStore holds right now."""

    streams: int
    events: int
    #: the bytes of the events held
    bytes: int = 0


class EventStore(abc.ABC):
    """Bounded per-stream logs of SSE events, for resumption after a disconnect."""

    @abc.abstractmethod
    async def append(self, session_id: str, stream_id: str, data: bytes) -> str:
        """Store one event of a stream; return its event id."""

    @abc.abstractmethod
    async def replay_after(self, session_id: str, event_id: str) -> Replay | None:
        """Return the events after ``event_id`` on its stream; None if it is unknown."""

    @abc.abstractmethod
    async def forget_stream(self, session_id: str, stream_id: str) -> None:
        """Drop what is stored for one stream (it was delivered to the end)."""

    @abc.abstractmethod
    async def forget_session(self, session_id: str) -> None:
        """Drop what is stored for every stream of a session (it ended)."""

    async def wait_after(self, session_id: str, event_id: str, timeout: float) -> Replay | None:
        """Like ``replay_after``, waiting up to ``timeout`` seconds while no event follows.

        Returns at once if events follow ``event_id`` (or it is unknown); after
        ``timeout`` with none, the replay is empty. The default looks again every
        tenth of a second.
        """
        deadline = trio.current_time() + timeout
        while True:
            replay = await self.replay_after(session_id, event_id)
            left = deadline - trio.current_time()
            if replay is None or replay.events or left <= 0:
                return replay
            await trio.sleep(min(left, _POLL_INTERVAL))

    async def append_leased(
        self,
        session_id: str,
        stream_id: str,
        data: bytes,
        requests: Sequence[RequestId],
        seconds: float,
    ) -> str:
        """Store the first event of a request stream and take its lease for ``seconds``.

        ``requests`` are the ids the stream owes answers to. The default keeps no lease:
        it appends alone.
        """
        return await self.append(session_id, stream_id, data)

    async def renew_leases(
        self, held: Collection[StreamKey], released: Collection[StreamKey], seconds: float
    ) -> None:
        """Hold the leases of ``held`` ``seconds`` more and drop those of ``released``.

        One round trip where the store can; the default keeps no leases and does nothing.
        """
        return

    async def lease(self, session_id: str, stream_id: str) -> StreamLease | None:
        """The lease of a stream; None if none was taken (or this store keeps none)."""
        return None


class _Log:
    __slots__ = ("arrived", "events", "last", "leased_until", "requests", "size")

    def __init__(self) -> None:
        self.last = 0
        # A list, not a deque: most streams hold an event or two for as long as they are
        # kept, and an empty deque is a 64-slot block; the store drops from the front.
        self.events: list[tuple[int, bytes]] = []
        #: the bytes of the events held
        self.size = 0
        #: set at the next append (or when the log is dropped); made by a waiter
        self.arrived: trio.Event | None = None
        #: the requests of a leased stream, and when its lease lapses (trio's clock)
        self.requests: tuple[RequestId, ...] | None = None
        self.leased_until = -float("inf")

    def wake(self) -> None:
        arrived = self.arrived
        if arrived is not None:
            self.arrived = None
            arrived.set()


class MemoryEventStore(EventStore):
    """An EventStore in this process's memory, keeping the newest events of each stream.

    When a stream outgrows ``max_events_per_stream`` events or ``max_bytes_per_stream``
    bytes its oldest events are dropped; when a session's streams together outgrow
    ``max_bytes_per_session``, the oldest events of its oldest streams are; when all the
    sessions together outgrow ``max_bytes``, those of the sessions holding the most are
    (down to nine tenths of it, so that a store at its limit does not look for them at
    every append). The newest event of every stream is always kept; a client resuming
    from before what was dropped gets what is left.
    """

    def __init__(
        self,
        max_events_per_stream: int = DEFAULT_MAX_EVENTS_PER_STREAM,
        *,
        max_bytes_per_stream: int = DEFAULT_MAX_BYTES_PER_STREAM,
        max_bytes_per_session: int = DEFAULT_MAX_BYTES_PER_SESSION,
        max_bytes: int = DEFAULT_MAX_BYTES,
    ) -> None:
        for name, value in (
            ("max_events_per_stream", max_events_per_stream),
            ("max_bytes_per_stream", max_bytes_per_stream),
            ("max_bytes_per_session", max_bytes_per_session),
            ("max_bytes", max_bytes),
        ):
            if value < 1:
                raise ValueError(f"{name} must be at least 1, got {value!r}")
        self.max_events_per_stream = max_events_per_stream
        self.max_bytes_per_stream = max_bytes_per_stream
        self.max_bytes_per_session = max_bytes_per_session
        self.max_bytes = max_bytes
        self._sessions: dict[str, dict[str, _Log]] = {}
        #: the bytes of each session's events, and of all
        self._sizes: dict[str, int] = {}
        self._size = 0
        #: the total past which the largest sessions give way (above ``max_bytes`` while
        #: what is left is newest events only, which cannot)
        self._shrink_at = max_bytes

    async def append(self, session_id: str, stream_id: str, data: bytes) -> str:
        """Store one event of a stream; return its event id (``<stream>.<n>``)."""
        # Never waits: the session routes in the sender's task, and this is its path.
        return self._add(session_id, stream_id, data)

    def _add(self, session_id: str, stream_id: str, data: bytes) -> str:
        streams = self._sessions.get(session_id)
        if streams is None:
            streams = self._sessions[session_id] = {}
        log = streams.get(stream_id)
        if log is None:
            log = streams[stream_id] = _Log()
        log.last += 1
        events = log.events
        before = log.size
        events.append((log.last, data))
        log.size += len(data)
        # The oldest events past the stream's limits (never its newest) go in one cut.
        over = len(events) - self.max_events_per_stream
        dropped = 0
        while dropped < len(events) - 1 and (
            dropped < over or log.size > self.max_bytes_per_stream
        ):
            log.size -= len(events[dropped][1])
            dropped += 1
        if dropped:
            del events[:dropped]
        grown = log.size - before
        size = self._sizes[session_id] = self._sizes.get(session_id, 0) + grown
        self._size += grown
        if size > self.max_bytes_per_session:
            self._shrink(session_id, size - self.max_bytes_per_session)
        if self._size > self._shrink_at:
            self._shrink_all()
        if log.arrived is not None:
            log.wake()
        return f"{stream_id}.{log.last}"

    async def append_leased(
        self,
        session_id: str,
        stream_id: str,
        data: bytes,
        requests: Sequence[RequestId],
        seconds: float,
    ) -> str:
        """Store a request stream's first event and take its lease (the trio clock's)."""
        await trio.lowlevel.checkpoint()
        event_id = self._add(session_id, stream_id, data)
        log = self._sessions[session_id][stream_id]
        log.requests = tuple(requests)
        log.leased_until = trio.current_time() + seconds
        return event_id

    async def renew_leases(
        self, held: Collection[StreamKey], released: Collection[StreamKey], seconds: float
    ) -> None:
        """Hold the leases of ``held`` ``seconds`` more and drop those of ``released``."""
        await trio.lowlevel.checkpoint()
        now = trio.current_time()
        for session_id, stream_id in held:
            log = self._sessions.get(session_id, {}).get(stream_id)
            # A lease that lapsed stays lapsed (its followers may have said so).
            if log is not None and log.leased_until > now:
                log.leased_until = now + seconds
        for session_id, stream_id in released:
            log = self._sessions.get(session_id, {}).get(stream_id)
            if log is not None:
                log.leased_until = -float("inf")

    async def lease(self, session_id: str, stream_id: str) -> StreamLease | None:
        """The lease of a stream; None if none was taken."""
        await trio.lowlevel.checkpoint()
        log = self._sessions.get(session_id, {}).get(stream_id)
        if log is None or log.requests is None:
            return None
        return StreamLease(log.requests, trio.current_time() < log.leased_until)

    def _shrink(self, session_id: str, excess: int) -> int:
        # Drop the oldest events of the session's oldest streams (never a stream's
        # newest) until ``excess`` bytes are gone or nothing more may go; the bytes gone.
        freed = 0
        for log in self._sessions[session_id].values():
            events = log.events
            dropped = 0
            while freed < excess and len(events) - dropped > 1:
                size = len(events[dropped][1])
                log.size -= size
                freed += size
                dropped += 1
            del events[:dropped]
            if freed >= excess:
                break
        self._sizes[session_id] -= freed
        self._size -= freed
        return freed

    def _shrink_all(self) -> None:
        # The sessions holding the most give way first, down to nine tenths of the limit.
        excess = self._size - self.max_bytes * 9 // 10
        sizes = self._sizes
        for session_id in sorted(sizes, key=sizes.__getitem__, reverse=True):
            excess -= self._shrink(session_id, excess)
            if excess <= 0:
                break
        # What could not go (streams' newest events) is not looked through again until
        # the store has grown by another tenth of its limit.
        self._shrink_at = max(self.max_bytes, self._size + self.max_bytes // 10)

    def _forgot(self, size: int) -> None:
        self._size -= size
        if self._size <= self.max_bytes:
            self._shrink_at = self.max_bytes

    async def replay_after(self, session_id: str, event_id: str) -> Replay | None:
        """Return the events after ``event_id`` on its stream; None if it is unknown."""
        stream_id, _, number = event_id.rpartition(".")
        log = self._sessions.get(session_id, {}).get(stream_id)
        if log is None or not number.isdigit():
            return None
        after = int(number)
        if after > log.last:
            return None
        events = [(f"{stream_id}.{n}", data) for n, data in log.events if n > after]
        return Replay(stream_id, events)

    async def wait_after(self, session_id: str, event_id: str, timeout: float) -> Replay | None:
        """Like ``replay_after``, waiting up to ``timeout`` seconds for the next append."""
        replay = await self.replay_after(session_id, event_id)
        if replay is None or replay.events or timeout <= 0:
            return replay
        log = self._sessions[session_id][replay.stream_id]
        if log.arrived is None:
            log.arrived = trio.Event()
        with trio.move_on_after(timeout):
            await log.arrived.wait()
        return await self.replay_after(session_id, event_id)

    async def forget_stream(self, session_id: str, stream_id: str) -> None:
        """Drop what is stored for one stream."""
        streams = self._sessions.get(session_id)
        if streams is not None:
            log = streams.pop(stream_id, None)
            if log is not None:
                self._sizes[session_id] -= log.size
                self._forgot(log.size)
                if log.arrived is not None:
                    log.wake()

    async def forget_session(self, session_id: str) -> None:
        """Drop what is stored for every stream of a session."""
        for log in self._sessions.pop(session_id, {}).values():
            log.wake()
        self._forgot(self._sizes.pop(session_id, 0))

    def statistics(self) -> EventStoreStatistics:
        """Return how many streams and events are held right now."""
        logs = [log for streams in self._sessions.values() for log in streams.values()]
        return EventStoreStatistics(
            len(logs), sum(len(log.events) for log in logs), sum(log.size for log in logs)
        )
