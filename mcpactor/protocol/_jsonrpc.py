# JSON-RPC 2.0 envelopes, classified by hand.
#
# Theory of operation: a transport decodes one JSON value per frame (see _framing.py)
# and hands it to ``classify``. A dict becomes exactly one of Request, Notification,
# Response or ErrorResponse, or raises RemoteProtocolError carrying -32600 and, when the
# value had a usable id, that id (so the error response can name it). A list is a batch;
# whether batches are allowed is the session's decision (it depends on the negotiated
# revision), so ``classify_batch`` only classifies the items.
#
# Classification is by keys, in the order a well-behaved peer most often sends them,
# because this runs for every message on the hot path. Every value quoted in an error
# goes through ``describe`` (bounded, never raises): it is the peer's, of any size.
#
# Params: MCP passes parameters by name only. An array (by-position params, valid
# JSON-RPC) or null where the object belongs is -32602, as is a ``_meta`` that is not an
# object or a ``progressToken`` that is neither a string nor an integer (the schema's
# RequestParams); a string, number or boolean is no JSON-RPC params at all: -32600.

from __future__ import annotations

from typing import Any, Final, TypeAlias

import attrs

from .._exceptions import INVALID_PARAMS, INVALID_REQUEST, ProtocolError, RemoteProtocolError
from ._bounded import describe

__all__ = [
    "ErrorResponse",
    "JSONObject",
    "JSONValue",
    "Message",
    "Notification",
    "Request",
    "RequestId",
    "Response",
    "classify",
    "error_response",
]

JSONValue: TypeAlias = Any
JSONObject: TypeAlias = dict[str, Any]
RequestId: TypeAlias = str | int

_VERSION: Final = "2.0"


@attrs.frozen(slots=True)
class Request:
    """A JSON-RPC request: a method call that expects a response with the same id."""

    id: RequestId
    method: str
    params: JSONObject | None = None

    def to_json(self) -> JSONObject:
        """Return the wire form of this request."""
        message: JSONObject = {"jsonrpc": _VERSION, "id": self.id, "method": self.method}
        if self.params is not None:
            message["params"] = self.params
        return message


@attrs.frozen(slots=True)
class Notification:
    """A JSON-RPC notification: a method call that gets no response."""

    method: str
    params: JSONObject | None = None

    def to_json(self) -> JSONObject:
        """Return the wire form of this notification."""
        message: JSONObject = {"jsonrpc": _VERSION, "method": self.method}
        if self.params is not None:
            message["params"] = self.params
        return message


@attrs.frozen(slots=True)
class Response:
    """A successful JSON-RPC response to the request with the same id."""

    id: RequestId
    result: JSONObject

    def to_json(self) -> JSONObject:
        """Return the wire form of this response."""
        return {"jsonrpc": _VERSION, "id": self.id, "result": self.result}


@attrs.frozen(slots=True)
class ErrorResponse:
    """A JSON-RPC error response; ``id`` is None only when the request's id was unreadable."""

    id: RequestId | None
    code: int
    message: str
    data: JSONValue = None

    def to_json(self) -> JSONObject:
        """Return the wire form of this error response."""
        error: JSONObject = {"code": self.code, "message": self.message}
        if self.data is not None:
            error["data"] = self.data
        if self.id is None:
            # The schema has no null id: an unreadable id is left out (2025-11-25).
            return {"jsonrpc": _VERSION, "error": error}
        return {"jsonrpc": _VERSION, "id": self.id, "error": error}


Message: TypeAlias = Request | Notification | Response | ErrorResponse


def result_message(request_id: RequestId, result: JSONObject) -> JSONObject:
    """The wire form of a response: ``Response(...).to_json()`` without the record."""
    return {"jsonrpc": _VERSION, "id": request_id, "result": result}


def error_message(
    request_id: RequestId | None, code: int, message: str, data: JSONValue = None
) -> JSONObject:
    """The wire form of an error response, as ``ErrorResponse(...).to_json()`` gives it."""
    error: JSONObject = {"code": code, "message": message}
    if data is not None:
        error["data"] = data
    if request_id is None:
        return {"jsonrpc": _VERSION, "error": error}
    return {"jsonrpc": _VERSION, "id": request_id, "error": error}


def error_message_for(exc: ProtocolError) -> JSONObject:
    """The error response owed for ``exc``, naming its request when one could be read."""
    return error_message(exc.request_id, exc.code, exc.message, exc.data)


def error_response(request_id: RequestId | None, exc: Any) -> ErrorResponse:
    """Build the error response for a ProtocolError or RequestError."""
    return ErrorResponse(request_id, exc.code, exc.message, exc.data)


def _invalid(message: str, request_id: RequestId | None, **data: Any) -> RemoteProtocolError:
    return RemoteProtocolError(
        message, code=INVALID_REQUEST, data=data or None, request_id=request_id
    )


def _invalid_params(message: str, request_id: RequestId | None) -> RemoteProtocolError:
    return RemoteProtocolError(message, code=INVALID_PARAMS, request_id=request_id)


def _check_params(params: Any, request_id: RequestId | None) -> None:
    # Params that are not an object.
    if params is None or type(params) is list:
        raise _invalid_params(f"'params' must be an object, got {_json_type(params)}", request_id)
    raise _invalid(f"'params' must be an object, got {type(params).__name__}", request_id)


def _check_meta(meta: Any, request_id: RequestId | None) -> None:
    if type(meta) is not dict:
        raise _invalid_params(f"'_meta' must be an object, got {_json_type(meta)}", request_id)
    if "progressToken" in meta:
        token = meta["progressToken"]
        if not _valid_id(token):
            raise _invalid_params(
                f"'progressToken' must be a string or an integer, got {describe(token)}",
                request_id,
            )


def _json_type(value: Any) -> str:
    if value is None:
        return "null"
    if type(value) is list:
        return "an array"
    return type(value).__name__


def _valid_id(value: Any) -> bool:
    # bool is an int subclass, and JSON true is no id; floats and null are not ids either.
    return (type(value) is int) or type(value) is str


def classify(value: JSONValue) -> Message:
    """Classify one decoded JSON value as a JSON-RPC message.

    Raises:
        RemoteProtocolError: -32600 naming what is wrong; its ``request_id`` attribute
            holds the message's id when one could be read (else None).
    """
    if type(value) is not dict:
        raise _invalid(f"expected a JSON-RPC message object, got {type(value).__name__}", None)
    has_id = "id" in value
    raw_id = value.get("id")
    request_id = raw_id if _valid_id(raw_id) else None
    if value.get("jsonrpc") != _VERSION:
        raise _invalid(
            f"expected 'jsonrpc': '2.0', got {describe(value.get('jsonrpc'))}", request_id
        )
    method = value.get("method")
    if method is not None:
        if type(method) is not str or not method:
            raise _invalid(
                f"'method' must be a non-empty string, got {describe(method)}", request_id
            )
        if "result" in value or "error" in value:
            raise _invalid("a request cannot carry 'result' or 'error'", request_id)
        if has_id and request_id is None:
            raise _invalid(
                f"a request id must be a string or an integer, got {describe(raw_id)}", None
            )
        params = value.get("params")
        if type(params) is dict:
            # The hot path: an object, most often without _meta, checked inline.
            meta = params.get("_meta", params)
            if meta is not params and (type(meta) is not dict or "progressToken" in meta):
                _check_meta(meta, request_id)
        elif params is not None or "params" in value:
            _check_params(params, request_id)
        if request_id is None:
            return Notification(method, params)
        return Request(request_id, method, params)
    if "result" in value:
        if "error" in value:
            raise _invalid("a response cannot carry both 'result' and 'error'", request_id)
        if request_id is None:
            raise _invalid(
                f"a response id must be a string or an integer, got {describe(raw_id)}", None
            )
        result = value["result"]
        if type(result) is not dict:
            raise _invalid(f"'result' must be an object, got {type(result).__name__}", request_id)
        return Response(request_id, result)
    if "error" in value:
        error = value["error"]
        if (
            type(error) is not dict
            or type(error.get("code")) is not int
            or type(error.get("message")) is not str
        ):
            raise _invalid(
                "'error' must be an object with an integer 'code' and a string 'message'",
                request_id,
            )
        if raw_id is not None and request_id is None:
            raise _invalid(
                f"a response id must be a string or an integer, got {describe(raw_id)}", None
            )
        return ErrorResponse(request_id, error["code"], error["message"], error.get("data"))
    raise _invalid("a message needs 'method', 'result' or 'error'", request_id)
