# The options of the HTTP transport, in one frozen record.

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from math import inf
from typing import Final, Literal

import attrs

from ..auth import ResourceServer
from ..runtime.http import EventStore, MemoryEventStore, Replicas
from ._forwarded import FORWARDED_HEADERS, ForwardedHeader, TrustedProxies, parse_networks
from ._readiness import Readiness
from ._server_card import ServerCardOptions

__all__ = ["Authenticate", "ConnectionLimits", "HttpOptions", "default_event_store"]

#: the authentication hook: request headers (lowercase names) → a principal, or a falsy
#: value to refuse; may be async
Authenticate = Callable[[Mapping[str, str]], object]


# Validated in HttpOptions: counts and sizes are whole numbers from 1, timeouts positive
# seconds (math.inf: never); a head limit below this could not hold an ordinary request.
# The deployment file's [http] table takes the limits and timeouts by these names.
_LIMITS: Final = (
    "max_sessions",
    "max_sessions_per_client",
    "max_connections",
    "max_head_bytes",
    "max_header_count",
)
_POSITIVE_INTS: Final = ("max_body_bytes", *_LIMITS)
_POSITIVE_SECONDS: Final = (
    "session_idle_timeout",
    "unconfirmed_session_timeout",
    "keep_alive_timeout",
    "request_timeout",
    "write_timeout",
    "websocket_idle_timeout",
)
_MIN_HEAD_BYTES: Final = 1024


def _patterns(value: str | Sequence[str] | None) -> tuple[str, ...] | None:
    # A lone string is one pattern, not a sequence of one-letter patterns.
    if value is None:
        return None
    return (value,) if isinstance(value, str) else tuple(value)


def _cors_patterns(value: str | Sequence[str]) -> tuple[str, ...]:
    return (value,) if isinstance(value, str) else tuple(value)


def _check_ranges(
    record: ConnectionLimits | HttpOptions, ints: Sequence[str], seconds: Sequence[str]
) -> None:
    for name in ints:
        value = getattr(record, name)
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ValueError(f"{name} must be a positive whole number, got {value!r}")
    for name in seconds:
        value = getattr(record, name)
        # NaN is not > 0; math.inf is allowed: never.
        if isinstance(value, bool) or not isinstance(value, int | float) or not value > 0:
            raise ValueError(f"{name} must be a positive number of seconds, got {value!r}")
    if record.max_head_bytes < _MIN_HEAD_BYTES:
        raise ValueError(
            f"max_head_bytes must be at least {_MIN_HEAD_BYTES}, got {record.max_head_bytes!r}"
        )


#: ConnectionLimits fields, checked as HttpOptions checks its own of the same names
_CONNECTION_INTS: Final = ("max_connections", "max_head_bytes", "max_header_count")
_CONNECTION_SECONDS: Final = ("keep_alive_timeout", "request_timeout", "write_timeout")


@attrs.frozen(kw_only=True)
class ConnectionLimits:
    """What one listener holds its connections to, whatever app it serves.

    HTTP/2 applies the deadlines per stream: a stream's body must arrive within
    ``request_timeout`` of its headers, and each write of its answer within
    ``write_timeout``.
    """

    #: open connections at most, WebSockets included (503 and close above it)
    max_connections: int = 1000
    #: seconds an idle keep-alive connection stays open
    keep_alive_timeout: float = 75.0
    #: seconds a request's head and body may take to arrive in full
    request_timeout: float = 30.0
    #: seconds a write may wait for a peer that does not read
    write_timeout: float = 30.0
    #: the largest request head (request line and header fields), in bytes
    max_head_bytes: int = 64 * 1024
    #: header fields in one request at most
    max_header_count: int = 100

    def __attrs_post_init__(self) -> None:
        _check_ranges(self, _CONNECTION_INTS, _CONNECTION_SECONDS)


@attrs.frozen(kw_only=True)
class HttpOptions:
    """How the HTTP transport behaves; the defaults suit a local server."""

    #: no sessions: every POST is served by a throwaway session, GET/DELETE get 405
    stateless: bool = False
    #: "auto": JSON unless something precedes the response; "sse": always SSE;
    #: "json": always JSON, related notifications go to the GET stream instead
    response_mode: Literal["auto", "sse", "json"] = "auto"
    #: Host header patterns; None: loopback names when bound to loopback, else any
    allowed_hosts: tuple[str, ...] | None = attrs.field(default=None, converter=_patterns)
    #: Origin patterns; None: loopback origins on loopback, else same-origin only
    allowed_origins: tuple[str, ...] | None = attrs.field(default=None, converter=_patterns)
    #: origins whose pages may read responses (CORS headers); none by default
    cors_origins: tuple[str, ...] = attrs.field(default=(), converter=_cors_patterns)
    #: the largest request body accepted (413 above it)
    max_body_bytes: int = 4 * 1024 * 1024
    #: live sessions at most (503 when full)
    max_sessions: int = 10_000
    #: seconds without requests or connections after which a session ends
    session_idle_timeout: float = 30 * 60.0
    #: where resumable SSE events wait; None: a MemoryEventStore per server
    event_store: EventStore | None = None
    #: the session records and relay shared with other replicas; None: one process
    replicas: Replicas | None = None
    #: the reconnection delay SSE clients are told (``retry:``), in milliseconds
    retry_ms: int = 1000
    #: paths of the legacy HTTP+SSE transport (2024-11-05) and WebSocket; None: off
    sse_path: str | None = "/sse"
    messages_path: str | None = "/messages"
    websocket_path: str | None = "/ws"
    #: called with the request headers; returns a principal, or falsy for 401
    authenticate: Authenticate | None = None
    #: the WWW-Authenticate header sent with 401
    www_authenticate: str = "Bearer"
    #: serve as an OAuth 2.1 resource server: bearer tokens, scopes, the metadata
    #: document (an alternative to ``authenticate``)
    resource_server: ResourceServer | None = None
    #: PEM files of the certificate (chain) and its private key; both set: HTTPS
    tls_cert: str | None = None
    tls_key: str | None = None
    #: the liveness endpoint (no authentication, no session); None: off
    health_path: str | None = "/healthz"
    #: the readiness endpoint (503 while starting, draining or its check fails); None: off
    ready_path: str | None = "/readyz"
    #: what the readiness endpoint answers from; None: ready once serving
    readiness: Readiness | None = None
    #: seconds a draining server keeps accepting, not ready, before its listener closes
    #: (so that a load balancer probing the readiness endpoint sees it fail); waited
    #: only if a probe has asked since the server started
    drain_delay: float = 5.0
    #: log one line per HTTP request to the ``mcpactor.access`` logger
    access_log: bool = False
    #: open connections at most, WebSockets included (503 and close above it)
    max_connections: int = 1000
    #: live sessions one client address may hold at most, and at 2026-07-28 (no
    #: sessions) its requests in flight, listen streams included (503 above it)
    max_sessions_per_client: int = 256
    #: seconds a session that has seen only its initialize may stay idle
    unconfirmed_session_timeout: float = 60.0
    #: seconds an idle keep-alive connection stays open
    keep_alive_timeout: float = 75.0
    #: seconds a request's head and body may take to arrive in full
    request_timeout: float = 30.0
    #: seconds a write may wait for a peer that does not read
    write_timeout: float = 30.0
    #: seconds a WebSocket may stay silent before it is closed
    websocket_idle_timeout: float = 600.0
    #: the largest request head (request line and header fields), in bytes
    max_head_bytes: int = 64 * 1024
    #: header fields in one request at most
    max_header_count: int = 100
    #: addresses or networks of the reverse proxies whose forwarded client address is
    #: honoured (for the per-client limit and the access log); none by default
    forwarded_allow_ips: tuple[str, ...] = attrs.field(default=(), converter=_cors_patterns)
    #: the header those proxies write the client's address to: "x-forwarded-for" or
    #: "forwarded" (RFC 7239); only that one is read
    forwarded_header: ForwardedHeader = "x-forwarded-for"
    #: the Server Card at ``<path>/server-card`` and the AI Catalog (SEP-2127,
    #: experimental): on by default, public; ``ServerCardOptions(enabled=False,
    #: catalog=False)`` serves neither
    server_card: ServerCardOptions = attrs.field(factory=ServerCardOptions)

    def __attrs_post_init__(self) -> None:
        if self.response_mode not in ("auto", "sse", "json"):
            raise ValueError(
                f"response_mode must be 'auto', 'sse' or 'json', got {self.response_mode!r}"
            )
        _check_ranges(self, _POSITIVE_INTS, _POSITIVE_SECONDS)
        if (self.tls_cert is None) != (self.tls_key is None):
            raise ValueError("tls_cert and tls_key go together: give both or neither")
        if self.authenticate is not None and self.resource_server is not None:
            raise ValueError(
                "authenticate and resource_server are two ways to admit requests: give one"
            )
        if self.health_path is not None and not self.health_path.startswith("/"):
            raise ValueError(f"health_path must start with '/', got {self.health_path!r}")
        if self.ready_path is not None and not self.ready_path.startswith("/"):
            raise ValueError(f"ready_path must start with '/', got {self.ready_path!r}")
        if self.ready_path is not None and self.ready_path == self.health_path:
            raise ValueError(f"ready_path and health_path are both {self.ready_path!r}")
        delay = self.drain_delay
        if isinstance(delay, bool) or not isinstance(delay, int | float) or not 0 <= delay < inf:
            raise ValueError(f"drain_delay must be a number of seconds from 0, got {delay!r}")
        if self.forwarded_header not in FORWARDED_HEADERS:
            raise ValueError(
                f"forwarded_header must be 'x-forwarded-for' or 'forwarded', got "
                f"{self.forwarded_header!r}"
            )
        parse_networks(self.forwarded_allow_ips, option="forwarded_allow_ips")

    def trusted_proxies(self) -> TrustedProxies | None:
        """The proxies ``forwarded_allow_ips`` trusts; None when it names none."""
        if not self.forwarded_allow_ips:
            return None
        networks = parse_networks(self.forwarded_allow_ips, option="forwarded_allow_ips")
        return TrustedProxies(networks, self.forwarded_header)

    def connection_limits(self) -> ConnectionLimits:
        """The limits of these options that hold the HTTP server's connections."""
        return ConnectionLimits(
            max_connections=self.max_connections,
            keep_alive_timeout=self.keep_alive_timeout,
            request_timeout=self.request_timeout,
            write_timeout=self.write_timeout,
            max_head_bytes=self.max_head_bytes,
            max_header_count=self.max_header_count,
        )


def default_event_store(options: HttpOptions) -> EventStore:
    """The store a server uses: the configured one, or a fresh MemoryEventStore."""
    return options.event_store if options.event_store is not None else MemoryEventStore()
