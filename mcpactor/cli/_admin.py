"""``mcpactor serve --admin``: the admin listener beside the server, in its trio run.

Off by default. Loopback only unless ``--admin-allow-remote``; always a token, from
``--admin-token-file`` or made at start and printed once to stderr. When the server
serves with authorization (``--auth-*``), an access token its ResourceServer accepts
that grants the admin scope (``--admin-scope``, default ``mcpactor:admin``) is an admin
credential too. The config file's ``[admin]`` table gives the same settings; the flags
win over it.
"""

from __future__ import annotations

import argparse
import functools
import ipaddress
import logging
import secrets
import socket
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .._exceptions import ConfigError

if TYPE_CHECKING:
    # Imported where a listener runs: ``serve --help`` builds the options below without them.
    import trio

    from ..server import Server

__all__ = [
    "add_admin_arguments",
    "admin_bind",
    "admin_token",
    "apply_admin_config",
    "check_admin",
    "with_admin",
]

#: the shortest token accepted from a file
_MIN_TOKEN = 16


def add_admin_arguments(serve: argparse.ArgumentParser) -> None:
    """Add the admin listener's options to ``mcpactor serve``."""
    admin = serve.add_argument_group("the admin listener (the live actor tree)")
    admin.add_argument(
        "--admin",
        metavar="[HOST:]PORT",
        help="serve the admin page and API (the live tree, its actions) on HOST (default "
        "127.0.0.1) and PORT; off by default",
    )
    admin.add_argument(
        "--admin-token-file",
        metavar="FILE",
        help="the admin token, the file's first line (default: a token made at start and "
        "printed once to stderr)",
    )
    admin.add_argument(
        "--admin-allow-remote",
        action="store_true",
        help="let --admin listen on an address other than loopback",
    )
    admin.add_argument(
        "--admin-scope",
        metavar="SCOPE",
        help="with --auth-*: an access token granting SCOPE is an admin credential too "
        "(default: mcpactor:admin)",
    )


def apply_admin_config(args: argparse.Namespace, config: Any) -> None:
    """Fill in the admin flags left unset from the config file's ``[admin]`` table."""
    admin = getattr(config, "admin", None)
    if admin is None:
        return
    from ..config import line_of

    if getattr(args, "admin", None) is None and admin.listen is not None:
        args.admin = admin.listen
        line = line_of(config.source, "admin.listen")
        args.admin_listen_source = f"{config.source}: admin.listen" + (
            f" (line {line})" if line else ""
        )
    if getattr(args, "admin_token_file", None) is None and admin.token_file is not None:
        args.admin_token_file = admin.token_file
    if not getattr(args, "admin_allow_remote", False):
        args.admin_allow_remote = admin.allow_remote
    if getattr(args, "admin_scope", None) is None and admin.scope is not None:
        args.admin_scope = admin.scope
    args.admin_redact = admin.redact
    args.admin_trace_url = admin.trace_url
    # Errors about these name the file's keys, not flags nobody typed.
    line = line_of(config.source, "admin")
    args.admin_source = f"{config.source}: admin" + (f" (line {line})" if line else "")


def admin_bind(text: str, *, allow_remote: bool = False) -> tuple[str, int]:
    """The (host, port) of ``--admin [HOST:]PORT``; ConfigError if not loopback unasked."""
    host, colon, port = text.rpartition(":")
    if not colon:
        host, port = "127.0.0.1", text
    host = host.strip("[]") or "127.0.0.1"
    if not port.isdigit() or int(port) > 65535:
        raise ConfigError(f"--admin expects [HOST:]PORT, got {text!r}")
    if not allow_remote and not _loopback(host):
        raise ConfigError(
            f"--admin {text}: {host!r} is not a loopback address; the admin listener "
            "controls the server, so listening elsewhere needs --admin-allow-remote"
        )
    return host, int(port)


def _loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def admin_token(path: str | None) -> tuple[str, bool]:
    """The admin token and whether it was made here (then it is to be printed once)."""
    if path is None:
        return secrets.token_urlsafe(32), True
    try:
        lines = Path(path).read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"--admin-token-file: cannot read {path!r} ({exc})") from exc
    token = lines[0].strip() if lines else ""
    if len(token) < _MIN_TOKEN:
        raise ConfigError(
            f"--admin-token-file {path!r}: the token (the first line) must be at least "
            f"{_MIN_TOKEN} characters"
        )
    return token, False


def check_admin(args: argparse.Namespace, config: Any = None) -> None:
    """Apply ``[admin]`` of ``config``, then refuse what cannot work, before anything starts."""
    if config is not None:
        apply_admin_config(args, config)
    if getattr(args, "admin", None) is None:
        if (
            getattr(args, "admin_token_file", None)
            or getattr(args, "admin_allow_remote", False)
            or getattr(args, "admin_scope", None)
        ):
            where = getattr(args, "admin_source", None)
            if where is not None:
                raise ConfigError(f"{where}: the [admin] table needs 'listen' (or --admin)")
            raise ConfigError(
                "--admin-token-file, --admin-allow-remote and --admin-scope need --admin"
            )
        return
    scope = getattr(args, "admin_scope", None)
    if scope is not None and (not scope or any(c in scope for c in ' "\\')):
        raise ConfigError(f"--admin-scope: expected a scope name, got {scope[:200]!r}")
    try:
        admin_bind(args.admin, allow_remote=args.admin_allow_remote)
    except ConfigError as exc:
        where = getattr(args, "admin_listen_source", None)
        if where is None:
            raise
        raise ConfigError(
            f"{where}: {str(exc).replace('--admin-allow-remote', 'allow_remote = true')}"
        ) from None


async def with_admin(
    args: argparse.Namespace,
    server: Server,
    serve: Callable[..., Awaitable[Any]],
    *,
    task_status: trio.TaskStatus[Any],
) -> None:
    """Run ``serve`` (a ``task_status`` starter), with the admin listener if asked for.

    The listener starts first, so that the Observatory sees every session owner, and
    stops when ``serve`` returns.
    """
    if getattr(args, "admin", None) is None:
        await serve(task_status=task_status)
        return
    if getattr(args, "worker_number", None) not in (None, 0):
        # Of the workers of --workers, the first serves the page; the others publish
        # their counts to the store it lists them from.
        await _publish_only(args, server, serve, task_status=task_status)
        return
    import trio

    from ..admin import ADMIN_MAX_CONNECTIONS, DEFAULT_ADMIN_SCOPE, create_admin_app, serve_admin

    # What operators do is logged whatever --log-level says of the rest.
    logging.getLogger("mcpactor.admin.audit").setLevel(logging.INFO)
    host, port = admin_bind(args.admin, allow_remote=args.admin_allow_remote)
    token, made = admin_token(args.admin_token_file)
    observatory = _observatory(args, server)
    # The MCP endpoint's own ResourceServer (build_http_options made it), so an admin's
    # access token is checked by the same verifier and cache.
    resource_server = getattr(args, "resource_server", None)
    scope = getattr(args, "admin_scope", None) or DEFAULT_ADMIN_SCOPE
    # Every replica sharing the store publishes its counts; this page lists them.
    snapshots = _in_shared_store(args, "RedisReplicaSummaries")
    shared_history = _in_shared_store(args, "RedisSharedHistory")
    app = create_admin_app(
        observatory,
        token=token,
        resource_server=resource_server,
        scope=scope,
        replicas=None if snapshots is None else snapshots.listing,
        redact=getattr(args, "admin_redact", None),
        trace_url=getattr(args, "admin_trace_url", None),
        shared_history=shared_history,
        drain=_drain_of(args),
        readiness=_readiness_of(args),
    )
    limits = _admin_limits(args, ADMIN_MAX_CONNECTIONS)
    inherited = getattr(args, "worker_admin_socket", None)
    sockets = None if inherited is None else [socket.socket(fileno=inherited)]
    async with trio.open_nursery() as nursery:
        bound_host, bound_port = await nursery.start(
            lambda task_status: serve_admin(
                app, host=host, port=port, limits=limits, sockets=sockets, task_status=task_status
            )
        )
        where = f"[{bound_host}]" if ":" in bound_host else bound_host
        said = f" (token: {token})" if made else f" (token: {args.admin_token_file})"
        if resource_server is not None:
            said += f"; or an access token with the {scope} scope"
        from ._report import say

        say(f"admin page http://{where}:{bound_port}/{said}")
        if snapshots is not None:
            from ..store import replica_summary

            admin_url = f"http://{where}:{bound_port}/"
            nursery.start_soon(
                snapshots.run, lambda: replica_summary(observatory, admin_url=admin_url)
            )
        if shared_history is not None:
            await _share_history(nursery, shared_history, observatory, app)
        task_status.started(await nursery.start(_serve_then_stop, serve, nursery))


async def _share_history(
    nursery: trio.Nursery, shared_history: Any, observatory: Any, app: Any
) -> None:
    # What ends here (and what operators do here) goes to the store in batches, each
    # entry with the story this page would show of it, for the other replicas' pages.
    from ..admin import shared_story

    trail = app.config["ADMIN_AUDIT"]
    told = shared_story(app.config.get("ADMIN_LOGS"), app.config.get("ADMIN_REDACT"))
    run = functools.partial(shared_history.run, story=told)
    await nursery.start(run, observatory, lambda: trail)


async def _publish_only(
    args: argparse.Namespace,
    server: Server,
    serve: Callable[..., Awaitable[Any]],
    *,
    task_status: trio.TaskStatus[Any],
) -> None:
    import trio

    from ..store import replica_summary

    snapshots = _in_shared_store(args, "RedisReplicaSummaries")
    if snapshots is None:
        await serve(task_status=task_status)
        return
    observatory = _observatory(args, server)
    shared_history = _in_shared_store(args, "RedisSharedHistory")
    async with trio.open_nursery() as nursery:
        nursery.start_soon(snapshots.run, lambda: replica_summary(observatory))
        if shared_history is not None:
            await nursery.start(shared_history.run, observatory)
        task_status.started(await nursery.start(_serve_then_stop, serve, nursery))


def _admin_limits(args: argparse.Namespace, max_connections: int) -> Any:
    limits = getattr(args, "http_limits", None)
    if limits is None:
        return None
    # The endpoint's deadlines and head limits; its own, smaller, count of connections.
    import attrs

    return attrs.evolve(limits, max_connections=max_connections)


def _drain_of(args: argparse.Namespace) -> Any:
    # The HTTP server's readiness drains it, as SIGTERM does; stdio has nothing to drain.
    readiness = getattr(args, "readiness", None)
    return None if readiness is None else readiness.drain


def _observatory(args: argparse.Namespace, server: Server) -> Any:
    # The live tree of this process, named after its replica when a store is shared.
    from ..runtime import Observatory

    shared = getattr(args, "shared_store", None)
    observatory = Observatory(replica=None if shared is None else shared.replicas.replica_id)
    observatory.install()
    observatory.serve(server)
    return observatory


def _readiness_of(args: argparse.Namespace) -> Callable[[], Awaitable[Any]] | None:
    # The served server's readiness, as the page shows it; None when it serves no HTTP.
    readiness = getattr(args, "readiness", None)
    return None if readiness is None else readiness.describe


def _in_shared_store(args: argparse.Namespace, kind: str) -> Any:
    # This replica's part of a record the replicas share through the store (its counts,
    # its history), under the deployment's prefix; None without a store. The store
    # package is imported only then: its extra may be missing otherwise.
    shared = getattr(args, "shared_store", None)
    if shared is None:
        return None
    from .. import store

    return getattr(store, kind)(
        shared.client,
        replica=shared.replicas.replica_id,
        prefix=getattr(args, "store_prefix", None) or "mcpactor",
    )


async def _serve_then_stop(
    serve: Callable[..., Awaitable[Any]],
    nursery: trio.Nursery,
    *,
    task_status: trio.TaskStatus[Any],
) -> None:
    # What runs beside the server (the listener, the publishing) ends when it does.
    await serve(task_status=task_status)
    nursery.cancel_scope.cancel()
