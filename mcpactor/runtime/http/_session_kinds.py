# What an HTTP session is (which transport it serves), what it needs of the manager
# that owns it, and what its POSTs may be refused for: apart from the session itself,
# so that the transports and the manager name them without the session's machinery.

from __future__ import annotations

import enum
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Protocol, TypeVar

from ...protocol import RequestId, describe
from .._messages import SessionOptions
from ._follow import Followers
from ._streams import NudgeTimer

if TYPE_CHECKING:
    from ...server import Server
    from ._event_store import EventStore

__all__ = ["DuplicateRequestId", "SessionHost", "SessionKind"]

# The session a host owns (HttpSession).
_Session = TypeVar("_Session", contravariant=True)


class SessionKind(enum.Enum):
    """Which transport a session serves; decides ids, routing and resumability."""

    STREAMABLE = "streamable HTTP"
    STATELESS = "stateless HTTP"
    LEGACY_SSE = "HTTP+SSE"
    WEBSOCKET = "WebSocket"


class SessionHost(Protocol[_Session]):
    """What a session needs of the manager that owns it (``SessionManager`` is one)."""

    server: Server
    response_mode: str
    effective_session_options: SessionOptions
    stateless_session_options: SessionOptions
    event_store: EventStore
    #: the longest message a session writes (None: no limit)
    max_message_bytes: int | None
    #: ends a priming event's wait for the answer behind it
    coalescing: NudgeTimer
    #: ends a streamed POST's time without a watch for its client leaving
    watch_delay: NudgeTimer

    def wake(self, session: _Session, run: Callable[[], Awaitable[None]]) -> None:
        """Run an awake period of ``session`` (``run``) in the manager's nursery."""

    #: the streams this process follows for resumptions of other replicas' streams
    followers: Followers

    def spawn(self, fn: Callable[[], Awaitable[None]]) -> None:
        """Run a piece of a session's work in the manager's nursery (a teardown, a follower)."""

    def ended(self, session: _Session) -> None:
        """``session`` has ended: forget it."""


class DuplicateRequestId(Exception):
    """A POST reuses the id of a request still in flight in its session."""

    def __init__(self, request_id: RequestId) -> None:
        super().__init__(f"request id {describe(request_id)} is already in flight in this session")
        self.request_id = request_id
