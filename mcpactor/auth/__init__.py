"""Authorization: mcpactor as an OAuth 2.1 resource server.

A ``TokenVerifier`` turns a bearer token into a ``Principal``; the HTTP layer admits a
request only with a valid token, and everything the request creates is bound to it.
"""

from ._errors import AuthError as AuthError
from ._errors import InsufficientScope as InsufficientScope
from ._errors import InvalidRequest as InvalidRequest
from ._errors import InvalidToken as InvalidToken
from ._errors import MissingToken as MissingToken
from ._errors import VerifierUnavailable as VerifierUnavailable
from ._principal import Principal as Principal
from ._resource import METADATA_PATH as METADATA_PATH
from ._resource import ResourceServer as ResourceServer
from ._verifier import TokenVerifier as TokenVerifier

__all__ = [
    "METADATA_PATH",
    "AuthError",
    "InsufficientScope",
    "InvalidRequest",
    "InvalidToken",
    "MissingToken",
    "Principal",
    "ResourceServer",
    "TokenVerifier",
    "VerifierUnavailable",
]
