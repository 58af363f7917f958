# Stateless requests (revisions without sessions): the Request actor and its host.
#
# At such a revision (2026-07-28) a request is served under its own envelope, not a
# session: ``read_envelope`` gives the ``Envelope`` its Context is negotiated with, and
# ``serve_stateless`` (server layer) does the rest. What the runtime adds is the actor:
# the request runs in a CancelScope owned by whoever hands it over — the HTTP handler's
# task (its connection's tree) or the stdio host's nursery — so nothing outlives it;
# notifications made while it runs (progress, log messages) go to ``emit``, which the
# transport ties to the request's own stream; the answer is returned as the complete
# JSON-RPC message, an error keeping the request's id. Cancelling the scope (the
# response stream closed, or ``notifications/cancelled`` on stdio) ends the handler and
# nothing more is sent for it.
#
# ``subscriptions/listen`` is an actor of the same kind (``_listen``): the
# acknowledgement first, then the bus's events the subscription honours, tagged with
# its id, a keep-alive between them when the transport asks for one, and the closing
# result when the host stops (graceful shutdown). The subscriber leaving is the scope
# being cancelled: the listener is detached and the actor is gone.
#
# One ``StatelessHost`` serves a process (a transport's app): it holds the server, the
# sealer of multi round-trip states, the change bus and its feed from the Server, the
# task host, and the in-flight limit shared by every stateless request it serves.

from __future__ import annotations

import logging
import time
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, Final

import attrs
import trio

# The 2026-07-28 serving of the server layer (``serving.serve_stateless``, ...), the
# tasks extension's names and the sealer's keys are read through their packages, so
# they load with the first stateless request, not with every host a stdio session makes.
from .. import protocol
from .. import server as serving
from .._exceptions import (
    INTERNAL_ERROR,
    METHOD_NOT_FOUND,
    ProtocolError,
    RequestError,
)
from ..protocol import (
    PROTOCOL_VERSION,
    REVISIONS,
    STATELESS_REVISIONS,
    EnvelopeError,
    Exchange,
    JSONObject,
    Notification,
    Request,
    RequestId,
    Revision,
    describe,
    error_message,
    plain_complete,
    result_message,
)
from ..server import Context, InputNeeded, Server
from ._bus import BusFeed, ChangeBus, ChangeEvent, InMemoryBus
from ._chain import notified
from ._flight import Emit, Flight
from ._messages import SessionOptions
from ._notified import MAX_RUNNING
from ._offload import ProcessPool
from ._request import handled

if TYPE_CHECKING:
    # Built where a view is asked for (the admin page): not on a server's start.
    from ..protocol import Envelope, StateSealer, Subscription
    from ._statistics import StatelessStatistics
    from ._views import HostView

__all__ = [
    "LISTEN",
    "Done",
    "Emit",
    "Flight",
    "StatelessHost",
    "StatelessOptions",
    "random_sealer",
]


_log = logging.getLogger("mcpactor")
# No task ids: one empty set for every listen stream that names none.
_NO_TASKS: Final[frozenset[str]] = frozenset()

LISTEN: Final = "subscriptions/listen"

#: what hears a request's end: its id and answer (None: cancelled); returns what to
#: await, if anything, before the request is over (room for the answer)
Done = Callable[[RequestId, JSONObject | None], Awaitable[None] | None]


def random_sealer() -> StateSealer:
    """A sealer with a key made for this process only: retries must come back here."""
    from ..protocol import KeyRing, SealingKey, StateSealer

    return StateSealer(KeyRing.of(SealingKey.generate("local")))


@attrs.frozen
class StatelessOptions:
    """How a process serves the requests of stateless revisions."""

    #: seals the ``requestState`` of multi round-trip requests (None: a key made for
    #: this process, so a retry must come back to it)
    sealer: StateSealer | None = None
    #: stateless requests served at once by the process; more are refused (-32603)
    max_in_flight: int = 1024
    #: seconds between keep-alive comments on an idle HTTP listen stream (None: none)
    keepalive: float | None = 15.0


class StatelessHost:
    """Serves a process's stateless requests: one Request actor per request."""

    def __init__(
        self,
        server: Server,
        *,
        options: StatelessOptions | None = None,
        session_options: SessionOptions | None = None,
        bus: ChangeBus | None = None,
        tasks: Any = None,
    ) -> None:
        self.server = server
        self.options = options = options or StatelessOptions()
        self.session_options = session_options or SessionOptions()
        if options.sealer is None:
            _log.info(
                "no state key configured: multi round-trip requests are sealed with a "
                "key of this process, so their retries must return to this process"
            )
        self._sealer = options.sealer
        #: where the Server's changes reach listen streams
        self.bus: ChangeBus = bus if bus is not None else InMemoryBus()
        #: the task host of the tasks extension, passed on to serve_stateless
        self.tasks = tasks
        self._feed = BusFeed(self.bus)
        self._in_flight = 0
        self._max_in_flight = options.max_in_flight
        self._listening = 0
        #: whether ``stop`` was called (read for every request: an attribute)
        self.stopping = False
        # The waits of open listen streams, cancelled to end them gracefully.
        self._waits: set[trio.CancelScope] = set()
        self._processes: ProcessPool | None = None
        self._attached = False
        #: the requests being served, by a key of this host's (the live tree reads them)
        self.flights: dict[int, Flight] = {}
        self._next_flight = 0
        # The methods served by the handler alone at the revision last served (one
        # revision, in practice): (revision, direct_methods(revision)).
        self._direct: tuple[Revision | None, frozenset[str]] = (None, frozenset())
        # The last envelope read, with (a copy of) the _meta it was read from.
        self._last_envelope: tuple[JSONObject, Envelope] | None = None
        # Handlers of the client's extension notifications running now.
        self._notified = 0

    @property
    def sealer(self) -> StateSealer:
        """Seals and opens the states of multi round-trip requests (made on first use)."""
        sealer = self._sealer
        if sealer is None:
            sealer = self._sealer = random_sealer()
        return sealer

    def statistics(self) -> StatelessStatistics:
        """Return how busy the host is right now."""
        from ._statistics import StatelessStatistics

        return StatelessStatistics(self._in_flight, self._listening)

    def attach(self) -> None:
        """Start publishing the Server's change notices on the bus (in the event loop)."""
        if not self._attached:
            self._feed.attach()
            self.server.listeners.add(self._feed)
            self._attached = True

    def open_tasks(self, nursery: trio.Nursery) -> None:
        """Serve the tasks extension with a task table whose actors live in ``nursery``.

        Nothing changes if the host was given a task host of its own. The owner cancels
        ``nursery`` once the requests are over: that ends every task.
        """
        if self.tasks is None:
            from .tasks import TaskRegistry

            self.tasks = TaskRegistry(nursery, bus=self.bus, options=self.session_options.tasks)

    def stop(self) -> None:
        """End every listen stream with its closing result; refuse new requests."""
        self.stopping = True
        for scope in list(self._waits):
            scope.cancel("the server is shutting down")

    async def aclose(self) -> None:
        """Detach from the Server and stop the host's worker processes, if any."""
        self.stop()
        if self._attached:
            self.server.listeners.discard(self._feed)
            self._attached = False
        processes, self._processes = self._processes, None
        if processes is not None:
            with trio.CancelScope(shield=True):
                await processes.aclose()

    # --- one request --------------------------------------------------------------

    def envelope(self, request: Request) -> Envelope:
        """Read ``request``'s envelope; EnvelopeError (with its HTTP status) if refused."""
        # A client sends the same envelope on every request: one equal to the last one
        # read is that Envelope again. Another is read, checked, and kept with a copy of
        # what it was read from (a handler may change its request's _meta, not the copy).
        params = request.params
        meta = params.get("_meta") if params is not None else None
        last = self._last_envelope
        if last is not None and meta == last[0]:
            return last[1]
        envelope = protocol.read_envelope(request)
        if type(meta) is dict:
            self._last_envelope = (dict(meta), envelope)
        return envelope

    async def notified(
        self, notification: Notification, emit: Emit, principal: object = None
    ) -> None:
        """Run the handler of a client's notification that an extension receives.

        Read under its envelope if it carries one, as a request is (else at the newest
        stateless revision, the client's capabilities unknown); what its handler sends
        goes to ``emit``. A notification no extension receives, with a refused envelope,
        or past ``MAX_RUNNING`` running at once, is dropped (nothing answers it).
        """
        method = notification.method
        params = notification.params or {}
        server = self.server
        if server.extensions.receiver(method) is None and server.middleware.first is None:
            _log.debug("ignored notification %s", describe(method))
            return
        if self._notified >= MAX_RUNNING:
            _log.warning("dropped notification %s: too many running", describe(method))
            return
        carrier = Request(0, method, params)
        meta = params.get("_meta")
        if type(meta) is dict and PROTOCOL_VERSION in meta:
            # Read as a request of no id would be: the envelope is the same.
            try:
                envelope = self.envelope(carrier)
            except EnvelopeError as exc:
                _log.warning("dropped notification %s: %s", describe(method), exc.message)
                return
        else:
            # The revision asks requests, not notifications, to carry an envelope: one
            # without says nothing of the client.
            envelope = protocol.Envelope(REVISIONS[STATELESS_REVISIONS[-1]])
        flight = Flight(self, carrier, emit, principal, None, trio.current_time())
        ctx = Context(flight, None, envelope, meta if type(meta) is dict else None, self.server)
        self._notified += 1
        try:
            await notified(self.server, method, params, ctx)
        finally:
            self._notified -= 1

    async def serve(
        self,
        request: Request,
        emit: Emit,
        envelope: Envelope | None = None,
        principal: object = None,
        keepalive: Callable[[], Awaitable[None]] | None = None,
        scope: trio.CancelScope | None = None,
        admitted: bool = False,
        done: Done | None = None,
        arrived: float | None = None,
    ) -> JSONObject | None:
        """Serve ``request`` in ``scope`` and return its JSON-RPC answer (None: cancelled).

        ``scope`` is the caller's, not yet entered (a fresh one if None): cancelling it
        ends the handler and nothing more is sent for the request; the live tree's
        cancel action cancels it too. ``admitted``: the transport took the request
        before ``stop`` (a pipe's line read before its input ended), so it is served in
        the grace period, not refused. ``done`` hears the request's end with its answer
        (None if cancelled) before ``serve`` returns; what it returns, if anything, is
        awaited (room for the answer). So a transport that spawns a task per request
        runs ``serve`` as that task, with nothing between its handler and the scheduler.
        ``arrived``: when the transport read the request (trio's clock); its latency
        counts from then (from here if None).
        """
        request_id = request.id
        try:
            if envelope is None:
                envelope = self.envelope(request)
        except EnvelopeError as exc:
            refusal = _error(request_id, exc.code, exc.message, exc.data)
            return await _handed(done, request_id, refusal)
        if (self.stopping and not admitted) or self._in_flight >= self._max_in_flight:
            return await _handed(done, request_id, self._busy(request_id, admitted))
        if scope is None:
            scope = trio.CancelScope()
        # The run's clock, asked twice (trio.current_time is three calls down to it).
        clock = trio.lowlevel.current_clock()
        # What the live tree shows of the request, and the scope its cancel action uses.
        started = clock.current_time() if arrived is None else arrived
        flight = Flight(self, request, emit, principal, scope, started)
        key = self._next_flight
        self._next_flight = key + 1
        self.flights[key] = flight
        self._in_flight += 1
        answer: JSONObject | None = None
        waiting = None
        try:
            with scope:
                answer = await self._answer(flight, envelope, principal, keepalive, clock)
        finally:
            del self.flights[key]
            self._in_flight -= 1
            if done is not None:
                waiting = done(request_id, answer)
        if waiting is not None:
            await waiting
        return answer

    async def _answer(
        self,
        flight: Flight,
        envelope: Envelope,
        principal: object,
        keepalive: Callable[[], Awaitable[None]] | None,
        clock: trio.abc.Clock,
    ) -> JSONObject:
        # What the request is answered with: a listen stream's closing result, or its
        # handler's result (the error it ended with) as the JSON-RPC message.
        request = flight.served
        request_id, method, params = request.id, request.method, request.params
        if method == LISTEN:
            return await self._listen(request, envelope, flight.emit, keepalive, principal)
        meta = params.get("_meta") if params is not None else None
        # By position: a class called with keywords costs twice as much.
        ctx = Context(
            flight, request_id, envelope, meta if type(meta) is dict else None, self.server
        )
        result = await handled(
            flight.step,
            ctx,
            self.server.middleware,
            flight.scope,
            method,
            params,
            request_id,
            None,
            envelope.revision.version,
            clock,
            flight.started,
            principal,
        )
        # The request's exchange builds its answer, as a session's does; no session
        # counts it, so what it builds is the message itself.
        exchange = Exchange(request, envelope)
        if type(result) is dict:
            answer = exchange.respond(result)
        else:
            assert isinstance(result, RequestError | ProtocolError)
            answer = exchange.respond_error(result.code, result.message, result.data)
        return answer  # type: ignore[return-value]

    async def call(
        self,
        method: str,
        params: JSONObject | None,
        ctx: Context,
        envelope: Envelope,
        principal: object,
    ) -> JSONObject:
        """Serve a request other than subscriptions/listen: its result, as sent."""
        # The handler of a request other than subscriptions/listen, and its result shaped
        # for the revision. Most requests are the handler's alone (direct_methods), the
        # rest route_stateless's to decide: a retry's round, and a call that may become
        # a task (the server's answer, cached until its tools change).
        revision = envelope.revision
        direct = self._direct
        if direct[0] is not revision:
            direct = self._direct = (revision, serving.direct_methods(revision))
        server = self.server
        if (
            method not in direct[1]
            or (
                params is not None
                and (
                    params.get("requestState") is not None
                    or params.get("inputResponses") is not None
                )
            )
            or (
                self.tasks is not None
                and method in protocol.AUGMENTABLE
                and (server._mounts is not None or server._registry.offers_tasks())
            )
        ):
            # Discovery, cache hints and the tasks extension, then the handler and the
            # shaping.
            return await serving.serve_stateless(
                server,
                method,
                params,
                ctx,
                sealer=self.sealer,
                now=time.time(),
                principal=_principal(principal),
                tasks=self.tasks,
            )
        try:
            result = await server.handle_request(method, params, ctx)
        except InputNeeded as exc:
            asked = self._asked(exc, method, params, ctx, principal)
            return serving.finish_stateless(server, method, params, ctx, asked)
        # A plain result's shaping inline: a resultType and the serverInfo.
        if "resultType" not in result and "_meta" not in result:
            return plain_complete(result, server.info(revision))
        return serving.finish_stateless(server, method, params, ctx, result)

    def _busy(self, request_id: RequestId, admitted: bool) -> JSONObject:
        # Why a request is refused before it is served.
        if self.stopping and not admitted:
            return _error(request_id, INTERNAL_ERROR, "server busy: the server is shutting down")
        limit = self._max_in_flight
        why = f"server busy: too many requests in flight (limit {limit})"
        return _error(request_id, INTERNAL_ERROR, why, {"limit": limit})

    def _asked(
        self,
        needed: InputNeeded,
        method: str,
        params: JSONObject | None,
        ctx: Context,
        principal: object,
    ) -> JSONObject:
        # A handler's first question, as the input_required result that asks it.
        return serving.ask_in_result(
            needed,
            method,
            params,
            ctx,
            sealer=self.sealer,
            now=time.time(),
            principal=_principal(principal),
        )

    # --- listen streams -----------------------------------------------------------

    async def _listen(
        self,
        request: Request,
        envelope: Envelope,
        emit: Emit,
        keepalive: Callable[[], Awaitable[None]] | None,
        principal: object,
    ) -> JSONObject:
        # Read with the first listen stream: a process that never serves one never does.
        from ..protocol import LISTEN_FILTER_KEY, Subscription, read_filter, read_listen_task_ids

        request_id = request.id
        revision = envelope.revision
        if not revision.listen:
            return _error(
                request_id, METHOD_NOT_FOUND, f"{LISTEN} is not a method of this revision"
            )
        try:
            wanted = read_filter(request.params, request_id=request_id)
            notifications = (request.params or {}).get("notifications")
            task_ids = (
                read_listen_task_ids(notifications, envelope, request_id=request_id)
                if type(notifications) is dict
                else None
            )
        except EnvelopeError as exc:
            return _error(request_id, exc.code, exc.message, exc.data)
        subscription = Subscription.open(request_id, wanted, self.server.capabilities(revision))
        # Task ids are honoured where the task host knows them (as the caller's).
        tasks = self._known_tasks(task_ids, principal)
        acknowledgement = subscription.acknowledgement()
        if task_ids is not None:
            acknowledgement["params"]["notifications"][LISTEN_FILTER_KEY] = sorted(tasks)
        interval = self.options.keepalive if keepalive is not None else None
        self._listening += 1
        try:
            with self.bus.listen() as listener:
                await emit(acknowledgement)
                # Sent: neither it nor the filter asked for is kept while the stream is.
                del acknowledgement, wanted
                while not self.stopping:
                    with trio.CancelScope() as waiting:
                        if interval is not None:
                            waiting.deadline = trio.current_time() + interval
                        self._waits.add(waiting)
                        try:
                            event = await listener.next()
                        finally:
                            self._waits.discard(waiting)
                    if waiting.cancelled_caught:
                        if not self.stopping and keepalive is not None:
                            await keepalive()
                        continue
                    message = _notice(subscription, tasks, event)
                    if message is not None:
                        await emit(message)
        finally:
            self._listening -= 1
        result = subscription.closing_result(self.server.info(revision))
        return result_message(request_id, result)

    def _known_tasks(self, task_ids: tuple[str, ...] | None, principal: object) -> frozenset[str]:
        known = getattr(self.tasks, "known", None)
        if not task_ids or known is None:
            return _NO_TASKS
        caller = _principal(principal)
        return frozenset(task_id for task_id in task_ids if known(task_id, principal=caller))

    # --- what the peer needs ------------------------------------------------------

    def _pool(self) -> ProcessPool:
        pool = self.session_options.process_pool or self._processes
        if pool is None:
            pool = self._processes = ProcessPool()
        return pool

    def view(self) -> HostView:
        """The requests being served at this instant, the task table and worker pool."""
        from ._views import HostView, RequestView

        requests = []
        for key, flight in self.flights.items():
            request, scope = flight.served, flight.scope
            last = flight.progress
            progress, total, message = last if last is not None else (None, None, None)
            requests.append(
                RequestView(
                    id=request.id,
                    method=request.method,
                    params=request.params,
                    started=flight.started,
                    progress=progress,
                    deadline=scope.deadline if scope is not None else float("inf"),
                    cancelled=scope is not None and scope.cancel_called,
                    key=key,
                    principal=flight.principal,
                    total=total,
                    message=message,
                )
            )
        return HostView(requests=tuple(requests), tasks=self.tasks, processes=self._processes)


def _notice(
    subscription: Subscription, tasks: frozenset[str], event: ChangeEvent
) -> JSONObject | None:
    kind = event.kind
    if kind == "resource_updated":
        return subscription.resource_updated(event.uri) if event.uri is not None else None
    if kind == "task":
        if event.task_id in tasks and event.payload is not None:
            return subscription.tag(protocol.STATUS_NOTIFICATION, event.payload)
        return None
    return subscription.list_changed(kind)


def _principal(principal: object) -> str | None:
    # What a sealed state binds: the authenticated caller, as text.
    if principal is None:
        return None
    return principal if type(principal) is str else str(principal)


async def _handed(done: Done | None, request_id: RequestId, answer: JSONObject) -> JSONObject:
    # A request refused before it is served: its answer to ``done``, then to the caller.
    waiting = done(request_id, answer) if done is not None else None
    if waiting is not None:
        await waiting
    return answer


def _error(request_id: RequestId, code: int, message: str, data: Any = None) -> JSONObject:
    return error_message(request_id, code, message, data)
