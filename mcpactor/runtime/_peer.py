# The half of a session actor that handlers talk to: ``SessionPeer``, the Peer every
# Context of a session calls.
#
# Notifications and server→client requests from a Context come here and go out through
# the actor's outbox, built by the protocol core. A server→client request waits on a
# one-shot slot keyed by its id, under ``fail_after``; the response event from the core
# fills the slot (``_resolve``/``_fail_pending``, called by the actor). A request that
# times out or whose asker is cancelled is forgotten by the core, which builds the
# ``notifications/cancelled`` the client is told with.

from __future__ import annotations

import contextlib
import logging
import math
from collections.abc import Awaitable, Callable, Mapping
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

import trio

from .._exceptions import (
    REQUEST_TIMEOUT,
    CapabilityError,
    LocalProtocolError,
    RequestError,
    TransportClosed,
)
from ..protocol import (
    JSONObject,
    RequestId,
    ResourceSubscriptions,
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

if TYPE_CHECKING:
    from ..auth import Principal
    from ..server._execution import Offload

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
    """What handlers reach through their Context: notifications, client requests, offload.

    ``SessionActor`` is one; the attributes below are its state.
    """

    core: ServerSession
    options: SessionOptions
    _outbox: Outbox
    _pending: dict[RequestId, _Pending]
    _closing: bool
    _stream_signals: bool
    _refuse_client_requests: str | None
    _subscriptions: ResourceSubscriptions | None
    _processes: ProcessPool | None
    _principal_holder: PrincipalHolder | None
    #: set by a session shared with replicas: writes the subscriptions where all see them
    share_subscriptions: Callable[[], Awaitable[None]] | None

    @property
    def principal(self) -> Principal | None:
        """The session's principal as of now (None: stdio, or no authorization)."""
        holder = self._principal_holder
        return principal_of(holder.principal) if holder is not None else None

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
        limit = self._outbox.max_message_bytes
        if serialize({"method": method, "params": params}, limit) is None:
            # Found now, the handler hears why; found by the writer, it would only wait.
            raise LocalProtocolError(
                f"cannot send {describe(method)} to the client: its params cannot be "
                "written as JSON"
                + ("" if limit is None else f" within the {limit}-byte message limit"),
                data=None if limit is None else {"limit": limit},
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
        """Remember that the client wants updates of ``uri``.

        Raises:
            RemoteProtocolError: the session's subscriptions would go past a limit of
                ``ResourceSubscriptions`` (-32602, ``data: {"limit": …}``).
        """
        if self._subscriptions is None:
            self._subscriptions = ResourceSubscriptions()
        self._subscriptions.add(uri)

    def unsubscribe(self, uri: str) -> None:
        """Forget the client's subscription to ``uri``."""
        if self._subscriptions is not None:
            self._subscriptions.discard(uri)

    async def subscriptions_changed(self) -> None:
        """Tell the replicas sharing the session, if any (``share_subscriptions``)."""
        share = self.share_subscriptions
        if share is not None:
            await share()

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
