# The deployment file, and how a list of servers becomes the one Server that is served.
#
# ``mcpactor.toml`` (or the ``[tool.mcpactor]`` table of ``pyproject.toml``) names the
# servers to serve together and how: plugins by entry-point name, local servers as
# ``module:attr`` or a ``.py`` path, remote servers as a stdio ``command`` or a ``url``;
# their prefixes, limits and tool timeouts; the sessions' task limits; and the transport,
# with the HTTP server's settings: ``[http]`` sets HttpOptions fields by their own names
# (``HttpConfig.options``), and the command line's flags win over them. Parsing checks
# every key and names the one that is wrong (unknown keys included: a typo must not be
# silently ignored).
#
# ``assemble`` is shared by the file and the command line: each ``ServerConfig`` is
# loaded (plugins through discovery, so a broken one is reported and skipped unless
# strict) and mounted in a parent Server under its prefix.

from __future__ import annotations

import logging
import math
import os
import re
import tomllib
import urllib.parse
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Final, Literal

import attrs

from ._exceptions import ConfigError, PluginError
from ._targets import TargetError, load_server
from ._version import __version__
from .runtime import TaskOptions
from .server import Server

__all__ = [
    "Config",
    "ConfigError",
    "HttpConfig",
    "MountConflict",
    "ServerConfig",
    "assemble",
    "find_config",
    "load_config",
    "parse_config",
]

_log = logging.getLogger("mcpactor")

CONFIG_NAME: Final = "mcpactor.toml"
_LOG_LEVELS: Final = ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL")
_NOT_A_NAME: Final = re.compile(r"[^A-Za-z0-9_.\-]+")


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
    #: True: prefixed with its name; False: unprefixed; a string: that prefix
    prefix: str | bool = True
    #: requests it may serve at once (None: no limit)
    max_concurrent: int | None = None
    #: extra environment of ``command`` (added to this process's)
    env: Mapping[str, str] = attrs.field(factory=dict)
    #: working directory of ``command``
    cwd: str | None = None
    #: headers sent to ``url``
    headers: Mapping[str, str] = attrs.field(factory=dict)
    #: seconds each of its tools may run unless the tool sets its own ``timeout``
    tool_timeout: float | None = None


@attrs.frozen
class HttpConfig:
    """Where and how to serve over HTTP.

    The fields after ``workers`` are ``HttpOptions`` fields of the same name; None means
    the file does not set it (the option's default, or the command line's, applies).
    """

    host: str = "127.0.0.1"
    port: int = 8000
    path: str = "/mcp"
    stateless: bool = False
    json_response: bool = False
    allowed_hosts: tuple[str, ...] | None = None
    allowed_origins: tuple[str, ...] | None = None
    #: "builtin" (mcpactor's HTTP/1.1 server) or "hypercorn" (HTTP/2)
    server: str = "builtin"
    #: processes serving the port (``--workers``; more than one needs ``stateless``)
    workers: int = 1
    #: "auto", "json" or "sse"
    response_mode: str | None = None
    #: PEM files (relative paths are the file's): both set, the server speaks HTTPS
    tls_cert: str | None = None
    tls_key: str | None = None
    cors_origins: tuple[str, ...] | None = None
    #: ``module:function`` (or ``path/file.py:function``) of the authentication hook
    authenticate: str | None = None
    www_authenticate: str | None = None
    #: the liveness endpoint's path; False: none
    health_path: str | Literal[False] | None = None
    access_log: bool | None = None
    #: the legacy HTTP+SSE paths and the WebSocket path; False: that transport is off
    sse_path: str | Literal[False] | None = None
    messages_path: str | Literal[False] | None = None
    websocket_path: str | Literal[False] | None = None
    max_sessions: int | None = None
    max_sessions_per_client: int | None = None
    max_connections: int | None = None
    max_head_bytes: int | None = None
    max_header_count: int | None = None
    session_idle_timeout: float | None = None
    unconfirmed_session_timeout: float | None = None
    keep_alive_timeout: float | None = None
    request_timeout: float | None = None
    write_timeout: float | None = None
    websocket_idle_timeout: float | None = None

    def options(self) -> dict[str, Any]:
        """The ``HttpOptions`` keyword arguments the file sets (``authenticate`` unloaded)."""
        given: dict[str, Any] = {}
        if self.json_response:
            given["response_mode"] = "json"
        for name in _HTTP_OPTION_KEYS:
            value = getattr(self, name)
            if value is not None:
                # ``false`` in the file switches a path off: None in HttpOptions.
                given[name] = None if value is False and name in _HTTP_PATH_KEYS else value
        return given


#: the [http] keys that are HttpOptions fields, by kind
_HTTP_PATH_KEYS: Final = ("health_path", "sse_path", "messages_path", "websocket_path")
_HTTP_COUNT_KEYS: Final = (
    "max_sessions",
    "max_sessions_per_client",
    "max_connections",
    "max_head_bytes",
    "max_header_count",
)
_HTTP_SECONDS_KEYS: Final = (
    "session_idle_timeout",
    "unconfirmed_session_timeout",
    "keep_alive_timeout",
    "request_timeout",
    "write_timeout",
    "websocket_idle_timeout",
)
_HTTP_OPTION_KEYS: Final = (
    "response_mode",
    "tls_cert",
    "tls_key",
    "cors_origins",
    "authenticate",
    "www_authenticate",
    "access_log",
    *_HTTP_PATH_KEYS,
    *_HTTP_COUNT_KEYS,
    *_HTTP_SECONDS_KEYS,
)


@attrs.frozen
class Config:
    """A parsed configuration file."""

    #: the file it came from
    source: Path
    servers: tuple[ServerConfig, ...] = ()
    transport: Literal["stdio", "http"] = "stdio"
    http: HttpConfig = HttpConfig()
    #: False: no server is prefixed unless it names a prefix
    prefix: bool = True
    #: a plugin that fails to load stops the server instead of being skipped
    strict: bool = False
    #: set in this process's environment before anything is loaded
    env: Mapping[str, str] = attrs.field(factory=dict)
    log_level: str | None = None
    #: seconds in-flight requests get at shutdown
    grace: float | None = None
    #: limits of each session's tasks (None: the defaults)
    tasks: TaskOptions | None = None


# --- reading ---------------------------------------------------------------------------


def find_config(directory: Path) -> Path | None:
    """The configuration in ``directory``: mcpactor.toml, else a pyproject.toml with
    ``[tool.mcpactor]``; None if there is neither."""
    candidate = directory / CONFIG_NAME
    if candidate.is_file():
        return candidate
    pyproject = directory / "pyproject.toml"
    if pyproject.is_file():
        try:
            data = tomllib.loads(pyproject.read_text(encoding="utf-8"))
        except (tomllib.TOMLDecodeError, UnicodeDecodeError):
            return None
        tool = data.get("tool")
        if isinstance(tool, dict) and "mcpactor" in tool:
            return pyproject
    return None


def load_config(path: str | os.PathLike[str]) -> Config:
    """Read a configuration file (or the one in a directory, see ``find_config``).

    Raises:
        ConfigError: it cannot be read, is not TOML, or a key is wrong.
    """
    source = Path(path)
    if source.is_dir():
        found = find_config(source)
        if found is None:
            raise ConfigError(
                f"{str(source)!r} has no {CONFIG_NAME} and no pyproject.toml "
                "with a [tool.mcpactor] table"
            )
        source = found
    try:
        text = source.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"cannot read the configuration {str(source)!r}: {exc}") from exc
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{source}: not valid TOML: {exc}") from exc
    if source.name == "pyproject.toml":
        tool = data.get("tool")
        table = tool.get("mcpactor") if isinstance(tool, dict) else None
        if not isinstance(table, dict):
            raise ConfigError(f"{source}: no [tool.mcpactor] table")
        return parse_config(table, source=source, key="tool.mcpactor")
    return parse_config(data, source=source)


def parse_config(data: Mapping[str, Any], *, source: Path, key: str = "") -> Config:
    """Check and convert the configuration table ``data`` (read from ``source``).

    Relative paths (``target`` files, ``cwd``) are taken from the file's directory.

    Raises:
        ConfigError: a key is unknown or its value is wrong; the message names it.
    """
    reader = _Reader(source, key)
    reader.known(
        data,
        {
            "servers",
            "transport",
            "http",
            "prefix",
            "strict",
            "env",
            "log_level",
            "grace",
            "tasks",
        },
    )
    transport = reader.choice(data, "transport", ("stdio", "http"), "stdio")
    log_level = reader.optional(data, "log_level", str)
    if log_level is not None and log_level.upper() not in _LOG_LEVELS:
        raise reader.error("log_level", f"expected one of {', '.join(_LOG_LEVELS)}", log_level)
    grace = reader.optional(data, "grace", (int, float))
    if grace is not None and grace < 0:
        raise reader.error("grace", "expected a number of seconds ≥ 0", grace)
    servers_table = reader.table(data, "servers")
    servers = tuple(
        _server_config(reader.nested("servers"), name, value)
        for name, value in servers_table.items()
    )
    return Config(
        source=source,
        servers=servers,
        transport="http" if transport == "http" else "stdio",
        http=_http_config(reader.nested("http"), reader.table(data, "http")),
        prefix=reader.optional(data, "prefix", bool, True),
        strict=reader.optional(data, "strict", bool, False),
        env=reader.strings(data, "env"),
        log_level=log_level.upper() if log_level is not None else None,
        grace=float(grace) if grace is not None else None,
        tasks=(
            _tasks_config(reader.nested("tasks"), reader.table(data, "tasks"))
            if "tasks" in data
            else None
        ),
    )


def _server_config(reader: _Reader, name: str, value: Any) -> ServerConfig:
    if not isinstance(value, dict):
        raise reader.error(name, "expected a table", value)
    if not name or _NOT_A_NAME.search(name):
        raise reader.error(name, "server names use A-Z, a-z, 0-9, '_', '-', '.'", name)
    inner = reader.nested(name)
    inner.known(
        value,
        {
            "plugin",
            "target",
            "command",
            "url",
            "prefix",
            "max_concurrent",
            "env",
            "cwd",
            "headers",
            "tool_timeout",
        },
    )
    sources = [key for key in ("plugin", "target", "command", "url") if key in value]
    if len(sources) > 1:
        raise reader.error(
            name, f"give one of plugin, target, command, url; got {', '.join(sources)}", value
        )
    plugin = inner.optional(value, "plugin", str)
    target = inner.optional(value, "target", str)
    url = inner.optional(value, "url", str)
    command = None
    if "command" in value:
        raw = value["command"]
        if not isinstance(raw, list) or not raw or not all(isinstance(a, str) for a in raw):
            raise inner.error("command", "expected a non-empty list of strings", raw)
        command = tuple(raw)
    if not sources:
        plugin = name  # a table of settings only: the plugin of that name
    if target is not None:
        spec, colon, attr = target.partition(":")
        if spec.endswith(".py") or "/" in spec:
            target = str(reader.directory / spec) + colon + attr
    for key, needs in (("env", "command"), ("cwd", "command"), ("headers", "url")):
        if key in value and needs not in value:
            raise inner.error(key, f"only applies to a server with {needs!r}", value[key])
    prefix: str | bool = True
    if "prefix" in value:
        raw_prefix = value["prefix"]
        if isinstance(raw_prefix, bool) or (
            isinstance(raw_prefix, str) and raw_prefix and not _NOT_A_NAME.search(raw_prefix)
        ):
            prefix = raw_prefix
        else:
            raise inner.error(
                "prefix",
                "expected true, false or a prefix of A-Z, a-z, 0-9, '_', '-', '.'",
                raw_prefix,
            )
    max_concurrent = inner.optional(value, "max_concurrent", int)
    if max_concurrent is not None and (isinstance(max_concurrent, bool) or max_concurrent < 1):
        raise inner.error("max_concurrent", "expected a positive integer", max_concurrent)
    cwd = inner.optional(value, "cwd", str)
    tool_timeout = inner.seconds(value, "tool_timeout")
    return ServerConfig(
        name=name,
        plugin=plugin,
        target=target,
        command=command,
        url=url,
        prefix=prefix,
        max_concurrent=max_concurrent,
        env=inner.strings(value, "env"),
        cwd=str(reader.directory / cwd) if cwd is not None else None,
        headers=inner.strings(value, "headers"),
        tool_timeout=tool_timeout,
    )


def _tasks_config(reader: _Reader, table: Mapping[str, Any]) -> TaskOptions:
    # The keys are TaskOptions' own fields, so the file and the Python API agree.
    reader.known(table, {"max_running", "max_stored", "default_ttl", "max_ttl", "poll_interval"})
    given: dict[str, Any] = {}
    for key in ("max_running", "max_stored"):
        count = reader.optional(table, key, int)
        if count is None:
            continue
        if count < 1:
            raise reader.error(key, "expected a positive integer", count)
        given[key] = count
    for key in ("default_ttl", "max_ttl", "poll_interval"):
        seconds = reader.seconds(table, key)
        if seconds is not None:
            given[key] = seconds
    default_ttl, max_ttl = given.get("default_ttl"), given.get("max_ttl")
    if default_ttl is not None and max_ttl is not None and default_ttl > max_ttl:
        raise reader.error(
            "default_ttl", f"expected at most {reader._key('max_ttl')} ({max_ttl:g})", default_ttl
        )
    return TaskOptions(**given)


def _http_config(reader: _Reader, table: Mapping[str, Any]) -> HttpConfig:
    reader.known(
        table,
        {
            "host",
            "port",
            "path",
            "stateless",
            "json_response",
            "allowed_hosts",
            "allowed_origins",
            "server",
            "workers",
            *_HTTP_OPTION_KEYS,
        },
    )
    port = reader.optional(table, "port", int, 8000)
    if isinstance(port, bool) or not 0 <= port <= 65535:
        raise reader.error("port", "expected a port number from 0 to 65535", port)
    path = reader.optional(table, "path", str, "/mcp")
    if not path.startswith("/"):
        raise reader.error("path", "expected a path starting with '/'", path)
    workers = reader.optional(table, "workers", int, 1)
    if workers < 1:
        raise reader.error("workers", "expected at least 1", workers)
    json_response = reader.optional(table, "json_response", bool, False)
    response_mode = None
    if "response_mode" in table:
        response_mode = reader.choice(table, "response_mode", ("auto", "json", "sse"), "auto")
        if json_response and response_mode != "json":
            raise reader.error(
                "response_mode",
                "expected 'json' or nothing with json_response = true",
                response_mode,
            )
    given: dict[str, Any] = {}
    for key in ("tls_cert", "tls_key"):
        file = reader.optional(table, key, str)
        if file is not None:
            given[key] = str(reader.directory / file)
    if ("tls_cert" in given) != ("tls_key" in given):
        key = "tls_key" if "tls_cert" in given else "tls_cert"
        raise ConfigError(
            f"{reader.source}: {reader._key(key)}: missing; HTTPS needs tls_cert and tls_key"
        )
    authenticate = reader.optional(table, "authenticate", str)
    if authenticate is not None:
        spec, colon, function = authenticate.partition(":")
        if not colon or not spec or not function:
            raise reader.error("authenticate", "expected 'module:function'", authenticate)
        if spec.endswith(".py") or "/" in spec:
            authenticate = f"{reader.directory / spec}:{function}"
    for key in _HTTP_PATH_KEYS:
        if key in table:
            value = table[key]
            if value is not False and not (isinstance(value, str) and value.startswith("/")):
                raise reader.error(key, "expected a path starting with '/', or false", value)
            given[key] = value
    for key in _HTTP_COUNT_KEYS:
        count = reader.optional(table, key, int)
        if count is not None:
            if count < 1:
                raise reader.error(key, "expected a positive integer", count)
            given[key] = count
    for key in _HTTP_SECONDS_KEYS:
        seconds = reader.seconds(table, key)
        if seconds is not None:
            given[key] = seconds
    return HttpConfig(
        host=reader.optional(table, "host", str, "127.0.0.1"),
        port=port,
        path=path,
        stateless=reader.optional(table, "stateless", bool, False),
        json_response=json_response,
        allowed_hosts=reader.string_list(table, "allowed_hosts"),
        allowed_origins=reader.string_list(table, "allowed_origins"),
        server=reader.choice(table, "server", ("builtin", "hypercorn"), "builtin"),
        workers=workers,
        response_mode=response_mode,
        cors_origins=reader.string_list(table, "cors_origins"),
        authenticate=authenticate,
        www_authenticate=reader.optional(table, "www_authenticate", str),
        access_log=reader.optional(table, "access_log", bool),
        **given,
    )


class _Reader:
    # Reads values out of one table, and names the full key in every error.

    def __init__(self, source: Path, prefix: str) -> None:
        self.source = source
        self.prefix = prefix
        self.directory = source.parent

    def nested(self, key: str) -> _Reader:
        return _Reader(self.source, self._key(key))

    def _key(self, key: str) -> str:
        shown = key if _NOT_A_NAME.sub("", key) == key and "." not in key else f'"{key}"'
        return f"{self.prefix}.{shown}" if self.prefix else shown

    def error(self, key: str, expected: str, got: Any) -> ConfigError:
        return ConfigError(f"{self.source}: {self._key(key)}: {expected}, got {got!r}")

    def known(self, table: Mapping[str, Any], keys: set[str]) -> None:
        for key in table:
            if key not in keys:
                raise ConfigError(
                    f"{self.source}: {self._key(key)}: unknown key; "
                    f"expected one of {', '.join(sorted(keys))}"
                )

    def optional(self, table: Mapping[str, Any], key: str, kind: Any, default: Any = None) -> Any:
        if key not in table:
            return default
        value = table[key]
        # A TOML boolean is not a number here, whatever Python thinks.
        wrong_bool = isinstance(value, bool) and kind is not bool
        if not isinstance(value, kind) or wrong_bool:
            names = kind if isinstance(kind, tuple) else (kind,)
            expected = " or ".join(_TYPE_NAMES.get(k, k.__name__) for k in names)
            raise self.error(key, f"expected {expected}", value)
        return value

    def seconds(self, table: Mapping[str, Any], key: str) -> float | None:
        value = self.optional(table, key, (int, float))
        # TOML has inf and nan; neither is a duration.
        if value is not None and not (math.isfinite(value) and value > 0):
            raise self.error(key, "expected a positive number of seconds", value)
        return float(value) if value is not None else None

    def choice(
        self, table: Mapping[str, Any], key: str, options: Sequence[str], default: str
    ) -> str:
        value = self.optional(table, key, str, default)
        if value not in options:
            raise self.error(key, f"expected one of {', '.join(map(repr, options))}", value)
        return str(value)

    def table(self, table: Mapping[str, Any], key: str) -> Mapping[str, Any]:
        value = table.get(key, {})
        if not isinstance(value, dict):
            raise self.error(key, "expected a table", value)
        return value

    def strings(self, table: Mapping[str, Any], key: str) -> dict[str, str]:
        value = self.table(table, key)
        for name, item in value.items():
            if not isinstance(item, str):
                raise self.nested(key).error(name, "expected a string", item)
        return dict(value)

    def string_list(self, table: Mapping[str, Any], key: str) -> tuple[str, ...] | None:
        if key not in table:
            return None
        value = table[key]
        if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
            raise self.error(key, "expected a list of strings", value)
        return tuple(value)


_TYPE_NAMES: Final[Mapping[Any, str]] = {
    str: "a string",
    int: "an integer",
    float: "a number",
    bool: "true or false",
}


# --- assembling ------------------------------------------------------------------------


class MountConflict(PluginError, ConfigError):
    """Servers that load but cannot be served together (a name served twice).

    A ``PluginError``, and a ``ConfigError`` too: prefixes, on the command line or in
    the file, are the fix.
    """


def target_configs(targets: Sequence[str], *, plugins: Sequence[str]) -> list[ServerConfig]:
    """ServerConfigs for command-line targets: plugin names, URLs, modules or paths.

    A plugin keeps its name; a URL is named after its host, a module after its last
    component and a file after its stem (``_2``, ``_3``… make names unique).
    """
    configs: list[ServerConfig] = []
    taken: set[str] = set()
    for target in targets:
        if target in plugins:
            config = ServerConfig(name=target, plugin=target)
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
    return _NOT_A_NAME.sub("_", text).strip("_") or "server"


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
    from .client import proxy_stdio, proxy_url
    from .plugins import discover

    seen: set[str] = set()
    for spec in servers:
        if spec.name in seen:
            raise ConfigError(f"two servers are named {spec.name!r}")
        seen.add(spec.name)
    wanted = [s.plugin for s in servers if s.plugin is not None]
    plugins = {p.name: p for p in discover(wanted)} if wanted else {}
    loaded: list[tuple[ServerConfig, Server]] = []
    failures: list[str] = []
    for config in servers:
        try:
            if config.plugin is not None:
                plugin = plugins[config.plugin]
                if plugin.error is not None:
                    raise plugin.error
                assert plugin.server is not None
                server = plugin.server
            elif config.target is not None:
                server = load_server(config.target)
            elif config.command is not None:
                env = {**os.environ, **config.env} if config.env else None
                server = proxy_stdio(config.command, name=config.name, env=env, cwd=config.cwd)
            else:
                assert config.url is not None
                server = proxy_url(config.url, name=config.name, headers=config.headers or None)
            if config.tool_timeout is not None:
                # The server's default deadline; tools with their own ``timeout`` keep it.
                server.tool_timeout = config.tool_timeout
        except Exception as exc:
            # Importing a module runs its code: any failure there is that server's own.
            failure = _failed(config, exc)
            if strict:
                raise failure from exc
            _log.error("%s\n  (left out; the others are served)", failure)
            failures.append(str(failure))
            continue
        loaded.append((config, server))
    if not loaded:
        reasons = "\n".join(failures) if failures else "no server was given and none is installed"
        raise PluginError(f"nothing to serve:\n{reasons}")
    parent = Server(name, __version__, instructions=_instructions(loaded))
    for config, server in loaded:
        if config.prefix is True:
            mount_prefix: str | None = config.name if prefix else None
        else:
            mount_prefix = config.prefix or None
        try:
            parent.mount(
                server, mount_prefix, name=config.name, max_concurrent=config.max_concurrent
            )
        except PluginError as exc:
            raise MountConflict(
                str(exc), entry_point=exc.entry_point, distribution=exc.distribution
            ) from exc
    return parent


def _failed(config: ServerConfig, exc: BaseException) -> PluginError:
    if isinstance(exc, PluginError):
        return exc
    from .plugins import _describe_failure

    origin = config.target or config.url or " ".join(config.command or ())
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
