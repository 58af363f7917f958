# One 2026-07-28 request being served (a ``Flight``): what the live tree shows of it, and
# the Peer of its Context. ``StatelessHost.serve`` (_stateless.py) makes one per request.

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

import trio

from .._exceptions import METHOD_NOT_FOUND, CapabilityError, RequestError
from ..protocol import JSONObject, Notification, Request, RequestId, describe
from ._messages import SessionOptions
from ._offload import ProcessPool, call_handler
from ._peer_base import Sessionless, principal_of

if TYPE_CHECKING:
    from ..auth import Principal
    from ..protocol import Envelope
    from ..server import Context, Offload

__all__ = ["Emit", "Flight", "FlightHost"]

T = TypeVar("T")

#: how a stateless request's notifications reach its transport
Emit = Callable[[JSONObject], Awaitable[None]]


class FlightHost(Protocol):
    """What a Flight needs of the host serving it (``StatelessHost`` is one)."""

    session_options: SessionOptions

    def _pool(self) -> ProcessPool:
        """The worker processes of offloaded tools."""
        ...

    async def call(
        self,
        method: str,
        params: JSONObject | None,
        ctx: Context,
        envelope: Envelope,
        principal: object,
    ) -> JSONObject:
        """Serve the request (its handler, and the revision's shaping of its result)."""
        ...


class Flight(Sessionless):
    """One stateless request being served, and the Peer of its Context.

    The live tree reads what it is, since when, its progress and its cancel scope;
    its handler's notifications go to the request's own stream through it.
    """

    __slots__ = ("_admitted", "_host", "emit", "progress", "scope", "served", "started")

    def __init__(
        self,
        host: FlightHost,
        request: Request,
        emit: Emit,
        admitted: object,
        scope: trio.CancelScope | None,
        started: float,
    ) -> None:
        self._host = host
        #: the request (``request`` is the Peer's way to ask the client)
        self.served = request
        #: what passes a message for the request's stream on to the transport
        self.emit = emit
        # What the transport admitted the request as; read as a Principal on demand.
        self._admitted = admitted
        #: the caller's scope around the request (a scope of our own would cost more than
        #: the rest of this record: this is the protocol's own way to end the request)
        self.scope = scope
        self.started = started
        #: the last progress its handler reported, with its total and message
        self.progress: tuple[float, float | None, str | None] | None = None

    @property
    def principal(self) -> Principal | None:
        """The principal the HTTP layer admitted this request as (None: no authorization)."""
        return principal_of(self._admitted)

    async def notify(
        self, method: str, params: JSONObject, *, related_request_id: RequestId | None
    ) -> None:
        """Send a notification on the request's own stream (noting its progress)."""
        if method == "notifications/progress":
            progress, total = params.get("progress"), params.get("total")
            note = params.get("message")
            if isinstance(progress, int | float):
                self.progress = (
                    float(progress),
                    float(total) if isinstance(total, int | float) else None,
                    note if isinstance(note, str) else None,
                )
        await self.emit(Notification(method, params).to_json())

    def step(self, method: str, params: JSONObject | None, ctx: Context) -> Awaitable[JSONObject]:
        """Serve the request's method with ``params``: the innermost step of its chain.

        What to await for it: the host's call itself (no frame of this one's in between).
        """
        # A Flight's Context is negotiated with the request's envelope (no cast: a call).
        envelope: Envelope = ctx.negotiated  # type: ignore[assignment]
        return self._host.call(method, params, ctx, envelope, self._admitted)

    def cancel(self, reason: str) -> bool:
        """End the request as its client leaving would; False if it cannot be cancelled."""
        scope = self.scope
        if scope is None or scope.cancel_called:
            return False
        scope.cancel(reason)
        return True

    def _refusal(self, method: str) -> Exception:
        # At a stateless revision questions are asked in results (MRTR).
        return CapabilityError(
            f"cannot send {describe(method)} to the client: a stateless request asks in "
            "its result (input_required)"
        )

    async def run_sync(self, fn: Callable[[], T]) -> T:
        """Run a blocking handler in a worker thread under the shared limiter."""
        limiter = self._host.session_options.thread_limiter
        return await trio.to_thread.run_sync(fn, limiter=limiter)

    async def call(
        self,
        fn: Callable[..., Any],
        kwargs: Mapping[str, Any],
        *,
        offload: Offload,
        timeout: float | None,
    ) -> Any:
        """Run a tool's function as ``offload`` says, cancelled after ``timeout`` seconds."""
        host = self._host
        return await call_handler(
            fn,
            kwargs,
            offload=offload,
            timeout=timeout,
            limiter=host.session_options.thread_limiter,
            processes=host._pool(),
        )

    @property
    def tasks(self) -> Any:
        """The session era's task table: a stateless request has none."""
        raise RequestError(METHOD_NOT_FOUND, "tasks of a session are not served here")
