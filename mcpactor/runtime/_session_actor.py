# Why this module is long (~870 lines): ``SessionActor`` is one object because its parts
# share the in-flight tables and the outbox: the actor loop, the request actors, the
# ``Peer`` every Context calls, and the Server's change listener; a rest between periods
# has to see all of them at once. It would split along its sections: the Peer half
# (notifications, server→client requests and their pending slots) and the change
# notices into modules of their own, and the records (``Outbound``, ``Outbox``,
# ``SessionOptions``, ``SessionStatistics``) into a third that the transports import.
#
# The Session actor and its Request actors.
#
# One ``SessionActor`` owns one ``ServerSession`` (the sans-io core) and a nursery. It
# reads decoded messages from its inbox, feeds them to the core and acts on the events:
# each request the client sends runs as a Request actor (``_serve_request``) inside its
# own CancelScope, registered by id so that ``notifications/cancelled`` is just
# ``scope.cancel()``. Everything the session sends goes through one bounded outbox as
# ``Outbound`` items; the transport's single writer drains it.
#
# The actor is also the handlers' ``Peer``: notifications and server→client requests
# from a Context come here. A server→client request waits on a one-shot slot keyed by
# its id, under ``fail_after``; the response event from the core fills the slot.
#
# Shutdown: when the inbox closes (EOF, signal, HTTP session ended) the actor stops
# reading, fails requests still waiting on the client, gives running handlers
# ``shutdown_grace`` seconds, then cancels them. Nothing it started outlives ``run``.
#
# Rest (HTTP sessions hibernate): an owner may run the actor in periods. While it is not
# running the object keeps only state — the core, subscriptions, pending change notices,
# task records — and ``receive_at_rest`` lets the owner feed the core directly: what
# the core answers alone (initialize, ping, logging/setLevel, notifications) is settled
# there and then, without a task; anything that needs a running actor (a request to
# serve, roots hooks) comes back as a backlog for the next ``run``. A period ends as a
# rest when the owner closes the inbox while ``resting()`` and its ``rest`` callback
# agrees; only the final end closes the core. Change notices from the Server that
# arrive while the actor rests are kept (coalesced) and sent when it next runs.

from __future__ import annotations

import contextlib
import enum
import functools
import logging
import math
from collections.abc import Callable, Iterable, Mapping
from types import TracebackType
from typing import Any, Final, Protocol, TypeVar

import attrs
import trio

from .._exceptions import (
    INTERNAL_ERROR,
    REQUEST_TIMEOUT,
    CapabilityError,
    LocalProtocolError,
    ProtocolError,
    RequestError,
    TransportClosed,
)
from ..protocol import (
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
    ResponseReceived,
    Revision,
    RootsChanged,
    Send,
    ServerSession,
    describe,
    describe_error,
    serialize,
)
from ..server import Context, Server
from ..server._execution import Offload
from ._offload import ProcessPool, call_handler
from ._starts import StartGate, current_start_gate
from ._tasks import TaskManager, TaskOptions

__all__ = [
    "Outbound",
    "OutboundKind",
    "Outbox",
    "SessionActor",
    "SessionOptions",
    "SessionStatistics",
    "StreamSignal",
]

T = TypeVar("T")

_log = logging.getLogger("mcpactor")

# Given, so that trio does not format one from the function for every request.
_REQUEST_TASK_NAME: Final = "mcpactor.request"

# Until ``run``: requests start only while the actor runs, so nothing counts on it.
_NO_GATE: Final = StartGate()


class OutboundKind(enum.Enum):
    """What an ``Outbound`` carries; set where it is built, read by the transports."""

    #: a response or error response (or a batch's array of them): ends its requests
    RESPONSE = "response"
    #: a notification
    NOTIFICATION = "notification"
    #: a server→client request; its answer comes back as a message from the client
    REQUEST = "request"
    #: no message: a ``StreamSignal`` for a streaming transport
    SIGNAL = "signal"


RESPONSE: Final = OutboundKind.RESPONSE
NOTIFICATION: Final = OutboundKind.NOTIFICATION
REQUEST: Final = OutboundKind.REQUEST
SIGNAL: Final = OutboundKind.SIGNAL


class StreamSignal(enum.Enum):
    """What an ``Outbound`` without a payload tells a streaming transport."""

    #: the handler asked to close its request's response stream; the client resumes it
    CLOSE = "close"
    #: the request ended without a response (it was cancelled): its stream is over
    ABANDONED = "abandoned"


@attrs.frozen
class Outbound:
    """One message on its way to the client, built by the session core, of one ``kind``.

    ``related_request_id`` names the client request it belongs to (its response, or a
    progress/log notification or server→client request made while serving it); HTTP uses
    it to pick the response stream. None means "not tied to a request". A ``SIGNAL``
    carries no message (``payload`` is None) but a ``signal``; only actors created with
    ``stream_signals=True`` send them. Transports switch on ``kind``, never on the
    payload's keys.
    """

    kind: OutboundKind
    payload: JSONValue
    related_request_id: RequestId | None = None
    signal: StreamSignal | None = None


class Outbox(Protocol):
    """Where a session's messages go: a memory channel, or a transport's own sender.

    ``send_nowait`` raises ``trio.WouldBlock`` when full; ``send`` then waits (that is
    backpressure); both raise ``trio.ClosedResourceError`` or ``trio.BrokenResourceError``
    once the other end is gone. Closing it tells the transport nothing more will come.
    """

    def send_nowait(self, value: Outbound, /) -> None:
        """Hand over one message without waiting."""

    async def send(self, value: Outbound, /) -> None:
        """Hand over one message, waiting while the outbox is full."""

    def close(self) -> None:
        """Say that nothing more will be sent."""

    async def __aenter__(self) -> object:
        """Return the outbox; leaving the block closes it."""

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc_value: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        """Close the outbox."""


@attrs.frozen
class SessionOptions:
    """Limits and timeouts of a session; the defaults suit most servers."""

    #: seconds running handlers get to finish after the client went away or a signal
    shutdown_grace: float = 5.0
    #: seconds to wait for the client's answer to a server→client request (None: forever)
    client_request_timeout: float | None = 300.0
    #: requests of one client served at once; more are refused with a clear error
    max_in_flight: int = 1024
    #: the level log messages are filtered at until the client sets one
    log_level: str = "info"
    #: the limiter for blocking (``def``) handlers; None uses trio's default (40 threads)
    thread_limiter: trio.CapacityLimiter | None = None
    #: worker processes for ``offload="process"`` tools, shared between sessions; None
    #: gives each session its own pool, started on first use
    process_pool: ProcessPool | None = None
    #: limits of task-augmented requests (2025-11-25)
    tasks: TaskOptions = attrs.field(factory=TaskOptions)


@attrs.frozen
class SessionStatistics:
    """A snapshot of one session, for tests and debug output."""

    phase: Phase
    requests_in_flight: int
    client_requests_pending: int
    subscriptions: int


class _Pending:
    __slots__ = ("done", "error", "result")

    def __init__(self) -> None:
        self.done = trio.Event()
        self.result: JSONObject | None = None
        self.error: RequestError | None = None


class SessionActor:
    """One MCP session: the protocol core, its request actors, and the handlers' peer."""

    def __init__(
        self,
        server: Server,
        outbox: Outbox | None,
        options: SessionOptions | None = None,
        *,
        stream_signals: bool = False,
        refuse_client_requests: str | None = None,
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
        self._outbox: Outbox = outbox if outbox is not None else _closed_outbox()
        self._nursery: trio.Nursery | None = None
        self._scopes: dict[RequestId, trio.CancelScope] = {}
        self._pending: dict[RequestId, _Pending] = {}
        # Made on first use: most sessions never subscribe, and a resting session should
        # cost little more than its protocol state.
        self._subscriptions: set[str] | None = None
        self._changed_lists: set[str] | None = None
        self._updated: set[str] | None = None
        self._changes_queued = False
        self._idle: trio.Event | None = None
        # Request actors not yet done (their reply may still be waiting for the outbox).
        self._serving = 0
        # Roots hooks and change notices running in the nursery.
        self._helpers = 0
        self._closing = False
        # The actor task is acting on a message (it may be waiting for outbox room).
        self._acting = False
        self._token: trio.lowlevel.TrioToken | None = None
        # Transports with per-request streams (HTTP) want to hear when a stream should be
        # cut or is over without a response; a transport that cannot carry server→client
        # requests (stateless HTTP) names why, and they fail at once instead of timing out.
        self._stream_signals = stream_signals
        self._refuse_client_requests = refuse_client_requests
        #: the session's tasks (2025-11-25): the Peer's task host
        self.tasks = TaskManager(self, self.options.tasks)
        # The session's own worker processes (without a shared pool), made on first use
        # and closed whenever the actor stops running.
        self._processes: ProcessPool | None = None
        # This trio run's counts of request actors, started and in flight (set by ``run``).
        self._starts = _NO_GATE
        # What an actor without a task of its own (``serve_in``) does when one fails.
        self._on_failure: Callable[[], None] | None = None

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
            and not self.tasks.statistics().running
        )

    def register(self) -> None:
        """Start hearing the Server's list changes and resource updates.

        ``run`` does this; an owner whose actor rests between periods calls it when the
        session starts, so that changes reach a resting session too. ``close`` undoes it.
        """
        self._token = trio.lowlevel.current_trio_token()
        self.server.add_listener(self)

    def close(self) -> None:
        """End a session that is not running: forget the Server, close the core."""
        self.server.remove_listener(self)
        self.core.close()

    # --- the actor ----------------------------------------------------------------

    async def run(
        self,
        inbox: trio.MemoryReceiveChannel[JSONValue | ProtocolError],
        *,
        outbox: Outbox | None = None,
        backlog: Iterable[Event] = (),
        rest: Callable[[], bool] | None = None,
        task_status: trio.TaskStatus[SessionActor] = trio.TASK_STATUS_IGNORED,
    ) -> None:
        """Serve the session until its inbox closes, then shut down gracefully.

        An owner that lets the session rest between periods passes ``rest``, and for each
        period a fresh ``outbox`` and the ``backlog`` that ``receive_at_rest`` left. When
        the inbox closes and ``rest()`` is true, the period ends at once and the session
        keeps its state for the next ``run``; the owner closes the inbox for a rest only
        while ``resting()``. Otherwise the session ends as without ``rest``.
        """
        if outbox is not None:
            self._outbox = outbox
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
                        # and ``receive_now`` could then act on a later one first.
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
        message to ``receive_now``, which never declines here, what the session sends
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

    def receive_at_rest(
        self, item: JSONValue | ProtocolError
    ) -> tuple[list[Outbound], list[Event]]:
        """Take one message while the actor is not running.

        Returns (messages to send now, events for the next ``run``). What the core
        answers alone is settled here; if anything needs a running actor (a request to
        serve, roots hooks to run), nothing is sent and every event, in order, is left
        for the next period.
        """
        events = self.core.receive(item)
        for event in events:
            kind = type(event)
            if kind is RequestReceived or (
                kind is RootsChanged and self.server.roots_changed_hooks
            ):
                return [], events
        replies = []
        for event in events:
            if type(event) is Send:
                assert isinstance(event, Send)
                replies.append(Outbound(RESPONSE, event.payload, event.request_id))
            elif type(event) is not RootsChanged:
                self._settle(event)
        return replies, []

    def receive_now(self, item: JSONValue | ProtocolError) -> bool:
        """Act on one message in the caller's own task, as the running actor would.

        A running actor that is not acting has taken everything from its inbox, so no
        message queued earlier is overtaken: the core takes the message at once, its
        requests start in the actor's nursery and what it answers is queued without
        waiting (a full outbox hands it to a task that waits).
        Returns False, having done nothing, when the actor is not running or is still
        acting on an earlier message; the caller then queues the message as usual.
        """
        if self._nursery is None or self._acting:
            # Mid-message, the actor may not have opened that message's requests yet: a
            # notifications/cancelled acted on now could miss the scope it cancels.
            return False
        for event in self.core.receive(item):
            kind = type(event)
            if kind is RequestReceived:
                assert isinstance(event, RequestReceived)
                refusal = self._open_request(event.request, event.negotiated)
                if refusal is not None:
                    self._send_soon(refusal)
            elif kind is Send:
                assert isinstance(event, Send)
                self._send_soon(Outbound(RESPONSE, event.payload, event.request_id))
            elif kind is RootsChanged:
                self._start_hooks(self.server.roots_changed_hooks)
            else:
                self._settle(event)
        return True

    def _send_soon(self, item: Outbound) -> None:
        try:
            self._outbox.send_nowait(item)
        except trio.WouldBlock:
            assert self._nursery is not None
            self._nursery.start_soon(self._outbox.send, item)
        except (trio.ClosedResourceError, trio.BrokenResourceError):
            _log.debug("the session ended before a reply could be queued")

    async def _receive(self, item: JSONValue | ProtocolError) -> None:
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
                self._start_hooks(self.server.roots_changed_hooks)
            else:
                self._settle(event)

    def _settle(self, event: Event) -> None:
        # The events that need no task: a running actor and ``receive_at_rest`` share them.
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
            why = (
                "the session is shutting down"
                if self._closing
                else f"too many requests in flight (limit {self.options.max_in_flight})"
            )
            reply = self.core.respond_error(request.id, INTERNAL_ERROR, f"server busy: {why}")
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
        ctx = Context(
            peer=self,
            request_id=request_id,
            negotiated=negotiated,
            meta=meta if isinstance(meta, dict) else None,
            server=self.server,
        )
        reply: JSONValue | None = None
        abandoned = False
        try:
            try:
                with scope:
                    try:
                        result = await self.server.handle_request(request.method, params, ctx)
                        reply = self.core.respond(request_id, result)
                    except (RequestError, ProtocolError) as exc:
                        reply = self.core.respond_error(
                            request_id, exc.code, exc.message, exc.data
                        )
                    except Exception as exc:
                        # The one place a failing handler becomes an error response.
                        method = describe(request.method)
                        _log.exception("%s failed (request %s)", method, describe(request_id))
                        reply = self.core.respond_error(
                            request_id,
                            INTERNAL_ERROR,
                            f"internal error in {method}: {describe_error(exc)}",
                        )
                if scope.cancelled_caught:
                    reply = self.core.abandon(request_id)
                    abandoned = reply is None
            finally:
                del self._scopes[request_id]
            if reply is not None:
                # The request is over: queue its reply without another trip through the
                # scheduler unless the outbox is full (then wait, as backpressure).
                try:
                    self._outbox.send_nowait(Outbound(RESPONSE, reply, request_id))
                except trio.WouldBlock:
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

    def _start_hooks(self, hooks: list[Callable[[Context], Any]]) -> None:
        negotiated = self.core.negotiated
        nursery = self._nursery
        if negotiated is None or nursery is None:
            return
        for hook in hooks:
            ctx = Context(
                peer=self, request_id=None, negotiated=negotiated, meta=None, server=self.server
            )
            self._helpers += 1
            nursery.start_soon(self._run_hook, hook, ctx)

    async def _run_hook(self, hook: Callable[[Context], Any], ctx: Context) -> None:
        try:
            await hook(ctx)
        except Exception:
            _log.exception("roots-changed hook %r failed", hook)
        finally:
            self._helpers -= 1

    # --- the Peer of every Context ----------------------------------------------------

    async def notify(
        self, method: str, params: JSONObject, *, related_request_id: RequestId | None
    ) -> None:
        """Send a notification to the client if the session's phase allows it."""
        message = self.core.notification(method, params)
        if message is None:
            _log.debug("dropped %r: the session is %s", method, self.core.phase.value)
            return
        await self._outbox.send(Outbound(NOTIFICATION, message, related_request_id))

    async def request(
        self,
        method: str,
        params: JSONObject,
        *,
        related_request_id: RequestId | None,
        timeout: float | None,
    ) -> JSONObject:
        """Send a server→client request and wait for the client's result."""
        if self._closing:
            raise TransportClosed("the session is closing: the client cannot answer")
        if self._refuse_client_requests is not None:
            raise CapabilityError(
                f"cannot send {describe(method)} to the client: {self._refuse_client_requests}"
            )
        if serialize({"method": method, "params": params}) is None:
            # Found now, the handler hears why; found by the writer, it would only wait.
            raise LocalProtocolError(
                f"cannot send {describe(method)} to the client: its params cannot be "
                "written as JSON"
            )
        outgoing = self.core.send_request(method, params)
        slot = _Pending()
        self._pending[outgoing.id] = slot
        if timeout is None:
            timeout = self.options.client_request_timeout
        try:
            await self._outbox.send(Outbound(REQUEST, outgoing.to_json(), related_request_id))
            with trio.fail_after(timeout if timeout is not None else math.inf):
                await slot.done.wait()
        except trio.TooSlowError:
            self._cancel_outgoing(outgoing.id, f"no answer within {timeout} s")
            raise RequestError(
                REQUEST_TIMEOUT,
                f"the client did not answer {describe(method)} within {timeout} s",
                {"method": method, "timeout": timeout},
            ) from None
        except trio.Cancelled:
            self._cancel_outgoing(outgoing.id, "the request that asked was cancelled")
            raise
        finally:
            self._pending.pop(outgoing.id, None)
        if slot.error is not None:
            raise slot.error
        assert slot.result is not None
        return slot.result

    def _cancel_outgoing(self, request_id: RequestId, reason: str) -> None:
        notice = self.core.cancel_outgoing(request_id, reason)
        # Best effort: the client ignores late answers to ids it was told are gone, and a
        # full or closed outbox means it is not listening anyway.
        with contextlib.suppress(
            trio.WouldBlock, trio.ClosedResourceError, trio.BrokenResourceError
        ):
            self._outbox.send_nowait(Outbound(NOTIFICATION, notice))

    def _resolve(self, request_id: RequestId, result: JSONObject) -> None:
        slot = self._pending.get(request_id)
        if slot is not None:
            slot.result = result
            slot.done.set()

    def _fail_pending(self, request_id: RequestId, error: RequestError) -> None:
        slot = self._pending.get(request_id)
        if slot is not None:
            slot.error = error
            slot.done.set()

    async def close_sse_stream(self, *, related_request_id: RequestId) -> None:
        """Ask the transport to close the response stream of a request (HTTP only).

        The request keeps running; the client reconnects and resumes the stream. Without
        per-request streams (stdio) there is nothing to close and this does nothing.
        """
        if self._stream_signals:
            await self._outbox.send(Outbound(SIGNAL, None, related_request_id, StreamSignal.CLOSE))

    def log_enabled(self, level: str) -> bool:
        """Return whether the client wants log messages at ``level``."""
        return self.core.log_enabled(level)

    def subscribe(self, uri: str) -> None:
        """Remember that the client wants updates of ``uri``."""
        if self._subscriptions is None:
            self._subscriptions = set()
        self._subscriptions.add(uri)

    def unsubscribe(self, uri: str) -> None:
        """Forget the client's subscription to ``uri``."""
        if self._subscriptions is not None:
            self._subscriptions.discard(uri)

    async def run_sync(self, fn: Callable[[], T]) -> T:
        """Run a blocking handler in a worker thread under the session's limiter."""
        return await trio.to_thread.run_sync(fn, limiter=self.options.thread_limiter)

    async def call(
        self,
        fn: Callable[..., Any],
        kwargs: Mapping[str, Any],
        *,
        offload: Offload,
        timeout: float | None,
    ) -> Any:
        """Run a tool's function as ``offload`` says, cancelled after ``timeout`` seconds."""
        processes = self.options.process_pool or self._processes
        if processes is None:
            processes = self._processes = ProcessPool()
        return await call_handler(
            fn,
            kwargs,
            offload=offload,
            timeout=timeout,
            limiter=self.options.thread_limiter,
            processes=processes,
        )

    # --- the Server's listener --------------------------------------------------------

    def list_changed(self, kind: str) -> None:
        """Queue ``notifications/<kind>/list_changed`` (coalesced)."""
        if not trio.lowlevel.in_trio_run():
            self._from_thread(self.list_changed, kind)
            return
        if self._changed_lists is None:
            self._changed_lists = set()
        self._changed_lists.add(kind)
        self._schedule_changes()

    def resource_updated(self, uri: str) -> None:
        """Queue ``notifications/resources/updated`` if the client subscribed to ``uri``."""
        if not trio.lowlevel.in_trio_run():
            self._from_thread(self.resource_updated, uri)
            return
        if self._subscriptions is not None and uri in self._subscriptions:
            if self._updated is None:
                self._updated = set()
            self._updated.add(uri)
            self._schedule_changes()

    def _from_thread(self, method: Callable[[str], None], value: str) -> None:
        # A blocking handler changed the registry from a worker thread: record the
        # change on the event loop's thread.
        if self._token is not None:
            with contextlib.suppress(trio.RunFinishedError):
                self._token.run_sync_soon(method, value)

    def _schedule_changes(self) -> None:
        # One short task sends what is queued, once the session is operating and the
        # actor runs; changes made meanwhile join it (coalesced). While the actor rests,
        # the next period starts it.
        if (
            self._changes_queued
            or self._nursery is None
            or not (self._changed_lists or self._updated)
            or self.core.phase is not Phase.OPERATING
        ):
            return
        self._changes_queued = True
        self._helpers += 1
        self._nursery.start_soon(self._send_changes)

    async def _send_changes(self) -> None:
        try:
            while self._changed_lists or self._updated:
                capabilities = self.core.server_capabilities
                kinds = sorted(self._changed_lists or ())
                uris = sorted(self._updated or ())
                self._changed_lists = None
                self._updated = None
                for kind in kinds:
                    if capabilities.get(kind, {}).get("listChanged"):
                        await self.notify(
                            f"notifications/{kind}/list_changed", {}, related_request_id=None
                        )
                for uri in uris:
                    await self.notify(
                        "notifications/resources/updated", {"uri": uri}, related_request_id=None
                    )
        finally:
            self._changes_queued = False
            self._helpers -= 1


@functools.cache
def _closed_outbox() -> trio.MemorySendChannel[Outbound]:
    # The outbox of an actor that has none yet: sending fails as after the session ended.
    send, _ = trio.open_memory_channel[Outbound](0)
    send.close()
    return send
