# What the handlers of the legacy HTTP+SSE and WebSocket endpoints need of the app that
# routes requests to them. The app (``McpHttpApp``) imports the handlers; they reach it
# through this protocol, so that imports point one way.

from __future__ import annotations

from collections.abc import Mapping
from typing import Protocol

from ..auth import AuthError, InsufficientScope, ResourceServer
from ..protocol import RequestId
from ..runtime import StatelessHost
from ..runtime.http import SessionManager
from ._exchange import Exchange
from ._http_options import HttpOptions
from ._security import ClientShares

__all__ = ["Endpoint"]


class Endpoint(Protocol):
    """The app behind an endpoint: its sessions, its options, its guard and CORS."""

    manager: SessionManager
    options: HttpOptions
    #: serves the POSTs of stateless revisions
    stateless: StatelessHost
    #: the stateless requests each client has in flight, held to its share
    stateless_shares: ClientShares
    #: the OAuth resource server's settings; None: no bearer tokens
    resource_server: ResourceServer | None

    async def admit(
        self,
        headers: Mapping[str, str],
        query_string: bytes = b"",
        *,
        deny: Exchange | None = None,
    ) -> tuple[bool, object]:
        """Apply the Host/Origin guard and the token or hook: (admitted, principal)."""

    async def refuse(
        self,
        exchange: Exchange,
        headers: Mapping[str, str],
        error: AuthError,
        request_id: RequestId | None = None,
    ) -> None:
        """Answer with ``error``'s status, a JSON-RPC error and the Bearer challenge."""

    def scope_refusal(
        self, principal: object, method: str, name: object
    ) -> InsufficientScope | None:
        """The 403 a call of ``name`` earns when ``principal`` lacks its scopes, else None."""

    def step_up(self, data: bytes) -> list[tuple[bytes, bytes]] | None:
        """The challenge for a JSON answer refused for scope (-32010), else None."""

    def cors(self, headers: Mapping[str, str]) -> list[tuple[bytes, bytes]]:
        """The CORS response headers for this request's Origin (none unless configured)."""
