# The tree as JSON: one snapshot, the replicas sharing a store, the SSE stream of
# snapshots a page reads while it is open, the history of what ended (requests and
# the operators' actions), the rates per tool and client, and one request's story.
# Query parameters are clipped and parsed with limits before use.

from __future__ import annotations

import math
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import TYPE_CHECKING, Any, Final

import orjson
import trio
from quart import Response, current_app, make_response, request
from quart_trio import QuartTrio

from ..runtime import History, Observatory
from ._responses import MAX_PARAM, audit_trail, json_response
from ._story import shared_story_of, story, task_story

if TYPE_CHECKING:
    from ..store import RedisSharedHistory as SharedHistory

__all__ = ["MIN_INTERVAL", "OUTCOMES", "ReadinessView", "install_api"]

#: the served server's readiness, as ``Readiness.describe`` tells it: ``ready``,
#: ``starting``, ``draining`` or ``unavailable``, and why when unavailable
ReadinessView = Callable[[], Awaitable[tuple[str, str | None]]]

#: the outcomes the history is filtered by
OUTCOMES: Final = ("ok", "error", "cancelled", "timed out")

#: the shortest time between two snapshots of the SSE stream (at most 4 a second)
MIN_INTERVAL: Final = 0.25
_DEFAULT_INTERVAL: Final = 0.5
_MAX_LIMIT: Final = 1000
# The most of why the server is not ready that a snapshot carries (the store's words).
_MAX_WHY: Final = 500


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


async def _history(observatory: Observatory, shared: SharedHistory | None) -> dict[str, Any]:
    # The requests that ended and the audit trail, filtered as the query asks; with a
    # shared store, every replica's, each entry naming its replica.
    filters = _history_filters()
    trail = list(audit_trail())
    answer = observatory.history(cancelled_by=_cancelled_by(trail), **filters)
    actions = trail[::-1]
    if shared is not None:
        actions = await _merge(answer, actions, shared, filters)
    find = filters["find"]
    answer["audit"] = [
        entry
        for entry in actions
        if find is None or find in orjson.dumps(entry["target"]).decode().lower()
    ][: filters["limit"]]
    return answer


async def _merge(
    answer: dict[str, Any],
    actions: list[dict[str, Any]],
    shared: SharedHistory,
    filters: dict[str, Any],
) -> list[dict[str, Any]]:
    # This replica's ring and trail (always current) with the others' entries from the
    # store; a store out of reach leaves this replica's, said so in ``shared``.
    me = shared.replica
    items = [{**item, "replica": me} for item in answer["items"]]
    actions = [{**entry, "replica": me} for entry in actions]
    read = await shared.read()
    answer["shared"] = {"self": me, "size": shared.size, "unavailable": read is None}
    if read is not None:
        ended, audited = read
        actions += [entry for entry in map(_action, audited) if entry and entry["replica"] != me]
        actions.sort(key=lambda entry: entry["at"], reverse=True)
        cancelled_by = _cancelled_by(actions)
        wanted = {name: filters[name] for name in ("outcome", "tool", "client", "find")}
        for entry in ended:
            item = _item(entry)
            if item is None or item["replica"] == me:
                continue
            if item["outcome"] == "cancelled" and item["cancelled_by"] is None:
                key = (str(item["session"]), str(item["request"]))
                item["cancelled_by"] = cancelled_by.get(key)
            if History.passes(item, **wanted):
                items.append(item)
        items.sort(key=lambda item: item["at"], reverse=True)
    answer["items"] = items[: filters["limit"]]
    return actions


#: what a history entry from the store must hold to be shown: its fields and their types
_TEXTS: Final = ("method", "name", "error", "detail", "session", "client", "principal")


def _item(entry: dict[str, Any]) -> dict[str, Any] | None:
    # Another replica's history entry, as this page shows its own (or None: damaged).
    if entry.get("outcome") not in OUTCOMES or not isinstance(entry.get("method"), str):
        return None
    item = {name: entry.get(name) for name in _TEXTS}
    if any(value is not None and not isinstance(value, str) for value in item.values()):
        return None
    request = entry.get("request")
    seconds = entry.get("seconds")
    return {
        **item,
        "at": entry["at"],
        "outcome": entry["outcome"],
        "seconds": seconds if isinstance(seconds, int | float) else 0.0,
        "request": request if isinstance(request, int | str) else None,
        "cancelled_by": entry.get("cancelled_by")
        if isinstance(entry.get("cancelled_by"), str)
        else None,
        "trace_id": entry.get("trace_id") if isinstance(entry.get("trace_id"), str) else None,
        "replica": entry["replica"],
    }


def _action(entry: dict[str, Any]) -> dict[str, Any] | None:
    # Another replica's audit entry (or None: damaged).
    if not isinstance(entry.get("target"), dict):
        return None
    fields = ("action", "who", "from", "result")
    if any(not isinstance(entry.get(name), str | None) for name in fields):
        return None
    return {name: entry.get(name) for name in ("at", "target", *fields, "replica")}


def _cancelled_by(trail: list[dict[str, Any]]) -> dict[tuple[str, str], str]:
    # Who cancelled a (session, request id), from the audit trail, when an operator did.
    return {
        (str(entry["target"].get("session")), str(entry["target"].get("request"))): (
            f"the operator ({entry['who']}, from {entry['from']})"
        )
        for entry in trail
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


async def _story(observatory: Observatory, shared: SharedHistory | None) -> Response:
    # One request's story: running (session and request, or a stateless key) or ended
    # (session, request and when it ended); or a task's (task). With ``replica`` naming
    # another replica, the story it shared with the request's history entry.
    args = request.args
    replica = args.get("replica")
    if shared is not None and replica is not None and replica != shared.replica:
        return await _other_story(shared, replica[:MAX_PARAM])
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
        cancelled_by=_cancelled_by(list(audit_trail())),
    )
    if answer is None:
        return json_response({"error": "no such request is running or kept"}, 404)
    return json_response(answer)


async def _other_story(shared: SharedHistory, replica: str) -> Response:
    # An ended request of another replica: its entry in the shared history, found by
    # session, request and when it ended, with the story that replica shared.
    args = request.args
    session = (args.get("session") or "")[:MAX_PARAM] or None
    wanted = (args.get("request") or "")[:MAX_PARAM]
    at = _number(args.get("at"), -1.0)
    read = await shared.read()
    if read is None:
        return json_response({"error": "the shared history is unavailable"}, 503)
    ended, audited = read
    for entry in ended:
        item = _item(entry)
        if (
            item is None
            or item["replica"] != replica
            or item["session"] != session
            or str(item["request"]) != wanted
            or (at >= 0 and item["at"] != at)
        ):
            continue
        if item["outcome"] == "cancelled" and item["cancelled_by"] is None:
            trail = [action for action in map(_action, audited) if action]
            item["cancelled_by"] = _cancelled_by(trail).get((str(session), wanted))
        answer = shared_story_of(
            item, entry.get("story"), current_app.config.get("ADMIN_TRACE_URL")
        )
        return json_response(answer)
    return json_response({"error": "no such request is kept in the shared history"}, 404)


async def _readiness(readiness: ReadinessView | None) -> dict[str, Any] | None:
    # What a snapshot says of the server's readiness; None where nothing serves HTTP.
    if readiness is None:
        return None
    state, why = await readiness()
    return {"state": state, "why": None if why is None else why[:_MAX_WHY]}


def install_api(
    app: QuartTrio,
    observatory: Observatory,
    replicas: Callable[[], Awaitable[dict[str, Any]]] | None,
    shared: SharedHistory | None = None,
    readiness: ReadinessView | None = None,
) -> None:
    """Serve ``/api/tree``, ``/api/replicas``, ``/api/stream``, ``/api/history``,
    ``/api/rates`` and ``/api/request`` from ``observatory`` (the history merged with
    the other replicas' from ``shared``, when given); each snapshot of the tree says
    the server's ``readiness`` too."""

    @app.get("/api/tree")
    async def tree() -> Response:
        snapshot = observatory.snapshot(**_filters())
        snapshot["readiness"] = await _readiness(readiness)
        return json_response(snapshot)

    @app.get("/api/history")
    async def history() -> Response:
        return json_response(await _history(observatory, shared))

    @app.get("/api/rates")
    async def rates() -> Response:
        return json_response(_rates(observatory))

    @app.get("/api/request")
    async def request_story() -> Response:
        return await _story(observatory, shared)

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
                snapshot = observatory.snapshot(**filters)
                snapshot["readiness"] = await _readiness(readiness)
                data = orjson.dumps(snapshot)
                yield b"event: tree\ndata: " + data + b"\n\n"
                await trio.sleep(interval)

        response = await make_response(
            events(),
            200,
            {"Content-Type": "text/event-stream", "X-Accel-Buffering": "no"},
        )
        response.timeout = None  # type: ignore[union-attr]
        return response  # type: ignore[return-value]
