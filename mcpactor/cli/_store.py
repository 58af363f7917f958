"""``mcpactor serve --store URL``: replicas that share one Redis store.

The flags, else the config file's ``[store]`` table, name the store; serving over HTTP
then opens it (``mcpactor.store._open``) and hands its pieces to the transport and the
hosts: the session records and relay, the SSE event store, the task store and the
change bus. Over stdio there is one client and nothing to share, so a store there is
an error.

This module is imported with the parser: it imports nothing heavy until it builds.
"""

from __future__ import annotations

import argparse
from typing import Any

__all__ = ["add_store_arguments", "refuse_store_on_stdio", "resolve_store"]


def add_store_arguments(serve: argparse.ArgumentParser) -> None:
    """Add the ``--store`` flags of ``mcpactor serve``."""
    store = serve.add_argument_group(
        "shared store (HTTP only: replicas serving the same sessions; the [store] table)"
    )
    store.add_argument(
        "--store",
        metavar="URL",
        help="the Redis store shared with the other replicas: redis://[[user]:password@]"
        "host[:port][/db], rediss://... (TLS: ?ca=, cert=, key=, verify=none), "
        "unix:///path?db=N, or the primary Sentinel names: redis+sentinel://[[user]:"
        "password@]host[:port][,host[:port]...]/service[/db]; ?wait=N: a session's record "
        "is written once N Redis replicas acknowledge it; sessions, SSE events, tasks and "
        "change events are shared",
    )
    store.add_argument(
        "--store-prefix",
        metavar="PREFIX",
        help="the start of every key and channel in the store; replicas of one "
        "deployment share it, deployments sharing a Redis differ (default: mcpactor)",
    )


def resolve_store(args: argparse.Namespace, config: Any) -> None:
    """Set ``args.store_url`` and ``args.store_prefix``: the flags, else the file.

    Raises:
        ConfigError: the URL or the prefix is not valid.
    """
    from .._exceptions import ConfigError
    from ..config import DEFAULT_PREFIX, prefix_problem
    from ..store import parse_store_url

    table = config.store if config is not None else None
    url = None
    if args.store is not None:
        try:
            url = parse_store_url(args.store)
        except ConfigError as exc:
            raise ConfigError(f"--store: {exc}") from None
    elif table is not None:
        url = table.url
    prefix = args.store_prefix
    if prefix is not None:
        problem = prefix_problem(prefix)
        if problem is not None:
            raise ConfigError(f"--store-prefix: {problem}, got {prefix[:80]!r}")
    elif table is not None and table.prefix is not None:
        prefix = table.prefix
    args.store_url = url
    args.store_prefix = prefix or DEFAULT_PREFIX


def refuse_store_on_stdio(args: argparse.Namespace, config: Any) -> None:
    """Refuse a store over stdio, where one client has nothing to share.

    Raises:
        ConfigError: ``--store`` (or the file's ``[store] url``) without ``--http``.
    """
    from .._exceptions import ConfigError

    if args.store is not None or args.store_prefix is not None:
        option = "--store" if args.store is not None else "--store-prefix"
        raise ConfigError(
            f"{option} needs --http: a store is shared by replicas serving HTTP, and "
            "stdio has one client"
        )
    if config is not None and config.store is not None and config.store.url is not None:
        raise ConfigError(
            f"{config.source}: store.url needs transport = 'http' (or --http): a store is "
            "shared by replicas serving HTTP, and stdio has one client"
        )
