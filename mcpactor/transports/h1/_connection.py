# One HTTP/1.1 connection on trio: read the socket, feed the protocol (``_protocol``),
# hand each request to the app as an ``Exchange`` (the request, and the way to answer
# it), write what its framing gives. Generic: nothing here knows what the app serves.
# An app with an exchange handler is called with the exchange; any other ASGI app gets
# the exchange's ASGI face (``asgi_handler``), and WebSocket upgrades always go to the
# ASGI app.
#
# Why our own server: under hypercorn's trio worker most of the CPU a bare ASGI app
# costs per request is hypercorn's (docs/performance.md has the figures, and this server
# is kept only while ``bench/run.sh`` shows it clearly ahead): a keep-alive timer task
# stopped and restarted per request, a task and a memory channel per request for the
# app, a lock and a shielded cancel scope around every socket write, one write per ASGI
# message, and h11 parsing in pure Python. So:
#
# - one task per connection and none per request: the connection's task parses, calls
#   the app and writes; the exchange reads the socket itself only when the app waits for
#   the client to leave (an SSE stream);
# - a complete response (the common case) goes out in one ``send_all``: head and body;
# - the keep-alive and request deadlines are one cancel scope per connection, which the
#   listener's reaper cancels when the deadline the connection last set has passed;
# - plain sockets are read and written directly (trio's wrappers add a reschedule to
#   every call that succeeds at once); TLS goes through trio.SSLStream.
#
# Every read and write loop reaches a trio checkpoint at least every few operations, so
# one busy client cannot starve the others or the deadline reaper; a write that waits
# on a client that does not read gives up after ``write_timeout`` and drops the
# connection.

from __future__ import annotations

import contextlib
import logging
import socket
import time
from collections.abc import Awaitable, Callable, Iterable
from typing import Any, Final

import trio

from ._config import ErrorBody, H1Config, IntakeGate
from ._protocol import (
    CONTINUE,
    NEED_DATA,
    Event,
    H1Protocol,
    ProtocolError,
    Request,
    Upgrade,
    error_response,
)
from ._websocket import serve_websocket

__all__ = [
    "App",
    "Connection",
    "Exchange",
    "Handler",
    "ServerState",
    "asgi_handler",
    "date_header",
    "peer",
]

_log = logging.getLogger("mcpactor.http.server")
_access = logging.getLogger("mcpactor.access")

App = Callable[[dict[str, Any], Any, Any], Awaitable[None]]
#: an app's entry for one request: it answers through the exchange
Handler = Callable[["Exchange"], Awaitable[None]]

READ_SIZE: Final = 65536
_ASGI: Final = {"version": "3.0", "spec_version": "2.3"}
_JSON: Final = b"application/json"
_CONTINUE: Final = b"HTTP/1.1 100 Continue\r\n\r\n"
# Pipelined requests read while the app waits for a disconnect: past this many bytes the
# client is clearly still there, so stop reading until the current response is done.
_MAX_PIPELINED: Final = 1024 * 1024
# Reads and writes that complete at once between two checkpoints (a client that keeps
# sending, or pipelines and never makes us wait, must not keep the other connections
# and the deadline reaper from running).
OPS_PER_CHECKPOINT: Final = 16
# Closing after a refusal: how long, and how much, to read and drop first.
LINGER_SECONDS: Final = 1.0
LINGER_BYTES: Final = 1024 * 1024
#: seconds a draining server waits for the first request of a connection it accepted
#: before it began draining (the client sends it right away, unless it only preconnected)
DRAIN_FIRST_REQUEST: Final = 1.0

_date = [0, b""]


def date_header() -> bytes:
    """The Date header line (RFC 9110 §6.6.1), formatted once a second.

    The server's deadline reaper keeps ``ServerState.date`` from it: responses read that.
    """
    now = int(time.time())
    if now != _date[0]:
        _date[0] = now
        stamp = time.strftime("%a, %d %b %Y %H:%M:%S GMT", time.gmtime(now))
        _date[1] = b"date: " + stamp.encode() + b"\r\n"
    return _date[1]  # type: ignore[return-value]


class ServerState:
    """What every connection of one server shares: the app, the config, the deadlines."""

    __slots__ = (
        "all_answered",
        "all_closed",
        "app",
        "config",
        "connections",
        "date",
        "deadlines",
        "draining",
        "error_body",
        "fresh",
        "handle",
        "idle",
        "intake",
        "limits",
        "unanswered",
    )

    def __init__(
        self,
        app: App,
        config: H1Config,
        *,
        error_body: ErrorBody,
        intake: IntakeGate | None = None,
        handle: Handler | None = None,
    ) -> None:
        #: the ASGI app: WebSocket upgrades, and requests when there is no ``handle``
        self.app = app
        #: what each request is handed to
        self.handle = handle if handle is not None else asgi_handler(app)
        self.config = config
        self.limits = config.limits()
        self.error_body = error_body
        #: new requests wait on this while it is closed
        self.intake = intake
        self.draining = False
        #: connections waiting for a request (or the rest of one), by deadline
        self.deadlines: dict[Connection, float] = {}
        #: of those, the ones kept alive after an answer with nothing read yet: closed at
        #: once when draining
        self.idle: set[Connection] = set()
        #: connections open that have not had an answer yet: their client has sent, or is
        #: about to send, a request, so draining serves it rather than close them
        self.unanswered = 0
        #: of those, the ones with nothing read yet: their deadline is shortened to
        #: ``DRAIN_FIRST_REQUEST`` when draining
        self.fresh: set[Connection] = set()
        #: set while every open connection has had an answer
        self.all_answered = trio.Event()
        self.all_answered.set()
        #: connections open (the listener counts them in, each counts itself out)
        self.connections = 0
        #: set while no connection is open
        self.all_closed = trio.Event()
        self.all_closed.set()
        #: the Date header line responses carry (the reaper keeps it current)
        self.date = date_header()


class Connection:
    """One plain TCP connection: its requests, served one after the other."""

    def __init__(self, server: ServerState, sock: socket.socket) -> None:
        self.server = server
        self.config = server.config
        # The run's clock, kept: every request reads it for its deadlines, and
        # trio.current_time is three calls down to it.
        self.clock = trio.lowlevel.current_clock()
        self.sock = sock
        self.fd = sock.fileno()
        self.protocol = H1Protocol(server.limits, Exchange)
        #: bytes read while the app waited for a disconnect
        self.buffered = 0
        self.eof = False
        #: a follow-up request broke while a response streamed: it gets no answer
        self.abandoned = False
        self.broken = False
        self.linger = False
        #: it has answered a request (or been upgraded): idle from now on between requests
        self.answered = False
        self.unyielded = 0
        #: wait for the socket to be readable before reading the next request
        self.wait_first = True
        self.scheme = "http"
        self.ws_scheme = "ws"
        #: cancelled by the server when the connection outstays a deadline or drains
        self.timer = trio.CancelScope()
        try:
            self.client: tuple[str, int] | None = _address(sock.getpeername())
            self.local: tuple[str, int] | None = _address(sock.getsockname())
        except OSError:
            self.client = self.local = None

    async def serve(self) -> None:
        """Serve requests until the connection ends, then close it.

        A failure of the connection is its own: logged, never raised to the server.
        """
        server = self.server
        try:
            with self.timer:
                while True:
                    exchange = await self._next_request()
                    if exchange is None:
                        return
                    if isinstance(exchange, Upgrade):
                        self._answered()
                        await self._upgrade(exchange)
                        return
                    exchange.connection = self
                    exchange.client = self.client
                    exchange.arrived = self.clock.current_time()
                    if server.draining:
                        exchange.keep_alive = False
                    try:
                        await server.handle(exchange)
                    except Exception:
                        _log.exception("the app failed on %s %r", exchange.method, exchange.target)
                        if not exchange.started:
                            await exchange.fail(500, "internal server error")
                        return
                    if not exchange.started:
                        await exchange.fail(500, "the app sent no response")
                        return
                    if not exchange.finished:
                        if not exchange.chunked:
                            return
                        await self._write(exchange.end())
                    if not self.answered:
                        self._answered()
                    if not exchange.keep_alive or self.broken:
                        return
                    # Not kept alive (head, body) while the connection waits for the next.
                    del exchange
                    if server.draining:
                        return
        except ProtocolError as error:
            await self._refuse(error)
        except Exception:
            _log.exception("an HTTP connection failed")
        finally:
            try:
                with trio.CancelScope(shield=True):
                    await self._close()
            finally:
                if not self.answered:
                    self._answered()
                server.connections -= 1
                if not server.connections:
                    server.all_closed.set()

    def _answered(self) -> None:
        self.answered = True
        server = self.server
        server.unanswered -= 1
        if not server.unanswered:
            server.all_answered.set()

    async def _next_request(self) -> Exchange | Upgrade | None:
        protocol = self.protocol
        try:
            event: Event = protocol.next_event()
        except ProtocolError:
            if self.abandoned:
                return None
            raise
        if isinstance(event, Exchange):
            # Pipelined: already here.
            return event
        server = self.server
        config = self.config
        waiting = protocol.idle
        if waiting and self.answered:
            # Kept alive: nothing of a next request is here, so a draining server may
            # close it. A new connection waits for its request, which draining serves.
            if server.draining:
                return None
            server.idle.add(self)
        timeout = config.keep_alive_timeout if waiting else config.request_timeout
        if waiting and not self.answered:
            server.fresh.add(self)
            if server.draining:
                timeout = min(timeout, DRAIN_FIRST_REQUEST)
        server.deadlines[self] = self.clock.current_time() + timeout
        try:
            while True:
                if event is CONTINUE:
                    await self._write(_CONTINUE)
                elif event is not NEED_DATA:
                    break
                elif self.eof:
                    return None
                else:
                    if waiting and self.wait_first:
                        # Nothing of the next request is here yet, and the client sends
                        # it only after reading our last answer: a read now would almost
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
                        server.fresh.discard(self)
                        server.deadlines[self] = self.clock.current_time() + config.request_timeout
                        intake = server.intake
                        if intake is not None and intake.closed:
                            await intake.wait_turn()
                    protocol.receive_data(data)
                event = protocol.next_event()
        finally:
            server.idle.discard(self)
            server.fresh.discard(self)
            server.deadlines.pop(self, None)
        self.buffered = 0
        return event  # type: ignore[return-value]

    async def _read(self) -> bytes:
        # Straight to the socket, parking only when nothing is there.
        sock = self.sock
        # A read that never has to wait is no checkpoint either: one now and then, taken
        # before the read, where a cancellation loses no bytes (a stream's writer that
        # watches for its client is cancelled by each item it is sent).
        self.unyielded += 1
        if self.unyielded >= OPS_PER_CHECKPOINT:
            self.unyielded = 0
            await trio.lowlevel.checkpoint()
        while True:
            try:
                data = sock.recv(READ_SIZE)
            except BlockingIOError:
                pass
            except OSError:
                return b""
            else:
                return data
            # Parked outside the ``except`` block: a task suspended inside one keeps the
            # exception and its traceback alive, for every idle connection.
            await trio.lowlevel.wait_readable(self.fd)
            self.unyielded = 0

    async def _write(self, data: bytes) -> None:
        if self.broken:
            return
        sock = self.sock
        view: bytes | memoryview = data  # a view only if a write is partial
        deadline: float | None = None
        try:
            while True:
                try:
                    sent = sock.send(view)
                except BlockingIOError:
                    sent = -1
                if sent < 0:
                    if deadline is None:
                        deadline = self.clock.current_time() + self.config.write_timeout
                    with trio.move_on_at(deadline):
                        await trio.lowlevel.wait_writable(self.fd)
                        self.unyielded = 0
                        continue
                    self._abort("a write timed out: the client does not read")
                    return
                if sent == len(view):
                    break
                view = (view if type(view) is memoryview else memoryview(view))[sent:]
        except OSError:
            # The client left; what the app still sends goes nowhere (it hears of the
            # disconnect through ``receive``).
            self.broken = True
            return
        # A write that never had to wait is no checkpoint: give the other tasks a turn
        # now and then, as one would, but not once per response.
        self.unyielded += 1
        if self.unyielded >= OPS_PER_CHECKPOINT:
            self.unyielded = 0
            await trio.lowlevel.checkpoint()

    def _abort(self, why: str) -> None:
        # Drop the connection: later writes go nowhere, and a read waiting on the socket
        # (the app watching for a disconnect) ends, so the app hears of it.
        _log.info("dropping the connection of %s: %s", peer(self.client), why)
        self.broken = True
        with contextlib.suppress(OSError):
            self.sock.shutdown(socket.SHUT_RDWR)

    async def _close(self) -> None:
        server = self.server
        server.idle.discard(self)
        server.fresh.discard(self)
        server.deadlines.pop(self, None)
        sock = self.sock
        if self.linger and not self.eof and not self.broken:
            # The client may still be sending what we refused to read: closing now would
            # reset the connection and could destroy the answer before it reads it.
            with contextlib.suppress(OSError), trio.move_on_after(LINGER_SECONDS):
                sock.shutdown(socket.SHUT_WR)
                drained = 0
                while drained < LINGER_BYTES:
                    data = await self._read()
                    if not data:
                        break
                    drained += len(data)
        trio.lowlevel.notify_closing(sock)
        sock.close()

    async def _refuse(self, error: ProtocolError) -> None:
        self.linger = True
        status = error.error_status_hint
        if self.config.access_log:
            _access.info(
                '%s "- -" %d 0 refused by the server: %s',
                peer(self.client),
                status,
                error.message,
            )
        content_type, body = self.server.error_body(status, error.message)
        await self._write(error_response(status, content_type, body, date=self.server.date))

    def scope(self, request: Request, kind: str = "http") -> dict[str, Any]:
        """The ASGI scope of ``request`` (``kind``: "http" or "websocket")."""
        return {
            "type": kind,
            "asgi": _ASGI,
            "http_version": request.http_version,
            "method": request.method,
            "scheme": self.scheme if kind == "http" else self.ws_scheme,
            "path": request.path,
            "raw_path": request.target.partition(b"?")[0],
            "query_string": request.query_string,
            "root_path": "",
            "headers": request.raw_headers,
            "client": self.client,
            "server": self.local,
        }

    async def _upgrade(self, upgrade: Upgrade) -> None:
        scope = self.scope(upgrade.request, "websocket")
        await serve_websocket(
            self.server.app,
            scope,
            upgrade,
            self._read,
            self._write,
            max_message_bytes=self.config.max_message_bytes,
        )
        # Wait (briefly) for the client's closing frame before closing TCP: closing with
        # it unread would reset the connection under the client's feet (RFC 6455 §7.1.1).
        self.linger = True

    async def wait_disconnect(self) -> None:
        """Return when the client has gone (the app asks again once it has the body)."""
        # Whatever the client sends meanwhile is the next request: parse and keep it.
        protocol = self.protocol
        while not self.eof:
            if self.buffered > _MAX_PIPELINED or protocol.stopped:
                await trio.sleep_forever()
            data = await self._read()
            if not data:
                self.eof = True
                return
            self.buffered += len(data)
            protocol.receive_data(data)
            if protocol.failed and not protocol.queued:
                # A broken follow-up request: this connection will not serve it.
                self.eof = self.abandoned = True
                return


class Exchange(Request):
    """One request as the app sees it, and the way to answer it.

    What the app reads: ``method``, ``path`` (percent-decoded), ``query_string``,
    ``headers`` (by lowercase name), ``raw_headers``, ``http_version``, ``client``; what it
    answers with: ``respond`` (a whole response), or ``begin`` then ``write``... (a
    streamed one); ``disconnected`` returns when the client leaves.
    """

    __slots__ = ("arrived", "body_sent", "client", "connection")

    #: the connection serving it (set when the request is handed to the app)
    connection: Connection
    #: the client's (host, port), or None; an app behind proxies may name another
    client: tuple[str, int] | None
    #: when it was read whole, on trio's clock (where the console's latency starts)
    arrived: float
    #: the ASGI app has had the body (``receive``)
    body_sent: bool
    #: the ASGI root path: none here
    root_path: Final = ""

    async def read_body(self, limit: int) -> bytes | None:
        """The whole body (read already); None if it exceeds ``limit`` bytes."""
        return self.body if self.size <= limit else None

    async def respond(
        self,
        status: int,
        body: bytes,
        headers: Iterable[tuple[bytes, bytes]] = (),
        content_type: bytes | None = _JSON,
        *,
        batched: bool = False,
    ) -> None:
        """Send a whole response (``content_type`` goes with a body that is not empty)."""
        if content_type is not None and body:
            headers = [*headers, (b"content-type", content_type)]
        connection = self.connection
        server = connection.server
        self.start(status, headers, server.date)
        data = self.frame(body, False, server.draining)
        if server.connections > 1 and not batched:
            # With other connections open, a whole response waits one turn of the
            # scheduler, so that the responses finished in one batch leave together: the
            # write that wakes a sleeping client pays for its wakeup (on loopback, all of
            # it), and a burst wakes it once rather than once per response. Alone, or
            # ``batched`` (handed over by another task with the rest of its batch), none.
            await trio.lowlevel.cancel_shielded_checkpoint()
        await connection._write(data)

    async def begin(self, status: int, headers: Iterable[tuple[bytes, bytes]]) -> None:
        """Start a streamed response: its head goes out with the first ``write``."""
        self.start(status, headers, self.connection.server.date)

    async def write(self, body: bytes, more: bool = True) -> None:
        """Send one part of a streamed response (``more=False``: the last)."""
        connection = self.connection
        whole = not more and self.response_headers is not None
        data = self.frame(body, more, connection.server.draining)
        if not data:
            return
        if whole and connection.server.connections > 1:
            await trio.lowlevel.cancel_shielded_checkpoint()  # as ``respond`` does
        await connection._write(data)

    async def disconnected(self) -> None:
        """Return when the client has gone."""
        await self.connection.wait_disconnect()

    async def fail(self, status: int, message: str) -> None:
        """Answer with the server's own error body and close the connection after."""
        self.keep_alive = False
        content_type, body = self.connection.server.error_body(status, message)
        await self.respond(status, body, (), content_type)

    # --- the exchange as an ASGI app sees it ----------------------------------------------

    async def receive(self) -> dict[str, Any]:
        """The ASGI ``receive``: the whole body, then the client leaving."""
        if self.body_sent:
            await self.disconnected()
            return {"type": "http.disconnect"}
        self.body_sent = True
        return {"type": "http.request", "body": self.body, "more_body": False}

    async def send(self, message: dict[str, Any]) -> None:
        """The ASGI ``send``."""
        kind = message["type"]
        if kind == "http.response.start":
            await self.begin(message["status"], message.get("headers", ()))
        elif kind == "http.response.body":
            await self.write(message.get("body", b""), message.get("more_body", False))
        else:
            raise RuntimeError(f"unexpected ASGI message {kind!r}")


def asgi_handler(app: App) -> Handler:
    """The handler that serves each request with the ASGI ``app``."""

    async def handle(exchange: Exchange) -> None:
        exchange.body_sent = False
        await app(exchange.connection.scope(exchange), exchange.receive, exchange.send)

    return handle


def peer(client: tuple[str, int] | None) -> str:
    """A client as the log names it: host:port, or "-"."""
    return f"{client[0]}:{client[1]}" if client else "-"


def _address(address: Any) -> tuple[str, int] | None:
    if isinstance(address, tuple) and len(address) >= 2:
        return str(address[0]), int(address[1])
    return None
