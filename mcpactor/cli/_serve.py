"""``mcpactor serve``: what is served, and serving it over stdio.

One target, several mounted as one, every installed plugin or a config file's servers;
``serve --http`` goes on in ``_http``.
"""

from __future__ import annotations

import argparse
import functools
import logging
import os
from collections.abc import Sequence
from typing import Any

from .._exceptions import ConfigError, PluginError
from ..config import TargetError, load_server
from ..server import Server
from ._admin import check_admin, with_admin
from ._auth import refuse_auth_on_stdio
from ._extras import require_serve_extras
from ._observability import configure_observability
from ._report import StartFailed
from ._store import refuse_store_on_stdio, resolve_store

__all__ = ["serve"]


def serve(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    """Run ``mcpactor serve`` as ``args`` (parsed by ``parser``) say; return the exit status."""
    import attrs
    import trio

    from ..runtime import SessionOptions
    from ..transports import serve_stdio

    config = None
    if args.config:
        from ..config import load_config

        config = load_config(args.config)
        _apply_config(args, config, parser)
    if args.workers < 1:
        raise ConfigError(f"--workers must be at least 1, got {args.workers}")
    if args.workers > 1 and args.http is None:
        raise ConfigError("--workers needs --http")
    check_admin(args, config)
    # Before anything is loaded or started, and in the words of the fix.
    require_serve_extras(args, config)
    configure_observability(args, config)
    http_options = None
    if args.http is not None:
        from ._http import build_http_options

        http_options = build_http_options(args, config)
        resolve_store(args, config)
        if args.admin is not None and args.workers > 1 and args.store_url is None:
            raise ConfigError(
                "--admin with --workers needs --store: the first worker's page lists every "
                "worker through the store they share"
            )
        # The admin listener accepts the endpoint's access tokens with its admin scope.
        args.resource_server = http_options.resource_server
        # and holds its connections to the endpoint's deadlines and head limits.
        args.http_limits = http_options.connection_limits()
    else:
        refuse_auth_on_stdio(args, config)
        refuse_store_on_stdio(args, config)
    server = _served_server(args, config)
    _enable_extensions(args, config, server)
    stateless = _stateless_options(args)
    options = SessionOptions(shutdown_grace=args.grace)
    tasks = getattr(args, "tasks", None)
    if tasks is not None:
        options = attrs.evolve(options, tasks=tasks)
    if http_options is not None:
        from ._http import serve_over_http

        return serve_over_http(args, server, options, http_options, stateless)
    started = False

    async def run() -> None:
        nonlocal started
        async with trio.open_nursery() as nursery:
            await nursery.start(
                with_admin,
                args,
                server,
                functools.partial(
                    serve_stdio,
                    server,
                    options=options,
                    max_line_bytes=args.max_message_bytes,
                    tune_gc=not args.no_gc_tuning,
                    stateless=stateless,
                ),
            )
            started = True

    try:
        trio.run(run)
    except Exception as exc:
        if started:
            raise
        raise StartFailed(exc) from exc
    return 0


def _enable_extensions(args: argparse.Namespace, config: Any, server: Server) -> None:
    # The file's extensions, then the command line's: installed ones, named to be enabled.
    named = [*(config.extensions if config is not None else ()), *args.extensions]
    enabled = {extension.identifier for _, extension in server.extensions.tree()}
    if named:
        # Read only when some are named: a plain start imports no extension it serves.
        from ..plugins import load_extensions
        from ..server import BUILTIN_EXTENSIONS

        where = f"{config.source}: extensions" if config is not None else "--extension"
        # mcpactor's own (search mode, tool manifests) need no installing.
        builtin = [BUILTIN_EXTENSIONS[name]() for name in named if name in BUILTIN_EXTENSIONS]
        installed = [name for name in named if name not in BUILTIN_EXTENSIONS]
        for extension in [*builtin, *load_extensions(installed, source=where)]:
            # A plugin may enable it in code already: it is served once.
            if extension.identifier not in enabled:
                server.extensions.enable(extension)
    _enable_tool_search(args, config, server, enabled)


def _enable_tool_search(
    args: argparse.Namespace, config: Any, server: Server, enabled: set[str]
) -> None:
    # --tool-search, or the file's [tool_search]; a server that enables it in code keeps its own.
    table = config.tool_search if config is not None else None
    wanted = args.tool_search or (table is not None and table.enabled)
    if args.pinned and not wanted:
        raise ConfigError("--pin needs --tool-search (or [tool_search] in the config file)")
    if not wanted:
        return
    from ..server import TOOL_SEARCH, tool_search

    if TOOL_SEARCH in enabled:
        return
    pinned = [*(table.pinned if table is not None else ()), *args.pinned]
    limit = table.limit if table is not None else 5
    server.extensions.enable(tool_search(pinned=dict.fromkeys(pinned), limit=limit))


def _stateless_options(args: argparse.Namespace) -> Any:
    # The sealing keys and listen keep-alive: the command line, the file, the environment.
    from ..config import state_sealer
    from ..runtime import StatelessOptions

    options = StatelessOptions(sealer=state_sealer(args.state_key_file))
    if args.listen_keepalive is not None:
        import attrs

        options = attrs.evolve(options, keepalive=args.listen_keepalive)
    return options


def _pairs(items: Sequence[str], option: str) -> dict[str, str]:
    pairs: dict[str, str] = {}
    for item in items:
        name, equals, value = item.partition("=")
        if not equals or not name or not value:
            raise ConfigError(f"{option} expects NAME=VALUE, got {item!r}")
        pairs[name] = value
    return pairs


def _with_openapi_options(args: argparse.Namespace, server: Any) -> Any:
    # --openapi-base-url and --openapi-header apply to the documents the command names.
    import attrs

    headers = _pairs(args.openapi_header, "--openapi-header")
    openapi = server.openapi
    if args.openapi_base_url is not None:
        openapi = attrs.evolve(openapi, base_url=args.openapi_base_url)
    return attrs.evolve(server, openapi=openapi, headers={**server.headers, **headers})


def _openapi_server(args: argparse.Namespace, target: str) -> Server:
    from ..config import target_configs
    from ..openapi import OpenAPIError

    (server,) = target_configs([target], plugins=())
    server = _with_openapi_options(args, server)
    try:
        built: Server = server.openapi.build(server.name, server.headers)
    except OpenAPIError as exc:
        raise TargetError(f"{target!r}: {exc}") from exc
    return built


def _served_server(args: argparse.Namespace, config: Any) -> Server:
    # One target is served as it is; several, none (every plugin) or a config's servers
    # are mounted in one Server, each under its prefix.
    import attrs

    from ..plugins import GROUP, _entry_points, _load_plugin_in

    prefixes = _pairs(args.prefix, "--prefix")
    limits = _pairs(args.max_concurrent, "--max-concurrent")
    # The metadata is read once, for the names and for loading the one named.
    entries = _entry_points(GROUP)
    installed = sorted({entry.name for entry in entries})
    overridden = bool(prefixes or limits or args.no_prefix)
    if config is None and len(args.targets) == 1 and not overridden:
        (target,) = args.targets
        if target.startswith("openapi:"):
            # Only such a target can be a document (its settings are read for it alone).
            from ..config import is_openapi_target

            if is_openapi_target(target):
                return _openapi_server(args, target)
        if "://" in target:
            from ..client import proxy_url
            from ..config import target_configs

            (remote,) = target_configs([target], plugins=())
            try:
                return proxy_url(target, name=remote.name)
            except ValueError as exc:
                raise TargetError(str(exc)) from exc
        if target in installed:
            return _load_plugin_in(entries, target, GROUP)
        return load_server(target)
    from ..config import ServerConfig, assemble, target_configs

    if config is not None:
        servers = list(config.servers)
        unknown = [t for t in args.targets if t not in {s.name for s in servers}]
        if unknown:
            raise ConfigError(f"{config.source} names no server {', '.join(map(repr, unknown))}")
        if args.targets:
            servers = [s for s in servers if s.name in args.targets]
    elif args.targets:
        servers = target_configs(args.targets, plugins=installed)
    else:
        servers = [ServerConfig(name=name, plugin=name) for name in installed]
        _mind_config_here(installed)
    names = {s.name for s in servers}
    for option, given in (("--prefix", prefixes), ("--max-concurrent", limits)):
        unknown = sorted(set(given) - names)
        if unknown:
            raise ConfigError(
                f"{option}: no server named {', '.join(map(repr, unknown))}; "
                f"serving {', '.join(sorted(names)) or 'nothing'}"
            )
    for index, server in enumerate(servers):
        if server.openapi is not None and config is None:
            server = _with_openapi_options(args, server)
        if server.name in prefixes:
            server = attrs.evolve(server, prefix=prefixes[server.name])
        if server.name in limits:
            limit = limits[server.name]
            if not limit.isdigit() or int(limit) < 1:
                raise ConfigError(f"--max-concurrent {server.name}: expected N ≥ 1, got {limit!r}")
            server = attrs.evolve(server, max_concurrent=int(limit))
        servers[index] = server
    use_prefix = not args.no_prefix and (config.prefix if config is not None else True)
    # What the command line names must load; only what was found (every installed
    # plugin) may be left out with a warning.
    strict = args.strict or bool(args.targets and config is None)
    strict = strict or (config is not None and config.strict)
    return assemble(servers, prefix=use_prefix, strict=strict)


def _mind_config_here(installed: list[str]) -> None:
    # A configuration file in the current directory is read only when --config names it:
    # say so, rather than serve something else (or nothing) without a word.
    from pathlib import Path

    from ..config import find_config

    found = find_config(Path.cwd())
    if found is None:
        return
    if not installed:
        raise PluginError(
            "nothing to serve: no server was given and none is installed"
            f" ({found.name} is here: serve it with --config .)"
        )
    logging.getLogger("mcpactor").warning(
        "%s is here but not read: serving the installed plugins (--config . serves it)",
        found.name,
    )


def _apply_config(args: argparse.Namespace, config: Any, parser: argparse.ArgumentParser) -> None:
    # The file fills in what the command line left at its default.
    os.environ.update(config.env)
    defaults = parser.parse_args(["serve"])
    if config.log_level is not None and args.log_level is None:
        logging.getLogger().setLevel(config.log_level)
    if config.grace is not None and args.grace == defaults.grace:
        args.grace = config.grace
    args.tasks = config.tasks
    if args.state_key_file is None and config.state_keys_file is not None:
        args.state_key_file = str(config.state_keys_file)
    if args.listen_keepalive is None:
        args.listen_keepalive = config.keepalive
    http = config.http
    if config.transport == "http" and args.http is None:
        args.http = (
            f"[{http.host}]:{http.port}" if ":" in http.host else f"{http.host}:{http.port}"
        )
    # The rest of [http] applies whenever serving over HTTP, --http PORT or not.
    if args.path == defaults.path:
        args.path = http.path
    args.stateless = args.stateless or http.stateless
    if args.http_server is None:
        args.http_server = http.server
    if args.workers == defaults.workers:
        args.workers = http.workers
    for name in ("allowed_hosts", "allowed_origins"):
        configured = getattr(http, name)
        if getattr(args, name) is None and configured is not None:
            setattr(args, name, list(configured))
