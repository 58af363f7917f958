# Stateless requests on a pipe: 2026-07-28 beside (or without) a session on stdio.
#
# On stdio a request is routed by its envelope: one whose ``params._meta`` names a
# protocol version (``has_envelope``) is served by the StatelessHost, every other
# message goes to the session as before. The router sees each message before the
# session's inbox; for a session-era message that costs the envelope check and nothing
# else. Each stateless request is a Request actor in the router's nursery, inside a
# CancelScope of its own (``notifications/cancelled`` naming its id cancels it, and
# ends a listen stream, which then sends nothing more). What it sends — notifications,
# then its answer — goes to the pipe's one sink. When input ends, requests get the
# session's grace period; listen streams end with their closing result.
#
# The router also knows what of the pipe's is being served (``quiet``): its own
# requests, and the session's once the session was handed a message (before that it
# serves nothing), so that the sink writes a lone answer at once and leaves answers
# made together to its writer task, to leave in one write.

from __future__ import annotations

import logging
from collections.abc import Awaitable
from typing import TYPE_CHECKING, Final

import trio

from .._exceptions import INVALID_REQUEST, ProtocolError
from ..protocol import (
    PROTOCOL_VERSION,
    JSONObject,
    JSONValue,
    Request,
    RequestId,
    describe,
    error_message,
)
from ..runtime import Outbound, OutboundKind, StatelessHost

if TYPE_CHECKING:
    from ..runtime import SessionActor
    from ._pipe import PipeSink

__all__ = ["PipeRouter"]

_log = logging.getLogger("mcpactor")

_CANCELLED: Final = "notifications/cancelled"
_TASK_NAME: Final = "mcpactor.stateless-request"
_RESPONSE: Final = OutboundKind.RESPONSE
_NOTIFICATION: Final = OutboundKind.NOTIFICATION


class PipeRouter:
    """Takes a pipe's stateless requests (and their cancellations) off the session."""

    def __init__(
        self,
        host: StatelessHost,
        sink: PipeSink,
        nursery: trio.Nursery,
        session: SessionActor | None = None,
    ) -> None:
        self.host = host
        self._sink = sink
        self._nursery = nursery
        self._session = session
        # The session was handed a message: its requests count as the pipe's from then.
        self._session_used = False
        self._scopes: dict[RequestId, trio.CancelScope] = {}
        # Bound once: taken for every request.
        self._serve = host.serve
        self._emit = self._notify
        self._request_done = self._done

    @property
    def in_flight(self) -> int:
        """How many stateless requests of this pipe are being served."""
        return len(self._scopes)

    def quiet(self) -> bool:
        """Whether nothing of the pipe's is being served, stateless or in the session."""
        if self._scopes:
            return False
        session = self._session
        return not (self._session_used and session is not None and session.requests_in_flight)

    def __call__(self, item: JSONValue | ProtocolError) -> bool:
        """Take ``item`` if it is a stateless request or cancels one; else leave it."""
        if type(item) is dict:
            params = item.get("params")
            if "id" in item:
                # has_envelope, inline: this runs for every request on the pipe
                meta = params.get("_meta") if type(params) is dict else None
                method = item.get("method")
                request_id = item["id"]
                if (
                    type(meta) is dict
                    and PROTOCOL_VERSION in meta
                    and type(method) is str
                    and type(request_id) in (str, int)
                ):
                    if request_id in self._scopes:
                        why = f"request id {describe(request_id)} is in use"
                        refusal = error_message(request_id, INVALID_REQUEST, why)
                        self._nursery.start_soon(self._refuse, Outbound(_RESPONSE, refusal))
                        return True
                    scope = self._scopes[request_id] = trio.CancelScope()
                    # Taken now, served even if the input ends before its task first runs.
                    # The host's serve is the task itself (arguments by position:
                    # start_soon takes no keywords): envelope, principal and keep-alive
                    # are its defaults.
                    self._nursery.start_soon(
                        self._serve,
                        Request(request_id, method, params),  # type: ignore[arg-type]
                        self._emit,
                        None,
                        None,
                        None,
                        scope,
                        not self.host.stopping,
                        self._request_done,
                        name=_TASK_NAME,
                    )
                    return True
            elif self._scopes and item.get("method") == _CANCELLED and type(params) is dict:
                cancelled = self._scopes.get(params.get("requestId"))  # type: ignore[arg-type]
                if cancelled is not None:
                    cancelled.cancel("cancelled by the client")
                    return True
        self._session_used = True
        return False

    async def _notify(self, message: JSONObject) -> None:
        # A notification of a request's, to the sink (waiting for room there). On a pipe
        # nothing but the bytes matter: the request it belongs to is not named.
        try:
            await self._sink.send(Outbound(_NOTIFICATION, message))
        except trio.ClosedResourceError:
            # The pipe closed: nothing more can be sent for any request of the pipe,
            # which end as cancelled ones do.
            _log.debug("the pipe closed while %d requests ran", len(self._scopes))
            for scope in self._scopes.values():
                scope.cancel("the pipe closed")
            await trio.lowlevel.checkpoint()

    def _done(self, request_id: RequestId, answer: JSONObject | None) -> Awaitable[None] | None:
        # Over: no longer in flight, so that with nothing else in flight the pipe is
        # quiet and the answer is written in the request's task, not the writer's. The
        # id may be in use again from now on. The request waits for room for its answer
        # in the sink, as backpressure.
        del self._scopes[request_id]
        if answer is None:
            return None
        if self._sink.closed:
            _log.debug("the pipe closed before request %s was answered", describe(request_id))
            return None
        return self._sink.send(Outbound(_RESPONSE, answer, request_id))

    async def _refuse(self, refusal: Outbound) -> None:
        try:
            await self._sink.send(refusal)
        except trio.ClosedResourceError:
            _log.debug("the pipe closed before a refusal was sent")
