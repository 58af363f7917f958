# The parts of a snapshot of the live tree, each made from the actors' views (_views.py).
#
# Everything here turns views into JSON-able values and bounds them: text that came from
# the wire (methods, tool and client names, principals) is cut to ``MAX_TEXT``
# characters, a session lists at most ``MAX_ITEMS`` requests, tasks and streams and counts
# the rest, and ages and deadlines are seconds from ``now`` on trio's clock. The shape
# they make up is described at the top of ``_snapshot.py``.

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any, Final

import attrs

from ..protocol import JSONValue, RequestId
from ._texts import MAX_TEXT, client_name, principal_text, text

if TYPE_CHECKING:
    from ..server import Server
    from ._offload import ProcessPool
    from ._views import HttpSessionView, RequestView, SessionView, StreamView

__all__ = [
    "MAX_ITEMS",
    "MAX_TEXT",
    "Wanted",
    "name_of",
    "plugin_items",
    "seconds",
    "session_item",
    "stateless_item",
    "task_items",
    "text",
    "worker_totals",
]

#: requests, tasks and streams listed per session (the rest are counted)
MAX_ITEMS: Final = 50


def seconds(value: float) -> float:
    """Seconds as a snapshot shows them: to the millisecond."""
    return round(value, 3)


def name_of(method: str | None, params: object) -> str | None:
    """What a request calls: a tool's or prompt's name, a resource's URI."""
    if method is None or type(params) is not dict:
        return None
    for key in ("name", "uri"):
        value = params.get(key)
        if isinstance(value, str):
            return text(value)
    return None


def _wire_id(request_id: RequestId) -> JSONValue:
    return text(request_id) if isinstance(request_id, str) else request_id


def _tool_timeout(server: Any, name: str, depth: int = 0) -> float | None:
    # The seconds a tool may run (its own timeout, else its server's): the deadline
    # ``call_handler`` gives it, found the way a call is routed through mounts.
    entry = getattr(getattr(server, "_registry", None), "tools", {}).get(name)
    if entry is not None:
        timeout = entry.execution.timeout
        return timeout if timeout is not None else getattr(server, "tool_timeout", None)
    if depth > 8:
        return None
    for mount in getattr(server, "mounts", ()):
        if mount.prefix is None:
            found = _tool_timeout(mount.server, name, depth + 1)
        elif name.startswith(mount.prefix + "_"):
            found = _tool_timeout(mount.server, name[len(mount.prefix) + 1 :], depth + 1)
        else:
            continue
        if found is not None:
            return found
    return None


@attrs.frozen
class Wanted:
    """What a snapshot lists: requests by ``tool`` and ``slow``, sessions by ``client``.

    ``tool`` and ``client`` are lowercase parts of a name; ``slow`` is the least age in
    seconds. With a request filter only sessions with a matching request are listed.
    """

    now: float
    tool: str | None = None
    client: str | None = None
    slow: float | None = None

    def request(self, method: str, name: str | None, started: float) -> bool:
        """Whether a request of ``method`` calling ``name`` since ``started`` is listed."""
        if self.slow is not None and self.now - started < self.slow:
            return False
        if self.tool is None:
            return True
        return self.tool in method.lower() or (name is not None and self.tool in name.lower())

    def session(self, view: SessionView) -> bool:
        """Whether the session is listed: its client, and a request the filter wants."""
        if self.client is not None:
            client = client_name(view.client_info)
            if client is None or self.client not in client.lower():
                return False
        if self.tool is None and self.slow is None:
            return True
        return any(
            self.request(request.method, name_of(request.method, request.params), request.started)
            for request in view.requests
            if request.method is not None and request.started is not None
        )


def _request_item(
    view: SessionView, request: RequestView, wanted: Wanted
) -> dict[str, Any] | None:
    # A session's request, or None if the filter leaves it out.
    now = wanted.now
    deadline = request.deadline
    if request.method is None or request.started is None:
        # Opened in this very step, its actor not started yet.
        started, method, name = now, "(starting)", None
    else:
        started, method = request.started, request.method
        name = name_of(method, request.params)
        if method == "tools/call" and name is not None:
            timeout = _tool_timeout(view.server, name)
            if timeout is not None:
                deadline = min(deadline, started + timeout)
    if not wanted.request(method, name, started):
        return None
    return {
        "id": _wire_id(request.id),
        "method": text(method),
        "name": name,
        "age": seconds(now - started),
        "progress": request.progress,
        "total": request.total,
        "message": text(request.message),
        "deadline_in": seconds(deadline - now) if math.isfinite(deadline) else None,
        "cancelled": request.cancelled,
    }


def _request_items(view: SessionView, wanted: Wanted) -> tuple[list[dict[str, Any]], int]:
    # The session's requests the filter wants, the oldest first, and how many were left.
    items: list[dict[str, Any]] = []
    more = 0
    for request in view.requests:
        item = _request_item(view, request, wanted)
        if item is None:
            continue
        if len(items) >= MAX_ITEMS:
            more += 1
            continue
        items.append(item)
    items.sort(key=lambda r: -r["age"])
    return items, more


def _stream_item(stream: StreamView) -> dict[str, Any]:
    return {
        "id": stream.id,
        "kind": "GET" if stream.standalone else "POST",
        "pending": stream.pending,
        "buffered": stream.buffered,
        "attached": stream.attached,
        "last_event_id": text(stream.last_event_id),
    }


def task_items(
    table: Any, now: float, limit: int, *, principals: bool = False
) -> tuple[list[dict[str, Any]], int]:
    """The first ``limit`` tasks of a task table, and how many more it holds."""
    limit = max(0, limit)
    items: list[dict[str, Any]] = []
    for task in table.view(limit) if limit else ():
        item: dict[str, Any] = {
            "id": task.id,
            "status": task.status,
            "age": seconds(now - task.created),
            "ttl_left": seconds(task.expires - now) if task.expires is not None else None,
            "message": text(task.message),
        }
        if principals:
            item["principal"] = text(task.principal)
        items.append(item)
    return items, max(0, table.statistics().stored - limit)


def _state(http: HttpSessionView | None) -> str:
    if http is None:
        return "running"
    if http.closing:
        return "closing"
    return "awake" if http.awake else "asleep"


def session_item(
    key: str,
    transport: str,
    since: float,
    view: SessionView,
    http: HttpSessionView | None,
    wanted: Wanted,
) -> dict[str, Any]:
    """A session of the tree: who it serves, and its requests, tasks and streams."""
    now = wanted.now
    requests, more_requests = _request_items(view, wanted)
    tasks, more_tasks = task_items(view.tasks, now, MAX_ITEMS)
    streams = http.streams if http is not None else ()
    return {
        "id": text(key),
        "transport": transport,
        "state": _state(http),
        "revision": view.revision,
        "client": client_name(view.client_info),
        "age": seconds(now - since),
        "idle": seconds(now - http.last_active) if http is not None else None,
        "principal": principal_text(http.principal if http is not None else None),
        "requests": requests,
        "tasks": tasks,
        "streams": [_stream_item(stream) for stream in streams[:MAX_ITEMS]],
        "more": {
            "requests": more_requests,
            "tasks": more_tasks,
            "streams": max(0, len(streams) - MAX_ITEMS),
        },
    }


def stateless_item(request: RequestView, name: str | None, now: float) -> dict[str, Any]:
    """A stateless request (or listen stream) of the tree."""
    assert request.started is not None
    return {
        "key": request.key,
        "id": _wire_id(request.id),
        "method": text(request.method),
        "name": name,
        "age": seconds(now - request.started),
        "progress": request.progress,
        "total": request.total,
        "message": text(request.message),
        "cancelled": request.cancelled,
        "principal": principal_text(request.principal),
    }


def plugin_items(servers: Iterable[Server]) -> list[dict[str, Any]]:
    """The servers served and those mounted in them, with their calls' counts."""
    plugins: list[dict[str, Any]] = []
    for server in servers:
        mounts = server.mounts
        if not mounts:
            plugins.append(
                {
                    "name": text(server.name),
                    "prefix": None,
                    "state": "running",
                    "error": None,
                    "in_flight": None,
                    "waiting": 0,
                    "total": None,
                    "max_concurrent": None,
                }
            )
        for mount in mounts:
            stats = mount.statistics()
            plugins.append(
                {
                    "name": text(stats.name),
                    "prefix": stats.prefix,
                    "state": stats.state,
                    "error": text(stats.error),
                    "in_flight": stats.calls_in_flight,
                    "waiting": stats.calls_waiting,
                    "total": stats.calls_total,
                    "max_concurrent": stats.max_concurrent,
                }
            )
    return plugins


def worker_totals(pools: Iterable[ProcessPool | None]) -> dict[str, int]:
    """The worker processes of ``pools`` (each counted once; None is skipped), summed."""
    seen: list[ProcessPool] = []
    totals = {"pools": 0, "idle": 0, "busy": 0, "started": 0, "killed": 0}
    for pool in pools:
        if pool is None or pool in seen:
            continue
        seen.append(pool)
        stats = pool.statistics()
        totals["pools"] += 1
        totals["idle"] += stats.idle
        totals["busy"] += stats.busy
        totals["started"] += stats.started
        totals["killed"] += stats.killed
    return totals
