# The live actor tree: what a running server is doing, read from the actors themselves.
#
# An ``Observatory`` is installed in one trio run (``install``); the actors that own
# sessions and requests register with it while they run (``observed``: the HTTP session
# manager, a stdio session and its stateless host), and the serving code names the
# Server it serves (``serve``). Nothing else is kept: ``snapshot`` reads the registered
# owners' views at that instant (``_views.py``: each actor's ``view()``) — their session
# tables, each session's running requests, task tables, streams and worker pools — so it
# cannot drift from what runs. With no Observatory installed the actors' hooks are one
# RunVar lookup when an owner starts; with one installed and nobody asking, nothing runs
# at all (no timer, no task). ``_snapshot_items.py`` makes each part from its view.
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
#         "requests": [{"id", "method", "name", "age", "progress", "total", "message",
#                       "deadline_in", "cancelled"}],
#         "tasks": [{"id", "status", "age", "ttl_left", "message"}],
#         "streams": [{"id", "kind", "pending", "buffered", "attached",
#                      "last_event_id"}],
#         "more": {"requests", "tasks", "streams"}}]},
#    "stateless": {"requests": [{"key", "id", "method", "name", "age", "progress",
#                                "total", "message", "cancelled", "principal"}],
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
import os
import socket
import time
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any, Final, NamedTuple

import trio

from ..protocol import JSONValue, RequestId
from ._metrics import METRICS
from ._observed import CURRENT, observed
from ._snapshot_items import (
    MAX_ITEMS,
    MAX_TEXT,
    Wanted,
    name_of,
    plugin_items,
    seconds,
    session_item,
    stateless_item,
    task_items,
    text,
    worker_totals,
)
from ._texts import client_name, principal_text

if TYPE_CHECKING:
    from ..server import Server
    from ._history import History
    from ._offload import ProcessPool
    from ._session_actor import SessionActor
    from ._stateless import StatelessHost
    from ._views import (
        HostView,
        HttpSessionView,
        ManagerView,
        RequestView,
        SessionView,
        TaskView,
    )

# The session manager imports this module (to register itself), so it is not imported
# back, not even for types: a manager is known by what it has.
SessionManager = Any

__all__ = ["MAX_ITEMS", "MAX_TEXT", "Observatory", "current_observatory", "observed"]

#: why an action ended a request (the client's error says it)
OPERATOR_REASON: Final = "cancelled by the server's operator"
#: what ``counts`` counts, in its order
_COUNTS: Final = (
    "sessions",
    "awake",
    "requests",
    "tasks_running",
    "tasks_stored",
    "streams",
    "connections",
    "stateless",
    "listens",
)


def current_observatory() -> Observatory | None:
    """The Observatory installed in this trio run, or None."""
    try:
        observatory = CURRENT.get()
    except LookupError:
        return None
    assert isinstance(observatory, Observatory)
    return observatory


class _Live(NamedTuple):
    # A live session as one snapshot sees it.
    key: str
    transport: str
    since: float
    view: SessionView
    http: HttpSessionView | None


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
        CURRENT.set(self)
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

        if isinstance(thing, SessionActor):
            self._actors[thing] = (trio.current_time(), transport)
        elif isinstance(thing, StatelessHost):
            self._hosts.append(thing)
        elif isinstance(thing, ProcessPool):
            self._pools.append(thing)
        elif hasattr(thing, "close_session") and hasattr(thing, "view"):
            self._managers.append(thing)
        else:
            raise TypeError(f"an Observatory cannot watch {type(thing).__name__}")

    def _remove(self, thing: object) -> None:
        for table in (self._managers, self._hosts, self._pools):
            with contextlib.suppress(ValueError):
                table.remove(thing)  # type: ignore[arg-type]
        self._actors.pop(thing, None)  # type: ignore[call-overload]

    # --- what is there -----------------------------------------------------------------

    def _sessions(
        self, managers: list[ManagerView]
    ) -> Iterator[tuple[str, str, float, SessionActor, HttpSessionView | None]]:
        # (id, transport, opened at, actor, HTTP session's view or None) of every session.
        for actor, (since, transport) in list(self._actors.items()):
            yield f"~{id(actor):x}", transport, since, actor, None
        for manager in managers:
            for session in manager.sessions:
                http = session.view()
                key = http.id if http.id is not None else f"~{id(session):x}"
                yield key, http.kind, http.created, http.actor, http

    def _tables(self) -> list[ManagerView]:
        # The session tables' views, in the order they were registered.
        return [manager.view() for manager in self._managers]

    def _all_hosts(self, managers: list[ManagerView]) -> list[StatelessHost]:
        # The stateless hosts: those registered, then the session tables' own.
        hosts = list(self._hosts)
        hosts.extend(manager.stateless for manager in managers)
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
        now = trio.current_time() if now is None else now
        limit = max(0, limit)
        wanted = Wanted(
            now, tool.lower() if tool else None, client.lower() if client else None, slow
        )
        counts = dict.fromkeys(_COUNTS, 0)
        managers = self._tables()
        hosts = [host.view() for host in self._all_hosts(managers)]
        live = [
            _Live(key, transport, since, actor.view(), http)
            for key, transport, since, actor, http in self._sessions(managers)
        ]
        # Worker pools: those registered, the session tables' and their stateless hosts',
        # and the sessions' own.
        pools = [
            *self._pools,
            *(pool for manager in managers for pool in manager.pools),
            *(host.processes for host in hosts[len(self._hosts) :]),
            *(session.view.processes for session in live),
        ]
        snapshot: dict[str, Any] = {
            "replica": self._replica(now),
            "counts": counts,
            "plugins": plugin_items(self._servers),
            "sessions": _listed(live, limit, wanted, counts),
            "stateless": _stateless(hosts, limit, wanted, counts),
            "tasks": _registry_tasks(hosts, now, limit, counts),
            "workers": worker_totals(pools),
        }
        for name, describe in self._sections.items():
            snapshot[name] = describe()
        return snapshot

    def _replica(self, now: float) -> dict[str, Any]:
        return {
            "id": text(self.replica),
            "pid": os.getpid(),
            "started": round(self.started_wall, 3),
            "uptime": seconds(now - self._started) if self._started is not None else 0.0,
        }

    def history(
        self, *, cancelled_by: dict[tuple[str, str], str] | None = None, **filters: Any
    ) -> dict[str, Any]:
        """The requests that ended lately (kept once ``METRICS.keep_history`` was called),
        the newest first, with their sessions' client and principal where known.

        ``filters`` go to ``History.items`` (limit, outcome, tool, client, find).
        """
        history = METRICS.history
        if history is None:
            return {"kept": False, "size": 0, "items": []}
        self._learn(history)
        items = history.items(cancelled_by=cancelled_by, **filters)
        return {"kept": True, "size": history.size, "items": items}

    def ended_since(
        self, mark: object = None, *, params: bool = False
    ) -> tuple[list[dict[str, Any]], object]:
        """The history's entries kept after ``mark``, the oldest first, and the next mark
        (``History.since``, with each request's ``params`` if asked); nothing while the
        history is not kept."""
        history = METRICS.history
        if history is None:
            return [], None
        self._learn(history)
        return history.since(mark, params=params)

    def _learn(self, history: History) -> None:
        # The client and principal of the live sessions, for the entries read now.
        history.learn(
            (
                key,
                client_name(actor.view().client_info),
                principal_text(http.principal if http is not None else None),
            )
            for key, _, _, actor, http in self._sessions(self._tables())
        )

    def rates(self, now: float | None = None, window: float = 60.0) -> dict[str, Any]:
        """Requests/s, errors/s and latency percentiles per tool and per client over the
        last ``window`` seconds (kept once ``METRICS.keep_history`` was called)."""
        rates = METRICS.rates
        if rates is None:
            return {"kept": False, "window": window, "tools": [], "clients": []}
        rates.learn(
            (key if http is not None else None, actor.view().client_info)
            for key, _, _, actor, http in self._sessions(self._tables())
        )
        return rates.read(trio.current_time() if now is None else now, window)

    def running(
        self, session_id: str | None, request_id: str, key: int | None = None
    ) -> tuple[RequestView, dict[str, Any]] | None:
        """A running request's view and what the tree says of its session (or, with
        ``key``, a stateless request's), or None. Ids are matched as text."""
        now = trio.current_time()
        managers = self._tables()
        if key is not None:
            for host in self._all_hosts(managers):
                for request in host.view().requests:
                    if request.key == key:
                        name = name_of(request.method or "", request.params)
                        return request, stateless_item(request, name, now)
            return None
        for live_key, transport, since, actor, http in self._sessions(managers):
            if live_key != session_id:
                continue
            view = actor.view()
            for request in view.requests:
                if str(request.id) == request_id and request.started is not None:
                    item = session_item(live_key, transport, since, view, http, Wanted(now))
                    del item["requests"], item["tasks"], item["streams"], item["more"]
                    return request, item
        return None

    def session_client(self, session_id: str) -> tuple[JSONValue, str | None] | None:
        """The clientInfo and principal of the live HTTP session ``session_id``, or None."""
        for manager in self._managers:
            session = manager.get(session_id)
            if session is not None:
                http = session.view()
                return http.actor.view().client_info, principal_text(http.principal)
        return None

    def task(self, task_id: str) -> tuple[TaskView, dict[str, Any]] | None:
        """A task kept in a task table (running or not yet expired) and what the tree
        says of its session (empty for the tasks extension's table), or None."""
        managers = self._tables()
        for key, _, _, actor, http in self._sessions(managers):
            view = actor.view()
            for task in view.tasks.view():
                if task.id == task_id:
                    principal = principal_text(http.principal if http is not None else None)
                    client = client_name(view.client_info)
                    return task, {"session": key, "client": client, "principal": principal}
        for host in self._all_hosts(managers):
            table = host.view().tasks
            for task in table.view() if hasattr(table, "view") else ():
                if task.id == task_id:
                    return task, {}
        return None

    # --- actions -----------------------------------------------------------------------

    def cancel_request(self, session_id: str, request_id: RequestId) -> bool:
        """Cancel a session's running request; its client is answered with an error."""
        for key, _, _, actor, _ in self._sessions(self._tables()):
            if key != session_id:
                continue
            for request in actor.view().requests:
                # Ids are matched as the client sent them: a string is not the integer.
                if request.id == request_id and type(request.id) is type(request_id):
                    return actor.cancel_request(request.id, OPERATOR_REASON)
            return False
        return False

    def cancel_stateless(self, request_key: int) -> bool:
        """Cancel a stateless request (or listen stream) as its client leaving would."""
        for host in self._all_hosts(self._tables()):
            flight = host.flights.get(request_key)
            if flight is not None:
                return flight.cancel(OPERATOR_REASON)
        return False

    async def cancel_task(self, task_id: str) -> bool:
        """Cancel a task through ``tasks/cancel``'s path; False if none runs by that id."""
        managers = self._tables()
        for _, _, _, actor, _ in list(self._sessions(managers)):
            table = actor.view().tasks
            if _running(table, task_id) is not None:
                await table.cancel(task_id)
                return True
        for host in self._all_hosts(managers):
            table = host.view().tasks
            task = _running(table, task_id) if hasattr(table, "view") else None
            if task is not None:
                await table.cancel(task_id, principal=task.principal)
                return True
        await trio.lowlevel.checkpoint()
        return False

    def close_session(self, session_id: str) -> bool:
        """Close an HTTP session as its expiry would: its requests get the grace period."""
        for manager in self._managers:
            for session in manager.view().sessions:
                http = session.view()
                if http.id == session_id or f"~{id(session):x}" == session_id:
                    if http.closing:
                        return False
                    manager.close_session(session)
                    return True
        return False


def _running(table: Any, task_id: str) -> Any:
    # The view of the task ``task_id`` of a task table if it is not finished, else None.
    for task in table.view():
        if task.id == task_id:
            return None if task.terminal else task
    return None


def _listed(
    live: list[_Live], limit: int, wanted: Wanted, counts: dict[str, int]
) -> dict[str, Any]:
    # Every session counted; the busiest ``limit`` of those the filter wants, then the
    # oldest, listed: the sessions an operator looks for.
    candidates: list[tuple[int, float, int, _Live]] = []
    for order, session in enumerate(live):
        view, http = session.view, session.http
        running = len(view.requests)
        stats = view.tasks.statistics()
        counts["sessions"] += 1
        counts["requests"] += running
        counts["tasks_running"] += stats.running
        counts["tasks_stored"] += stats.stored
        if http is not None:
            counts["awake"] += http.awake
            counts["streams"] += len(http.streams)
            counts["connections"] += http.connections
        else:
            counts["awake"] += 1
        if wanted.session(view):
            candidates.append((-running, session.since, order, session))
    shown = heapq.nsmallest(limit, candidates, key=lambda entry: entry[:3])
    hidden_requests = -sum(entry[0] for entry in candidates) + sum(e[0] for e in shown)
    items = [session_item(*entry[3], wanted=wanted) for entry in shown]
    return {
        "total": len(candidates),
        "shown": len(items),
        "hidden_requests": hidden_requests,
        "items": items,
    }


def _stateless(
    hosts: list[HostView], limit: int, wanted: Wanted, counts: dict[str, int]
) -> dict[str, Any]:
    # The stateless requests and listen streams, those the filter wants listed.
    from ._stateless import LISTEN

    requests: list[dict[str, Any]] = []
    listens: list[dict[str, Any]] = []
    more = 0
    for host in hosts:
        for request in host.requests:
            method = request.method
            # A stateless request is known from its start: it has both.
            assert method is not None
            assert request.started is not None
            listen = method == LISTEN
            counts["listens" if listen else "stateless"] += 1
            name = name_of(method, request.params)
            if not listen and not wanted.request(method, name, request.started):
                continue
            if len(requests) + len(listens) >= limit:
                more += 1
                continue
            (listens if listen else requests).append(stateless_item(request, name, wanted.now))
    requests.sort(key=lambda r: -r["age"])
    return {"requests": requests, "listens": listens, "more": more}


def _registry_tasks(
    hosts: list[HostView], now: float, limit: int, counts: dict[str, int]
) -> dict[str, Any]:
    # The tasks of the tasks extension, with who created each.
    items: list[dict[str, Any]] = []
    more = 0
    for host in hosts:
        table = host.tasks
        if table is None or not hasattr(table, "view"):
            continue
        stats = table.statistics()
        counts["tasks_running"] += stats.running
        counts["tasks_stored"] += stats.stored
        listed, left = task_items(table, now, limit - len(items), principals=True)
        items.extend(listed)
        more += left
    return {"items": items, "more": more}
