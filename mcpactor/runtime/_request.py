# What every Request actor does around its handler, in both eras: its trace span, its
# log context, the handler's failure turned into the error it is answered with, and the
# metrics of its end. A session's request actor (_session_actor.py) and a 2026-07-28
# request (_stateless.py) both run their handler through ``handled``; each then has its
# answer built by its protocol core. It is also the one point every request crosses
# where the server's middleware (_chain.py) wraps the handler.

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable

import trio

from .._exceptions import INTERNAL_ERROR, ProtocolError, RequestError
from ..protocol import JSONObject, RequestId, describe, describe_error
from ..server import Context, MiddlewareChain
from ._chain import through
from ._history import tool_error
from ._metrics import CANCELLED, ERROR, LOG_CONTEXT, METRICS, OK

__all__ = ["handled"]

_log = logging.getLogger("mcpactor")


async def handled(
    step: Callable[[str, JSONObject | None, Context], Awaitable[JSONObject]],
    ctx: Context,
    chain: MiddlewareChain,
    scope: trio.CancelScope | None,
    method: str,
    params: JSONObject | None,
    request_id: RequestId,
    session_id: str | None,
    version: str,
    clock: trio.abc.Clock,
    started: float,
    principal: object = None,
) -> JSONObject | RequestError | ProtocolError:
    """Serve the request with ``step`` through ``chain``: the result, or the error to answer.

    ``scope`` is the request's cancel scope (the middleware's ``call.cancel_scope``). A
    cancellation goes through (the request's scope answers for it) and counts as one.
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
            if chain.first is None:
                result = await step(method, params, ctx)
            else:
                served = await through(chain, step, method, params, ctx, scope)
                assert served is not None
                result = served
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
            outcome, error, detail = ERROR, "tool", tool_error(result)
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
