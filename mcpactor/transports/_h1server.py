# Why this module is long (~1 150 lines): it is one HTTP/1.1 server, and its heart is
# ``_Connection``, whose parsing, deadlines and writing share one connection's state on
# the per-request path; cutting that class into collaborating objects would add a call
# and an indirection per request, which is what this server exists to avoid (below). It
# would split along its other classes: ``_Response`` (the ASGI send side) and
# ``_WebSocket`` into modules of their own, and ``_Server`` (accepting, turning away,
# reaping deadlines) with ``serve_h1`` into a third.
#
# A lean HTTP/1.1 server for the ASGI app, on trio streams.
#
# Why our own: under hypercorn's trio worker a bare ASGI app answering canned JSON costs
# about 0.45 ms of CPU per request on a 2-core machine, and hypercorn is most of that: a
# keep-alive timer task stopped and restarted per request, a task and a memory channel
# per request for the app, a lock and a shielded cancel scope around every socket write,
# one write per ASGI message, and h11 parsing in pure Python. A framework-free trio server
# answers the same request for about 25 µs. This server keeps what an MCP endpoint needs
# and nothing else:
#
# - one task per connection and none per request: the connection's task parses, calls
#   the app and writes; the app's ``receive`` reads the socket itself only when the app
#   asks after the body (to notice a client leaving an SSE stream);
# - httptools (the llhttp C parser) for request heads and chunked bodies;
# - a complete response (the common case) goes out in one ``send_all``: head and body;
# - the keep-alive and request deadlines are the deadline of one cancel scope per
#   connection, moved as the connection goes from idle to reading to serving;
# - WebSocket upgrades are served with wsproto on the same connection;
# - TLS, when configured, through trio.SSLStream (the same connection code, reading and
#   writing through the stream instead of the socket).
#
# Framing follows RFC 9112 and refuses, with 400 (or the status named) and a closed
# connection, whatever could be read two ways: llhttp already rejects bare CR or LF,
# obs-fold, NUL and other control characters in fields, whitespace before a colon,
# invalid chunk sizes and extensions, duplicate Content-Length, and Content-Length with
# Transfer-Encoding (§6.3 lets a server reject it; we do, since a front end that reads
# it the other way is how requests are smuggled). On top of llhttp this server refuses:
# a missing (HTTP/1.1) or repeated Host (§3.2); a Transfer-Encoding whose final coding
# is not chunked (400, §6.3), that names another coding before chunked (501), or in an
# HTTP/1.0 request (400, §6.1); HTTP versions other than 1.0 and 1.1 (505, or 400 for
# 0.9); an absolute-form target that is not http(s) with a valid authority (§3.2.2;
# its authority replaces the Host the app sees). Trailer fields are read, counted
# against the head limit and dropped: they never reach the app's headers.
#
# Limits are enforced as bytes arrive, not once a unit is complete: a read that
# completes nothing (no field, no body byte, no chunk) adds to a count that the head
# limit bounds, so an endless header value, request line or chunk extension is cut at
# ``max_head_bytes`` (plus at most one read). Every read and write loop reaches a trio
# checkpoint at least every few operations, so one busy client cannot starve the
# others or the deadline reaper; a write that waits on a client that does not read
# gives up after ``write_timeout`` and drops the connection.
#
# hypercorn stays available (``serve_http(..., http_server="hypercorn")``) for HTTP/2.

from __future__ import annotations

import contextlib
import errno
import logging
import socket
import ssl
import time
import urllib.parse
from collections import deque
from collections.abc import Awaitable, Callable, Sequence
from http import HTTPStatus
from typing import Any, Final

import attrs
import httptools
import trio
from wsproto import ConnectionType, WSConnection
from wsproto.events import (
    AcceptConnection,
    BytesMessage,
    CloseConnection,
    Message,
    Ping,
    RejectConnection,
    TextMessage,
)
from wsproto.events import Request as WsRequest
from wsproto.utilities import ProtocolError as WsProtocolError

from .._exceptions import INTERNAL_ERROR, INVALID_REQUEST
from ..runtime import current_start_gate
from ._asgi import TurnAwayLog, error_body, too_many_connections
from ._security import parse_host

__all__ = ["H1Config", "serve_h1"]

_log = logging.getLogger("mcpactor.http.server")
_access = logging.getLogger("mcpactor.access")

App = Callable[[dict[str, Any], Any, Any], Awaitable[None]]

_CONNECTION_TASK_NAME: Final = "mcpactor.http.connection"
_READ_SIZE: Final = 65536
_ASGI: Final = {"version": "3.0", "spec_version": "2.3"}
_CONTINUE: Final = b"HTTP/1.1 100 Continue\r\n\r\n"
# Pipelined requests read while the app waits for a disconnect: past this many bytes the
# client is clearly still there, so stop reading until the current response is done.
_MAX_PIPELINED: Final = 1024 * 1024
# Reads and writes that complete at once between two checkpoints (a client that keeps
# sending, or pipelines and never makes us wait, must not keep the other connections
# and the deadline reaper from running).
_OPS_PER_CHECKPOINT: Final = 16
# Connections turned away (over ``max_connections``) that may linger at once, to let the
# client read its 503; past that they are closed at once.
_MAX_TURNING_AWAY: Final = 64
# Seconds between two log lines about connections turned away.
# Closing after a refusal: how long, and how much, to read and drop first.
_LINGER_SECONDS: Final = 1.0
_LINGER_BYTES: Final = 1024 * 1024
# accept() failures that mean "out of descriptors or memory": wait, don't crash.
_ACCEPT_CAPACITY_ERRORS: Final = frozenset(
    {errno.EMFILE, errno.ENFILE, errno.ENOBUFS, errno.ENOMEM}
)
_ACCEPT_BACKOFF: Final = 0.1
# accept() failures that concern only the connection being accepted (it was reset or
# refused on the way in): take the next one.
_ACCEPT_TRANSIENT_ERRORS: Final = frozenset(
    getattr(errno, name)
    for name in (
        "ECONNABORTED",
        "EPERM",
        "EPROTO",
        "ENETDOWN",
        "ENOPROTOOPT",
        "EHOSTDOWN",
        "ENONET",
        "EHOSTUNREACH",
        "EOPNOTSUPP",
        "ENETUNREACH",
    )
    if hasattr(errno, name)
)


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


class _Refused(Exception):
    # The request cannot be served: answer ``status`` and close the connection.
    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


class _Request:
    __slots__ = (
        "body",
        "body_size",
        "complete",
        "expects_continue",
        "fields",
        "headers",
        "http_version",
        "in_body",
        "keep_alive",
        "method",
        "target",
        "upgrade",
    )

    def __init__(self) -> None:
        self.method = ""
        self.target = b""
        self.headers: list[tuple[bytes, bytes]] = []
        self.body: list[bytes] = []
        self.body_size = 0
        self.complete = False
        self.expects_continue = False
        self.keep_alive = True
        self.http_version = "1.1"
        self.upgrade: bytes | None = None
        #: the head is complete: fields from now on are trailers
        self.in_body = False
        #: header and trailer fields seen
        self.fields = 0


_status_lines: dict[int, bytes] = {}


def _status_line(status: int) -> bytes:
    line = _status_lines.get(status)
    if line is None:
        try:
            phrase = HTTPStatus(status).phrase
        except ValueError:
            phrase = ""
        line = b"HTTP/1.1 %d %s\r\n" % (status, phrase.encode())
        _status_lines[status] = line
    return line


_date = [0, b""]


def _date_header() -> bytes:
    # RFC 9110 §6.6.1: an origin server with a clock sends Date; one format per second.
    now = int(time.time())
    if now != _date[0]:
        _date[0] = now
        stamp = time.strftime("%a, %d %b %Y %H:%M:%S GMT", time.gmtime(now))
        _date[1] = b"date: " + stamp.encode() + b"\r\n"
    return _date[1]  # type: ignore[return-value]


class _Server:
    def __init__(self, app: App, config: H1Config) -> None:
        self.app = app
        self.config = config
        self.draining = False
        #: connections waiting for a request (or the rest of one), by deadline
        self.deadlines: dict[_Connection, float] = {}
        #: of those, the ones with nothing read yet: closed at once when draining
        self.idle: set[_Connection] = set()
        self.connections = 0
        self.all_closed = trio.Event()
        self.all_closed.set()
        self.turning_away = 0
        self.turn_away_log = TurnAwayLog()
        #: request actors spawned but not started: a new request waits while many are
        self.starts = current_start_gate()

    async def accept(self, listener: socket.socket, nursery: trio.Nursery) -> None:
        with listener:
            while True:
                await trio.lowlevel.wait_readable(listener)
                # Take every connection the kernel has queued in this turn.
                while True:
                    try:
                        sock, _ = listener.accept()
                    except BlockingIOError:
                        break
                    except OSError as exc:
                        if exc.errno in _ACCEPT_TRANSIENT_ERRORS:
                            continue
                        if exc.errno not in _ACCEPT_CAPACITY_ERRORS:
                            raise
                        _log.error("accept failed (%s); pausing for %s s", exc, _ACCEPT_BACKOFF)
                        await trio.sleep(_ACCEPT_BACKOFF)
                        break
                    sock.setblocking(False)
                    if self.connections >= self.config.max_connections:
                        self.turn_away(sock, nursery)
                        continue
                    if sock.family in (socket.AF_INET, socket.AF_INET6):
                        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                    self.connections += 1
                    if self.all_closed.is_set():
                        self.all_closed = trio.Event()
                    nursery.start_soon(self.handle, sock, name=_CONNECTION_TASK_NAME)

    def turn_away(self, sock: socket.socket, nursery: trio.Nursery) -> None:
        # Over max_connections: a 503 and close, without a parser or a request read.
        self.turn_away_log.note(self.connections)
        if self.turning_away >= _MAX_TURNING_AWAY or self.config.ssl_context is not None:
            # Over TLS a 503 would cost a handshake: the connection is just closed.
            sock.close()
            return
        self.turning_away += 1
        nursery.start_soon(self._turn_away, sock, name=_CONNECTION_TASK_NAME)

    async def _turn_away(self, sock: socket.socket) -> None:
        try:
            with contextlib.suppress(OSError):
                sock.send(too_many_connections())
                sock.shutdown(socket.SHUT_WR)
                # Closing with the request unread would reset the connection, and the
                # client could lose the answer: read and drop for a moment first.
                with trio.move_on_after(_LINGER_SECONDS):
                    drained = 0
                    while drained < _LINGER_BYTES:
                        await trio.lowlevel.wait_readable(sock)
                        data = sock.recv(_READ_SIZE)
                        if not data:
                            break
                        drained += len(data)
        finally:
            self.turning_away -= 1
            trio.lowlevel.notify_closing(sock)
            sock.close()

    async def handle(self, sock: socket.socket) -> None:
        try:
            connection_class = _Connection if self.config.ssl_context is None else _TlsConnection
            await connection_class(self, sock).serve()
        except Exception:
            # One connection's failure is never the server's (invariant 3).
            _log.exception("an HTTP connection failed")
        finally:
            self.connections -= 1
            if not self.connections:
                self.all_closed.set()

    async def reap(self) -> None:
        # One task enforces every connection's deadline: cheaper than a cancel scope
        # deadline moved twice per request, and a second late at worst.
        config = self.config
        tick = min(1.0, config.keep_alive_timeout / 4, config.request_timeout / 4)
        deadlines = self.deadlines
        while True:
            await trio.sleep(tick)
            now = trio.current_time()
            for connection, deadline in list(deadlines.items()):
                if deadline <= now:
                    connection.timer.cancel()

    def drain(self) -> None:
        self.draining = True
        for connection in list(self.idle):
            connection.timer.cancel()


class _Connection:
    def __init__(self, server: _Server, sock: socket.socket) -> None:
        self.server = server
        self.config = server.config
        self.sock = sock
        self.fd = sock.fileno()
        self.parser = httptools.HttpRequestParser(self)
        self.ready: deque[_Request] = deque()
        self.parsing: _Request | None = None
        self.head_size = 0
        self.buffered = 0
        self.eof = False
        self.broken = False
        self.linger = False
        self.unyielded = 0
        #: a callback of the parser ran during this feed: the bytes advanced something
        self.progressed = False
        #: bytes fed since the parser last advanced (an unterminated field, say)
        self.stalled = 0
        #: wait for the socket to be readable before reading the next request
        self.wait_first = True
        #: a refusal due once the requests read before it are answered
        self.deferred: _Refused | None = None
        self.scheme = "http"
        self.ws_scheme = "ws"
        self.upgraded: tuple[_Request, bytes] | None = None
        #: cancelled by the server when the connection outstays a deadline or drains
        self.timer = trio.CancelScope()
        try:
            self.client: tuple[str, int] | None = _address(sock.getpeername())
            self.local: tuple[str, int] | None = _address(sock.getsockname())
        except OSError:
            self.client = self.local = None

    # --- the connection ---------------------------------------------------------------

    async def serve(self) -> None:
        try:
            with self.timer:
                while True:
                    request = await self._next_request()
                    if request is None:
                        return
                    if self.upgraded is not None:
                        await _serve_websocket(self, *self.upgraded)
                        return
                    served = await self._respond(request)
                    # Not kept alive (head, body) while the connection waits for the next.
                    del request
                    if not served or self.server.draining:
                        return
        except _Refused as refused:
            await self._refuse(refused)
        finally:
            with trio.CancelScope(shield=True):
                await self._close()

    async def _close(self) -> None:
        server = self.server
        server.idle.discard(self)
        server.deadlines.pop(self, None)
        sock = self.sock
        if self.linger and not self.eof and not self.broken:
            # The client may still be sending what we refused to read: closing now would
            # reset the connection and could destroy the answer before it reads it.
            with contextlib.suppress(OSError), trio.move_on_after(_LINGER_SECONDS):
                sock.shutdown(socket.SHUT_WR)
                drained = 0
                while drained < _LINGER_BYTES:
                    data = await self._read()
                    if not data:
                        break
                    drained += len(data)
        trio.lowlevel.notify_closing(sock)
        sock.close()

    async def _next_request(self) -> _Request | None:
        if self.ready:
            return self.ready.popleft()
        if self.deferred is not None:
            raise self.deferred
        server = self.server
        config = self.config
        waiting = self.parsing is None
        if waiting:
            if server.draining:
                return None
            server.idle.add(self)
        server.deadlines[self] = trio.current_time() + (
            config.keep_alive_timeout if waiting else config.request_timeout
        )
        try:
            while not self.ready:
                if self.eof or self.upgraded is not None:
                    return None
                if waiting and self.wait_first:
                    # Nothing of the next request is here yet, and the client sends it
                    # only after reading our last answer: a read now would almost
                    # always fail (a system call and an exception per request).
                    await trio.lowlevel.wait_readable(self.fd)
                    self.unyielded = 0
                data = await self._read()
                if not data:
                    self.eof = True
                    return None
                if waiting:
                    waiting = False
                    server.idle.discard(self)
                    server.deadlines[self] = trio.current_time() + config.request_timeout
                    starts = server.starts
                    if starts.closed:
                        # The handlers of requests taken in before this one wait for
                        # their first step: let them start before taking in more.
                        await starts.wait_turn()
                self._feed(data)
                parsing = self.parsing
                if parsing is not None and parsing.expects_continue:
                    parsing.expects_continue = False
                    await self._write(_CONTINUE)
        finally:
            server.idle.discard(self)
            server.deadlines.pop(self, None)
        self.buffered = 0
        return self.ready.popleft()

    async def _read(self) -> bytes:
        # Straight to the socket, parking only when nothing is there: trio's socket
        # wrappers add a reschedule to every call that succeeds at once.
        sock = self.sock
        while True:
            try:
                data = sock.recv(_READ_SIZE)
            except BlockingIOError:
                pass
            except OSError:
                return b""
            else:
                # A read that never had to wait is no checkpoint either.
                self.unyielded += 1
                if self.unyielded >= _OPS_PER_CHECKPOINT:
                    self.unyielded = 0
                    await trio.lowlevel.checkpoint()
                return data
            # Parked outside the ``except`` block: a task suspended inside one keeps the
            # exception and its traceback alive, for every idle connection.
            await trio.lowlevel.wait_readable(self.fd)
            self.unyielded = 0

    async def _write(self, data: bytes) -> None:
        if self.broken:
            return
        sock = self.sock
        view = memoryview(data)
        deadline: float | None = None
        try:
            while True:
                try:
                    sent = sock.send(view)
                except BlockingIOError:
                    sent = -1
                if sent < 0:
                    if deadline is None:
                        deadline = trio.current_time() + self.config.write_timeout
                    with trio.move_on_at(deadline):
                        await trio.lowlevel.wait_writable(self.fd)
                        self.unyielded = 0
                        continue
                    self._abort("a write timed out: the client does not read")
                    return
                if sent == len(view):
                    break
                view = view[sent:]
        except OSError:
            # The client left; what the app still sends goes nowhere (it hears of the
            # disconnect through ``receive``).
            self.broken = True
            return
        # A write that never had to wait is no checkpoint: give the other tasks a turn
        # now and then, as one would, but not once per response.
        self.unyielded += 1
        if self.unyielded >= _OPS_PER_CHECKPOINT:
            self.unyielded = 0
            await trio.lowlevel.checkpoint()

    def _abort(self, why: str) -> None:
        # Drop the connection: later writes go nowhere, and a read waiting on the socket
        # (the app watching for a disconnect) ends, so the app hears of it.
        _log.info("dropping the connection of %s: %s", _peer(self.client), why)
        self.broken = True
        with contextlib.suppress(OSError):
            self.sock.shutdown(socket.SHUT_RDWR)

    def _feed(self, data: bytes) -> None:
        try:
            self._parse(data)
        except _Refused as refused:
            if not self.ready:
                raise
            # Pipelined requests before the broken one are answered first; the refusal
            # comes after them (or never, when one of them closes the connection).
            self.deferred = refused

    def _parse(self, data: bytes) -> None:
        self.progressed = False
        try:
            self.parser.feed_data(data)
        except httptools.HttpParserUpgrade as upgrade:
            request = self.parsing or (self.ready[-1] if self.ready else None)
            if request is None or not _is_websocket(request):
                # Refused at once, not after the requests before it: the bytes after
                # an upgrade are not HTTP/1.1.
                self.ready.clear()
                raise _Refused(
                    400, "protocol upgrades other than WebSocket are not supported"
                ) from None
            offset = upgrade.args[0] if upgrade.args else len(data)
            self.parsing = None
            self.ready.clear()
            self.ready.append(request)
            self.upgraded = (request, data[offset:])
        except httptools.HttpParserError as exc:
            # A callback's own refusal arrives wrapped in a callback error.
            if isinstance(exc.__context__, _Refused):
                raise exc.__context__ from None
            raise _Refused(400, f"malformed HTTP request: {exc}") from None
        if self.progressed:
            self.stalled = 0
            return
        self.stalled += len(data)
        limit = self.config.max_head_bytes
        if self.stalled > limit:
            parsing = self.parsing
            if parsing is None or not parsing.in_body:
                raise _Refused(431, f"request head larger than {limit} bytes")
            raise _Refused(400, f"a chunk header or the trailers exceed {limit} bytes")

    async def _refuse(self, refused: _Refused) -> None:
        self.linger = True
        if self.config.access_log:
            _access.info(
                '%s "- -" %d 0 refused by the server: %s',
                _peer(self.client),
                refused.status,
                refused.message,
            )
        body = error_body(
            INVALID_REQUEST if refused.status < 500 else INTERNAL_ERROR, refused.message
        )
        await self._write(
            _status_line(refused.status)
            + b"content-type: application/json\r\nconnection: close\r\n"
            + _date_header()
            + b"content-length: %d\r\n\r\n" % len(body)
            + body
        )

    # --- httptools callbacks ------------------------------------------------------------

    def on_message_begin(self) -> None:
        self.parsing = _Request()
        self.head_size = 0

    def on_url(self, url: bytes) -> None:
        assert self.parsing is not None
        self.progressed = True
        self.parsing.target += url
        if len(self.parsing.target) > self.config.max_head_bytes:
            raise _Refused(414, f"request target longer than {self.config.max_head_bytes} bytes")
        self._count_head(len(url))

    def on_header(self, name: bytes, value: bytes) -> None:
        request = self.parsing
        assert request is not None
        self.progressed = True
        self._count_head(len(name) + len(value) + 4)
        request.fields += 1
        if request.fields > self.config.max_headers:
            raise _Refused(431, f"more than {self.config.max_headers} header fields")
        if request.in_body:
            # A trailer field (httptools reports them as headers): never one of the
            # request's headers, or a Host, Authorization or Mcp-Session-Id sent after
            # the body would pass checks it never met. Nothing here uses trailers.
            return
        request.headers.append((name.lower(), value))

    def _count_head(self, size: int) -> None:
        self.head_size += size
        if self.head_size > self.config.max_head_bytes:
            raise _Refused(431, f"request head larger than {self.config.max_head_bytes} bytes")

    def on_headers_complete(self) -> None:
        request = self.parsing
        assert request is not None
        parser = self.parser
        self.progressed = True
        request.in_body = True
        request.method = parser.get_method().decode("ascii")
        version = request.http_version = parser.get_http_version()
        if version != "1.1" and version != "1.0":
            if version[:1].isdigit() and version[:1] >= "2":
                raise _Refused(505, f"HTTP/{version} is not supported over this connection")
            raise _Refused(400, f"HTTP/{version} requests are not served")
        request.keep_alive = parser.should_keep_alive()
        limit = self.config.max_body_bytes
        hosts = 0
        length = False
        codings: bytes | None = None
        for name, value in request.headers:
            if name == b"content-length":
                length = True
                if value.strip().isdigit() and int(value) > limit:
                    raise _Refused(413, f"request body larger than {limit} bytes")
            elif name == b"host":
                hosts += 1
            elif name == b"transfer-encoding":
                codings = value if codings is None else codings + b"," + value
            elif name == b"expect":
                # RFC 9110 §10.1.1: never a 100 (Continue) to an HTTP/1.0 client.
                request.expects_continue = version == "1.1" and value.lower() == b"100-continue"
            elif name == b"upgrade":
                request.upgrade = value
        if hosts != 1 and (hosts or version == "1.1"):
            raise _Refused(
                400, "more than one Host header" if hosts else "an HTTP/1.1 request needs a Host"
            )
        if codings is not None:
            _check_codings(codings, version, length)
        target = request.target
        if target[:1] != b"/" and target != b"*":
            self._absolute_form(request)

    def _absolute_form(self, request: _Request) -> None:
        # RFC 9112 §3.2.2: the target's authority is the request's Host; only http(s)
        # URLs with a valid authority are taken.
        scheme, sep, rest = request.target.partition(b"://")
        authority, slash, path = rest.partition(b"/")
        if (
            not sep
            or scheme.lower() not in (b"http", b"https")
            or parse_host(authority.decode("latin-1")) is None
        ):
            raise _Refused(400, "malformed request target")
        request.target = slash + path if slash else b"/" + path
        request.headers = [(n, v) for n, v in request.headers if n != b"host"]
        request.headers.append((b"host", authority))

    def on_chunk_header(self) -> None:
        self.progressed = True

    def on_body(self, body: bytes) -> None:
        request = self.parsing
        assert request is not None
        self.progressed = True
        request.body_size += len(body)
        if request.body_size > self.config.max_body_bytes:
            raise _Refused(413, f"request body larger than {self.config.max_body_bytes} bytes")
        request.body.append(body)

    def on_message_complete(self) -> None:
        request = self.parsing
        assert request is not None
        self.progressed = True
        request.complete = True
        request.expects_continue = False
        self.parsing = None
        self.ready.append(request)

    # --- one request --------------------------------------------------------------------

    def _scope(self, request: _Request, kind: str = "http") -> dict[str, Any]:
        target = request.target
        raw_path, _, query = target.partition(b"?")
        if not raw_path.startswith(b"/") and raw_path != b"*":
            # absolute-form (RFC 9112 §3.2.2): keep the path of the URL
            raw_path = httptools.parse_url(target).path or b"/"
        path = raw_path.decode("latin-1")
        if "%" in path:
            path = urllib.parse.unquote(path)
        scope: dict[str, Any] = {
            "type": kind,
            "asgi": _ASGI,
            "http_version": request.http_version,
            "method": request.method,
            "scheme": self.scheme if kind == "http" else self.ws_scheme,
            "path": path,
            "raw_path": raw_path,
            "query_string": query,
            "root_path": "",
            "headers": request.headers,
            "client": self.client,
            "server": self.local,
        }
        return scope

    async def _respond(self, request: _Request) -> bool:
        response = _Response(self, request)
        try:
            await self.server.app(self._scope(request), response.receive, response.send)
        except Exception:
            _log.exception("the ASGI app failed on %s %r", request.method, request.target)
            if not response.started:
                await response.send_error(500, "internal server error")
            return False
        if not response.started:
            await response.send_error(500, "the app sent no response")
            return False
        if not response.finished:
            if not response.chunked:
                return False
            await self._write(b"0\r\n\r\n")
        return response.keep_alive and not self.broken

    async def wait_disconnect(self) -> None:
        # The app has the body and asks again: it is watching for the client to leave.
        # Whatever the client sends meanwhile is the next request: parse and keep it.
        while not self.eof:
            if (
                self.buffered > _MAX_PIPELINED
                or self.upgraded is not None
                or self.deferred is not None
            ):
                await trio.sleep_forever()
            data = await self._read()
            if not data:
                self.eof = True
                return
            self.buffered += len(data)
            try:
                self._feed(data)
            except _Refused:
                # A broken follow-up request: this connection will not serve it.
                self.eof = True
                return


class _TlsConnection(_Connection):
    # The same connection over trio.SSLStream: reads and writes go through the stream
    # (which checkpoints on every call), the handshake happens on the first read, under
    # the keep-alive deadline like any wait for a request.

    def __init__(self, server: _Server, sock: socket.socket) -> None:
        super().__init__(server, sock)
        assert self.config.ssl_context is not None
        self.transport = trio.SocketStream(trio.socket.from_stdlib_socket(sock))
        self.stream = trio.SSLStream(
            self.transport, self.config.ssl_context, server_side=True, https_compatible=True
        )
        # Decrypted bytes may wait inside the stream while the socket is not readable.
        self.wait_first = False
        self.scheme = "https"
        self.ws_scheme = "wss"

    async def _read(self) -> bytes:
        try:
            return bytes(await self.stream.receive_some(_READ_SIZE))
        except (trio.BrokenResourceError, trio.ClosedResourceError):
            # A failed handshake or a client gone: the end of the connection either way.
            return b""

    async def _write(self, data: bytes) -> None:
        if self.broken:
            return
        try:
            with trio.move_on_after(self.config.write_timeout):
                await self.stream.send_all(data)
                return
        except (trio.BrokenResourceError, trio.ClosedResourceError):
            self.broken = True
            return
        self._abort("a write timed out: the client does not read")

    def _abort(self, why: str) -> None:
        _log.info("dropping the connection of %s: %s", _peer(self.client), why)
        self.broken = True
        with contextlib.suppress(OSError):
            self.transport.socket.shutdown(socket.SHUT_RDWR)

    async def _close(self) -> None:
        server = self.server
        server.idle.discard(self)
        server.deadlines.pop(self, None)
        # close_notify, without waiting for the client's (https_compatible).
        with trio.move_on_after(_LINGER_SECONDS):
            await self.stream.aclose()
        self.transport.socket.close()


class _Response:
    __slots__ = (
        "body_sent",
        "chunked",
        "connection",
        "finished",
        "has_length",
        "head",
        "keep_alive",
        "request",
        "started",
        "status",
    )

    def __init__(self, connection: _Connection, request: _Request) -> None:
        self.connection = connection
        self.request = request
        self.keep_alive = request.keep_alive and not connection.server.draining
        self.started = False
        self.finished = False
        self.chunked = False
        self.body_sent = False
        self.status = 200
        self.head = b""
        self.has_length = False

    async def receive(self) -> dict[str, Any]:
        request = self.request
        if not self.body_sent:
            self.body_sent = True
            body = request.body
            joined = body[0] if len(body) == 1 else b"".join(body)
            return {"type": "http.request", "body": joined, "more_body": False}
        await self.connection.wait_disconnect()
        return {"type": "http.disconnect"}

    async def send(self, message: dict[str, Any]) -> None:
        kind = message["type"]
        if kind == "http.response.start":
            if self.started:
                raise RuntimeError("the response has already started")
            self.started = True
            self.status = message["status"]
            self.head = self._head(message.get("headers", ()))
            return
        if kind != "http.response.body":
            raise RuntimeError(f"unexpected ASGI message {kind!r}")
        if not self.started:
            raise RuntimeError("a response body before the response started")
        if self.finished:
            raise RuntimeError("the response has already ended")
        body: bytes = message.get("body", b"")
        more = message.get("more_body", False)
        head = self.head
        if head:
            self.head = b""
            head = self._framing(head, None if more else len(body))
        if not more:
            self.finished = True
        if self.request.method == "HEAD" or self.status in (204, 304):
            body = b""
        elif self.chunked:
            chunk = b"%x\r\n%b\r\n" % (len(body), body) if body else b""
            body = chunk + b"0\r\n\r\n" if not more else chunk
        if head or body:
            await self.connection._write(head + body if head else body)

    def _head(self, headers: Any) -> bytes:
        parts = [_status_line(self.status)]
        self.has_length = False
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
        parts.append(_date_header())
        return b"".join(parts)

    def _framing(self, head: bytes, length: int | None) -> bytes:
        # Content-Length when the app gave one or the body is complete; otherwise
        # chunked (HTTP/1.1), or the end of the connection marks the end (HTTP/1.0).
        status = self.status
        extra = b""
        if self.connection.server.draining:
            self.keep_alive = False
        if not self.has_length and status not in (204, 304) and status >= 200:
            if length is not None:
                extra = b"content-length: %d\r\n" % length
            elif self.request.http_version == "1.1":
                self.chunked = True
                extra = b"transfer-encoding: chunked\r\n"
            else:
                self.keep_alive = False
        if not self.keep_alive:
            extra += b"connection: close\r\n"
        elif self.request.http_version == "1.0":
            extra += b"connection: keep-alive\r\n"
        return head + extra + b"\r\n"

    async def send_error(self, status: int, message: str) -> None:
        self.keep_alive = False
        body = error_body(INVALID_REQUEST if status < 500 else INTERNAL_ERROR, message)
        await self.send(
            {
                "type": "http.response.start",
                "status": status,
                "headers": [
                    (b"content-type", b"application/json"),
                    (b"content-length", b"%d" % len(body)),
                ],
            }
        )
        await self.send({"type": "http.response.body", "body": body})


def _check_codings(codings: bytes, version: str, length: bool) -> None:
    # RFC 9112 §6: chunked, once and last, is the only framing read here.
    if version == "1.0":
        # §6.1: an HTTP/1.0 message with Transfer-Encoding has faulty framing.
        raise _Refused(400, "Transfer-Encoding in an HTTP/1.0 request")
    if length:
        # §6.3 allows a server to reject this outright; it is how requests are smuggled.
        raise _Refused(400, "Content-Length together with Transfer-Encoding")
    parts = [part.strip().lower() for part in codings.split(b",")]
    if parts[-1] != b"chunked" or parts.count(b"chunked") > 1:
        raise _Refused(400, "the last transfer coding must be chunked, and only it")
    if len(parts) > 1:
        raise _Refused(501, "transfer codings other than chunked are not supported")


def _peer(client: tuple[str, int] | None) -> str:
    return f"{client[0]}:{client[1]}" if client else "-"


def _is_websocket(request: _Request) -> bool:
    return (
        request.method == "GET"
        and request.upgrade is not None
        and request.upgrade.lower() == b"websocket"
    )


def _address(address: Any) -> tuple[str, int] | None:
    if isinstance(address, tuple) and len(address) >= 2:
        return str(address[0]), int(address[1])
    return None


# --- WebSocket -------------------------------------------------------------------------


async def _serve_websocket(connection: _Connection, request: _Request, rest: bytes) -> None:
    ws = WSConnection(ConnectionType.SERVER)
    # wsproto checks the handshake itself: give it the request head as it arrived.
    head = [b"GET ", request.target, b" HTTP/1.1\r\n"]
    for name, value in request.headers:
        head += [name, b": ", value, b"\r\n"]
    head.append(b"\r\n")
    try:
        ws.receive_data(b"".join(head) + rest)
        handshake = next(ws.events(), None)
    except WsProtocolError as exc:
        # A missing key or version, say: the client's mistake, a 400 and one line.
        raise _Refused(400, f"malformed WebSocket handshake: {exc}") from None
    if not isinstance(handshake, WsRequest):
        raise _Refused(400, "malformed WebSocket handshake")
    scope = connection._scope(request, "websocket")
    scope["subprotocols"] = list(handshake.subprotocols)
    scope["extensions"] = {}
    socket = _WebSocket(connection, ws)
    try:
        await connection.server.app(scope, socket.receive, socket.send)
    except Exception:
        _log.exception("the ASGI app failed on a WebSocket connection")
    await socket.finish()
    # Wait (briefly) for the client's closing frame before closing TCP: closing with it
    # unread would reset the connection under the client's feet (RFC 6455 §7.1.1).
    connection.linger = True


class _WebSocket:
    def __init__(self, connection: _Connection, ws: Any) -> None:
        self.connection = connection
        self.ws = ws
        self.write_lock = trio.StrictFIFOLock()
        self.connected = False
        self.accepted = False
        self.closed = False
        self.text: list[str] = []
        self.data: list[bytes] = []
        self.size = 0

    async def _send(self, event: Any) -> None:
        data = self.ws.send(event)
        async with self.write_lock:
            await self.connection._write(data)

    async def receive(self) -> dict[str, Any]:
        if not self.connected:
            self.connected = True
            return {"type": "websocket.connect"}
        limit = self.connection.config.max_message_bytes
        while True:
            for event in self.ws.events():
                if isinstance(event, TextMessage | BytesMessage):
                    self.size += len(event.data)
                    if self.size > limit:
                        await self._close(1009, "message too big")
                        return {"type": "websocket.disconnect", "code": 1009}
                    if isinstance(event, TextMessage):
                        self.text.append(event.data)
                    else:
                        self.data.append(bytes(event.data))
                    if event.message_finished:
                        self.size = 0
                        if isinstance(event, TextMessage):
                            text, self.text = "".join(self.text), []
                            return {"type": "websocket.receive", "text": text}
                        data, self.data = b"".join(self.data), []
                        return {"type": "websocket.receive", "bytes": data}
                elif isinstance(event, Ping):
                    await self._send(event.response())
                elif isinstance(event, CloseConnection):
                    if not self.closed:
                        self.closed = True
                        with contextlib.suppress(Exception):
                            await self._send(event.response())
                    return {"type": "websocket.disconnect", "code": event.code}
            if self.closed:
                return {"type": "websocket.disconnect", "code": 1000}
            data = await self.connection._read()
            if not data:
                self.closed = True
                return {"type": "websocket.disconnect", "code": 1006}
            self.ws.receive_data(data)

    async def send(self, message: dict[str, Any]) -> None:
        kind = message["type"]
        if kind == "websocket.accept":
            self.accepted = True
            await self._send(
                AcceptConnection(
                    subprotocol=message.get("subprotocol"),
                    extra_headers=list(message.get("headers", ())),
                )
            )
        elif kind == "websocket.send":
            if self.closed:
                return
            text = message.get("text")
            await self._send(Message(data=text if text is not None else message["bytes"]))
        elif kind == "websocket.close":
            if not self.accepted:
                # A close before the handshake is answered is an HTTP 403 (ASGI).
                self.closed = True
                await self._send(RejectConnection(status_code=403))
            else:
                await self._close(message.get("code", 1000), message.get("reason"))
        else:
            raise RuntimeError(f"unexpected ASGI message {kind!r}")

    async def _close(self, code: int, reason: str | None) -> None:
        if not self.closed:
            self.closed = True
            with contextlib.suppress(Exception):
                await self._send(CloseConnection(code=code, reason=reason))

    async def finish(self) -> None:
        if not self.accepted and not self.closed:
            with contextlib.suppress(Exception):
                await self._send(RejectConnection(status_code=500))
        elif not self.closed:
            await self._close(1000, None)


# --- the server ------------------------------------------------------------------------


async def serve_h1(
    app: App,
    *,
    host: str,
    port: int,
    config: H1Config,
    shutdown: trio.Event,
    graceful_timeout: float,
    sockets: Sequence[socket.socket] | None = None,
    task_status: trio.TaskStatus[tuple[str, int]] = trio.TASK_STATUS_IGNORED,
) -> None:
    """Serve ``app`` over HTTP/1.1 on (host, port), or on ``sockets``, until ``shutdown``.

    Reports the bound (host, port). On shutdown it stops accepting, closes idle
    connections, lets connections finish their response (up to ``graceful_timeout``
    seconds) and returns. Given listening ``sockets``, it accepts on those instead of
    binding; either way it closes the sockets it accepted on when it stops accepting.
    """
    if sockets is None:
        listeners = await trio.open_tcp_listeners(port, host=host, backlog=config.backlog)
        # The accept loop and the connections use the sockets directly (see ``_read``).
        sockets = [socket.socket(fileno=listener.socket.detach()) for listener in listeners]
    bound = sockets[0].getsockname()
    for sock in sockets:
        sock.setblocking(False)
    server = _Server(app, config)
    async with trio.open_nursery() as connections:
        connections.start_soon(server.reap)
        async with trio.open_nursery() as accepting:
            for sock in sockets:
                accepting.start_soon(server.accept, sock, connections)
            task_status.started((str(bound[0]), int(bound[1])))
            await shutdown.wait()
            accepting.cancel_scope.cancel()
        server.drain()
        with trio.move_on_after(graceful_timeout):
            await server.all_closed.wait()
        connections.cancel_scope.cancel()
