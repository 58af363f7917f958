# The Session actor and its Request actors.
#
# One ``SessionActor`` owns one ``ServerSession`` (the sans-io core) and a nursery. It
# takes decoded messages, feeds them to the core and acts on the events: each request
# the client sends runs as a Request actor (``_serve_request``) inside its own
# CancelScope, registered by id so that ``notifications/cancelled`` is just
# ``scope.cancel()``. Everything the session sends is built by the core and goes through
# one bounded outbox as typed ``Outbound`` items (_messages.py); the transport's single
# writer drains it. What the handlers talk to is the actor's ``peer`` (_peer.py), what
# the Server tells of its changes is its ``changes`` (_changes.py); this module is the
# loop and the request actors.
#
# Intake: messages come in one way, the inbox that ``run`` reads. Whoever has a message
# for the session (a transport's reader task, an HTTP request handler) queues it there;
# only the actor's own task acts on it, in order.
#
# Shutdown: when the inbox closes (EOF, signal, HTTP session ended) the actor stops
# reading, fails requests still waiting on the client, gives running handlers
# ``shutdown_grace`` seconds, then cancels them. Nothing it started outlives ``run``.
#
# Rest (HTTP sessions hibernate): a session with nothing running needs no task. An
# owner that lets it rest passes ``rest`` to ``run``: the actor asks it whenever it has
# acted and finds its inbox empty with nothing running, and when its inbox closes; a
# yes ends the run without closing the core. Between runs the object keeps only state
# — the core, the peer's subscriptions and task records, pending change notices — and
# the owner starts the next ``run`` when a message arrives. Change notices from the
# Server that arrive meanwhile are kept (coalesced) and sent when it next runs.
#
# The start gate: trio runs what became runnable during one pass of its scheduler in the
# next pass. When a burst of requests arrives at once, their connection tasks are woken
# in one pass, and every request actor they spawn waits for the next: each handler
# starts only after all of the burst's requests have been parsed, checked and decoded,
# the handlers start together, and calls of equal length then end together, so their
# answers queue behind one another. A server taking in one request after another would
# start each handler as its request arrives and answer each as it ends. The gate gives
# that order back: HTTP intake waits while ``limit`` request actors are spawned but not
# yet started, and each actor that starts lets one waiting connection go on.

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Final

import trio

from .._exceptions import INTERNAL_ERROR, ProtocolError, RequestError
from ..protocol import (
    CancelRequested,
    ErrorReceived,
    Event,
    Exchange,
    Initialized,
    JSONObject,
    JSONValue,
    NotificationReceived,
    Phase,
    Request,
    RequestId,
    ResponseReceived,
    Revision,
    RootsChanged,
    Send,
    ServerSession,
)
from ..server import Context, Server
from ._changes import ChangeNotices
from ._messages import (
    RESPONSE,
    SIGNAL,
    Outbound,
    Outbox,
    SessionOptions,
    StreamSignal,
    closed_outbox,
)
from ._metrics import METRICS
from ._notified import NotificationHandlers
from ._peer import PrincipalHolder, SessionPeer
from ._request import handled
from ._roots import RootsHooks

if TYPE_CHECKING:
    # Built where a view is asked for (the admin page): not on a server's start.
    from ._statistics import SessionStatistics
    from ._views import SessionView

__all__ = ["START_BACKLOG", "SessionActor", "StartGate", "current_start_gate"]

_log = logging.getLogger("mcpactor")

# Given, so that trio does not format one from the function for every request.
_REQUEST_TASK_NAME: Final = "mcpactor.request"

#: request actors that may wait for their first step before intake waits for them
START_BACKLOG: Final = 16


class StartGate:
    """Counts request actors in flight and not yet started; intake waits while many wait."""

    __slots__ = ("_lot", "_parked", "in_flight", "limit", "waiting")

    def __init__(self, limit: int = START_BACKLOG) -> None:
        self.limit = limit
        #: request actors spawned whose first step has not run
        self.waiting = 0
        #: request actors spawned that have not ended
        self.in_flight = 0
        self._lot = trio.lowlevel.ParkingLot()
        # Intakes in ``wait_turn`` (a plain count: the lot's own is a Python call away).
        self._parked = 0

    def spawned(self) -> None:
        """Note a request actor handed to the scheduler."""
        self.waiting += 1
        self.in_flight += 1

    def ended(self) -> None:
        """Note a request actor that is done (its reply queued, or none to send)."""
        self.in_flight -= 1

    def started(self) -> None:
        """Note a request actor's first step; let one waiting intake go on if there is room."""
        self.waiting -= 1
        if self._parked and self.waiting < self.limit:
            self._lot.unpark()

    @property
    def closed(self) -> bool:
        """Whether intake should wait now."""
        return self.waiting >= self.limit

    async def wait_turn(self) -> None:
        """Wait until request actors spawned earlier have started (at once if few wait)."""
        if self.waiting >= self.limit:
            self._parked += 1
            try:
                await self._lot.park()
            finally:
                self._parked -= 1
            # With no request actor left to start, no start will let the next intake go:
            # this one may start none (a notification, a GET, a refusal), so pass the
            # turn on now rather than leave the others parked.
            if self._lot and not self.waiting:
                self._lot.unpark()

    def statistics(self) -> tuple[int, int]:
        """Return (request actors not yet started, intakes waiting), for tests."""
        return self.waiting, len(self._lot)


_GATE: trio.lowlevel.RunVar[StartGate] = trio.lowlevel.RunVar("mcpactor.start_gate")


def current_start_gate() -> StartGate:
    """Return this trio run's gate, shared by every session and HTTP server in it."""
    try:
        return _GATE.get()
    except LookupError:
        gate = StartGate()
        _GATE.set(gate)
        return gate


# Until ``run``: requests start only while the actor runs, so nothing counts on it.
_NO_GATE: Final = StartGate()


class SessionActor:
    """One MCP session: the protocol core, its request actors, its peer and its listener."""

    # No instance dict: a resting session should cost little more than its state.
    __slots__ = (
        "_clock",
        "_closing",
        "_flights",
        "_idle",
        "_notified",
        "_nursery",
        "_outbox",
        "_overruled",
        "_roots",
        "_scopes",
        "_serving",
        "_starts",
        "_stream_signals",
        "changes",
        "core",
        "options",
        "peer",
        "server",
        "tasks",
    )

    def __init__(
        self,
        server: Server,
        outbox: Outbox | trio.MemorySendChannel[Outbound] | None,
        options: SessionOptions | None = None,
        *,
        stream_signals: bool = False,
        refuse_client_requests: str | None = None,
        principal_holder: PrincipalHolder | None = None,
        session_id: str | None = None,
    ) -> None:
        self.server = server
        self.options = options or SessionOptions()
        self.core = ServerSession(
            server_info=server.info,
            capabilities=self._capabilities,
            instructions=server.instructions,
            log_level=self.options.log_level,
        )
        # An owner that runs the actor in periods gives each ``run`` its own outbox; until
        # then anything sent fails as it would after the session ended.
        self._outbox: Outbox = Outbox.of(outbox) if outbox is not None else closed_outbox()
        self._nursery: trio.Nursery | None = None
        self._scopes: dict[RequestId, trio.CancelScope] = {}
        # What the live tree shows of each running request: since when, what, its Context.
        self._flights: dict[RequestId, tuple[float, Request, Context]] = {}
        # Requests cancelled by ``cancel_request``: answered with an error giving the reason.
        self._overruled: dict[RequestId, str] | None = None
        self._idle: trio.Event | None = None
        # Request actors not yet done (their reply may still be waiting for the outbox).
        self._serving = 0
        self._closing = False
        # Transports with per-request streams (HTTP) want to hear when a stream should be
        # cut or is over without a response.
        self._stream_signals = stream_signals
        #: what the session's handlers talk to (their Contexts' Peer)
        self.peer = peer = SessionPeer(
            self.core,
            self.options,
            self._outbox,
            session_id=session_id,
            stream_signals=stream_signals,
            refuse_client_requests=refuse_client_requests,
            principal_holder=principal_holder,
        )
        #: the session's tasks (2025-11-25): the peer's task table, run by ``run``
        self.tasks = peer.tasks
        #: the session's listener on its Server (in ``server.listeners`` once registered)
        self.changes = ChangeNotices(server, self.core, peer)
        self._roots = RootsHooks(server, self.core, peer)
        # The client's notifications an extension of the server receives.
        self._notified = NotificationHandlers(server, self.core, peer)
        # This trio run's counts of request actors, started and in flight (set by ``run``).
        self._starts = _NO_GATE
        # This trio run's clock (set by ``run``): asked twice per request.
        self._clock: trio.abc.Clock | None = None
        METRICS.session_opened()

    def _capabilities(self, revision: Revision) -> JSONObject:
        capabilities = self.server.capabilities(revision)
        if "tasks" in capabilities and not self.options.tasks.enabled:
            capabilities = {k: v for k, v in capabilities.items() if k != "tasks"}
        return capabilities

    @property
    def requests_in_flight(self) -> int:
        """How many of the client's requests are being served right now."""
        return len(self._scopes)

    def statistics(self) -> SessionStatistics:
        """Return how busy the session is right now."""
        from ._statistics import SessionStatistics

        peer = self.peer
        return SessionStatistics(
            self.core.phase, len(self._scopes), peer.awaiting_client, len(peer.subscriptions or ())
        )

    def resting(self) -> bool:
        """Return whether nothing is running: no request, task, hook or client request.

        Only then may an owner that runs the actor in periods let the period end.
        """
        return (
            not self._serving
            and not self.peer.awaiting_client
            and not self.changes.sending
            and not self._roots.running
            and not self._notified.running
            and not self.tasks.alive
        )

    def register(self) -> None:
        """Start hearing the Server's list changes and resource updates.

        ``run`` does this; an owner whose actor rests between periods calls it when the
        session starts, so that changes reach a resting session too. ``close`` undoes it.
        """
        self.changes.listen()

    def close(self) -> None:
        """End a session that is not running: forget the Server, close the core."""
        self.changes.close()
        if self.core.phase is not Phase.CLOSED:
            # An owner may close an actor whose run already did.
            METRICS.session_closed()
        self.core.close()

    # --- the actor ----------------------------------------------------------------

    async def run(
        self,
        inbox: trio.MemoryReceiveChannel[JSONValue | ProtocolError],
        *,
        outbox: Outbox | trio.MemorySendChannel[Outbound] | None = None,
        rest: Callable[[], bool] | None = None,
        task_status: trio.TaskStatus[SessionActor] = trio.TASK_STATUS_IGNORED,
    ) -> None:
        """Serve the session until its inbox closes (or it may rest), then stop.

        Without ``rest`` the end of the inbox ends the session: requests still running
        get ``shutdown_grace`` seconds. An owner that lets the session rest passes
        ``rest`` (and a fresh ``outbox`` for each run): asked whenever the actor has
        acted and finds its inbox empty with nothing running, and when the inbox closes;
        true ends this run at once and the session keeps its state for the next.
        """
        if outbox is not None:
            self._outbox = self.peer.outbox = Outbox.of(outbox)
        self._starts = current_start_gate()
        self._clock = trio.lowlevel.current_clock()
        self.register()
        final = True
        try:
            async with self._outbox, trio.open_nursery() as nursery:
                self._nursery = nursery
                self._outbox.attach(nursery)
                with self.tasks.running(nursery):
                    # Changes the Server announced while the actor was not running go now.
                    self.changes.send_in(nursery)
                    task_status.started(self)
                    final = not await self._take(inbox, rest)
                    if final:
                        await self._wind_down()
                        nursery.cancel_scope.cancel("the session ended")
                    else:
                        # From here on, changes wait for the next run.
                        self.changes.send_in(None)
                        self._nursery = None
        finally:
            self.changes.send_in(None)
            self._nursery = None
            self._outbox.attach(None)
            if outbox is not None:
                # The run's outbox goes with the run: a resting session holds none.
                self._outbox = self.peer.outbox = closed_outbox()
            if final:
                self.close()
            await self.peer.close_processes()

    async def _take(
        self,
        inbox: trio.MemoryReceiveChannel[JSONValue | ProtocolError],
        rest: Callable[[], bool] | None,
    ) -> bool:
        # Act on each message in turn until the inbox closes; return whether to rest.
        acted = False
        async with inbox:
            while True:
                try:
                    item = inbox.receive_nowait()
                    empty = False
                except trio.WouldBlock:
                    empty = True
                except trio.EndOfChannel:
                    break
                if empty:
                    # Waited for outside the ``except`` block: a task suspended inside one
                    # keeps the exception and its traceback alive, for every idle session.
                    # A running request rules a rest out without asking.
                    if (
                        acted
                        and rest is not None
                        and not self._serving
                        and self.resting()
                        and rest()
                    ):
                        return True
                    try:
                        item = await inbox.receive()
                    except trio.EndOfChannel:
                        break
                # A transport that knows when the message arrived sends (message, when).
                arrived = None
                if type(item) is tuple:
                    item, arrived = item
                for event in self.core.receive(item):
                    # ``type(x) is C`` narrows the type where an assert would cost a call.
                    if type(event) is Exchange:
                        await self._start_request(event, arrived)
                    elif type(event) is Send:
                        await self._outbox.send(
                            Outbound(RESPONSE, event.payload, event.request_id)
                        )
                    elif type(event) is RootsChanged:
                        self._roots.start(self._nursery)
                    else:
                        self._settle(event)
                acted = True
        return rest is not None and rest()

    async def _wind_down(self) -> None:
        self._closing = True
        self.peer.wind_down()
        if self._serving or self.tasks.alive:
            with trio.move_on_after(self.options.shutdown_grace):
                await self.wait_idle()
                await self.tasks.wait_idle()

    async def wait_idle(self) -> None:
        """Wait until no request actor is running (each has queued its reply)."""
        if not self._serving:
            await trio.lowlevel.checkpoint()
            return
        if self._idle is None:
            self._idle = trio.Event()
        await self._idle.wait()

    def _settle(self, event: Event) -> None:
        # The events the actor settles in its own step, starting nothing.
        kind = type(event)
        if kind is CancelRequested:
            assert isinstance(event, CancelRequested)
            scope = self._scopes.get(event.request_id)
            if scope is not None:
                scope.cancel(event.reason or "cancelled by the client")
        elif kind is ResponseReceived:
            assert isinstance(event, ResponseReceived)
            self.peer.answered(event.request_id, event.result)
        elif kind is ErrorReceived:
            assert isinstance(event, ErrorReceived)
            failure = event.error
            self.peer.failed(
                event.request_id, RequestError(failure.code, failure.message, failure.data)
            )
        elif kind is Initialized:
            # The client lists everything fresh after initializing: earlier changes are
            # old news.
            self.changes.forget()
        else:
            assert isinstance(event, NotificationReceived)
            self._notified.start(self._nursery, event.notification)

    # --- request actors -------------------------------------------------------------

    async def _start_request(self, exchange: Exchange, arrived: float | None = None) -> None:
        # Start the request's actor; or, when it cannot be served now, send the refusal.
        if len(self._scopes) >= self.options.max_in_flight or self._closing:
            if self._closing:
                why, data = "the session is shutting down", None
            else:
                limit = self.options.max_in_flight
                why, data = f"too many requests in flight (limit {limit})", {"limit": limit}
            reply = exchange.respond_error(INTERNAL_ERROR, f"server busy: {why}", data)
            if reply is not None:
                # Waits for room like every other reply: a full outbox is backpressure.
                await self._outbox.send(Outbound(RESPONSE, reply, exchange.request.id))
            return
        nursery = self._nursery
        assert nursery is not None  # requests are started only while the actor runs
        scope = trio.CancelScope()
        self._scopes[exchange.request.id] = scope
        self._serving += 1
        nursery.start_soon(self._serve_request, exchange, scope, arrived, name=_REQUEST_TASK_NAME)
        self._starts.spawned()

    async def _serve_request(
        self, exchange: Exchange, scope: trio.CancelScope, arrived: float | None
    ) -> None:
        # First, before anything can wait: an intake held back for this start goes on.
        self._starts.started()
        request = exchange.request
        negotiated = exchange.negotiated
        request_id = request.id
        params = request.params
        meta = params.get("_meta") if params is not None else None
        # By position: a class called with keywords costs twice as much.
        ctx = Context(
            self.peer,
            request_id,
            negotiated,
            meta if isinstance(meta, dict) else None,
            self.server,
        )
        # The run's clock (trio.current_time is three calls down to it). Its latency
        # counts from when the transport read it, when the transport says.
        clock = self._clock
        assert clock is not None  # requests are started only while the actor runs
        started = clock.current_time() if arrived is None else arrived
        self._flights[request_id] = (started, request, ctx)
        reply: JSONValue | None = None
        abandoned = False
        try:
            try:
                with scope:
                    server = self.server
                    answer = await handled(
                        server.handle_request,
                        ctx,
                        server.middleware,
                        scope,
                        request.method,
                        params,
                        request_id,
                        self.peer.session_id,
                        negotiated.revision.version,
                        clock,
                        started,
                    )
                    if type(answer) is dict:
                        reply = exchange.respond(answer)
                    else:
                        assert isinstance(answer, RequestError | ProtocolError)
                        reply = exchange.respond_error(answer.code, answer.message, answer.data)
                if scope.cancelled_caught:
                    reply = self._cancelled_reply(exchange)
                    abandoned = reply is None
            finally:
                del self._scopes[request_id]
                del self._flights[request_id]
            if reply is not None:
                # The request is over: its reply goes out from here when the outbox is
                # free, else queues (waiting while it is full, as backpressure).
                await self._outbox.send(Outbound(RESPONSE, reply, request_id))
            elif abandoned and self._stream_signals:
                await self._outbox.send(Outbound(SIGNAL, None, request_id, StreamSignal.ABANDONED))
        finally:
            # Idle only once the reply is queued: a full outbox must not let shutdown cut
            # off the answer of a handler that finished within the grace period.
            self._serving -= 1
            self._starts.ended()
            if not self._serving and self._idle is not None:
                self._idle.set()
                self._idle = None

    def cancel_request(self, request_id: RequestId, reason: str) -> bool:
        """Cancel a running request from the server's side; the client gets an error.

        The same scope ``notifications/cancelled`` cancels, but the client did not ask:
        it is answered with an error that gives ``reason``. False if no such request runs.
        """
        scope = self._scopes.get(request_id)
        if scope is None or scope.cancel_called:
            return False
        if self._overruled is None:
            self._overruled = {}
        self._overruled[request_id] = reason
        scope.cancel(reason)
        return True

    def _cancelled_reply(self, exchange: Exchange) -> JSONValue | None:
        # A client's cancel is not answered; the server's own cancel is.
        overruled = self._overruled
        reason = overruled.pop(exchange.request.id, None) if overruled else None
        if reason is None:
            return exchange.abandon()
        return exchange.respond_error(INTERNAL_ERROR, reason, {"cancelled": True})

    def view(self) -> SessionView:
        """What the session is serving at this instant, for the live tree."""
        from ._views import RequestView, SessionView

        requests = []
        for request_id, scope in self._scopes.items():
            flight = self._flights.get(request_id)
            if flight is None:
                # Opened in this very step, its actor not started yet.
                started, method, params, last = None, None, None, None
            else:
                started, request, ctx = flight
                method, params, last = request.method, request.params, ctx.last_progress
            progress, total, message = last if last is not None else (None, None, None)
            requests.append(
                RequestView(
                    request_id,
                    method,
                    params,
                    started,
                    progress,
                    scope.deadline,
                    scope.cancel_called,
                    total=total,
                    message=message,
                )
            )
        negotiated = self.core.negotiated
        return SessionView(
            requests=tuple(requests),
            revision=negotiated.revision.version if negotiated is not None else None,
            client_info=negotiated.client_info if negotiated is not None else None,
            server=self.server,
            tasks=self.tasks,
            processes=self.peer.processes,
        )
