# What the handlers of the legacy HTTP+SSE and WebSocket endpoints need of the app that
# routes requests to them. The app (``McpHttpApp``) imports the handlers; they reach it
# through this protocol, so that imports point one way.

from __future__ import annotations

from collections.abc import Mapping
from typing import Protocol

from ..runtime._stateless import StatelessHost
from ..runtime.http import SessionManager
from ._asgi import Send
from ._http_options import HttpOptions

__all__ = ["Endpoint"]


class Endpoint(Protocol):
    """The app behind an endpoint: its sessions, its options, its guard and CORS."""

    manager: SessionManager
    options: HttpOptions
    #: serves the POSTs of stateless revisions
    stateless: StatelessHost

    async def admit(self, headers: Mapping[str, str], send: Send | None) -> tuple[bool, object]:
        """Apply the Host/Origin guard and the authentication hook: (admitted, principal)."""

    def cors(self, headers: Mapping[str, str]) -> list[tuple[bytes, bytes]]:
        """The CORS response headers for this request's Origin (none unless configured)."""
