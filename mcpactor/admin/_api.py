# The tree as JSON: one snapshot, the replicas sharing a store, the SSE stream of
# snapshots a page reads while it is open, the history of what ended (requests and
# the operators' actions), the rates per tool and client, and one request's story.
# Query parameters are clipped and parsed with limits before use.

from __future__ import annotations

import math
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any, Final

import orjson
import trio
from quart import Response, current_app, make_response, request
from quart_trio import QuartTrio

from ..runtime import Observatory
from ._responses import MAX_PARAM, audit_trail, json_response
from ._story import story, task_story

__all__ = ["MIN_INTERVAL", "OUTCOMES", "install_api"]

#: the outcomes the history is filtered by
OUTCOMES: Final = ("ok", "error", "cancelled", "timed out")

#: the shortest time between two snapshots of the SSE stream (at most 4 a second)
MIN_INTERVAL: Final = 0.25
_DEFAULT_INTERVAL: Final = 0.5
_MAX_LIMIT: Final = 1000


def _number(text: str | None, default: float) -> float:
    if text is None or len(text) > 32:
        return default
    try:
        value = float(text)
    except ValueError:
        return default
    return value if math.isfinite(value) and value >= 0 else default


def _filters() -> dict[str, Any]:
    # The snapshot's filters, from the query string.
    args = request.args
    slow_ms = _number(args.get("slow_ms"), -1.0)
    limit = int(_number(args.get("limit"), 200))
    return {
        "limit": max(1, min(limit, _MAX_LIMIT)),
        "tool": (args.get("tool") or "")[:MAX_PARAM] or None,
        "client": (args.get("client") or "")[:MAX_PARAM] or None,
        "slow": slow_ms / 1000 if slow_ms >= 0 else None,
    }


def _text(name: str) -> str | None:
    return (request.args.get(name) or "")[:MAX_PARAM].lower() or None


def _history_filters() -> dict[str, Any]:
    outcome = request.args.get("outcome")
    return {
        "limit": max(1, min(int(_number(request.args.get("limit"), 200)), _MAX_LIMIT)),
        "outcome": outcome if outcome in OUTCOMES else None,
        "tool": _text("tool"),
        "client": _text("client"),
        "find": _text("find"),
    }


def _history(observatory: Observatory) -> dict[str, Any]:
    # The requests that ended and the audit trail, filtered as the query asks.
    filters = _history_filters()
    trail = list(audit_trail())
    answer = observatory.history(cancelled_by=_cancelled_by(), **filters)
    find = filters["find"]
    actions = [
        entry
        for entry in reversed(trail)
        if find is None or find in orjson.dumps(entry["target"]).decode().lower()
    ]
    answer["audit"] = actions[: filters["limit"]]
    return answer


def _cancelled_by() -> dict[tuple[str, str], str]:
    # Who cancelled a (session, request id), from the audit trail, when an operator did.
    return {
        (str(entry["target"].get("session")), str(entry["target"].get("request"))): (
            f"the operator ({entry['who']}, from {entry['from']})"
        )
        for entry in audit_trail()
        if entry["action"] == "cancel-request" and entry["result"] == "done"
    }


def _rates(observatory: Observatory) -> dict[str, Any]:
    # The rates over the window asked for, the rows the tool and client filters want.
    window = _number(request.args.get("window"), 60.0)
    answer = observatory.rates(window=window)
    tool, client = _text("tool"), _text("client")
    if tool is not None:
        answer["tools"] = [
            row
            for row in answer["tools"]
            if tool in row["method"].lower() or tool in (row["name"] or "").lower()
        ]
    if client is not None:
        answer["clients"] = [row for row in answer["clients"] if client in row["client"].lower()]
    return answer


def _story(observatory: Observatory) -> Response:
    # One request's story: running (session and request, or a stateless key) or ended
    # (session, request and when it ended); or a task's (task).
    args = request.args
    task = args.get("task")
    if task is not None:
        found = task_story(observatory, task[:MAX_PARAM])
        if found is None:
            return json_response({"error": "no such task is kept"}, 404)
        return json_response(found)
    key = args.get("key")
    at = _number(args.get("at"), -1.0)
    answer = story(
        observatory,
        current_app.config.get("ADMIN_LOGS"),
        session=(args.get("session") or "")[:MAX_PARAM] or None,
        request=(args.get("request") or "")[:MAX_PARAM],
        key=int(key) if key is not None and key.isdigit() and len(key) < 20 else None,
        at=at if at >= 0 else None,
        rules=current_app.config.get("ADMIN_REDACT"),
        trace_url=current_app.config.get("ADMIN_TRACE_URL"),
        cancelled_by=_cancelled_by(),
    )
    if answer is None:
        return json_response({"error": "no such request is running or kept"}, 404)
    return json_response(answer)


def install_api(
    app: QuartTrio,
    observatory: Observatory,
    replicas: Callable[[], Awaitable[dict[str, Any]]] | None,
) -> None:
    """Serve ``/api/tree``, ``/api/replicas``, ``/api/stream``, ``/api/history``,
    ``/api/rates`` and ``/api/request`` from ``observatory``."""

    @app.get("/api/tree")
    async def tree() -> Response:
        return json_response(observatory.snapshot(**_filters()))

    @app.get("/api/history")
    async def history() -> Response:
        return json_response(_history(observatory))

    @app.get("/api/rates")
    async def rates() -> Response:
        return json_response(_rates(observatory))

    @app.get("/api/request")
    async def request_story() -> Response:
        return _story(observatory)

    @app.get("/api/replicas")
    async def replica_list() -> Response:
        if replicas is None:
            return json_response({"shared": False, "unavailable": False, "replicas": []})
        return json_response(await replicas())

    @app.get("/api/stream")
    async def stream() -> Response:
        interval = _number(request.args.get("interval"), _DEFAULT_INTERVAL)
        interval = max(MIN_INTERVAL, min(interval, 60.0))
        filters = _filters()

        async def events() -> AsyncIterator[bytes]:
            # Runs only while a page is connected: the response ends with it.
            while True:
                data = orjson.dumps(observatory.snapshot(**filters))
                yield b"event: tree\ndata: " + data + b"\n\n"
                await trio.sleep(interval)

        response = await make_response(
            events(),
            200,
            {"Content-Type": "text/event-stream", "X-Accel-Buffering": "no"},
        )
        response.timeout = None  # type: ignore[union-attr]
        return response  # type: ignore[return-value]
