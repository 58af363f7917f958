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
#
# The app is made of its parts: the credential check and login form (_credentials.py),
# the page and its files (_pages.py), the tree's JSON and SSE stream (_api.py), the
# actions (_actions.py), and whatever ``add_routes`` was given.

from __future__ import annotations

import collections
import logging
import socket
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Final

import orjson
import trio
from quart import Response
from quart_trio import QuartTrio

from ..runtime import METRICS, Observatory
from ..transports.http import ConnectionLimits
from ._actions import install_actions
from ._api import ReadinessView, install_api
from ._credentials import ADMIN_COOKIE, Credentials
from ._pages import install_pages
from ._responses import MAX_AUDIT, MAX_PARAM, json_response
from ._story import RequestLogs, check_trace_url

if TYPE_CHECKING:
    from ..auth import ResourceServer
    from ..store import RedisSharedHistory

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
#: the largest action body accepted, in bytes
MAX_BODY: Final = 16 * 1024
#: connections the admin listener holds open at most (a page keeps two or three)
ADMIN_MAX_CONNECTIONS: Final = 64

#: what ``add_routes`` was given: each is called with every admin app made afterwards
_ROUTE_HOOKS: list[Callable[[QuartTrio, Observatory], None]] = []


def add_routes(hook: Callable[[QuartTrio, Observatory], None]) -> None:
    """Have ``hook(app, observatory)`` add its routes to every admin app made from now on.

    Routes added this way sit behind the same credential check as the others.
    """
    if hook not in _ROUTE_HOOKS:
        _ROUTE_HOOKS.append(hook)


def create_admin_app(
    observatory: Observatory,
    *,
    token: str,
    resource_server: ResourceServer | None = None,
    scope: str = DEFAULT_ADMIN_SCOPE,
    replicas: Callable[[], Awaitable[dict[str, Any]]] | None = None,
    redact: Mapping[str, Sequence[str]] | None = None,
    trace_url: str | None = None,
    shared_history: RedisSharedHistory | None = None,
    drain: Callable[[], bool] | None = None,
    readiness: ReadinessView | None = None,
) -> QuartTrio:
    """The admin app for ``observatory``, requiring ``token`` or, with ``resource_server``,
    an access token it verifies that grants ``scope`` (see the module comment).

    ``replicas`` lists the replicas sharing a store (``/api/replicas``); without it the
    listing says this is one process. ``/api/history`` lists the requests that ended
    while ``serve_admin`` serves it. A request's story (``/api/request``) hides the
    argument fields ``redact`` names per tool ("*": every tool) besides keys that look
    like secrets, and links its trace id through ``trace_url`` (``{trace_id}`` in it).
    With ``shared_history`` (replicas sharing a store), ``/api/history`` merges the
    other replicas' entries with this one's; its writer reads the app's ``audit_trail``.
    ``drain`` begins draining the served server (``Readiness.drain``): the ``drain``
    action, refused without it.
    ``readiness`` (the served server's ``Readiness.describe``) is shown with the tree.
    """
    if not token:
        raise ValueError("the admin token must not be empty")
    if not scope or any(c in scope for c in ' "\\') or not scope.isprintable():
        raise ValueError(f"the admin scope must be a scope name, got {scope[:MAX_PARAM]!r}")
    app = QuartTrio(__name__, static_folder=None)
    app.config["MAX_CONTENT_LENGTH"] = MAX_BODY
    app.config["OBSERVATORY"] = observatory
    app.config["ADMIN_REDACT"] = {tool: tuple(fields) for tool, fields in (redact or {}).items()}
    app.config["ADMIN_TRACE_URL"] = check_trace_url(trace_url)
    app.config["ADMIN_LOGS"] = RequestLogs()
    credentials = Credentials(token, resource_server, scope)
    credentials.install(app)
    install_pages(app, credentials.csrf)
    app.config["ADMIN_AUDIT"] = collections.deque(maxlen=MAX_AUDIT)
    install_api(app, observatory, replicas, shared_history, readiness)
    install_actions(app, observatory, drain)
    for status in (404, 405, 413):
        app.register_error_handler(status, _http_error)
    for hook in _ROUTE_HOOKS:
        hook(app, observatory)
    return app


async def _http_error(error: Exception) -> Response:
    # The refusals quart makes itself (413 for a body over MAX_BODY, 404, 405) in the
    # shape of the API's own errors, not an HTML page.
    status = int(getattr(error, "code", None) or 500)
    name = str(getattr(error, "name", "Error"))
    return json_response({"error": f"{status} {name}"}, status)


def _admin_error_body(status: int, message: str) -> tuple[bytes, bytes]:
    # The refusals the HTTP server writes itself, shaped as the API's own errors.
    return b"application/json", orjson.dumps({"error": message})


async def serve_admin(
    app: QuartTrio,
    *,
    host: str = "127.0.0.1",
    port: int = 0,
    limits: ConnectionLimits | None = None,
    sockets: Sequence[socket.socket] | None = None,
    task_status: trio.TaskStatus[tuple[str, int]] = trio.TASK_STATUS_IGNORED,
) -> None:
    """Serve the admin app on ``host:port`` until cancelled, each connection contained.

    Meanwhile the process keeps the requests that end in its history and rates
    (``METRICS.keep_history``), which the app's ``/api/history`` and ``/api/rates``
    list, and the lines logged in each request, for its story.

    It runs on the worker ``--http-server hypercorn`` uses (``serve_asgi``): nothing a
    client sends ends the listener. ``limits`` hold its connections (default: the
    defaults, with at most ``ADMIN_MAX_CONNECTIONS`` open). Reports the bound (host,
    port) through ``task_status``, so ``port=0`` works. Given listening ``sockets`` (a
    worker's, from its supervisor), it accepts on those instead of binding.
    """
    from ..transports.http import serve_asgi

    observatory = app.config.get("OBSERVATORY")
    METRICS.keep_history(sessions=observatory.session_client if observatory else None)
    logs = app.config.get("ADMIN_LOGS")
    if logs is not None:
        logging.getLogger().addHandler(logs)
    try:
        await serve_asgi(
            app,
            host=host,
            port=port,
            limits=limits or ConnectionLimits(max_connections=ADMIN_MAX_CONNECTIONS),
            lifespan=True,
            error_body=_admin_error_body,
            sockets=sockets,
            task_status=task_status,
        )
    finally:
        if logs is not None:
            logging.getLogger().removeHandler(logs)
        METRICS.drop_history()
