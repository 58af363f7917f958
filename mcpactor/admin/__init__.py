"""The admin listener: the live actor tree as a page, JSON and SSE, and its actions.

Needs the ``admin`` extra (quart-trio). ``mcpactor serve --admin HOST:PORT`` runs it.
Every admin app serves ``/metrics`` too when prometheus-client is installed.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from quart_trio import QuartTrio

from ..runtime import Observatory
from . import _app
from ._app import ADMIN_MAX_CONNECTIONS as ADMIN_MAX_CONNECTIONS
from ._app import DEFAULT_ADMIN_SCOPE as DEFAULT_ADMIN_SCOPE
from ._app import add_routes as add_routes
from ._app import serve_admin as serve_admin
from ._credentials import ADMIN_COOKIE as ADMIN_COOKIE
from ._story import shared_story as shared_story

if TYPE_CHECKING:
    from ..auth import ResourceServer
    from ..store import RedisSharedHistory
    from ._api import ReadinessView

__all__ = [
    "ADMIN_COOKIE",
    "ADMIN_MAX_CONNECTIONS",
    "DEFAULT_ADMIN_SCOPE",
    "add_routes",
    "create_admin_app",
    "serve_admin",
    "shared_story",
]


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
    """The admin app for ``observatory``, requiring ``token`` (or, with ``resource_server``,
    an access token granting ``scope``), with ``/metrics`` if it can; ``replicas`` lists
    the replicas sharing a store (``/api/replicas``); ``redact`` and ``trace_url`` shape a
    request's story (``/api/request``); ``shared_history`` merges the other replicas'
    history into ``/api/history``; ``drain`` (the served server's ``Readiness.drain``)
    is what the ``drain`` action calls; ``readiness`` (its ``Readiness.describe``) is
    shown with the tree (``/api/tree``, ``/api/stream``)."""
    # An app made in code gets /metrics as the command line's does; prometheus-client is
    # imported only here, when an app is made, and only if it is installed.
    if importlib.util.find_spec("prometheus_client") is not None:
        from ._metrics import install_metrics_route

        install_metrics_route()
    return _app.create_admin_app(
        observatory,
        token=token,
        resource_server=resource_server,
        scope=scope,
        replicas=replicas,
        redact=redact,
        trace_url=trace_url,
        shared_history=shared_history,
        drain=drain,
        readiness=readiness,
    )
