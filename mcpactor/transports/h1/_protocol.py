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
# A request is also its response's framing (``Framing``, _framing.py): the connection
# hands the request to the app and the app answers through it, one object per exchange.

from __future__ import annotations

import urllib.parse
from collections import deque
from typing import Final

import attrs
import httptools

from .._security import parse_host
from ._framing import Framing

__all__ = [
    "CONTINUE",
    "NEED_DATA",
    "Continue",
    "Event",
    "H1Protocol",
    "Limits",
    "NeedData",
    "ProtocolError",
    "Request",
    "Upgrade",
]


class ProtocolError(Exception):
    """A request the server will not read: answer ``error_status_hint`` and close."""

    def __init__(self, message: str, error_status_hint: int = 400) -> None:
        super().__init__(message)
        self.message = message
        self.error_status_hint = error_status_hint


@attrs.frozen(kw_only=True)
class Limits:
    """What one request may hold; past a limit the protocol refuses it."""

    #: the largest request head (request line and headers), in bytes (431 above it)
    max_head_bytes: int = 64 * 1024
    #: the most header fields in one request, trailers included (431 above it)
    max_headers: int = 100
    #: the largest request body, in bytes (413 above it)
    max_body_bytes: int = 4 * 1024 * 1024


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
        self._events: deque[Request | Upgrade] = deque()
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
        # What the request being read said of its framing, for ``on_headers_complete``:
        # Host fields seen, Content-Length (_NO_LENGTH, _LENGTH, _TOO_LONG), the
        # Transfer-Encoding codings joined.
        self._hosts = 0
        self._length = _NO_LENGTH
        self._codings: bytes | None = None

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
            return events.popleft()
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
            self._length = _NO_LENGTH
            self._codings = None
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
        # and classified once (``_NAMES``), and the field goes into both views here.
        named = _NAMES.get(name)
        if named is None:
            named = _name(name)
        lowered, key, kind = named
        request.raw_headers.append((lowered, value))
        text = value.decode("latin-1")
        headers = request.headers
        headers[key] = headers[key] + ", " + text if key in headers else text
        if not kind:
            return
        # A field that says how the request is framed or what it asks of the connection:
        # noted for ``on_headers_complete``, which checks it once the version is known.
        if kind == _HOST:
            self._hosts += 1
        elif kind == _CONTENT_LENGTH:
            if self._length != _TOO_LONG:
                limit = limits.max_body_bytes
                too_long = value.strip().isdigit() and int(value) > limit
                self._length = _TOO_LONG if too_long else _LENGTH
        elif kind == _TRANSFER_ENCODING:
            codings = self._codings
            self._codings = value if codings is None else codings + b"," + value
        elif kind == _EXPECT:
            request.expects_continue = value.lower() == b"100-continue"
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
        if request.expects_continue and version != "1.1":
            # RFC 9110 §10.1.1: never a 100 (Continue) to an HTTP/1.0 client.
            request.expects_continue = False
        length = self._length
        if length == _TOO_LONG:
            limit = self._limits.max_body_bytes
            raise ProtocolError(f"request body larger than {limit} bytes", 413)
        hosts = self._hosts
        if hosts != 1 and (hosts or version == "1.1"):
            raise ProtocolError(
                "more than one Host header" if hosts else "an HTTP/1.1 request needs a Host"
            )
        codings = self._codings
        if codings is not None:
            _check_codings(codings, version, length == _LENGTH)
        target = request.target
        if target[:1] != b"/" and target != b"*":
            _absolute_form(request)
            target = request.target
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


# What a header field name is to ``on_header``: plain (0), or a framing field it notes.
_CONTENT_LENGTH: Final = 1
_HOST: Final = 2
_TRANSFER_ENCODING: Final = 3
_EXPECT: Final = 4
_UPGRADE: Final = 5
_FRAMING_FIELDS: Final = {
    b"content-length": _CONTENT_LENGTH,
    b"host": _HOST,
    b"transfer-encoding": _TRANSFER_ENCODING,
    b"expect": _EXPECT,
    b"upgrade": _UPGRADE,
}
_NO_LENGTH: Final = 0
_LENGTH: Final = 1
_TOO_LONG: Final = 2
# Field names as sent -> (lowercase name, as text, what it is). Names come off the wire,
# so the table keeps at most this many; the rest are worked out each time.
_MAX_NAMES: Final = 256
_NAMES: dict[bytes, tuple[bytes, str, int]] = {}


def _name(name: bytes) -> tuple[bytes, str, int]:
    lowered = name.lower()
    named = (lowered, lowered.decode("latin-1"), _FRAMING_FIELDS.get(lowered, 0))
    if len(_NAMES) < _MAX_NAMES:
        _NAMES[name] = named
    return named


def _check_codings(codings: bytes, version: str, length: bool) -> None:
    # RFC 9112 §6: chunked, once and last, is the only framing read here.
    if version == "1.0":
        # §6.1: an HTTP/1.0 message with Transfer-Encoding has faulty framing.
        raise ProtocolError("Transfer-Encoding in an HTTP/1.0 request")
    if length:
        # §6.3 allows a server to reject this outright; it is how requests are smuggled.
        raise ProtocolError("Content-Length together with Transfer-Encoding")
    parts = [part.strip().lower() for part in codings.split(b",")]
    if parts[-1] != b"chunked" or parts.count(b"chunked") > 1:
        raise ProtocolError("the last transfer coding must be chunked, and only it")
    if len(parts) > 1:
        raise ProtocolError("transfer codings other than chunked are not supported", 501)


def _absolute_form(request: Request) -> None:
    # RFC 9112 §3.2.2: the target's authority is the request's Host; only http(s) URLs
    # with a valid authority are taken.
    scheme, sep, rest = request.target.partition(b"://")
    authority, slash, path = rest.partition(b"/")
    if (
        not sep
        or scheme.lower() not in (b"http", b"https")
        or parse_host(authority.decode("latin-1")) is None
    ):
        raise ProtocolError("malformed request target")
    request.target = slash + path if slash else b"/" + path
    request.raw_headers = [(n, v) for n, v in request.raw_headers if n != b"host"]
    request.raw_headers.append((b"host", authority))
    request.headers["host"] = authority.decode("latin-1")


def _is_websocket(request: Request) -> bool:
    return (
        request.method == "GET"
        and request.upgrade is not None
        and request.upgrade.lower() == b"websocket"
    )
