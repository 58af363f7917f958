# The events of a server session (_session.py): what ``ServerSession.receive`` returns.
#
# Each is a thing that happened (a request, a notification, a cancel, a response to one
# of our requests, …) or ``Send``, a reply the machine produced itself that the owner
# writes to the peer as it is.

from __future__ import annotations

import attrs

from ._jsonrpc import ErrorResponse, JSONObject, JSONValue, Notification, Request, RequestId
from ._negotiated import Negotiated

__all__ = [
    "CancelRequested",
    "ErrorReceived",
    "Event",
    "Initialized",
    "NotificationReceived",
    "RequestReceived",
    "ResponseReceived",
    "RootsChanged",
    "Send",
]


@attrs.frozen
class Send:
    """A reply the machine produced itself; write it to the peer unchanged."""

    payload: JSONValue
    #: the request it answers; None for a batch's array or an unreadable id
    request_id: RequestId | None = None


@attrs.frozen
class RequestReceived:
    """The peer asked for something; serve it and answer with ``respond``."""

    request: Request
    negotiated: Negotiated


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
    | RequestReceived
    | NotificationReceived
    | Initialized
    | CancelRequested
    | RootsChanged
    | ResponseReceived
    | ErrorReceived
)
