# What every Request actor does around its handler, in both eras: its trace span, its
# log context, the handler's failure turned into the error it is answered with, and the
# metrics of its end. A session's request actor (_session_actor.py) and a 2026-07-28
# request (_stateless.py) both run their handler through ``handled``; each then has its
# answer built by its protocol core.

from __future__ import annotations

import logging
from collections.abc import Coroutine, Mapping
from typing import Any

import trio

from .._exceptions import INTERNAL_ERROR, ProtocolError, RequestError
from ..protocol import JSONObject, RequestId, describe, describe_error
from ._metrics import CANCELLED, ERROR, LOG_CONTEXT, METRICS, OK

__all__ = ["handled"]

_log = logging.getLogger("mcpactor")


async def handled(
    handler: Coroutine[Any, Any, JSONObject],
    method: str,
    params: Mapping[str, Any] | None,
    request_id: RequestId,
    session_id: str | None,
    version: str,
    clock: trio.abc.Clock,
    started: float,
    principal: object = None,
) -> JSONObject | RequestError | ProtocolError:
    """Await ``handler``: its result, or the error its request is to be answered with.

    A cancellation goes through (the request's scope answers for it) and counts as one.
    ``principal`` is what a request without a session was admitted as (the history's).
    """
    metrics = METRICS
    tracer = metrics.tracer
    trace = (
        tracer.start(method, params, request_id, session_id, version)
        if tracer is not None
        else None
    )
    token = LOG_CONTEXT.set((session_id, request_id, method)) if metrics.log_context else None
    outcome = CANCELLED
    error: str | None = None
    detail: str | None = None
    try:
        try:
            result = await handler
        except (RequestError, ProtocolError) as exc:
            outcome, error, detail = ERROR, "request", exc.message
            return exc
        except Exception as exc:
            outcome, error = ERROR, "internal"
            # The one place a failing handler becomes an error response.
            shown = describe(method)
            _log.exception("%s failed (request %s)", shown, describe(request_id))
            why = detail = f"internal error in {shown}: {describe_error(exc)}"
            return RequestError(INTERNAL_ERROR, why)
        outcome = OK
        if result.get("isError") is True:
            outcome, error = ERROR, "tool"
        return result
    finally:
        ended = clock.current_time()
        metrics.request_ended(
            method, params, outcome, ended - started, error, detail, ended, principal
        )
        if trace is not None:
            trace.end(outcome, error)
        if token is not None:
            LOG_CONTEXT.reset(token)
