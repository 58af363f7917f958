# The registries of named sessions: this process's live sessions, and the records that
# replicas share.
#
# ``SessionStore`` is this process's table of live ``HttpSession`` objects, found by id
# on every request (sync: a dict lookup on the hot path). ``SessionRecords`` is what
# several replicas of one server share so that any of them can serve any session: one
# ``SessionRecord`` per session id — what was negotiated (revision, client capabilities
# and info), the log level, subscriptions, the principal's identity, which replica
# opened it and which last wrote it — kept for ``ttl`` seconds after each write. A
# replica that is named a session it does not hold reads the record and adopts the
# session from it (``SessionManager.find``). With no records configured (one process)
# nothing is written or read: the live table is all there is.
#
# Writes are whole records (last writer wins), so a store needs three operations: put
# with a TTL (Redis: SET key value EX ttl), get (GET) and remove (DEL, telling whether
# it was there). Idle expiry across replicas rests on ``touched_by``: a replica whose
# copy went idle looks at the record; if another replica wrote it since, the session
# lives on there and only the local copy is dropped, otherwise the session ends
# everywhere.

from __future__ import annotations

import secrets
from typing import TYPE_CHECKING, Protocol

from ._session_records import MAX_RECORD_BYTES as MAX_RECORD_BYTES
from ._session_records import MemorySessionRecords as MemorySessionRecords
from ._session_records import SessionRecord as SessionRecord
from ._session_records import SessionRecords as SessionRecords
from ._session_records import StoreUnavailable as StoreUnavailable
from ._session_records import principal_identity as principal_identity

if TYPE_CHECKING:
    from ._http_session import HttpSession

__all__ = [
    "MAX_RECORD_BYTES",
    "MemorySessionRecords",
    "MemorySessionStore",
    "SessionRecord",
    "SessionRecords",
    "SessionStore",
    "StoreUnavailable",
    "principal_identity",
]


class SessionStore(Protocol):
    """Where this process's live named sessions are found by id."""

    def new_id(self) -> str:
        """Return a fresh session id, unguessable and unique in the store."""

    def add(self, session: HttpSession) -> None:
        """Register ``session`` under its id."""

    def get(self, session_id: str) -> HttpSession | None:
        """Return the session registered under ``session_id``, or None."""

    def remove(self, session: HttpSession) -> None:
        """Forget ``session``, if it is the one registered under its id."""

    def __len__(self) -> int:
        """Return how many sessions are registered."""


class MemorySessionStore(dict[str, "HttpSession"]):
    """A SessionStore in this process's memory: a dict of sessions by id."""

    __slots__ = ()

    def new_id(self) -> str:
        """Return 24 random bytes, URL-safe (32 characters)."""
        return secrets.token_urlsafe(24)

    def add(self, session: HttpSession) -> None:
        """Register ``session`` under its id."""
        assert session.id is not None
        self[session.id] = session

    def remove(self, session: HttpSession) -> None:
        """Forget ``session``, if it is the one registered under its id."""
        session_id = session.id
        if session_id is not None and self.get(session_id) is session:
            del self[session_id]
