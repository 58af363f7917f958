# The registry of named sessions: id → session, behind an interface.
#
# The session manager finds the session a request names here, and nowhere else, so
# that a registry shared between replicas (Redis: one key per session id, holding which
# replica owns it and its record, with a TTL for expiry) can replace the in-memory one
# later. The manager keeps what is this process's own: the live objects, limits and the
# timers that expire sessions by their ``last_active``.

from __future__ import annotations

import secrets
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from ._http_session import HttpSession

__all__ = ["MemorySessionStore", "SessionStore"]


class SessionStore(Protocol):
    """Where named sessions are found by id."""

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


class MemorySessionStore:
    """A SessionStore in this process's memory: a dict."""

    __slots__ = ("_sessions",)

    def __init__(self) -> None:
        self._sessions: dict[str, HttpSession] = {}

    def new_id(self) -> str:
        """Return 24 random bytes, URL-safe (32 characters)."""
        return secrets.token_urlsafe(24)

    def add(self, session: HttpSession) -> None:
        """Register ``session`` under its id."""
        assert session.id is not None
        self._sessions[session.id] = session

    def get(self, session_id: str) -> HttpSession | None:
        """Return the session registered under ``session_id``, or None."""
        return self._sessions.get(session_id)

    def remove(self, session: HttpSession) -> None:
        """Forget ``session``, if it is the one registered under its id."""
        session_id = session.id
        if session_id is not None and self._sessions.get(session_id) is session:
            del self._sessions[session_id]

    def __len__(self) -> int:
        """Return how many sessions are registered."""
        return len(self._sessions)
