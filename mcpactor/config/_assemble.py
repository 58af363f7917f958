# How a list of servers becomes the one Server that is served.
#
# ``assemble`` is shared by the deployment file and the command line: each
# ``ServerConfig`` is loaded (plugins through discovery, so a broken one is reported and
# skipped unless strict) and mounted in a parent Server under its prefix.

from __future__ import annotations

import logging
import os
import urllib.parse
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import attrs

from .._exceptions import ConfigError, PluginError
from .._version import __version__
from ..server import Server, ToolTransform
from ._openapi import OpenAPIConfig, is_openapi_target
from ._reader import NOT_A_NAME
from ._targets import TargetError, load_server
from ._transforms import ToolTransformConfig

__all__ = ["MountConflict", "ServerConfig", "assemble", "target_configs"]

_log = logging.getLogger("mcpactor")


@attrs.frozen
class ServerConfig:
    """One server to serve: where it comes from, its prefix and its limit."""

    #: the key it is configured under; names it in logs, errors and ``--prefix NAME=…``
    name: str
    #: an installed plugin (entry-point name)
    plugin: str | None = None
    #: ``module:attr`` or ``path/to/file.py[:attr]``
    target: str | None = None
    #: a stdio MCP server to start and proxy
    command: tuple[str, ...] | None = None
    #: a remote MCP server to proxy (``ws://``, ``wss://``, ``http(s)://``)
    url: str | None = None
    #: an HTTP API to serve from its OpenAPI document
    openapi: OpenAPIConfig | None = None
    #: True: prefixed with its name; False: unprefixed; a string: that prefix
    prefix: str | bool = True
    #: requests it may serve at once (None: no limit)
    max_concurrent: int | None = None
    #: extra environment of ``command`` (added to this process's)
    env: Mapping[str, str] = attrs.field(factory=dict)
    #: working directory of ``command``
    cwd: str | None = None
    #: headers sent to ``url`` (or to the API of ``openapi``)
    headers: Mapping[str, str] = attrs.field(factory=dict)
    #: seconds each of its tools may run unless the tool sets its own ``timeout``
    tool_timeout: float | None = None
    #: ``[servers.NAME.tools.TOOL]``: how its tools are exposed, by their own names
    tools: Mapping[str, ToolTransformConfig] = attrs.field(factory=dict)


class MountConflict(PluginError, ConfigError):
    """Servers that load but cannot be served together (a name served twice).

    A ``PluginError``, and a ``ConfigError`` too: prefixes, on the command line or in
    the file, are the fix.
    """


def target_configs(targets: Sequence[str], *, plugins: Sequence[str]) -> list[ServerConfig]:
    """ServerConfigs for command-line targets: plugin names, URLs, modules or paths.

    ``openapi:FILE`` (``.json``, ``.yaml``, ``.yml``) or ``openapi:URL`` is an OpenAPI
    document, named after the file.

    A plugin keeps its name; a URL is named after its host, a module after its last
    component and a file after its stem (``_2``, ``_3``… make names unique).
    """
    configs: list[ServerConfig] = []
    taken: set[str] = set()
    for target in targets:
        if target in plugins:
            config = ServerConfig(name=target, plugin=target)
        elif is_openapi_target(target):
            document = target.partition(":")[2]
            if "://" in document:
                stem = urllib.parse.urlsplit(document).path.rpartition("/")[2]
            else:
                stem = Path(document).name
            config = ServerConfig(
                name=_as_name(stem.partition(".")[0] or "openapi"),
                openapi=OpenAPIConfig(document),
            )
        elif "://" in target:
            host = urllib.parse.urlsplit(target).hostname or "remote"
            config = ServerConfig(name=_as_name(host), url=target)
        else:
            spec = target.partition(":")[0]
            stem = Path(spec).stem if spec.endswith(".py") or "/" in spec else spec
            config = ServerConfig(name=_as_name(stem.rpartition(".")[2]), target=target)
        name, count = config.name, 1
        while name in taken:
            count += 1
            name = f"{config.name}_{count}"
        taken.add(name)
        configs.append(attrs.evolve(config, name=name))
    return configs


def _as_name(text: str) -> str:
    return NOT_A_NAME.sub("_", text).strip("_") or "server"


def assemble(
    servers: Sequence[ServerConfig],
    *,
    prefix: bool = True,
    strict: bool = False,
    name: str = "mcpactor",
) -> Server:
    """Load every server and mount them all in one Server called ``name``.

    A server that fails to load is logged and left out, unless ``strict``. With
    ``prefix=False`` only servers that name their own prefix get one.

    Raises:
        PluginError: nothing could be loaded; with ``strict``, one server could not be;
            or two servers serve the same name or URI (the message names both).
        ConfigError: two servers have the same name.
    """
    from ..plugins import discover

    seen: set[str] = set()
    for spec in servers:
        if spec.name in seen:
            raise ConfigError(f"two servers are named {spec.name!r}")
        seen.add(spec.name)
    wanted = [s.plugin for s in servers if s.plugin is not None]
    plugins = {p.name: p for p in discover(wanted)} if wanted else {}
    loaded: list[tuple[ServerConfig, Server, dict[str, ToolTransform]]] = []
    failures: list[str] = []
    for config in servers:
        try:
            server = _load(config, plugins)
            if config.tool_timeout is not None:
                # The server's default deadline; tools with their own ``timeout`` keep it.
                server.tool_timeout = config.tool_timeout
            # Their functions are imported with the server: a failure is that server's.
            tools = {tool: spec.load() for tool, spec in config.tools.items()}
        except Exception as exc:
            # Importing a module runs its code: any failure there is that server's own.
            failure = _failed(config, exc)
            if strict:
                raise failure from exc
            _log.error("%s\n  (left out; the others are served)", failure)
            failures.append(str(failure))
            continue
        loaded.append((config, server, tools))
    if not loaded:
        reasons = "\n".join(failures) if failures else "no server was given and none is installed"
        raise PluginError(f"nothing to serve:\n{reasons}")
    parent = Server(name, __version__, instructions=_instructions([x[:2] for x in loaded]))
    for config, server, tools in loaded:
        if config.prefix is True:
            mount_prefix: str | None = config.name if prefix else None
        else:
            mount_prefix = config.prefix or None
        limit = config.max_concurrent
        try:
            parent.mount(server, mount_prefix, name=config.name, max_concurrent=limit, tools=tools)
        except PluginError as exc:
            raise MountConflict(
                str(exc), entry_point=exc.entry_point, distribution=exc.distribution
            ) from exc
        # Only the served server's chain runs: each server's middleware wraps the
        # composed server's requests, in the order the servers are listed.
        for layer in server.middleware:
            parent.middleware.use(layer)
    return parent


def _load(config: ServerConfig, plugins: Mapping[str, Any]) -> Server:
    # The server one configuration names, loaded, started or built.
    from ..client import proxy_stdio, proxy_url

    if config.plugin is not None:
        plugin = plugins[config.plugin]
        if plugin.error is not None:
            raise plugin.error
        assert plugin.server is not None
        server: Server = plugin.server
        return server
    if config.target is not None:
        return load_server(config.target)
    if config.command is not None:
        env = {**os.environ, **config.env} if config.env else None
        return proxy_stdio(config.command, name=config.name, env=env, cwd=config.cwd)
    if config.openapi is not None:
        built: Server = config.openapi.build(config.name, config.headers)
        return built
    assert config.url is not None
    return proxy_url(config.url, name=config.name, headers=config.headers or None)


def _failed(config: ServerConfig, exc: BaseException) -> PluginError:
    if isinstance(exc, PluginError):
        return exc
    from ..plugins import _describe_failure

    document = config.openapi.document if config.openapi is not None else None
    origin = config.target or config.url or document or " ".join(config.command or ())
    # A TargetError already says what and where; another error is described here.
    cause = str(exc) if isinstance(exc, TargetError) else _describe_failure(exc)
    return PluginError(
        f"server {config.name!r} failed to load\n  from: {origin}\n  cause: {cause}",
        entry_point=config.name,
    )


def _instructions(loaded: Sequence[tuple[ServerConfig, Server]]) -> str | None:
    parts = [
        f"{config.name}: {server.instructions}" for config, server in loaded if server.instructions
    ]
    return "\n\n".join(parts) or None
