# Reading what a token says about itself, the same way for a JWT's claims and for an
# introspection answer (RFC 9068 §2.2, RFC 7662 §2.2): each claim type-checked before use,
# since both come off the wire.

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

from ._errors import InvalidToken
from ._fetch import shown

#: the longest token accepted, in characters
MAX_TOKEN_LENGTH = 16 * 1024

# RFC 6750 §2.1: b64token
_B64TOKEN = re.compile(r"[A-Za-z0-9\-._~+/]+=*")


def check_token(token: str, limit: int = MAX_TOKEN_LENGTH) -> None:
    """Raise ``InvalidToken`` unless ``token`` is a bearer token's text of sane length."""
    if not isinstance(token, str) or not token:
        raise InvalidToken("the bearer token is empty")
    if len(token) > limit:
        raise InvalidToken(f"the bearer token is longer than {limit} characters")
    if _B64TOKEN.fullmatch(token) is None:
        raise InvalidToken("the bearer token has characters a token cannot have")


def text(claims: Mapping[str, Any], name: str) -> str | None:
    """The string claim ``name``; None when absent; ``InvalidToken`` when not a string."""
    value = claims.get(name)
    if value is None or isinstance(value, str):
        return value
    raise InvalidToken(f"the token's {name!r} is not a string")


def number(claims: Mapping[str, Any], name: str) -> float | None:
    """The NumericDate claim ``name``; None when absent; ``InvalidToken`` when not a number."""
    value = claims.get(name)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise InvalidToken(f"the token's {name!r} is not a number")
    return float(value)


def check_times(claims: Mapping[str, Any], now: float, leeway: float, *, need_exp: bool) -> None:
    """Raise ``InvalidToken`` unless ``exp``, ``nbf`` and ``iat`` admit ``now`` (± leeway)."""
    exp = number(claims, "exp")
    if exp is None:
        if need_exp:
            raise InvalidToken("the token has no expiry ('exp')")
    elif now > exp + leeway:
        raise InvalidToken("the token has expired")
    nbf = number(claims, "nbf")
    if nbf is not None and now + leeway < nbf:
        raise InvalidToken("the token is not valid yet ('nbf')")
    iat = number(claims, "iat")
    if iat is not None and now + leeway < iat:
        raise InvalidToken("the token was issued in the future ('iat')")


def check_audience(claims: Mapping[str, Any], audiences: frozenset[str]) -> None:
    """Raise ``InvalidToken`` unless ``aud`` (a string or a list) names one of ``audiences``."""
    aud = claims.get("aud")
    if isinstance(aud, str):
        if aud in audiences:
            return
    elif isinstance(aud, list):
        if any(isinstance(one, str) and one in audiences for one in aud):
            return
    elif aud is None:
        raise InvalidToken("the token names no audience ('aud'); it is not meant for this server")
    else:
        raise InvalidToken("the token's 'aud' is neither a string nor a list")
    raise InvalidToken("the token is meant for another audience, not this server")


def scopes_of(claims: Mapping[str, Any]) -> frozenset[str]:
    """The scopes ``scope`` (space-separated) or ``scp`` (a list, or a string) grant."""
    scope = claims.get("scope")
    if scope is None:
        scope = claims.get("scp")
    if scope is None:
        return frozenset()
    if isinstance(scope, str):
        return frozenset(scope.split())
    if isinstance(scope, list) and all(isinstance(one, str) for one in scope):
        return frozenset(scope)
    raise InvalidToken("the token's scopes are neither a string nor a list of strings")


def client_of(claims: Mapping[str, Any]) -> str | None:
    """The OAuth client the token was issued to: ``client_id``, else ``azp``."""
    client = text(claims, "client_id")
    return client if client is not None else text(claims, "azp")


def check_not_bound(claims: Mapping[str, Any]) -> None:
    """Refuse a sender-constrained token (DPoP, mTLS): its proof cannot be checked here."""
    if "cnf" in claims:
        raise InvalidToken(
            "the token is bound to a key ('cnf'); sender-constrained tokens are not supported"
        )


def audiences_of(audience: str | Iterable[str]) -> frozenset[str]:
    """The accepted audiences: one resource URL, or several."""
    found = frozenset([audience] if isinstance(audience, str) else audience)
    if not found or not all(isinstance(one, str) and one for one in found):
        raise ValueError("the audience must be a non-empty resource URL (or several)")
    return found


def named(value: Any, limit: int = 100) -> str:
    """A claim's value for a message: a bounded repr."""
    return shown(repr(value) if not isinstance(value, str) else value, limit)
