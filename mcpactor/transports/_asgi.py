# ASGI plumbing shared by the HTTP endpoints: headers in, responses and SSE out.

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any, Final

import orjson
import trio

from .._exceptions import INTERNAL_ERROR, INVALID_REQUEST
from ..protocol import RequestId, error_message
from ..runtime import METRICS
from . import _sse

__all__ = [
    "AsgiApp",
    "ClientGone",
    "Headers",
    "Receive",
    "Scope",
    "Send",
    "cancel_on_disconnect",
    "client_address",
    "error_body",
    "http_error_body",
    "lifespan",
    "read_body",
    "reply",
    "reply_error",
    "send_body",
    "start_sse",
]

Scope = dict[str, Any]
Receive = Callable[[], Awaitable[dict[str, Any]]]
Send = Callable[[dict[str, Any]], Awaitable[None]]
#: an ASGI 3 application
AsgiApp = Callable[[Scope, Receive, Send], Awaitable[None]]

_JSON: Final = b"application/json"
_CLOSE: Final = ((b"connection", b"close"),)


class ClientGone(Exception):
    """The client went away before its request body arrived."""


class Headers(dict[str, str]):
    """Request headers by lowercase name; repeated headers are joined with ", "."""

    __slots__ = ()

    @classmethod
    def of(cls, scope: Scope) -> Headers:
        """Read the headers of an ASGI scope."""
        headers = cls()
        for raw_name, raw_value in scope["headers"]:
            name = raw_name.decode("latin-1").lower()
            value = raw_value.decode("latin-1")
            if name in headers:
                headers[name] = headers[name] + ", " + value
            else:
                headers[name] = value
        return headers


def client_address(scope: Scope) -> str | None:
    """The client's address (no port), what ``max_sessions_per_client`` counts by."""
    client = scope.get("client")
    return str(client[0]) if client else None


def error_body(code: int, message: str, request_id: RequestId | None = None) -> bytes:
    """A JSON-RPC error response for an HTTP error body (no id unless one was read)."""
    return orjson.dumps(error_message(request_id, code, message))


def http_error_body(status: int, message: str) -> tuple[bytes, bytes]:
    """(content type, body) of an HTTP error the server refuses a request with, as JSON-RPC."""
    return _JSON, error_body(INVALID_REQUEST if status < 500 else INTERNAL_ERROR, message)


async def start_sse(send: Send, headers: list[tuple[bytes, bytes]]) -> None:
    """Start a 200 text/event-stream response."""
    await send(
        {
            "type": "http.response.start",
            "status": 200,
            "headers": [
                (b"content-type", _sse.CONTENT_TYPE),
                (b"cache-control", b"no-cache"),
                (b"x-accel-buffering", b"no"),
                *headers,
            ],
        }
    )


async def send_body(send: Send, body: bytes) -> None:
    """Send one chunk of a streamed body."""
    METRICS.sent("http", len(body))
    await send({"type": "http.response.body", "body": body, "more_body": True})


async def cancel_on_disconnect(receive: Receive, scope: trio.CancelScope) -> None:
    """Cancel ``scope`` when the client goes away (the body must be read already)."""
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            scope.cancel()
            return


async def read_body(receive: Receive, limit: int, headers: Mapping[str, str]) -> bytes | None:
    """Read the whole request body; None if it exceeds ``limit`` bytes."""
    declared = headers.get("content-length")
    if declared is not None and declared.strip().isdigit() and int(declared) > limit:
        return None
    chunks = []
    size = 0
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            raise ClientGone
        chunk = message.get("body", b"")
        size += len(chunk)
        if size > limit:
            return None
        chunks.append(chunk)
        if not message.get("more_body", False):
            METRICS.received("http", size)
            return b"".join(chunks)


async def reply(
    send: Send,
    status: int,
    body: bytes,
    headers: Sequence[tuple[bytes, bytes]] = (),
    *,
    content_type: bytes | None = _JSON,
) -> None:
    """Send a complete response."""
    # A 204 carries no Content-Length at all (RFC 9110 §8.6).
    response_headers = (
        [*headers] if status == 204 else [(b"content-length", b"%d" % len(body)), *headers]
    )
    if content_type is not None and body:
        response_headers.append((b"content-type", content_type))
    await send({"type": "http.response.start", "status": status, "headers": response_headers})
    METRICS.sent("http", len(body))
    await send({"type": "http.response.body", "body": body})


async def reply_error(
    send: Send, status: int, code: int, message: str, *, close: bool = False
) -> None:
    """Send a complete response whose body is a JSON-RPC error without id.

    With ``close``, the response asks the HTTP server to close the connection after it
    (a request whose framing or Host cannot be trusted must not be followed by another).
    """
    await reply(send, status, error_body(code, message), _CLOSE if close else ())


async def lifespan(receive: Receive, send: Send) -> None:
    """Acknowledge the ASGI lifespan protocol."""
    # Sessions are owned by the SessionManager, not by the ASGI lifespan.
    while True:
        message = await receive()
        if message["type"] == "lifespan.startup":
            await send({"type": "lifespan.startup.complete"})
        elif message["type"] == "lifespan.shutdown":
            await send({"type": "lifespan.shutdown.complete"})
            return
