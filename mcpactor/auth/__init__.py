"""Authorization: mcpactor as an OAuth 2.1 resource server.

A ``TokenVerifier`` turns a bearer token into a ``Principal``; the HTTP layer admits a
request only with a valid token, and everything the request creates is bound to it.

The verifiers (``JwtVerifier``, ``IntrospectionVerifier``, ``CombinedVerifier``,
``verifier_from``) are loaded on first use, so a server without authorization never
imports joserfc or httpx (the ``auth`` extra). ``ResourceServer`` and ``TokenVerifier``
load on first use too: a server on stdio needs only the errors and ``Principal``.
"""

from typing import TYPE_CHECKING, Any

from ._errors import INSUFFICIENT_SCOPE_CODE as INSUFFICIENT_SCOPE_CODE
from ._errors import AuthError as AuthError
from ._errors import InsufficientScope as InsufficientScope
from ._errors import InvalidRequest as InvalidRequest
from ._errors import InvalidToken as InvalidToken
from ._errors import MissingToken as MissingToken
from ._errors import VerifierUnavailable as VerifierUnavailable

if TYPE_CHECKING:
    from ._factory import CombinedVerifier as CombinedVerifier
    from ._factory import verifier_from as verifier_from
    from ._introspection import IntrospectionVerifier as IntrospectionVerifier
    from ._jwt import JwtVerifier as JwtVerifier
    from ._principal import Principal as Principal
    from ._resource import METADATA_PATH as METADATA_PATH
    from ._resource import ResourceServer as ResourceServer
    from ._resource import bearer_token as bearer_token
    from ._verifier import TokenVerifier as TokenVerifier

# Every server imports the errors (its handlers see them); Principal is built with the
# first authenticated caller; the resource server only serves HTTP with authorization,
# so a stdio server loads neither.
_CORE = {
    "Principal": "._principal",
    "METADATA_PATH": "._resource",
    "ResourceServer": "._resource",
    "bearer_token": "._resource",
    "TokenVerifier": "._verifier",
}
#: what needs the ``auth`` extra
_LAZY = {
    "CombinedVerifier": "._factory",
    "verifier_from": "._factory",
    "IntrospectionVerifier": "._introspection",
    "JwtVerifier": "._jwt",
}

__all__ = [
    "INSUFFICIENT_SCOPE_CODE",
    "METADATA_PATH",
    "AuthError",
    "CombinedVerifier",
    "InsufficientScope",
    "IntrospectionVerifier",
    "InvalidRequest",
    "InvalidToken",
    "JwtVerifier",
    "MissingToken",
    "Principal",
    "ResourceServer",
    "TokenVerifier",
    "VerifierUnavailable",
    "bearer_token",
    "verifier_from",
]


def __getattr__(name: str) -> Any:
    import importlib

    core = _CORE.get(name)
    if core is not None:
        value = getattr(importlib.import_module(core, __name__), name)
        globals()[name] = value
        return value
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    try:
        value = getattr(importlib.import_module(module, __name__), name)
    except ImportError as exc:
        raise ImportError(
            f"mcpactor.auth.{name} needs the 'auth' extra (pip install 'mcpactor[auth]'): {exc}"
        ) from exc
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
