# Why this module is long (~970 lines): ``HttpSession`` is one state machine (asleep,
# awake, closing) that every part of it reads — its lifetime, what clients send, its
# streams, the router — and the router's shortcut (``route_now``) runs in request
# actors' tasks against the same state. It would split along its sections: the streams
# (attach, retain, forget, the event store) and the router with the two outboxes into a
# module of their own, working on the session's stream table; the session would keep its
# lifetime and what clients send.
#
# Sessions behind the HTTP endpoints, and the streams their messages travel on.
#
# Ownership: one ``SessionManager`` nursery owns every ``HttpSession`` that is awake; an
# awake session's own nursery owns its ``SessionActor`` and its router. HTTP request
# handlers only *attach* to streams, so a client that drops a connection never cancels
# anything: only ``notifications/cancelled`` does (transports page: "disconnection SHOULD
# NOT be interpreted as the client cancelling its request").
#
# Hibernation: a Streamable HTTP session is mostly idle, so it sleeps. Asleep, it is
# state only — the actor's protocol core, subscriptions and task records, its streams'
# bookkeeping, its event-store entries — and no task, channel or nursery. A message for
# a sleeping session is fed to the core right in the handler's task: what the core
# answers alone (initialize, notifications/initialized, ping, logging/setLevel) is routed
# from there, so opening a session starts nothing. A request to serve, a GET listener or
# a stream to resume wakes the session: the manager's nursery starts one task that runs
# the actor (given the events the core produced) beside the router. The manager puts a
# session back to sleep once it has been quiet for a moment and nothing is left: no
# request, task or server→client request running, no connection attached, inbox and
# outbox drained. It closes the inbox; the actor ends its period without closing the
# core, the router finishes, and the task ends. A message arriving meanwhile waits for
# that, then finds the session asleep. Server change notices for a sleeping session are
# kept by the actor and sent when it next wakes — to a GET, which always wakes it, or
# to the event store. Legacy SSE and WebSocket sessions stay awake while their one
# connection lasts.
#
# A stateless session lives for one POST and never sleeps, so it has no task of its own
# either: its actor starts the POST's request actors straight in the manager's nursery,
# and what they send is routed in their own tasks (``_DirectOutbox``). Closing it gives
# requests still running the shutdown grace, then cancels them (nobody can resume).
#
# Streams: every POST that carries requests gets a ``Stream`` (ids "1", "2", …) owing
# the responses of those requests; stream "0" is the standalone stream a GET listens
# on. The router is the one task reading the actor's outbox: a message related to a
# request goes to that request's stream, anything else to stream "0". A POST stream
# starts undecided: if its response is the first thing routed to it, the client gets
# plain JSON; a notification or server→client request first turns it into SSE (or
# every stream is SSE, or none is, per ``response_mode``).
#
# Resumability: in a Streamable HTTP session every SSE message is appended to the
# EventStore before it is pushed to the attached connection, if any. A stream whose
# connection is gone keeps running; a GET with ``Last-Event-ID`` re-attaches to it and
# gets what it missed. The standalone stream's log starts with an empty event, written
# before its first message or priming event: a fresh GET replays what came after the
# last event a GET wrote, or after that first one. A completed SSE stream is retained
# for a while (the newest ``_MAX_RETAINED`` per session): having written its last event
# tells us nothing about whether the client read it, as a TCP write to a peer that just
# left still succeeds.
#
# A connection is an ``Attachment``: a bounded queue of ``(event id, data, final)`` items.
# The router never waits on a stuck client for long: after ``_PUSH_TIMEOUT`` seconds the
# connection is cut, and what it missed stays in the store.
#
# The shortcut: a request's final answer that finds the router idle, with nothing queued
# for it, is routed in the request actor's own task (``_SessionOutbox``) — the common
# POST then costs no trip through the router, in JSON and in SSE. Anything that could
# need to wait (an event store that must be awaited, a full or missing connection)
# takes the router, in order.

from __future__ import annotations

import contextlib
import enum
import functools
import logging
from collections.abc import Awaitable, Callable, Iterable
from typing import TYPE_CHECKING, Final, Protocol

import orjson
import trio

from .._exceptions import INTERNAL_ERROR, ProtocolError
from ..protocol import Event, JSONValue, Phase, RequestId, describe, serialize
from ..runtime import Outbound, SessionActor, SessionOptions
from ..runtime._session_actor import StreamSignal
from ._attachment import Attachment, Item, NudgeTimer, Stream

if TYPE_CHECKING:
    from ..server import Server
    from ._event_store import EventStore

__all__ = [
    "Attachment",
    "DuplicateRequestId",
    "HttpSession",
    "Item",
    "SessionHost",
    "SessionKind",
]

_log = logging.getLogger("mcpactor.http")

_INBOX_SIZE: Final = 64
_OUTBOX_SIZE: Final = 256
_PUSH_TIMEOUT: Final = 30.0
_MAX_RETAINED: Final = 16
_STANDALONE: Final = "0"
_STATELESS_REASON: Final = (
    "the server runs in stateless mode, so the client's answer could not reach this request"
)


class SessionKind(enum.Enum):
    """Which transport a session serves; decides ids, routing and resumability."""

    STREAMABLE = "streamable HTTP"
    STATELESS = "stateless HTTP"
    LEGACY_SSE = "HTTP+SSE"
    WEBSOCKET = "WebSocket"


class _State(enum.Enum):
    ASLEEP = "asleep"  # state only: no task, no channel
    AWAKE = "awake"  # the actor and the router run in the manager's nursery
    FALLING_ASLEEP = "falling asleep"  # the inbox closed for a rest; the task is ending
    LENT = "lent"  # stateless: requests run in the manager's nursery, no session task


class SessionHost(Protocol):
    """What a session needs of the manager that owns it (``SessionManager`` is one)."""

    server: Server
    response_mode: str
    effective_session_options: SessionOptions
    stateless_session_options: SessionOptions
    event_store: EventStore
    #: ends a priming event's wait for the answer behind it
    coalescing: NudgeTimer
    #: ends a streamed POST's time without a watch for its client leaving
    watch_delay: NudgeTimer

    def wake(self, session: HttpSession, run: Callable[[], Awaitable[None]]) -> None:
        """Run an awake period of ``session`` (``run``) in the manager's nursery."""

    def spawn(self, fn: Callable[[], Awaitable[None]]) -> None:
        """Run a short piece of a session's teardown in the manager's nursery."""

    def ended(self, session: HttpSession) -> None:
        """``session`` has ended: forget it."""


class DuplicateRequestId(Exception):
    """A POST reuses the id of a request still in flight in its session."""

    def __init__(self, request_id: RequestId) -> None:
        super().__init__(f"request id {describe(request_id)} is already in flight in this session")
        self.request_id = request_id


class HttpSession:
    """One MCP session served over HTTP (or WebSocket): the actor, its router, streams."""

    __slots__ = (
        "_by_request",
        "_ended",
        "_inbox",
        "_json_only",
        "_next_stream",
        "_outbox",
        "_queued",
        "_retained",
        "_settled",
        "_single_stream",
        "_state",
        "_streams",
        "actor",
        "closing",
        "connections",
        "id",
        "kind",
        "last_active",
        "manager",
        "principal",
        "resumable",
        "standalone",
    )

    def __init__(
        self,
        manager: SessionHost,
        kind: SessionKind,
        session_id: str | None,
        principal: object,
    ) -> None:
        self.manager = manager
        self.kind = kind
        self.id = session_id
        #: what the authentication hook returned for the client that opened the session
        self.principal = principal
        self.resumable = kind is SessionKind.STREAMABLE and session_id is not None
        self._single_stream = kind in (SessionKind.LEGACY_SSE, SessionKind.WEBSOCKET)
        self._json_only = manager.response_mode == "json"
        options = (
            manager.stateless_session_options
            if kind is SessionKind.STATELESS
            else manager.effective_session_options
        )
        self.actor = SessionActor(
            manager.server,
            None,
            options,
            stream_signals=not self._single_stream,
            refuse_client_requests=_STATELESS_REASON if kind is SessionKind.STATELESS else None,
        )
        if kind is not SessionKind.STATELESS:
            # Changes reach the session while it sleeps, too; a stateless one cannot
            # carry them to anyone.
            self.actor.register()
        self._state = _State.ASLEEP
        # The awake session's channels: the inbox to the actor, the outbox to the router.
        self._inbox: trio.MemorySendChannel[JSONValue | ProtocolError] | None = None
        self._outbox: trio.MemoryReceiveChannel[Outbound] | None = None
        # Messages handed to the router that it has not finished routing.
        self._queued = 0
        # Made when a message must wait for the session to finish falling asleep.
        self._settled: trio.Event | None = None
        self._ended = False
        self._streams: dict[str, Stream] = {}
        self._by_request: dict[RequestId, Stream] = {}
        self._retained: dict[str, None] = {}
        self._next_stream = 0
        self.standalone = self._new_stream()
        self.standalone.sse = True
        self.connections = 0
        self.last_active = trio.current_time()
        self.closing = False

    # --- lifetime -----------------------------------------------------------------

    @property
    def awake(self) -> bool:
        """Whether the session's actor and router are running (or finishing a period)."""
        return self._state is not _State.ASLEEP

    def serve_in_place(self, nursery: trio.Nursery) -> None:
        """Serve a stateless session's requests in ``nursery``, without a session task."""
        self.actor.serve_in(nursery, _DirectOutbox(self), on_failure=self.close)
        self._state = _State.LENT

    def close(self) -> None:
        """End the session: stop reading from the client and let the actor wind down."""
        if self.closing:
            return
        self.closing = True
        if self._state is _State.LENT:
            actor = self.actor
            if actor.retire(actor.options.shutdown_grace) and not actor.has_processes:
                self._finish()
                self.manager.ended(self)
            else:
                self.manager.spawn(self._end_when_idle)
        elif self._state is _State.ASLEEP:
            if self.resumable:
                # Forgetting the stored events may wait on the store: a short task.
                self.manager.spawn(self._end)
            else:
                self._finish()
                self.manager.ended(self)
        elif self._inbox is not None:
            self._inbox.close()

    def touch(self) -> None:
        """Note activity: the idle timer restarts from now."""
        self.last_active = trio.current_time()

    def busy(self) -> bool:
        """Return whether a client is connected or a request is being served."""
        return self.connections > 0 or self.actor.statistics().requests_in_flight > 0

    def may_sleep(self) -> bool:
        """Return whether the session is awake and nothing is left for its tasks to do."""
        inbox, outbox = self._inbox, self._outbox
        if (
            self._state is not _State.AWAKE
            or self.closing
            or self.connections
            or self._by_request
            or inbox is None
            or outbox is None
            or not self.actor.resting()
        ):
            return False
        # Both channels empty, and their readers parked on them: nothing was handed to
        # the actor or the router that they have not dealt with yet.
        inbound = inbox.statistics()
        outbound = outbox.statistics()
        return (
            inbound.current_buffer_used == 0
            and inbound.tasks_waiting_receive == 1
            and outbound.current_buffer_used == 0
            and outbound.tasks_waiting_receive == 1
        )

    def sleep(self) -> None:
        """Let an awake session fall asleep; the caller checked ``may_sleep()``."""
        assert self._inbox is not None
        self._state = _State.FALLING_ASLEEP
        self._inbox.close()

    def _wake(self, backlog: list[Event]) -> None:
        # Start the actor (acting on ``backlog`` first) and the router, in one task that
        # the manager's nursery owns.
        inbox_send, inbox_receive = trio.open_memory_channel[JSONValue | ProtocolError](
            _INBOX_SIZE
        )
        outbox_send, outbox_receive = trio.open_memory_channel[Outbound](_OUTBOX_SIZE)
        self._inbox = inbox_send
        self._outbox = outbox_receive
        self._queued = 0
        self._state = _State.AWAKE
        self.manager.wake(
            self,
            functools.partial(
                self._run_awake,
                inbox_receive,
                _SessionOutbox(self, outbox_send),
                outbox_receive,
                backlog,
            ),
        )

    async def _run_awake(
        self,
        inbox: trio.MemoryReceiveChannel[JSONValue | ProtocolError],
        outbox: _SessionOutbox,
        outbox_receive: trio.MemoryReceiveChannel[Outbound],
        backlog: list[Event],
    ) -> None:
        rested = False
        try:
            async with trio.open_nursery() as nursery:
                nursery.start_soon(
                    functools.partial(
                        self.actor.run, inbox, outbox=outbox, backlog=backlog, rest=self._rests
                    )
                )
                # The router ends when the actor has closed the outbox.
                await self._route_all(outbox_receive)
            rested = self.actor.core.phase is not Phase.CLOSED
        finally:
            self._inbox = None
            self._outbox = None
            if rested and not self.closing:
                self._state = _State.ASLEEP
                self._settle()
            else:
                with trio.CancelScope(shield=True):
                    await self._end()

    def _rests(self) -> bool:
        # The actor asks when its inbox closed: a rest, unless the session is closing.
        return self._state is _State.FALLING_ASLEEP and not self.closing

    def _settle(self) -> None:
        if self._settled is not None:
            self._settled.set()
            self._settled = None

    async def _wait_settled(self) -> None:
        if self._settled is None:
            self._settled = trio.Event()
        await self._settled.wait()

    async def _ensure_awake(self) -> bool:
        # False if the session is closing.
        while not self.closing:
            if self._state is _State.AWAKE or self._state is _State.LENT:
                return True
            if self._state is _State.ASLEEP:
                self._wake([])
                return True
            await self._wait_settled()
        return False

    async def _end_when_idle(self) -> None:
        # A stateless session closed while requests ran: they have the grace ``retire``
        # gave them (or the manager's nursery is cancelled).
        try:
            await self.actor.wait_idle()
        finally:
            self._finish()
            self.manager.ended(self)
            with trio.CancelScope(shield=True):
                await self.actor.close_processes()

    async def _end(self) -> None:
        # The session is over: connections end, the core closes, the store forgets it.
        try:
            self._finish()
            if self.resumable:
                assert self.id is not None
                with trio.CancelScope(shield=True):
                    await self.manager.event_store.forget_session(self.id)
        finally:
            self.manager.ended(self)

    def _finish(self) -> None:
        self.closing = True
        self._ended = True
        self._state = _State.ASLEEP
        self._end_streams()
        self.actor.close()
        self._settle()

    # --- what clients send ----------------------------------------------------------

    async def feed(self, value: JSONValue | ProtocolError) -> bool:
        """Hand one decoded body to the session; False if the session is closed."""
        self.touch()
        while not self.closing:
            state = self._state
            if state is _State.LENT:
                # Never declines: nothing is queued and no actor task is mid-message.
                taken = self.actor.receive_now(value)
                assert taken
                return True
            if state is _State.AWAKE:
                inbox = self._inbox
                assert inbox is not None
                # An actor that is not mid-message has nothing queued: act on the
                # message right here, in order, without a trip to its task and back.
                if self.actor.receive_now(value):
                    return True
                try:
                    # The HTTP request already went through the scheduler to get here:
                    # only a full inbox is worth another trip (then wait, as backpressure).
                    try:
                        inbox.send_nowait(value)
                    except trio.WouldBlock:
                        await inbox.send(value)
                except (trio.ClosedResourceError, trio.BrokenResourceError):
                    continue  # it began to fall asleep, or it is closing
                return True
            if state is _State.ASLEEP:
                replies, backlog = self.actor.receive_at_rest(value)
                if backlog:
                    self._wake(backlog)
                for item in replies:
                    await self._route(item.payload, item.related_request_id)
                return True
            await self._wait_settled()
        return False

    async def post(
        self, value: JSONValue, request_ids: Iterable[RequestId], *, sse: bool
    ) -> Attachment | None:
        """Open the stream that will carry these requests' responses, then feed them.

        Returns None if the session is closed. Raises DuplicateRequestId if one of the
        ids is still in flight.
        """
        ids = set(request_ids)
        for request_id in ids:
            if request_id in self._by_request:
                raise DuplicateRequestId(request_id)
        stream = self._new_stream()
        stream.pending = ids
        for request_id in ids:
            self._by_request[request_id] = stream
        attachment = self._attach(stream)
        if sse:
            await self._start_sse(stream)
        if await self.feed(value):
            return attachment
        for request_id in ids:
            self._by_request.pop(request_id, None)
        stream.pending.clear()
        stream.complete = True
        await self.release(attachment)
        return None

    async def listen(self) -> Attachment | None:
        """Attach a fresh GET to the standalone stream; None if one is attached already."""
        stream = self.standalone
        if stream.conn is None:
            # A listener wakes the session: the router is what feeds it.
            await self._ensure_awake()
        if stream.conn is not None:
            return None
        attachment = self._attach(stream)
        if self.resumable:
            assert self.id is not None
            store = self.manager.event_store
            if self._primes():
                await self._anchor_standalone()
                await store.append(self.id, _STANDALONE, b"")
            if stream.delivered is not None:
                replay = await store.replay_after(self.id, stream.delivered)
                if replay is not None:
                    attachment.replay = replay.events
                    attachment.skip = frozenset(event_id for event_id, _ in replay.events)
        return attachment

    async def resume(self, last_event_id: str) -> Attachment | None:
        """Re-attach to the stream ``last_event_id`` came from; None if it is unknown."""
        if not self.resumable:
            return None
        assert self.id is not None
        store = self.manager.event_store
        first = await store.replay_after(self.id, last_event_id)
        if first is None:
            return None
        stream = self._streams.get(first.stream_id)
        if stream is None:
            return None
        if not stream.complete:
            # Something is still routed to it (the standalone stream, or a request's
            # stream while the request runs): the router must be there to do it.
            await self._ensure_awake()
        attachment = self._attach(stream)
        # Events appended between the first look and attaching are in neither the first
        # replay nor the live channel: look again from where the first replay ended.
        cursor = first.events[-1][0] if first.events else last_event_id
        second = await store.replay_after(self.id, cursor)
        events = first.events + (second.events if second is not None else [])
        attachment.replay = events
        attachment.skip = frozenset(event_id for event_id, _ in events)
        if stream.complete:
            # Nothing more will be routed to it: the replay is all there is.
            self._detach(stream, attachment)
        self._retained.pop(stream.id, None)
        return attachment

    async def release(self, attachment: Attachment) -> None:
        """The connection of ``attachment`` is done (finished, cut or gone)."""
        if not self.release_now(attachment):
            await self.finish_release(attachment)

    async def finish_release(self, attachment: Attachment) -> None:
        """Do the part of releasing ``attachment`` that ``release_now`` left."""
        await self._retain_or_forget(attachment.stream)

    def release_now(self, attachment: Attachment) -> bool:
        """Release ``attachment`` as far as that needs no waiting.

        False if ``finish_release`` must follow: a completed SSE stream, which the event
        store keeps a while.
        """
        self.connections -= 1
        self.touch()
        stream = attachment.stream
        attachment.end()
        if stream.conn is attachment:
            stream.conn = None
        if stream is not self.standalone and stream.complete and stream.conn is None:
            if self.resumable and stream.sse:
                return self._retain_now(stream)
            self._forget_now(stream)
        return True

    # --- streams ------------------------------------------------------------------------

    def _new_stream(self) -> Stream:
        stream = Stream(str(self._next_stream))
        self._next_stream += 1
        self._streams[stream.id] = stream
        return stream

    def _attach(self, stream: Stream) -> Attachment:
        attachment = Attachment(stream)
        if stream.conn is not None:
            # The client reconnected while we still held its old connection.
            stream.conn.end()
        stream.conn = attachment
        self.connections += 1
        self.touch()
        if self._ended:
            # The session ended while this connection was on its way: it gets what is
            # replayed for it, then its end.
            self._detach(stream, attachment)
        return attachment

    def _detach(self, stream: Stream, conn: Attachment) -> None:
        conn.end()
        if stream.conn is conn:
            stream.conn = None

    def _primes(self) -> bool:
        negotiated = self.actor.core.negotiated
        # Sessions of a revision without priming events get none (the revision table).
        return negotiated is not None and negotiated.revision.priming_event

    async def _append(self, stream_id: str, data: bytes) -> str:
        # Store one event of a resumable session's stream; return its id.
        assert self.id is not None
        store = self.manager.event_store
        event_id = store.append_now(self.id, stream_id, data)
        if event_id is None:
            event_id = await store.append(self.id, stream_id, data)
        return event_id

    async def _anchor_standalone(self) -> None:
        # The empty first event of the standalone stream (see the top of the module).
        if self.standalone.delivered is None:
            self.standalone.delivered = await self._append(_STANDALONE, b"")

    async def _start_sse(self, stream: Stream) -> None:
        stream.sse = True
        if self.resumable and self._primes():
            event_id = await self._append(stream.id, b"")
            await self._push(stream, (event_id, b"", False))

    def _forget_now(self, stream: Stream) -> None:
        self._streams.pop(stream.id, None)
        self._retained.pop(stream.id, None)

    async def _forget(self, stream: Stream) -> None:
        self._forget_now(stream)
        if self.resumable and stream.sse:
            assert self.id is not None
            await self.manager.event_store.forget_stream(self.id, stream.id)

    def _retain_now(self, stream: Stream) -> bool:
        # Retain a finished SSE stream, making room as far as the store forgets at once;
        # False if it must be awaited for the rest (``_retain_or_forget`` does that).
        retained = self._retained
        retained[stream.id] = None
        store = self.manager.event_store
        while len(retained) > _MAX_RETAINED:
            oldest_id = next(iter(retained))
            oldest = self._streams.get(oldest_id)
            if oldest is None:
                del retained[oldest_id]
                continue
            if oldest.sse:
                assert self.id is not None
                if not store.forget_stream_now(self.id, oldest_id):
                    return False
            self._forget_now(oldest)
        return True

    async def _retain_or_forget(self, stream: Stream) -> None:
        if not (self.resumable and stream.sse):
            await self._forget(stream)
            return
        if self._retain_now(stream):
            return
        while len(self._retained) > _MAX_RETAINED:
            oldest = self._streams.get(next(iter(self._retained)))
            self._retained.pop(next(iter(self._retained)))
            if oldest is not None:
                await self._forget(oldest)

    # --- the router -----------------------------------------------------------------------

    async def _route_all(self, outbox: trio.MemoryReceiveChannel[Outbound]) -> None:
        async with outbox:
            async for first in outbox:
                item: Outbound | None = first
                # Route what is already queued in this turn, not one message per turn.
                while item is not None:
                    try:
                        if item.signal is None:
                            await self._route(item.payload, item.related_request_id)
                        else:
                            await self._signal(item.signal, item.related_request_id)
                    finally:
                        self._queued -= 1
                    try:
                        item = outbox.receive_nowait()
                    except (trio.WouldBlock, trio.EndOfChannel):
                        item = None

    async def _route(self, payload: JSONValue, related: RequestId | None) -> None:
        data = serialize(payload)
        if data is None:
            # A request or notification that cannot be written as JSON (a response
            # that cannot be becomes an error response): a handler's bug, not sent.
            _log.warning("dropped a message that cannot be written as JSON: %s", describe(payload))
            return
        if self._single_stream:
            await self._deliver(self.standalone, data, final=False)
            return
        stream = self._by_request.get(related) if related is not None else None
        is_list = type(payload) is list
        if stream is None and is_list:
            stream = self._stream_of_batch(payload)
        is_response = is_list or "method" not in payload
        if stream is None or (self._json_only and not is_response):
            if is_response:
                _log.debug(
                    "dropped a response that no stream is waiting for: %s", describe(payload)
                )
                return
            if self.resumable:
                await self._anchor_standalone()
            await self._deliver(self.standalone, data, final=False)
            return
        final = False
        if is_response:
            for request_id in _response_ids(payload):
                if self._by_request.get(request_id) is stream:
                    del self._by_request[request_id]
                    stream.pending.discard(request_id)
            final = not stream.pending
            self.touch()
        await self._deliver(stream, data, final=final)
        if final:
            await self._complete(stream)

    def route_now(self, item: Outbound) -> bool:
        """Route a request's final JSON answer right away, if nothing needs waiting for.

        The caller made sure that nothing is queued for the router (order is kept).
        Returns False, having done nothing, when the item must take the router.
        """
        payload = item.payload
        related = item.related_request_id
        if (
            item.signal is not None
            or related is None
            or self._single_stream
            or type(payload) is not dict
            or "method" in payload
            or payload.get("id") != related
        ):
            return False
        stream = self._by_request.get(related)
        if stream is None or len(stream.pending) != 1:
            return False
        conn = stream.conn
        if stream.sse:
            event = self._final_event_now(stream, payload)
            if event is None:
                return False
            assert conn is not None  # there is an event only for a connection
            conn.put_nowait(event)
        elif conn is not None:
            data = serialize(payload)
            if data is None:
                return False
            try:
                conn.put_nowait((None, data, True))
            except trio.WouldBlock:
                return False
            except (trio.BrokenResourceError, trio.ClosedResourceError):
                stream.conn = None
        del self._by_request[related]
        stream.pending.clear()
        stream.complete = True
        self.touch()
        conn = stream.conn
        if conn is not None:
            self._detach(stream, conn)
        else:
            # Not an SSE stream: nothing of it is in the event store.
            self._forget_now(stream)
        return True

    def _final_event_now(self, stream: Stream, payload: JSONValue) -> Item | None:
        # An SSE stream's final answer as its last event, stored: only for a connection
        # that takes it now, and from a store that gives an id now (the router would
        # store it again otherwise). None if the answer must take the router.
        conn = stream.conn
        if conn is None or not conn.takes_now:
            return None
        data = serialize(payload)
        if data is None:
            return None
        event_id = None
        if self.resumable:
            assert self.id is not None
            data = bytes(memoryview(data))  # exact size, as in _deliver
            event_id = self.manager.event_store.append_now(self.id, stream.id, data)
            if event_id is None:
                return None
        return (event_id, data, True)

    def _stream_of_batch(self, payload: list[JSONValue]) -> Stream | None:
        for request_id in _response_ids(payload):
            stream = self._by_request.get(request_id)
            if stream is not None:
                return stream
        return None

    async def _signal(self, signal: StreamSignal, related: RequestId | None) -> None:
        stream = self._by_request.get(related) if related is not None else None
        if stream is None:
            return
        if signal is StreamSignal.ABANDONED:
            assert related is not None
            del self._by_request[related]
            stream.pending.discard(related)
            self.touch()
            if not stream.pending:
                await self._complete(stream)
        elif self.resumable and not self._json_only and stream.conn is not None:
            # CLOSE: cut the connection, not the stream; the client resumes it. Where
            # nothing can be resumed (stateless) or nothing streams (JSON only), cutting
            # would only lose the answer, so the request's stream stays as it is.
            if not stream.sse:
                await self._start_sse(stream)
            conn = stream.conn
            if conn is not None:
                self._detach(stream, conn)

    async def _deliver(self, stream: Stream, data: bytes, *, final: bool) -> None:
        if not stream.sse:
            if final:
                # The stream's one answer, and nothing came before it: plain JSON.
                await self._push(stream, (None, data, True))
                return
            await self._start_sse(stream)
        event_id = None
        if self.resumable:
            # orjson's bytes keep the capacity of its write buffer (4 KiB for a short
            # message): the store, which keeps them a while, gets an exact-size copy.
            data = bytes(memoryview(data))
            event_id = await self._append(stream.id, data)
        await self._push(stream, (event_id, data, final))

    async def _push(self, stream: Stream, item: Item) -> None:
        conn = stream.conn
        if conn is None:
            return
        try:
            try:
                conn.put_nowait(item)
            except trio.WouldBlock:
                with trio.move_on_after(_PUSH_TIMEOUT) as waited:
                    await conn.put(item)
                if waited.cancelled_caught:
                    _log.warning("a client stopped reading its stream; cutting the connection")
                    self._detach(stream, conn)
        except (trio.BrokenResourceError, trio.ClosedResourceError):
            if stream.conn is conn:
                stream.conn = None

    async def _complete(self, stream: Stream) -> None:
        stream.complete = True
        conn = stream.conn
        if conn is not None:
            # The writer drains what is queued, then ends the response; ``release``
            # then keeps the stream for a while, in case the client missed the end.
            self._detach(stream, conn)
        else:
            await self._retain_or_forget(stream)

    def _end_streams(self) -> None:
        # The actor is done: requests still owed an answer get an error, every
        # connection ends.
        for stream in list(self._streams.values()):
            conn = stream.conn
            if conn is None:
                continue
            if stream.pending:
                errors = [_ended_error(request_id) for request_id in stream.pending]
                stream.pending.clear()
                data = orjson.dumps(errors[0] if len(errors) == 1 else errors)
                with contextlib.suppress(
                    trio.WouldBlock, trio.BrokenResourceError, trio.ClosedResourceError
                ):
                    conn.put_nowait((None, data, True))
            stream.complete = True
            self._detach(stream, conn)
        self._by_request.clear()


class _SessionOutbox:
    """The actor's outbox while the session is awake: the router's channel, and a shortcut.

    A request's final JSON answer that finds nothing queued for the router is routed in
    the sending task (``HttpSession.route_now``); everything else queues, in order.
    """

    __slots__ = ("_channel", "_session")

    def __init__(self, session: HttpSession, channel: trio.MemorySendChannel[Outbound]) -> None:
        self._session = session
        self._channel = channel

    def send_nowait(self, value: Outbound, /) -> None:
        """Route ``value`` now if it may skip the router; otherwise queue it."""
        session = self._session
        if not session._queued and session.route_now(value):
            return
        self._channel.send_nowait(value)
        session._queued += 1

    async def send(self, value: Outbound, /) -> None:
        """Like ``send_nowait``, waiting while the router's channel is full."""
        session = self._session
        if not session._queued and session.route_now(value):
            await trio.lowlevel.checkpoint()
            return
        session._queued += 1
        try:
            await self._channel.send(value)
        except BaseException:
            session._queued -= 1
            raise

    def close(self) -> None:
        """Nothing more will be sent: the router ends once it has routed what is queued."""
        self._channel.close()

    async def __aenter__(self) -> _SessionOutbox:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        self._channel.close()


class _DirectOutbox:
    """A stateless session's outbox: each message is routed in the task that sends it.

    A session that lives for one POST has no router task. A final answer that can be
    routed at once is (``HttpSession.route_now``); anything else is routed by the sender
    under a lock, so that messages that must wait keep their order.
    """

    __slots__ = ("_lock", "_session")

    def __init__(self, session: HttpSession) -> None:
        self._session = session
        self._lock: trio.StrictFIFOLock | None = None

    def send_nowait(self, value: Outbound, /) -> None:
        """Route ``value`` now, or raise WouldBlock if routing it may have to wait."""
        lock = self._lock
        if (lock is None or not lock.locked()) and self._session.route_now(value):
            return
        raise trio.WouldBlock

    async def send(self, value: Outbound, /) -> None:
        """Route ``value``, waiting while the connection is full."""
        session = self._session
        lock = self._lock
        if (lock is None or not lock.locked()) and session.route_now(value):
            await trio.lowlevel.checkpoint()
            return
        if value.signal is StreamSignal.ABANDONED and session.closing:
            # Cancelled because the session closed: the session's end answers it with an
            # error, as the end of every session does.
            return
        if lock is None:
            lock = self._lock = trio.StrictFIFOLock()
        async with lock:
            if value.signal is None:
                await session._route(value.payload, value.related_request_id)
            else:
                await session._signal(value.signal, value.related_request_id)

    def close(self) -> None:
        """Nothing to close: there is no channel."""

    async def __aenter__(self) -> _DirectOutbox:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        return None


def _response_ids(payload: JSONValue) -> list[RequestId]:
    items = payload if type(payload) is list else (payload,)
    ids = []
    for item in items:
        if type(item) is dict:
            request_id = item.get("id")
            if type(request_id) is str or type(request_id) is int:
                ids.append(request_id)
    return ids


def _ended_error(request_id: RequestId) -> JSONValue:
    return {
        "jsonrpc": "2.0",
        "id": request_id,
        "error": {
            "code": INTERNAL_ERROR,
            "message": "the session ended before the request was answered",
        },
    }
