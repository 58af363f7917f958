# The sessions of a SessionManager shared with other replicas (``--store``).
#
# With ``replicas`` (several processes serving the same sessions), a session another
# replica opened is found through its record and adopted (``find``): a local copy, which
# writes the record again at most every ``touch_interval`` seconds while it serves
# requests. Ending a session (DELETE, expiry) removes the record and tells every copy; a
# copy that went idle while another replica wrote the record since only drops itself
# (_session_store.py), and so does every copy of a replica that stops: stopping is this
# replica's business, and its sessions live on in the others. A shared session that gives
# way in a full table drops its copy here too, and ends everywhere only if no other
# replica wrote its record since. The requests this replica runs for shared sessions hold
# leases (_leases.py), renewed by one task, so that clients following their streams
# elsewhere learn if they die with it. Without replicas none of this exists: the manager
# has no Replication.

from __future__ import annotations

import functools
import logging
from collections.abc import Awaitable, Callable
from typing import Final, Protocol

import trio

from ..._exceptions import ProtocolError
from ._event_store import EventStore
from ._http_session import HttpSession, SessionHost, SessionKind
from ._leases import LeaseKeeper
from ._relay import Relayed, RelayKind, RemoteChanges, Replicas
from ._session_store import SessionRecord, SessionStore, StoreUnavailable, principal_identity
from ._shared_copy import SharedCopy

__all__ = ["TOUCH_INTERVAL", "Replication", "SessionTable"]

_log = logging.getLogger("mcpactor.http")

#: seconds between two writes of a shared session's record by one replica, at most
TOUCH_INTERVAL: Final = 30.0
# Longer than any id this server hands out: a longer one is not looked up anywhere.
_MAX_SESSION_ID: Final = 128


class SessionTable(SessionHost[HttpSession], Protocol):
    """What the replication needs of the manager whose sessions it shares."""

    idle_timeout: float
    sessions: SessionStore

    @property
    def stopping(self) -> bool:
        """Whether the manager is stopping."""

    def get(self, session_id: str) -> HttpSession | None:
        """Return the live session named ``session_id``, or None."""

    def spawn(self, fn: Callable[[], Awaitable[None]]) -> None:
        """Run ``fn`` in the manager's nursery."""

    def make_room(self) -> None:
        """Make room for one more session, or raise SessionLimitReached."""

    def add(self, session: HttpSession) -> None:
        """Count in an adopted copy."""

    def drop_copy(self, session: HttpSession) -> None:
        """Forget this replica's copy of a shared session."""

    def close_session(self, session: HttpSession, *, everywhere: bool = True) -> None:
        """Forget a session's id and let it wind down."""

    def live(self) -> list[HttpSession]:
        """Every session until it has ended."""


class Replication:
    """A manager's sessions as shared with the other replicas: records, relay, leases."""

    def __init__(
        self,
        manager: SessionTable,
        replicas: Replicas,
        event_store: EventStore,
        watch_idle: Callable[[str, float], None],
    ) -> None:
        self._manager = manager
        self._watch_idle = watch_idle
        #: the other processes serving the same sessions
        self.replicas = replicas
        #: seconds between two writes of a shared session's record by this replica
        self.touch_interval = min(TOUCH_INTERVAL, manager.idle_timeout / 10)
        #: how long a shared session's record outlives its last write
        self.record_ttl = manager.idle_timeout + self.touch_interval
        # Ids of shared sessions ending everywhere: not adopted again meanwhile.
        self._ending: set[str] = set()
        # Ids of sessions whose record a request is reading to adopt them: the requests
        # that name one meanwhile wait for that read instead of making their own.
        self._adopting: dict[str, trio.Event] = {}
        #: the leases of the requests this replica runs for shared sessions
        self.leases = LeaseKeeper(event_store)

    async def start(self, nursery: trio.Nursery) -> None:
        """Renew leases, hear relayed messages and remote changes in ``nursery``."""
        # Cancelled once every session has ended: then it drops what is left.
        await nursery.start(self.leases.run)
        await nursery.start(self.replicas.relay.serve, self._take_relayed)
        if self.replicas.changes is not None:
            await nursery.start(self._hear_remote_changes, self.replicas.changes)

    def share(self, session: HttpSession) -> None:
        """Make a new Streamable HTTP session one the other replicas can serve."""
        session.share(self.replicas, self.record_ttl, leases=self.leases)

    async def find(
        self, session_id: str, session: HttpSession | None, principal: object
    ) -> HttpSession | None:
        """Return ``session``, or the session adopted from its record if None here."""
        manager = self._manager
        if session is None:
            if manager.stopping or len(session_id) > _MAX_SESSION_ID or session_id in self._ending:
                return None
            reading = self._adopting.get(session_id)
            if reading is not None:
                # A burst of a session's requests on a replica new to it: one read.
                await reading.wait()
                session = manager.get(session_id)
            if session is None:
                session = await self._read_and_adopt(session_id, principal)
                if session is None:
                    return None
        shared = session.shared
        if shared is not None:
            now = trio.current_time()
            # A subscription changed by the last request reaches the other copies now.
            if now - shared.written_at >= self.touch_interval or shared.state_changed():
                shared.written_at = now
                manager.spawn(functools.partial(self._write_record, session, shared))
        return session

    def end_soon(self, session_id: str) -> None:
        """End a shared session in every replica, in the manager's nursery."""
        self._ending.add(session_id)
        self._manager.spawn(functools.partial(self._end_everywhere, session_id))

    def give_way(self, session: HttpSession) -> None:
        """Drop the copy of an unconfirmed session; it ends unless served elsewhere."""
        # Unconfirmed here may be in use elsewhere: only this copy goes now.
        assert session.id is not None
        self._manager.drop_copy(session)
        self._manager.spawn(functools.partial(self._end_unless_served_elsewhere, session.id))

    async def _read_and_adopt(self, session_id: str, principal: object) -> HttpSession | None:
        manager = self._manager
        reading = self._adopting.setdefault(session_id, trio.Event())
        try:
            record = await self.replicas.records.get(session_id)
            if record is None or record.principal != principal_identity(principal):
                return None
            # Another request may have adopted it meanwhile, or it may have ended.
            session = manager.get(session_id)
            if session is None:
                if session_id in self._ending or manager.stopping:
                    return None
                session = self._adopt(record, principal)
            return session
        finally:
            if self._adopting.get(session_id) is reading:
                del self._adopting[session_id]
            reading.set()

    def _adopt(self, record: SessionRecord, principal: object) -> HttpSession | None:
        manager = self._manager
        manager.make_room()
        session = HttpSession(manager, SessionKind.STREAMABLE, record.id, principal)
        try:
            session.share(self.replicas, self.record_ttl, record, leases=self.leases)
        except ProtocolError as exc:
            _log.warning("session %s cannot be adopted here: %s", record.id, exc)
            session.close()
            return None
        manager.add(session)
        _log.debug("session %s adopted from replica %s", record.id, record.touched_by)
        return session

    async def _write_record(self, session: HttpSession, shared: SharedCopy) -> None:
        if session.closing:
            return  # an ended session's record must not come back
        try:
            await shared.write_record()
        except Exception:
            # The session goes on here; the next request writes it again.
            shared.written_at = -float("inf")
            _log.exception("could not write the record of session %s", session.id)

    async def _end_everywhere(self, session_id: str) -> None:
        replicas = self.replicas
        try:
            await replicas.records.remove(session_id)
            await replicas.relay.send(Relayed(RelayKind.CLOSED, session_id, replicas.replica_id))
        except Exception:
            # Its record expires on its own; the other copies find that out when idle.
            _log.exception("could not end session %s in the other replicas", session_id)
        finally:
            self._ending.discard(session_id)

    async def expire_shared(self, session: HttpSession, timeout: float) -> None:
        """End an idle copy everywhere, or only here if another replica wrote it since."""
        manager = self._manager
        assert session.id is not None
        try:
            record = await self.replicas.records.get(session.id)
        except Exception:
            _log.exception("could not read the record of session %s", session.id)
            self._watch_idle(session.id, trio.current_time())
            return
        if session.closing:
            return
        now = trio.current_time()
        if session.busy() or now < session.routing.last_active + timeout:
            # Touched since: the idle timer (which every session has) looks again.
            if timeout == manager.idle_timeout:
                self._watch_idle(session.id, session.routing.last_active)
            return
        if record is not None and record.touched_by != self.replicas.replica_id:
            _log.debug("copy of session %s dropped: it is served elsewhere", session.id)
            manager.drop_copy(session)
        else:
            _log.debug("session %s expired after %s s idle", session.id, manager.idle_timeout)
            manager.close_session(session)

    async def _end_unless_served_elsewhere(self, session_id: str) -> None:
        # A copy that gave way: its session ends everywhere unless another replica wrote
        # the record since (it serves the session there).
        try:
            record = await self.replicas.records.get(session_id)
        except StoreUnavailable as exc:
            _log.debug("session %s is left to expire: %s", session_id, exc)
            return
        if (
            record is not None
            and record.touched_by == self.replicas.replica_id
            and self._manager.get(session_id) is None
            and session_id not in self._ending
        ):
            self._ending.add(session_id)
            await self._end_everywhere(session_id)

    async def _take_relayed(self, message: Relayed) -> None:
        session = self._manager.sessions.get(message.session_id)
        if session is None or session.closing or session.shared is None:
            return  # not a session this replica holds a copy of
        if message.kind is RelayKind.CLOSED:
            self._manager.close_session(session, everywhere=False)
            return
        try:
            await session.shared.take_relayed(message)
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
                for session in self._manager.live():
                    if session.replicas is None or session.closing:
                        continue
                    if event.kind == "resource_updated":
                        if event.uri is not None:
                            session.actor.changes.resource_updated(event.uri)
                    else:
                        session.actor.changes.list_changed(event.kind)
