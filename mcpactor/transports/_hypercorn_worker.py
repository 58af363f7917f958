# Running hypercorn's trio worker one connection at a time, each contained.
#
# ``hypercorn.trio.serve`` runs every connection's ``TCPServer`` in one nursery, so an
# exception that escapes one connection ends the server: a second pipelined request
# after ``Connection: close`` makes h11's error response collide with a write in
# progress, and the BusyResourceError that follows stops the listener (a known upstream
# problem). So we accept ourselves (``trio.serve_listeners``) and run hypercorn's
# per-connection ``TCPServer`` inside a handler of our own that:
#
# - contains any failure of the connection to that connection (one log line);
# - holds open connections, WebSockets included, to ``max_connections`` (503 and close
#   above it, as the built-in server);
# - gives the connection a stream of ours that bounds each write by ``write_timeout``
#   and a request's arrival, head and body, by ``request_timeout`` (hypercorn bounds
#   idle keep-alive only);
#
# and the ASGI app is wrapped in ``_FramingGuard``, which refuses what h11 lets through
# but the built-in server does not (400 or 505 and close): Content-Length with
# Transfer-Encoding, Transfer-Encoding in HTTP/1.0, control characters in a field,
# more than ``max_header_count`` fields, HTTP versions other than 1.x and 2.
#
# hypercorn's own pieces used here (TCPServer, WorkerContext, its event classes) are
# what its ``worker_serve`` uses; no ASGI lifespan runs (the app has none to speak of).

from __future__ import annotations

import contextlib
import functools
import logging
import math
import re
import socket
from typing import TYPE_CHECKING, Any, Final, cast

import trio
from hypercorn.config import Config
from hypercorn.events import Updated
from hypercorn.trio.tcp_server import TCPServer
from hypercorn.trio.worker_context import WorkerContext
from hypercorn.utils import parse_socket_addr, repr_socket_addr, wrap_app

from .._exceptions import INTERNAL_ERROR, INVALID_REQUEST
from ._asgi import Receive, Scope, Send, http_error_body, reply_error
from .h1 import TurnAwayLog, turn_away_response

if TYPE_CHECKING:
    from ._http import McpHttpApp

__all__ = ["serve_hypercorn"]

_log = logging.getLogger("mcpactor.http.server")

# A field value may hold HTAB and visible characters, never another control character
# (RFC 9110 §5.5); h11 refuses only NUL, CR and LF.
_CONTROL: Final = re.compile(rb"[\x00-\x08\x0a-\x1f\x7f]")
_LINGER_SECONDS: Final = 1.0


class _Watch:
    # What the guard stream and the ASGI wrapper share about one connection.
    __slots__ = ("h2", "scope", "serving")

    def __init__(self) -> None:
        #: the request being read has reached the app with its whole body
        self.serving = False
        #: HTTP/2: many requests at once, no per-request deadline on the connection
        self.h2 = False
        #: the cancel scope of the read in progress (its deadline is the request's)
        self.scope: trio.CancelScope | None = None

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
        self._shut_down()
        raise trio.BrokenResourceError("the client did not read for too long")

    def _shut_down(self) -> None:
        # Ends the read in progress too, so that hypercorn winds the connection down.
        sock = getattr(self._inner, "socket", None)
        if sock is None:
            sock = getattr(getattr(self._inner, "transport_stream", None), "socket", None)
        if sock is not None:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)

    async def wait_send_all_might_not_block(self) -> None:
        await self._inner.wait_send_all_might_not_block()

    async def send_eof(self) -> None:
        async with self._send_lock:
            await self._inner.send_eof()

    async def aclose(self) -> None:
        await self._inner.aclose()


class _TCPServer(TCPServer):
    # hypercorn's connection, telling our stream when a response is done.

    async def protocol_send(self, event: Any) -> None:
        if isinstance(event, Updated) and event.idle:
            cast("_GuardStream", self.stream).idle()
        await super().protocol_send(event)


class _FramingGuard:
    # The app as hypercorn calls it: framing checks first, then the watch is told.

    def __init__(self, app: McpHttpApp, watches: dict[Any, _Watch]) -> None:
        self.app = app
        self.watches = watches
        self.max_fields = app.options.max_header_count
        self.max_head = app.options.max_head_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        kind = scope["type"]
        if kind not in ("http", "websocket"):
            await self.app(scope, receive, send)
            return
        watch = self.watches.get(scope.get("client"))
        version = scope.get("http_version", "1.1")
        if watch is not None and version not in ("1.0", "1.1"):
            # HTTP/2 carries many requests at once: no deadline per connection read.
            watch.h2 = True
            watch.disarm()
        refusal = self._refusal(scope, version)
        if refusal is not None:
            status, why = refusal
            if kind == "http":
                code = INVALID_REQUEST if status < 500 else INTERNAL_ERROR
                await reply_error(send, status, code, why, close=True)
            else:
                await send({"type": "websocket.close", "code": 1002})
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


class _Limits:
    __slots__ = ("open", "turn_away_bytes", "turn_away_log")

    def __init__(self) -> None:
        self.open = 0
        self.turn_away_log = TurnAwayLog()
        #: the canned 503, the built-in server's
        self.turn_away_bytes = turn_away_response(http_error_body)


async def serve_hypercorn(
    app: McpHttpApp,
    config: Config,
    shutdown: trio.Event,
    *,
    task_status: trio.TaskStatus[list[str]] = trio.TASK_STATUS_IGNORED,
) -> None:
    """Serve ``app`` with hypercorn's trio connections until ``shutdown`` is set.

    Reports the bound addresses as URLs. On shutdown it stops accepting, lets idle
    connections go, and gives the others ``config.graceful_timeout`` seconds.
    """
    options = app.options
    watches: dict[Any, _Watch] = {}
    asgi = wrap_app(cast("Any", _FramingGuard(app, watches)), config.wsgi_max_body_size, "asgi")
    context = WorkerContext(None)
    limits = _Limits()
    sockets = config.create_sockets()
    ssl_context = config.create_ssl_context()
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

    async def handle(stream: Any) -> None:
        if limits.open >= options.max_connections:
            await _turn_away(stream, limits, ssl_context is not None)
            return
        limits.open += 1
        transport = getattr(stream, "transport_stream", stream)
        key: Any = None
        watch = _Watch()
        try:
            with contextlib.suppress(OSError):
                sock = transport.socket
                key = parse_socket_addr(sock.family, sock.getpeername())
            if key is not None:
                watches[key] = watch
            guarded = _GuardStream(stream, watch, options.request_timeout, options.write_timeout)
            await _TCPServer(asgi, config, context, cast("Any", {}), cast("Any", guarded)).run()
        except Exception as exc:
            # One connection's failure is never the server's (invariant 3).
            _log.warning("an HTTP connection failed inside hypercorn: %s", _summary(exc))
            with contextlib.suppress(Exception), trio.CancelScope(shield=True):
                await stream.aclose()
        finally:
            limits.open -= 1
            if key is not None and watches.get(key) is watch:
                del watches[key]

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


async def _turn_away(stream: Any, limits: _Limits, tls: bool) -> None:
    limits.turn_away_log.note(limits.open)
    with contextlib.suppress(Exception):
        if not tls:
            # Over TLS a 503 would cost a handshake: the connection is just closed.
            with trio.move_on_after(_LINGER_SECONDS):
                await stream.send_all(limits.turn_away_bytes)
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
