# A session behind the HTTP endpoints: its lifetime (asleep, awake, closing) and what
# clients send it. Its streams and router are ``Routing`` (_routing.py), which it extends.
#
# Ownership: one ``SessionManager`` nursery owns every ``HttpSession`` that is awake; an
# awake session's own nursery owns its ``SessionActor`` and its router. HTTP request
# handlers only *attach* to streams, so a client that drops a connection never cancels
# anything: only ``notifications/cancelled`` does (transports page: "disconnection SHOULD
# NOT be interpreted as the client cancelling its request").
#
# Hibernation: a Streamable HTTP session is mostly idle, so it sleeps. Asleep, it is
# state only — the actor's protocol core, subscriptions and task records, its streams'
# bookkeeping, its event-store entries — and no task, channel or nursery. Every message
# goes to the actor's inbox; a message for a sleeping session first wakes it: the
# manager's nursery starts one task that runs the actor beside the router. A session
# that answered only what the core answers alone (initialize, ping, notifications)
# falls asleep again as soon as the actor has sent the answer; one that served a request
# sleeps once it has been quiet for a moment and nothing is left: no request, task or
# server→client request running, no connection attached, inbox and outbox drained.
# Either way the inbox closes, the actor ends its run without closing the core, the
# router finishes, and the task ends. A message arriving meanwhile waits for that, then
# wakes the session again. Server change notices for a sleeping session are kept by the
# actor and sent when it next wakes — to a GET, which always wakes it, or to the event
# store. Legacy SSE and WebSocket sessions stay awake while their one connection lasts;
# a stateless session lives for one POST and never sleeps: closing it gives requests
# still running the shutdown grace, then cancels them (nobody can resume).
#
# Replicas (``share``): when several processes serve the same sessions, each holds a
# copy (_shared_copy.py) of a session it was named, which keeps the session's record
# current and relays what it cannot act on to the other copies. Copies number their
# server→client requests and POST streams in ranges of their own, drawn at random, so
# that ids never collide between replicas. A client resuming a POST stream on a copy
# other than the one running its request gets the stored events and then follows the
# stream in the store until its answer (_follow.py).

from __future__ import annotations

import enum
import functools
import logging
import secrets
from collections.abc import Iterable
from typing import TYPE_CHECKING, Final

import trio

from ..._exceptions import ProtocolError
from ...protocol import (
    Body,
    JSONValue,
    Phase,
    RequestId,
    Revision,
    describe,
)
from .._messages import Outbound, Outbox
from .._session_actor import SessionActor
from .._views import HttpSessionView, StreamView
from ._relay import Replicas
from ._resume import replay_into, resume_elsewhere, resume_here
from ._routing import STANDALONE, Routing
from ._session_kinds import DuplicateRequestId, SessionHost, SessionKind
from ._session_records import SessionRecord, StoreUnavailable
from ._shared_copy import SharedCopy
from ._streams import Attachment, Item

if TYPE_CHECKING:
    from ._leases import LeaseKeeper

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
# Copies of a shared session draw one of this many ranges of this many request ids (and
# stream ids), so that two copies' ids stay within 2**53 (exact in JSON numbers
# everywhere) and coincide with odds of one in two million.
_ID_RANGES: Final = 2**21
_ID_RANGE: Final = 2**32
_OUTBOX_SIZE: Final = 256
_STATELESS_REASON: Final = (
    "the server runs in stateless mode, so the client's answer could not reach this request"
)
# What requests still running on a copy that is dropped (its replica stops) are told.
_COPY_DROPPED: Final = (
    "the server stopped before the request was answered; the session goes on elsewhere"
)


class _State(enum.Enum):
    ASLEEP = "asleep"  # state only: no task, no channel
    AWAKE = "awake"  # the actor and the router run in the manager's nursery
    FALLING_ASLEEP = "falling asleep"  # the inbox closed for a rest; the task is ending


class HttpSession(Routing):
    """One MCP session served over HTTP (or WebSocket): the actor, its router, streams."""

    __slots__ = (
        "_copy_only",
        "_inbox",
        "_opening",
        "_outbox",
        "_refused",
        "_settled",
        "_sink",
        "_state",
        "kind",
        "manager",
        "principal",
        "replicas",
        "shared",
    )

    def __init__(
        self,
        manager: SessionHost[HttpSession],
        kind: SessionKind,
        session_id: str | None,
        principal: object,
    ) -> None:
        self.manager = manager
        self.kind = kind
        #: what the client that opened the session was admitted as (handlers read it as
        #: ``ctx.principal``, through the actor, so a refreshed one is seen at once)
        self.principal = principal
        single_stream = kind in (SessionKind.LEGACY_SSE, SessionKind.WEBSOCKET)
        options = (
            manager.stateless_session_options
            if kind is SessionKind.STATELESS
            else manager.effective_session_options
        )
        actor = SessionActor(
            manager.server,
            None,
            options,
            stream_signals=not single_stream,
            refuse_client_requests=_STATELESS_REASON if kind is SessionKind.STATELESS else None,
            principal_holder=self,
        )
        actor.session_id = session_id
        super().__init__(
            actor,
            session_id,
            manager.event_store,
            resumable=kind is SessionKind.STREAMABLE and session_id is not None,
            single_stream=single_stream,
            json_only=manager.response_mode == "json",
            max_message_bytes=manager.max_message_bytes,
        )
        if kind is not SessionKind.STATELESS:
            # Changes reach the session while it sleeps, too; a stateless one cannot
            # carry them to anyone.
            actor.register()
        self._state = _State.ASLEEP
        # The awake session's channels: the inbox to the actor, the outbox to the router.
        self._inbox: trio.MemorySendChannel[JSONValue | ProtocolError] | None = None
        self._outbox: trio.MemoryReceiveChannel[Outbound] | None = None
        # The actor's Outbox while it runs (awake, or lent to a stateless POST).
        self._sink: Outbox | None = None
        # Made when a message must wait for the session to finish falling asleep.
        self._settled: trio.Event | None = None
        #: the replicas this session is shared with; None: it lives in this process only
        self.replicas: Replicas | None = None
        #: this process's copy of the shared session; None: it lives here only
        self.shared: SharedCopy | None = None
        # Ending this copy leaves the session to the other replicas: its stored events
        # are theirs too.
        self._copy_only = False
        # Its initialize was answered with an error although the core took it: the
        # session could not be recorded, so it is not handed out.
        self._refused = False
        # Set once the initialize that opens the session is answered (``introduce``).
        self._opening: trio.Event | None = None
        if kind is SessionKind.STREAMABLE:
            self._opening = trio.Event()
            self._before_response = self._answering

    @property
    def revision(self) -> Revision | None:
        """The revision the session negotiated; None until initialize succeeds."""
        negotiated = self.actor.core.negotiated
        return negotiated.revision if negotiated is not None else None

    # --- lifetime -----------------------------------------------------------------

    @property
    def opened(self) -> bool:
        """Whether initialize succeeded: the session may be handed to its client."""
        return not self._refused and self.actor.core.negotiated is not None

    @property
    def awake(self) -> bool:
        """Whether the session's actor and router are running (or finishing a period)."""
        return self._state is not _State.ASLEEP

    async def introduce(self) -> bool:
        """Wait until the initialize that opened the session is answered; did it open it?"""
        opening = self._opening
        if opening is not None:
            await opening.wait()
        return self.opened

    async def _answering(self, response: Outbound) -> Outbound:
        # Before each answer leaves: a shared session's record is written first (the
        # client's next request may go to any replica), and a session whose initialize
        # cannot be recorded is refused. The first answer is the initialize's.
        shared = self.shared
        if shared is not None:
            if not await shared.share_out():
                self._refused = True
                response = shared.unrecorded(response)
        else:
            self._before_response = None
        self._opened()
        return response

    def _opened(self) -> None:
        opening = self._opening
        if opening is not None:
            self._opening = None
            opening.set()

    def close(self) -> None:
        """End the session: stop reading from the client and let the actor wind down."""
        if self.closing:
            return
        self.closing = True
        if self._state is _State.ASLEEP:
            if self.resumable:
                # Forgetting the stored events may wait on the store: a short task.
                self.manager.spawn(self._end)
            else:
                self._finish()
                self.manager.ended(self)
        elif self._inbox is not None:
            self._inbox.close()

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

    def _wake(self) -> None:
        # Start the actor and the router, in one task that the manager's nursery owns.
        inbox_send, inbox_receive = trio.open_memory_channel[JSONValue | ProtocolError](
            _INBOX_SIZE
        )
        outbox_send, outbox_receive = trio.open_memory_channel[Outbound](_OUTBOX_SIZE)
        self._inbox = inbox_send
        self._outbox = outbox_receive
        self._sink = self.outbox(outbox_send)
        self._state = _State.AWAKE
        self.manager.wake(
            self, functools.partial(self._run_awake, inbox_receive, self._sink, outbox_receive)
        )

    async def _run_awake(
        self,
        inbox: trio.MemoryReceiveChannel[JSONValue | ProtocolError],
        outbox: Outbox,
        outbox_receive: trio.MemoryReceiveChannel[Outbound],
    ) -> None:
        rested = False
        try:
            async with trio.open_nursery() as nursery:
                nursery.start_soon(
                    functools.partial(self.actor.run, inbox, outbox=outbox, rest=self._rests)
                )
                # The router ends when the actor has closed the outbox.
                await self._route_all(outbox_receive, outbox)
            rested = self.actor.core.phase is not Phase.CLOSED
        finally:
            self._inbox = None
            self._outbox = None
            self._sink = None
            if rested and not self.closing:
                self._state = _State.ASLEEP
                self._settle()
            else:
                with trio.CancelScope(shield=True):
                    await self._end()

    def _rests(self) -> bool:
        # The actor asks when it finds nothing to do, and when its inbox closed: a rest,
        # unless the session is closing. A session that answered only what the core
        # answers alone (initialize, ping, notifications) rests at once; one that served
        # a request stays awake until the sleep timer finds it quiet.
        if self.closing:
            return False
        if self._state is _State.FALLING_ASLEEP:
            return True
        if self._state is _State.AWAKE and self._quiet():
            self.sleep()
            return True
        return False

    def _quiet(self) -> bool:
        # Nothing for the router to do, and nothing attached that it would feed.
        outbox = self._outbox
        if (
            self.kind is not SessionKind.STREAMABLE
            or self._by_request
            or self.standalone.conn is not None
            or outbox is None
        ):
            return False
        outbound = outbox.statistics()
        return outbound.current_buffer_used == 0 and outbound.tasks_waiting_receive == 1

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
            if self._state is _State.AWAKE:
                return True
            if self._state is _State.ASLEEP:
                self._wake()
                return True
            await self._wait_settled()
        return False

    async def _end(self) -> None:
        # The session is over: connections end, the core closes, the store forgets it.
        try:
            self._finish()
            if self.resumable and not self._copy_only:
                assert self.id is not None
                with trio.CancelScope(shield=True):
                    try:
                        await self._store.forget_session(self.id)
                    except StoreUnavailable as exc:
                        # Its events expire with the store's ttl.
                        _log.warning(
                            "session %s: its stored events are left to expire: %s",
                            describe(self.id),
                            describe(str(exc)),
                        )
        finally:
            self.manager.ended(self)

    def _finish(self) -> None:
        self.closing = True
        self._ended = True
        self._state = _State.ASLEEP
        self._end_streams(_COPY_DROPPED if self._copy_only else None)
        self.actor.close()
        self._settle()
        self._opened()

    # --- replicas --------------------------------------------------------------------

    def share(
        self,
        replicas: Replicas,
        ttl: float,
        record: SessionRecord | None = None,
        *,
        leases: LeaseKeeper | None = None,
    ) -> None:
        """Serve this session as one copy among ``replicas``; adopt it from ``record``.

        ``ttl``: how long the record lives after each write. Without ``record`` this is
        the copy that opens the session, and writes its record once initialized.
        ``leases`` holds the leases of the requests this copy runs (none without).

        Raises:
            LocalProtocolError: the record names a revision this server does not speak.
        """
        self.replicas = replicas
        standalone = super()._to_standalone
        self.shared = shared = SharedCopy(self, standalone, replicas, ttl, record)
        self._leases = leases
        self.actor.share_subscriptions = shared.share_subscriptions
        core = self.actor.core
        core.number_requests_from(secrets.randbelow(_ID_RANGES) * _ID_RANGE + 1)
        self._next_stream = secrets.randbelow(_ID_RANGES) * _ID_RANGE + 1
        if record is not None:
            shared.adopt(record)

    def record(self) -> SessionRecord | None:
        """This copy's state as a record; None before initialize or if not shared."""
        shared = self.shared
        return None if shared is None else shared.record()

    async def _to_standalone(self, data: bytes) -> None:
        shared = self.shared
        if shared is not None and self.standalone.conn is None and not self.closing:
            # The GET stream, if the client holds one, is on another replica.
            await shared.relay_standalone(data)
            return
        await Routing._to_standalone(self, data)

    def drop_copy(self) -> None:
        """End this copy only: the session lives on in the other replicas."""
        self._copy_only = True
        self.close()

    # --- what clients send ----------------------------------------------------------

    async def feed(self, value: JSONValue | Body, *, relayed: bool = False) -> bool:
        """Hand one decoded (or classified) body to the session; False if it is closed.

        ``relayed``: it came from another replica, which could not act on it.
        """
        self.last_active = self._clock.current_time()
        shared = None if relayed else self.shared
        if shared is not None:
            kept = await shared.share_in(value)
            if kept is None:
                return not self.closing
            value = kept
        while not self.closing:
            state = self._state
            if state is _State.FALLING_ASLEEP:
                await self._wait_settled()
                continue
            if state is _State.ASLEEP:
                self._wake()
            inbox = self._inbox
            assert inbox is not None
            try:
                # The HTTP request already went through the scheduler to get here: only
                # a full inbox is worth another trip (then wait, as backpressure).
                try:
                    inbox.send_nowait(value)
                except trio.WouldBlock:
                    await inbox.send(value)
            except (trio.ClosedResourceError, trio.BrokenResourceError):
                continue  # it began to fall asleep, or it is closing
            return True
        return False

    async def post(
        self, value: JSONValue | Body, request_ids: Iterable[RequestId], *, sse: bool
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
        self._unlease(stream)
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
            if self._primes():
                await self._anchor_standalone()
                await self._append(STANDALONE, b"")
            if stream.delivered is not None:
                await replay_into(attachment, self._store, self.id, stream.delivered)
        return attachment

    async def resume(self, last_event_id: str) -> Attachment | None:
        """Re-attach to the stream ``last_event_id`` came from; None if it is unknown."""
        if not self.resumable:
            return None
        assert self.id is not None
        store = self._store
        first = await store.replay_after(self.id, last_event_id)
        if first is None:
            return None
        stream = self._streams.get(first.stream_id)
        if stream is None:
            if self.replicas is None:
                return None
            manager = self.manager
            return resume_elsewhere(self, first, last_event_id, manager.followers, manager.spawn)
        if not stream.complete:
            # Something is still routed to it (the standalone stream, or a request's
            # stream while the request runs): the router must be there to do it.
            await self._ensure_awake()
        return await resume_here(self, stream, first, last_event_id)

    async def release(self, attachment: Attachment) -> None:
        """The connection of ``attachment`` is done (finished, cut or gone).

        A completed stream is forgotten, or, if it was SSE in a resumable session, kept
        a while for a client that missed its end.
        """
        self.connections -= 1
        self.last_active = self._clock.current_time()
        stream = attachment.stream
        attachment.end()
        if stream.conn is attachment:
            stream.conn = None
        if stream is not self.standalone and stream.complete and stream.conn is None:
            if self.resumable and stream.sse:
                await self._retain_or_forget(stream)
            else:
                # Nothing of it is in the event store.
                self._streams.pop(stream.id, None)

    def view(self) -> HttpSessionView:
        """How the session is held at this instant: state, connections, streams."""
        standalone = self.standalone
        streams = [
            StreamView(
                stream.id,
                stream is standalone,
                len(stream.pending),
                len(stream.conn._items) if stream.conn is not None else 0,
                stream.conn is not None,
                stream.delivered,
            )
            for stream in self._streams.values()
        ]
        return HttpSessionView(
            id=self.id,
            kind=self.kind.value,
            awake=self.awake,
            closing=self.closing,
            created=self.created,
            last_active=self.last_active,
            connections=self.connections,
            principal=self.principal,
            actor=self.actor,
            streams=tuple(streams),
        )
