# A session's response streams and the router that puts its messages on them.
#
# Streams: every POST that carries requests gets a ``Stream`` (ids "1", "2", …) owing
# the responses of those requests; stream "0" is the standalone stream a GET listens
# on. The router is the one task reading the actor's outbox: a message related to a
# request goes to that request's stream, anything else to stream "0". A POST stream
# starts undecided: if its response is the first thing routed to it, the client gets
# plain JSON; a notification or server→client request first turns it into SSE (or
# every stream is SSE, or none is, per ``response_mode``). Legacy SSE and WebSocket
# sessions have one stream, the standalone one, for everything.
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
# One route, and no router task: whoever finds the session's Outbox free routes a
# message in its own task — the request actor with its answer, the actor with what the
# core answered — and then what others queued meanwhile, in order, before it lets go
# (the Outbox's delivering mode, _messages.py).
#
# Leases: in a session shared by replicas, a request stream's first event is appended with
# a lease on its requests (_leases.py), which the stream gives back when it completes, so
# that a client following it from another replica learns when its requests died with
# this one. Where the store cannot be reached, cleaning up after a stream (forgetting its
# events) is left to the store's expiry: it never fails a request or a session.
#
# ``Routing`` is the stream table and the router; ``HttpSession`` (_http_session.py)
# is one, and adds its lifetime and what clients send.

from __future__ import annotations

import contextlib
import logging
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Final

import orjson
import trio

from ...protocol import JSONValue, RequestId, answered_ids, describe, serialize, unanswered_reply
from .._messages import RESPONSE, SIGNAL, Outbound, Outbox, StreamSignal
from .._metrics import METRICS
from .._session_actor import SessionActor
from ._session_records import StoreUnavailable
from ._streams import Attachment, Item, Stream

if TYPE_CHECKING:
    from ._event_store import EventStore
    from ._leases import LeaseKeeper

__all__ = ["STANDALONE", "Routing"]

_log = logging.getLogger("mcpactor.http")

_PUSH_TIMEOUT: Final = 30.0
_MAX_RETAINED: Final = 16
STANDALONE: Final = "0"


class Routing:
    """A session's streams, by id and by the requests they owe answers to, and its router."""

    __slots__ = (
        "_json_only",
        "_single_stream",
        "_store_down",
        "actor",
        "before_response",
        "by_request",
        "clock",
        "connections",
        "ended",
        "id",
        "last_active",
        "leases",
        "max_message_bytes",
        "next_stream",
        "resumable",
        "retained",
        "standalone",
        "standalone_elsewhere",
        "store",
        "streams",
    )

    def __init__(
        self,
        actor: SessionActor,
        session_id: str | None,
        store: EventStore,
        *,
        resumable: bool,
        single_stream: bool,
        json_only: bool,
        max_message_bytes: int | None = None,
    ) -> None:
        self.actor = actor
        self.id = session_id
        #: the longest message written; a longer response goes as an error response
        self.max_message_bytes = max_message_bytes
        self.resumable = resumable
        self.store = store
        # whether the last append found the event store unreachable (warned once)
        self._store_down = False
        # the leases of this replica's request streams; None: the session is not shared
        self.leases: LeaseKeeper | None = None
        # What a response goes through before it is routed (a shared session records
        # itself first); None: nothing
        self.before_response: Callable[[Outbound], Awaitable[Outbound]] | None = None
        #: what takes a message for the GET stream while none is attached here (a shared
        #: session relays it to the replica holding it); true if it took it
        self.standalone_elsewhere: Callable[[bytes], Awaitable[bool]] | None = None
        self._single_stream = single_stream
        self._json_only = json_only
        self.ended = False
        self.streams: dict[str, Stream] = {}
        self.by_request: dict[RequestId, Stream] = {}
        self.retained: dict[str, None] = {}
        #: stream "0", the one a GET listens on
        self.standalone = Stream(STANDALONE)
        self.standalone.sse = True
        self.streams[STANDALONE] = self.standalone
        # The id of the next request stream (replicas draw a range of their own: share).
        self.next_stream = 1
        self.connections = 0
        # The run's clock, kept: touch reads it several times per request, and
        # trio.current_time is three calls down to it.
        self.clock = trio.lowlevel.current_clock()
        self.last_active = self.clock.current_time()

    def touch(self) -> None:
        """Note activity: the idle timer restarts from now."""
        self.last_active = self.clock.current_time()

    # --- streams ------------------------------------------------------------------------

    def open_stream(self, request_ids: set[RequestId]) -> Attachment:
        """Open the stream that owes the answers to ``request_ids``, its connection attached."""
        stream = Stream(str(self.next_stream))
        self.next_stream += 1
        self.streams[stream.id] = stream
        stream.pending = request_ids
        by_request = self.by_request
        for request_id in request_ids:
            by_request[request_id] = stream
        # ``attach``, for a stream nobody held before (``last_active`` is left to the
        # session's ``feed``, which hands the POST's requests over next).
        attachment = stream.conn = Attachment(stream)
        self.connections += 1
        if self.ended:
            # The session ended while this POST was on its way: its connection ends.
            self.detach(stream, attachment)
        return attachment

    def attach(self, stream: Stream) -> Attachment:
        attachment = Attachment(stream)
        if stream.conn is not None:
            # The client reconnected while we still held its old connection.
            stream.conn.end()
        stream.conn = attachment
        self.connections += 1
        self.last_active = self.clock.current_time()
        if self.ended:
            # The session ended while this connection was on its way: it gets what is
            # replayed for it, then its end.
            self.detach(stream, attachment)
        return attachment

    def detach(self, stream: Stream, conn: Attachment) -> None:
        conn.end()
        if stream.conn is conn:
            stream.conn = None

    def primes(self) -> bool:
        negotiated = self.actor.core.negotiated
        # Sessions of a revision without priming events get none (the revision table).
        return negotiated is not None and negotiated.revision.priming_event

    async def append(self, stream_id: str, data: bytes) -> str | None:
        # Store one event of a resumable session's stream; return its id.
        assert self.id is not None
        return await self._stored(self.store.append(self.id, stream_id, data))

    async def _append_leased(self, stream: Stream, data: bytes) -> str | None:
        # The first event of a request stream in a shared session, with its lease.
        leases = self.leases
        assert leases is not None
        assert self.id is not None
        requests = tuple(stream.pending)
        store = self.store
        event_id = await self._stored(
            store.append_leased(self.id, stream.id, data, requests, leases.seconds)
        )
        if event_id is None:
            return None  # not stored: the next event tries again
        stream.leased = True
        if stream.complete:
            # Answered (or abandoned) while the event was on its way to the store.
            self.unlease(stream)
        else:
            leases.hold(self.id, stream.id)
        return event_id

    def unlease(self, stream: Stream) -> None:
        # The stream's requests are answered or gone: its lease is dropped.
        if stream.leased:
            stream.leased = False
            leases = self.leases
            if leases is not None and self.id is not None:
                leases.release(self.id, stream.id)

    async def _stored(self, append: Awaitable[str]) -> str | None:
        # An append to a store that must be awaited. A shared store that cannot be
        # reached costs the event its id (it is sent, not resumable), never the request
        # or the session.
        try:
            event_id = await append
        except StoreUnavailable as exc:
            if not self._store_down:
                self._store_down = True
                _log.warning(
                    "session %s: events are sent without ids (not resumable) while "
                    "the event store is unreachable: %s",
                    describe(self.id),
                    describe(str(exc)),
                )
            return None
        if self._store_down:
            self._store_down = False
            _log.warning("session %s: the event store is reachable again", describe(self.id))
        return event_id

    async def anchor_standalone(self) -> None:
        # The empty first event of the standalone stream (see the top of the module).
        if self.standalone.delivered is None:
            self.standalone.delivered = await self.append(STANDALONE, b"")

    async def start_sse(self, stream: Stream) -> None:
        stream.sse = True
        if not self.resumable:
            return
        # _primes and _append, unrolled: every POST of an SSE session comes here.
        negotiated = self.actor.core.negotiated
        if negotiated is None or not negotiated.revision.priming_event:
            return
        assert self.id is not None
        if self.leases is not None and stream.pending:
            event_id = await self._append_leased(stream, b"")
            if event_id is None:
                return
        else:
            event_id = await self.append(stream.id, b"")
            if event_id is None:
                return
        await self._push(stream, (event_id, b"", False))

    async def _forget(self, stream: Stream) -> None:
        self.streams.pop(stream.id, None)
        self.retained.pop(stream.id, None)
        if self.resumable and stream.sse:
            assert self.id is not None
            try:
                # Also when the connection that released it was cut: a store that must
                # be awaited would otherwise keep the events until its ttl.
                with trio.CancelScope(shield=True):
                    await self.store.forget_stream(self.id, stream.id)
            except StoreUnavailable as exc:
                # Its events expire with the store's ttl.
                _log.debug("stream %s kept in the event store: %s", stream.id, exc)

    async def retain_or_forget(self, stream: Stream) -> None:
        # A finished SSE stream of a resumable session is kept a while (the newest
        # _MAX_RETAINED); any other is forgotten at once.
        if not (self.resumable and stream.sse):
            # Nothing of it is in the event store.
            self.streams.pop(stream.id, None)
            self.retained.pop(stream.id, None)
            return
        retained = self.retained
        retained[stream.id] = None
        while len(retained) > _MAX_RETAINED:
            oldest_id = next(iter(retained))
            oldest = self.streams.get(oldest_id)
            if oldest is None:
                del retained[oldest_id]
            else:
                await self._forget(oldest)

    # --- the router -----------------------------------------------------------------------

    def outbox(self) -> Outbox:
        """The actor's Outbox for one run: its senders route, one at a time, in order."""
        return Outbox(None, deliver=self.route, max_message_bytes=self.max_message_bytes)

    async def route(self, item: Outbound) -> None:
        """Route one message the session sends to the stream it belongs on."""
        if item.kind is SIGNAL:
            await self._signal(item)
            return
        if self.before_response is not None and item.kind is RESPONSE:
            item = await self.before_response(item)
        payload = item.payload
        data = serialize(payload, self.max_message_bytes)
        if data is None:
            # A request or notification that cannot be written as JSON within the limit
            # (such a response becomes an error response): a handler's bug, not sent.
            _log.warning(
                "dropped a message that cannot be written as JSON within the message limit: %s",
                describe(payload),
            )
            return
        is_response = item.kind is RESPONSE
        # The console watches: its latency of these answers ends when they are written.
        unwritten = METRICS.unwritten if is_response else None
        answered = answered_ids(payload) if unwritten is not None else None
        if self._single_stream:
            await self._deliver(self.standalone, data, final=False)
            conn = self.standalone.conn
            if unwritten is not None and answered and conn is not None:
                # Written once the connection's writer took it and asks for more.
                unwritten.queued(conn, conn._items, self.id, answered)
            return
        related = item.related_request_id
        stream = self.by_request.get(related) if related is not None else None
        if stream is None and is_response and type(payload) is list:
            stream = self._stream_of_batch(payload)
        if stream is None or (self._json_only and not is_response):
            if is_response:
                _log.debug(
                    "dropped a response that no stream is waiting for: %s", describe(payload)
                )
                return
            await self.to_standalone(data)
            return
        final = False
        if is_response:
            by_request = self.by_request
            pending = stream.pending
            for request_id in answered_ids(payload) if answered is None else answered:
                if by_request.get(request_id) is stream:
                    del by_request[request_id]
                    pending.discard(request_id)
            final = not pending
            self.last_active = self.clock.current_time()
            if unwritten is not None and answered and stream.conn is not None:
                # Written when the connection lets go of the stream, after its last write.
                unwritten.owe(stream, self.id, answered)
        await self._deliver(stream, data, final=final)
        if final:
            await self._complete(stream)

    async def to_standalone(self, data: bytes) -> None:
        """Send a message for the GET stream (or where it is held, if elsewhere)."""
        elsewhere = self.standalone_elsewhere
        if elsewhere is not None and self.standalone.conn is None and await elsewhere(data):
            return
        if self.resumable:
            await self.anchor_standalone()
        await self._deliver(self.standalone, data, final=False)

    def _stream_of_batch(self, payload: list[JSONValue]) -> Stream | None:
        for request_id in answered_ids(payload):
            stream = self.by_request.get(request_id)
            if stream is not None:
                return stream
        return None

    async def _signal(self, item: Outbound) -> None:
        signal = item.signal
        related = item.related_request_id
        stream = self.by_request.get(related) if related is not None else None
        if stream is None:
            return
        if signal is StreamSignal.ABANDONED:
            assert related is not None
            del self.by_request[related]
            stream.pending.discard(related)
            self.touch()
            if not stream.pending:
                await self._complete(stream)
        elif self.resumable and not self._json_only and stream.conn is not None:
            # CLOSE: cut the connection, not the stream; the client resumes it. Where
            # nothing can be resumed (stateless) or nothing streams (JSON only), cutting
            # would only lose the answer, so the request's stream stays as it is.
            if not stream.sse:
                await self.start_sse(stream)
            conn = stream.conn
            if conn is not None:
                self.detach(stream, conn)

    async def _deliver(self, stream: Stream, data: bytes, *, final: bool) -> None:
        if not stream.sse:
            if final:
                # The stream's one answer, and nothing came before it: plain JSON.
                await self._push(stream, (None, data, True))
                return
            await self.start_sse(stream)
        event_id = None
        if self.resumable:
            # orjson's bytes keep the capacity of its write buffer (4 KiB for a short
            # message): the store, which keeps them a while, gets an exact-size copy
            # (% formats into a buffer of the result's size; bytes(memoryview(data))
            # costs four times as much for a short message).
            data = b"%s" % data
            if (
                self.leases is not None
                and not stream.leased
                and not final
                and stream.pending
                and stream is not self.standalone
            ):
                # A revision without priming events: the first message takes the lease.
                event_id = await self._append_leased(stream, data)
            else:
                event_id = await self.append(stream.id, data)
        await self._push(stream, (event_id, data, final))

    async def _push(self, stream: Stream, item: Item) -> None:
        # Queue an item for the stream's connection, if any, waiting a while for room.
        conn = stream.conn
        if conn is None:
            return
        try:
            conn.put_nowait(item)
            return
        except trio.WouldBlock:
            pass
        except (trio.BrokenResourceError, trio.ClosedResourceError):
            if stream.conn is conn:
                stream.conn = None
            return
        try:
            with trio.move_on_after(_PUSH_TIMEOUT) as waited:
                await conn.put(item)
            if waited.cancelled_caught:
                _log.warning("a client stopped reading its stream; cutting the connection")
                self.detach(stream, conn)
        except (trio.BrokenResourceError, trio.ClosedResourceError):
            if stream.conn is conn:
                stream.conn = None

    async def _complete(self, stream: Stream) -> None:
        stream.complete = True
        if stream.leased:
            self.unlease(stream)
        conn = stream.conn
        if conn is not None:
            # The writer drains what is queued, then ends the response; ``release``
            # then keeps the stream for a while, in case the client missed the end.
            conn.end()
            stream.conn = None
        else:
            await self.retain_or_forget(stream)

    def end_streams(self, unanswered: str | None = None, *, hand_over: bool = False) -> None:
        # The actor is done: requests still owed an answer get an error (saying
        # ``unanswered``, if given), every connection ends. With ``hand_over`` (this
        # replica's copy is dropped as it stops), a stream whose first event is in the
        # shared store just ends, as a cut connection would: its client, told the retry
        # delay by that first event, resumes it on another replica with Last-Event-ID,
        # which replays what is stored and then says how the request ended.
        for stream in list(self.streams.values()):
            resumable = hand_over and stream.leased
            self.unlease(stream)
            conn = stream.conn
            if conn is None:
                continue
            if stream.pending and not resumable:
                reply = (
                    self.actor.core.ended_reply(stream.pending)
                    if unanswered is None
                    else unanswered_reply(stream.pending, unanswered)
                )
                data = orjson.dumps(reply)
                stream.pending.clear()
                with contextlib.suppress(
                    trio.WouldBlock, trio.BrokenResourceError, trio.ClosedResourceError
                ):
                    conn.put_nowait((None, data, True))
            stream.complete = True
            self.detach(stream, conn)
        self.by_request.clear()
