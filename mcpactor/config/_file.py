# The deployment file: reading and checking it.
#
# ``mcpactor.toml`` (or the ``[tool.mcpactor]`` table of ``pyproject.toml``) names the
# servers to serve together and how: plugins by entry-point name, local servers as
# ``module:attr`` or a ``.py`` path, remote servers as a stdio ``command`` or a ``url``;
# their prefixes, limits and tool timeouts; the sessions' task limits; the keys of
# stateless requests' sealed states (``[stateless]``); and the transport,
# with the HTTP server's settings (the ``[http]`` table, _http.py) and its
# authorization (the ``[auth]`` table, _auth.py) and the admin listener (the
# ``[admin]`` table, _admin.py), and the Redis store replicas share (the
# ``[store]`` table, _store.py). Parsing checks
# every key and names the one that is wrong (_reader.py). The servers read here
# become one Server in _assemble.py, which the command line shares.

from __future__ import annotations

import os
import tomllib
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, Final, Literal, TypeVar

import attrs

from .._exceptions import ConfigError, PluginError
from ..runtime import TaskOptions
from ._admin import AdminConfig
from ._admin import read_admin_config as _admin_config
from ._assemble import MountConflict, ServerConfig, assemble, target_configs
from ._auth import AuthConfig
from ._auth import read_auth_config as _auth_config
from ._http import HttpConfig
from ._http import read_http_config as _http_config
from ._openapi import OPENAPI_KEYS, openapi_config
from ._reader import NOT_A_NAME
from ._reader import Reader as _Reader
from ._store import StoreConfig
from ._store import read_store_config as _store_config
from ._transforms import read_tool_transforms

__all__ = [
    "AdminConfig",
    "AuthConfig",
    "Config",
    "ConfigError",
    "HttpConfig",
    "MountConflict",
    "ServerConfig",
    "StoreConfig",
    "ToolSearchConfig",
    "assemble",
    "find_config",
    "load_config",
    "parse_config",
    "target_configs",
]

CONFIG_NAME: Final = "mcpactor.toml"
_LOG_LEVELS: Final = ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL")
#: every key of the file's top table
_KEYS: Final = frozenset(
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
        "stateless",
        "auth",
        "log_format",
        "observability",
        "admin",
        "store",
        "extensions",
        "tool_search",
    }
)
_T = TypeVar("_T")


@attrs.frozen
class ToolSearchConfig:
    """``[tool_search]``: search mode for the served server."""

    #: False: the table is there but search mode is off
    enabled: bool = True
    #: the tools listed beside ``search_tools`` and ``call_tool``
    pinned: tuple[str, ...] = ()
    #: how many tools a search returns unless it asks for another number
    limit: int = 5


@attrs.frozen
class Config:
    """A parsed configuration file."""

    #: the file it came from
    source: Path
    servers: tuple[ServerConfig, ...] = ()
    transport: Literal["stdio", "http"] = "stdio"
    http: HttpConfig = attrs.field(factory=HttpConfig)
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
    #: ``[stateless] state_keys_file``: the keys that seal multi round-trip states
    state_keys_file: Path | None = None
    #: ``[stateless] keepalive``: seconds between keep-alive comments on listen streams
    keepalive: float | None = None
    #: ``[auth]``: serve as an OAuth 2.1 resource server (HTTP only); None: no table
    auth: AuthConfig | None = None
    #: ``log_format``: "text" or "json" (JSON lines); None: not set
    log_format: str | None = None
    #: ``[observability] otel``: an OpenTelemetry span per request
    otel: bool = False
    #: ``[admin]``: the admin listener (_admin.py); None: no table
    admin: AdminConfig | None = None
    #: ``[store]``: the Redis store shared by replicas (_store.py); None: no table
    store: StoreConfig | None = None
    #: ``extensions``: the identifiers of installed extensions to enable, in order
    extensions: tuple[str, ...] = ()
    #: ``[tool_search]``: serve in search mode (docs/catalogs.md); None: no table
    tool_search: ToolSearchConfig | None = None


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
    reader.known(data, _KEYS)
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
    stateless = reader.table(data, "stateless")
    stateless_reader = reader.nested("stateless")
    stateless_reader.known(stateless, {"state_keys_file", "keepalive"})
    keys_file = stateless_reader.optional(stateless, "state_keys_file", str)
    keepalive = stateless_reader.seconds(stateless, "keepalive")
    observability = reader.table(data, "observability")
    observability_reader = reader.nested("observability")
    observability_reader.known(observability, {"otel"})
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
        tasks=_table(reader, data, "tasks", _tasks_config),
        # A relative path is the config file's neighbour, as ``target`` files are.
        state_keys_file=source.parent / keys_file if keys_file is not None else None,
        keepalive=keepalive,
        log_format=(
            reader.choice(data, "log_format", ("text", "json"), "text")
            if "log_format" in data
            else None
        ),
        otel=observability_reader.optional(observability, "otel", bool, False),
        auth=_table(reader, data, "auth", _auth_config),
        admin=_table(reader, data, "admin", _admin_config),
        store=_table(reader, data, "store", _store_config),
        extensions=_extensions(reader, data),
        tool_search=_table(reader, data, "tool_search", _tool_search_config),
    )


def _tool_search_config(reader: _Reader, table: Mapping[str, Any]) -> ToolSearchConfig:
    reader.known(table, {"enabled", "pinned", "limit"})
    limit = reader.optional(table, "limit", int, 5)
    if not 1 <= limit <= 50:
        raise reader.error("limit", "a number of results from 1 to 50", limit)
    return ToolSearchConfig(
        enabled=reader.optional(table, "enabled", bool, True),
        pinned=reader.string_list(table, "pinned") or (),
        limit=limit,
    )


def _extensions(reader: _Reader, data: Mapping[str, Any]) -> tuple[str, ...]:
    # Named as SEP-2133 says; whether they are installed is known when serving.
    from ..server import check_identifier

    names = reader.string_list(data, "extensions") or ()
    for name in names:
        try:
            check_identifier(name)
        except PluginError:
            why = "extension identifiers of the form '{vendor-prefix}/{name}' (com.example/x)"
            raise reader.error("extensions", why, name) from None
    return names


def _table(
    reader: _Reader,
    data: Mapping[str, Any],
    key: str,
    read: Callable[[_Reader, Mapping[str, Any]], _T],
) -> _T | None:
    # A table the file may leave out: None then, not a table of defaults.
    return read(reader.nested(key), reader.table(data, key)) if key in data else None


_OPENAPI_NEEDS: Final = tuple((key, "openapi") for key in sorted(OPENAPI_KEYS))


def _check_applies(inner: _Reader, value: Mapping[str, Any]) -> None:
    # Settings of one kind of source given to a server of another.
    for key, needs in (("env", "command"), ("cwd", "command"), *_OPENAPI_NEEDS):
        if key in value and needs not in value:
            raise inner.error(key, f"only applies to a server with {needs!r}", value[key])
    if "headers" in value and "url" not in value and "openapi" not in value:
        raise inner.error(
            "headers", "only applies to a server with 'url' or 'openapi'", value["headers"]
        )


def _server_config(reader: _Reader, name: str, value: Any) -> ServerConfig:
    if not isinstance(value, dict):
        raise reader.error(name, "expected a table", value)
    if not name or NOT_A_NAME.search(name):
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
            "tools",
            "openapi",
            *OPENAPI_KEYS,
        },
    )
    sources = [key for key in ("plugin", "target", "command", "url", "openapi") if key in value]
    if len(sources) > 1:
        raise reader.error(
            name,
            f"give one of plugin, target, command, url, openapi; got {', '.join(sources)}",
            value,
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
    _check_applies(inner, value)
    prefix: str | bool = True
    if "prefix" in value:
        raw_prefix = value["prefix"]
        if isinstance(raw_prefix, bool) or (
            isinstance(raw_prefix, str) and raw_prefix and not NOT_A_NAME.search(raw_prefix)
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
        tools=read_tool_transforms(inner.nested("tools"), inner.table(value, "tools")),
        openapi=openapi_config(inner, value) if "openapi" in value else None,
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
