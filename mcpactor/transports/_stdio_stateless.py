# Stateless requests on a pipe: 2026-07-28 beside (or without) a session on stdio.
#
# On stdio a request is routed by its envelope: one whose ``params._meta`` names a
# protocol version (``has_envelope``) is served by the StatelessHost, every other
# message goes to the session as before. The router sees each message before the
# session's inbox; for a session-era message that costs the envelope check and nothing
# else. Each stateless request is a Request actor in the router's nursery, inside a
# CancelScope of its own (``notifications/cancelled`` naming its id cancels it, and
# ends a listen stream, which then sends nothing more). What it sends — notifications,
# then its answer — goes through the session's outbox, so the pipe keeps one writer.
# When input ends, requests get the session's grace period; listen streams end with
# their closing result.

from __future__ import annotations

import logging
from typing import Final

import trio

from .._exceptions import ProtocolError
from ..protocol import JSONObject, JSONValue, Request, RequestId, describe
from ..protocol._envelope import PROTOCOL_VERSION
from ..runtime import Outbound, Outbox
from ..runtime._messages import NOTIFICATION, RESPONSE
from ..runtime._stateless import StatelessHost

__all__ = ["PipeRouter"]

_log = logging.getLogger("mcpactor")

_CANCELLED: Final = "notifications/cancelled"
_TASK_NAME: Final = "mcpactor.stateless-request"


class PipeRouter:
    """Takes a pipe's stateless requests (and their cancellations) off the session."""

    def __init__(self, host: StatelessHost, outbox: Outbox, nursery: trio.Nursery) -> None:
        self.host = host
        self._outbox = outbox
        self._nursery = nursery
        self._scopes: dict[RequestId, trio.CancelScope] = {}

    @property
    def in_flight(self) -> int:
        """How many stateless requests of this pipe are being served."""
        return len(self._scopes)

    def __call__(self, item: JSONValue | ProtocolError) -> bool:
        """Take ``item`` if it is a stateless request or cancels one; else leave it."""
        if type(item) is not dict:
            return False
        params = item.get("params")
        if "id" in item:
            # has_envelope, inline: this runs for every request on the pipe
            if type(params) is not dict:
                return False
            meta = params.get("_meta")
            if type(meta) is not dict or PROTOCOL_VERSION not in meta:
                return False
            method = item.get("method")
            request_id = item["id"]
            if type(method) is not str or type(request_id) not in (str, int):
                return False
            if request_id in self._scopes:
                self._send_soon(
                    _error(request_id, -32600, f"request id {describe(request_id)} is in use")
                )
                return True
            scope = trio.CancelScope()
            self._scopes[request_id] = scope
            # Taken now, served even if the input ends before its task first runs.
            self._nursery.start_soon(
                self._serve,
                Request(request_id, method, params),
                scope,
                not self.host.stopping,
                name=_TASK_NAME,
            )
            return True
        if self._scopes and item.get("method") == _CANCELLED and type(params) is dict:
            cancelled = self._scopes.get(params.get("requestId"))  # type: ignore[arg-type]
            if cancelled is not None:
                cancelled.cancel("cancelled by the client")
                return True
        return False

    async def _serve(self, request: Request, scope: trio.CancelScope, admitted: bool) -> None:
        request_id = request.id

        async def emit(message: JSONObject) -> None:
            await self._outbox.send(Outbound(NOTIFICATION, message, request_id))

        try:
            with scope:
                answer = await self.host.serve(request, emit, scope=scope, admitted=admitted)
                # Answered: no longer in flight, so that with nothing else in flight the
                # pipe is quiet and the answer is written in this task, not the writer's.
                del self._scopes[request_id]
                # Queued without another trip through the scheduler, as the session's
                # answers are, unless the outbox is full (then wait, as backpressure).
                try:
                    self._outbox.send_nowait(Outbound(RESPONSE, answer, request_id))
                except trio.WouldBlock:
                    await self._outbox.send(Outbound(RESPONSE, answer, request_id))
        except (trio.ClosedResourceError, trio.BrokenResourceError):
            _log.debug("the pipe closed before request %s was answered", describe(request_id))
        finally:
            # Answered, the id may be in use again (by a request of its own scope).
            if self._scopes.get(request_id) is scope:
                del self._scopes[request_id]

    def _send_soon(self, message: JSONObject) -> None:
        try:
            self._outbox.send_nowait(Outbound(RESPONSE, message))
        except trio.WouldBlock:
            self._nursery.start_soon(self._outbox.send, Outbound(RESPONSE, message))
        except (trio.ClosedResourceError, trio.BrokenResourceError):
            pass


def _error(request_id: RequestId, code: int, message: str) -> JSONObject:
    return {"jsonrpc": "2.0", "id": request_id, "error": {"code": code, "message": message}}
