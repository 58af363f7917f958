# The Session actor and its Request actors.
#
# One ``SessionActor`` owns one ``ServerSession`` (the sans-io core) and a nursery. It
# takes decoded messages, feeds them to the core and acts on the events: each request
# the client sends runs as a Request actor (``_serve_request``) inside its own
# CancelScope, registered by id so that ``notifications/cancelled`` is just
# ``scope.cancel()``. Everything the session sends is built by the core and goes through
# one bounded outbox as typed ``Outbound`` items (_messages.py); the transport's single
# writer drains it. The actor is also the handlers' ``Peer`` (_peer.py) and the Server's
# change listener (_changes.py); this module is the loop and the request actors.
#
# Intake: messages come in one way. A transport with a reader task of its own (stdio,
# the in-memory connection) queues them on the inbox that ``run`` reads. An owner whose
# callers already run in tasks of their own (HTTP handlers) hands each message to
# ``receive``, which acts on it in the caller's task when the actor can — running and
# idle, so nothing queued earlier is overtaken — and otherwise says to queue it: that
# shortcut is ``run``'s own step, taken early. While the actor is not running,
# ``receive`` settles what the core answers alone and hands back what needs a run.
#
# Shutdown: when the inbox closes (EOF, signal, HTTP session ended) the actor stops
# reading, fails requests still waiting on the client, gives running handlers
# ``shutdown_grace`` seconds, then cancels them. Nothing it started outlives ``run``.
#
# Rest (HTTP sessions hibernate): an owner may run the actor in periods. While it is not
# running the object keeps only state — the core, subscriptions, pending change notices,
# task records — and ``receive`` feeds the core directly: what the core answers alone
# (initialize, ping, logging/setLevel, notifications) is settled there and then, without
# a task; anything that needs a running actor (a request to serve, roots hooks) comes
# back as a backlog for the next ``run``. A period ends as a rest when the owner closes
# the inbox while ``resting()`` and its ``rest`` callback agrees; only the final end
# closes the core. Change notices from the Server that arrive while the actor rests are
# kept (coalesced) and sent when it next runs.
#
# Lent (stateless HTTP): ``serve_in`` runs the actor without a task of its own: its
# requests start in the owner's nursery, and ``receive`` always takes the shortcut.

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from typing import Final

import attrs
import trio

from .._exceptions import INTERNAL_ERROR, ProtocolError, RequestError
from ..protocol import (
    Body,
    CancelRequested,
    ErrorReceived,
    Event,
    Initialized,
    JSONObject,
    JSONValue,
    Negotiated,
    NotificationReceived,
    Phase,
    Request,
    RequestId,
    RequestReceived,
    ResourceSubscriptions,
    ResponseReceived,
    Revision,
    RootsChanged,
    Send,
    ServerSession,
    describe,
)
from ..server import Context, Server
from ._changes import ChangeNotices
from ._messages import (
    RESPONSE,
    SIGNAL,
    Outbound,
    Outbox,
    SessionOptions,
    SessionStatistics,
    StreamSignal,
    closed_outbox,
)
from ._metrics import METRICS
from ._offload import ProcessPool
from ._peer import PrincipalHolder, _Pending
from ._request import handled
from ._roots import RootsHooks
from ._starts import StartGate, current_start_gate
from ._views import RequestView, SessionView
from .tasks import TaskManager

__all__ = ["Received", "SessionActor"]

_log = logging.getLogger("mcpactor")

# Given, so that trio does not format one from the function for every request.
_REQUEST_TASK_NAME: Final = "mcpactor.request"

# Until ``run``: requests start only while the actor runs, so nothing counts on it.
_NO_GATE: Final = StartGate()


@attrs.frozen(slots=True)
class Received:
    """What ``SessionActor.receive`` did with a message."""

    #: False: the actor is mid-message; queue the message on the inbox
    taken: bool
    #: what the core answered alone (or refused), for the caller to send, in order
    replies: tuple[Outbound, ...] = ()
    #: at rest: events that need a running actor, for the next ``run``
    backlog: tuple[Event, ...] = ()


# The common answers, made once: the shortcut allocates nothing.
_TAKEN: Final = Received(True)
_QUEUED: Final = Received(False)


class SessionActor(ChangeNotices):
    """One MCP session: the protocol core, its request actors, and the handlers' peer."""

    def __init__(
        self,
        server: Server,
        outbox: Outbox | trio.MemorySendChannel[Outbound] | None,
        options: SessionOptions | None = None,
        *,
        stream_signals: bool = False,
        refuse_client_requests: str | None = None,
        principal_holder: PrincipalHolder | None = None,
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
        self._pending: dict[RequestId, _Pending] = {}
        # Made on first use: most sessions never subscribe, and a resting session should
        # cost little more than its protocol state.
        self._subscriptions: ResourceSubscriptions | None = None
        self._changed_lists: set[str] | None = None
        self._updated: set[str] | None = None
        self._changes_queued = False
        self._idle: trio.Event | None = None
        # Request actors not yet done (their reply may still be waiting for the outbox).
        self._serving = 0
        # Change notices running in the nursery (the roots hooks: ``_roots``).
        self._helpers = 0
        self._roots = RootsHooks(server, self.core, self)
        self._closing = False
        # The actor task is acting on a message (it may be waiting for outbox room).
        self._acting = False
        self._token: trio.lowlevel.TrioToken | None = None
        # Transports with per-request streams (HTTP) want to hear when a stream should be
        # cut or is over without a response; a transport that cannot carry server→client
        # requests (stateless HTTP) names why, and they fail at once instead of timing out.
        self._stream_signals = stream_signals
        self._refuse_client_requests = refuse_client_requests
        # Read on every ``ctx.principal``, never copied: the transport refreshes it as the
        # client's tokens are renewed.
        self._principal_holder = principal_holder
        self.share_subscriptions = None
        #: the session's tasks (2025-11-25): the Peer's task host
        self.tasks = TaskManager(self, self.options.tasks)
        # The session's own worker processes (without a shared pool), made on first use
        # and closed whenever the actor stops running.
        self._processes: ProcessPool | None = None
        # This trio run's counts of request actors, started and in flight (set by ``run``).
        self._starts = _NO_GATE
        # What an actor without a task of its own (``serve_in``) does when one fails.
        self._on_failure: Callable[[], None] | None = None
        #: the transport's id of the session (HTTP's Mcp-Session-Id), for traces and logs
        self.session_id: str | None = None
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
        return SessionStatistics(
            phase=self.core.phase,
            requests_in_flight=len(self._scopes),
            client_requests_pending=len(self._pending),
            subscriptions=len(self._subscriptions) if self._subscriptions else 0,
        )

    def resting(self) -> bool:
        """Return whether nothing is running: no request, task, hook or client request.

        Only then may an owner that runs the actor in periods let the period end.
        """
        return (
            not self._serving
            and not self._pending
            and not self._helpers
            and not self._roots.running
            and not self.tasks.statistics().running
        )

    def register(self) -> None:
        """Start hearing the Server's list changes and resource updates.

        ``run`` does this; an owner whose actor rests between periods calls it when the
        session starts, so that changes reach a resting session too. ``close`` undoes it.
        """
        self._token = trio.lowlevel.current_trio_token()
        self.server.listeners.add(self)

    def close(self) -> None:
        """End a session that is not running: forget the Server, close the core."""
        self.server.listeners.discard(self)
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
        backlog: Iterable[Event] = (),
        rest: Callable[[], bool] | None = None,
        task_status: trio.TaskStatus[SessionActor] = trio.TASK_STATUS_IGNORED,
    ) -> None:
        """Serve the session until its inbox closes, then shut down gracefully.

        An owner that lets the session rest between periods passes ``rest``, and for each
        period a fresh ``outbox`` and the ``backlog`` that ``receive`` at rest left. When
        the inbox closes and ``rest()`` is true, the period ends at once and the session
        keeps its state for the next ``run``; the owner closes the inbox for a rest only
        while ``resting()``. Otherwise the session ends as without ``rest``.
        """
        if outbox is not None:
            self._outbox = Outbox.of(outbox)
        self._starts = current_start_gate()
        self.register()
        final = True
        try:
            async with self._outbox, self.tasks.running(), trio.open_nursery() as nursery:
                self._nursery = nursery
                # Changes the Server announced while the actor was not running.
                self._schedule_changes()
                task_status.started(self)
                self._acting = True
                try:
                    await self._act(backlog)
                finally:
                    self._acting = False
                async with inbox:
                    while True:
                        # What is queued is taken without a trip through the scheduler,
                        # so the inbox is empty whenever the actor is not acting: a
                        # ``receive`` that found a message would yield with it in hand,
                        # and ``receive`` could then act on a later one first.
                        try:
                            item = inbox.receive_nowait()
                        except trio.WouldBlock:
                            try:
                                item = await inbox.receive()
                            except trio.EndOfChannel:
                                break
                        except trio.EndOfChannel:
                            break
                        await self._receive(item)
                final = rest is None or not rest()
                if final:
                    await self._wind_down()
                    nursery.cancel_scope.cancel("the session ended")
                else:
                    # From here on, changes wait for the next period.
                    self._nursery = None
        finally:
            self._nursery = None
            if final:
                self.close()
            await self.close_processes()

    def serve_in(
        self, nursery: trio.Nursery, outbox: Outbox, *, on_failure: Callable[[], None]
    ) -> None:
        """Serve without a task of the actor's own: requests start in ``nursery``.

        For an owner whose session lasts one exchange (stateless HTTP): it hands every
        message to ``receive``, which always takes the shortcut here, what the session sends
        goes to ``outbox``, and ``retire`` ends it. A request actor that fails calls
        ``on_failure`` instead of failing the nursery it borrowed. Nothing is registered
        with the Server: such a session has nobody to tell about changes.
        """
        self._outbox = outbox
        self._starts = current_start_gate()
        self._nursery = nursery
        self._on_failure = on_failure

    def retire(self, grace: float) -> bool:
        """Take no more requests; cancel those still running after ``grace`` seconds.

        For an actor that ``serve_in`` started. Returns whether nothing is running (the
        owner may close it now); otherwise ``wait_idle`` tells when it may.
        """
        self._closing = True
        if not self._serving:
            return True
        deadline = trio.current_time() + grace
        for scope in self._scopes.values():
            scope.deadline = min(scope.deadline, deadline)
        return False

    @property
    def has_processes(self) -> bool:
        """Whether the session started worker processes of its own (``close_processes``)."""
        return self._processes is not None

    async def close_processes(self) -> None:
        """Stop the session's own worker processes, if it started any."""
        processes, self._processes = self._processes, None
        if processes is not None:
            await processes.aclose()

    async def _wind_down(self) -> None:
        self._closing = True
        for request_id in list(self._pending):
            self._fail_pending(
                request_id, RequestError(INTERNAL_ERROR, "the client went away before answering")
            )
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

    def expect_run(self) -> None:
        """Say that a ``run`` is on its way: messages from now on queue on its inbox.

        An owner that wakes a resting actor calls this when it decides to, before the
        task that runs it starts, so that what arrives meanwhile waits behind the backlog
        instead of being taken at rest.
        """
        self._acting = True

    def receive(self, item: JSONValue | Body) -> Received:
        """Take one message from the client: the one way in, besides the inbox of ``run``.

        What it does depends on where the actor is, and it never waits:

        - acting on an earlier message (or about to run, ``expect_run``): nothing; the
          caller queues the message on the inbox, and the actor's task takes it from
          there the same way, in order (``Received.taken`` is False);
        - running and idle — the shortcut: the actor has taken everything from its inbox,
          so acting now overtakes nothing: the core takes the message in the caller's
          task, its requests start in the actor's nursery, and what the core answers
          (and refusals) come back as ``replies`` for the caller to send, in order, on
          the actor's outbox;
        - at rest (not running): what the core answers alone is settled now and comes
          back as ``replies`` to send; if anything needs a running actor (a request to
          serve, roots hooks to run), nothing is sent and every event, in order, comes
          back as the ``backlog`` to start the next ``run`` with.
        """
        if self._acting:
            # Mid-message, the actor may not have opened that message's requests yet: a
            # notifications/cancelled acted on now could miss the scope it cancels.
            return _QUEUED
        events = self.core.receive(item)
        if self._nursery is None:
            return self._settle_at_rest(events)
        replies = None
        for event in events:
            kind = type(event)
            if kind is RequestReceived:
                assert isinstance(event, RequestReceived)
                refusal = self._open_request(event.request, event.negotiated)
                if refusal is not None:
                    replies = [*(replies or ()), refusal]
            elif kind is Send:
                assert isinstance(event, Send)
                reply = Outbound(RESPONSE, event.payload, event.request_id)
                replies = [*(replies or ()), reply]
            elif kind is RootsChanged:
                self._roots.start(self._nursery)
            else:
                self._settle(event)
        return Received(True, tuple(replies)) if replies else _TAKEN

    def _settle_at_rest(self, events: list[Event]) -> Received:
        for event in events:
            kind = type(event)
            if kind is RequestReceived or (
                kind is RootsChanged and self.server.roots_changed_hooks
            ):
                return Received(True, (), tuple(events))
        replies = []
        for event in events:
            if type(event) is Send:
                assert isinstance(event, Send)
                replies.append(Outbound(RESPONSE, event.payload, event.request_id))
            elif type(event) is not RootsChanged:
                self._settle(event)
        return Received(True, tuple(replies)) if replies else _TAKEN

    async def _receive(self, item: JSONValue | Body) -> None:
        # A message from the inbox: what ``receive`` does while running, but waiting for
        # room in the outbox (backpressure reaches the inbox's sender).
        self._acting = True
        try:
            await self._act(self.core.receive(item))
        finally:
            self._acting = False

    async def _act(self, events: Iterable[Event]) -> None:
        for event in events:
            kind = type(event)
            if kind is RequestReceived:
                assert isinstance(event, RequestReceived)
                await self._start_request(event.request, event.negotiated)
            elif kind is Send:
                assert isinstance(event, Send)
                await self._outbox.send(Outbound(RESPONSE, event.payload, event.request_id))
            elif kind is RootsChanged:
                self._roots.start(self._nursery)
            else:
                self._settle(event)

    def _settle(self, event: Event) -> None:
        # The events that need no task: running or at rest alike.
        kind = type(event)
        if kind is CancelRequested:
            assert isinstance(event, CancelRequested)
            scope = self._scopes.get(event.request_id)
            if scope is not None:
                scope.cancel(event.reason or "cancelled by the client")
        elif kind is ResponseReceived:
            assert isinstance(event, ResponseReceived)
            self._resolve(event.request_id, event.result)
        elif kind is ErrorReceived:
            assert isinstance(event, ErrorReceived)
            failure = event.error
            self._fail_pending(
                event.request_id, RequestError(failure.code, failure.message, failure.data)
            )
        elif kind is Initialized:
            # The client lists everything fresh after initializing: earlier changes are
            # old news.
            self._changed_lists = None
            self._updated = None
        else:
            assert isinstance(event, NotificationReceived)
            _log.debug("ignored notification %s", describe(event.notification.method))

    # --- request actors -------------------------------------------------------------

    async def _start_request(self, request: Request, negotiated: Negotiated) -> None:
        refusal = self._open_request(request, negotiated)
        if refusal is not None:
            # Wait for room like every other reply: a full outbox is backpressure.
            await self._outbox.send(refusal)

    def _open_request(self, request: Request, negotiated: Negotiated) -> Outbound | None:
        # Start the request's actor; or, when it cannot be served now, the refusal to send.
        if len(self._scopes) >= self.options.max_in_flight or self._closing:
            if self._closing:
                why, data = "the session is shutting down", None
            else:
                limit = self.options.max_in_flight
                why, data = f"too many requests in flight (limit {limit})", {"limit": limit}
            reply = self.core.respond_error(
                request.id, INTERNAL_ERROR, f"server busy: {why}", data
            )
            return Outbound(RESPONSE, reply, request.id) if reply is not None else None
        nursery = self._nursery
        assert nursery is not None  # requests are started only while the actor runs
        scope = trio.CancelScope()
        self._scopes[request.id] = scope
        self._serving += 1
        serve = self._serve_request if self._on_failure is None else self._serve_contained
        nursery.start_soon(serve, request, negotiated, scope, name=_REQUEST_TASK_NAME)
        self._starts.spawned()
        return None

    async def _serve_request(
        self, request: Request, negotiated: Negotiated, scope: trio.CancelScope
    ) -> None:
        # First, before anything can wait: an intake held back for this start goes on.
        self._starts.started()
        request_id = request.id
        params = request.params
        meta = params.get("_meta") if params is not None else None
        # By position: a class called with keywords costs twice as much.
        ctx = Context(
            self, request_id, negotiated, meta if isinstance(meta, dict) else None, self.server
        )
        # The run's clock, asked once for both (trio.current_time is three calls down).
        clock = trio.lowlevel.current_clock()
        started = clock.current_time()
        self._flights[request_id] = (started, request, ctx)
        reply: JSONValue | None = None
        abandoned = False
        try:
            try:
                with scope:
                    answer = await handled(
                        self.server.handle_request(request.method, params, ctx),
                        request.method,
                        params,
                        request_id,
                        self.session_id,
                        negotiated.revision.version,
                        clock,
                        started,
                    )
                    if type(answer) is dict:
                        reply = self.core.respond(request_id, answer)
                    else:
                        assert isinstance(answer, RequestError | ProtocolError)
                        reply = self.core.respond_error(
                            request_id, answer.code, answer.message, answer.data
                        )
                if scope.cancelled_caught:
                    reply = self._cancelled_reply(request_id)
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

    def _cancelled_reply(self, request_id: RequestId) -> JSONValue | None:
        # A client's cancel is not answered; the server's own cancel is.
        overruled = self._overruled
        reason = overruled.pop(request_id, None) if overruled else None
        if reason is None:
            return self.core.abandon(request_id)
        return self.core.respond_error(request_id, INTERNAL_ERROR, reason, {"cancelled": True})

    async def _serve_contained(
        self, request: Request, negotiated: Negotiated, scope: trio.CancelScope
    ) -> None:
        # In a borrowed nursery, a failure would end everything else in it (invariant 3):
        # the owner ends this session instead, as a failing actor task ends its own.
        try:
            await self._serve_request(request, negotiated, scope)
        except Exception:
            _log.exception("serving request %s failed; the session ends", describe(request.id))
            assert self._on_failure is not None
            self._on_failure()

    def view(self) -> SessionView:
        """What the session is serving at this instant, for the live tree."""
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
            deadline, cancelled = scope.deadline, scope.cancel_called
            requests.append(
                RequestView(
                    request_id,
                    method,
                    params,
                    started,
                    progress,
                    deadline,
                    cancelled,
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
            processes=self._processes,
        )
