# HTTP/1.1 responses out, sans-io: a response's parts in, the bytes to write out.
#
# The hot path of the server: a complete response (the common case) becomes one
# bytes object, head and body, for one write. Framing is chosen when the first body
# part comes: Content-Length when the app gave one or the body is complete, otherwise
# chunked (HTTP/1.1), or the end of the connection marks the end (HTTP/1.0). The Date
# header is the caller's (no clock here).

from __future__ import annotations

from collections.abc import Iterable
from http import HTTPStatus

__all__ = ["Response", "error_response", "status_line"]

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


class Response:
    """The framing of one response to one request: ``start``, ``body``..., ``end``."""

    __slots__ = (
        "chunked",
        "finished",
        "has_length",
        "head",
        "http_version",
        "keep_alive",
        "no_body",
        "started",
        "status",
    )

    def __init__(self, method: str, http_version: str, keep_alive: bool) -> None:
        self.http_version = http_version
        #: the connection may serve another request after this response
        self.keep_alive = keep_alive
        self.started = False
        self.finished = False
        self.chunked = False
        self.status = 200
        #: the head, framing headers still to come, until the first body part
        self.head = b""
        self.has_length = False
        #: a HEAD request's response: its body is never sent
        self.no_body = method == "HEAD"

    def start(self, status: int, headers: Iterable[tuple[bytes, bytes]], date: bytes) -> None:
        """Take the status and headers (``date``: a whole Date header line, or b"")."""
        if self.started:
            raise RuntimeError("the response has already started")
        self.started = True
        self.status = status
        if status in (204, 304):
            self.no_body = True
        parts = [status_line(status)]
        for name, value in headers:
            lowered = name.lower()
            if lowered == b"content-length":
                self.has_length = True
            elif lowered == b"connection":
                if value.lower() == b"close":
                    self.keep_alive = False
                continue
            elif lowered == b"transfer-encoding":
                continue
            parts.append(name + b": " + value + b"\r\n")
        parts.append(date)
        self.head = b"".join(parts)

    def body(self, body: bytes, more: bool, closing: bool = False) -> bytes:
        """The bytes that send one body part (``closing``: no keep-alive after it)."""
        if not self.started:
            raise RuntimeError("a response body before the response started")
        if self.finished:
            raise RuntimeError("the response has already ended")
        head = self.head
        if head:
            self.head = b""
            if closing:
                self.keep_alive = False
            head = self._framing(head, None if more else len(body))
        if not more:
            self.finished = True
        if self.no_body:
            return head
        if self.chunked:
            chunk = b"%x\r\n%b\r\n" % (len(body), body) if body else b""
            body = chunk if more else chunk + b"0\r\n\r\n"
        return head + body if head else body

    def end(self) -> bytes:
        """The bytes that end a response the app left open (b"" if none can)."""
        if self.finished or not self.chunked:
            return b""
        self.finished = True
        return b"0\r\n\r\n"

    def _framing(self, head: bytes, length: int | None) -> bytes:
        status = self.status
        extra = b""
        if not self.has_length and status not in (204, 304) and status >= 200:
            if length is not None:
                extra = b"content-length: %d\r\n" % length
            elif self.http_version == "1.1":
                self.chunked = True
                extra = b"transfer-encoding: chunked\r\n"
            else:
                self.keep_alive = False
        if not self.keep_alive:
            extra += b"connection: close\r\n"
        elif self.http_version == "1.0":
            extra += b"connection: keep-alive\r\n"
        return head + extra + b"\r\n"
