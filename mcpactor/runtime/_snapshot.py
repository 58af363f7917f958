# The live actor tree: what a running server is doing, read from the actors themselves.
#
# An ``Observatory`` is installed in one trio run (``install``); the actors that own
# sessions and requests register with it while they run (``observed``: the HTTP session
# manager, a stdio session and its stateless host), and the serving code names the
# Server it serves (``serve``). Nothing else is kept: ``snapshot`` walks the registered
# owners at that instant — their session tables, each session's running requests
# (``SessionActor._scopes`` and the start record beside them), task tables, streams and
# worker pools — so it cannot drift from what runs. With no Observatory installed the
# actors' hooks are one RunVar lookup when an owner starts; with one installed and
# nobody asking, nothing runs at all (no timer, no task).
#
# The snapshot is bounded: at most ``limit`` sessions are listed (those with the most
# requests running first, then the oldest), at most ``MAX_ITEMS`` requests, tasks and
# streams in each, at most ``limit`` stateless requests and tasks in all; the rest are
# counted. Text that came from the wire (methods, tool and client names, principals) is
# cut to ``MAX_TEXT`` characters. Ages are seconds on trio's clock (a MockClock in
# tests); the replica's wall-clock start is the one exception.
#
# Its shape (every key always present):
#
#   {"replica": {"id", "pid", "started" (Unix time), "uptime"},
#    "counts": {"sessions", "awake", "requests", "tasks_running", "tasks_stored",
#               "streams", "connections", "stateless", "listens"},
#    "plugins": [{"name", "prefix", "state", "error", "in_flight", "waiting", "total",
#                 "max_concurrent"}],
#    "sessions": {"total", "shown", "hidden_requests", "items": [
#        {"id", "transport", "state", "revision", "client", "age", "idle", "principal",
#         "requests": [{"id", "method", "name", "age", "progress", "deadline_in",
#                       "cancelled"}],
#         "tasks": [{"id", "status", "age", "ttl_left", "message"}],
#         "streams": [{"id", "kind", "pending", "buffered", "attached",
#                      "last_event_id"}],
#         "more": {"requests", "tasks", "streams"}}]},
#    "stateless": {"requests": [{"key", "id", "method", "name", "age", "progress",
#                                "cancelled", "principal"}],
#                  "listens": [...same...], "more"},
#    "tasks": {"items": [{"id", "status", "age", "ttl_left", "message", "principal"}],
#              "more"},
#    "workers": {"pools", "idle", "busy", "started", "killed"},
#    + one key per ``add_section``}
#
# Actions go through the paths the protocol uses: a request's cancel scope (answered with
# an error, since its client did not ask), ``tasks/cancel``'s path of the task table, and
# the session manager's close.

from __future__ import annotations

import contextlib
import heapq
import math
import os
import socket
import time
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any, Final

import trio

from ..protocol import JSONValue, RequestId

if TYPE_CHECKING:
    from ..server import Server
    from ._offload import ProcessPool
    from ._session_actor import SessionActor
    from ._stateless import Flight, StatelessHost
    from .http._http_session import HttpSession
    from .tasks import TaskEntry as _Task
    from .tasks import TaskManager as _TaskTable

# The session manager imports this module (to register itself), so it is not imported
# back, not even for types: a manager is known by what it has.
SessionManager = Any

__all__ = ["MAX_ITEMS", "MAX_TEXT", "Observatory", "current_observatory", "observed"]

#: the longest text from the wire a snapshot shows
MAX_TEXT: Final = 200
#: requests, tasks and streams listed per session (the rest are counted)
MAX_ITEMS: Final = 50
#: why an action ended a request (the client's error says it)
OPERATOR_REASON: Final = "cancelled by the server's operator"

_CURRENT: trio.lowlevel.RunVar[Observatory] = trio.lowlevel.RunVar("mcpactor.observatory")


def current_observatory() -> Observatory | None:
    """The Observatory installed in this trio run, or None."""
    try:
        return _CURRENT.get()
    except LookupError:
        return None


class _Registration:
    # Both a context manager and an async one: owners hold it around what they run.
    __slots__ = ("_observatory", "_things", "_transport")

    def __init__(
        self, observatory: Observatory | None, things: tuple[object, ...], transport: str
    ) -> None:
        self._observatory = observatory
        self._things = things
        self._transport = transport

    def __enter__(self) -> None:
        if self._observatory is not None:
            for thing in self._things:
                self._observatory._add(thing, self._transport)

    def __exit__(self, *exc: object) -> None:
        if self._observatory is not None:
            for thing in self._things:
                self._observatory._remove(thing)

    async def __aenter__(self) -> None:
        self.__enter__()

    async def __aexit__(self, *exc: object) -> None:
        self.__exit__()


def observed(*things: object, transport: str = "stdio") -> _Registration:
    """Register session owners with this run's Observatory while the block runs.

    A ``SessionManager``, a ``SessionActor`` (a session of its own, over ``transport``),
    a ``StatelessHost`` or a ``ProcessPool``; nothing happens without an Observatory.
    """
    return _Registration(current_observatory(), things, transport)


def _text(value: object) -> str | None:
    if value is None:
        return None
    text = value if isinstance(value, str) else str(value)
    return text if len(text) <= MAX_TEXT else text[: MAX_TEXT - 1] + "…"


def _seconds(value: float) -> float:
    return round(value, 3)


def _name_of(method: str, params: object) -> str | None:
    # What a request calls: a tool's or prompt's name, a resource's URI.
    if type(params) is not dict:
        return None
    for key in ("name", "uri"):
        value = params.get(key)
        if isinstance(value, str):
            return _text(value)
    return None


def _principal_text(principal: object) -> str | None:
    # str(Principal) is its identity (issuer, subject, client), never its token.
    if principal is None:
        return None
    from ._peer_base import principal_of

    known = principal_of(principal)
    if known is None:
        return None
    return _text(str(known).strip("\x1f").replace("\x1f", " · "))


class Observatory:
    """The registry the live tree is read from: what is served, and who owns sessions.

    Make one, ``install`` it in the trio run that serves, and the session owners started
    afterwards register with it; ``snapshot`` describes them at that instant and the
    actions act on them.
    """

    def __init__(self, *, replica: str | None = None) -> None:
        self.replica = replica or f"{socket.gethostname()}:{os.getpid()}"
        self.started_wall = time.time()
        self._started: float | None = None
        self._servers: list[Server] = []
        self._managers: list[SessionManager] = []
        self._actors: dict[SessionActor, tuple[float, str]] = {}
        self._hosts: list[StatelessHost] = []
        self._pools: list[ProcessPool] = []
        self._sections: dict[str, Callable[[], JSONValue]] = {}
        #: for extensions (counters, exporters) that hang state on the registry
        self.extras: dict[str, Any] = {}

    # --- registration ------------------------------------------------------------------

    def install(self) -> None:
        """Make this the Observatory of the current trio run."""
        _CURRENT.set(self)
        self._started = trio.current_time()

    def serve(self, server: Server) -> None:
        """Name a Server being served: its mounted servers are the tree's plugins."""
        if server not in self._servers:
            self._servers.append(server)

    def add_section(self, name: str, describe: Callable[[], JSONValue]) -> None:
        """Add ``name: describe()`` to every snapshot (for extensions: counters …)."""
        self._sections[name] = describe

    def _add(self, thing: object, transport: str = "stdio") -> None:
        from ._offload import ProcessPool
        from ._session_actor import SessionActor
        from ._stateless import StatelessHost

        if hasattr(thing, "close_session") and hasattr(thing, "_live"):
            self._managers.append(thing)
        elif isinstance(thing, SessionActor):
            self._actors[thing] = (trio.current_time(), transport)
        elif isinstance(thing, StatelessHost):
            self._hosts.append(thing)
        elif isinstance(thing, ProcessPool):
            self._pools.append(thing)
        else:
            raise TypeError(f"an Observatory cannot watch {type(thing).__name__}")

    def _remove(self, thing: object) -> None:
        for table in (self._managers, self._hosts, self._pools):
            with contextlib.suppress(ValueError):
                table.remove(thing)  # type: ignore[arg-type]
        self._actors.pop(thing, None)  # type: ignore[call-overload]

    # --- what is there -----------------------------------------------------------------

    def _sessions(self) -> Iterator[tuple[str, str, SessionActor, HttpSession | None, float]]:
        # (id, transport, actor, HTTP session or None, opened at) of every live session.
        for actor, (since, transport) in list(self._actors.items()):
            yield f"~{id(actor):x}", transport, actor, None, since
        for manager in self._managers:
            for session in list(manager._live):
                key = session.id if session.id is not None else f"~{id(session):x}"
                yield key, session.kind.value, session.actor, session, session.created

    def _all_hosts(self) -> list[StatelessHost]:
        hosts = list(self._hosts)
        hosts.extend(manager.stateless for manager in self._managers)
        return hosts

    # --- the snapshot ------------------------------------------------------------------

    def snapshot(
        self,
        now: float | None = None,
        limit: int = 200,
        *,
        tool: str | None = None,
        client: str | None = None,
        slow: float | None = None,
    ) -> dict[str, Any]:
        """Describe the tree at this instant, as JSON-able values (see the module comment).

        ``tool`` keeps requests whose method or name contains it, ``client`` sessions whose
        client name contains it, ``slow`` requests running for at least that many
        seconds; with a request filter only sessions with a matching request are listed.
        """
        if now is None:
            now = trio.current_time()
        limit = max(0, limit)
        tool = tool.lower() if tool else None
        client = client.lower() if client else None
        request_filter = tool is not None or slow is not None

        def wanted(method: str, name: str | None, started: float) -> bool:
            if slow is not None and now - started < slow:
                return False
            if tool is None:
                return True
            return tool in method.lower() or (name is not None and tool in name.lower())

        counts = {
            "sessions": 0,
            "awake": 0,
            "requests": 0,
            "tasks_running": 0,
            "tasks_stored": 0,
            "streams": 0,
            "connections": 0,
            "stateless": 0,
            "listens": 0,
        }
        candidates: list[tuple[int, float, int, Any]] = []
        for order, (key, transport, actor, http, since) in enumerate(self._sessions()):
            counts["sessions"] += 1
            running = len(actor._scopes)
            counts["requests"] += running
            table = actor.tasks.statistics()
            counts["tasks_running"] += table.running
            counts["tasks_stored"] += table.stored
            if http is not None:
                counts["awake"] += http.awake
                counts["streams"] += len(http._streams)
                counts["connections"] += http.connections
            else:
                counts["awake"] += 1
            if client is not None:
                info = _client_name(actor)
                if info is None or client not in info.lower():
                    continue
            if request_filter and not any(
                wanted(request.method, _name_of(request.method, request.params), started)
                for started, request, _ in actor._flights.values()
            ):
                continue
            # Busiest first, then oldest: the sessions an operator looks for.
            candidates.append((-running, since, order, (key, transport, actor, http, since)))
        shown = heapq.nsmallest(limit, candidates, key=lambda entry: entry[:3])
        total = len(candidates)
        hidden_requests = -sum(entry[0] for entry in candidates) + sum(e[0] for e in shown)
        items = [self._session(*entry[3], now=now, wanted=wanted) for entry in shown]
        stateless = self._stateless(now, limit, wanted, counts)
        tasks = self._registry_tasks(now, limit, counts)
        snapshot: dict[str, Any] = {
            "replica": {
                "id": _text(self.replica),
                "pid": os.getpid(),
                "started": round(self.started_wall, 3),
                "uptime": _seconds(now - self._started) if self._started is not None else 0.0,
            },
            "counts": counts,
            "plugins": self._plugins(),
            "sessions": {
                "total": total,
                "shown": len(items),
                "hidden_requests": hidden_requests,
                "items": items,
            },
            "stateless": stateless,
            "tasks": tasks,
            "workers": self._workers(),
        }
        for name, describe in self._sections.items():
            snapshot[name] = describe()
        return snapshot

    def _plugins(self) -> list[dict[str, Any]]:
        plugins: list[dict[str, Any]] = []
        for server in self._servers:
            mounts = server.mounts
            if not mounts:
                plugins.append(
                    {
                        "name": _text(server.name),
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
                        "name": _text(stats.name),
                        "prefix": stats.prefix,
                        "state": stats.state,
                        "error": _text(stats.error),
                        "in_flight": stats.calls_in_flight,
                        "waiting": stats.calls_waiting,
                        "total": stats.calls_total,
                        "max_concurrent": stats.max_concurrent,
                    }
                )
        return plugins

    def _session(
        self,
        key: str,
        transport: str,
        actor: SessionActor,
        http: HttpSession | None,
        since: float,
        *,
        now: float,
        wanted: Callable[[str, str | None, float], bool],
    ) -> dict[str, Any]:
        negotiated = actor.core.negotiated
        requests: list[dict[str, Any]] = []
        more_requests = 0
        for request_id, scope in list(actor._scopes.items()):
            flight = actor._flights.get(request_id)
            deadline = scope.deadline
            if flight is None:
                # Opened in this very step, its actor not started yet.
                started, method, name, progress = now, "(starting)", None, None
            else:
                started, request, ctx = flight
                method = request.method
                name = _name_of(method, request.params)
                progress = ctx._last_progress
                if method == "tools/call" and name is not None:
                    timeout = _tool_timeout(actor.server, name)
                    if timeout is not None:
                        deadline = min(deadline, started + timeout)
            if not wanted(method, name, started):
                continue
            if len(requests) >= MAX_ITEMS:
                more_requests += 1
                continue
            requests.append(
                {
                    "id": _wire_id(request_id),
                    "method": _text(method),
                    "name": name,
                    "age": _seconds(now - started),
                    "progress": progress,
                    "deadline_in": _seconds(deadline - now) if math.isfinite(deadline) else None,
                    "cancelled": scope.cancel_called,
                }
            )
        requests.sort(key=lambda r: -r["age"])
        tasks, more_tasks = _tasks(actor.tasks, now, MAX_ITEMS)
        streams: list[dict[str, Any]] = []
        more_streams = 0
        if http is not None:
            for stream in list(http._streams.values()):
                if len(streams) >= MAX_ITEMS:
                    more_streams += 1
                    continue
                conn = stream.conn
                streams.append(
                    {
                        "id": stream.id,
                        "kind": "GET" if stream is http.standalone else "POST",
                        "pending": len(stream.pending),
                        "buffered": len(conn._items) if conn is not None else 0,
                        "attached": conn is not None,
                        "last_event_id": _text(stream.delivered),
                    }
                )
        if http is None:
            state = "running"
        elif http.closing:
            state = "closing"
        else:
            state = "awake" if http.awake else "asleep"
        return {
            "id": _text(key),
            "transport": transport,
            "state": state,
            "revision": negotiated.revision.version if negotiated is not None else None,
            "client": _client_name(actor),
            "age": _seconds(now - since),
            "idle": _seconds(now - http.last_active) if http is not None else None,
            "principal": _principal_text(http.principal if http is not None else None),
            "requests": requests,
            "tasks": tasks,
            "streams": streams,
            "more": {"requests": more_requests, "tasks": more_tasks, "streams": more_streams},
        }

    def _stateless(
        self,
        now: float,
        limit: int,
        wanted: Callable[[str, str | None, float], bool],
        counts: dict[str, int],
    ) -> dict[str, Any]:
        from ._stateless import LISTEN

        requests: list[dict[str, Any]] = []
        listens: list[dict[str, Any]] = []
        more = 0
        for host in self._all_hosts():
            for key, flight in list(host.flights.items()):
                method = flight.served.method
                listen = method == LISTEN
                counts["listens" if listen else "stateless"] += 1
                name = _name_of(method, flight.served.params)
                if not listen and not wanted(method, name, flight.started):
                    continue
                if len(requests) + len(listens) >= limit:
                    more += 1
                    continue
                (listens if listen else requests).append(_flight(host, key, flight, name, now))
        requests.sort(key=lambda r: -r["age"])
        return {"requests": requests, "listens": listens, "more": more}

    def _registry_tasks(self, now: float, limit: int, counts: dict[str, int]) -> dict[str, Any]:
        items: list[dict[str, Any]] = []
        more = 0
        for host in self._all_hosts():
            table = host.tasks
            if table is None or not hasattr(table, "_tasks"):
                continue
            stats = table.statistics()
            counts["tasks_running"] += stats.running
            counts["tasks_stored"] += stats.stored
            listed, left = _tasks(table, now, limit - len(items), principals=True)
            items.extend(listed)
            more += left
        return {"items": items, "more": more}

    def _workers(self) -> dict[str, int]:
        pools: list[ProcessPool] = list(self._pools)
        for manager in self._managers:
            for pool in (
                manager._stateless_pool,
                manager.effective_session_options.process_pool,
                manager.stateless._processes,
            ):
                if pool is not None and pool not in pools:
                    pools.append(pool)
        for _, _, actor, _, _ in self._sessions():
            if actor._processes is not None and actor._processes not in pools:
                pools.append(actor._processes)
        totals = {"pools": 0, "idle": 0, "busy": 0, "started": 0, "killed": 0}
        for pool in pools:
            stats = pool.statistics()
            totals["pools"] += 1
            totals["idle"] += stats.idle
            totals["busy"] += stats.busy
            totals["started"] += stats.started
            totals["killed"] += stats.killed
        return totals

    # --- actions -----------------------------------------------------------------------

    def _actor(self, session_id: str) -> tuple[SessionActor, HttpSession | None] | None:
        for key, _, actor, http, _ in self._sessions():
            if key == session_id:
                return actor, http
        return None

    def cancel_request(self, session_id: str, request_id: RequestId) -> bool:
        """Cancel a session's running request; its client is answered with an error."""
        found = self._actor(session_id)
        if found is None:
            return False
        actor = found[0]
        for candidate in list(actor._scopes):
            if candidate == request_id and type(candidate) is type(request_id):
                return actor.cancel_request(candidate, OPERATOR_REASON)
        return False

    def cancel_stateless(self, request_key: int) -> bool:
        """Cancel a stateless request (or listen stream) as its client leaving would."""
        for host in self._all_hosts():
            flight = host.flights.get(request_key)
            if flight is not None:
                return flight.cancel(OPERATOR_REASON)
        return False

    async def cancel_task(self, task_id: str) -> bool:
        """Cancel a task through ``tasks/cancel``'s path; False if none runs by that id."""
        for _, _, actor, _, _ in list(self._sessions()):
            task = actor.tasks._tasks.get(task_id)
            if task is not None and not task.state.terminal:
                await actor.tasks.cancel(task_id)
                return True
        for host in self._all_hosts():
            table = host.tasks
            tasks = getattr(table, "_tasks", None)
            if tasks is None:
                continue
            task = tasks.get(task_id)
            if task is not None and not task.state.terminal:
                await table.cancel(task_id, principal=task.principal)
                return True
        await trio.lowlevel.checkpoint()
        return False

    def close_session(self, session_id: str) -> bool:
        """Close an HTTP session as its expiry would: its requests get the grace period."""
        for manager in self._managers:
            for session in list(manager._live):
                if session.id == session_id or f"~{id(session):x}" == session_id:
                    if session.closing:
                        return False
                    manager.close_session(session)
                    return True
        return False


def _client_name(actor: SessionActor) -> str | None:
    negotiated = actor.core.negotiated
    info = negotiated.client_info if negotiated is not None else None
    if type(info) is not dict:
        return None
    name, version = info.get("name"), info.get("version")
    if not isinstance(name, str):
        return None
    return _text(f"{name} {version}" if isinstance(version, str) else name)


def _wire_id(request_id: RequestId) -> JSONValue:
    return _text(request_id) if isinstance(request_id, str) else request_id


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


def _tasks(
    table: _TaskTable, now: float, limit: int, *, principals: bool = False
) -> tuple[list[dict[str, Any]], int]:
    records: list[_Task] = list(table._tasks.values())
    items: list[dict[str, Any]] = []
    for task in records[: max(0, limit)]:
        state = task.state
        expires = state.expires_at
        item: dict[str, Any] = {
            "id": state.task_id,
            "status": state.status,
            "age": _seconds(now - state.created_at),
            "ttl_left": _seconds(expires - now) if expires is not None else None,
            "message": _text(state.status_message),
        }
        if principals:
            item["principal"] = _text(task.principal)
        items.append(item)
    return items, max(0, len(records) - max(0, limit))


def _flight(
    host: StatelessHost, key: int, flight: Flight, name: str | None, now: float
) -> dict[str, Any]:
    return {
        "key": key,
        "id": _wire_id(flight.served.id),
        "method": _text(flight.served.method),
        "name": name,
        "age": _seconds(now - flight.started),
        "progress": flight.progress,
        "cancelled": flight.scope is not None and flight.scope.cancel_called,
        "principal": _principal_text(flight.principal),
    }
