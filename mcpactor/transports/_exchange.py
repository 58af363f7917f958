# One HTTP request and its answer, as the MCP endpoints see them, whichever server runs
# the app: the built-in server's requests are exchanges themselves (``h1.Exchange``), and
# an ASGI server's are adapted (``_asgi.AsgiExchange``). The endpoints answer through it:
# a whole response (``respond``), or a streamed one (``begin``, then ``write``...).

from __future__ import annotations

from collections.abc import Iterable
from typing import Final, Protocol

import orjson

from ..protocol import RequestId, error_message
from ..runtime import METRICS
from . import _sse

__all__ = [
    "JSON",
    "ClientGone",
    "Exchange",
    "error_body",
    "reply",
    "reply_error",
    "send_body",
    "start_sse",
]

#: the content type of JSON bodies
JSON: Final = b"application/json"
_CLOSE: Final = ((b"connection", b"close"),)


class ClientGone(Exception):
    """The client went away before its request body arrived."""


class Exchange(Protocol):
    """One HTTP request, and the way to answer it."""

    #: the request's method, e.g. "POST"
    method: str
    #: the target's path, percent-decoded
    path: str
    #: the target's query, the bytes after "?"
    query_string: bytes
    #: "1.0", "1.1" or "2"
    http_version: str
    #: the header fields by lowercase name; repeated fields joined with ", "
    headers: dict[str, str]
    #: the client's (host, port), or None; behind trusted proxies, the one they name
    client: tuple[str, int] | None
    #: when the request arrived, on trio's clock (the console's latency starts there)
    arrived: float

    @property
    def raw_headers(self) -> Iterable[tuple[bytes, bytes]]:
        """The header fields as they came: (lowercase name, value)."""
        ...

    @property
    def root_path(self) -> str:
        """Where the app is mounted (ASGI's root path; "" when it is not)."""
        ...

    @property
    def status(self) -> int:
        """The response's status, once started (0 before)."""
        ...

    @property
    def sent(self) -> int:
        """The body bytes sent so far."""
        ...

    async def read_body(self, limit: int) -> bytes | None:
        """The whole request body; None if it exceeds ``limit`` bytes.

        Raises:
            ClientGone: the client left before the body arrived.
        """
        ...

    async def respond(
        self,
        status: int,
        body: bytes,
        headers: Iterable[tuple[bytes, bytes]] = (),
        content_type: bytes | None = JSON,
        *,
        batched: bool = False,
    ) -> None:
        """Send a whole response (``content_type`` goes with a body that is not empty).

        ``batched``: the answer reached this task from another one, which woke it in the
        same scheduler batch as the other answers of that batch: the server need not
        hold the write back to gather them.
        """
        ...

    async def begin(self, status: int, headers: Iterable[tuple[bytes, bytes]]) -> None:
        """Start a streamed response."""
        ...

    async def write(self, body: bytes, more: bool = True) -> None:
        """Send one part of a streamed response (``more=False``: the last)."""
        ...

    async def disconnected(self) -> None:
        """Return when the client has gone (once the body has been read)."""
        ...


def error_body(code: int, message: str, request_id: RequestId | None = None) -> bytes:
    """A JSON-RPC error response for an HTTP error body (no id unless one was read)."""
    return orjson.dumps(error_message(request_id, code, message))


async def reply(
    exchange: Exchange,
    status: int,
    body: bytes,
    headers: Iterable[tuple[bytes, bytes]] = (),
    *,
    content_type: bytes | None = JSON,
) -> None:
    """Send a whole response, counted once written."""
    await exchange.respond(status, body, headers, content_type)
    METRICS.sent("http", len(body))


async def reply_error(
    exchange: Exchange, status: int, code: int, message: str, *, close: bool = False
) -> None:
    """Send a complete response whose body is a JSON-RPC error without id.

    With ``close``, the response asks the HTTP server to close the connection after it
    (a request whose framing or Host cannot be trusted must not be followed by another).
    """
    await reply(exchange, status, error_body(code, message), _CLOSE if close else ())


async def start_sse(exchange: Exchange, headers: Iterable[tuple[bytes, bytes]]) -> None:
    """Start a 200 text/event-stream response."""
    await exchange.begin(
        200,
        [
            (b"content-type", _sse.CONTENT_TYPE),
            (b"cache-control", b"no-cache"),
            (b"x-accel-buffering", b"no"),
            *headers,
        ],
    )


async def send_body(exchange: Exchange, body: bytes, more: bool = True) -> None:
    """Send one part of a streamed body, counted once written."""
    await exchange.write(body, more)
    METRICS.sent("http", len(body))
