# Sessions behind the HTTP endpoints, and the streams their messages travel on.
#
# Ownership: one ``SessionManager`` nursery owns every ``HttpSession``; a session's own
# nursery owns its ``SessionActor`` and its router. HTTP request handlers only *attach*
# to streams, so a client that drops a connection never cancels anything: only
# ``notifications/cancelled`` does (transports page: "disconnection SHOULD NOT be
# interpreted as the client cancelling its request").
#
# Streams: every POST that carries requests gets a ``_Stream`` (ids "1", "2", …) owing
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
# gets what it missed. A completed SSE stream is retained for a while (the newest
# ``_MAX_RETAINED`` per session): having written its last event tells us nothing about
# whether the client read it, as a TCP write to a peer that just left still succeeds.
#
# A connection is a bounded memory channel of ``(event id, data, final)`` items. The
# router never waits on a stuck client for long: after ``_PUSH_TIMEOUT`` seconds the
# connection is cut, and what it missed stays in the store.

from __future__ import annotations

import contextlib
import enum
import logging
from collections.abc import Iterable
from typing import TYPE_CHECKING, Final

import attrs
import orjson
import trio

from .._exceptions import INTERNAL_ERROR, ProtocolError
from ..protocol import JSONValue, RequestId
from ..runtime import Outbound, SessionActor
from ..runtime._session_actor import StreamSignal

if TYPE_CHECKING:
    from ._session_manager import SessionManager

__all__ = ["Attachment", "DuplicateRequestId", "HttpSession", "Item", "SessionKind"]

_log = logging.getLogger("mcpactor.http")

#: (event id or None, one JSON message or b"" for a priming event, last of its stream)
Item = tuple[str | None, bytes, bool]

_INBOX_SIZE: Final = 64
_OUTBOX_SIZE: Final = 256
_CONNECTION_BUFFER: Final = 64
_PUSH_TIMEOUT: Final = 30.0
_MAX_RETAINED: Final = 16
_STANDALONE: Final = "0"
# SEP-1699 (2025-11-25): POST SSE streams open with a priming event. Sessions that
# negotiated an older revision do not get one; their clients may not expect an event
# without data.
_PRIMING_REVISIONS: Final = frozenset({"2025-11-25"})
_STATELESS_REASON: Final = (
    "the server runs in stateless mode, so the client's answer could not reach this request"
)


class SessionKind(enum.Enum):
    """Which transport a session serves; decides ids, routing and resumability."""

    STREAMABLE = "streamable HTTP"
    STATELESS = "stateless HTTP"
    LEGACY_SSE = "HTTP+SSE"
    WEBSOCKET = "WebSocket"


class DuplicateRequestId(Exception):
    """A POST reuses the id of a request still in flight in its session."""

    def __init__(self, request_id: RequestId) -> None:
        super().__init__(f"request id {request_id!r} is already in flight in this session")
        self.request_id = request_id


class _Stream:
    __slots__ = ("complete", "conn", "delivered", "id", "pending", "sse")

    def __init__(self, stream_id: str) -> None:
        self.id = stream_id
        #: ids of the requests whose responses this stream still owes
        self.pending: set[RequestId] = set()
        self.conn: trio.MemorySendChannel[Item] | None = None
        #: the stream carries SSE (its messages get event ids when resumable)
        self.sse = False
        #: every response it owed was routed (or its requests were cancelled)
        self.complete = False
        #: the last event id a connection wrote (where a fresh GET picks up)
        self.delivered: str | None = None


@attrs.define(eq=False)
class Attachment:
    """One HTTP connection's hold on a stream; what the connection writer reads."""

    stream: _Stream
    send: trio.MemorySendChannel[Item]
    receive: trio.MemoryReceiveChannel[Item]
    #: events to write before the live ones (a resumed or re-opened stream)
    replay: list[tuple[str, bytes]] = attrs.Factory(list)
    #: live items to drop because ``replay`` already holds them
    skip: frozenset[str] = frozenset()


class HttpSession:
    """One MCP session served over HTTP (or WebSocket): the actor, its router, streams."""

    def __init__(
        self,
        manager: SessionManager,
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
        outbox_send, self._outbox = trio.open_memory_channel[Outbound](_OUTBOX_SIZE)
        self._inbox, self._inbox_receive = trio.open_memory_channel[JSONValue | ProtocolError](
            _INBOX_SIZE
        )
        options = (
            manager.stateless_session_options
            if kind is SessionKind.STATELESS
            else manager.session_options
        )
        self.actor = SessionActor(
            manager.server,
            outbox_send,
            options,
            stream_signals=not self._single_stream,
            refuse_client_requests=_STATELESS_REASON if kind is SessionKind.STATELESS else None,
        )
        self._streams: dict[str, _Stream] = {}
        self._by_request: dict[RequestId, _Stream] = {}
        self._retained: dict[str, None] = {}
        self._next_stream = 0
        self.standalone = self._new_stream()
        self.standalone.sse = True
        self.connections = 0
        self.last_active = trio.current_time()
        self.closing = False
        self.started = False

    # --- lifetime -----------------------------------------------------------------

    async def run(self, *, task_status: trio.TaskStatus[HttpSession]) -> None:
        """Serve the session until its inbox is closed and the actor has wound down."""
        try:
            async with trio.open_nursery() as nursery:
                if self.resumable:
                    assert self.id is not None
                    # An empty first event gives a fresh GET a place to pick up from.
                    self.standalone.delivered = await self.manager.event_store.append(
                        self.id, _STANDALONE, b""
                    )
                await nursery.start(self.actor.run, self._inbox_receive)
                self.started = True
                task_status.started(self)
                await self._route_all()
                nursery.cancel_scope.cancel()
        finally:
            with trio.CancelScope(shield=True):
                self._end_streams()
                if self.resumable:
                    assert self.id is not None
                    await self.manager.event_store.forget_session(self.id)

    def close(self) -> None:
        """End the session: stop reading from the client and let the actor wind down."""
        if not self.closing:
            self.closing = True
            self._inbox.close()

    def touch(self) -> None:
        """Note activity: the idle timer restarts from now."""
        self.last_active = trio.current_time()

    def busy(self) -> bool:
        """Return whether a client is connected or a request is being served."""
        return self.connections > 0 or self.actor.statistics().requests_in_flight > 0

    # --- what clients send ----------------------------------------------------------

    async def feed(self, value: JSONValue | ProtocolError) -> bool:
        """Hand one decoded body to the actor; False if the session is closed."""
        self.touch()
        try:
            # The HTTP request already went through the scheduler to get here: only a
            # full inbox is worth another trip (then wait, as backpressure).
            try:
                self._inbox.send_nowait(value)
            except trio.WouldBlock:
                await self._inbox.send(value)
        except (trio.ClosedResourceError, trio.BrokenResourceError):
            return False
        return True

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
        if stream.conn is not None:
            return None
        attachment = self._attach(stream)
        if self.resumable:
            assert self.id is not None
            assert stream.delivered is not None
            store = self.manager.event_store
            if self._primes():
                await store.append(self.id, _STANDALONE, b"")
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
            self._detach(stream, attachment.send)
        self._retained.pop(stream.id, None)
        return attachment

    async def release(self, attachment: Attachment) -> None:
        """The connection of ``attachment`` is done (finished, cut or gone)."""
        self.connections -= 1
        self.touch()
        stream = attachment.stream
        attachment.send.close()
        if stream.conn is attachment.send:
            stream.conn = None
        if stream is not self.standalone and stream.complete and stream.conn is None:
            await self._retain_or_forget(stream)

    # --- streams ------------------------------------------------------------------------

    def _new_stream(self) -> _Stream:
        stream = _Stream(str(self._next_stream))
        self._next_stream += 1
        self._streams[stream.id] = stream
        return stream

    def _attach(self, stream: _Stream) -> Attachment:
        send, receive = trio.open_memory_channel[Item](_CONNECTION_BUFFER)
        if stream.conn is not None:
            # The client reconnected while we still held its old connection.
            stream.conn.close()
        stream.conn = send
        self.connections += 1
        self.touch()
        return Attachment(stream, send, receive)

    def _detach(self, stream: _Stream, conn: trio.MemorySendChannel[Item]) -> None:
        conn.close()
        if stream.conn is conn:
            stream.conn = None

    def _primes(self) -> bool:
        negotiated = self.actor.core.negotiated
        return negotiated is not None and negotiated.revision.version in _PRIMING_REVISIONS

    async def _start_sse(self, stream: _Stream) -> None:
        stream.sse = True
        if self.resumable and self._primes():
            assert self.id is not None
            event_id = await self.manager.event_store.append(self.id, stream.id, b"")
            await self._push(stream, (event_id, b"", False))

    async def _forget(self, stream: _Stream) -> None:
        self._streams.pop(stream.id, None)
        self._retained.pop(stream.id, None)
        if self.resumable and stream.sse:
            assert self.id is not None
            await self.manager.event_store.forget_stream(self.id, stream.id)

    async def _retain_or_forget(self, stream: _Stream) -> None:
        if not (self.resumable and stream.sse):
            await self._forget(stream)
            return
        self._retained[stream.id] = None
        while len(self._retained) > _MAX_RETAINED:
            oldest = self._streams.get(next(iter(self._retained)))
            self._retained.pop(next(iter(self._retained)))
            if oldest is not None:
                await self._forget(oldest)

    # --- the router -----------------------------------------------------------------------

    async def _route_all(self) -> None:
        async with self._outbox:
            async for first in self._outbox:
                item: Outbound | None = first
                # Route what is already queued in this turn, not one message per turn.
                while item is not None:
                    if item.signal is None:
                        await self._route(item.payload, item.related_request_id)
                    else:
                        await self._signal(item.signal, item.related_request_id)
                    try:
                        item = self._outbox.receive_nowait()
                    except (trio.WouldBlock, trio.EndOfChannel):
                        item = None

    async def _route(self, payload: JSONValue, related: RequestId | None) -> None:
        data = orjson.dumps(payload)
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
                _log.debug("dropped a response that no stream is waiting for: %r", payload)
                return
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

    def _stream_of_batch(self, payload: list[JSONValue]) -> _Stream | None:
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

    async def _deliver(self, stream: _Stream, data: bytes, *, final: bool) -> None:
        if not stream.sse:
            if final:
                # The stream's one answer, and nothing came before it: plain JSON.
                await self._push(stream, (None, data, True))
                return
            await self._start_sse(stream)
        event_id = None
        if self.resumable:
            assert self.id is not None
            event_id = await self.manager.event_store.append(self.id, stream.id, data)
        await self._push(stream, (event_id, data, final))

    async def _push(self, stream: _Stream, item: Item) -> None:
        conn = stream.conn
        if conn is None:
            return
        try:
            try:
                conn.send_nowait(item)
            except trio.WouldBlock:
                with trio.move_on_after(_PUSH_TIMEOUT) as waited:
                    await conn.send(item)
                if waited.cancelled_caught:
                    _log.warning("a client stopped reading its stream; cutting the connection")
                    self._detach(stream, conn)
        except (trio.BrokenResourceError, trio.ClosedResourceError):
            if stream.conn is conn:
                stream.conn = None

    async def _complete(self, stream: _Stream) -> None:
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
                    conn.send_nowait((None, data, True))
            stream.complete = True
            self._detach(stream, conn)
        self._by_request.clear()


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
