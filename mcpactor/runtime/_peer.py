# What a session's handlers talk to: ``SessionPeer``, the Peer every Context of a
# session calls. The session's actor owns one (``SessionActor.peer``).
#
# Notifications and server→client requests from a Context come here and go out through
# the actor's outbox, built by the protocol core. A server→client request waits on a
# one-shot slot keyed by its id, under ``fail_after``; the actor hands the client's
# answer over (``answered``/``failed``). A request that times out or whose asker is
# cancelled is forgotten by the core, which builds the ``notifications/cancelled`` the
# client is told with. The peer also keeps what the client subscribed to, the session's
# task table and its worker processes.

from __future__ import annotations

import contextlib
import logging
import math
from collections.abc import Awaitable, Callable, Mapping
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

import trio

from .._exceptions import (
    INTERNAL_ERROR,
    REQUEST_TIMEOUT,
    CapabilityError,
    LocalProtocolError,
    RequestError,
    TransportClosed,
)
from ..protocol import (
    JSONObject,
    RequestId,
    ServerSession,
    describe,
    serialize,
)
from ._messages import (
    NOTIFICATION,
    REQUEST,
    SIGNAL,
    Outbound,
    Outbox,
    SessionOptions,
    StreamSignal,
)
from ._offload import ProcessPool, call_handler
from ._peer_base import principal_of
from .tasks import TaskManager

if TYPE_CHECKING:
    from ..auth import Principal
    from ..protocol import ResourceSubscriptions
    from ..server import Offload

__all__ = ["PrincipalHolder", "SessionPeer"]

T = TypeVar("T")

_log = logging.getLogger("mcpactor")


class _Pending:
    __slots__ = ("done", "error", "result")

    def __init__(self) -> None:
        self.done = trio.Event()
        self.result: JSONObject | None = None
        self.error: RequestError | None = None


class PrincipalHolder(Protocol):
    """Whoever keeps the principal a session was admitted as (an HTTP session)."""

    #: refreshed by the transport on every admitted request (a new token, same caller)
    principal: object


class SessionPeer:
    """The Peer of a session's Contexts: notifications, client requests, subscriptions, offload.

    Its actor gives it the outbox of each run (``outbox``) and hands it the client's
    answers (``answered``, ``failed``); ``wind_down`` fails what still waits on the client.
    """

    __slots__ = (
        "_closing",
        "_core",
        "_options",
        "_pending",
        "_principal_holder",
        "_refuse_client_requests",
        "_stream_signals",
        "outbox",
        "processes",
        "session_id",
        "share_subscriptions",
        "subscriptions",
        "tasks",
    )

    def __init__(
        self,
        core: ServerSession,
        options: SessionOptions,
        outbox: Outbox,
        *,
        session_id: str | None,
        stream_signals: bool,
        refuse_client_requests: str | None,
        principal_holder: PrincipalHolder | None,
    ) -> None:
        self._core = core
        self._options = options
        #: where its messages go: the outbox of the actor's current run
        self.outbox = outbox
        #: the transport's id of the session (HTTP's Mcp-Session-Id), for traces and logs;
        #: its tasks are shared with the replicas of that id
        self.session_id = session_id
        # The requests waiting for the client's answer, by id; made with the first.
        self._pending: dict[RequestId, _Pending] | None = None
        self._closing = False
        # Transports with per-request streams (HTTP) can cut a request's stream; a
        # transport that cannot carry server→client requests (stateless HTTP) names why,
        # and they fail at once instead of timing out.
        self._stream_signals = stream_signals
        self._refuse_client_requests = refuse_client_requests
        # Read on every ``ctx.principal``, never copied: the transport refreshes it as the
        # client's tokens are renewed.
        self._principal_holder = principal_holder
        #: the client's resource subscriptions; made on first use, as most sessions never
        #: subscribe and a resting session should cost little more than its protocol state
        self.subscriptions: ResourceSubscriptions | None = None
        #: set by a session shared with replicas: writes the subscriptions where all see them
        self.share_subscriptions: Callable[[], Awaitable[None]] | None = None
        #: the session's tasks (2025-11-25); their actors run while the session's actor does
        self.tasks = TaskManager(self, options.tasks)
        #: the session's own worker processes (without a shared pool), made on first use
        #: and closed whenever the actor stops running
        self.processes: ProcessPool | None = None

    @property
    def awaiting_client(self) -> int:
        """How many server→client requests wait for the client's answer."""
        return len(self._pending) if self._pending is not None else 0

    @property
    def principal(self) -> Principal | None:
        """The session's principal as of now (None: stdio, or no authorization)."""
        holder = self._principal_holder
        return principal_of(holder.principal) if holder is not None else None

    async def notify(
        self, method: str, params: JSONObject, *, related_request_id: RequestId | None
    ) -> None:
        """Send a notification to the client if the session's phase allows it."""
        message = self._core.notification(method, params)
        if message is None:
            _log.debug("dropped %r: the session is %s", method, self._core.phase.value)
            return
        await self.outbox.send(Outbound(NOTIFICATION, message, related_request_id))

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
        limit = self.outbox.max_message_bytes
        if serialize({"method": method, "params": params}, limit) is None:
            # Found now, the handler hears why; found by the writer, it would only wait.
            raise LocalProtocolError(
                f"cannot send {describe(method)} to the client: its params cannot be "
                "written as JSON"
                + ("" if limit is None else f" within the {limit}-byte message limit"),
                data=None if limit is None else {"limit": limit},
            )
        outgoing = self._core.send_request(method, params)
        slot = _Pending()
        pending = self._pending
        if pending is None:
            pending = self._pending = {}
        pending[outgoing.id] = slot
        if timeout is None:
            timeout = self._options.client_request_timeout
        try:
            await self.outbox.send(Outbound(REQUEST, outgoing.to_json(), related_request_id))
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
            pending.pop(outgoing.id, None)
        if slot.error is not None:
            raise slot.error
        assert slot.result is not None
        return slot.result

    def _cancel_outgoing(self, request_id: RequestId, reason: str) -> None:
        notice = self._core.cancel_outgoing(request_id, reason)
        # Best effort: the client ignores late answers to ids it was told are gone, and a
        # full or closed outbox means it is not listening anyway.
        with contextlib.suppress(
            trio.WouldBlock, trio.ClosedResourceError, trio.BrokenResourceError
        ):
            self.outbox.send_nowait(Outbound(NOTIFICATION, notice))

    def answered(self, request_id: RequestId, result: JSONObject) -> None:
        """The client answered ``request_id`` with ``result``: wake whoever waits for it."""
        slot = self._pending.get(request_id) if self._pending is not None else None
        if slot is not None:
            slot.result = result
            slot.done.set()

    def failed(self, request_id: RequestId, error: RequestError) -> None:
        """The client answered ``request_id`` with ``error``: raise it in whoever waits."""
        slot = self._pending.get(request_id) if self._pending is not None else None
        if slot is not None:
            slot.error = error
            slot.done.set()

    def wind_down(self) -> None:
        """The session is ending: fail what waits on the client, and refuse new requests."""
        self._closing = True
        for request_id in list(self._pending or ()):
            self.failed(
                request_id, RequestError(INTERNAL_ERROR, "the client went away before answering")
            )

    async def close_sse_stream(self, *, related_request_id: RequestId) -> None:
        """Ask the transport to close the response stream of a request (HTTP only).

        The request keeps running; the client reconnects and resumes the stream. Without
        per-request streams (stdio) there is nothing to close and this does nothing.
        """
        if self._stream_signals:
            await self.outbox.send(Outbound(SIGNAL, None, related_request_id, StreamSignal.CLOSE))

    def log_enabled(self, level: str) -> bool:
        """Return whether the client wants log messages at ``level``."""
        return self._core.log_enabled(level)

    def subscribe(self, uri: str) -> None:
        """Remember that the client wants updates of ``uri``.

        Raises:
            RemoteProtocolError: the session's subscriptions would go past a limit of
                ``ResourceSubscriptions`` (-32602, ``data: {"limit": …}``).
        """
        if self.subscriptions is None:
            # Read with the first subscription: most sessions never subscribe.
            from ..protocol import ResourceSubscriptions

            self.subscriptions = ResourceSubscriptions()
        self.subscriptions.add(uri)

    def unsubscribe(self, uri: str) -> None:
        """Forget the client's subscription to ``uri``."""
        if self.subscriptions is not None:
            self.subscriptions.discard(uri)

    async def subscriptions_changed(self) -> None:
        """Tell the replicas sharing the session, if any (``share_subscriptions``)."""
        share = self.share_subscriptions
        if share is not None:
            await share()

    async def run_sync(self, fn: Callable[[], T]) -> T:
        """Run a blocking handler in a worker thread under the session's limiter."""
        return await trio.to_thread.run_sync(fn, limiter=self._options.thread_limiter)

    async def call(
        self,
        fn: Callable[..., Any],
        kwargs: Mapping[str, Any],
        *,
        offload: Offload,
        timeout: float | None,
    ) -> Any:
        """Run a tool's function as ``offload`` says, cancelled after ``timeout`` seconds."""
        processes = self._options.process_pool or self.processes
        if processes is None:
            processes = self.processes = ProcessPool()
        return await call_handler(
            fn,
            kwargs,
            offload=offload,
            timeout=timeout,
            limiter=self._options.thread_limiter,
            processes=processes,
        )

    async def close_processes(self) -> None:
        """Stop the session's own worker processes, if it started any."""
        processes, self.processes = self.processes, None
        if processes is not None:
            await processes.aclose()
