# What can go wrong between a bearer token and a principal, and what HTTP says about it
# (RFC 6750 §3.1; RFC 9728 §5.1 for the ``resource_metadata`` parameter).

from __future__ import annotations

from collections.abc import Iterable
from typing import Final

#: the JSON-RPC error code of a request refused for scope, by the dispatcher or a handler's
#: step-up (implementation-defined range); ``data.requiredScopes`` names the scopes, and the
#: HTTP layer turns a single JSON answer carrying it into a 403 ``insufficient_scope``
INSUFFICIENT_SCOPE_CODE: Final = -32010


class AuthError(Exception):
    """A request could not be authorized; ``status`` is the HTTP status it earns."""

    status = 401
    #: the RFC 6750 ``error`` code, or None when the request carried no credentials
    error: str | None = "invalid_token"

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class MissingToken(AuthError):
    """The request carried no bearer token (401 without an ``error`` code)."""

    error = None


class InvalidToken(AuthError):
    """The token is malformed, forged, expired, or not meant for this resource (401)."""


class InvalidRequest(AuthError):
    """The credentials were sent in a way that is refused, e.g. in the query (400)."""

    status = 400
    error = "invalid_request"


class InsufficientScope(AuthError):
    """The token is valid but lacks scopes the request needs (403)."""

    status = 403
    error = "insufficient_scope"

    def __init__(self, scopes: Iterable[str], reason: str | None = None) -> None:
        self.scopes = tuple(scopes)
        super().__init__(reason or f"insufficient scope: requires {' '.join(self.scopes)}")


class VerifierUnavailable(AuthError):
    """The token could not be checked: its issuer or introspection endpoint is down (503).

    ``retry_after``, when known, is how many seconds until a check may succeed: the HTTP
    answer says it in ``Retry-After``.
    """

    status = 503
    error = None

    def __init__(self, reason: str, *, retry_after: float | None = None) -> None:
        super().__init__(reason)
        self.retry_after = retry_after
