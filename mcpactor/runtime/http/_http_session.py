# A session behind the HTTP endpoints: its lifetime (asleep, awake, closing) and what
# clients send it. Its streams and router are its ``Routing`` (_routing.py); the runs of
# its actor, asleep and awake, its ``SessionRuns`` (_session_runs.py).
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
# server→client request running, no connection attached but its GET stream, inbox and
# outbox drained.
# Either way the inbox closes, the actor ends its run without closing the core, the
# router finishes, and the task ends. A message arriving meanwhile waits for that, then
# wakes the session again. Server change notices for a sleeping session are kept by the
# actor and sent when it next wakes, to the event store; a GET stream does not keep the
# session awake, but a session with one open wakes as soon as a notice is kept (or, when
# the GET comes, if one is kept already), so its client hears of changes at once.
# Legacy SSE and WebSocket sessions stay awake while their one connection lasts; a
# stateless session lives for one POST and never sleeps: closing it gives requests
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

import logging
import secrets
from collections.abc import Iterable
from typing import TYPE_CHECKING, Final

import trio

from ...protocol import (
    Body,
    JSONValue,
    RequestId,
    Revision,
    describe,
)
from .._messages import Outbound
from .._metrics import METRICS
from .._session_actor import SessionActor
from .._views import HttpSessionView, StreamView
from ._relay import Replicas
from ._resume import replay_into, resume_elsewhere, resume_here
from ._routing import STANDALONE, Routing
from ._session_kinds import DuplicateRequestId, SessionHost, SessionKind
from ._session_records import SessionRecord, StoreUnavailable
from ._session_runs import RunState, SessionRuns
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

# Copies of a shared session draw one of this many ranges of this many request ids (and
# stream ids), so that two copies' ids stay within 2**53 (exact in JSON numbers
# everywhere) and coincide with odds of one in two million.
_ID_RANGES: Final = 2**21
_ID_RANGE: Final = 2**32
_STATELESS_REASON: Final = (
    "the server runs in stateless mode, so the client's answer could not reach this request"
)
# What requests still running on a copy that is dropped (its replica stops) are told.
_COPY_DROPPED: Final = (
    "the server stopped before the request was answered; the session goes on elsewhere"
)


class HttpSession:
    """One MCP session served over HTTP (or WebSocket): the actor, its router, streams."""

    __slots__ = (
        "_copy_only",
        "_opening",
        "_refused",
        "actor",
        "closing",
        "created",
        "id",
        "kind",
        "manager",
        "principal",
        "replicas",
        "routing",
        "runs",
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
        #: the transport's id of the session (Mcp-Session-Id); None: not named
        self.id = session_id
        #: what the client that opened the session was admitted as (handlers read it as
        #: ``ctx.principal``, through the actor, so a refreshed one is seen at once)
        self.principal = principal
        single_stream = kind in (SessionKind.LEGACY_SSE, SessionKind.WEBSOCKET)
        options = (
            manager.stateless_session_options
            if kind is SessionKind.STATELESS
            else manager.effective_session_options
        )
        self.actor = actor = SessionActor(
            manager.server,
            None,
            options,
            stream_signals=not single_stream,
            refuse_client_requests=_STATELESS_REASON if kind is SessionKind.STATELESS else None,
            principal_holder=self,
            session_id=session_id,
        )
        #: the session's streams and the router that puts its messages on them
        self.routing = Routing(
            actor,
            session_id,
            manager.event_store,
            resumable=kind is SessionKind.STREAMABLE and session_id is not None,
            single_stream=single_stream,
            json_only=manager.response_mode == "json",
            max_message_bytes=manager.max_message_bytes,
        )
        #: the runs of the actor: asleep, awake, falling asleep
        self.runs = SessionRuns(self)
        #: when the session was opened (the runtime's clock)
        self.created = self.routing.last_active
        #: the session is ending: nothing more is taken from the client
        self.closing = False
        if kind is not SessionKind.STATELESS:
            # Changes reach the session while it sleeps, too; a stateless one cannot
            # carry them to anyone.
            actor.register()
            actor.changes.wake = self._changes_waiting
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
            self.routing.before_response = self._answering

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
            self.routing.before_response = None
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
        runs = self.runs
        if runs.state is RunState.ASLEEP:
            if self.routing.resumable:
                # Forgetting the stored events may wait on the store: a short task.
                self.manager.spawn(self.end)
            else:
                self._finish()
                self.manager.ended(self)
        elif runs.inbox is not None:
            runs.inbox.close()

    def busy(self) -> bool:
        """Return whether a client is connected or a request is being served."""
        return self.routing.connections > 0 or self.actor.statistics().requests_in_flight > 0

    async def end(self) -> None:
        """The session is over: connections end, the core closes, the store forgets it."""
        try:
            self._finish()
            routing = self.routing
            if routing.resumable and not self._copy_only:
                assert self.id is not None
                with trio.CancelScope(shield=True):
                    try:
                        await routing.store.forget_session(self.id)
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
        self.routing.ended = True
        self.runs.state = RunState.ASLEEP
        copy_only = self._copy_only
        self.routing.end_streams(_COPY_DROPPED if copy_only else None, hand_over=copy_only)
        self.actor.close()
        self.runs.settle()
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
        routing = self.routing
        self.shared = shared = SharedCopy(self, routing.to_standalone, replicas, ttl, record)
        routing.leases = leases
        routing.standalone_elsewhere = self._relay_standalone
        self.actor.peer.share_subscriptions = shared.share_subscriptions
        core = self.actor.core
        core.number_requests_from(secrets.randbelow(_ID_RANGES) * _ID_RANGE + 1)
        routing.next_stream = secrets.randbelow(_ID_RANGES) * _ID_RANGE + 1
        if record is not None:
            shared.adopt(record)

    def record(self) -> SessionRecord | None:
        """This copy's state as a record; None before initialize or if not shared."""
        shared = self.shared
        return None if shared is None else shared.record()

    async def _relay_standalone(self, data: bytes) -> bool:
        # A message for the GET stream while none is attached here: the client holds it
        # on another replica, if anywhere. Not relayed once this copy is ending.
        shared = self.shared
        if shared is None or self.closing:
            return False
        await shared.relay_standalone(data)
        return True

    def drop_copy(self) -> None:
        """End this copy only: the session lives on in the other replicas."""
        self._copy_only = True
        self.close()

    # --- what clients send ----------------------------------------------------------

    async def feed(
        self, value: JSONValue | Body, *, relayed: bool = False, arrived: float | None = None
    ) -> bool:
        """Hand one decoded (or classified) body to the session; False if it is closed.

        ``relayed``: it came from another replica, which could not act on it.
        ``arrived``: when its HTTP request arrived; it goes with the body to the session
        actor, which counts its requests' latency from then.
        """
        routing = self.routing
        routing.last_active = routing.clock.current_time() if arrived is None else arrived
        shared = None if relayed else self.shared
        if shared is not None:
            kept = await shared.share_in(value)
            if kept is None:
                return not self.closing
            value = kept
        item = value if arrived is None else (value, arrived)
        runs = self.runs
        while not self.closing:
            state = runs.state
            if state is RunState.FALLING_ASLEEP:
                await runs.wait_settled()
                continue
            if state is RunState.ASLEEP:
                runs.wake()
            inbox = runs.inbox
            assert inbox is not None
            try:
                # The HTTP request already went through the scheduler to get here: only
                # a full inbox is worth another trip (then wait, as backpressure).
                try:
                    inbox.send_nowait(item)
                except trio.WouldBlock:
                    await inbox.send(item)
            except (trio.ClosedResourceError, trio.BrokenResourceError):
                continue  # it began to fall asleep, or it is closing
            return True
        return False

    async def post(
        self,
        value: JSONValue | Body,
        request_ids: Iterable[RequestId],
        *,
        sse: bool,
        arrived: float | None = None,
    ) -> Attachment | None:
        """Open the stream that will carry these requests' responses, then feed them.

        ``arrived``: when the HTTP request arrived (trio's clock), which its requests'
        latency counts from.

        Returns None if the session is closed. Raises DuplicateRequestId if one of the
        ids is still in flight.
        """
        ids = set(request_ids)
        routing = self.routing
        by_request = routing.by_request
        for request_id in ids:
            if request_id in by_request:
                raise DuplicateRequestId(request_id)
        attachment = routing.open_stream(ids)
        stream = attachment.stream
        if sse:
            await routing.start_sse(stream)
        if await self.feed(value, arrived=arrived):
            return attachment
        for request_id in ids:
            by_request.pop(request_id, None)
        stream.pending.clear()
        stream.complete = True
        routing.unlease(stream)
        await self.release(attachment)
        return None

    async def listen(self) -> Attachment | None:
        """Attach a fresh GET to the standalone stream; None if one is attached already."""
        routing = self.routing
        stream = routing.standalone
        if stream.conn is not None:
            return None
        attachment = routing.attach(stream)
        if routing.resumable:
            assert self.id is not None
            if routing.primes():
                await routing.anchor_standalone()
                await routing.append(STANDALONE, b"")
            if stream.delivered is not None:
                await replay_into(attachment, routing.store, self.id, stream.delivered)
        # A listener alone keeps nothing awake: the session wakes for changes kept while
        # it slept (after what is replayed) and for each one that comes later.
        if self.actor.changes.waiting:
            self._changes_waiting()
        return attachment

    async def resume(self, last_event_id: str) -> Attachment | None:
        """Re-attach to the stream ``last_event_id`` came from; None if it is unknown."""
        routing = self.routing
        if not routing.resumable:
            return None
        assert self.id is not None
        first = await routing.store.replay_after(self.id, last_event_id)
        if first is None:
            return None
        stream = routing.streams.get(first.stream_id)
        if stream is None:
            if self.replicas is None:
                return None
            manager = self.manager
            return resume_elsewhere(
                routing, first, last_event_id, manager.followers, manager.spawn, self._closing
            )
        if stream is routing.standalone:
            # As for a fresh GET: only the changes still to send need the router.
            attachment = await resume_here(routing, stream, first, last_event_id)
            if self.actor.changes.waiting:
                self._changes_waiting()
            return attachment
        if not stream.complete:
            # A request's stream while the request runs: the router must be there to
            # route its answer.
            await self.runs.ensure_awake()
        return await resume_here(routing, stream, first, last_event_id)

    def _changes_waiting(self) -> None:
        # The Server changed something while the actor rests: a session that a GET
        # listens on wakes to send it now; one without keeps it for its next run.
        if self.closing or self.routing.standalone.conn is None:
            return
        runs = self.runs
        if runs.state is RunState.ASLEEP:
            runs.wake()
        elif runs.state is RunState.FALLING_ASLEEP:
            self.manager.spawn(self._wake_when_settled)

    async def _wake_when_settled(self) -> None:
        await self.runs.ensure_awake()

    def _closing(self) -> bool:
        return self.closing

    async def release(self, attachment: Attachment) -> None:
        """The connection of ``attachment`` is done (finished, cut or gone).

        A completed stream is forgotten, or, if it was SSE in a resumable session, kept
        a while for a client that missed its end.
        """
        routing = self.routing
        routing.connections -= 1
        routing.last_active = routing.clock.current_time()
        stream = attachment.stream
        unwritten = METRICS.unwritten
        if unwritten is not None:
            # After the connection's last write: the answers it carried are written.
            unwritten.released(stream, attachment, routing.last_active)
        attachment.end()
        if stream.conn is attachment:
            stream.conn = None
        if stream is not routing.standalone and stream.complete and stream.conn is None:
            if routing.resumable and stream.sse:
                await routing.retain_or_forget(stream)
            else:
                # Nothing of it is in the event store.
                routing.streams.pop(stream.id, None)

    def view(self) -> HttpSessionView:
        """How the session is held at this instant: state, connections, streams."""
        routing = self.routing
        standalone = routing.standalone
        streams = [
            StreamView(
                stream.id,
                stream is standalone,
                len(stream.pending),
                len(stream.conn._items) if stream.conn is not None else 0,
                stream.conn is not None,
                stream.delivered,
            )
            for stream in routing.streams.values()
        ]
        return HttpSessionView(
            id=self.id,
            kind=self.kind.value,
            awake=self.runs.awake,
            closing=self.closing,
            created=self.created,
            last_active=routing.last_active,
            connections=routing.connections,
            principal=self.principal,
            actor=self.actor,
            streams=tuple(streams),
        )
