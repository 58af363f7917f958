# Reading one SSE response of a Streamable HTTP server, and where to resume it from.
#
# Every ``message`` event with data is one JSON-RPC message (or batch) for the session;
# a priming event (an id, no data) delivers nothing but moves the cursor. The cursor
# keeps the last event id (what ``Last-Event-ID`` resumes from), the ``retry`` delay the
# server asked for (capped), and how many events arrived, which is how a reconnection
# shows it made progress. This changes with the SSE and resumption rules, never with
# the POSTs.

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Final

from .._exceptions import ProtocolError, RemoteProtocolError, TransportBroken
from ..protocol import JSONValue, decode
from ._sse import SseParser

if TYPE_CHECKING:
    from ._http11 import HttpResponse

__all__ = ["MAX_ATTEMPTS", "Cursor", "decoded", "read_stream"]

# The reconnection delay until the server names one, and the longest one honoured.
_DEFAULT_RETRY: Final = 1.0
_MAX_RETRY: Final = 60.0
#: reconnections in a row that bring nothing new before a stream is given up
MAX_ATTEMPTS: Final = 3


class Cursor:
    """Where one SSE stream is: what to resume from, and when."""

    __slots__ = ("last_event_id", "received", "retry")

    def __init__(self) -> None:
        self.last_event_id = ""
        self.retry = _DEFAULT_RETRY
        #: events read so far (with data or an id): whether a reconnection made progress
        self.received = 0


async def read_stream(
    response: HttpResponse,
    cursor: Cursor,
    max_bytes: int,
    deliver: Callable[[JSONValue | ProtocolError], Awaitable[None]],
    url: object,
) -> None:
    """Deliver every message of an SSE response, moving ``cursor`` as events arrive.

    Raises:
        TransportBroken: the connection failed, or the stream broke the SSE format.
    """
    parser = SseParser(max_bytes)
    try:
        while chunk := await response.receive_some():
            for event in parser.feed(chunk):
                # A priming event has an id and no data: nothing to deliver.
                if event.event == "message" and event.data:
                    await deliver(decoded(event.data.encode()))
                if event.id:
                    cursor.last_event_id = event.id
                cursor.received += 1
            if parser.last_event_id and parser.last_event_id != cursor.last_event_id:
                # An id in a block without a data field dispatches no event.
                cursor.last_event_id = parser.last_event_id
                cursor.received += 1
            if parser.retry_ms is not None:
                cursor.retry = min(parser.retry_ms / 1000, _MAX_RETRY)
    except RemoteProtocolError as exc:
        raise TransportBroken(f"{url}: {exc}") from None


def decoded(data: bytes) -> JSONValue | ProtocolError:
    """The JSON value of a body or an event's data, or the error that it is not JSON."""
    try:
        return decode(data)
    except RemoteProtocolError as exc:
        return exc
