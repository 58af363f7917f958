"""The admin listener: the live actor tree as a page, JSON and SSE, and its actions.

Needs the ``admin`` extra (quart-trio). ``mcpactor serve --admin HOST:PORT`` runs it.
"""

from ._app import ADMIN_COOKIE as ADMIN_COOKIE
from ._app import add_routes as add_routes
from ._app import create_admin_app as create_admin_app
from ._app import serve_admin as serve_admin

__all__ = ["ADMIN_COOKIE", "add_routes", "create_admin_app", "serve_admin"]
