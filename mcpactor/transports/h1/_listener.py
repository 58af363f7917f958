# Accepting connections for the built-in HTTP/1.1 server: the accept loop, the limit on
# open connections (a canned 503 above it), the deadline reaper, draining on shutdown.

from __future__ import annotations

import contextlib
import errno
import logging
import socket
from collections.abc import Sequence
from typing import Final

import trio

from ._config import ErrorBody, H1Config, IntakeGate, plain_error_body
from ._connection import (
    DRAIN_FIRST_REQUEST,
    LINGER_BYTES,
    LINGER_SECONDS,
    READ_SIZE,
    App,
    Connection,
    Handler,
    ServerState,
    date_header,
)
from ._protocol import error_response
from ._tls import TlsConnection

__all__ = ["TurnAwayLog", "serve_h1", "turn_away_response"]

_log = logging.getLogger("mcpactor.http.server")

_CONNECTION_TASK_NAME: Final = "mcpactor.http.connection"
# Connections turned away (over ``max_connections``) that may linger at once, to let the
# client read its 503; past that they are closed at once.
_MAX_TURNING_AWAY: Final = 64
# Seconds between two log lines about connections turned away.
_TURN_AWAY_LOG_EVERY: Final = 10.0
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


def turn_away_response(error_body: ErrorBody = plain_error_body) -> bytes:
    """The whole canned 503 response for a connection over ``max_connections``."""
    content_type, body = error_body(503, "too many open connections; try again later")
    return error_response(503, content_type, body, extra=b"retry-after: 1\r\n")


class TurnAwayLog:
    """Counts connections turned away over ``max_connections``; warns every 10 s at most."""

    __slots__ = ("_logged", "turned_away")

    def __init__(self) -> None:
        self.turned_away = 0
        self._logged = -_TURN_AWAY_LOG_EVERY

    def note(self, open_connections: int) -> None:
        """Count one more connection turned away while ``open_connections`` are open."""
        self.turned_away += 1
        now = trio.current_time()
        if now - self._logged >= _TURN_AWAY_LOG_EVERY:
            self._logged = now
            _log.warning(
                "%d open connections (max_connections): turning new ones away (%d so far)",
                open_connections,
                self.turned_away,
            )


class _Listener:
    def __init__(self, state: ServerState) -> None:
        self.state = state
        self.config = state.config
        self.connection_class = Connection if self.config.ssl_context is None else TlsConnection
        self.turning_away = 0
        self.turn_away_log = TurnAwayLog()
        self.turn_away_bytes = turn_away_response(state.error_body)

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
                    if self.state.connections >= self.config.max_connections:
                        self.turn_away(sock, nursery)
                        continue
                    if sock.family in (socket.AF_INET, socket.AF_INET6):
                        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                    # Counted in here; the connection counts itself out when it closes.
                    state = self.state
                    state.connections += 1
                    if state.all_closed.is_set():
                        state.all_closed = trio.Event()
                    state.unanswered += 1
                    if state.all_answered.is_set():
                        state.all_answered = trio.Event()
                    nursery.start_soon(
                        self.connection_class(state, sock).serve, name=_CONNECTION_TASK_NAME
                    )

    def turn_away(self, sock: socket.socket, nursery: trio.Nursery) -> None:
        # Over max_connections: a 503 and close, without a parser or a request read.
        self.turn_away_log.note(self.state.connections)
        if self.turning_away >= _MAX_TURNING_AWAY or self.config.ssl_context is not None:
            # Over TLS a 503 would cost a handshake: the connection is just closed.
            sock.close()
            return
        self.turning_away += 1
        nursery.start_soon(self._turn_away, sock, name=_CONNECTION_TASK_NAME)

    async def _turn_away(self, sock: socket.socket) -> None:
        try:
            with contextlib.suppress(OSError):
                sock.send(self.turn_away_bytes)
                sock.shutdown(socket.SHUT_WR)
                # Closing with the request unread would reset the connection, and the
                # client could lose the answer: read and drop for a moment first.
                with trio.move_on_after(LINGER_SECONDS):
                    drained = 0
                    while drained < LINGER_BYTES:
                        await trio.lowlevel.wait_readable(sock)
                        data = sock.recv(READ_SIZE)
                        if not data:
                            break
                        drained += len(data)
        finally:
            self.turning_away -= 1
            trio.lowlevel.notify_closing(sock)
            sock.close()

    async def reap(self) -> None:
        # One task enforces every connection's deadline: cheaper than a cancel scope
        # deadline moved twice per request, and a second late at worst. It keeps the
        # Date header line current too, so that no response reads the clock.
        config = self.config
        tick = min(1.0, config.keep_alive_timeout / 4, config.request_timeout / 4)
        state = self.state
        deadlines = state.deadlines
        while True:
            await trio.sleep(tick)
            state.date = date_header()
            now = trio.current_time()
            for connection, deadline in list(deadlines.items()):
                if deadline <= now:
                    connection.timer.cancel()

    def drain(self) -> None:
        state = self.state
        state.draining = True
        for connection in list(state.idle):
            connection.timer.cancel()
        # A connection accepted before the drain, its first request not here yet: it
        # is served if that comes soon (the client sent it, or is about to).
        soon = trio.current_time() + DRAIN_FIRST_REQUEST
        for connection in state.fresh:
            if state.deadlines.get(connection, soon) > soon:
                state.deadlines[connection] = soon


async def serve_h1(
    app: App,
    *,
    host: str,
    port: int,
    config: H1Config,
    shutdown: trio.Event,
    graceful_timeout: float,
    sockets: Sequence[socket.socket] | None = None,
    error_body: ErrorBody = plain_error_body,
    intake: IntakeGate | None = None,
    handle: Handler | None = None,
    answered: trio.Event | None = None,
    task_status: trio.TaskStatus[tuple[str, int]] = trio.TASK_STATUS_IGNORED,
) -> None:
    """Serve ``app`` over HTTP/1.1 on (host, port), or on ``sockets``, until ``shutdown``.

    Reports the bound (host, port). On shutdown it stops accepting, closes connections
    kept alive idle, serves the first request of connections accepted but not answered
    yet (then sets ``answered``, if given), lets connections finish their response (up
    to ``graceful_timeout`` seconds) and returns. Given listening ``sockets``, it
    accepts on those instead of binding; either way it closes the sockets it accepted on
    when it stops accepting.
    ``error_body`` makes the body of the responses the server writes itself (plain
    text by default); while ``intake`` is closed, connections wait before they take in
    a new request. Each request is handed to ``handle`` when given (the app's exchange
    handler), else to ``app`` as ASGI; WebSocket upgrades go to ``app``.
    """
    if sockets is None:
        listeners = await trio.open_tcp_listeners(port, host=host, backlog=config.backlog)
        # The accept loop and the connections use the sockets directly (see ``_read``).
        sockets = [socket.socket(fileno=listener.socket.detach()) for listener in listeners]
    bound = sockets[0].getsockname()
    for sock in sockets:
        sock.setblocking(False)
    server = _Listener(
        ServerState(app, config, error_body=error_body, intake=intake, handle=handle)
    )
    async with trio.open_nursery() as connections:
        connections.start_soon(server.reap)
        async with trio.open_nursery() as accepting:
            for sock in sockets:
                accepting.start_soon(server.accept, sock, connections)
            task_status.started((str(bound[0]), int(bound[1])))
            await shutdown.wait()
            accepting.cancel_scope.cancel()
        server.drain()
        if answered is not None:
            connections.start_soon(_set_when, server.state.all_answered, answered)
        with trio.move_on_after(graceful_timeout):
            await server.state.all_closed.wait()
        if answered is not None:
            # Every connection closed (so each had its answer), or the time is up.
            answered.set()
        connections.cancel_scope.cancel()


async def _set_when(done: trio.Event, then: trio.Event) -> None:
    await done.wait()
    then.set()
