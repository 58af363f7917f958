# The SessionManager: one nursery that owns every session of an HTTP server.
#
# HTTP handlers ask it to create sessions (Streamable HTTP, stateless, legacy SSE,
# WebSocket) and look them up by id; it enforces ``max_sessions`` and, when asked to
# stop, closes every session so that each winds down with its grace period.
#
# A session is created asleep (see _http_session.py): an entry in the tables, no task.
# When it wakes, its one task runs in the manager's nursery, which thereby owns every
# awake session; a session that ends (asleep or awake) reports it through ``ended``.
#
# Its timers (idle expiry, unconfirmed expiry, sleep) are one task each for all sessions
# (_timers.py).
#
# Limits (invariant 4): ``max_sessions`` in all, and ``max_sessions_per_client`` for one
# client address, so that one client opening sessions in a loop fills its own share and
# not the table (the transport names no client for a loopback address: every local
# client, and every client behind a reverse proxy on this machine, shares one). A full
# table makes room by closing the oldest idle session that has seen only its initialize.
#
# Named sessions are found through a SessionStore (_session_store.py): this process's
# live sessions. With ``replicas`` (several processes serving the same sessions), the
# manager has a Replication (_replication.py), which adopts sessions other replicas
# opened and ends shared sessions everywhere; without replicas it has none.
#
# Work spawned for the sessions (their ends, record writes, followers) runs in the
# manager's nursery, whose failure would end the server: what fails there is logged and
# contained (invariant 10). A store that cannot be reached leaves what would have been
# cleaned up to its ttl, and never ends the process.
#
# Two more timers end waits of SSE writers (see transports/_http_writer.py): the short
# one of a priming event held back for the answer behind it, and the longer one before a
# streamed POST starts watching for its client leaving. Each is a deque of (deadline,
# attachment, ticket), in time order as the delay is the same for every writer. One
# timer for every writer, rather than a cancel scope with a deadline per POST.

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import Final

import attrs
import trio

from ...server import Server
from .._messages import SessionOptions
from .._observed import observed
from .._offload import ProcessPool
from .._stateless import StatelessHost, StatelessOptions
from .._views import ManagerView
from ._event_store import EventStore
from ._follow import Followers
from ._http_session import HttpSession, SessionKind
from ._relay import Replicas
from ._replication import Replication
from ._session_store import MemorySessionStore, SessionStore
from ._streams import NudgeTimer
from ._timers import SLEEP_AFTER, SessionTimers
from ._watch import LateWatch

__all__ = ["SLEEP_AFTER", "ManagerStatistics", "SessionLimitReached", "SessionManager"]

#: seconds a session that has seen only its initialize may stay idle, by default
UNCONFIRMED_TIMEOUT: Final = 60.0

_log = logging.getLogger("mcpactor.http")

#: seconds a priming event may wait for the answer behind it before it is sent alone
COALESCE_SECONDS: Final = 0.005
#: seconds a streamed POST runs before it watches for its client leaving
WATCH_AFTER: Final = 2.0
#: seconds a stateless request runs before it watches for its client leaving (its
#: cancellation: a short wait, as nothing can resume it)
STATELESS_WATCH_AFTER: Final = 0.05
# Who a stateless request's handlers see as the client: it sent no clientInfo.
_STATELESS_CLIENT: Final = {"name": "stateless HTTP client", "version": "0"}
#: how many unconfirmed sessions a full table looks at for one that can give way
_GIVE_WAY_LOOKS: Final = 64


class SessionLimitReached(Exception):
    """No session can be created now: the limit is reached or the server is stopping."""


@attrs.frozen
class ManagerStatistics:
    """A snapshot of a SessionManager, for tests and debug output."""

    #: live sessions of every kind (including ones winding down)
    sessions: int
    #: sessions not closing: what counts against ``max_sessions``
    open_sessions: int
    #: sessions a client can name (Streamable HTTP and legacy SSE)
    named_sessions: int
    #: attached HTTP/WebSocket connections over all sessions
    connections: int
    #: sessions whose actor is running (the rest are asleep: state only, no task)
    awake_sessions: int = 0
    #: Streamable HTTP sessions no request has named since their initialize
    unconfirmed_sessions: int = 0
    #: client addresses holding open sessions
    clients: int = 0


class SessionManager:
    """Owns every session of an HTTP server: creation, lookup, limits and expiry."""

    def __init__(
        self,
        server: Server,
        *,
        session_options: SessionOptions | None,
        event_store: EventStore,
        max_sessions: int,
        idle_timeout: float,
        response_mode: str,
        max_sessions_per_client: int | None = None,
        unconfirmed_timeout: float = UNCONFIRMED_TIMEOUT,
        session_store: SessionStore | None = None,
        stateless: StatelessHost | StatelessOptions | None = None,
        replicas: Replicas | None = None,
        max_message_bytes: int | None = None,
    ) -> None:
        self.server = server
        #: the longest message a session writes: the transport's limit (None: none)
        self.max_message_bytes = max_message_bytes
        self.session_options = session_options
        base = (session_options or SessionOptions()).with_message_limit(max_message_bytes)
        #: what every session gets (one shared record, not one per session)
        self.effective_session_options = base
        self._stateless_pool = ProcessPool() if base.process_pool is None else None
        self.stateless_session_options = _stateless_options(base, self._stateless_pool)
        #: serves the requests of stateless revisions, beside the sessions
        self.stateless = _stateless_host(server, stateless, self.stateless_session_options, base)
        self.event_store = event_store
        self.max_sessions = max_sessions
        self.max_sessions_per_client = (
            max_sessions if max_sessions_per_client is None else max_sessions_per_client
        )
        self.idle_timeout = idle_timeout
        self.unconfirmed_timeout = unconfirmed_timeout
        self.response_mode = response_mode
        #: the named sessions by id
        self.sessions: SessionStore = (
            session_store if session_store is not None else MemorySessionStore()
        )
        # Every session until it has ended, and those of them not yet closing: only open
        # sessions count against the limit (a closed one is on its way out).
        self._live: set[HttpSession] = set()
        self._open: set[HttpSession] = set()
        # Open sessions by client address, and the address of each.
        self._per_client: dict[str, int] = {}
        self._client_of: dict[HttpSession, str] = {}
        #: unconfirmed sessions closed to make room in a full table
        self.given_way = 0
        self._stopping = trio.Event()
        # What the stateless tasks get to finish once stopped (its deadline set then).
        self._task_grace = trio.CancelScope()
        # Made while someone waits for sessions to end (wait_sessions).
        self._session_ended: trio.Event | None = None
        self._nursery: trio.Nursery | None = None
        #: the idle, unconfirmed and sleep timers of the sessions
        self.timers = SessionTimers(self)
        # The timers' table of unconfirmed sessions, read on every request (``confirm``),
        # and what every wake does (one lookup, as a method of the manager's own would).
        self._unconfirmed = self.timers.unconfirmed
        self._watch_sleep = self.timers.watch_sleep
        #: ends a priming event's wait for the answer behind it
        self.coalescing = NudgeTimer(COALESCE_SECONDS)
        #: ends a streamed POST's time without a watch for its client leaving
        self.watch_delay = NudgeTimer(WATCH_AFTER)
        #: streams of other replicas followed for clients that resumed them here
        self.followers = Followers()
        #: watches for the clients of stateless requests that run for more than a moment
        self.late_watch = LateWatch(STATELESS_WATCH_AFTER)
        #: the other processes serving the same sessions; None: sessions live here only
        self.replicas = replicas
        #: the sessions as shared with the other replicas; None without replicas
        self.replication = (
            Replication(self, replicas, event_store, self.timers.watch_idle)
            if replicas is not None
            else None
        )
        #: the leases of the requests this replica runs for shared sessions
        self.leases = self.replication.leases if self.replication is not None else None

    def statistics(self) -> ManagerStatistics:
        """Return how many sessions and connections are live right now."""
        return ManagerStatistics(
            sessions=len(self._live),
            open_sessions=len(self._open),
            named_sessions=len(self.sessions),
            connections=sum(session.routing.connections for session in self._live),
            awake_sessions=sum(session.runs.awake for session in self._live),
            unconfirmed_sessions=len(self._unconfirmed),
            clients=len(self._per_client),
        )

    async def run(self, *, task_status: trio.TaskStatus[SessionManager]) -> None:
        """Own the sessions until ``stop`` is called and every session has ended."""
        self.stateless.attach()
        try:
            with observed(self):
                await self._run(task_status)
        finally:
            await self.stateless.aclose()
            if self._stateless_pool is not None:
                # Starts nothing if no stateless POST offloaded to a process.
                with trio.CancelScope(shield=True):
                    await self._stateless_pool.aclose()

    async def _run(self, task_status: trio.TaskStatus[SessionManager]) -> None:
        async with trio.open_nursery() as manager:
            self.timers.start(manager)
            manager.start_soon(self.coalescing.run)
            manager.start_soon(self.watch_delay.run)
            manager.start_soon(self.late_watch.run)
            if self.replication is not None:
                await self.replication.start(manager)
            # The tasks of stateless requests (tasks extension) get the grace period
            # too, counted from the stop, and end once every session has.
            async with trio.open_nursery() as tasks:
                self.stateless.open_tasks(tasks)
                async with trio.open_nursery() as nursery:
                    self._nursery = nursery
                    task_status.started(self)
                    try:
                        await self._stopping.wait()
                        self._task_grace.deadline = (
                            trio.current_time() + self.effective_session_options.shutdown_grace
                        )
                    finally:
                        # Also when cancelled: sleeping sessions have no task to cancel.
                        for session in list(self._live):
                            if session.replicas is not None and not session.closing:
                                # The session lives on in the other replicas.
                                self.drop_copy(session)
                            else:
                                self.close_session(session)
                with self._task_grace:
                    await self._stateless_tasks_idle()
                tasks.cancel_scope.cancel()
            manager.cancel_scope.cancel()

    async def _stateless_tasks_idle(self) -> None:
        # The tasks extension's own table, when it has one that says when it is idle.
        wait_idle = getattr(self.stateless.tasks, "wait_idle", None)
        if wait_idle is not None:
            await wait_idle()
        else:
            await trio.lowlevel.checkpoint()

    async def wait_sessions(self, at_most: int = 0) -> None:
        """Wait until no more than ``at_most`` sessions are live (winding down counts)."""
        while len(self._live) > at_most:
            if self._session_ended is None:
                self._session_ended = trio.Event()
            await self._session_ended.wait()

    def stop(self) -> None:
        """Refuse new sessions and close every session (they wind down gracefully).

        Listen streams of stateless revisions end with their closing result.
        """
        self._stopping.set()
        self.stateless.stop()

    def cancel(self) -> None:
        """Cancel every session at once, without a grace period."""
        self._stopping.set()
        self.stateless.stop()
        self._task_grace.cancel()
        if self._nursery is not None:
            self._nursery.cancel_scope.cancel("the server was stopped without grace")

    @property
    def stopping(self) -> bool:
        """Whether ``stop`` was called."""
        return self._stopping.is_set()

    async def create(
        self,
        kind: SessionKind,
        *,
        principal: object = None,
        protocol_version: str | None = None,
        client: str | None = None,
    ) -> HttpSession:
        """Start a session of ``kind``; a stateless one is initialized at ``protocol_version``.

        ``client`` names the client (its address), for ``max_sessions_per_client``; None
        for a client that is not counted.

        Raises:
            SessionLimitReached: ``max_sessions`` are live, ``client`` holds its share,
                or the server is stopping.
        """
        if self._stopping.is_set() or self._nursery is None:
            raise SessionLimitReached("the server is shutting down")
        if len(self._open) >= self.max_sessions:
            self.make_room()
        if client is not None and self._per_client.get(client, 0) >= self.max_sessions_per_client:
            # No sweep here: a client at its limit must not make every refusal walk the
            # whole table. Its idle sessions expire on their timers.
            raise SessionLimitReached(
                f"this client holds {self.max_sessions_per_client} sessions, the most one "
                "client may: end some (DELETE) or let them expire"
            )
        named = kind in (SessionKind.STREAMABLE, SessionKind.LEGACY_SSE)
        session_id = self.sessions.new_id() if named else None
        # Asleep: its first message wakes it (see _http_session.py).
        session = HttpSession(self, kind, session_id, principal)
        if kind is SessionKind.STATELESS:
            if protocol_version is not None:
                # No handshake reaches this throwaway session: it operates at what the
                # request's header says, and the client declared no capabilities.
                session.actor.core.adopt(protocol_version, dict(_STATELESS_CLIENT))
        elif kind is SessionKind.STREAMABLE and self.replication is not None:
            self.replication.share(session)
        self._live.add(session)
        self._open.add(session)
        if client is not None:
            self._client_of[session] = client
            self._per_client[client] = self._per_client.get(client, 0) + 1
        if session_id is not None:
            self.sessions.add(session)
            if kind is SessionKind.STREAMABLE:
                self.timers.watch_idle(session_id, session.routing.last_active)
                self.timers.watch_unconfirmed(session_id)
        return session

    def _release(self, session: HttpSession) -> None:
        # ``session`` no longer counts against the limits.
        self._open.discard(session)
        client = self._client_of.pop(session, None)
        if client is not None:
            left = self._per_client[client] - 1
            if left:
                self._per_client[client] = left
            else:
                del self._per_client[client]

    def wake(self, session: HttpSession, run: Callable[[], Awaitable[None]]) -> None:
        """Run an awake period of ``session`` (``run``) in the manager's nursery."""
        assert self._nursery is not None
        # ``run`` contains its own failures: a failing session must never take the server
        # down (invariant 3).
        self._nursery.start_soon(run)
        if session.kind is SessionKind.STREAMABLE and session.id is not None:
            self._watch_sleep(session.id)

    def spawn(self, fn: Callable[[], Awaitable[None]]) -> None:
        """Run a piece of a session's work in the manager's nursery (a teardown, a follower).

        A failure of ``fn`` is logged, never raised into the nursery (the server's).
        """
        assert self._nursery is not None
        self._nursery.start_soon(_contained, fn)

    def ended(self, session: HttpSession) -> None:
        """``session`` has ended: forget it."""
        self._live.discard(session)
        self._release(session)
        if session.id is not None:
            self._unconfirmed.pop(session.id, None)
        ended = self._session_ended
        if ended is not None:
            self._session_ended = None
            ended.set()
        if session.id is not None:
            # The store holds named sessions only: a stateless one costs it no call.
            self.sessions.remove(session)

    def get(self, session_id: str) -> HttpSession | None:
        """Return the live session a client names, or None."""
        session = self.sessions.get(session_id)
        if session is None or session.closing:
            return None
        return session

    def close_session(self, session: HttpSession, *, everywhere: bool = True) -> None:
        """Forget a session's id at once and let it wind down.

        A shared session ends in every replica, unless ``everywhere`` is False (another
        replica said it ended).
        """
        session_id = session.id
        if session_id is not None:
            self.sessions.remove(session)
            replication = self.replication
            if (
                everywhere
                and replication is not None
                and session.replicas is not None
                and not session.closing
            ):
                replication.end_soon(session_id)
        self._release(session)
        session.close()

    async def find(self, session_id: str, principal: object = None) -> HttpSession | None:
        """Return the live Streamable HTTP session a client names, if it is that client's.

        A session found is in use (past its initialize: no longer expires unconfirmed)
        and takes ``principal`` as its caller's newest token. With replicas, a session
        another replica opened is adopted from its record. None if there is no such
        session, or ``principal`` is not the caller who opened it.

        Raises:
            SessionLimitReached: a copy would exceed ``max_sessions``.
            StoreUnavailable: the session had to be read from a store out of reach.
        """
        session = self.sessions.get(session_id)
        if session is not None and session.closing:
            session = None
        replication = self.replication
        if replication is not None:
            session = await replication.find(session_id, session, principal)
        if (
            session is None
            or session.kind is not SessionKind.STREAMABLE
            or session.principal != principal
        ):
            return None
        if principal is not session.principal:
            # The same caller with a new token (new scopes, a later expiry): what the
            # session's handlers see from now on.
            session.principal = principal
        if self._unconfirmed:
            self._unconfirmed.pop(session_id, None)
        return session

    def make_room(self) -> None:
        """Make room for one more session if the table is full.

        Raises:
            SessionLimitReached: ``max_sessions`` are open and none can give way.
        """
        if len(self._open) >= self.max_sessions and not self._give_way():
            self._evict_expired()
            if len(self._open) >= self.max_sessions:
                raise SessionLimitReached(
                    f"the server has reached its limit of {self.max_sessions} sessions"
                )

    def add(self, session: HttpSession) -> None:
        """Count in a copy of a shared session adopted from its record."""
        assert session.id is not None
        self._live.add(session)
        self._open.add(session)
        self.sessions.add(session)
        self.timers.watch_idle(session.id, session.routing.last_active)

    def live(self) -> list[HttpSession]:
        """Every session until it has ended, at this instant."""
        return list(self._live)

    def drop_copy(self, session: HttpSession) -> None:
        """Forget this replica's copy of a shared session; it lives on elsewhere."""
        self.sessions.remove(session)
        self._release(session)
        session.drop_copy()

    def _give_way(self) -> bool:
        # A full table must not lock everyone out until a flood of initializes expires:
        # the oldest idle session that has seen only its initialize makes room. Its
        # client, if it comes back, gets 404 and starts a new session (as the spec says).
        for looked, session_id in enumerate(self._unconfirmed):
            if looked >= _GIVE_WAY_LOOKS:
                return False
            session = self.sessions.get(session_id)
            if session is not None and not session.closing and not session.busy():
                del self._unconfirmed[session_id]
                if self.replication is not None and session.replicas is not None:
                    self.replication.give_way(session)
                else:
                    self.close_session(session)
                self.given_way += 1
                return True
        return False

    def _evict_expired(self) -> None:
        # Expiry runs in its own task; this catches the sessions that are due in this
        # very tick, before that task got to them.
        now = trio.current_time()
        for session in list(self._open):
            if session.kind is not SessionKind.STREAMABLE or session.busy():
                continue
            timeout = (
                self.unconfirmed_timeout
                if session.id is not None and session.id in self._unconfirmed
                else self.idle_timeout
            )
            if now >= session.routing.last_active + timeout:
                if session.replicas is not None:
                    self.drop_copy(session)
                else:
                    self.close_session(session)

    def view(self) -> ManagerView:
        """The table at this instant: its sessions, stateless host and worker pools."""
        pools = (self._stateless_pool, self.effective_session_options.process_pool)
        return ManagerView(
            sessions=tuple(self._live),
            stateless=self.stateless,
            pools=tuple(pool for pool in pools if pool is not None),
        )


def _stateless_options(base: SessionOptions, pool: ProcessPool | None) -> SessionOptions:
    # A stateless session lives for one POST: a task would end with it, so none is
    # offered, and worker processes for offloaded tools would start and stop with every
    # POST, so they share one pool. Worked out once per manager, not on every POST.
    return attrs.evolve(
        base,
        tasks=attrs.evolve(base.tasks, enabled=False),
        process_pool=base.process_pool or pool,
    )


def _stateless_host(
    server: Server,
    stateless: StatelessHost | StatelessOptions | None,
    options: SessionOptions,
    base: SessionOptions,
) -> StatelessHost:
    if isinstance(stateless, StatelessHost):
        return stateless
    # The shared worker pool, and the task limits sessions have too.
    return StatelessHost(
        server, options=stateless, session_options=attrs.evolve(options, tasks=base.tasks)
    )


async def _contained(fn: Callable[[], Awaitable[None]]) -> None:
    # A session's work in the manager's nursery: its failure ends that work only.
    try:
        await fn()
    except Exception:
        _log.exception("a session's work failed")
