"""``mcpactor serve --http``: serving over HTTP, in this process or in worker processes.

The HTTP options (the flags, else the config file), the listening address, and the
supervision of the workers of ``--workers``.
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import logging
import os
import sys
from typing import Any, Final

from .._exceptions import ConfigError
from ..config import load_hook
from ..server import Server
from ._admin import with_admin
from ._auth import build_resource_server
from ._report import StartFailed, say, say_failure

__all__ = ["build_http_options", "serve_over_http"]


# The admin listener's backlog under --workers (hypercorn's default, as it has alone).
_ADMIN_BACKLOG: Final = 100

#: HttpOptions fields set by a command-line flag of the same name
_HTTP_FLAGS: Final = (
    "response_mode",
    "tls_cert",
    "tls_key",
    "cors_origins",
    "max_sessions",
    "max_sessions_per_client",
    "max_connections",
    "session_idle_timeout",
    "keep_alive_timeout",
    "request_timeout",
    "health_path",
    "ready_path",
    "forwarded_allow_ips",
    "forwarded_header",
    "drain_delay",
)


def build_http_options(args: argparse.Namespace, config: Any) -> Any:
    """The HttpOptions of ``serve --http``: the flags, else the config file, else defaults."""
    from ..transports import HttpOptions

    given: dict[str, Any] = {}
    # Where each value came from, to name it in an error.
    labels: dict[str, str] = {}
    if config is not None:
        given.update(config.http.options())
        labels.update({name: f"{config.source}: http.{name}" for name in given})
    for name in (*_HTTP_FLAGS, "authenticate"):
        value = getattr(args, name)
        if value is not None:
            given[name] = value
            labels[name] = "--" + name.replace("_", "-")
    if args.no_health:
        given["health_path"] = None
    if args.no_ready:
        given["ready_path"] = None
    if args.access_log:
        given["access_log"] = True
    if "authenticate" in given:
        given["authenticate"] = load_hook(given["authenticate"], option=labels["authenticate"])
    _check_tls(given.get("tls_cert"), given.get("tls_key"), labels)
    resource_server = build_resource_server(args, config)
    if resource_server is not None:
        given["resource_server"] = resource_server
    return HttpOptions(
        stateless=args.stateless,
        allowed_hosts=args.allowed_hosts,
        allowed_origins=args.allowed_origins,
        max_body_bytes=args.max_message_bytes,
        **given,
    )


def _check_tls(cert: str | None, key: str | None, labels: dict[str, str]) -> None:
    # Read here, so that a wrong file is named before anything starts.
    if cert is None and key is None:
        return
    if cert is None or key is None:
        given, missing = ("tls_key", "--tls-cert") if cert is None else ("tls_cert", "--tls-key")
        raise ConfigError(
            f"{labels[given]}: HTTPS needs a certificate and its key; {missing} is missing"
        )
    import ssl

    for name, path in (("tls_cert", cert), ("tls_key", key)):
        if not os.path.isfile(path):
            raise ConfigError(f"{labels[name]}: no such file {path!r}")
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    try:
        context.load_cert_chain(cert, key)
    except (ssl.SSLError, OSError) as exc:
        raise ConfigError(
            f"{labels['tls_cert']} {cert!r}, {labels['tls_key']} {key!r}: cannot use them as "
            f"a PEM certificate and its private key ({exc.strerror or exc})"
        ) from exc


def _parse_bind(text: str) -> tuple[str, int]:
    host, colon, port = text.rpartition(":")
    if not colon:
        host, port = "127.0.0.1", text
    host = host.strip("[]") or "127.0.0.1"
    if not port.isdigit() or int(port) > 65535:
        raise ConfigError(f"--http expects [HOST:]PORT, got {text!r}")
    return host, int(port)


def serve_over_http(
    args: argparse.Namespace,
    server: Server,
    options: Any,
    http_options: Any,
    stateless: Any = None,
) -> int:
    """Serve ``server`` over HTTP as ``args`` say, or supervise its workers; the exit status."""
    import socket

    import trio

    from ..transports import serve_http
    from ._workers import tell_supervisor

    host, port = _parse_bind(args.http)
    args.listen = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
    worker_socket = args.worker_socket
    scheme = "https" if http_options.tls_cert is not None else "http"
    if http_options.access_log:
        # Asked for by name: shown whatever --log-level says of the rest.
        logging.getLogger("mcpactor.access").setLevel(logging.INFO)
    if args.workers > 1 and worker_socket is None:
        return _serve_workers(
            args, host, port, scheme, keyed=stateless is not None and stateless.sealer is not None
        )
    stop = trio.Event()
    started = False

    async def serve(
        nursery: trio.Nursery, *, task_status: trio.TaskStatus[tuple[str, int]]
    ) -> None:
        await serve_http(
            server,
            host=host,
            port=port,
            path=args.path,
            options=http_options,
            session_options=options,
            handle_signals=True,
            stop=stop,
            http_server=args.http_server or "builtin",
            tune_gc=not args.no_gc_tuning,
            sockets=None if worker_socket is None else [socket.socket(fileno=worker_socket)],
            stateless=stateless,
            task_status=task_status,
        )
        nursery.cancel_scope.cancel()

    async def run() -> None:
        nonlocal started, http_options, options, stateless
        async with contextlib.AsyncExitStack() as stack:
            store_url = getattr(args, "store_url", None)
            if store_url is not None:
                http_options, options, stateless = await _open_store(
                    stack, args, server, http_options, options, stateless
                )
            http_options = _with_readiness(args, http_options)
            nursery = await stack.enter_async_context(trio.open_nursery())
            _watch_the_process(nursery, args, stop)
            bound_host, bound_port = await nursery.start(
                with_admin, args, server, functools.partial(serve, nursery)
            )
            started = True
            http_options.readiness.started()
            if args.worker_status is not None:
                # Its supervisor says where they serve, once every worker does.
                tell_supervisor(args.worker_status, {"ready": True})
                args.worker_status = None
            elif worker_socket is None:
                say(f"serving {_url(bound_host, bound_port, args.path, scheme)}")

    try:
        trio.run(run)
    except Exception as exc:
        if started:
            raise
        raise StartFailed(exc) from exc
    return 0


def _with_readiness(args: argparse.Namespace, http_options: Any) -> Any:
    # One readiness for /readyz, SIGTERM and the admin page's drain action (args.readiness).
    import attrs

    from ..transports import Readiness

    if http_options.readiness is None:
        http_options = attrs.evolve(http_options, readiness=Readiness())
    args.readiness = http_options.readiness
    return http_options


async def _open_store(
    stack: contextlib.AsyncExitStack,
    args: argparse.Namespace,
    server: Server,
    http_options: Any,
    options: Any,
    stateless: Any,
) -> tuple[Any, Any, Any]:
    # One client for every shared piece, open until the server has stopped: the session
    # records and relay, the SSE events, the tasks of both eras and the change bus.
    import attrs

    from ..runtime import StatelessHost
    from ..store import open_shared_store
    from ..transports import Readiness
    from ._workers import replica_id

    shared = await stack.enter_async_context(
        open_shared_store(args.store_url, replica=replica_id(), prefix=args.store_prefix)
    )
    logging.getLogger("mcpactor.store").info(
        "sharing sessions, events, tasks and changes through %s as %s",
        shared.location,
        shared.replicas.replica_id,
    )
    # The admin listener, if asked for, lists every replica through the same client.
    args.shared_store = shared
    # Ready while the store answers (checked at most every few seconds), once serving.
    readiness = http_options.readiness or Readiness(check=shared.problem)
    http_options = attrs.evolve(
        http_options,
        replicas=shared.replicas,
        event_store=shared.event_store,
        readiness=readiness,
    )
    options = attrs.evolve(options, tasks=attrs.evolve(options.tasks, store=shared.task_store))
    # A host of our own, so that listen streams hear the changes of every replica.
    host = StatelessHost(server, options=stateless, session_options=options, bus=shared.bus)
    return http_options, options, host


def _watch_the_process(nursery: Any, args: argparse.Namespace, stop: Any) -> None:
    # A worker stops when its supervisor's lifeline closes, or when a reload retires it;
    # SIGHUP reloads no process.
    from ._workers import watch_lifeline, watch_retirement

    if args.worker_lifeline is not None:
        nursery.start_soon(watch_lifeline, args.worker_lifeline, stop)
        nursery.start_soon(watch_retirement, stop)
    nursery.start_soon(_refuse_reloads, args.worker_socket is not None)


async def _refuse_reloads(worker: bool) -> None:
    # SIGHUP would end the process by default: one process has nothing to reload with
    # (its port would close between the old server and the new), so it says so and serves on.
    import signal

    import trio

    with trio.open_signal_receiver(signal.SIGHUP) as signals:
        async for _ in signals:
            if worker:
                logging.getLogger("mcpactor.workers").warning(
                    "SIGHUP ignored: a worker is reloaded by its supervisor (pid %d); "
                    "send SIGHUP to it",
                    os.getppid(),
                )
            else:
                say(
                    "SIGHUP ignored: reloading replaces worker processes one at a time, "
                    "which needs --workers N; restart to load changes",
                    level=logging.WARNING,
                )


def _url(host: str, port: int, path: str, scheme: str = "http") -> str:
    return (
        f"{scheme}://[{host}]:{port}{path}" if ":" in host else f"{scheme}://{host}:{port}{path}"
    )


def _serve_workers(
    args: argparse.Namespace, host: str, port: int, scheme: str, *, keyed: bool = False
) -> int:
    import trio

    from ..transports.http import LISTEN_BACKLOG
    from ._workers import WorkerFailure, bind_sockets, supervise, worker_command, workers_refusal

    store_url = getattr(args, "store_url", None)
    refusal = workers_refusal(
        args.workers,
        stateless=args.stateless,
        store=None if store_url is None else store_url.redacted(),
    )
    if refusal is not None:
        raise ConfigError(refusal)
    if sys.platform == "win32":
        # Workers inherit their sockets and lifelines as file descriptors.
        raise ConfigError("--workers needs a POSIX system")
    try:
        sockets = bind_sockets(host, port, args.workers, backlog=LISTEN_BACKLOG)
    except OSError as exc:
        say(f"cannot listen on {args.http}: {exc.strerror or exc}", level=logging.ERROR)
        return 1
    try:
        admin_socket = _admin_socket(args)
    except OSError as exc:
        for sock in sockets:
            sock.close()
        say(f"cannot listen on --admin {args.admin}: {exc.strerror or exc}", level=logging.ERROR)
        return 1
    try:
        bound_host, bound_port = sockets[0].getsockname()[:2]
        if not keyed:
            # The workers share one key, so that a retry may land on any of them.
            from ..config import STATE_KEYS_ENV
            from ..protocol import SealingKey

            os.environ[STATE_KEYS_ENV] = SealingKey.generate("workers").to_text()
        command, environment = worker_command(args.argv)

        def serving() -> None:
            # Said once every worker serves: then the port answers.
            say(
                f"serving {_url(bound_host, bound_port, args.path, scheme)} "
                f"with {args.workers} workers"
            )

        def failed(failure: WorkerFailure) -> None:
            say_failure(list(failure.lines), failure.traceback)

        return trio.run(
            functools.partial(
                supervise,
                command,
                sockets,
                args.workers,
                env=environment,
                on_ready=serving,
                on_failure=failed,
                admin_socket=admin_socket,
            )
        )
    finally:
        for sock in sockets:
            sock.close()
        if admin_socket is not None:
            admin_socket.close()


def _admin_socket(args: argparse.Namespace) -> Any:
    # The admin listener of --workers, bound here once: the first worker serves the page
    # on it, and a reload's new first worker takes it over without a moment unbound.
    import socket

    from ._admin import admin_bind

    if getattr(args, "admin", None) is None:
        return None
    host, port = admin_bind(args.admin, allow_remote=args.admin_allow_remote)
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    return socket.create_server((host, port), family=family, backlog=_ADMIN_BACKLOG)
