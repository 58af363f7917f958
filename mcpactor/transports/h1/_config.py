# What the caller of the built-in HTTP/1.1 server tunes: limits, timeouts, TLS, and the
# two hooks through which it stays generic (the body of the errors it writes itself, and
# a gate that new requests wait on).

from __future__ import annotations

import ssl
from collections.abc import Callable
from typing import Protocol

import attrs

from ._protocol import Limits

__all__ = ["ErrorBody", "H1Config", "IntakeGate", "plain_error_body"]

#: (status, reason) -> (content type, body) of a response the server writes itself: a
#: refusal, a 500 for an app that failed, the 503 over ``max_connections``
ErrorBody = Callable[[int, str], tuple[bytes, bytes]]


def plain_error_body(status: int, message: str) -> tuple[bytes, bytes]:
    """The default error body: the reason, as plain text."""
    return b"text/plain; charset=utf-8", message.encode()


class IntakeGate(Protocol):
    """What a connection waits on before it takes in a new request."""

    @property
    def closed(self) -> bool:
        """Whether a new request should wait now."""
        ...

    async def wait_turn(self) -> None:
        """Wait until a new request may be taken in."""
        ...


@attrs.frozen(kw_only=True)
class H1Config:
    """Limits and timeouts of the built-in HTTP/1.1 server."""

    #: seconds a kept-alive connection may sit idle between requests
    keep_alive_timeout: float = 5.0
    #: seconds a request may take to arrive in full once its first byte has
    request_timeout: float = 30.0
    #: the largest request head (request line and headers), in bytes (431 above it)
    max_head_bytes: int = 64 * 1024
    #: the most header fields in one request (431 above it)
    max_headers: int = 100
    #: the largest request body, in bytes (413 above it)
    max_body_bytes: int = 4 * 1024 * 1024
    #: the largest WebSocket message, in bytes (the connection is closed with 1009)
    max_message_bytes: int = 4 * 1024 * 1024
    #: the listen backlog (the kernel caps it at somaxconn)
    backlog: int = 1024
    #: open connections at most, WebSockets included (503 and close above it)
    max_connections: int = 1000
    #: seconds a write may wait for a client that does not read (then it is dropped)
    write_timeout: float = 30.0
    #: serve HTTPS with this context (None: plain HTTP)
    ssl_context: ssl.SSLContext | None = None
    #: log the requests this server refuses itself to ``mcpactor.access``
    access_log: bool = False

    def limits(self) -> Limits:
        """The request limits the protocol enforces."""
        return Limits(
            max_head_bytes=self.max_head_bytes,
            max_headers=self.max_headers,
            max_body_bytes=self.max_body_bytes,
        )
