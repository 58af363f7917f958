# What a client session's core says happened: the events ``ClientSessionCore.receive``
# returns (see _client_session.py). Those the server side shares (``Send``,
# ``NotificationReceived``, ``CancelRequested``, ``ResponseReceived``, ``ErrorReceived``)
# come from _session.py.

from __future__ import annotations

import attrs

from .._exceptions import RemoteProtocolError
from ._jsonrpc import (
    ErrorResponse,
    JSONObject,
    JSONValue,
    Notification,
    Request,
    RequestId,
    Response,
)
from ._revisions import Revision
from ._session_events import (
    CancelRequested,
    ErrorReceived,
    NotificationReceived,
    ResponseReceived,
    Send,
)

__all__ = [
    "ClientEvent",
    "DiscoverRefused",
    "Discovered",
    "InitializeRefused",
    "MalformedReceived",
    "ProgressReceived",
    "ServerRequestReceived",
    "SessionInitialized",
    "SubscriptionAcknowledged",
    "SubscriptionCancelled",
    "SubscriptionNotification",
    "UnattributedError",
    "UnexpectedResponse",
]


@attrs.frozen
class ServerRequestReceived:
    """The server asked the client something; answer with ``respond``/``respond_error``."""

    request: Request


@attrs.frozen
class ProgressReceived:
    """A progress notification for one of our pending requests, by its progress token."""

    request_id: RequestId
    params: JSONObject


@attrs.frozen
class SessionInitialized:
    """The server answered ``initialize`` with a revision this client speaks."""

    request_id: RequestId
    result: JSONObject
    revision: Revision


@attrs.frozen
class InitializeRefused:
    """The server answered ``initialize`` with a revision this client cannot speak."""

    request_id: RequestId
    error: RemoteProtocolError


@attrs.frozen
class Discovered:
    """The server answered ``server/discover`` listing a stateless revision we speak."""

    request_id: RequestId
    result: JSONObject
    revision: Revision


@attrs.frozen
class DiscoverRefused:
    """The server answered ``server/discover`` without a stateless revision we speak."""

    request_id: RequestId
    error: RemoteProtocolError


@attrs.frozen
class SubscriptionAcknowledged:
    """A listen stream is open; ``notifications`` is the filter the server honours."""

    subscription_id: RequestId
    notifications: JSONObject


@attrs.frozen
class SubscriptionNotification:
    """A notification on an acknowledged listen stream."""

    subscription_id: RequestId
    notification: Notification


@attrs.frozen
class SubscriptionCancelled:
    """The server ended a listen stream with ``notifications/cancelled`` (stdio)."""

    subscription_id: RequestId
    reason: str | None


@attrs.frozen
class UnexpectedResponse:
    """A response to an id that is not pending: never sent, answered, or given up."""

    response: Response | ErrorResponse


@attrs.frozen
class UnattributedError:
    """An error response without an id: the server could not read one of our messages."""

    error: ErrorResponse


@attrs.frozen
class MalformedReceived:
    """A value from the server that is no JSON-RPC message."""

    error: RemoteProtocolError
    value: JSONValue


ClientEvent = (
    Send
    | ServerRequestReceived
    | NotificationReceived
    | ProgressReceived
    | CancelRequested
    | ResponseReceived
    | ErrorReceived
    | SessionInitialized
    | InitializeRefused
    | Discovered
    | DiscoverRefused
    | SubscriptionAcknowledged
    | SubscriptionNotification
    | SubscriptionCancelled
    | UnexpectedResponse
    | UnattributedError
    | MalformedReceived
)
