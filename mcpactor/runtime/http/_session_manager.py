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
# Timers are one task each for all sessions, not a task per session (an idle session
# should cost little more than its state): a heap of (deadline, session id), checked
# lazily. Idle expiry: a session touched since its entry was pushed goes back with its
# new deadline; one that ended is skipped. Sleep: a session that wakes gets an entry
# ``sleep_after`` seconds ahead; when it is due, a session quiet since then falls asleep
# if nothing is left to do, one still busy is looked at again later. In each heap
# deadlines are pushed in time order (the delay is the same for every session), so a
# new entry never precedes the one the task sleeps until.
#
# Limits (invariant 4): ``max_sessions`` in all, and ``max_sessions_per_client`` for one
# client address, so that one client opening sessions in a loop fills its own share and
# not the table (the transport names no client for a loopback address: every local
# client, and every client behind a reverse proxy on this machine, shares one). A Streamable HTTP
# session that has seen only its initialize is "unconfirmed" and expires after
# ``unconfirmed_timeout`` idle seconds instead of the full idle timeout: a client that
# never comes back (or a flood of unauthenticated initializes) holds its places for a
# minute, not half an hour. The app confirms a session when a later request names it;
# unconfirmed sessions wait in a deque of (deadline, id), in time order like the heaps
# below.
#
# Named sessions are found through a SessionStore (_session_store.py): this process's
# live sessions. With ``replicas`` (several processes serving the same sessions), a
# session another replica opened is found through its record and adopted (``find``):
# a local copy, which writes the record again at most every ``touch_interval`` seconds
# while it serves requests. Ending a session (DELETE, expiry) removes the record and
# tells every copy; a copy that went idle while another replica wrote the record since
# only drops itself (_session_store.py), and so does every copy of a replica that stops:
# stopping is this replica's business, and its sessions live on in the others. A shared
# session that gives way in a full table (below) drops its copy here too, and ends
# everywhere only if no other replica wrote its record since. The requests this replica
# runs for shared sessions hold leases (_leases.py), renewed by one task, so that
# clients following their streams elsewhere learn if they die with it. Without replicas
# none of this runs.
#
# Work spawned for the sessions (their ends, record writes, followers) runs in the
# manager's nursery, whose failure would end the server: what fails there is logged and
# contained (invariant 10). A store that cannot be reached leaves what would have been
# cleaned up to its ttl, and never ends the process.
#
# Two more timers end waits of SSE writers (see transports/_http_writer.py): the short one of a
# priming event held back for the answer behind it, and the longer one before a
# streamed POST starts watching for its client leaving. Each is a deque of (deadline,
# attachment, ticket), in time order for the same reason. One timer for every writer,
# because a cancel scope with a deadline per POST was, under load, the biggest cost SSE
# added to a request.

from __future__ import annotations

import collections
import functools
import heapq
import logging
from collections.abc import Awaitable, Callable
from typing import Final

import attrs
import trio

from ..._exceptions import ProtocolError
from ...server import Server
from .._messages import SessionOptions
from .._offload import ProcessPool
from .._snapshot import observed
from .._stateless import StatelessHost, StatelessOptions
from .._views import ManagerView
from ._event_store import EventStore
from ._follow import Followers
from ._http_session import HttpSession, SessionKind
from ._leases import LeaseKeeper
from ._relay import Relayed, RelayKind, RemoteChanges, Replicas
from ._session_store import (
    MemorySessionStore,
    SessionRecord,
    SessionStore,
    StoreUnavailable,
    principal_identity,
)
from ._streams import NudgeTimer
from ._watch import LateWatch

__all__ = ["ManagerStatistics", "SessionLimitReached", "SessionManager"]

#: seconds a session that has seen only its initialize may stay idle, by default
UNCONFIRMED_TIMEOUT: Final = 60.0

_log = logging.getLogger("mcpactor.http")

#: seconds an awake session stays awake after its last activity, once nothing runs in
#: it: long enough that a client's next request in a burst finds it awake, short enough
#: that idle sessions cost only their state
SLEEP_AFTER: Final = 1.0
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
#: seconds between two writes of a shared session's record by one replica, at most
TOUCH_INTERVAL: Final = 30.0
# Longer than any id this server hands out: a longer one is not looked up anywhere.
_MAX_SESSION_ID: Final = 128


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
        self.stateless = (
            stateless
            if isinstance(stateless, StatelessHost)
            else StatelessHost(
                server,
                options=stateless,
                # The shared worker pool, and the task limits sessions have too.
                session_options=attrs.evolve(self.stateless_session_options, tasks=base.tasks),
            )
        )
        self.event_store = event_store
        self.max_sessions = max_sessions
        self.max_sessions_per_client = (
            max_sessions if max_sessions_per_client is None else max_sessions_per_client
        )
        self.idle_timeout = idle_timeout
        self.unconfirmed_timeout = unconfirmed_timeout
        # Open sessions by client address, and the address of each.
        self._per_client: dict[str, int] = {}
        self._client_of: dict[HttpSession, str] = {}
        self._unconfirmed: dict[str, None] = {}
        #: unconfirmed sessions closed to make room in a full table
        self.given_way = 0
        self._unconfirmed_deadlines: collections.deque[tuple[float, str]] = collections.deque()
        self._unconfirmed_watched = trio.Event()
        self.response_mode = response_mode
        #: the named sessions by id
        self.sessions: SessionStore = (
            session_store if session_store is not None else MemorySessionStore()
        )
        # Every session until it has ended, and those of them not yet closing: only open
        # sessions count against the limit (a closed one is on its way out).
        self._live: set[HttpSession] = set()
        self._open: set[HttpSession] = set()
        self._stopping = trio.Event()
        self._session_ended = trio.Event()
        self._nursery: trio.Nursery | None = None
        self._idle_deadlines: list[tuple[float, str]] = []
        self._idle_watched = trio.Event()
        #: seconds of quiet after which an awake session with nothing to do sleeps
        self.sleep_after = SLEEP_AFTER
        self._sleep_deadlines: list[tuple[float, str]] = []
        self._sleep_watched = trio.Event()
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
        #: seconds between two writes of a shared session's record by this replica
        self.touch_interval = min(TOUCH_INTERVAL, idle_timeout / 10)
        #: how long a shared session's record outlives its last write
        self.record_ttl = idle_timeout + self.touch_interval
        # Ids of shared sessions ending everywhere: not adopted again meanwhile.
        self._ending: set[str] = set()
        # Ids of sessions whose record a request is reading to adopt them: the requests
        # that name one meanwhile wait for that read instead of making their own.
        self._adopting: dict[str, trio.Event] = {}
        #: the leases of the requests this replica runs for shared sessions
        self.leases = LeaseKeeper(event_store) if replicas is not None else None

    def statistics(self) -> ManagerStatistics:
        """Return how many sessions and connections are live right now."""
        return ManagerStatistics(
            sessions=len(self._live),
            open_sessions=len(self._open),
            named_sessions=len(self.sessions),
            connections=sum(session.connections for session in self._live),
            awake_sessions=sum(session.awake for session in self._live),
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
            manager.start_soon(self._expire_idle_sessions)
            manager.start_soon(self._expire_unconfirmed_sessions)
            manager.start_soon(self._put_sessions_to_sleep)
            manager.start_soon(self.coalescing.run)
            manager.start_soon(self.watch_delay.run)
            manager.start_soon(self.late_watch.run)
            if self.leases is not None:
                # Cancelled once every session has ended: then it drops what is left.
                await manager.start(self.leases.run)
            if self.replicas is not None:
                await manager.start(self.replicas.relay.serve, self._take_relayed)
                if self.replicas.changes is not None:
                    await manager.start(self._hear_remote_changes, self.replicas.changes)
            # The tasks of stateless requests (tasks extension) end once every session
            # has: the grace periods are over.
            async with trio.open_nursery() as tasks:
                self.stateless.open_tasks(tasks)
                async with trio.open_nursery() as nursery:
                    self._nursery = nursery
                    task_status.started(self)
                    try:
                        await self._stopping.wait()
                    finally:
                        # Also when cancelled: sleeping sessions have no task to cancel.
                        for session in list(self._live):
                            if session.replicas is not None and not session.closing:
                                # The session lives on in the other replicas.
                                self._drop_copy(session)
                            else:
                                self.close_session(session)
                tasks.cancel_scope.cancel()
            manager.cancel_scope.cancel()

    async def wait_sessions(self, at_most: int = 0) -> None:
        """Wait until no more than ``at_most`` sessions are live (winding down counts)."""
        while len(self._live) > at_most:
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
        if len(self._open) >= self.max_sessions and not self._give_way():
            self._evict_expired()
            if len(self._open) >= self.max_sessions:
                raise SessionLimitReached(
                    f"the server has reached its limit of {self.max_sessions} sessions"
                )
        if client is not None and self._per_client.get(client, 0) >= self.max_sessions_per_client:
            # No sweep here: a client at its limit must not make every refusal walk the
            # whole table. Its idle sessions expire on their timers.
            raise SessionLimitReached(
                f"this client holds {self.max_sessions_per_client} sessions, the most one "
                "client may: end some (DELETE) or let them expire"
            )
        named = kind in (SessionKind.STREAMABLE, SessionKind.LEGACY_SSE)
        session_id = self.sessions.new_id() if named else None
        # Asleep: it starts a task only when something needs one (see _http_session.py).
        session = HttpSession(self, kind, session_id, principal)
        if kind is SessionKind.STATELESS:
            if protocol_version is not None:
                # No handshake reaches this throwaway session: it operates at what the
                # request's header says, and the client declared no capabilities.
                session.actor.core.adopt(protocol_version, dict(_STATELESS_CLIENT))
            session.serve_in_place(self._nursery)
        elif kind is SessionKind.STREAMABLE and self.replicas is not None:
            session.share(self.replicas, self.record_ttl, leases=self.leases)
        self._live.add(session)
        self._open.add(session)
        if client is not None:
            self._client_of[session] = client
            self._per_client[client] = self._per_client.get(client, 0) + 1
        if session_id is not None:
            self.sessions.add(session)
            if kind is SessionKind.STREAMABLE:
                self._watch_idle(session_id, session.last_active)
                self._watch_unconfirmed(session_id)
        return session

    def confirm(self, session: HttpSession) -> None:
        """A request named ``session``: it is in use, past its initialize."""
        if self._unconfirmed and session.id is not None:
            self._unconfirmed.pop(session.id, None)

    def _watch_unconfirmed(self, session_id: str) -> None:
        self._unconfirmed[session_id] = None
        when = trio.current_time() + self.unconfirmed_timeout
        self._unconfirmed_deadlines.append((when, session_id))
        if len(self._unconfirmed_deadlines) == 1:
            self._unconfirmed_watched.set()

    async def _expire_unconfirmed_sessions(self) -> None:
        deadlines = self._unconfirmed_deadlines
        while True:
            if not deadlines:
                await self._unconfirmed_watched.wait()
                self._unconfirmed_watched = trio.Event()
                continue
            await trio.sleep_until(deadlines[0][0])
            now = trio.current_time()
            while deadlines and deadlines[0][0] <= now:
                _, session_id = deadlines.popleft()
                if session_id not in self._unconfirmed:
                    continue  # confirmed, or ended
                session = self.sessions.get(session_id)
                if session is None or session.closing:
                    del self._unconfirmed[session_id]
                elif session.busy() or now < session.last_active + self.unconfirmed_timeout:
                    # Still answering its initialize, or touched since: look again later.
                    when = max(now, session.last_active) + self.unconfirmed_timeout
                    deadlines.append((when, session_id))
                else:
                    del self._unconfirmed[session_id]
                    if session.replicas is not None:
                        # The client's next requests may have gone to another replica.
                        self.spawn(
                            functools.partial(
                                self._expire_shared, session, self.unconfirmed_timeout
                            )
                        )
                        continue
                    _log.debug("session %s expired: nothing followed its initialize", session_id)
                    self.close_session(session)

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
        self._nursery.start_soon(self._run_awake, session, run)
        if session.kind is SessionKind.STREAMABLE and session.id is not None:
            self._watch_sleep(session.id)

    async def _run_awake(self, session: HttpSession, run: Callable[[], Awaitable[None]]) -> None:
        try:
            await run()
        except Exception:
            # A failing session must never take the server down (invariant 3); it has
            # ended by now.
            _log.exception("session %s failed", session.id)

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
        self._session_ended.set()
        self._session_ended = trio.Event()
        if session.id is not None:
            # The store holds named sessions only: a stateless one costs it no call.
            self.sessions.remove(session)

    def _watch_idle(self, session_id: str, last_active: float) -> None:
        heapq.heappush(self._idle_deadlines, (last_active + self.idle_timeout, session_id))
        if len(self._idle_deadlines) == 1:
            self._idle_watched.set()

    def _watch_sleep(self, session_id: str) -> None:
        when = trio.current_time() + self.sleep_after
        heapq.heappush(self._sleep_deadlines, (when, session_id))
        if len(self._sleep_deadlines) == 1:
            self._sleep_watched.set()

    async def _put_sessions_to_sleep(self) -> None:
        deadlines = self._sleep_deadlines
        while True:
            if not deadlines:
                await self._sleep_watched.wait()
                self._sleep_watched = trio.Event()
                continue
            await trio.sleep_until(deadlines[0][0])
            now = trio.current_time()
            delay = self.sleep_after
            later: list[tuple[float, str]] = []
            while deadlines and deadlines[0][0] <= now:
                _, session_id = heapq.heappop(deadlines)
                session = self.sessions.get(session_id)
                if session is None or session.closing or not session.awake:
                    continue  # it ended, or it sleeps already (waking pushes it again)
                if now < session.last_active + delay:
                    # Touched since: look again once it has been quiet long enough.
                    later.append((session.last_active + delay, session_id))
                elif session.may_sleep():
                    _log.debug("session %s sleeps", session_id)
                    session.sleep()
                else:
                    later.append((now + delay, session_id))  # still busy
            for entry in later:
                heapq.heappush(deadlines, entry)

    async def _expire_idle_sessions(self) -> None:
        deadlines = self._idle_deadlines
        timeout = self.idle_timeout
        while True:
            if not deadlines:
                await self._idle_watched.wait()
                self._idle_watched = trio.Event()
                continue
            await trio.sleep_until(deadlines[0][0])
            now = trio.current_time()
            while deadlines and deadlines[0][0] <= now:
                _, session_id = heapq.heappop(deadlines)
                session = self.sessions.get(session_id)
                if session is None or session.closing:
                    continue
                if now < session.last_active + timeout:
                    # Touched since: check again at its new deadline.
                    self._watch_idle(session_id, session.last_active)
                elif session.busy():
                    session.touch()
                    self._watch_idle(session_id, session.last_active)
                elif session.replicas is not None:
                    self.spawn(functools.partial(self._expire_shared, session, timeout))
                else:
                    _log.debug("session %s expired after %s s idle", session_id, timeout)
                    self.close_session(session)

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
            if everywhere and session.replicas is not None and not session.closing:
                self._ending.add(session_id)
                self.spawn(functools.partial(self._end_everywhere, session_id))
        self._release(session)
        session.close()

    # --- replicas -------------------------------------------------------------------------

    async def find(self, session_id: str, principal: object = None) -> HttpSession | None:
        """Return the live session a client names, or None.

        With replicas, a session another replica opened is adopted from its record,
        unless ``principal`` is not the caller who opened it (None then, too).

        Raises:
            SessionLimitReached: a copy would exceed ``max_sessions``.
        """
        session = self.get(session_id)
        replicas = self.replicas
        if replicas is None:
            return session
        if session is None:
            if (
                self._stopping.is_set()
                or len(session_id) > _MAX_SESSION_ID
                or session_id in self._ending
            ):
                return None
            reading = self._adopting.get(session_id)
            if reading is not None:
                # A burst of a session's requests on a replica new to it: one read.
                await reading.wait()
                session = self.get(session_id)
            if session is None:
                session = await self._read_and_adopt(replicas, session_id, principal)
                if session is None:
                    return None
        if session.replicas is not None:
            now = trio.current_time()
            # A subscription changed by the last request reaches the other copies now.
            if now - session.written_at >= self.touch_interval or session.state_changed():
                session.written_at = now
                self.spawn(functools.partial(self._write_record, session))
        return session

    async def _read_and_adopt(
        self, replicas: Replicas, session_id: str, principal: object
    ) -> HttpSession | None:
        reading = self._adopting.setdefault(session_id, trio.Event())
        try:
            record = await replicas.records.get(session_id)
            if record is None or record.principal != principal_identity(principal):
                return None
            # Another request may have adopted it meanwhile, or it may have ended.
            session = self.get(session_id)
            if session is None:
                if session_id in self._ending or self._stopping.is_set():
                    return None
                session = self._adopt(replicas, record, principal)
            return session
        finally:
            if self._adopting.get(session_id) is reading:
                del self._adopting[session_id]
            reading.set()

    def _adopt(
        self, replicas: Replicas, record: SessionRecord, principal: object
    ) -> HttpSession | None:
        if len(self._open) >= self.max_sessions and not self._give_way():
            self._evict_expired()
            if len(self._open) >= self.max_sessions:
                raise SessionLimitReached(
                    f"the server has reached its limit of {self.max_sessions} sessions"
                )
        session = HttpSession(self, SessionKind.STREAMABLE, record.id, principal)
        try:
            session.share(replicas, self.record_ttl, record, leases=self.leases)
        except ProtocolError as exc:
            _log.warning("session %s cannot be adopted here: %s", record.id, exc)
            session.close()
            return None
        self._live.add(session)
        self._open.add(session)
        self.sessions.add(session)
        self._watch_idle(record.id, session.last_active)
        _log.debug("session %s adopted from replica %s", record.id, record.touched_by)
        return session

    async def _write_record(self, session: HttpSession) -> None:
        if session.closing:
            return  # an ended session's record must not come back
        try:
            await session.write_record()
        except Exception:
            # The session goes on here; the next request writes it again.
            session.written_at = -float("inf")
            _log.exception("could not write the record of session %s", session.id)

    async def _end_everywhere(self, session_id: str) -> None:
        replicas = self.replicas
        assert replicas is not None
        try:
            await replicas.records.remove(session_id)
            await replicas.relay.send(Relayed(RelayKind.CLOSED, session_id, replicas.replica_id))
        except Exception:
            # Its record expires on its own; the other copies find that out when idle.
            _log.exception("could not end session %s in the other replicas", session_id)
        finally:
            self._ending.discard(session_id)

    async def _expire_shared(self, session: HttpSession, timeout: float) -> None:
        # An idle copy of a shared session: the session ends everywhere, unless another
        # replica wrote its record since this one did (then only this copy ends).
        replicas = self.replicas
        assert replicas is not None
        assert session.id is not None
        try:
            record = await replicas.records.get(session.id)
        except Exception:
            _log.exception("could not read the record of session %s", session.id)
            self._watch_idle(session.id, trio.current_time())
            return
        if session.closing:
            return
        now = trio.current_time()
        if session.busy() or now < session.last_active + timeout:
            # Touched since: the idle timer (which every session has) looks again.
            if timeout == self.idle_timeout:
                self._watch_idle(session.id, session.last_active)
            return
        if record is not None and record.touched_by != replicas.replica_id:
            _log.debug("copy of session %s dropped: it is served elsewhere", session.id)
            self._drop_copy(session)
        else:
            _log.debug("session %s expired after %s s idle", session.id, self.idle_timeout)
            self.close_session(session)

    async def _end_unless_served_elsewhere(self, session_id: str) -> None:
        # A copy that gave way: its session ends everywhere unless another replica wrote
        # the record since (it serves the session there).
        replicas = self.replicas
        assert replicas is not None
        try:
            record = await replicas.records.get(session_id)
        except StoreUnavailable as exc:
            _log.debug("session %s is left to expire: %s", session_id, exc)
            return
        if (
            record is not None
            and record.touched_by == replicas.replica_id
            and self.get(session_id) is None
            and session_id not in self._ending
        ):
            self._ending.add(session_id)
            await self._end_everywhere(session_id)

    def _drop_copy(self, session: HttpSession) -> None:
        self.sessions.remove(session)
        self._release(session)
        session.drop_copy()

    async def _take_relayed(self, message: Relayed) -> None:
        session = self.sessions.get(message.session_id)
        if session is None or session.closing or session.replicas is None:
            return  # not a session this replica holds a copy of
        if message.kind is RelayKind.CLOSED:
            self.close_session(session, everywhere=False)
            return
        try:
            await session.take_relayed(message)
        except Exception:
            _log.exception(
                "session %s failed on a message from replica %s", session.id, message.origin
            )

    async def _hear_remote_changes(
        self, changes: RemoteChanges, *, task_status: trio.TaskStatus[None]
    ) -> None:
        # Another replica's list change or resource update, for this replica's copies of
        # the sessions, as if this Server had raised it: the copy holding a session's GET
        # stream sends it there (the others drop it, _http_session.py).
        with changes.listen_remote() as listener:
            task_status.started()
            while True:
                event = await listener.next()
                if event.kind == "task":
                    continue  # a 2026-07-28 task notice: for listen streams only
                for session in list(self._live):
                    if session.replicas is None or session.closing:
                        continue
                    if event.kind == "resource_updated":
                        if event.uri is not None:
                            session.actor.resource_updated(event.uri)
                    else:
                        session.actor.list_changed(event.kind)

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
                if session.replicas is not None:
                    # Unconfirmed here may be in use elsewhere: only this copy goes now.
                    self._drop_copy(session)
                    self.spawn(functools.partial(self._end_unless_served_elsewhere, session_id))
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
            if now >= session.last_active + timeout:
                if session.replicas is not None:
                    self._drop_copy(session)
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


async def _contained(fn: Callable[[], Awaitable[None]]) -> None:
    # A session's work in the manager's nursery: its failure ends that work only.
    try:
        await fn()
    except Exception:
        _log.exception("a session's work failed")
