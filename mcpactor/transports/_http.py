# The ASGI application: Streamable HTTP on one path, legacy HTTP+SSE and WebSocket beside.
#
# Why a hand-written ASGI app and not quart-trio: the MCP endpoint is one path with
# three methods and no templates, forms or blueprints, and every request is on the hot
# path: a quart-trio route calling the same session code cost markedly more CPU per
# request than this app (its request/response objects and contexts; the measurement is
# in docs/performance.md).
#
# One path for every HTTP request, ``handle(exchange)``: the built-in server calls it
# with its own requests, an ASGI server reaches it through ``__call__``, which adapts
# the scope (``AsgiExchange``). A request goes through: the Host header's framing (400
# and close when it is missing in HTTP/1.1, repeated or malformed, RFC 9112 §3.2) → the
# health endpoint, which needs nothing more → the Protected Resource Metadata document
# (RFC 9728), the Server Card and the AI Catalog (SEP-2127, _discovery.py), public too →
# Host/Origin guard (403/421) → authorization: the bearer token (401/400/403/503, with a
# WWW-Authenticate challenge) or the authentication hook (401) → the endpoint's handler:
# Streamable HTTP's POST, GET and DELETE (_streamable.py) or legacy HTTP+SSE
# (_legacy_sse.py). The guard's verdict on the request's (Host, Origin) pair, framing
# and CORS headers included, is decided once per pair (``RequestGuard.verdicts``).
# WebSocket (_websocket.py) is ASGI's alone. This module is admission, CORS and
# dispatch; the handlers reach it through the Endpoint protocol.

from __future__ import annotations

import inspect
import logging
import re
import time
from collections.abc import Mapping
from typing import Any, Final

import orjson

from .._exceptions import INTERNAL_ERROR, INVALID_REQUEST
from ..auth import INSUFFICIENT_SCOPE_CODE, AuthError, InsufficientScope, Principal, ResourceServer
from ..protocol import ErrorResponse, RequestId
from ..runtime.http import SessionManager
from ._asgi import AsgiExchange, Receive, Scope, Send, lifespan
from ._discovery import Discovery
from ._exchange import ClientGone, Exchange, error_body, reply, reply_error
from ._http_options import HttpOptions
from ._legacy_sse import serve_legacy_post, serve_legacy_stream
from ._readiness import Readiness
from ._security import ClientShares, RequestGuard, parse_host
from ._streamable import STREAMABLE
from ._websocket import serve_websocket

__all__ = ["McpHttpApp"]

_access = logging.getLogger("mcpactor.access")
_HEALTHY: Final = b'{"status":"ok"}'
_STOPPING: Final = b'{"status":"stopping"}'
_READY: Final = b'{"status":"ready"}'
_NO_STORE: Final = ((b"cache-control", b"no-store"),)
# What of a request the access log shows: bounded, and escaped so that a line is a line.
_LOGGED_PATH: Final = 200
_UNPRINTABLE: Final = re.compile(r'[\x00-\x1f\x7f-\x9f"\\]')


async def _refuse_probe_method(exchange: Exchange) -> bool:
    # A probe endpoint answers GET and HEAD; anything else is refused with 405.
    method = exchange.method
    if method in ("GET", "HEAD"):
        return False
    await reply(
        exchange,
        405,
        error_body(INVALID_REQUEST, f"method {method[:20]} not allowed here"),
        [(b"allow", b"GET, HEAD")],
    )
    return True


class McpHttpApp:
    """The ASGI app serving one Server: ``path`` (Streamable HTTP), legacy SSE, WebSocket.

    It needs a running SessionManager; ``open_http_app`` builds both. Every HTTP request
    takes one path, ``handle``: the built-in server calls it with its own requests, and
    the ASGI entry with an ASGI server's.
    """

    def __init__(
        self,
        manager: SessionManager,
        *,
        path: str = "/mcp",
        options: HttpOptions | None = None,
        bind_host: str = "127.0.0.1",
    ) -> None:
        self.manager = manager
        self.stateless = manager.stateless
        self.options = options = options or HttpOptions()
        self.path = path.rstrip("/") or "/"
        self.guard = RequestGuard(
            bind_host=bind_host,
            allowed_hosts=options.allowed_hosts,
            allowed_origins=options.allowed_origins,
            cors_origins=options.cors_origins,
        )
        self._verdicts = self.guard.verdicts
        resource_server = options.resource_server
        if resource_server is not None:
            resource_server = resource_server.with_declared_scopes(
                _declared_scopes(manager.server)
            )
            if resource_server.hide_unauthorized:
                # The served server's lists are what the setting is about.
                manager.server.hide_unauthorized = True
            self._metadata_paths = resource_server.metadata_paths(self.path)
            self._metadata = resource_server.metadata_body()
        else:
            self._metadata_paths = frozenset()
            self._metadata = b""
        #: the OAuth resource server's settings (the options', with scopes_supported)
        self.resource_server: ResourceServer | None = resource_server
        # The endpoints behind the guard: handlers by path, then by method (None: any
        # method). Set from the last to the first in precedence; the public paths
        # (health, resource metadata) come first of all.
        routes: dict[str, Mapping[str | None, Any]] = {}
        if options.messages_path is not None:
            routes[options.messages_path] = {None: serve_legacy_post}
            routes[options.messages_path + "/"] = {None: serve_legacy_post}
        if options.sse_path is not None:
            routes[options.sse_path] = {None: serve_legacy_stream}
        routes[self.path] = routes[self.path + "/"] = STREAMABLE
        #: the Server Card and AI Catalog (public, like the health and metadata paths)
        self.discovery = Discovery(
            manager.server,
            path=self.path,
            options=options.server_card,
            https=options.tls_cert is not None,
            sse_path=options.sse_path if options.messages_path is not None else None,
            resource_server=resource_server,
            host_allowed=self.guard.host_allowed,
        )
        for public in (options.health_path or "", *self._metadata_paths, *self.discovery.paths):
            routes.pop(public, None)
        self._routes = routes
        self._proxies = options.trusted_proxies()
        #: a bearer token or the authentication hook decides who may call
        self._authorizing = resource_server is not None or options.authenticate is not None
        #: the stateless requests each client has in flight (HTTP's share, per client)
        self.stateless_shares = ClientShares(options.max_sessions_per_client)
        #: what the readiness endpoint answers from (ready once serving, if none is given)
        self.readiness = options.readiness or Readiness(started=True)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Serve one ASGI connection scope."""
        kind = scope["type"]
        if kind == "http":
            await self.handle(AsgiExchange(scope, receive, send))
        elif kind == "websocket":
            if self._proxies is not None:
                client = scope.get("client")
                if client:
                    forwarded = self._proxies.client(str(client[0]), scope.get("headers", ()))
                    if forwarded is not None:
                        scope["client"] = (forwarded, 0)
            if self.options.access_log:
                await self._logged_websocket(scope, receive, send)
            else:
                await serve_websocket(self, scope, receive, send)
        elif kind == "lifespan":
            await lifespan(receive, send)

    async def handle(self, exchange: Exchange) -> None:
        """Serve one HTTP request: the one path, whichever server runs the app."""
        started = time.perf_counter()
        try:
            if self._proxies is not None:
                # Behind trusted proxies the client is the one they name, for the
                # per-client limit and the access log alike.
                client = exchange.client
                if client:
                    forwarded = self._proxies.client(client[0], exchange.raw_headers)
                    if forwarded is not None:
                        exchange.client = (forwarded, 0)
            headers = exchange.headers
            host = headers.get("host")
            origin = headers.get("origin")
            verdict = self._verdicts[host, origin]
            if verdict.framing is not None or (host is None and exchange.http_version == "1.1"):
                # Framing (RFC 9112 §3.2): the built-in server refuses these itself.
                why = verdict.framing or "an HTTP/1.1 request needs a Host header"
                await reply_error(exchange, 400, INVALID_REQUEST, why, close=True)
                return
            path = exchange.path
            if path[:1] != "/":
                # absolute-form (RFC 9112 §3.2.2): the target's authority is the Host.
                target = _absolute_target(path)
                if target is None:
                    why = "malformed request target"
                    await reply_error(exchange, 400, INVALID_REQUEST, why, close=True)
                    return
                host, path = target
                headers["host"] = host
                verdict = self._verdicts[host, origin]
            methods = self._routes.get(path)
            if methods is None:
                methods = await self._public(exchange, path)
                if methods is None:
                    return
            if exchange.method == "OPTIONS" and self.options.cors_origins:
                await self._preflight(exchange, headers)
                return
            if verdict.status != 200:
                status = verdict.status
                await reply_error(
                    exchange, status, INVALID_REQUEST, verdict.why, close=status == 400
                )
                return
            principal = None
            if self._authorizing:
                admitted, principal = await self._authorized(exchange)
                if not admitted:
                    return
            handler = methods.get(exchange.method) or methods[None]
            await handler(self, exchange, principal, [*verdict.cors])
        except ClientGone:
            return
        finally:
            if self.options.access_log:
                _log_access(
                    exchange.client,
                    exchange.method,
                    exchange.path,
                    exchange.status,
                    exchange.sent,
                    started,
                )

    async def _logged_websocket(self, scope: Scope, receive: Receive, send: Send) -> None:
        # One line per connection, written when it ends.
        status = 0
        sent = 0

        async def logged_send(message: dict[str, Any]) -> None:
            nonlocal status, sent
            kind = message["type"]
            if kind in ("http.response.start", "websocket.http.response.start"):
                status = message["status"]
            elif kind == "websocket.accept":
                status = 101
            elif kind == "websocket.close" and not status:
                status = 403
            elif kind == "websocket.send":
                sent += len(message.get("text") or message.get("bytes") or b"")
            await send(message)

        started = time.perf_counter()
        try:
            await serve_websocket(self, scope, receive, logged_send)
        finally:
            _log_access(
                scope.get("client"),
                "WEBSOCKET",
                scope.get("path", ""),
                status,
                sent,
                started,
            )

    # --- common checks ------------------------------------------------------------

    async def admit(
        self,
        headers: Mapping[str, str],
        query_string: bytes = b"",
        *,
        deny: Exchange | None = None,
    ) -> tuple[bool, object]:
        """Apply the Host/Origin guard, then the bearer token or the authentication hook.

        Returns (admitted, principal); nothing is answered, but for a refused token when
        ``deny`` is given (a WebSocket handshake's denial response).
        """
        if self._verdicts[headers.get("host"), headers.get("origin")].status != 200:
            return False, None
        try:
            return await self.authorize(headers, query_string)
        except AuthError as exc:
            if deny is not None:
                await self.refuse(deny, headers, exc)
            return False, None

    async def authorize(
        self, headers: Mapping[str, str], query_string: bytes = b""
    ) -> tuple[bool, object]:
        """The bearer token or the authentication hook: (admitted, principal).

        Raises:
            AuthError: the bearer token is refused.
        """
        resource_server = self.resource_server
        if resource_server is not None:
            return True, await resource_server.authorize(headers, query_string)
        hook = self.options.authenticate
        if hook is None:
            return True, None
        principal = hook(headers)
        if inspect.isawaitable(principal):
            principal = await principal
        if not principal:
            return False, None
        return True, principal

    async def _authorized(self, exchange: Exchange) -> tuple[bool, object]:
        # ``authorize``, its refusal answered.
        headers = exchange.headers
        try:
            admitted, principal = await self.authorize(headers, exchange.query_string)
        except AuthError as exc:
            await self.refuse(exchange, headers, exc)
            return False, None
        if not admitted:
            await reply(
                exchange,
                401,
                error_body(INVALID_REQUEST, "authentication required"),
                [(b"www-authenticate", self.options.www_authenticate.encode())],
            )
        return admitted, principal

    async def refuse(
        self,
        exchange: Exchange,
        headers: Mapping[str, str],
        error: AuthError,
        request_id: RequestId | None = None,
    ) -> None:
        """Answer with ``error``'s status, a JSON-RPC error and the Bearer challenge."""
        resource_server = self.resource_server
        assert resource_server is not None
        extra = self.cors(headers)
        extra.extend(resource_server.refusal_headers(error))
        await reply(exchange, error.status, _auth_error_body(error, request_id), extra)

    def scope_refusal(
        self, principal: object, method: str, name: object
    ) -> InsufficientScope | None:
        """The 403 a call of ``name`` earns when ``principal`` lacks its scopes, else None.

        For ``tools/call``, ``resources/read`` and ``prompts/get``: the scopes the served
        server requires for that tool, resource or prompt (``Server.required_scopes``).
        """
        if (
            self.resource_server is None
            or type(name) is not str
            or len(name) > _MAX_NAME
            or not isinstance(principal, Principal)
        ):
            return None
        required_scopes = getattr(self.manager.server, "required_scopes", None)
        if required_scopes is None:
            return None
        needed: tuple[str, ...] = required_scopes(method, name)
        if not needed or not principal.missing(needed):
            return None
        return self.resource_server.scope_error(needed)

    def step_up(self, data: bytes) -> list[tuple[bytes, bytes]] | None:
        """The challenge for a JSON answer refused for scope (-32010), else None.

        A handler or the dispatcher that finds the caller's token short of scopes answers
        with that error; said before the status is sent, it becomes a 403 whose challenge
        names the scopes the error's ``data.requiredScopes`` lists.
        """
        resource_server = self.resource_server
        # find, not ``in``: on bytes that raises and clears a TypeError on every call.
        if resource_server is None or data.find(_STEP_UP_CODE) < 0:
            return None
        try:
            message = orjson.loads(data)
        except orjson.JSONDecodeError:  # pragma: no cover - the core built it
            return None
        scopes = _refused_scopes(message)
        if scopes is None:
            return None
        challenge = resource_server.challenge(resource_server.scope_error(scopes))
        return [(b"www-authenticate", challenge.encode("latin-1"))]

    def cors(self, headers: Mapping[str, str]) -> list[tuple[bytes, bytes]]:
        """The CORS response headers for this request's Origin (none unless configured)."""
        return [*self._verdicts[headers.get("host"), headers.get("origin")].cors]

    # --- what is not an MCP endpoint ------------------------------------------------------

    async def _public(self, exchange: Exchange, path: str) -> Mapping[str | None, Any] | None:
        # The health endpoint and the resource metadata, public; a path the messages path
        # takes (trailing slashes) is routed there; else 404.
        options = self.options
        if path == options.health_path:
            await self._health(exchange)
            return None
        if path == options.ready_path:
            await self._ready(exchange)
            return None
        if path in self._metadata_paths:
            await self._resource_metadata(exchange)
            return None
        if path in self.discovery.paths:
            await self.discovery.serve(exchange, path)
            return None
        if options.messages_path is not None and path.rstrip("/") == options.messages_path:
            return {None: serve_legacy_post}
        await reply_error(
            exchange, 404, INVALID_REQUEST, f"no MCP endpoint at {path[:_LOGGED_PATH]!r}"
        )
        return None

    async def _health(self, exchange: Exchange) -> None:
        # Liveness for load balancers and supervisors: no guard, no authentication, no
        # session (a probe sends whatever Host its network gives it, and learns nothing).
        if await _refuse_probe_method(exchange):
            return
        if self.manager.stopping:
            await reply(exchange, 503, _STOPPING, _NO_STORE)
        else:
            await reply(exchange, 200, _HEALTHY, _NO_STORE)

    async def _ready(self, exchange: Exchange) -> None:
        # Readiness, open to probes as liveness is; why not ready is one word.
        if await _refuse_probe_method(exchange):
            return
        state = "stopping" if self.manager.stopping else await self.readiness.state()
        if state is None:
            await reply(exchange, 200, _READY, _NO_STORE)
        else:
            await reply(exchange, 503, orjson.dumps({"status": state}), _NO_STORE)

    async def _resource_metadata(self, exchange: Exchange) -> None:
        # Public, as RFC 9728 means it: no guard and no token (a client reads it to learn
        # where to get one), and readable by the pages CORS allows.
        method = exchange.method
        headers = exchange.headers
        if method == "OPTIONS" and self.options.cors_origins:
            await self._preflight(exchange, headers)
            return
        if method not in ("GET", "HEAD"):
            await reply(
                exchange,
                405,
                error_body(INVALID_REQUEST, f"method {method[:20]} not allowed here"),
                [(b"allow", b"GET, HEAD")],
            )
            return
        extra = [*self.cors(headers), (b"cache-control", b"max-age=300")]
        await reply(exchange, 200, self._metadata, extra)

    async def _preflight(self, exchange: Exchange, headers: Mapping[str, str]) -> None:
        cors = self.cors(headers)
        if not cors or not self.guard.host_allowed(headers.get("host")):
            await reply(exchange, 403, b"")
            return
        cors += [
            (b"access-control-allow-methods", b"GET, POST, DELETE"),
            (
                b"access-control-allow-headers",
                b"content-type, accept, authorization, mcp-session-id, "
                b"mcp-protocol-version, last-event-id",
            ),
            (b"access-control-max-age", b"600"),
        ]
        await reply(exchange, 204, b"", cors, content_type=None)


# The longest tool or prompt name, or resource URI, looked up for its scopes.
_MAX_NAME: Final = 4096
# The error code a refusal for scope carries, as it appears in an answer's JSON.
_STEP_UP_CODE: Final = str(INSUFFICIENT_SCOPE_CODE).encode()


def _auth_error_body(error: AuthError, request_id: RequestId | None) -> bytes:
    # The JSON-RPC error an HTTP refusal carries: -32010 with the scopes for 403, as a
    # handler's refusal is; the usual codes for the rest.
    if isinstance(error, InsufficientScope):
        data = {"requiredScopes": list(error.scopes)}
        reply = ErrorResponse(request_id, INSUFFICIENT_SCOPE_CODE, error.reason, data)
    else:
        code = INTERNAL_ERROR if error.status >= 500 else INVALID_REQUEST
        reply = ErrorResponse(request_id, code, error.reason)
    return orjson.dumps(reply.to_json())


def _refused_scopes(message: object) -> tuple[str, ...] | None:
    # The scopes of a -32010 error answer, or None if it is not one.
    if type(message) is not dict:
        return None
    error = message.get("error")
    if type(error) is not dict or error.get("code") != INSUFFICIENT_SCOPE_CODE:
        return None
    data = error.get("data")
    scopes = data.get("requiredScopes") if type(data) is dict else None
    if type(scopes) is not list:
        return ()
    return tuple(scope for scope in scopes[:64] if type(scope) is str)


def _declared_scopes(server: object) -> list[str]:
    # Every scope a tool, resource or prompt of ``server`` asks for, in catalog order.
    required_scopes = getattr(server, "required_scopes", None)
    catalog = getattr(server, "_catalog", None)
    if required_scopes is None or catalog is None:
        return []
    found: dict[str, None] = {}
    listed = catalog()
    for method, names in (
        ("tools/call", listed.tools),
        ("resources/read", listed.resources),
        ("prompts/get", listed.prompts),
    ):
        for name in names:
            found.update(dict.fromkeys(required_scopes(method, name)))
    for template in listed.templates.values():
        found.update(dict.fromkeys(getattr(template, "scopes", None) or ()))
    return list(found)


def _absolute_target(target: str) -> tuple[str, str] | None:
    # "http://authority/path" -> (authority, "/path"); None unless http(s) and a valid
    # authority (the path is already percent-decoded by the server).
    scheme, sep, rest = target.partition("://")
    if not sep or scheme.lower() not in ("http", "https"):
        return None
    authority, slash, path = rest.partition("/")
    if parse_host(authority) is None:
        return None
    return authority, slash + path


def _printable(text: str, limit: int) -> str:
    # Off the wire: cut to ``limit`` characters, control characters and quotes escaped.
    if len(text) > limit:
        text = text[:limit] + "..."
    return _UNPRINTABLE.sub(lambda match: f"\\x{ord(match.group()):02x}", text)


def _log_access(
    client: Any, method: str, path: str, status: int, sent: int, started: float
) -> None:
    # One line per request, written when it ends (SSE streams: when the stream ends).
    _access.info(
        '%s "%s %s" %d %d %.1fms',
        _peer(client),
        _printable(method, 20),
        _printable(path, _LOGGED_PATH),
        status,
        sent,
        (time.perf_counter() - started) * 1000,
    )


def _peer(client: Any) -> str:
    # The access log's client: host:port, or the host alone when a proxy named it.
    if not client:
        return "-"
    host, port = client[0], client[1]
    return f"{host}:{port}" if port else str(host)
