"""``mcpactor serve --admin``: the admin listener beside the server, in its trio run.

Off by default. Loopback only unless ``--admin-allow-remote``; always a token, from
``--admin-token-file`` or made at start and printed once to stderr.
"""

from __future__ import annotations

import argparse
import ipaddress
import secrets
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import trio

from .._exceptions import ConfigError
from ..server import Server

__all__ = ["add_admin_arguments", "admin_bind", "admin_token", "with_admin"]

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


def check_admin(args: argparse.Namespace) -> None:
    """Refuse what cannot work, before anything starts."""
    if getattr(args, "admin", None) is None:
        if getattr(args, "admin_token_file", None) or getattr(args, "admin_allow_remote", False):
            raise ConfigError("--admin-token-file and --admin-allow-remote need --admin")
        return
    if getattr(args, "workers", 1) > 1:
        raise ConfigError("--admin shows one process's tree: it cannot be combined with --workers")
    admin_bind(args.admin, allow_remote=args.admin_allow_remote)


async def with_admin(
    args: argparse.Namespace,
    server: Server,
    serve: Callable[..., Awaitable[Any]],
    *,
    task_status: trio.TaskStatus[Any] = trio.TASK_STATUS_IGNORED,
) -> None:
    """Run ``serve`` (a ``task_status`` starter), with the admin listener if asked for.

    The listener starts first, so that the Observatory sees every session owner, and
    stops when ``serve`` returns.
    """
    if getattr(args, "admin", None) is None:
        await serve(task_status=task_status)
        return
    from ..admin import create_admin_app, serve_admin
    from ..runtime import Observatory

    host, port = admin_bind(args.admin, allow_remote=args.admin_allow_remote)
    token, made = admin_token(args.admin_token_file)
    observatory = Observatory()
    observatory.install()
    observatory.serve(server)
    app = create_admin_app(observatory, token=token)
    async with trio.open_nursery() as nursery:
        bound_host, bound_port = await nursery.start(
            lambda task_status: serve_admin(app, host=host, port=port, task_status=task_status)
        )
        where = f"[{bound_host}]" if ":" in bound_host else bound_host
        said = f" (token: {token})" if made else f" (token: {args.admin_token_file})"
        print(f"mcpactor: admin page http://{where}:{bound_port}/{said}", file=sys.stderr)

        async def run(*, task_status: trio.TaskStatus[Any]) -> None:
            await serve(task_status=task_status)
            nursery.cancel_scope.cancel()

        task_status.started(await nursery.start(run))
