# The admin listener's app: the live tree's page, its JSON, its SSE stream, its actions.
#
# A quart-trio app on the contained hypercorn worker (``serve_asgi``, the one
# ``--http-server hypercorn`` uses), served in the same trio run (and nursery tree) as
# the server it shows; it reads the run's ``Observatory``. It is off unless
# asked for, and every route but the login form needs the admin credential:
#
# - ``Authorization: Bearer <token>`` (``mcpactor top``, scripts), or
# - ``Authorization: Bearer <access token>`` of the server's own authorization (its
#   ResourceServer, ``--auth-*``) whose principal has the admin scope (``mcpactor:admin``
#   unless configured); the verifier checks issuer, audience and expiry as it does for
#   the MCP endpoint, or
# - the cookie the login form sets once the token is typed in (the page). The cookie is
#   an HMAC of the token, never the token itself; it is HttpOnly and SameSite=Strict.
#   Only the admin token signs in: a cookie would outlive an access token's expiry.
#
# Actions change the server, so a cookie alone does not allow them (a form on another
# site would carry it): a request authorised by the cookie must also bring the page's
# CSRF value (another HMAC of the token, written into the page) in ``X-Admin-CSRF``,
# and an ``Origin``, if sent, must be this listener's own.
#
# Everything from the wire is bounded before use: query parameters are clipped and
# parsed with limits, action bodies are at most ``MAX_BODY`` bytes of JSON.

from __future__ import annotations

import hashlib
import hmac
import importlib.resources
import logging
import math
import urllib.parse
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import TYPE_CHECKING, Any, Final

import orjson
import trio
from quart import Response, g, make_response, redirect, request
from quart_trio import QuartTrio

from ..runtime import Observatory
from ..transports.http import ConnectionLimits

if TYPE_CHECKING:
    from ..auth import ResourceServer

__all__ = [
    "ADMIN_COOKIE",
    "ADMIN_MAX_CONNECTIONS",
    "DEFAULT_ADMIN_SCOPE",
    "MAX_BODY",
    "add_routes",
    "create_admin_app",
    "serve_admin",
]

#: the scope a bearer token of the server's authorization must grant to be an admin's
DEFAULT_ADMIN_SCOPE: Final = "mcpactor:admin"
_log = logging.getLogger("mcpactor.admin")
#: what operators did: each action and sign-in, with what it acted on, the credential
#: and the remote address (shown at INFO whatever the level of the rest)
_audit = logging.getLogger("mcpactor.admin.audit")

#: the cookie the login form sets
ADMIN_COOKIE: Final = "mcpactor-admin"
#: the largest action body accepted, in bytes
MAX_BODY: Final = 16 * 1024
#: the shortest time between two snapshots of the SSE stream (at most 4 a second)
MIN_INTERVAL: Final = 0.25
_DEFAULT_INTERVAL: Final = 0.5
_MAX_LIMIT: Final = 1000
_MAX_PARAM: Final = 200

#: what ``add_routes`` was given: each is called with every admin app made afterwards
_ROUTE_HOOKS: list[Callable[[QuartTrio, Observatory], None]] = []


def add_routes(hook: Callable[[QuartTrio, Observatory], None]) -> None:
    """Have ``hook(app, observatory)`` add its routes to every admin app made from now on.

    Routes added this way sit behind the same credential check as the others.
    """
    if hook not in _ROUTE_HOOKS:
        _ROUTE_HOOKS.append(hook)


def _mac(token: str, purpose: bytes) -> str:
    return hmac.new(token.encode(), purpose, hashlib.sha256).hexdigest()


def _static(name: str) -> bytes:
    return importlib.resources.files("mcpactor.admin").joinpath("static", name).read_bytes()


_STATIC_TYPES: Final = {
    "app.js": "text/javascript; charset=utf-8",
    "style.css": "text/css; charset=utf-8",
}

_LOGIN_PAGE: Final = """<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>mcpactor admin — sign in</title>
<meta name="viewport" content="width=device-width, initial-scale=1">
<link rel="stylesheet" href="static/style.css"></head>
<body class="login"><form method="post" action="login">
<h1>mcpactor admin</h1>
<p>The admin token was printed when the server started (or is in its token file).</p>
<label>Token <input name="token" type="password" autocomplete="current-password" autofocus
required></label>
<button type="submit">Sign in</button>{error}
</form></body></html>
"""


def create_admin_app(
    observatory: Observatory,
    *,
    token: str,
    resource_server: ResourceServer | None = None,
    scope: str = DEFAULT_ADMIN_SCOPE,
    replicas: Callable[[], Awaitable[dict[str, Any]]] | None = None,
) -> QuartTrio:
    """The admin app for ``observatory``, requiring ``token`` or, with ``resource_server``,
    an access token it verifies that grants ``scope`` (see the module comment).

    ``replicas`` lists the replicas sharing a store (``/api/replicas``); without it the
    listing says this is one process.
    """
    if not token:
        raise ValueError("the admin token must not be empty")
    if not scope or any(c in scope for c in ' "\\') or not scope.isprintable():
        raise ValueError(f"the admin scope must be a scope name, got {scope[:_MAX_PARAM]!r}")
    app = QuartTrio(__name__, static_folder=None)
    app.config["MAX_CONTENT_LENGTH"] = MAX_BODY
    app.config["OBSERVATORY"] = observatory
    cookie_value = _mac(token, b"mcpactor admin cookie")
    csrf_value = _mac(token, b"mcpactor admin csrf")

    def by_token_or_cookie() -> str | None:
        # How the request is authorised by the admin token: "bearer", "cookie", or None.
        header = request.headers.get("Authorization", "")
        scheme, _, given = header.partition(" ")
        if scheme.lower() == "bearer" and hmac.compare_digest(
            given.strip().encode(), token.encode()
        ):
            return "bearer"
        cookie = request.cookies.get(ADMIN_COOKIE, "")
        if cookie and hmac.compare_digest(cookie.encode(), cookie_value.encode()):
            return "cookie"
        return None

    async def by_access_token() -> Response | None:
        # The server's authorization vouches for the bearer token: None if it grants the
        # admin scope, else the refusal (401 for no or a bad token, 403 for the scope).
        from ..auth import AuthError, MissingToken

        assert resource_server is not None
        try:
            principal = await resource_server.verify(_bearer(request.headers.get("Authorization")))
        except MissingToken:
            return _refused()
        except AuthError as exc:
            # The error says why (expired, wrong audience…), never the token itself.
            return _json(
                {"error": f"the access token was refused: {exc}"[: _MAX_PARAM * 2]},
                exc.status,
                {"WWW-Authenticate": 'Bearer realm="mcpactor admin", error="invalid_token"'}
                if exc.status == 401
                else None,
            )
        if not principal.has_scopes(scope):
            _log.warning(
                "admin access refused to %r: no %s scope", principal.subject[:_MAX_PARAM], scope
            )
            challenge = (
                f'Bearer realm="mcpactor admin", error="insufficient_scope", scope="{scope}"'
            )
            return _json(
                {"error": f"the access token lacks the admin scope {scope!r}"},
                403,
                {"WWW-Authenticate": challenge},
            )
        g.admin_credential = f"access token of {principal.subject[:_MAX_PARAM]!r}"
        return None

    def _refused() -> Response:
        needed = "the admin token"
        if resource_server is not None:
            needed += f" or an access token with the {scope!r} scope"
        return _json(
            {"error": f"{needed} is required (Authorization: Bearer …)"},
            401,
            {"WWW-Authenticate": 'Bearer realm="mcpactor admin"'},
        )

    @app.before_request
    async def check_credential() -> Response | None:
        if request.path in ("/login", "/static/style.css"):
            return None
        how = by_token_or_cookie()
        if how is None:
            if resource_server is not None and "Authorization" in request.headers:
                # A bearer credential is not ambient (no other site can make a browser
                # send it), so it needs no CSRF value.
                return await by_access_token()
            if request.method == "GET" and request.path == "/":
                return redirect("login")  # type: ignore[return-value]
            return _refused()
        g.admin_credential = "admin token" if how == "bearer" else "admin sign-in cookie"
        if request.method == "POST" and how == "cookie":
            sent = request.headers.get("X-Admin-CSRF", "")
            if not hmac.compare_digest(sent.encode(), csrf_value.encode()):
                return _json({"error": "the page's CSRF value is missing or wrong"}, 403)
            origin = request.headers.get("Origin")
            if origin is not None and not _same_origin(origin, request.host):
                return _json({"error": "cross-origin action refused"}, 403)
        return None

    @app.after_request
    async def no_store(response: Response) -> Response:
        response.headers["Cache-Control"] = "no-store"
        response.headers["X-Content-Type-Options"] = "nosniff"
        response.headers["X-Frame-Options"] = "DENY"
        response.headers["Referrer-Policy"] = "no-referrer"
        response.headers["Content-Security-Policy"] = (
            "default-src 'self'; img-src 'self' data:; frame-ancestors 'none'"
        )
        return response

    @app.get("/login")
    async def login_form() -> Response:
        return _html(_LOGIN_PAGE.format(error=""))

    @app.post("/login")
    async def login() -> Response:
        form = await request.form
        given = form.get("token", "")[: _MAX_PARAM * 4]
        if not hmac.compare_digest(given.strip().encode(), token.encode()):
            _audit.warning("admin sign-in refused (wrong token) from %s", _remote())
            return _html(
                _LOGIN_PAGE.format(error='<p class="error">That is not the admin token.</p>'),
                403,
            )
        _audit.info("admin sign-in with the admin token from %s", _remote())
        response: Response = redirect("./")  # type: ignore[assignment]
        response.set_cookie(
            ADMIN_COOKIE,
            cookie_value,
            httponly=True,
            samesite="Strict",
            secure=request.scheme == "https",
            path="/",
        )
        return response

    @app.get("/")
    async def page() -> Response:
        html = _static("index.html").replace(b"{{csrf}}", csrf_value.encode())
        return Response(html, status=200, content_type="text/html; charset=utf-8")

    @app.get("/static/<name>")
    async def static(name: str) -> Response:
        content_type = _STATIC_TYPES.get(name)
        if content_type is None:
            return _json({"error": "no such file"}, 404)
        return Response(_static(name), status=200, content_type=content_type)

    @app.get("/api/tree")
    async def tree() -> Response:
        return _json(_snapshot(observatory))

    @app.get("/api/replicas")
    async def replica_list() -> Response:
        if replicas is None:
            return _json({"shared": False, "unavailable": False, "replicas": []})
        return _json(await replicas())

    @app.get("/api/stream")
    async def stream() -> Response:
        interval = _number(request.args.get("interval"), _DEFAULT_INTERVAL)
        interval = max(MIN_INTERVAL, min(interval, 60.0))
        filters = _filters()

        async def events() -> AsyncIterator[bytes]:
            # Runs only while a page is connected: the response ends with it.
            while True:
                data = orjson.dumps(observatory.snapshot(**filters))
                yield b"event: tree\ndata: " + data + b"\n\n"
                await trio.sleep(interval)

        response = await make_response(
            events(),
            200,
            {"Content-Type": "text/event-stream", "X-Accel-Buffering": "no"},
        )
        response.timeout = None  # type: ignore[union-attr]
        return response  # type: ignore[return-value]

    @app.post("/api/actions/<action>")
    async def act(action: str) -> Response:
        body = await request.get_data(cache=False)
        try:
            given = orjson.loads(body) if body else {}
        except orjson.JSONDecodeError:
            return _json({"error": "the body must be a JSON object"}, 400)
        if type(given) is not dict:
            return _json({"error": "the body must be a JSON object"}, 400)
        try:
            done = await _act(observatory, action, given)
        except _BadAction as exc:
            return _json({"error": str(exc)}, 400 if action in _ACTIONS else 404)
        _audit.info(
            "admin action %s on %s by %s from %s: %s",
            action,
            _target(action, given),
            getattr(g, "admin_credential", "?"),
            _remote(),
            "done" if done else "nothing to do",
        )
        return _json({"action": action, "done": done}, 200 if done else 409)

    async def http_error(error: Exception) -> Response:
        # The refusals quart makes itself (413 for a body over MAX_BODY, 404, 405) in
        # the shape of the API's own errors, not an HTML page.
        status = int(getattr(error, "code", None) or 500)
        name = str(getattr(error, "name", "Error"))
        return _json({"error": f"{status} {name}"}, status)

    for status in (404, 405, 413):
        app.register_error_handler(status, http_error)

    for hook in _ROUTE_HOOKS:
        hook(app, observatory)
    return app


class _BadAction(Exception):
    pass


_ACTIONS: Final = ("cancel-request", "cancel-stateless", "cancel-task", "close-session")


def _field(given: dict[str, Any], name: str) -> str:
    value = given.get(name)
    if not isinstance(value, str) or not value or len(value) > _MAX_PARAM:
        raise _BadAction(f"{name!r} must be a non-empty string of at most {_MAX_PARAM} characters")
    return value


async def _act(observatory: Observatory, action: str, given: dict[str, Any]) -> bool:
    if action == "cancel-request":
        request_id = given.get("request")
        if isinstance(request_id, bool) or not isinstance(request_id, int | str):
            raise _BadAction("'request' must be the request's id (a string or an integer)")
        if isinstance(request_id, str) and len(request_id) > _MAX_PARAM:
            raise _BadAction("'request' is too long")
        return observatory.cancel_request(_field(given, "session"), request_id)
    if action == "cancel-stateless":
        key = given.get("key")
        if isinstance(key, bool) or not isinstance(key, int):
            raise _BadAction("'key' must be the stateless request's key (an integer)")
        return observatory.cancel_stateless(key)
    if action == "cancel-task":
        return await observatory.cancel_task(_field(given, "task"))
    if action == "close-session":
        return observatory.close_session(_field(given, "session"))
    raise _BadAction(
        f"no action named {action[:_MAX_PARAM]!r}; the actions: {', '.join(_ACTIONS)}"
    )


#: what each action acts on: the body's fields that name it
_TARGETS: Final = {
    "cancel-request": ("session", "request"),
    "cancel-stateless": ("key",),
    "cancel-task": ("task",),
    "close-session": ("session",),
}


def _target(action: str, given: dict[str, Any]) -> str:
    # The fields were checked by _act: strings of at most _MAX_PARAM characters, or ints.
    return " ".join(f"{name} {given.get(name)!r}" for name in _TARGETS.get(action, ()))


def _remote() -> str:
    # The peer of the admin request (bounded: a server's ASGI scope could say anything).
    return str(request.remote_addr or "-")[:_MAX_PARAM]


def _bearer(value: str | None) -> str:
    # The resource server's own parsing: the same bounds and errors as the MCP endpoint's.
    from ..auth._resource import bearer_token

    return bearer_token(value)


def _number(text: str | None, default: float) -> float:
    if text is None or len(text) > 32:
        return default
    try:
        value = float(text)
    except ValueError:
        return default
    return value if math.isfinite(value) and value >= 0 else default


def _filters() -> dict[str, Any]:
    args = request.args
    slow_ms = _number(args.get("slow_ms"), -1.0)
    limit = int(_number(args.get("limit"), 200))
    return {
        "limit": max(1, min(limit, _MAX_LIMIT)),
        "tool": (args.get("tool") or "")[:_MAX_PARAM] or None,
        "client": (args.get("client") or "")[:_MAX_PARAM] or None,
        "slow": slow_ms / 1000 if slow_ms >= 0 else None,
    }


def _snapshot(observatory: Observatory) -> dict[str, Any]:
    return observatory.snapshot(**_filters())


def _same_origin(origin: str, host: str) -> bool:
    parts = urllib.parse.urlsplit(origin[:_MAX_PARAM])
    return parts.netloc.lower() == host.lower()


def _json(value: Any, status: int = 200, headers: dict[str, str] | None = None) -> Response:
    return Response(
        orjson.dumps(value),
        status=status,
        content_type="application/json",
        headers=headers,
    )


def _html(text: str, status: int = 200) -> Response:
    return Response(text, status=status, content_type="text/html; charset=utf-8")


#: connections the admin listener holds open at most (a page keeps two or three)
ADMIN_MAX_CONNECTIONS: Final = 64


def _admin_error_body(status: int, message: str) -> tuple[bytes, bytes]:
    # The refusals the HTTP server writes itself, shaped as the API's own errors.
    return b"application/json", orjson.dumps({"error": message})


async def serve_admin(
    app: QuartTrio,
    *,
    host: str = "127.0.0.1",
    port: int = 0,
    limits: ConnectionLimits | None = None,
    task_status: trio.TaskStatus[tuple[str, int]] = trio.TASK_STATUS_IGNORED,
) -> None:
    """Serve the admin app on ``host:port`` until cancelled, each connection contained.

    It runs on the worker ``--http-server hypercorn`` uses (``serve_asgi``): nothing a
    client sends ends the listener. ``limits`` hold its connections (default: the
    defaults, with at most ``ADMIN_MAX_CONNECTIONS`` open). Reports the bound (host,
    port) through ``task_status``, so ``port=0`` works.
    """
    from ..transports.http import serve_asgi

    await serve_asgi(
        app,
        host=host,
        port=port,
        limits=limits or ConnectionLimits(max_connections=ADMIN_MAX_CONNECTIONS),
        lifespan=True,
        error_body=_admin_error_body,
        task_status=task_status,
    )
