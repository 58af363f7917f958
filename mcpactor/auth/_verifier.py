# The one thing the resource server asks of whatever checks tokens.

from __future__ import annotations

from typing import Protocol, runtime_checkable

from ._principal import Principal


@runtime_checkable
class TokenVerifier(Protocol):
    """Turns a bearer token into the Principal it names, or raises an ``AuthError``.

    ``verify`` raises ``InvalidToken`` for a token that must be refused and
    ``VerifierUnavailable`` when the answer cannot be had now (an issuer that is down);
    it must bound its own waiting (timeouts), and it must never log the token. A
    verifier that remembers tokens may also offer ``cached(token) -> Principal | None``,
    answering a known token without waiting: the resource server asks it first and skips
    the deadline it otherwise puts around ``verify``.
    """

    async def verify(self, token: str) -> Principal:
        """The principal ``token`` names; raises ``InvalidToken`` or ``VerifierUnavailable``."""
        ...
