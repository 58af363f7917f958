"""Streamable HTTP (plus legacy HTTP+SSE and WebSocket) on trio.

```python
async with trio.open_nursery() as nursery:
    host, port = await nursery.start(functools.partial(serve_http, server, port=0))
```

``serve_http`` runs an HTTP server in front of ``McpHttpApp``: mcpactor's own lean
HTTP/1.1 server by default, or hypercorn's trio worker (``http_server="hypercorn"``, for
HTTP/2 and TLS). ``open_http_app`` gives the ASGI app alone (to mount in another trio
ASGI server, or to serve with ``serve_app`` while keeping a handle on its
SessionManager).
"""

from __future__ import annotations

import contextlib
import functools
import logging
import os
import signal
import socket
import ssl
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from typing import TYPE_CHECKING, Any, Final, Literal

import trio

from ..runtime import (
    SessionOptions,
    StatelessHost,
    StatelessOptions,
    collect_when_quiet,
    settle_heap,
)
from ..runtime.http import (
    EventStore,
    EventStoreStatistics,
    ManagerStatistics,
    MemoryEventStore,
    Replay,
    SessionManager,
)
from ..server import Server
from ._http import McpHttpApp
from ._http_options import ConnectionLimits, HttpOptions, default_event_store
from ._readiness import Readiness

if TYPE_CHECKING:
    from .h1 import ErrorBody

__all__ = [
    "ConnectionLimits",
    "EventStore",
    "EventStoreStatistics",
    "HttpOptions",
    "HttpServerKind",
    "ManagerStatistics",
    "McpHttpApp",
    "MemoryEventStore",
    "Readiness",
    "Replay",
    "SessionManager",
    "open_http_app",
    "serve_app",
    "serve_asgi",
    "serve_http",
]

_log = logging.getLogger("mcpactor.http")

#: which HTTP server runs the app: mcpactor's own HTTP/1.1 server, or hypercorn's trio
#: worker (HTTP/1.1 and HTTP/2; TLS through its config)
HttpServerKind = Literal["builtin", "hypercorn"]

# Seconds a graceful stop waits for the connections accepted just before it to have their
# first request answered before the sessions stop taking requests.
_FIRST_ANSWER_WAIT: Final = 1.0
# Seconds the HTTP server waits for open connections beyond the sessions' own grace period.
_SHUTDOWN_MARGIN: Final = 2.0
# hypercorn's default listen backlog (100) makes the kernel drop connection attempts when
# many clients connect at once; they retry a second later, and connections that made it
# early sit idle into hypercorn's keep-alive timeout. The kernel caps this at somaxconn.
#: the listen backlog of the sockets the HTTP servers bind
LISTEN_BACKLOG: Final = 1024


@contextlib.asynccontextmanager
async def open_http_app(
    server: Server,
    *,
    path: str = "/mcp",
    options: HttpOptions | None = None,
    session_options: SessionOptions | None = None,
    bind_host: str = "127.0.0.1",
    stateless: StatelessOptions | StatelessHost | None = None,
) -> AsyncIterator[McpHttpApp]:
    """Run a SessionManager for ``server`` and yield the ASGI app in front of it.

    ``bind_host`` is where the app is reachable; it picks the Host/Origin defaults (see
    HttpOptions). Leaving the block closes every session gracefully and waits for them.
    ``stateless`` is the options of the host of stateless requests, or a host made by
    the caller (one given a shared change bus).
    The server's lifespans are the caller's to enter (``serve_http`` does).
    """
    options = options or HttpOptions()
    manager = SessionManager(
        server,
        session_options=session_options,
        event_store=default_event_store(options),
        max_sessions=options.max_sessions,
        idle_timeout=options.session_idle_timeout,
        response_mode=options.response_mode,
        max_sessions_per_client=options.max_sessions_per_client,
        unconfirmed_timeout=options.unconfirmed_session_timeout,
        stateless=stateless,
        replicas=options.replicas,
        max_message_bytes=options.max_body_bytes,
    )
    async with trio.open_nursery() as nursery:
        await nursery.start(manager.run)
        try:
            yield McpHttpApp(manager, path=path, options=options, bind_host=bind_host)
        finally:
            manager.stop()


async def serve_http(
    server: Server,
    *,
    host: str = "127.0.0.1",
    port: int = 8000,
    path: str = "/mcp",
    options: HttpOptions | None = None,
    session_options: SessionOptions | None = None,
    handle_signals: bool = False,
    stop: trio.Event | None = None,
    http_server: HttpServerKind = "builtin",
    tune_gc: bool = True,
    sockets: Sequence[socket.socket] | None = None,
    stateless: StatelessOptions | StatelessHost | None = None,
    task_status: trio.TaskStatus[tuple[str, int]] = trio.TASK_STATUS_IGNORED,
) -> None:
    """Serve ``server`` over HTTP until cancelled, ``stop`` is set, or SIGINT/SIGTERM.

    Reports the bound (host, port) through ``task_status`` (so ``port=0`` works). Given
    ``sockets`` (listening TCP sockets), it serves on those instead of binding
    ``host:port`` and closes them when it stops; ``host`` is then only what the Host
    check expects. A
    graceful stop refuses new sessions and connections, gives in-flight requests the
    sessions' ``shutdown_grace``, cancels what is left and returns. With
    ``handle_signals`` the first SIGINT or SIGTERM drains first: readiness turns false
    at once, and the listener keeps accepting for ``options.drain_delay`` seconds if a
    probe has asked the readiness endpoint (so that a load balancer sees it fail); the
    admin page's drain action (``Readiness.drain``) does the same; a second signal
    cancels at once. The server's lifespans are
    entered around it all. With ``tune_gc``, the process's cycle collector is set up for
    serving once the lifespans have started (``settle_heap``), and the young generations
    are collected in quiet spells (``collect_when_quiet``).
    """
    async with (
        server.running(),
        open_http_app(
            server,
            path=path,
            options=options,
            session_options=session_options,
            bind_host=host,
            stateless=stateless,
        ) as app,
    ):
        if tune_gc:
            settle_heap()
        await serve_app(
            app,
            host=host,
            port=port,
            handle_signals=handle_signals,
            stop=stop,
            http_server=http_server,
            tune_gc=tune_gc,
            sockets=sockets,
            task_status=task_status,
        )


async def serve_app(
    app: McpHttpApp,
    *,
    host: str = "127.0.0.1",
    port: int = 8000,
    handle_signals: bool = False,
    stop: trio.Event | None = None,
    http_server: HttpServerKind = "builtin",
    tune_gc: bool = False,
    sockets: Sequence[socket.socket] | None = None,
    task_status: trio.TaskStatus[tuple[str, int]] = trio.TASK_STATUS_IGNORED,
) -> None:
    """Serve an ``McpHttpApp`` with the chosen HTTP server; see ``serve_http``.

    Returns after a graceful stop, once every session has ended and the HTTP server has
    let its connections go. With ``tune_gc``, the young generations of the cycle
    collector are collected in quiet spells while it serves (``collect_when_quiet``).
    """
    if http_server not in ("builtin", "hypercorn"):
        raise ValueError(f"http_server must be 'builtin' or 'hypercorn', got {http_server!r}")
    manager = app.manager
    grace = (manager.session_options or SessionOptions()).shutdown_grace
    shutdown = trio.Event()
    served = trio.Event()
    # Set by the built-in server once every connection it accepted has had an answer:
    # a client whose connection was accepted just before the stop is served, not refused.
    answered = trio.Event() if http_server == "builtin" else None

    readiness = app.readiness

    def begin_shutdown() -> None:
        if not shutdown.is_set():
            readiness.drain()
            shutdown.set()

    async with trio.open_nursery() as nursery:
        if tune_gc:
            nursery.start_soon(collect_when_quiet)
        nursery.start_soon(_drain_then_stop, readiness, app.options.drain_delay, begin_shutdown)
        if handle_signals:
            nursery.start_soon(_watch_signals, readiness, nursery.cancel_scope, manager)
        if stop is not None:
            nursery.start_soon(_stop_on, stop, begin_shutdown)
        if http_server == "builtin":
            bound = await nursery.start(
                _serve_until_done,
                _builtin_server(app, host, port, grace, shutdown, sockets, answered),
                served,
            )
        else:
            binds: list[str] = await nursery.start(
                _serve_until_done,
                _hypercorn_server(app, host, port, grace, shutdown, sockets),
                served,
            )
            bound = _address(binds[0])
        _log.info("serving MCP on http://%s:%d%s", bound[0], bound[1], app.path)
        task_status.started(bound)
        await shutdown.wait()
        if answered is not None:
            # The listener has stopped accepting. The sessions stop taking requests once
            # the connections it took have each had an answer (their first request came
            # with them, or comes just after), or after a moment: one that sends
            # nothing, or streams, does not hold the stop back.
            with trio.move_on_after(_FIRST_ANSWER_WAIT):
                await answered.wait()
        manager.stop()
        await manager.wait_sessions(0)
        # Every session has ended; the last responses may still be on their way out.
        await served.wait()
        nursery.cancel_scope.cancel()


def _builtin_server(
    app: McpHttpApp,
    host: str,
    port: int,
    grace: float,
    shutdown: trio.Event,
    sockets: Sequence[socket.socket] | None,
    answered: trio.Event | None = None,
) -> Callable[..., Awaitable[None]]:
    from ..runtime import current_start_gate
    from ._asgi import http_error_body
    from .h1 import H1Config, serve_h1

    options = app.options
    config = H1Config(
        keep_alive_timeout=options.keep_alive_timeout,
        request_timeout=options.request_timeout,
        max_head_bytes=options.max_head_bytes,
        max_headers=options.max_header_count,
        max_body_bytes=options.max_body_bytes,
        max_message_bytes=options.max_body_bytes,
        backlog=LISTEN_BACKLOG,
        max_connections=options.max_connections,
        write_timeout=options.write_timeout,
        ssl_context=_server_ssl_context(options),
        access_log=options.access_log,
    )
    return functools.partial(
        serve_h1,
        app,
        host=host,
        port=port,
        config=config,
        shutdown=shutdown,
        graceful_timeout=grace + _SHUTDOWN_MARGIN,
        sockets=sockets,
        # JSON-RPC error bodies, as the app's own refusals have.
        error_body=http_error_body,
        # Request actors spawned but not started: a new request waits while many are.
        intake=current_start_gate(),
        # Requests go to the app's one path as they are, WebSockets through ASGI; a
        # subclass that wraps the ASGI entry gets every request through it.
        handle=app.handle if type(app).__call__ is McpHttpApp.__call__ else None,
        answered=answered,
    )


def _hypercorn_server(
    app: McpHttpApp,
    host: str,
    port: int,
    grace: float,
    shutdown: trio.Event,
    sockets: Sequence[socket.socket] | None,
) -> Callable[..., Awaitable[None]]:
    from ._asgi import http_error_body
    from ._hypercorn_worker import hypercorn_config, serve_hypercorn

    options = app.options
    limits = options.connection_limits()
    if sockets is None:
        binds = [_bind(host, port)]
    else:
        # hypercorn wraps a bound descriptor in a socket of its own, which it closes: it
        # gets a duplicate, and the given sockets are closed once it is done, as the
        # built-in server closes them.
        binds = [f"fd://{os.dup(sock.fileno())}" for sock in sockets]
    config = hypercorn_config(
        limits, binds, graceful_timeout=grace + _SHUTDOWN_MARGIN, backlog=LISTEN_BACKLOG
    )
    config.websocket_max_message_size = options.max_body_bytes
    if options.tls_cert is not None and options.tls_key is not None:
        config.certfile = options.tls_cert
        config.keyfile = options.tls_key

    async def serve(*, task_status: trio.TaskStatus[list[str]]) -> None:
        try:
            await serve_hypercorn(
                app, config, limits, shutdown, error_body=http_error_body, task_status=task_status
            )
        finally:
            for sock in sockets or ():
                sock.close()

    return serve


async def serve_asgi(
    app: Callable[..., Awaitable[None]],
    *,
    host: str = "127.0.0.1",
    port: int = 0,
    limits: ConnectionLimits | None = None,
    lifespan: bool = True,
    error_body: ErrorBody | None = None,
    sockets: Sequence[socket.socket] | None = None,
    task_status: trio.TaskStatus[tuple[str, int]] = trio.TASK_STATUS_IGNORED,
) -> None:
    """Serve any ASGI app on hypercorn's trio worker, each connection contained, until cancelled.

    The worker ``http_server="hypercorn"`` serves the MCP endpoint with: nothing that
    happens on a connection ends the listener, and ``limits`` (default
    ``ConnectionLimits()``) hold its connections and HTTP/2 streams. Reports the bound
    (host, port) through ``task_status``, so ``port=0`` works. With ``lifespan``, the
    app's ASGI lifespan runs around serving. ``error_body`` makes the bodies of the
    responses the server writes itself (default: plain text). Given listening
    ``sockets``, it accepts on those instead of binding, and closes them when it stops.
    """
    from ._hypercorn_worker import hypercorn_config, serve_hypercorn
    from .h1 import plain_error_body

    limits = limits or ConnectionLimits()
    # hypercorn closes the sockets it is given by descriptor: it gets duplicates.
    binds = (
        [_bind(host, port)]
        if sockets is None
        else [f"fd://{os.dup(sock.fileno())}" for sock in sockets]
    )
    config = hypercorn_config(limits, binds, graceful_timeout=1.0)
    try:
        async with trio.open_nursery() as nursery:
            bound: list[str] = await nursery.start(
                functools.partial(
                    serve_hypercorn,
                    app,
                    config,
                    limits,
                    trio.Event(),
                    error_body=error_body or plain_error_body,
                    lifespan=lifespan,
                )
            )
            task_status.started(_address(bound[0]))
    finally:
        for sock in sockets or ():
            sock.close()


def _bind(host: str, port: int) -> str:
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


def _server_ssl_context(options: HttpOptions) -> ssl.SSLContext | None:
    # The built-in server's TLS: modern defaults, HTTP/1.1 offered through ALPN.
    if options.tls_cert is None or options.tls_key is None:
        return None
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    context.load_cert_chain(options.tls_cert, options.tls_key)
    context.set_alpn_protocols(["http/1.1"])
    return context


async def _serve_until_done(
    fn: Callable[..., Awaitable[None]],
    done: trio.Event,
    *,
    task_status: trio.TaskStatus[Any] = trio.TASK_STATUS_IGNORED,
) -> None:
    try:
        await fn(task_status=task_status)
    finally:
        done.set()


async def _stop_on(stop: trio.Event, begin_shutdown: Callable[[], None]) -> None:
    await stop.wait()
    begin_shutdown()


async def _drain_then_stop(
    readiness: Readiness, delay: float, begin_shutdown: Callable[[], None]
) -> None:
    # Draining, whoever asked: readiness is false already; the listener stays open for
    # ``delay`` while a load balancer may still send work (only if something probes
    # readiness: nothing else would notice), then the graceful stop begins.
    await readiness.wait_draining()
    if delay > 0 and readiness.probed:
        _log.info("draining: not ready; the listener closes in %g s", delay)
        await trio.sleep(delay)
    begin_shutdown()


async def _watch_signals(
    readiness: Readiness, serving: trio.CancelScope, manager: SessionManager
) -> None:
    with trio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:
        first = True
        async for signum in signals:
            if first:
                name = signal.Signals(signum).name
                _log.info("%s: draining, then finishing in-flight requests", name)
                readiness.drain()
                first = False
            else:
                _log.warning("second signal: cancelling everything")
                manager.cancel()
                serving.cancel()


def _address(bind: str) -> tuple[str, int]:
    # "http://127.0.0.1:8000" or "http://[::1]:8000" -> (host, port)
    authority = bind.partition("://")[2]
    host, _, port = authority.rpartition(":")
    return host.strip("[]"), int(port)


for _name in (
    "ConnectionLimits",
    "EventStore",
    "EventStoreStatistics",
    "HttpOptions",
    "ManagerStatistics",
    "McpHttpApp",
    "MemoryEventStore",
    "Replay",
    "SessionManager",
):
    globals()[_name].__module__ = __name__
del _name
