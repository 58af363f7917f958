# The events of a server session (_session.py): what ``ServerSession.receive`` returns.
#
# Each is a thing that happened (a request, a notification, a cancel, a response to one
# of our requests, …) or ``Send``, a reply the machine produced itself that the owner
# writes to the peer as it is. A request arrives as its ``Exchange``: the object that
# builds every answer to it.

from __future__ import annotations

from typing import TYPE_CHECKING, Final, Protocol

import attrs

from .._exceptions import LocalProtocolError
from ._bounded import describe
from ._jsonrpc import (
    ErrorResponse,
    JSONObject,
    JSONValue,
    Notification,
    Request,
    RequestId,
    error_message,
)
from ._negotiated import Negotiated

__all__ = [
    "COMPLETE",
    "SERVER_INFO",
    "CancelRequested",
    "ErrorReceived",
    "Event",
    "Exchange",
    "Initialized",
    "NotificationReceived",
    "ResponseReceived",
    "RootsChanged",
    "Send",
    "plain_complete",
]

#: the ``resultType`` of a final result (2026-07-28; the others ask for more input)
COMPLETE: Final = "complete"
#: where a 2026-07-28 result's ``_meta`` names the server that answered
SERVER_INFO: Final = "io.modelcontextprotocol/serverInfo"


def plain_complete(result: JSONObject, server_info: JSONObject) -> JSONObject:
    """``result``, with no ``resultType`` or ``_meta`` of its own, as a complete one."""
    return {**result, "resultType": COMPLETE, "_meta": {SERVER_INFO: server_info}}


@attrs.frozen
class Send:
    """A reply the machine produced itself; write it to the peer unchanged."""

    payload: JSONValue
    #: the request it answers; None for a batch's array or an unreadable id
    request_id: RequestId | None = None


if TYPE_CHECKING:
    # Only annotations name it: a Protocol class is costly to build at start.
    class InFlight(Protocol):
        """Where a session counts the peer's requests until they are answered."""

        def settle(self, request_id: RequestId, reply: JSONValue | None) -> JSONValue | None:
            """Count ``request_id`` answered by ``reply`` (None: abandoned); say what to write."""


class Exchange:
    """One request from the peer, from its arrival to its answer: the core's side of it.

    Made by the protocol core for every request it hands on (``ServerSession.receive``,
    and the 2026-07-28 envelope reader for a stateless request); the owner serves
    ``request`` and answers through ``respond``, ``respond_error`` or ``abandon``, which
    build the message to write. In a session they also count the request answered: None
    means nothing to write yet (a batch waits for its other answers) or at all.
    """

    __slots__ = ("_in_flight", "negotiated", "request")

    def __init__(
        self, request: Request, negotiated: Negotiated, in_flight: InFlight | None = None
    ) -> None:
        self.request = request
        self.negotiated = negotiated
        self._in_flight = in_flight

    def __repr__(self) -> str:
        return f"Exchange({self.request!r})"

    def respond(self, result: JSONObject) -> JSONValue | None:
        """Answer with ``result``; return what to write."""
        # _settle, unrolled: every answer comes here.
        request_id = self.request.id
        # result_message, inline.
        message = {"jsonrpc": "2.0", "id": request_id, "result": result}
        in_flight = self._in_flight
        if in_flight is None:
            return message
        self._in_flight = _ANSWERED
        return in_flight.settle(request_id, message)

    def respond_error(self, code: int, message: str, data: JSONValue = None) -> JSONValue | None:
        """Answer with an error; return what to write."""
        return self._settle(error_message(self.request.id, code, message, data))

    def abandon(self) -> JSONValue | None:
        """Leave a cancelled request unanswered; return what its batch may now owe."""
        return self._settle(None)

    def _settle(self, reply: JSONValue | None) -> JSONValue | None:
        in_flight = self._in_flight
        if in_flight is None:
            return reply
        # Answered once: a second answer is refused even if the peer reused the id.
        self._in_flight = _ANSWERED
        return in_flight.settle(self.request.id, reply)


class _Answered:
    def settle(self, request_id: RequestId, reply: JSONValue | None) -> JSONValue | None:
        raise LocalProtocolError(
            f"request {describe(request_id)} is not in flight: it was already answered"
        )


_ANSWERED: Final = _Answered()


@attrs.frozen
class NotificationReceived:
    """The peer sent a notification the machine does not handle itself."""

    notification: Notification


@attrs.frozen
class Initialized:
    """The client sent ``notifications/initialized``: the session is fully operating."""


@attrs.frozen
class CancelRequested:
    """The peer cancelled one of its in-flight requests."""

    request_id: RequestId
    reason: str | None


@attrs.frozen
class RootsChanged:
    """The client's roots changed."""


@attrs.frozen
class ResponseReceived:
    """The peer answered one of our requests."""

    request_id: RequestId
    result: JSONObject


@attrs.frozen
class ErrorReceived:
    """The peer answered one of our requests with an error."""

    request_id: RequestId
    error: ErrorResponse


Event = (
    Send
    | Exchange
    | NotificationReceived
    | Initialized
    | CancelRequested
    | RootsChanged
    | ResponseReceived
    | ErrorReceived
)
