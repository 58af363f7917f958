# The ``[http]`` table of the deployment file: where and how to serve over HTTP.
#
# Its keys after ``workers`` are HttpOptions fields by their own names
# (``HttpConfig.options``), so the file and the Python API agree; the command line's
# flags win over them. Relative paths (TLS files, an authentication hook's file) are
# the file's.

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final, Literal

import attrs

from .._exceptions import ConfigError
from ..transports import (
    FORWARDED_HEADERS,
    HTTP_LIMIT_OPTIONS,
    HTTP_TIMEOUT_OPTIONS,
    ServerCardOptions,
    parse_networks,
)
from ._reader import Reader

__all__ = ["HttpConfig", "read_http_config"]


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
    #: the readiness endpoint's path; False: none
    ready_path: str | Literal[False] | None = None
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
    #: the reverse proxies whose forwarded client address is honoured, and the header
    forwarded_allow_ips: tuple[str, ...] | None = None
    forwarded_header: str | None = None
    #: the ``[http.server_card]`` table: the Server Card and AI Catalog (experimental)
    server_card: ServerCardOptions | None = None
    #: seconds a draining server keeps accepting before its listener closes
    drain_delay: float | None = None

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
        if self.server_card is not None:
            given["server_card"] = self.server_card
        return given


#: the [http] keys that are HttpOptions fields, by kind
_HTTP_PATH_KEYS: Final = (
    "health_path",
    "ready_path",
    "sse_path",
    "messages_path",
    "websocket_path",
)
_HTTP_COUNT_KEYS: Final = HTTP_LIMIT_OPTIONS
_HTTP_SECONDS_KEYS: Final = HTTP_TIMEOUT_OPTIONS
_HTTP_OPTION_KEYS: Final = (
    "response_mode",
    "tls_cert",
    "tls_key",
    "cors_origins",
    "authenticate",
    "www_authenticate",
    "access_log",
    "forwarded_allow_ips",
    "forwarded_header",
    "drain_delay",
    *_HTTP_PATH_KEYS,
    *_HTTP_COUNT_KEYS,
    *_HTTP_SECONDS_KEYS,
)


#: every key of the table
_HTTP_KEYS: Final = frozenset(
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
        "server_card",
        *_HTTP_OPTION_KEYS,
    }
)

#: the keys of ``[http.server_card]``, by kind (the rest are tables of strings)
_CARD_SWITCHES: Final = ("enabled", "catalog")
_CARD_TEXTS: Final = ("url", "name", "title", "description", "version", "website_url")


def read_http_config(reader: Reader, table: Mapping[str, Any]) -> HttpConfig:
    """Check and convert the ``[http]`` table."""
    reader.known(table, _HTTP_KEYS)
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
    given = _tls(reader, table)
    authenticate = reader.reference(table, "authenticate")
    given.update(_limits(reader, table))
    given.update(_forwarded(reader, table))
    drain_delay = reader.optional(table, "drain_delay", (int, float))
    if drain_delay is not None:
        # TOML has inf and nan; neither is a delay. 0: the listener closes at once.
        if isinstance(drain_delay, bool) or not 0 <= drain_delay < float("inf"):
            raise reader.error("drain_delay", "expected a number of seconds from 0", drain_delay)
        given["drain_delay"] = float(drain_delay)
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
        server_card=_server_card(reader, table),
        **given,
    )


def _server_card(http_reader: Reader, http: Mapping[str, Any]) -> ServerCardOptions | None:
    # [http.server_card]: ServerCardOptions by its fields' names; None when absent.
    if "server_card" not in http:
        return None
    table = http_reader.table(http, "server_card")
    reader = http_reader.nested("server_card")
    reader.known(
        table,
        {*_CARD_SWITCHES, *_CARD_TEXTS, "repository", "catalog_entries", "max_age"},
    )
    given: dict[str, Any] = {}
    for key in _CARD_SWITCHES:
        if key in table:
            given[key] = reader.optional(table, key, bool)
    for key in _CARD_TEXTS:
        if key in table:
            given[key] = reader.optional(table, key, str)
    if "repository" in table:
        given["repository"] = reader.strings(table, "repository")
    if "catalog_entries" in table:
        given["catalog_entries"] = reader.strings(table, "catalog_entries")
    if "max_age" in table:
        given["max_age"] = reader.optional(table, "max_age", int)
    try:
        return ServerCardOptions(**given)
    except ValueError as exc:
        raise ConfigError(f"{reader.source}: {reader.prefix}: {exc}") from None


def _tls(reader: Reader, table: Mapping[str, Any]) -> dict[str, Any]:
    # Both files or neither; a relative path is the config file's neighbour.
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
    return given


def _limits(reader: Reader, table: Mapping[str, Any]) -> dict[str, Any]:
    # The endpoints' paths (false: switched off), the counts and the timeouts.
    given: dict[str, Any] = {}
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
    return given


def _forwarded(reader: Reader, table: Mapping[str, Any]) -> dict[str, Any]:
    # The reverse proxies whose forwarded client address is honoured, and its header.
    given: dict[str, Any] = {}
    proxies = reader.string_list(table, "forwarded_allow_ips")
    if proxies is not None:
        try:
            parse_networks(proxies, option="forwarded_allow_ips")
        except ValueError:
            raise reader.error(
                "forwarded_allow_ips", "expected IP addresses or networks", proxies
            ) from None
        given["forwarded_allow_ips"] = proxies
    if "forwarded_header" in table:
        given["forwarded_header"] = reader.choice(
            table, "forwarded_header", FORWARDED_HEADERS, "x-forwarded-for"
        )
    return given
