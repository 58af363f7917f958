# The ASGI application: Streamable HTTP on one path, legacy HTTP+SSE and WebSocket beside.
#
# Why a hand-written ASGI app and not quart-trio: the MCP endpoint is one path with
# three methods and no templates, forms or blueprints, and every request is on the hot
# path. Measured on a shared 2-core machine (hypercorn trio worker, one keep-alive
# HTTP/1.1 client, 3 000 sequential ``ping`` requests in an initialized session, three
# rounds), the server spent 0.57–0.72 ms of CPU per request behind this app and
# 0.90–0.96 ms behind a quart-trio route calling the same session code (1.4–1.5x the
# throughput here); a bare hypercorn ASGI app that answers canned JSON spends
# 0.48–0.63 ms. Quart's cost is its request/response objects and contexts.
#
# A request goes through: Host/Origin guard (403/421) → authentication hook (401) →
# method dispatch. POST checks Accept (406), Content-Type (415) and size (413), decodes
# the body (-32700 → 400) and classifies every message before a session sees it, so
# that malformed input and messages that need no answer (202) are settled here and
# every request reaching a session has a stream waiting for its response.

from __future__ import annotations

import functools
import inspect
from collections.abc import Mapping
from typing import Final

import orjson

from .._exceptions import INTERNAL_ERROR, INVALID_REQUEST, PARSE_ERROR, RemoteProtocolError
from ..protocol import REVISIONS, JSONValue, Phase, Request, RequestId, classify
from ._asgi import (
    ClientGone,
    Headers,
    Receive,
    Scope,
    Send,
    error_body,
    lifespan,
    read_body,
    reply,
    reply_error,
)
from ._http_options import HttpOptions
from ._http_sessions import DuplicateRequestId, HttpSession, SessionKind
from ._http_writer import write_stream
from ._legacy_sse import serve_legacy_post, serve_legacy_stream
from ._security import RequestGuard, accepts
from ._session_manager import SessionLimitReached, SessionManager
from ._websocket import serve_websocket

__all__ = ["DEFAULT_HEADER_VERSION", "McpHttpApp"]

#: what a request without ``MCP-Protocol-Version`` is assumed to speak (transports page)
DEFAULT_HEADER_VERSION: Final = "2025-03-26"


class McpHttpApp:
    """The ASGI app serving one Server: ``path`` (Streamable HTTP), legacy SSE, WebSocket.

    It needs a running SessionManager; ``open_http_app`` builds both.
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
        self.options = options = options or HttpOptions()
        self.path = path.rstrip("/") or "/"
        self.guard = RequestGuard(
            bind_host=bind_host,
            allowed_hosts=options.allowed_hosts,
            allowed_origins=options.allowed_origins,
            cors_origins=options.cors_origins,
        )
        self._paths = {self.path, self.path + "/"}

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Serve one ASGI connection scope."""
        kind = scope["type"]
        if kind == "http":
            await self._http(scope, receive, send)
        elif kind == "websocket":
            await serve_websocket(self, scope, receive, send)
        elif kind == "lifespan":
            await lifespan(receive, send)

    # --- common checks ------------------------------------------------------------

    async def admit(self, headers: Mapping[str, str], send: Send | None) -> tuple[bool, object]:
        """Apply the Host/Origin guard and the authentication hook.

        Returns (admitted, principal); when refused and ``send`` is given, the refusal
        has been sent.
        """
        # HTTP/2 has no Host header, only the :authority pseudo-header.
        host = headers.get("host") or headers.get(":authority")
        if not self.guard.host_allowed(host):
            if send is not None:
                await reply_error(send, 421, INVALID_REQUEST, "Host header not allowed")
            return False, None
        if not self.guard.origin_allowed(headers.get("origin"), host):
            if send is not None:
                await reply_error(send, 403, INVALID_REQUEST, "Origin not allowed")
            return False, None
        hook = self.options.authenticate
        if hook is None:
            return True, None
        principal = hook(headers)
        if inspect.isawaitable(principal):
            principal = await principal
        if not principal:
            if send is not None:
                await reply(
                    send,
                    401,
                    error_body(INVALID_REQUEST, "authentication required"),
                    [(b"www-authenticate", self.options.www_authenticate.encode())],
                )
            return False, None
        return True, principal

    def cors(self, headers: Mapping[str, str]) -> list[tuple[bytes, bytes]]:
        """The CORS response headers for this request's Origin (none unless configured)."""
        origin = headers.get("origin")
        if not self.options.cors_origins or not self.guard.cors_allowed(origin):
            return []
        assert origin is not None
        return [
            (b"access-control-allow-origin", origin.encode("latin-1")),
            (b"access-control-expose-headers", b"mcp-session-id, mcp-protocol-version"),
            (b"vary", b"origin"),
        ]

    # --- dispatch -------------------------------------------------------------------

    async def _http(self, scope: Scope, receive: Receive, send: Send) -> None:
        path = scope["path"]
        options = self.options
        if path in self._paths:
            handler = self._mcp
        elif options.sse_path is not None and path == options.sse_path:
            handler = functools.partial(serve_legacy_stream, self)
        elif options.messages_path is not None and path.rstrip("/") == options.messages_path:
            handler = functools.partial(serve_legacy_post, self)
        else:
            await reply_error(send, 404, INVALID_REQUEST, f"no MCP endpoint at {path!r}")
            return
        headers = Headers.of(scope)
        if scope["method"] == "OPTIONS" and options.cors_origins:
            await self._preflight(send, headers)
            return
        admitted, principal = await self.admit(headers, send)
        if not admitted:
            return
        # A plain try, not contextlib.suppress: that is one more object kept alive by
        # every request in flight.
        try:
            await handler(scope, receive, send, headers, principal)
        except ClientGone:
            return

    async def _preflight(self, send: Send, headers: Mapping[str, str]) -> None:
        cors = self.cors(headers)
        if not cors or not self.guard.host_allowed(
            headers.get("host") or headers.get(":authority")
        ):
            await reply(send, 403, b"")
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
        await reply(send, 204, b"", cors, content_type=None)

    async def _mcp(
        self,
        scope: Scope,
        receive: Receive,
        send: Send,
        headers: Headers,
        principal: object,
    ) -> None:
        method = scope["method"]
        if method == "POST":
            await self._post(receive, send, headers, principal)
        elif method == "GET" and not self.options.stateless:
            await self._get(receive, send, headers, principal)
        elif method == "DELETE" and not self.options.stateless:
            await self._delete(send, headers, principal)
        else:
            allow = b"POST" if self.options.stateless else b"GET, POST, DELETE"
            await reply(
                send,
                405,
                error_body(INVALID_REQUEST, f"method {method} not allowed here"),
                [(b"allow", allow)],
            )

    def _session(
        self, headers: Mapping[str, str], principal: object
    ) -> tuple[HttpSession | None, int, str]:
        session_id = headers.get("mcp-session-id")
        if session_id is None:
            return None, 400, "Mcp-Session-Id header required: only initialize may omit it"
        session = self.manager.get(session_id)
        if session is None and self.manager.stopping:
            # Not 404: that would tell the client to start over, on a server going away.
            return None, 503, "the server is shutting down"
        if (
            session is None
            or session.kind is not SessionKind.STREAMABLE
            or session.principal != principal
        ):
            return None, 404, "session not found: it ended, expired or never existed"
        return session, 200, ""

    def _header_version(self, headers: Mapping[str, str]) -> str | None:
        # None when the header names a revision we do not speak.
        version = headers.get("mcp-protocol-version")
        if version is None:
            return DEFAULT_HEADER_VERSION
        version = version.strip()
        return version if version in REVISIONS else None

    # --- POST ---------------------------------------------------------------------------

    async def _post(
        self, receive: Receive, send: Send, headers: Headers, principal: object
    ) -> None:
        options = self.options
        json_only = options.response_mode == "json"
        if not accepts(headers.get("accept"), json=True, event_stream=not json_only):
            wanted = "application/json" if json_only else "application/json and text/event-stream"
            await reply_error(send, 406, INVALID_REQUEST, f"the Accept header must list {wanted}")
            return
        content_type = headers.get("content-type", "")
        if content_type.split(";", 1)[0].strip().lower() != "application/json":
            await reply_error(
                send, 415, INVALID_REQUEST, "the Content-Type must be application/json"
            )
            return
        body = await read_body(receive, options.max_body_bytes, headers)
        if body is None:
            await reply_error(
                send, 413, INVALID_REQUEST, f"the body exceeds {options.max_body_bytes} bytes"
            )
            return
        try:
            value = orjson.loads(body)
        except orjson.JSONDecodeError as exc:
            await reply_error(send, 400, PARSE_ERROR, f"invalid JSON: {exc}")
            return
        batch = type(value) is list
        messages = value if batch else [value]
        request_ids: list[RequestId] = []
        initialize = False
        for message in messages:
            try:
                classified = classify(message)
            except RemoteProtocolError as exc:
                if not batch:
                    await reply(send, 400, error_body(exc.code, exc.message, exc.request_id))
                    return
                if exc.request_id is not None:
                    request_ids.append(exc.request_id)
                continue
            if type(classified) is Request:
                request_ids.append(classified.id)
                initialize = initialize or classified.method == "initialize"
        if batch and not messages:
            await reply_error(send, 400, INVALID_REQUEST, "a batch must not be empty")
            return
        version = self._header_version(headers)
        if version is None and not initialize:
            await _unsupported_version(send, headers)
            return
        if options.stateless:
            await self._post_stateless(
                receive, send, headers, principal, value, request_ids, initialize, version
            )
            return
        new_session = False
        if initialize and not batch and "mcp-session-id" not in headers:
            try:
                session = await self.manager.create(SessionKind.STREAMABLE, principal=principal)
            except SessionLimitReached as exc:
                await reply_error(send, 503, INTERNAL_ERROR, str(exc))
                return
            new_session = True
        else:
            found, status, why = self._session(headers, principal)
            if found is None:
                await _refuse(send, status, why)
                return
            session = found
        if batch and not _batching(session):
            await reply_error(
                send, 400, INVALID_REQUEST, "the negotiated revision does not allow batches"
            )
            return
        if not request_ids:
            if not await session.feed(value):
                await reply_error(send, 404, INVALID_REQUEST, "session not found")
                return
            await reply(send, 202, b"", content_type=None)
            return
        try:
            attachment = await session.post(value, request_ids, sse=options.response_mode == "sse")
        except DuplicateRequestId as exc:
            await reply(send, 400, error_body(INVALID_REQUEST, str(exc), exc.request_id))
            return
        if attachment is None:
            await reply_error(send, 404, INVALID_REQUEST, "session not found")
            return
        extra = self.cors(headers)
        if new_session:
            assert session.id is not None
            extra.append((b"mcp-session-id", session.id.encode()))
        await write_stream(
            receive,
            send,
            session,
            attachment,
            extra,
            started=False,
            retry_ms=options.retry_ms,
            json_only=options.response_mode == "json",
        )
        if new_session and session.actor.core.phase is Phase.AWAITING_INITIALIZE:
            # initialize failed (bad params): nothing will ever use this session.
            self.manager.close_session(session)

    async def _post_stateless(
        self,
        receive: Receive,
        send: Send,
        headers: Headers,
        principal: object,
        value: JSONValue,
        request_ids: list[RequestId],
        initialize: bool,
        version: str | None,
    ) -> None:
        assert version is not None or initialize
        if type(value) is list and not (version is not None and REVISIONS[version].batching):
            await reply_error(
                send, 400, INVALID_REQUEST, f"protocol version {version} does not allow batches"
            )
            return
        if not request_ids:
            # No session to tell: a notification or response has nowhere to go.
            await reply(send, 202, b"", content_type=None)
            return
        try:
            session = await self.manager.create(
                SessionKind.STATELESS,
                principal=principal,
                protocol_version=None if initialize else version,
            )
        except SessionLimitReached as exc:
            await reply_error(send, 503, INTERNAL_ERROR, str(exc))
            return
        try:
            attachment = await session.post(
                value, request_ids, sse=self.options.response_mode == "sse"
            )
            if attachment is None:
                await reply_error(send, 503, INTERNAL_ERROR, "the server is shutting down")
                return
            await write_stream(
                receive,
                send,
                session,
                attachment,
                self.cors(headers),
                started=False,
                retry_ms=self.options.retry_ms,
                json_only=self.options.response_mode == "json",
            )
        finally:
            # Served (or the client left, which in stateless mode nobody can resume).
            self.manager.close_session(session)

    # --- GET and DELETE -------------------------------------------------------------------

    async def _get(
        self, receive: Receive, send: Send, headers: Headers, principal: object
    ) -> None:
        if not accepts(headers.get("accept"), json=False, event_stream=True):
            await reply_error(
                send, 406, INVALID_REQUEST, "the Accept header must list text/event-stream"
            )
            return
        session, status, why = self._session(headers, principal)
        if session is None:
            await _refuse(send, status, why)
            return
        if self._header_version(headers) is None:
            await _unsupported_version(send, headers)
            return
        last_event_id = headers.get("last-event-id")
        if last_event_id is not None:
            attachment = await session.resume(last_event_id.strip())
            if attachment is None:
                await reply_error(
                    send, 400, INVALID_REQUEST, f"unknown Last-Event-ID {last_event_id!r}"
                )
                return
        else:
            attachment = await session.listen()
            if attachment is None:
                await reply_error(
                    send, 409, INVALID_REQUEST, "this session already has a GET stream open"
                )
                return
        await write_stream(
            receive,
            send,
            session,
            attachment,
            self.cors(headers),
            started=True,
            retry_ms=self.options.retry_ms,
        )

    async def _delete(self, send: Send, headers: Headers, principal: object) -> None:
        session, status, why = self._session(headers, principal)
        if session is None:
            await _refuse(send, status, why)
            return
        self.manager.close_session(session)
        await reply(send, 204, b"", self.cors(headers), content_type=None)


async def _refuse(send: Send, status: int, why: str) -> None:
    code = INTERNAL_ERROR if status >= 500 else INVALID_REQUEST
    await reply_error(send, status, code, why)


def _batching(session: HttpSession) -> bool:
    negotiated = session.actor.core.negotiated
    return negotiated is not None and negotiated.revision.batching


async def _unsupported_version(send: Send, headers: Mapping[str, str]) -> None:
    await reply_error(
        send,
        400,
        INVALID_REQUEST,
        f"unsupported MCP-Protocol-Version {headers.get('mcp-protocol-version')!r}; "
        f"supported: {', '.join(REVISIONS)}",
    )
