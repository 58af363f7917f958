# JSON-RPC 2.0 messages: their JSON text, their classification, and the answers built.
#
# Theory of operation: a transport decodes one JSON value per frame (``decode``, below)
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
#
# Bodies: one body from the peer (a line, a POST, a WebSocket message) is classified
# once.
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
#
# The JSON text of a message: ``decode`` turns one frame into a JSON value or a
# RemoteProtocolError: -32700 when it is not JSON (orjson parses at most 1024 levels),
# -32600 when it nests deeper than ``MAX_DEPTH`` (128 levels, see _bounded.py); a
# response nested too deep becomes an error response for its id, so whoever waits for
# it hears why instead of waiting forever. ``encode``/``serialize`` never raise: a
# response whose result cannot be written as JSON (nested 255 levels or more, a key
# that is not a string, an int past 64 bits, a non-JSON object) goes out as a -32603
# error response for its id instead. Given a ``limit`` (the transport's largest
# message, the one its peer is held to), a response whose JSON is larger goes out the
# same way, with ``data: {"limit": …}`` like every refusal over a limit; the check is
# one comparison of the length just written.

from __future__ import annotations

from typing import Any, Final, TypeAlias

import attrs
import orjson

from .._exceptions import (
    INTERNAL_ERROR,
    INVALID_PARAMS,
    INVALID_REQUEST,
    PARSE_ERROR,
    ProtocolError,
    RemoteProtocolError,
)
from ._bounded import MAX_DEPTH, clip, describe, exceeds_depth, sendable
from ._revisions import Revision

__all__ = [
    "Batch",
    "Body",
    "ErrorResponse",
    "JSONObject",
    "JSONValue",
    "Message",
    "Notification",
    "Request",
    "RequestId",
    "Response",
    "answered_ids",
    "batch_refusal",
    "classify",
    "classify_body",
    "decode",
    "encode",
    "error_response",
    "owed_ids",
    "serialize",
    "unowed_errors",
]

# The shortest JSON text nesting objects alone MAX_DEPTH + 1 levels deep: the outermost
# object's two braces and five bytes for each level below it.
_SHORTEST_TOO_DEEP_OBJECTS: Final = 2 + 5 * MAX_DEPTH

JSONValue: TypeAlias = Any
JSONObject: TypeAlias = dict[str, Any]
RequestId: TypeAlias = str | int

_VERSION: Final = "2.0"
_NEWLINE: Final = orjson.OPT_APPEND_NEWLINE


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
    # bool is an int subclass, and JSON true is no id; floats and null are not ids either.
    request_id = raw_id if type(raw_id) is int or type(raw_id) is str else None
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


def decode(frame: bytes | bytearray | memoryview | str) -> JSONValue:
    """Decode one frame into a JSON value of at most ``MAX_DEPTH`` levels.

    Raises:
        RemoteProtocolError: -32700 if the frame is not UTF-8 JSON; -32600 if it nests
            deeper than ``MAX_DEPTH`` (naming the request's id when it has one).
    """
    try:
        value = orjson.loads(frame)
    except orjson.JSONDecodeError as exc:
        raise RemoteProtocolError(
            f"invalid JSON: {exc}", code=PARSE_ERROR, data={"position": exc.pos}
        ) from None
    # Every level takes two bytes, and one "[" or "{" at least: most frames are ruled
    # out without looking at the value.
    size = len(frame)
    if size > 2 * MAX_DEPTH:
        if type(frame) is bytes and frame.find(b"[") < 0:
            # No arrays (most frames, every stateless request's envelope among them):
            # a level below the first is an object that is a member's value, five bytes
            # at least ({"":} around what it holds), so a frame too short for that is
            # ruled out without counting its braces.
            if size < _SHORTEST_TOO_DEEP_OBJECTS:
                return value
            openers = frame.count(b"{")
        else:
            openers = _openers(frame)
        if openers > MAX_DEPTH and exceeds_depth(value, MAX_DEPTH):
            return _too_deep(value)
    return value


def _openers(frame: bytes | bytearray | memoryview | str) -> int:
    if isinstance(frame, str):
        return frame.count("[") + frame.count("{")
    data = frame if not isinstance(frame, memoryview) else frame.tobytes()
    # ``find`` looks for a byte with memchr, much faster than ``count`` walks the frame:
    # most messages have no array at all, and then one count is enough. (Not ``in``: on
    # bytes it first tries the operand as an integer, raising and clearing a TypeError.)
    if data.find(b"[") < 0:
        return data.count(b"{")
    return data.count(b"[") + data.count(b"{")


def _too_deep(value: JSONValue) -> JSONValue:
    why = f"the message nests deeper than {MAX_DEPTH} levels"
    if type(value) is dict:
        raw_id = value.get("id")
        request_id = raw_id if type(raw_id) is int or type(raw_id) is str else None
        if (
            request_id is not None
            and "method" not in value
            and ("result" in value or "error" in value)
        ):
            # A response (to a request of ours): whoever waits for it gets this instead.
            return {
                "jsonrpc": "2.0",
                "id": request_id,
                "error": {"code": INVALID_REQUEST, "message": f"invalid response: {why}"},
            }
        raise RemoteProtocolError(
            why, code=INVALID_REQUEST, data={"maxDepth": MAX_DEPTH}, request_id=request_id
        )
    raise RemoteProtocolError(why, code=INVALID_REQUEST, data={"maxDepth": MAX_DEPTH})


def serialize(value: JSONValue, limit: int | None = None) -> bytes | None:
    """Return the JSON of one outgoing message or batch; never raises.

    A response whose content cannot be written as JSON, or whose JSON is longer than
    ``limit`` bytes, becomes a -32603 error response for its id; a request or
    notification that cannot be written, or is too long, is None (not sent).
    """
    try:
        data = orjson.dumps(value)
    except TypeError as exc:  # orjson.JSONEncodeError
        if type(value) is list:
            return _batch(value, limit)
        why = f"could not be written as JSON: {exc}"
        return _unwritable(value, f"the response {why}", f"its data {why}")
    if limit is not None and len(data) > limit:
        if type(value) is list:
            return _batch(value, limit)
        why = f"is {len(data)} bytes, over the {limit}-byte message limit"
        return _unwritable(value, f"the response {why}", f"the error response {why}", limit)
    return data


def _batch(items: list[JSONValue], limit: int | None) -> bytes:
    # Each reply of a batch on its own: one that cannot go out does not take the others.
    written = [serialize(item, limit) for item in items]
    return b"[" + b",".join(item for item in written if item is not None) + b"]"


def _unwritable(
    value: JSONValue, why: str, why_of_error: str, limit: int | None = None
) -> bytes | None:
    # The error response sent instead of ``value``: -32603 saying ``why``, or the error's
    # own code and message with ``why_of_error``.
    if type(value) is not dict or "method" in value:
        return None
    if "result" not in value and "error" not in value:
        return None
    original = value.get("error")
    if (
        type(original) is dict
        and type(original.get("code")) is int
        and type(original.get("message")) is str
    ):
        # An error that cannot be sent keeps its code and says what was lost.
        message = f"{sendable(clip(original['message']))} ({why_of_error})"
        error: dict[str, JSONValue] = {"code": original["code"], "message": message}
    else:
        error = {"code": INTERNAL_ERROR, "message": why}
    if limit is not None:
        error["data"] = {"limit": limit}
    reply: dict[str, JSONValue] = {"jsonrpc": "2.0", "error": error}
    raw_id = value.get("id")
    if type(raw_id) is int or type(raw_id) is str:
        reply["id"] = raw_id
    try:
        data = orjson.dumps(reply)
    except TypeError:  # an int id past 64 bits
        del reply["id"]
        data = orjson.dumps(reply)
    if limit is not None and len(data) > limit:
        # Even this is too long (an id of more than the limit): nothing can be sent.
        return None
    return data


def encode(value: JSONValue, limit: int | None = None) -> bytes:
    """Encode one outgoing message as a newline-terminated frame; never raises.

    What ``serialize`` cannot send at all is b"" (nothing to write); ``limit`` is as
    there (the newline is not counted, as a frame read is held to its limit without it).
    """
    try:
        # The common case in one call: written with its newline, and within the limit.
        data = orjson.dumps(value, option=_NEWLINE)
    except TypeError:  # orjson.JSONEncodeError: serialize says what goes instead
        pass
    else:
        if limit is None or len(data) <= limit + 1:
            return data
    written = serialize(value, limit)
    return b"" if written is None else written + b"\n"
