# The records a session actor and its transports share: what goes out (``Outbound``, of
# one ``OutboundKind``), where it goes (``Outbox``), and the session's options and
# statistics. The transports import these and nothing else of the actor's insides.

from __future__ import annotations

import enum
import functools
from types import TracebackType
from typing import Final, Protocol

import attrs
import trio

from ..protocol import JSONValue, Phase, RequestId
from ._offload import ProcessPool
from ._tasks import TaskOptions

__all__ = [
    "NOTIFICATION",
    "REQUEST",
    "RESPONSE",
    "SIGNAL",
    "Outbound",
    "OutboundKind",
    "Outbox",
    "SessionOptions",
    "SessionStatistics",
    "StreamSignal",
    "closed_outbox",
]


class OutboundKind(enum.Enum):
    """What an ``Outbound`` carries; set where it is built, read by the transports."""

    #: a response or error response (or a batch's array of them): ends its requests
    RESPONSE = "response"
    #: a notification
    NOTIFICATION = "notification"
    #: a server→client request; its answer comes back as a message from the client
    REQUEST = "request"
    #: no message: a ``StreamSignal`` for a streaming transport
    SIGNAL = "signal"


RESPONSE: Final = OutboundKind.RESPONSE
NOTIFICATION: Final = OutboundKind.NOTIFICATION
REQUEST: Final = OutboundKind.REQUEST
SIGNAL: Final = OutboundKind.SIGNAL


class StreamSignal(enum.Enum):
    """What an ``Outbound`` without a payload tells a streaming transport."""

    #: the handler asked to close its request's response stream; the client resumes it
    CLOSE = "close"
    #: the request ended without a response (it was cancelled): its stream is over
    ABANDONED = "abandoned"


@attrs.frozen
class Outbound:
    """One message on its way to the client, built by the session core, of one ``kind``.

    ``related_request_id`` names the client request it belongs to (its response, or a
    progress/log notification or server→client request made while serving it); HTTP uses
    it to pick the response stream. None means "not tied to a request". A ``SIGNAL``
    carries no message (``payload`` is None) but a ``signal``; only actors created with
    ``stream_signals=True`` send them. Transports switch on ``kind``, never on the
    payload's keys.
    """

    kind: OutboundKind
    payload: JSONValue
    related_request_id: RequestId | None = None
    signal: StreamSignal | None = None


class Outbox(Protocol):
    """Where a session's messages go: a memory channel, or a transport's own sender.

    ``send_nowait`` raises ``trio.WouldBlock`` when full; ``send`` then waits (that is
    backpressure); both raise ``trio.ClosedResourceError`` or ``trio.BrokenResourceError``
    once the other end is gone. Closing it tells the transport nothing more will come.
    """

    def send_nowait(self, value: Outbound, /) -> None:
        """Hand over one message without waiting."""

    async def send(self, value: Outbound, /) -> None:
        """Hand over one message, waiting while the outbox is full."""

    def close(self) -> None:
        """Say that nothing more will be sent."""

    async def __aenter__(self) -> object:
        """Return the outbox; leaving the block closes it."""

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc_value: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        """Close the outbox."""


@attrs.frozen
class SessionOptions:
    """Limits and timeouts of a session; the defaults suit most servers."""

    #: seconds running handlers get to finish after the client went away or a signal
    shutdown_grace: float = 5.0
    #: seconds to wait for the client's answer to a server→client request (None: forever)
    client_request_timeout: float | None = 300.0
    #: requests of one client served at once; more are refused with a clear error
    max_in_flight: int = 1024
    #: the level log messages are filtered at until the client sets one
    log_level: str = "info"
    #: the limiter for blocking (``def``) handlers; None uses trio's default (40 threads)
    thread_limiter: trio.CapacityLimiter | None = None
    #: worker processes for ``offload="process"`` tools, shared between sessions; None
    #: gives each session its own pool, started on first use
    process_pool: ProcessPool | None = None
    #: limits of task-augmented requests (2025-11-25)
    tasks: TaskOptions = attrs.field(factory=TaskOptions)


@attrs.frozen
class SessionStatistics:
    """A snapshot of one session, for tests and debug output."""

    phase: Phase
    requests_in_flight: int
    client_requests_pending: int
    subscriptions: int


@functools.cache
def closed_outbox() -> trio.MemorySendChannel[Outbound]:
    """The outbox of an actor that has none yet: sending fails as after the session ended."""
    send, _ = trio.open_memory_channel[Outbound](0)
    send.close()
    return send
