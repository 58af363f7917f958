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

from __future__ import annotations

import contextlib
import enum
import logging
import math
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

import attrs
import trio

from .._exceptions import (
    INTERNAL_ERROR,
    REQUEST_TIMEOUT,
    CapabilityError,
    ProtocolError,
    RequestError,
    TransportClosed,
)
from ..protocol import (
    CancelRequested,
    ErrorReceived,
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
)
from ..server import Context, Server
from ..server._execution import Offload
from ._offload import ProcessPool, call_handler
from ._tasks import TaskManager, TaskOptions

__all__ = ["Outbound", "SessionActor", "SessionOptions", "SessionStatistics", "StreamSignal"]

T = TypeVar("T")

_log = logging.getLogger("mcpactor")


class StreamSignal(enum.Enum):
    """What an ``Outbound`` without a payload tells a streaming transport."""

    #: the handler asked to close its request's response stream; the client resumes it
    CLOSE = "close"
    #: the request ended without a response (it was cancelled): its stream is over
    ABANDONED = "abandoned"


@attrs.frozen
class Outbound:
    """One message on its way to the client.

    ``related_request_id`` names the client request it belongs to (its response, or a
    progress/log notification or server→client request made while serving it); HTTP uses
    it to pick the response stream. None means "not tied to a request". An item with a
    ``signal`` carries no message (``payload`` is None); only actors created with
    ``stream_signals=True`` send them.
    """

    payload: JSONValue
    related_request_id: RequestId | None = None
    signal: StreamSignal | None = None


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
        outbox: trio.MemorySendChannel[Outbound],
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
        self._outbox = outbox
        self._scopes: dict[RequestId, trio.CancelScope] = {}
        self._pending: dict[RequestId, _Pending] = {}
        self._subscriptions: set[str] = set()
        self._changed_lists: set[str] = set()
        self._updated: set[str] = set()
        self._wake = trio.Event()
        self._idle = trio.Event()
        self._idle.set()
        # Request actors not yet done (their reply may still be waiting for the outbox).
        self._serving = 0
        self._closing = False
        self._token: trio.lowlevel.TrioToken | None = None
        # Transports with per-request streams (HTTP) want to hear when a stream should be
        # cut or is over without a response; a transport that cannot carry server→client
        # requests (stateless HTTP) names why, and they fail at once instead of timing out.
        self._stream_signals = stream_signals
        self._refuse_client_requests = refuse_client_requests
        #: the session's tasks (2025-11-25): the Peer's task host
        self.tasks = TaskManager(self, self.options.tasks)
        self._processes = self.options.process_pool or ProcessPool()

    def _capabilities(self, revision: Revision) -> JSONObject:
        capabilities = self.server.capabilities(revision)
        if "tasks" in capabilities and not self.options.tasks.enabled:
            capabilities = {k: v for k, v in capabilities.items() if k != "tasks"}
        return capabilities

    def statistics(self) -> SessionStatistics:
        """Return how busy the session is right now."""
        return SessionStatistics(
            phase=self.core.phase,
            requests_in_flight=len(self._scopes),
            client_requests_pending=len(self._pending),
            subscriptions=len(self._subscriptions),
        )

    # --- the actor ----------------------------------------------------------------

    async def run(
        self,
        inbox: trio.MemoryReceiveChannel[JSONValue | ProtocolError],
        *,
        task_status: trio.TaskStatus[SessionActor] = trio.TASK_STATUS_IGNORED,
    ) -> None:
        """Serve the session until its inbox closes, then shut down gracefully."""
        self._token = trio.lowlevel.current_trio_token()
        self.server.add_listener(self)
        try:
            async with self._outbox, self.tasks.running(), trio.open_nursery() as nursery:
                self._nursery = nursery
                nursery.start_soon(self._send_changes)
                task_status.started(self)
                async with inbox:
                    async for item in inbox:
                        await self._receive(item)
                        # Serve what is already queued in this turn (bounded by the inbox
                        # size), rather than yielding to the scheduler once per message.
                        while True:
                            try:
                                item = inbox.receive_nowait()
                            except (trio.WouldBlock, trio.EndOfChannel):
                                break
                            await self._receive(item)
                await self._wind_down()
                nursery.cancel_scope.cancel("the session ended")
        finally:
            self.server.remove_listener(self)
            self.core.close()
            if self.options.process_pool is None:
                await self._processes.aclose()

    async def _wind_down(self) -> None:
        self._closing = True
        for request_id in list(self._pending):
            self._fail_pending(
                request_id, RequestError(INTERNAL_ERROR, "the client went away before answering")
            )
        with trio.move_on_after(self.options.shutdown_grace):
            await self._idle.wait()
            await self.tasks.wait_idle()

    async def _receive(self, item: JSONValue | ProtocolError) -> None:
        if isinstance(item, ProtocolError):
            error = item.to_error()
            await self._outbox.send(Outbound({"jsonrpc": "2.0", "error": error}))
            return
        for event in self.core.receive(item):
            kind = type(event)
            if kind is RequestReceived:
                assert isinstance(event, RequestReceived)
                await self._start_request(event.request, event.negotiated)
            elif kind is Send:
                assert isinstance(event, Send)
                await self._outbox.send(Outbound(event.payload, _reply_id(event.payload)))
            elif kind is CancelRequested:
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
            elif kind is RootsChanged:
                self._start_hooks(self.server.roots_changed_hooks)
            elif kind is Initialized:
                # The client lists everything fresh after initializing: earlier changes
                # are old news.
                self._changed_lists.clear()
                self._updated.clear()
            else:
                assert isinstance(event, NotificationReceived)
                _log.debug("ignored notification %r", event.notification.method)

    # --- request actors -------------------------------------------------------------

    async def _start_request(self, request: Request, negotiated: Negotiated) -> None:
        if len(self._scopes) >= self.options.max_in_flight or self._closing:
            why = (
                "the session is shutting down"
                if self._closing
                else f"too many requests in flight (limit {self.options.max_in_flight})"
            )
            reply = self.core.respond_error(request.id, INTERNAL_ERROR, f"server busy: {why}")
            if reply is not None:
                # Wait for room like every other reply: a full outbox is backpressure.
                await self._outbox.send(Outbound(reply, request.id))
            return
        scope = trio.CancelScope()
        self._scopes[request.id] = scope
        if not self._serving:
            self._idle = trio.Event()
        self._serving += 1
        self._nursery.start_soon(self._serve_request, request, negotiated, scope)

    async def _serve_request(
        self, request: Request, negotiated: Negotiated, scope: trio.CancelScope
    ) -> None:
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
                        _log.exception("%r failed (request %r)", request.method, request_id)
                        reply = self.core.respond_error(
                            request_id,
                            INTERNAL_ERROR,
                            f"internal error in {request.method!r}: {type(exc).__name__}: {exc}",
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
                    self._outbox.send_nowait(Outbound(reply, request_id))
                except trio.WouldBlock:
                    await self._outbox.send(Outbound(reply, request_id))
            elif abandoned and self._stream_signals:
                await self._outbox.send(Outbound(None, request_id, StreamSignal.ABANDONED))
        finally:
            # Idle only once the reply is queued: a full outbox must not let shutdown cut
            # off the answer of a handler that finished within the grace period.
            self._serving -= 1
            if not self._serving:
                self._idle.set()

    def _start_hooks(self, hooks: list[Callable[[Context], Any]]) -> None:
        negotiated = self.core.negotiated
        if negotiated is None:
            return
        for hook in hooks:
            ctx = Context(
                peer=self, request_id=None, negotiated=negotiated, meta=None, server=self.server
            )
            self._nursery.start_soon(self._run_hook, hook, ctx)

    async def _run_hook(self, hook: Callable[[Context], Any], ctx: Context) -> None:
        try:
            await hook(ctx)
        except Exception:
            _log.exception("roots-changed hook %r failed", hook)

    # --- the Peer of every Context ----------------------------------------------------

    async def notify(
        self, method: str, params: JSONObject, *, related_request_id: RequestId | None
    ) -> None:
        """Send a notification to the client if the session's phase allows it."""
        if not self.core.may_notify(method):
            _log.debug("dropped %r: the session is %s", method, self.core.phase.value)
            return
        message = {"jsonrpc": "2.0", "method": method, "params": params}
        await self._outbox.send(Outbound(message, related_request_id))

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
                f"cannot send {method!r} to the client: {self._refuse_client_requests}"
            )
        outgoing = self.core.send_request(method, params)
        slot = _Pending()
        self._pending[outgoing.id] = slot
        if timeout is None:
            timeout = self.options.client_request_timeout
        try:
            await self._outbox.send(Outbound(outgoing.to_json(), related_request_id))
            with trio.fail_after(timeout if timeout is not None else math.inf):
                await slot.done.wait()
        except trio.TooSlowError:
            self._cancel_outgoing(outgoing.id, f"no answer within {timeout} s")
            raise RequestError(
                REQUEST_TIMEOUT,
                f"the client did not answer {method!r} within {timeout} s",
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
        self.core.forget_outgoing(request_id)
        notice = {
            "jsonrpc": "2.0",
            "method": "notifications/cancelled",
            "params": {"requestId": request_id, "reason": reason},
        }
        # Best effort: the client ignores late answers to ids it was told are gone, and a
        # full or closed outbox means it is not listening anyway.
        with contextlib.suppress(
            trio.WouldBlock, trio.ClosedResourceError, trio.BrokenResourceError
        ):
            self._outbox.send_nowait(Outbound(notice))

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
            await self._outbox.send(Outbound(None, related_request_id, StreamSignal.CLOSE))

    def log_enabled(self, level: str) -> bool:
        """Return whether the client wants log messages at ``level``."""
        return self.core.log_enabled(level)

    def subscribe(self, uri: str) -> None:
        """Remember that the client wants updates of ``uri``."""
        self._subscriptions.add(uri)

    def unsubscribe(self, uri: str) -> None:
        """Forget the client's subscription to ``uri``."""
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
        return await call_handler(
            fn,
            kwargs,
            offload=offload,
            timeout=timeout,
            limiter=self.options.thread_limiter,
            processes=self._processes,
        )

    # --- the Server's listener --------------------------------------------------------

    def list_changed(self, kind: str) -> None:
        """Queue ``notifications/<kind>/list_changed`` (coalesced)."""
        self._changed_lists.add(kind)
        self._wake_soon()

    def resource_updated(self, uri: str) -> None:
        """Queue ``notifications/resources/updated`` if the client subscribed to ``uri``."""
        if uri in self._subscriptions:
            self._updated.add(uri)
            self._wake_soon()

    def _wake_soon(self) -> None:
        try:
            trio.lowlevel.current_task()
        except RuntimeError:
            # Called from a worker thread (a blocking handler changed the registry).
            if self._token is not None:
                self._token.run_sync_soon(self._wake.set)
            return
        self._wake.set()

    async def _send_changes(self) -> None:
        while True:
            await self._wake.wait()
            self._wake = trio.Event()
            if self.core.phase is not Phase.OPERATING:
                continue  # Initialized sets the event again
            capabilities = self.core.server_capabilities
            for kind in sorted(self._changed_lists):
                if capabilities.get(kind, {}).get("listChanged"):
                    await self.notify(
                        f"notifications/{kind}/list_changed", {}, related_request_id=None
                    )
            self._changed_lists.clear()
            for uri in sorted(self._updated):
                await self.notify(
                    "notifications/resources/updated", {"uri": uri}, related_request_id=None
                )
            self._updated.clear()


def _reply_id(payload: JSONValue) -> RequestId | None:
    if type(payload) is dict:
        request_id = payload.get("id")
        if type(request_id) is str or type(request_id) is int:
            return request_id
    return None
