# Scopes on registrations: what a tool, resource, template or prompt needs of the caller.
#
# Scopes are an HTTP authorization feature: they are checked against the Principal the
# HTTP layer admitted the request with (``ctx.principal``). A request without one — stdio,
# an HTTP server without authorization — is not checked at all, as the transport already
# decided that whoever can reach it may call anything.
#
# Three places use them. The HTTP layer asks ``Server.required_scopes`` before dispatch
# (a 403 with the scopes needed, RFC 6750 §3.1). The handlers check again right after
# finding the entry (the backstop: a request the HTTP layer could not name, a body it did
# not read), and turn an ``InsufficientScope`` a handler raised (step-up,
# ``ctx.require_scopes``) into the same JSON-RPC error, -32010 with ``requiredScopes``.
# And the list handlers can leave out what the caller may not call
# (``Server.hide_unauthorized``).

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any, Final

from .._exceptions import RequestError, SchemaError
from ..auth import INSUFFICIENT_SCOPE_CODE, InsufficientScope
from ..protocol import describe

if TYPE_CHECKING:
    from ..auth import Principal

__all__ = [
    "check_scopes",
    "merged",
    "scope_error",
    "scopes_of",
    "validate_scopes",
    "visible",
]

# RFC 6749 §3.3: scope-token = 1*( %x21 / %x23-5B / %x5D-7E )
_SCOPE_TOKEN: Final = re.compile(r"[\x21\x23-\x5b\x5d-\x7e]+")
#: more scopes than this on one registration is a mistake, not a policy
MAX_SCOPES: Final = 64
#: a scope longer than this is refused at registration
MAX_SCOPE_LENGTH: Final = 256


def validate_scopes(value: Any, *, what: str) -> tuple[str, ...]:
    """The ``scopes=`` option as a tuple; SchemaError if it is not a list of scope tokens."""
    if value is None:
        return ()
    if isinstance(value, str | bytes) or not isinstance(value, Iterable):
        raise SchemaError(
            f"{what}: scopes must be a list of strings, got {describe(value)}"
            + ("; write ['a', 'b'], not 'a b'" if isinstance(value, str) else "")
        )
    scopes = tuple(value)
    if len(scopes) > MAX_SCOPES:
        raise SchemaError(f"{what}: at most {MAX_SCOPES} scopes, got {len(scopes)}")
    seen: set[str] = set()
    for scope in scopes:
        if type(scope) is not str:
            raise SchemaError(f"{what}: each scope must be a string, got {describe(scope)}")
        if len(scope) > MAX_SCOPE_LENGTH or not _SCOPE_TOKEN.fullmatch(scope):
            raise SchemaError(
                f"{what}: invalid scope {describe(scope)}: a scope is 1 to "
                f"{MAX_SCOPE_LENGTH} printable ASCII characters without spaces, '\"' or '\\'"
                " (RFC 6749 §3.3)"
            )
        if scope in seen:
            raise SchemaError(f"{what}: scope {describe(scope)} is listed twice")
        seen.add(scope)
    return scopes


def scopes_of(entry: object) -> tuple[str, ...]:
    """The scopes a listed entry needs (none for entries that cannot say, e.g. proxied)."""
    scopes: tuple[str, ...] = getattr(entry, "scopes", ())
    return scopes


def visible(entry: object, principal: Principal) -> bool:
    """Whether ``principal`` may call ``entry`` (so a hiding list shows it)."""
    scopes = scopes_of(entry)
    return not scopes or not principal.missing(scopes)


def scope_error(required: Iterable[str]) -> RequestError:
    """The JSON-RPC error of a caller lacking scopes: -32010 with ``requiredScopes``."""
    scopes = list(required)
    return RequestError(
        INSUFFICIENT_SCOPE_CODE,
        f"insufficient scope: requires {' '.join(scopes)}",
        {"requiredScopes": scopes},
    )


def check_scopes(required: tuple[str, ...], principal: Principal | None) -> None:
    """Raise the -32010 RequestError unless ``principal`` (if any) has ``required``."""
    if principal is not None and principal.missing(required):
        raise scope_error(required)


def merged(own: tuple[str, ...], demanded: InsufficientScope) -> tuple[str, ...]:
    """The scopes a step-up asks for: the entry's own first, then the demanded ones."""
    # The spec's recommended approach: name the scopes already needed as well, so the
    # client's new token does not lose them (2025-11-25 authorization, scope challenges).
    return tuple(dict.fromkeys((*own, *demanded.scopes)))
