# One body from the peer (a line, a POST, a WebSocket message), classified once.
#
# A transport that must know what a body holds before a session sees it (HTTP: does it
# carry requests, so that a stream must wait for their answers? is it an initialize?)
# classifies it with ``classify_body`` and hands the result on as it is; the session
# core takes a classified body unchanged (``classify_body`` returns one as it is), so no
# message is classified twice. A transport that needs nothing of the body (stdio) hands
# the decoded JSON on and the core classifies it.
#
# Batch legality is decided in ``batch_refusal`` alone: by the core, and by the HTTP
# transport, which must refuse a batch before any session has it (a refusal without an
# id has no request stream to travel on).

from __future__ import annotations

from typing import Final, TypeAlias

import attrs

from .._exceptions import INVALID_REQUEST, RemoteProtocolError
from ._jsonrpc import (
    ErrorResponse,
    JSONValue,
    Message,
    Notification,
    Request,
    RequestId,
    Response,
    classify,
)
from ._revisions import Revision

__all__ = [
    "Batch",
    "Body",
    "answered_ids",
    "batch_refusal",
    "classify_body",
    "owed_ids",
    "unowed_errors",
]


@attrs.frozen(slots=True)
class Batch:
    """A JSON-RPC batch (2025-03-26 only), each item classified."""

    #: the items in order: a message, or the error a malformed item is answered with
    items: tuple[Message | RemoteProtocolError, ...]
    #: ids of the items that are owed an answer: requests, and malformed items whose id
    #: could be read
    request_ids: tuple[RequestId, ...]
    #: an item asked to initialize (refused: its item is the error)
    initialize: bool


#: what ``classify_body`` returns: one message, a batch, or the error to answer with
Body: TypeAlias = Message | Batch | RemoteProtocolError

_CLASSIFIED: Final = (Request, Notification, Response, ErrorResponse, Batch, RemoteProtocolError)


def classify_body(value: JSONValue | Body) -> Body:
    """Classify one decoded body; a body classified already is returned as it is."""
    kind = type(value)
    if kind is dict:
        try:
            return classify(value)
        except RemoteProtocolError as exc:
            return exc
    if kind is list:
        assert isinstance(value, list)
        return _classify_batch(value)
    if isinstance(value, _CLASSIFIED):
        return value
    try:
        return classify(value)
    except RemoteProtocolError as exc:
        return exc


def _classify_batch(values: list[JSONValue]) -> Batch:
    items: list[Message | RemoteProtocolError] = []
    ids: list[RequestId] = []
    initialize = False
    for value in values:
        item: Message | RemoteProtocolError
        if type(value) is dict and value.get("method") == "initialize":
            # Refused whatever else is wrong with it: a batch cannot open a session.
            raw_id = value.get("id")
            item = RemoteProtocolError(
                "initialize must not be part of a batch",
                code=INVALID_REQUEST,
                request_id=raw_id if type(raw_id) is int or type(raw_id) is str else None,
            )
            initialize = True
        else:
            try:
                item = classify(value)
            except RemoteProtocolError as exc:
                item = exc
        if type(item) is Request:
            ids.append(item.id)
        elif type(item) is RemoteProtocolError and item.request_id is not None:
            ids.append(item.request_id)
        items.append(item)
    return Batch(tuple(items), tuple(ids), initialize)


def owed_ids(body: Body) -> tuple[RequestId, ...]:
    """Return the ids of the requests in ``body`` that are owed an answer."""
    if type(body) is Request:
        return (body.id,)
    if type(body) is Batch:
        return body.request_ids
    return ()


def batch_refusal(batch: Batch, revision: Revision | None) -> str | None:
    """Return why ``batch`` may not be served at ``revision`` (None: not negotiated yet).

    None when it may.
    """
    if revision is None:
        return "batches are not allowed before initialize"
    if not revision.batching:
        return f"revision {revision.version} does not allow JSON-RPC batches"
    if not batch.items:
        return "a batch must not be empty"
    return None


def answered_ids(payload: JSONValue) -> list[RequestId]:
    """Return the ids a response, or a batch of responses, answers."""
    items = payload if type(payload) is list else (payload,)
    ids = []
    for item in items:
        if type(item) is dict:
            request_id = item.get("id")
            if type(request_id) is str or type(request_id) is int:
                ids.append(request_id)
    return ids


def unowed_errors(body: Body) -> tuple[Body | None, tuple[RemoteProtocolError, ...]]:
    """Split a batch that owes no answer by id into its well-formed items and the errors
    of its malformed ones.

    Each malformed item is owed its error (JSON-RPC 2.0 §6), yet none names a request
    for the error to go with: a transport that answers a body owing nothing with no
    response (HTTP's 202) answers with these errors instead, and hands the rest (None:
    nothing is left) to the session. Any other body comes back as it is, with no errors.
    """
    if type(body) is not Batch or body.request_ids:
        return body, ()
    errors = tuple(item for item in body.items if type(item) is RemoteProtocolError)
    if not errors:
        return body, ()
    rest = tuple(item for item in body.items if type(item) is not RemoteProtocolError)
    return (Batch(rest, (), False) if rest else None), errors
