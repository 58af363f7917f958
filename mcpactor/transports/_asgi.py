# ASGI: an ASGI server's requests as exchanges (``AsgiExchange``), and the lifespan.

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable
from typing import Any

import trio

from .._exceptions import INTERNAL_ERROR, INVALID_REQUEST
from ._exchange import JSON, ClientGone, error_body

__all__ = [
    "AsgiApp",
    "AsgiExchange",
    "Headers",
    "Receive",
    "Scope",
    "Send",
    "client_address",
    "http_error_body",
    "lifespan",
]

Scope = dict[str, Any]
Receive = Callable[[], Awaitable[dict[str, Any]]]
Send = Callable[[dict[str, Any]], Awaitable[None]]
#: an ASGI 3 application
AsgiApp = Callable[[Scope, Receive, Send], Awaitable[None]]


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


class AsgiExchange:
    """One ASGI HTTP request as an ``Exchange``: the scope read, ``receive`` and ``send``."""

    __slots__ = (
        "_receive",
        "_send",
        "arrived",
        "client",
        "headers",
        "http_version",
        "method",
        "path",
        "query_string",
        "raw_headers",
        "root_path",
        "sent",
        "status",
    )

    def __init__(self, scope: Scope, receive: Receive, send: Send) -> None:
        self._receive = receive
        self._send = send
        self.arrived = trio.current_time()
        # (A WebSocket handshake's scope has no method: its denial answers a GET.)
        self.method: str = scope.get("method", "GET")
        self.path: str = scope["path"]
        self.query_string: bytes = scope.get("query_string", b"")
        self.http_version: str = scope.get("http_version", "1.1")
        self.raw_headers: Iterable[tuple[bytes, bytes]] = scope.get("headers", ())
        self.headers: dict[str, str] = Headers.of(scope)
        client = scope.get("client")
        self.client: tuple[str, int] | None = (str(client[0]), client[1]) if client else None
        self.root_path: str = scope.get("root_path", "")
        self.status = 0
        self.sent = 0

    async def read_body(self, limit: int) -> bytes | None:
        """The whole request body; None if it exceeds ``limit`` bytes."""
        declared = self.headers.get("content-length")
        if declared is not None and declared.strip().isdigit() and int(declared) > limit:
            return None
        chunks = []
        size = 0
        while True:
            message = await self._receive()
            if message["type"] == "http.disconnect":
                raise ClientGone
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > limit:
                return None
            chunks.append(chunk)
            if not message.get("more_body", False):
                return b"".join(chunks)

    async def respond(
        self,
        status: int,
        body: bytes,
        headers: Iterable[tuple[bytes, bytes]] = (),
        content_type: bytes | None = JSON,
        *,
        batched: bool = False,
    ) -> None:
        """Send a whole response (the ASGI server decides when it is written)."""
        # A 204 carries no Content-Length at all (RFC 9110 §8.6).
        response_headers = (
            [*headers] if status == 204 else [(b"content-length", b"%d" % len(body)), *headers]
        )
        if content_type is not None and body:
            response_headers.append((b"content-type", content_type))
        await self.begin(status, response_headers)
        await self.write(body, False)

    async def begin(self, status: int, headers: Iterable[tuple[bytes, bytes]]) -> None:
        """Start a streamed response."""
        self.status = status
        await self._send(
            {"type": "http.response.start", "status": status, "headers": list(headers)}
        )

    async def write(self, body: bytes, more: bool = True) -> None:
        """Send one part of the response's body."""
        self.sent += len(body)
        await self._send({"type": "http.response.body", "body": body, "more_body": more})

    async def disconnected(self) -> None:
        """Return when the client has gone (the body must be read already)."""
        while (await self._receive())["type"] != "http.disconnect":
            pass


def client_address(scope: Scope) -> str | None:
    """The client's address (no port), what ``max_sessions_per_client`` counts by."""
    client = scope.get("client")
    return str(client[0]) if client else None


def http_error_body(status: int, message: str) -> tuple[bytes, bytes]:
    """(content type, body) of an HTTP error the server refuses a request with, as JSON-RPC."""
    return JSON, error_body(INVALID_REQUEST if status < 500 else INTERNAL_ERROR, message)


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
