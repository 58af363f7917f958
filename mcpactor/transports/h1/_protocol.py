# HTTP/1.1 requests in and responses out, sans-io: bytes are fed to an ``H1Protocol``,
# requests come out; a response's parts go into its request, the bytes to write come out.
#
# The shape is h11's: ``receive_data(bytes)`` then ``next_event()`` until it says
# ``NEED_DATA``; no sockets, no trio, no clock. Parsing is httptools (the llhttp C
# parser), which is what makes this server fast; it is wrapped so that the caller sees
# events only. A request comes out whole, body included: an MCP endpoint reads every
# body before it answers, and one event per request is the cheapest shape.
#
# Framing follows RFC 9112 and refuses, with ``ProtocolError`` (its
# ``error_status_hint`` is 400 unless named) and no further events, whatever could be
# read two ways: llhttp already rejects bare CR or LF, obs-fold, NUL and other control
# characters in fields, whitespace before a colon, invalid chunk sizes and extensions,
# duplicate Content-Length, and Content-Length with Transfer-Encoding (§6.3 lets a
# server reject it; we do, since a front end that reads it the other way is how
# requests are smuggled). On top of llhttp this protocol refuses: a missing (HTTP/1.1)
# or repeated Host (§3.2); a Transfer-Encoding whose final coding is not chunked (400,
# §6.3), that names another coding before chunked (501), or in an HTTP/1.0 request
# (400, §6.1); HTTP versions other than 1.0 and 1.1 (505, or 400 for 0.9); an
# absolute-form target that is not http(s) with a valid authority (§3.2.2; its
# authority replaces the Host). Trailer fields are read, counted against the head
# limit and dropped: they never reach the request's headers.
#
# Limits are enforced as bytes arrive, not once a unit is complete: a feed that
# completes nothing (no field, no body byte, no chunk) adds to a count that the head
# limit bounds, so an endless header value, request line or chunk extension is cut at
# ``max_head_bytes`` (plus at most one feed).
#
# A request is also its response's framing (``Response``): the connection hands the
# request to the app and the app answers through it, so there is one object per
# exchange. The head is built in one place, when the first body part comes: a complete
# response (the common case) is one bytes object, head and body, for one write.
# Framing is Content-Length when the app gave one or the body is complete, otherwise
# chunked (HTTP/1.1), or the end of the connection marks the end (HTTP/1.0). The Date
# header is the caller's (no clock here).

from __future__ import annotations

import urllib.parse
from collections.abc import Iterable
from typing import Final

import attrs
import httptools

from ._rules import (
    CONTENT_LENGTH,
    EXPECT,
    HOST,
    LENGTH,
    NAMES,
    NO_LENGTH,
    STATUS_LINES,
    TOO_LONG,
    TRANSFER_ENCODING,
    Limits,
    ProtocolError,
    absolute_form,
    check_codings,
    error_response,
    name_of,
    status_line,
)

__all__ = [
    "CONTINUE",
    "NEED_DATA",
    "Continue",
    "Event",
    "Framing",
    "H1Protocol",
    "Limits",
    "NeedData",
    "ProtocolError",
    "Request",
    "Response",
    "Upgrade",
    "error_response",
    "status_line",
]


# The head lines of the fields responses carry again and again (content types, CORS):
# (name, value) -> its line, at most this many (the rest are built each time).
_MAX_FIELD_LINES: Final = 256
_FIELD_LINES: dict[tuple[bytes, bytes], bytes] = {}


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
            parts = [STATUS_LINES.get(status) or status_line(status)]
            has_length = False
            lines = _FIELD_LINES
            for field in headers:
                try:
                    line = lines.get(field)
                except TypeError:  # not hashable: an ASGI app's list, say
                    line = None
                if line is None:
                    name, value = field
                    lowered = name.lower()
                    if lowered == b"connection":
                        if value.lower() == b"close":
                            self.keep_alive = False
                        continue
                    if lowered == b"transfer-encoding":
                        continue
                    line = name + b": " + value + b"\r\n"
                    if lowered == b"content-length":
                        has_length = True
                    elif type(field) is tuple and len(lines) < _MAX_FIELD_LINES:
                        lines[field] = line
                parts.append(line)
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


class Request(Framing):
    """One whole request, its body decoded from any chunked framing, and its response."""

    __slots__ = (
        "body",
        "chunks",
        "expects_continue",
        "field_count",
        "headers",
        "in_body",
        "method",
        "path",
        "query_string",
        "raw_headers",
        "size",
        "target",
        "upgrade",
    )

    def __init__(self) -> None:
        # The response's framing is set up here too (one object per exchange): what the
        # head says (method, version, keep-alive) is filled in when it is read.
        self.started = self.finished = self.chunked = self.no_body = False
        self.status = self.sent = 0
        self.response_headers = None
        self.date = b""
        self.method = ""
        #: the request target, origin-form (absolute-form is rewritten, §3.2.2)
        self.target = b""
        #: the target's path, percent-decoded, and its query (the bytes after "?")
        self.path = ""
        self.query_string = b""
        #: header fields with lowercase names, in the order they came
        self.raw_headers: list[tuple[bytes, bytes]] = []
        #: the same by name, decoded (latin-1); repeated fields joined with ", "
        self.headers: dict[str, str] = {}
        #: the body as it arrived, in pieces, and whole once the request is
        self.chunks: list[bytes] = []
        self.body = b""
        self.size = 0
        self.http_version = "1.1"
        #: the client lets the connection serve another request after this one
        self.keep_alive = True
        #: the value of the Upgrade header, if any
        self.upgrade: bytes | None = None
        self.expects_continue = False
        #: the head is complete: fields from now on are trailers
        self.in_body = False
        #: header and trailer fields seen
        self.field_count = 0

    def __repr__(self) -> str:
        return f"<Request {self.method} {self.target!r} HTTP/{self.http_version}>"


@attrs.frozen
class Upgrade:
    """A WebSocket upgrade: the protocol reads nothing more; ``trailing`` is not HTTP."""

    request: Request
    #: the bytes that came after the request head (the first WebSocket frames)
    trailing: bytes


@attrs.frozen
class NeedData:
    """Nothing more until more bytes are fed."""


@attrs.frozen
class Continue:
    """The request being read asked for ``100 Continue`` before it sends its body."""


NEED_DATA: Final = NeedData()
CONTINUE: Final = Continue()

Event = Request | Upgrade | NeedData | Continue


class H1Protocol:
    """The server side of one HTTP/1.1 connection's requests: bytes in, events out.

    Feed what the socket gave with ``receive_data``, then call ``next_event`` until it
    returns ``NEED_DATA``. Requests pipelined in one feed come out in order. A request
    that cannot be read raises ``ProtocolError`` from ``next_event`` once the requests
    before it have come out, and on every call after (the connection is done reading).
    """

    __slots__ = (
        "_codings",
        "_error",
        "_events",
        "_expects",
        "_head_size",
        "_hosts",
        "_length",
        "_limits",
        "_parser",
        "_parsing",
        "_progressed",
        "_request_class",
        "_stalled",
        "_switched",
        "idle",
    )

    def __init__(self, limits: Limits, request_class: type[Request] = Request) -> None:
        self._limits = limits
        #: what requests are made as (a driver's subclass adds its own slots)
        self._request_class = request_class
        self._parser = httptools.HttpRequestParser(self)
        # A list, not a deque: it rarely holds more than one request, and an empty deque
        # is a 64-slot block that every open connection would keep.
        self._events: list[Request | Upgrade] = []
        self._parsing: Request | None = None
        self._error: ProtocolError | None = None
        self._switched = False
        self._head_size = 0
        #: a callback of the parser ran during this feed: the bytes advanced something
        self._progressed = False
        #: bytes fed since the parser last advanced (an unterminated field, say)
        self._stalled = 0
        #: nothing of a next request has been read (the connection waits for one)
        self.idle = True
        # What the request being read said, for ``on_headers_complete``: Host fields seen,
        # Content-Length (NO_LENGTH, LENGTH, TOO_LONG), codings joined, 100-continue.
        self._hosts = 0
        self._length = NO_LENGTH
        self._codings: bytes | None = None
        self._expects = False

    @property
    def failed(self) -> bool:
        """A request could not be read: ``next_event`` raises once the events before it are out."""
        return self._error is not None

    @property
    def stopped(self) -> bool:
        """No more bytes will be read: an error is due, or the connection upgraded."""
        return self._error is not None or self._switched

    @property
    def queued(self) -> int:
        """Events ready for ``next_event`` (not counting an error after them)."""
        return len(self._events)

    def receive_data(self, data: bytes) -> None:
        """Feed bytes from the client (never raises: errors come from ``next_event``)."""
        if self._error is not None or self._switched:
            return
        self._progressed = False
        try:
            self._parser.feed_data(data)
        except httptools.HttpParserUpgrade as upgrade:
            try:
                self._upgrade(data, upgrade.args[0] if upgrade.args else len(data))
            except ProtocolError as error:
                self._error = error
            return
        except httptools.HttpParserError as exc:
            # A callback's own refusal arrives wrapped in a callback error.
            context = exc.__context__
            if isinstance(context, ProtocolError):
                self._error = context
            else:
                self._error = ProtocolError(f"malformed HTTP request: {exc}")
            return
        if self._progressed:
            self._stalled = 0
            return
        self._stalled += len(data)
        limit = self._limits.max_head_bytes
        if self._stalled > limit:
            parsing = self._parsing
            if parsing is None or not parsing.in_body:
                self._error = ProtocolError(f"request head larger than {limit} bytes", 431)
            else:
                self._error = ProtocolError(f"a chunk header or the trailers exceed {limit} bytes")

    def next_event(self) -> Event:
        """The next event; ``NEED_DATA`` when the bytes fed so far hold no more."""
        events = self._events
        if events:
            return events.pop(0)
        if self._error is not None:
            raise self._error
        parsing = self._parsing
        if parsing is not None and parsing.expects_continue:
            parsing.expects_continue = False
            return CONTINUE
        return NEED_DATA

    def _upgrade(self, data: bytes, offset: int) -> None:
        events = self._events
        request = self._parsing
        if request is None and events and isinstance(events[-1], Request):
            request = events.pop()  # type: ignore[assignment]
        if request is None or not _is_websocket(request):
            # Refused at once, not after the requests before it: the bytes after an
            # upgrade are not HTTP/1.1.
            events.clear()
            raise ProtocolError("protocol upgrades other than WebSocket are not supported")
        self._parsing = None
        self.idle = True
        self._switched = True
        events.append(Upgrade(request, data[offset:]))

    # --- httptools callbacks (called by the parser, not part of the API) ---------------
    # Only those defined are called: a request begins with its target's first bytes.

    def on_url(self, url: bytes) -> None:
        request = self._parsing
        if request is None:
            request = self._parsing = self._request_class()
            self.idle = False
            self._head_size = 0
            self._hosts = 0
            self._length = NO_LENGTH
            self._codings = None
            self._expects = False
        self._progressed = True
        request.target += url
        limit = self._limits.max_head_bytes
        if len(request.target) > limit:
            raise ProtocolError(f"request target longer than {limit} bytes", 414)
        self._head_size += len(url)
        if self._head_size > limit:
            raise ProtocolError(f"request head larger than {limit} bytes", 431)

    def on_header(self, name: bytes, value: bytes) -> None:
        request = self._parsing
        assert request is not None
        self._progressed = True
        self._head_size += len(name) + len(value) + 4
        limits = self._limits
        if self._head_size > limits.max_head_bytes:
            raise ProtocolError(f"request head larger than {limits.max_head_bytes} bytes", 431)
        request.field_count += 1
        if request.field_count > limits.max_headers:
            raise ProtocolError(f"more than {limits.max_headers} header fields", 431)
        if request.in_body:
            # A trailer field (httptools reports them as headers): never one of the
            # request's headers, or a Host, Authorization or Mcp-Session-Id sent after
            # the body would pass checks it never met. Nothing here uses trailers.
            return
        # Clients send the same few names on every request: each is lowered, decoded
        # and classified once (``NAMES``), and the field goes into both views here.
        named = NAMES.get(name)
        if named is None:
            named = name_of(name)
        lowered, key, kind = named
        request.raw_headers.append((lowered, value))
        text = value.decode("latin-1")
        headers = request.headers
        headers[key] = headers[key] + ", " + text if key in headers else text
        if not kind:
            return
        # A field that says how the request is framed or what it asks of the connection:
        # noted for ``on_headers_complete``, which checks it once the version is known.
        if kind == HOST:
            self._hosts += 1
        elif kind == CONTENT_LENGTH:
            if self._length != TOO_LONG:
                limit = limits.max_body_bytes
                too_long = value.strip().isdigit() and int(value) > limit
                self._length = TOO_LONG if too_long else LENGTH
        elif kind == TRANSFER_ENCODING:
            codings = self._codings
            self._codings = value if codings is None else codings + b"," + value
        elif kind == EXPECT:
            # Said once the head is whole (``next_event`` answers it with CONTINUE).
            self._expects = value.lower() == b"100-continue"
        else:
            request.upgrade = value

    def on_headers_complete(self) -> None:
        request = self._parsing
        assert request is not None
        parser = self._parser
        self._progressed = True
        request.in_body = True
        method = request.method = parser.get_method().decode("ascii")
        request.no_body = method == "HEAD"
        version = request.http_version = parser.get_http_version()
        if version != "1.1" and version != "1.0":
            if version[:1].isdigit() and version[:1] >= "2":
                raise ProtocolError(f"HTTP/{version} is not supported over this connection", 505)
            raise ProtocolError(f"HTTP/{version} requests are not served")
        request.keep_alive = parser.should_keep_alive()
        # RFC 9110 §10.1.1: never a 100 (Continue) to an HTTP/1.0 client.
        request.expects_continue = self._expects and version == "1.1"
        length = self._length
        if length == TOO_LONG:
            limit = self._limits.max_body_bytes
            raise ProtocolError(f"request body larger than {limit} bytes", 413)
        hosts = self._hosts
        if hosts != 1 and (hosts or version == "1.1"):
            raise ProtocolError(
                "more than one Host header" if hosts else "an HTTP/1.1 request needs a Host"
            )
        codings = self._codings
        if codings is not None:
            check_codings(codings, version, length == LENGTH)
        target = request.target
        if target[:1] != b"/" and target != b"*":
            # RFC 9112 §3.2.2: the target's authority is the request's Host.
            target, authority = absolute_form(target)
            request.target = target
            request.raw_headers = [(n, v) for n, v in request.raw_headers if n != b"host"]
            request.raw_headers.append((b"host", authority))
            request.headers["host"] = authority.decode("latin-1")
        raw_path, _, request.query_string = target.partition(b"?")
        path = request.path = raw_path.decode("latin-1")
        if "%" in path:
            request.path = urllib.parse.unquote(path)

    def on_chunk_header(self) -> None:
        self._progressed = True

    def on_body(self, body: bytes) -> None:
        request = self._parsing
        assert request is not None
        self._progressed = True
        request.size += len(body)
        limit = self._limits.max_body_bytes
        if request.size > limit:
            raise ProtocolError(f"request body larger than {limit} bytes", 413)
        request.chunks.append(body)

    def on_message_complete(self) -> None:
        request = self._parsing
        assert request is not None
        self._progressed = True
        request.expects_continue = False
        chunks = request.chunks
        if chunks:
            request.body = chunks[0] if len(chunks) == 1 else b"".join(chunks)
        self._parsing = None
        self.idle = True
        self._events.append(request)


def _is_websocket(request: Request) -> bool:
    return (
        request.method == "GET"
        and request.upgrade is not None
        and request.upgrade.lower() == b"websocket"
    )
