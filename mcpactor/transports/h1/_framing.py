# The framing of HTTP/1.1 responses, sans-io: a response's parts in, the bytes to write
# out.
#
# The head is built in one place, when the first body part comes: a complete response
# (the common case) is one bytes object, head and body, for one write. Framing is
# Content-Length when the app gave one or the body is complete, otherwise chunked
# (HTTP/1.1), or the end of the connection marks the end (HTTP/1.0). The Date header is
# the caller's (no clock here). A request (_protocol.py) is its own response's framing.

from __future__ import annotations

from collections.abc import Iterable
from http import HTTPStatus

__all__ = ["Framing", "Response", "error_response", "status_line"]

_status_lines: dict[int, bytes] = {}


def status_line(status: int) -> bytes:
    """The status line of ``status``, CRLF included (cached per status)."""
    line = _status_lines.get(status)
    if line is None:
        try:
            phrase = HTTPStatus(status).phrase
        except ValueError:
            phrase = ""
        line = b"HTTP/1.1 %d %s\r\n" % (status, phrase.encode())
        _status_lines[status] = line
    return line


def error_response(
    status: int, content_type: bytes, body: bytes, *, date: bytes = b"", extra: bytes = b""
) -> bytes:
    """A whole response that closes the connection: a refusal, or a canned 503."""
    return (
        status_line(status)
        + b"content-type: "
        + content_type
        + b"\r\nconnection: close\r\n"
        + extra
        + date
        + b"content-length: %d\r\n\r\n" % len(body)
        + body
    )


class Framing:
    """The framing of one response: ``start``, ``frame``..., ``end`` (no I/O).

    A ``Response`` is one on its own; a ``Request`` is one too, for the response it gets.
    """

    __slots__ = (
        "chunked",
        "date",
        "finished",
        "http_version",
        "keep_alive",
        "no_body",
        "response_headers",
        "sent",
        "started",
        "status",
    )

    # Set by the subclasses' __init__.
    http_version: str
    #: the connection may serve another request after this response
    keep_alive: bool
    #: a HEAD request's response (or a 204 or 304): its body is never sent
    no_body: bool
    started: bool
    finished: bool
    chunked: bool
    #: the response's status, once started (0 before)
    status: int
    #: the app's headers, until the first body part writes the head with the Date line
    response_headers: Iterable[tuple[bytes, bytes]] | None
    date: bytes
    #: the body bytes sent so far (framing not counted)
    sent: int

    def start(self, status: int, headers: Iterable[tuple[bytes, bytes]], date: bytes) -> None:
        """Take the status and headers (``date``: a whole Date header line, or b"")."""
        if self.started:
            raise RuntimeError("the response has already started")
        self.started = True
        self.status = status
        self.response_headers = headers
        self.date = date

    def frame(self, body: bytes, more: bool, closing: bool = False) -> bytes:
        """The bytes that send one body part (``closing``: no keep-alive after it)."""
        if self.finished:
            raise RuntimeError("the response has already ended")
        headers = self.response_headers
        parts: list[bytes] | None = None
        if headers is not None:
            # The first part: the head goes with it, its framing chosen now.
            self.response_headers = None
            status = self.status
            if status in (204, 304):
                self.no_body = True
            if closing:
                self.keep_alive = False
            parts = [_status_lines.get(status) or status_line(status)]
            has_length = False
            for name, value in headers:
                lowered = name.lower()
                if lowered == b"content-length":
                    has_length = True
                elif lowered == b"connection":
                    if value.lower() == b"close":
                        self.keep_alive = False
                    continue
                elif lowered == b"transfer-encoding":
                    continue
                parts.append(name + b": " + value + b"\r\n")
            parts.append(self.date)
            if not has_length and status not in (204, 304) and status >= 200:
                if not more:
                    parts.append(b"content-length: %d\r\n" % len(body))
                elif self.http_version == "1.1":
                    self.chunked = True
                    parts.append(b"transfer-encoding: chunked\r\n")
                else:
                    self.keep_alive = False
            if not self.keep_alive:
                parts.append(b"connection: close\r\n")
            elif self.http_version == "1.0":
                parts.append(b"connection: keep-alive\r\n")
            parts.append(b"\r\n")
        elif not self.started:
            raise RuntimeError("a response body before the response started")
        if not more:
            self.finished = True
        if self.no_body:
            return b"".join(parts) if parts is not None else b""
        self.sent += len(body)
        if self.chunked:
            chunk = b"%x\r\n%b\r\n" % (len(body), body) if body else b""
            body = chunk if more else chunk + b"0\r\n\r\n"
        if parts is None:
            return body
        parts.append(body)
        return b"".join(parts)

    def end(self) -> bytes:
        """The bytes that end a response the app left open (b"" if none can)."""
        if self.finished or not self.chunked:
            return b""
        self.finished = True
        return b"0\r\n\r\n"


class Response(Framing):
    """The framing of one response to one request: ``start``, ``body``..., ``end``."""

    __slots__ = ()

    def __init__(self, method: str, http_version: str, keep_alive: bool) -> None:
        self.http_version = http_version
        self.keep_alive = keep_alive
        self.no_body = method == "HEAD"
        self.started = self.finished = self.chunked = False
        self.status = self.sent = 0
        self.response_headers = None
        self.date = b""

    body = Framing.frame
