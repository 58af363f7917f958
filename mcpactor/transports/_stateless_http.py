# A POST of a stateless revision (2026-07-28) on the MCP path: one request, one response.
#
# _streamable.py routes a POST here when its ``MCP-Protocol-Version`` names a revision
# without sessions (or names none we know while the body carries an envelope, so that
# the answer is the revision's own error, not a session's). Everything about the request
# is in the POST: the envelope in ``params._meta`` (read once, refused with its HTTP
# status), the headers that mirror the body (``Mcp-Method``, ``Mcp-Name``, a tool's
# ``Mcp-Param-*``: 400 and -32020 when they differ), and then the request is served by
# the process's StatelessHost in this handler's own task, inside a cancel scope this
# task owns (the connection's tree): a watch on the connection cancels it when the
# client goes away, and closing the response stream is exactly that. Notifications the
# handler makes start an SSE response (events without ids: nothing is resumable); an
# answer with none before it goes out as one JSON document. No session id is read or
# sent.

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any, Final

import orjson
import trio

from .._exceptions import INTERNAL_ERROR, INVALID_REQUEST, METHOD_NOT_FOUND
from ..auth import INSUFFICIENT_SCOPE_CODE, InsufficientScope
from ..protocol import (
    HEADER_MISMATCH,
    MISSING_CLIENT_CAPABILITY,
    PROTOCOL_VERSION,
    UNSUPPORTED_PROTOCOL_VERSION,
    Batch,
    Body,
    Envelope,
    EnvelopeError,
    JSONObject,
    Notification,
    Request,
    describe,
    error_message_for,
    serialize,
)
from ..runtime import LISTEN, StatelessHost
from ..server import called_tool, check_param_headers, check_standard_headers
from . import _sse
from ._endpoint import Endpoint
from ._exchange import Exchange, error_body, reply, reply_error, send_body, start_sse
from ._security import accepts, counted_client

__all__ = ["serve_stateless_post"]

# The HTTP status of a JSON-RPC error answered before anything was streamed.
_STATUS: Final = {
    METHOD_NOT_FOUND: 404,
    HEADER_MISMATCH: 400,
    MISSING_CLIENT_CAPABILITY: 400,
    UNSUPPORTED_PROTOCOL_VERSION: 400,
}
_KEEPALIVE: Final = b": keep-alive\n\n"


async def serve_stateless_post(
    app: Endpoint,
    exchange: Exchange,
    principal: object,
    body: Body,
    cors: list[tuple[bytes, bytes]],
) -> None:
    """Serve one POST of a stateless revision (its body already classified); the client
    is held to its share of requests in flight; ``cors``: the answer's CORS headers."""
    kind = type(body)
    if kind is Notification:
        # No session hears it (on HTTP, closing a stream is the cancel); an extension's
        # handler may, in this task: a client sending many waits for each.
        await app.stateless.notified(body, _drop, principal)  # type: ignore[arg-type]
        await reply(exchange, 202, b"", cors, content_type=None)
        return
    if kind is not Request:
        what = "a batch" if kind is Batch else "a response"
        why = f"the body must be a single JSON-RPC request, not {what}"
        await reply_error(exchange, 400, INVALID_REQUEST, why)
        return
    request: Request = body  # type: ignore[assignment]
    host = app.stateless
    headers = exchange.headers
    try:
        envelope = _read_envelope(host, request, headers)
    except EnvelopeError as exc:
        await reply(exchange, exc.http_status, orjson.dumps(error_message_for(exc)), cors)
        return
    if app.resource_server is not None:
        refusal = _scope_refusal(app, principal, request)
        if refusal is not None:
            await app.refuse(exchange, headers, refusal, request.id)
            return
    stream = _streams(app, request, headers)
    if stream is None:
        await reply(exchange, 406, error_body(INVALID_REQUEST, _NO_EVENTS, request.id), cors)
        return
    client = exchange.client
    counted = counted_client(client[0] if client else None)
    shares = app.stateless_shares
    if counted is not None and not shares.take(counted):
        why = (
            f"this client has {shares.limit} requests in flight, the most one client may "
            "(max_sessions_per_client): wait for one to end"
        )
        await reply(exchange, 503, error_body(INTERNAL_ERROR, why, request.id), cors)
        return
    limit = app.options.max_body_bytes
    events = _Events(exchange, cors, limit) if stream else None
    # The client leaving cancels the request, and nothing more is sent for it. Served in
    # this task, unwatched: only a request still running a moment later gets a watch.
    scope = trio.CancelScope()
    armed = app.manager.late_watch.arm(exchange.disconnected, scope)
    try:
        answer = await host.serve(
            request,
            events.emit if events is not None else _drop,
            envelope=envelope,
            principal=principal,
            keepalive=events.keepalive if events is not None else None,
            scope=scope,
            arrived=exchange.arrived,
        )
    finally:
        armed.disarm()
        if counted is not None:
            shares.give(counted)
    if answer is None:
        return
    data = serialize(answer, limit) or b""
    if events is not None and events.started:
        await send_body(exchange, _sse.message_event(data), False)
        return
    # The JSON answer: one document, its HTTP status read from its error.
    error = answer.get("error")
    status, cors = _error_status(app, error, data, cors) if type(error) is dict else (200, cors)
    await reply(exchange, status, data, cors)


_NO_EVENTS: Final = (
    f"{LISTEN} answers with an SSE stream: the Accept header must list text/event-stream"
)


def _streams(app: Endpoint, request: Request, headers: Mapping[str, str]) -> bool | None:
    # Whether the answer is an SSE stream; None: it must be and the client takes none. A
    # listen request's answer is a stream whatever the response mode (the revision says
    # so), so a client that takes no events is told at once rather than held unanswered.
    takes_events = accepts(headers.get("accept"), json=False, event_stream=True)
    if request.method == LISTEN:
        return True if takes_events else None
    return takes_events and app.options.response_mode != "json"


class _Events:
    # The SSE answer: the notifications a handler makes before its answer, each an event
    # without an id (nothing is resumable); the response starts with the first of them.
    __slots__ = ("_cors", "_exchange", "_limit", "started")

    def __init__(self, exchange: Exchange, cors: list[tuple[bytes, bytes]], limit: int) -> None:
        self._exchange = exchange
        self._cors = cors
        self._limit = limit
        self.started = False

    async def emit(self, message: JSONObject) -> None:
        data = serialize(message, self._limit)
        if data is None:
            return
        if not self.started:
            await start_sse(self._exchange, self._cors)
            self.started = True
        await send_body(self._exchange, _sse.message_event(data))

    async def keepalive(self) -> None:
        if not self.started:
            await start_sse(self._exchange, self._cors)
            self.started = True
        await send_body(self._exchange, _KEEPALIVE)


async def _drop(message: JSONObject) -> None:
    # A client that takes one JSON document: what comes before it is dropped.
    pass


def _error_status(
    app: Endpoint, error: JSONObject, data: bytes, cors: list[tuple[bytes, bytes]]
) -> tuple[int, list[tuple[bytes, bytes]]]:
    # An error answered before anything was streamed: its status, and the headers with a
    # step-up challenge when a token lacked the scopes a call needs.
    code = error.get("code")
    if code == INSUFFICIENT_SCOPE_CODE:
        challenge = app.step_up(data)
        if challenge is not None:
            return 403, [*cors, *challenge]
    return _STATUS.get(code, 200), cors  # type: ignore[arg-type]


# The methods whose target may need scopes of its own, and the param that names it.
_NAMED: Final = {"tools/call": "name", "resources/read": "uri", "prompts/get": "name"}


def _scope_refusal(app: Endpoint, principal: object, request: Request) -> InsufficientScope | None:
    # The target Mcp-Name names: _read_envelope has found it equal to the body's (after
    # decoding a base64 value), so the body's is read.
    key = _NAMED.get(request.method)
    params = request.params
    if key is None or params is None:
        return None
    return app.scope_refusal(principal, request.method, params.get(key))


def _check_version_header(request: Request, headers: Mapping[str, str]) -> None:
    # Before the envelope is read: a header that differs from the body is -32020 whatever
    # the body's version is (an unknown one included).
    params = request.params
    meta = params.get("_meta") if params is not None else None
    version = meta.get(PROTOCOL_VERSION) if type(meta) is dict else None
    if version is None:
        return  # the envelope's own check names what is missing
    sent = headers.get("mcp-protocol-version")
    if sent is None or sent.strip() != version:
        raise EnvelopeError(
            f"Header mismatch: MCP-Protocol-Version header value {describe(sent)} does not "
            f"match body value {describe(version)}",
            code=HEADER_MISMATCH,
            request_id=request.id,
        )


class _AnyCase(Mapping[str, str]):
    # The request's headers (lowercase names) looked up by a name in any case, at once:
    # the header checks ask for "Mcp-Method", and would otherwise scan every header.
    __slots__ = ("_headers",)

    def __init__(self, headers: Mapping[str, str]) -> None:
        self._headers = headers

    def __getitem__(self, name: str) -> str:
        return self._headers[name.lower()]

    def get(self, name: str, default: Any = None) -> Any:
        value = self._headers.get(name.lower())
        # A field value's surrounding whitespace is not part of it (RFC 9110 §5.5).
        return default if value is None else value.strip(" \t")

    def __iter__(self) -> Iterator[str]:
        return iter(self._headers)

    def __len__(self) -> int:
        return len(self._headers)


def _read_envelope(host: StatelessHost, request: Request, headers: Mapping[str, str]) -> Envelope:
    # The request's envelope; the headers must say what the body says (-32020 on any
    # difference).
    _check_version_header(request, headers)
    envelope = host.envelope(request)
    headers = _AnyCase(headers)
    params = request.params
    try:
        check_standard_headers(request.method, params, headers)
        if request.method == "tools/call" and params is not None:
            entry = called_tool(host.server, params)
            declared = getattr(entry, "headers", ())
            if declared:
                arguments = params.get("arguments")
                check_param_headers(
                    declared, arguments if type(arguments) is dict else {}, headers
                )
    except EnvelopeError as exc:
        exc.request_id = request.id
        raise
    return envelope
