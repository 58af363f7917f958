# Serving an ASGI app on hypercorn's trio connections, one connection at a time, each
# contained. The MCP endpoint (``--http-server hypercorn``) and the admin listener are
# served this one way.
#
# ``hypercorn.trio.serve`` runs every connection's ``TCPServer`` in one nursery, so an
# exception that escapes one connection ends the server: a second pipelined request
# after ``Connection: close`` makes h11's error response collide with a write in
# progress, and the BusyResourceError that follows stops the listener (a known upstream
# problem); a WebSocket upgrade followed by a stray byte makes h11 refuse the app's
# answer with LocalProtocolError. So we accept ourselves (``trio.serve_listeners``) and
# run hypercorn's per-connection ``TCPServer`` inside a handler of our own that:
#
# - contains any failure of the connection to that connection (one log line);
# - holds open connections, WebSockets included, to ``max_connections`` (503 and close
#   above it, as the built-in server);
# - gives the connection a stream of ours that bounds each write by ``write_timeout``
#   and a request's arrival, head and body, by ``request_timeout`` (hypercorn bounds
#   idle keep-alive only);
#
# and the ASGI app is wrapped in ``_AppGuard``, which refuses what h11 lets through
# but the built-in server does not (400 or 505 and close): Content-Length with
# Transfer-Encoding, Transfer-Encoding in HTTP/1.0, control characters in a field,
# more than ``max_header_count`` fields, HTTP versions other than 1.x and 2.
#
# HTTP/2 carries many requests on one connection, so there the deadlines are each
# stream's, kept by ``_AppGuard``: a stream's body must arrive within ``request_timeout``
# of its headers (else 408 and the stream ends), and each write of its answer, which
# h2's flow control can hold back while the socket itself is free, within
# ``write_timeout`` (else the connection is dropped, as for HTTP/1.1). A connection
# whose streams have all ended is idle, and hypercorn closes it after the keep-alive
# timeout; one that opens no stream at all is held to ``request_timeout`` by the stream.
#
# hypercorn's own pieces used here (TCPServer, WorkerContext, Lifespan, its event
# classes) are what its ``worker_serve`` uses. The ASGI lifespan runs if asked for (the
# admin app's quart-trio has one; the MCP endpoint's sessions are not the lifespan's).

from __future__ import annotations

import contextlib
import functools
import logging
import math
import re
import socket
import ssl
from collections.abc import Callable, Sequence
from typing import Any, Final, cast

import h11
import trio
from hypercorn.config import Config
from hypercorn.events import Updated
from hypercorn.protocol.h11 import H11Protocol
from hypercorn.trio.lifespan import Lifespan
from hypercorn.trio.tcp_server import TCPServer
from hypercorn.trio.worker_context import WorkerContext
from hypercorn.utils import parse_socket_addr, repr_socket_addr, wrap_app

from ._asgi import AsgiApp, Receive, Scope, Send
from ._http_options import ConnectionLimits
from .h1 import ErrorBody, TurnAwayLog, plain_error_body, turn_away_response

__all__ = ["hypercorn_config", "serve_hypercorn"]

_log = logging.getLogger("mcpactor.http.server")

# A field value may hold HTAB and visible characters, never another control character
# (RFC 9110 §5.5); h11 refuses only NUL, CR and LF.
_CONTROL: Final = re.compile(rb"[\x00-\x08\x0a-\x1f\x7f]")
_LINGER_SECONDS: Final = 1.0


def _no_abort() -> None:
    pass


class _Watch:
    # What the guard stream and the ASGI wrapper share about one connection.
    __slots__ = ("abort", "h2", "scope", "serving")

    def __init__(self) -> None:
        #: the request being read has reached the app with its whole body
        self.serving = False
        #: HTTP/2: many requests at once, no per-request deadline on the connection
        self.h2 = False
        #: the cancel scope of the read in progress (its deadline is the request's)
        self.scope: trio.CancelScope | None = None
        #: drops the connection (a peer that does not read)
        self.abort: Callable[[], None] = _no_abort

    def disarm(self) -> None:
        self.serving = True
        if self.scope is not None:
            self.scope.deadline = math.inf


class _GuardStream(trio.abc.HalfCloseableStream):
    # The connection's stream as hypercorn sees it, with our deadlines on it.

    def __init__(self, inner: Any, watch: _Watch, request_timeout: float, write_timeout: float):
        self._inner = inner
        # hypercorn may write an error response, or EOF, while a response is going out
        # (the BusyResourceError above): writes wait for each other instead.
        self._send_lock = trio.Lock()
        self._watch = watch
        self._request_timeout = request_timeout
        self._write_timeout = write_timeout
        self._deadline = math.inf

    def __getattr__(self, name: str) -> Any:
        # do_handshake, selected_alpn_protocol, transport_stream, socket: hypercorn tells
        # TLS from plain streams by which of these exist.
        return getattr(self._inner, name)

    def idle(self) -> None:
        self._deadline = math.inf
        self._watch.serving = False

    async def receive_some(self, max_bytes: int | None = None) -> bytes | bytearray:
        watch = self._watch
        with trio.CancelScope(deadline=math.inf if watch.serving else self._deadline) as scope:
            watch.scope = scope
            try:
                data: bytes | bytearray = await self._inner.receive_some(max_bytes)
            finally:
                watch.scope = None
        if scope.cancelled_caught:
            _log.info("a request did not arrive in %s s: closing", self._request_timeout)
            return b""
        if data and not watch.serving and not watch.h2 and self._deadline == math.inf:
            # The first bytes of a request: all of it must be here in time.
            self._deadline = trio.current_time() + self._request_timeout
        return data

    async def send_all(self, data: bytes | bytearray | memoryview) -> None:
        with trio.move_on_after(self._write_timeout):
            async with self._send_lock:
                await self._inner.send_all(data)
            return
        _log.info("a write timed out: the client does not read; dropping the connection")
        self.abort()
        raise trio.BrokenResourceError("the client did not read for too long")

    def abort(self) -> None:
        """Drop the connection: the read in progress ends too, so hypercorn winds it down."""
        sock = getattr(self._inner, "socket", None)
        if sock is None:
            sock = getattr(getattr(self._inner, "transport_stream", None), "socket", None)
        if sock is not None:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)

    async def wait_send_all_might_not_block(self) -> None:
        await self._inner.wait_send_all_might_not_block()

    # hypercorn closes the connection from whichever task saw it end, often an app's
    # task that its framework is cancelling (quart-trio cancels its own nursery once the
    # answer is out): the close must happen anyway, or the connection stays open after
    # ``Connection: close`` with nothing left to end it. Shielded, and bounded.

    async def send_eof(self) -> None:
        with trio.CancelScope(shield=True), trio.move_on_after(self._write_timeout):
            async with self._send_lock:
                await self._inner.send_eof()

    async def aclose(self) -> None:
        with trio.CancelScope(shield=True), trio.move_on_after(self._write_timeout):
            await self._inner.aclose()


class _ClosingConnection(h11.Connection):
    # h11's server side, reading nothing past a request that closes the connection.
    #
    # Once a request or its answer says ``Connection: close``, h11 expects the peer's
    # EOF and calls any further bytes a protocol error; hypercorn answers that error
    # with a bare 400 if the app has not started its answer yet (the app's answer is
    # then lost: the client gets a 400 for a good request), or drops the connection
    # while the answer is being written (the client gets nothing). Bytes pipelined
    # behind such a request are what RFC 9112 §9.6 says a server must not process:
    # they are left unread here, and the connection closes once the answer is out.

    def next_event(self) -> Any:
        if self.their_state is h11.MUST_CLOSE and self.trailing_data[0]:
            return h11.NEED_DATA
        return super().next_event()


class _TCPServer(TCPServer):
    # hypercorn's connection, telling our stream when a response is done, and ending
    # its keep-alive timer once there is nothing left to read.
    #
    # hypercorn keeps that timer running in the connection's task group while no
    # request is in progress, and the group waits for it: a connection the client
    # closed, or that was refused (400 for a malformed head), would stay one of the
    # open connections for the whole keep-alive timeout after its socket was closed,
    # and a burst of them would fill ``max_connections``.

    _reading = True

    async def protocol_send(self, event: Any) -> None:
        if isinstance(event, Updated) and event.idle:
            cast("_GuardStream", self.stream).idle()
            if not self._reading:
                return
        await super().protocol_send(event)

    async def _read_data(self) -> None:
        protocol = self.protocol.protocol
        if isinstance(protocol, H11Protocol) and type(protocol.connection) is h11.Connection:
            # Nothing has been read yet: the connection h11 starts with is replaced.
            protocol.connection = _ClosingConnection(
                h11.SERVER, max_incomplete_event_size=self.config.h11_max_incomplete_size
            )
        await super()._read_data()
        self._reading = False
        await self.idle_task.stop()


class _AppGuard:
    # The app as hypercorn calls it: framing checks first, then the deadlines kept.

    def __init__(
        self,
        app: AsgiApp,
        watches: dict[Any, _Watch],
        limits: ConnectionLimits,
        error_body: ErrorBody,
    ) -> None:
        self.app = app
        self.watches = watches
        self.limits = limits
        self.error_body = error_body
        self.max_fields = limits.max_header_count
        self.max_head = limits.max_head_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        kind = scope["type"]
        if kind not in ("http", "websocket"):
            await self.app(scope, receive, send)
            return
        watch = self.watches.get(scope.get("client"))
        version = scope.get("http_version", "1.1")
        # "2" is HTTP/2's own framing; h11 reports "2.0" from an HTTP/1 request line.
        h2 = version == "2"
        if watch is not None and h2:
            # HTTP/2 carries many requests at once: no deadline per connection read.
            watch.h2 = True
            watch.disarm()
        refusal = self._refusal(scope, version)
        if refusal is not None:
            status, why = refusal
            if kind == "http":
                # (h2 leaves the Connection field out: HTTP/2 has none.)
                await self._reply(send, status, why, close=True)
            else:
                await send({"type": "websocket.close", "code": 1002})
            return
        if h2:
            await self._serve_stream(scope, receive, send, watch)
            return
        if watch is None or kind == "websocket":
            if watch is not None:
                watch.disarm()
            await self.app(scope, receive, send)
            return

        async def watched_receive() -> dict[str, Any]:
            message = await receive()
            if not message.get("more_body", False):
                watch.disarm()
            return message

        async def watched_send(message: dict[str, Any]) -> None:
            if message["type"] == "http.response.start":
                watch.disarm()
            await send(message)

        await self.app(scope, watched_receive, watched_send)

    async def _serve_stream(
        self, scope: Scope, receive: Receive, send: Send, watch: _Watch | None
    ) -> None:
        # One HTTP/2 stream, with the deadlines HTTP/1.1 keeps per connection.
        limits = self.limits
        http = scope["type"] == "http"
        answered = stalled = False
        arrival = trio.current_time() + limits.request_timeout if http else math.inf
        with trio.CancelScope(deadline=arrival) as stream:

            async def timed_receive() -> dict[str, Any]:
                message = await receive()
                if message["type"] != "http.request" or not message.get("more_body", False):
                    # The whole body is in (or the client is gone): the answer may take
                    # as long as it takes.
                    stream.deadline = math.inf
                return message

            async def timed_send(message: dict[str, Any]) -> None:
                nonlocal answered, stalled
                if message["type"] == "http.response.start":
                    answered = True
                    stream.deadline = math.inf
                with trio.move_on_after(limits.write_timeout):
                    await send(message)
                    return
                stalled = True
                _log.info("an HTTP/2 write timed out: the client does not read; dropping it")
                if watch is not None:
                    watch.abort()
                # The app's write is blocked on flow control that will not open: it ends
                # here, or the connection could never wind down.
                stream.cancel()
                await trio.lowlevel.checkpoint()

            await self.app(scope, timed_receive, timed_send)
        if stream.cancelled_caught and not stalled and not answered:
            _log.info("an HTTP/2 request did not arrive in %s s", limits.request_timeout)
            why = f"the request did not arrive in full within {limits.request_timeout:g} s"
            with trio.move_on_after(limits.write_timeout):
                await self._reply(send, 408, why, close=False)

    async def _reply(self, send: Send, status: int, why: str, *, close: bool) -> None:
        content_type, body = self.error_body(status, why)
        headers = [(b"content-length", b"%d" % len(body)), (b"content-type", content_type)]
        if close:
            headers.append((b"connection", b"close"))
        await send({"type": "http.response.start", "status": status, "headers": headers})
        await send({"type": "http.response.body", "body": body})

    def _refusal(self, scope: Scope, version: str) -> tuple[int, str] | None:
        if version not in ("1.0", "1.1", "2"):
            return 505, f"HTTP/{version[:10]} is not supported"
        headers = scope["headers"]
        if len(headers) > self.max_fields:
            return 431, f"more than {self.max_fields} header fields"
        # h11 bounds only a head that is still incomplete: one that arrives whole in a
        # read can be larger, so the built-in server's limits are checked here.
        target = len(scope.get("raw_path", b"")) + len(scope.get("query_string", b""))
        if target > self.max_head:
            return 414, f"request target longer than {self.max_head} bytes"
        size = target
        length = coded = False
        for name, value in headers:
            size += len(name) + len(value) + 4
            if name == b"content-length":
                length = True
            elif name == b"transfer-encoding":
                coded = True
            if _CONTROL.search(value):
                return 400, "a control character in a header field"
        if size > self.max_head:
            return 431, f"request head larger than {self.max_head} bytes"
        if coded and (length or version == "1.0"):
            return 400, (
                "Content-Length together with Transfer-Encoding"
                if length
                else "Transfer-Encoding in an HTTP/1.0 request"
            )
        return None


class _Open:
    __slots__ = ("count", "turn_away_bytes", "turn_away_log")

    def __init__(self, error_body: ErrorBody) -> None:
        self.count = 0
        self.turn_away_log = TurnAwayLog()
        #: the canned 503, the built-in server's
        self.turn_away_bytes = turn_away_response(error_body)


def hypercorn_config(
    limits: ConnectionLimits,
    binds: Sequence[str],
    *,
    graceful_timeout: float,
    backlog: int = 1024,
) -> Config:
    """A hypercorn ``Config`` binding ``binds`` (hypercorn's forms) with ``limits``' timeouts."""
    config = Config()
    config.bind = list(binds)
    config.accesslog = None
    config.backlog = backlog
    config.errorlog = _log
    config.graceful_timeout = graceful_timeout
    config.include_server_header = False
    config.keep_alive_timeout = limits.keep_alive_timeout
    # h11 counts the head it has not parsed yet against this (400 above it).
    config.h11_max_incomplete_size = limits.max_head_bytes
    config.h2_max_header_list_size = limits.max_head_bytes
    config.ssl_handshake_timeout = limits.request_timeout
    return config


async def serve_hypercorn(
    app: AsgiApp,
    config: Config,
    limits: ConnectionLimits,
    shutdown: trio.Event,
    *,
    error_body: ErrorBody = plain_error_body,
    lifespan: bool = False,
    task_status: trio.TaskStatus[list[str]] = trio.TASK_STATUS_IGNORED,
) -> None:
    """Serve ``app`` with hypercorn's trio connections until ``shutdown`` is set.

    Reports the bound addresses as URLs. On shutdown it stops accepting, lets idle
    connections go, and gives the others ``config.graceful_timeout`` seconds. The
    responses it writes itself have ``error_body``'s bodies; with ``lifespan``, the
    app's ASGI lifespan starts before the first connection and ends after the last.
    """
    watches: dict[Any, _Watch] = {}
    asgi = wrap_app(
        cast("Any", _AppGuard(app, watches, limits, error_body)), config.wsgi_max_body_size, "asgi"
    )
    context = WorkerContext(None)
    state: dict[str, Any] = {}
    opened = _Open(error_body)
    ssl_context = config.create_ssl_context()
    listeners, binds = _listeners(config, ssl_context)

    async def handle(stream: Any) -> None:
        if opened.count >= limits.max_connections:
            await _turn_away(stream, opened, ssl_context is not None)
            return
        opened.count += 1
        transport = getattr(stream, "transport_stream", stream)
        key: Any = None
        watch = _Watch()
        try:
            with contextlib.suppress(OSError):
                sock = transport.socket
                key = parse_socket_addr(sock.family, sock.getpeername())
            if key is not None:
                watches[key] = watch
            guarded = _GuardStream(stream, watch, limits.request_timeout, limits.write_timeout)
            watch.abort = guarded.abort
            await _TCPServer(asgi, config, context, cast("Any", state), cast("Any", guarded)).run()
        except Exception as exc:
            # One connection's failure is never the server's (invariant 10).
            _log.warning("an HTTP connection failed inside hypercorn: %s", _summary(exc))
            with contextlib.suppress(Exception), trio.CancelScope(shield=True):
                await stream.aclose()
        finally:
            opened.count -= 1
            if key is not None and watches.get(key) is watch:
                del watches[key]

    async with trio.open_nursery() as lifespan_nursery:
        spans = Lifespan(asgi, config, state) if lifespan else None
        if spans is not None:
            await lifespan_nursery.start(spans.handle_lifespan)
            await spans.wait_for_startup()
        async with trio.open_nursery() as connections:
            async with trio.open_nursery() as accepting:
                accepting.start_soon(
                    functools.partial(
                        trio.serve_listeners, handle, listeners, handler_nursery=connections
                    )
                )
                task_status.started(binds)
                await shutdown.wait()
                accepting.cancel_scope.cancel()
            # Idle connections close, busy ones finish (hypercorn checks this per request).
            await context.terminated.set()
            connections.cancel_scope.deadline = trio.current_time() + config.graceful_timeout
        if spans is not None:
            await spans.wait_for_shutdown()
        lifespan_nursery.cancel_scope.cancel()


def _listeners(
    config: Config, ssl_context: ssl.SSLContext | None
) -> tuple[list[trio.abc.Listener[Any]], list[str]]:
    # The bound sockets of ``config`` as trio listeners (TLS ones wrapped), with their URLs.
    sockets = config.create_sockets()
    listeners: list[trio.abc.Listener[Any]] = []
    binds = []
    for sock in [*sockets.secure_sockets, *sockets.insecure_sockets]:
        sock.listen(config.backlog)
        listener: trio.abc.Listener[Any] = trio.SocketListener(
            trio.socket.from_stdlib_socket(sock)
        )
        secure = sock in sockets.secure_sockets
        if secure:
            assert ssl_context is not None
            listener = trio.SSLListener(listener, ssl_context, https_compatible=True)
        listeners.append(listener)
        scheme = "https" if secure else "http"
        binds.append(f"{scheme}://{repr_socket_addr(sock.family, sock.getsockname())}")
    return listeners, binds


async def _turn_away(stream: Any, opened: _Open, tls: bool) -> None:
    opened.turn_away_log.note(opened.count)
    with contextlib.suppress(Exception):
        if not tls:
            # Over TLS a 503 would cost a handshake: the connection is just closed.
            with trio.move_on_after(_LINGER_SECONDS):
                await stream.send_all(opened.turn_away_bytes)
                await stream.send_eof()
                # Read and drop what the client sent, so that closing does not reset the
                # connection under its answer.
                while await stream.receive_some(65536):
                    pass
    with contextlib.suppress(Exception), trio.CancelScope(shield=True):
        await stream.aclose()


def _summary(exc: BaseException) -> str:
    # One line: the exception types and first messages, bounded.
    if isinstance(exc, BaseExceptionGroup):
        parts = [_summary(inner) for inner in exc.exceptions[:3]]
        return f"{type(exc).__name__}({'; '.join(parts)})"[:300]
    return f"{type(exc).__name__}: {str(exc)[:200]}"
