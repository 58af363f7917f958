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
from collections.abc import Awaitable
from typing import Final

import trio

from .._exceptions import ProtocolError
from ..protocol import JSONObject, JSONValue, Request, RequestId, describe, error_message
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
        # Bound once: taken for every request.
        self._serve = host.serve
        self._emit = self._notify
        self._request_done = self._done

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

            # Taken now, served even if the input ends before its task first runs. The
            # host's serve is the task itself (arguments by position: start_soon takes
            # no keywords): envelope, principal and keep-alive are its defaults.
            self._nursery.start_soon(
                self._serve,
                Request(request_id, method, params),
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
        if self._scopes and item.get("method") == _CANCELLED and type(params) is dict:
            cancelled = self._scopes.get(params.get("requestId"))  # type: ignore[arg-type]
            if cancelled is not None:
                cancelled.cancel("cancelled by the client")
                return True
        return False

    async def _notify(self, message: JSONObject) -> None:
        # A notification of a request's, through the outbox (waiting for room there). On
        # a pipe nothing but the bytes matter: the request it belongs to is not named.
        try:
            await self._outbox.send(Outbound(NOTIFICATION, message))
        except (trio.ClosedResourceError, trio.BrokenResourceError):
            # The pipe closed: nothing more can be sent for any request of the pipe,
            # which end as cancelled ones do.
            _log.debug("the pipe closed while %d requests ran", len(self._scopes))
            for scope in self._scopes.values():
                scope.cancel("the pipe closed")
            await trio.lowlevel.checkpoint()

    def _done(self, request_id: RequestId, answer: JSONObject | None) -> Awaitable[None] | None:
        # Over: no longer in flight, so that with nothing else in flight the pipe is
        # quiet and the answer is written in the request's task, not the writer's. The
        # id may be in use again from now on.
        del self._scopes[request_id]
        if answer is None:
            return None
        # Queued without another trip through the scheduler, as the session's answers
        # are, unless the outbox is full: then the request waits, as backpressure.
        item = Outbound(RESPONSE, answer, request_id)
        try:
            self._outbox.send_nowait(item)
        except trio.WouldBlock:
            return self._send_later(item)
        except (trio.ClosedResourceError, trio.BrokenResourceError):
            _log.debug("the pipe closed before request %s was answered", describe(request_id))
        return None

    async def _send_later(self, item: Outbound) -> None:
        try:
            await self._outbox.send(item)
        except (trio.ClosedResourceError, trio.BrokenResourceError):
            _log.debug(
                "the pipe closed before request %s was answered", describe(item.related_request_id)
            )

    def _send_soon(self, message: JSONObject) -> None:
        try:
            self._outbox.send_nowait(Outbound(RESPONSE, message))
        except trio.WouldBlock:
            self._nursery.start_soon(self._outbox.send, Outbound(RESPONSE, message))
        except (trio.ClosedResourceError, trio.BrokenResourceError):
            pass


def _error(request_id: RequestId, code: int, message: str) -> JSONObject:
    return error_message(request_id, code, message)
