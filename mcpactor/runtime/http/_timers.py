# The timers of a SessionManager's sessions: idle expiry, unconfirmed expiry, sleep.
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
# A Streamable HTTP session that has seen only its initialize is "unconfirmed" and
# expires after ``unconfirmed_timeout`` idle seconds instead of the full idle timeout: a
# client that never comes back (or a flood of unauthenticated initializes) holds its
# places for a minute, not half an hour. The app confirms a session when a later request
# names it; unconfirmed sessions wait in a deque of (deadline, id), in time order like
# the heaps.
#
# An idle copy of a shared session (with replicas) is not simply closed: the replication
# (_replication.py) finds out whether another replica serves it now.

from __future__ import annotations

import collections
import functools
import heapq
import logging
from collections.abc import Awaitable, Callable
from typing import Final, Protocol

import trio

from ._http_session import HttpSession
from ._replication import Replication
from ._session_store import SessionStore

__all__ = ["SLEEP_AFTER", "SessionTimers", "TimedTable"]

_log = logging.getLogger("mcpactor.http")

#: seconds an awake session stays awake after its last activity, once nothing runs in
#: it: long enough that a client's next request in a burst finds it awake, short enough
#: that idle sessions cost only their state
SLEEP_AFTER: Final = 1.0


class TimedTable(Protocol):
    """What the timers need of the manager whose sessions they watch."""

    idle_timeout: float
    unconfirmed_timeout: float
    sessions: SessionStore
    replication: Replication | None

    def spawn(self, fn: Callable[[], Awaitable[None]]) -> None:
        """Run ``fn`` in the manager's nursery."""

    def close_session(self, session: HttpSession, *, everywhere: bool = True) -> None:
        """Forget a session's id and let it wind down."""


class SessionTimers:
    """The idle, unconfirmed and sleep timers of every session of one manager."""

    def __init__(self, manager: TimedTable) -> None:
        self._manager = manager
        #: ids of the Streamable HTTP sessions no request has named since their initialize
        self.unconfirmed: dict[str, None] = {}
        self._unconfirmed_deadlines: collections.deque[tuple[float, str]] = collections.deque()
        self._unconfirmed_watched = trio.Event()
        self._idle_deadlines: list[tuple[float, str]] = []
        self._idle_watched = trio.Event()
        #: seconds of quiet after which an awake session with nothing to do sleeps
        self.sleep_after = SLEEP_AFTER
        self._sleep_deadlines: list[tuple[float, str]] = []
        self._sleep_watched = trio.Event()

    def start(self, nursery: trio.Nursery) -> None:
        """Run the three timers in ``nursery`` (the manager's own)."""
        nursery.start_soon(self._expire_idle_sessions)
        nursery.start_soon(self._expire_unconfirmed_sessions)
        nursery.start_soon(self._put_sessions_to_sleep)

    def watch_unconfirmed(self, session_id: str) -> None:
        """A new session: it expires soon unless a later request names it."""
        self.unconfirmed[session_id] = None
        when = trio.current_time() + self._manager.unconfirmed_timeout
        self._unconfirmed_deadlines.append((when, session_id))
        if len(self._unconfirmed_deadlines) == 1:
            self._unconfirmed_watched.set()

    def watch_idle(self, session_id: str, last_active: float) -> None:
        """Look at the session again once it has been idle for the idle timeout."""
        heapq.heappush(
            self._idle_deadlines, (last_active + self._manager.idle_timeout, session_id)
        )
        if len(self._idle_deadlines) == 1:
            self._idle_watched.set()

    def watch_sleep(self, session_id: str) -> None:
        """A session woke: it sleeps once quiet for ``sleep_after`` seconds."""
        when = trio.current_time() + self.sleep_after
        heapq.heappush(self._sleep_deadlines, (when, session_id))
        if len(self._sleep_deadlines) == 1:
            self._sleep_watched.set()

    async def _expire_unconfirmed_sessions(self) -> None:
        manager = self._manager
        deadlines = self._unconfirmed_deadlines
        unconfirmed = self.unconfirmed
        while True:
            if not deadlines:
                await self._unconfirmed_watched.wait()
                self._unconfirmed_watched = trio.Event()
                continue
            await trio.sleep_until(deadlines[0][0])
            now = trio.current_time()
            timeout = manager.unconfirmed_timeout
            while deadlines and deadlines[0][0] <= now:
                _, session_id = deadlines.popleft()
                if session_id not in unconfirmed:
                    continue  # confirmed, or ended
                session = manager.sessions.get(session_id)
                if session is None or session.closing:
                    del unconfirmed[session_id]
                elif session.busy() or now < session.routing.last_active + timeout:
                    # Still answering its initialize, or touched since: look again later.
                    when = max(now, session.routing.last_active) + timeout
                    deadlines.append((when, session_id))
                else:
                    del unconfirmed[session_id]
                    replication = manager.replication
                    if replication is not None and session.replicas is not None:
                        # The client's next requests may have gone to another replica.
                        manager.spawn(
                            functools.partial(replication.expire_shared, session, timeout)
                        )
                        continue
                    _log.debug("session %s expired: nothing followed its initialize", session_id)
                    manager.close_session(session)

    async def _put_sessions_to_sleep(self) -> None:
        manager = self._manager
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
                session = manager.sessions.get(session_id)
                if session is None or session.closing or not session.runs.awake:
                    continue  # it ended, or it sleeps already (waking pushes it again)
                if now < session.routing.last_active + delay:
                    # Touched since: look again once it has been quiet long enough.
                    later.append((session.routing.last_active + delay, session_id))
                elif session.runs.may_sleep():
                    _log.debug("session %s sleeps", session_id)
                    session.runs.sleep()
                else:
                    later.append((now + delay, session_id))  # still busy
            for entry in later:
                heapq.heappush(deadlines, entry)

    async def _expire_idle_sessions(self) -> None:
        manager = self._manager
        deadlines = self._idle_deadlines
        timeout = manager.idle_timeout
        while True:
            if not deadlines:
                await self._idle_watched.wait()
                self._idle_watched = trio.Event()
                continue
            await trio.sleep_until(deadlines[0][0])
            now = trio.current_time()
            while deadlines and deadlines[0][0] <= now:
                _, session_id = heapq.heappop(deadlines)
                session = manager.sessions.get(session_id)
                if session is None or session.closing:
                    continue
                if now < session.routing.last_active + timeout:
                    # Touched since: check again at its new deadline.
                    self.watch_idle(session_id, session.routing.last_active)
                elif session.busy():
                    session.routing.touch()
                    self.watch_idle(session_id, session.routing.last_active)
                elif manager.replication is not None and session.replicas is not None:
                    manager.spawn(
                        functools.partial(manager.replication.expire_shared, session, timeout)
                    )
                else:
                    _log.debug("session %s expired after %s s idle", session_id, timeout)
                    manager.close_session(session)
