# What the Streamable HTTP client makes of a message before it POSTs it, and of an HTTP
# status that refuses one.
#
# A message (or a batch) is read once, here, for what the transport must do about it:
# which ids will be answered on the POST's response (requests, malformed or not: the
# server answers them by id), which of them open the session, which requests the
# session gave up, and whether it says ``notifications/initialized`` (the GET stream may
# open). A refused POST fails the requests it carried with a JSON-RPC error that names
# the status and what the server said. This changes with the transport's rules, never
# with how the bytes travel.

from __future__ import annotations

import contextlib
from typing import TypeGuard

import attrs

from .._exceptions import INTERNAL_ERROR, RemoteProtocolError
from ..protocol import ErrorResponse, JSONObject, JSONValue, RequestId, clip, decode, has_envelope

__all__ = ["Outgoing", "Refused", "failure_replies", "is_id", "read_outgoing", "refusal"]


@attrs.frozen
class Outgoing:
    """What one message the session writes asks of the transport."""

    #: ids the POST's response will answer, in the order they were written
    request_ids: list[RequestId]
    #: those of them that are ``initialize`` requests
    initializing: list[RequestId]
    #: ids named by ``notifications/cancelled`` (any JSON value: not checked here)
    cancelled: list[JSONValue]
    #: whether it holds ``notifications/initialized``
    initialized: bool
    #: whether its requests carry a stateless envelope (each is a POST of its own)
    stateless: bool = False
    #: ids of its ``tools/list`` requests (their answers name mirrored parameters)
    listing_tools: list[RequestId] = attrs.field(factory=list)


def read_outgoing(message: JSONValue) -> Outgoing:
    """Read what a message (or a batch) the session writes needs of the transport."""
    items = message if type(message) is list else [message]
    outgoing = Outgoing([], [], [], False)
    initialized = False
    stateless = False
    for item in items:
        if type(item) is not dict:
            continue
        method = item.get("method")
        request_id = item.get("id")
        if is_id(request_id) and "result" not in item and "error" not in item:
            # A request, even a malformed one: the server answers it by its id.
            outgoing.request_ids.append(request_id)
            if method == "initialize":
                outgoing.initializing.append(request_id)
            elif method == "tools/list":
                outgoing.listing_tools.append(request_id)
            params = item.get("params")
            if type(params) is dict and has_envelope(params):
                stateless = True
        elif method == "notifications/cancelled":
            params = item.get("params")
            if type(params) is dict:
                outgoing.cancelled.append(params.get("requestId"))
        elif method == "notifications/initialized":
            initialized = True
    return attrs.evolve(outgoing, initialized=initialized, stateless=stateless)


@attrs.frozen
class Refused:
    """Why a POST's requests cannot be answered: an HTTP status (0: none came), and the
    JSON-RPC error to fail them with."""

    status: int
    code: int
    message: str


def refusal(url: object, status: int, body: bytes) -> tuple[Refused, JSONObject | None]:
    """What an error status says, in JSON-RPC terms; and the body's own error response.

    The error response (when the body is one) is returned as it is, for the caller to
    deliver if it names one of its requests.
    """
    code, message = INTERNAL_ERROR, f"{url} answered HTTP {status}"
    answer: JSONObject | None = None
    with contextlib.suppress(RemoteProtocolError):
        value = decode(body)
        error = value.get("error") if type(value) is dict else None
        if type(error) is dict:
            answer = value
            if type(error.get("code")) is int:
                code = error["code"]
            if isinstance(error.get("message"), str):
                message = f"{message}: {clip(error['message'])}"
    return Refused(status, code, message), answer


def failure_replies(url: object, pending: set[RequestId], failure: Refused) -> list[JSONObject]:
    """The error responses that fail ``pending`` requests, in a stable order."""
    data: JSONObject = {"url": str(url)}
    if failure.status:
        data["status"] = failure.status
    return [
        ErrorResponse(request_id, failure.code, failure.message, data).to_json()
        for request_id in sorted(pending, key=str)
    ]


def is_id(value: object) -> TypeGuard[RequestId]:
    """Whether ``value`` is a JSON-RPC id (a string or an integer, not a bool)."""
    return type(value) is str or type(value) is int
