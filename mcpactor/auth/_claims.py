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


# The claims that carry a token's rights, by the names real providers give them: ``scope``
# (RFC 9068, RFC 7662, Keycloak, Auth0: space-separated), ``scp`` (Entra ID: a string,
# Okta: a list) and Auth0's ``permissions`` (a list, beside a ``scope`` of OpenID scopes).
# A token's scopes are all of them together.
_SCOPE_CLAIMS = ("scope", "scp", "permissions")


def scopes_of(claims: Mapping[str, Any]) -> frozenset[str]:
    """The scopes ``scope``, ``scp`` and ``permissions`` grant (strings or lists of strings)."""
    found: set[str] = set()
    for name in _SCOPE_CLAIMS:
        value = claims.get(name)
        if value is None:
            continue
        if isinstance(value, str):
            found.update(value.split())
        elif isinstance(value, list) and all(isinstance(one, str) for one in value):
            found.update(one for one in value if one)
        else:
            raise InvalidToken(f"the token's {name!r} is neither a string nor a list of strings")
    return frozenset(found)


# Who the token was issued to: ``client_id`` (RFC 9068, RFC 7662), ``azp`` (OpenID, Keycloak,
# Auth0, Entra v2), ``appid`` (Entra v1) or ``cid`` (Okta), the first one present.
_CLIENT_CLAIMS = ("client_id", "azp", "appid", "cid")


def client_of(claims: Mapping[str, Any]) -> str | None:
    """The OAuth client the token was issued to: ``client_id``, ``azp``, ``appid`` or ``cid``."""
    for name in _CLIENT_CLAIMS:
        client = text(claims, name)
        if client:
            return client
    return None


def subject_of(claims: Mapping[str, Any], client_id: str | None) -> str:
    """Whom the token names: ``sub``, else its client (a client-credentials token)."""
    # an empty ``sub`` names nobody: it must not bind state to every such token at once
    subject = text(claims, "sub") or client_id
    if not subject:
        raise InvalidToken("the token names no subject ('sub') and no client")
    return subject


# What a token says of its own kind, by the claims providers use for it: RFC 7662's
# ``token_type`` ("Bearer"; oidc-provider leaves it out of a refresh token's answer),
# ``token_use`` (Ory Hydra's introspection, AWS Cognito: "access_token", "access" against
# "refresh_token", "id") and Keycloak's ``typ`` claim ("Bearer" against "Refresh", "ID",
# "Offline", "Logout"). Any of them naming another kind refuses the token: a refresh token
# or an ID token is not a credential for calling an API.
_KIND_CLAIMS = ("token_type", "token_use", "typ")
_ACCESS_KINDS = frozenset(
    {
        "bearer",
        "access_token",
        "access",
        "at+jwt",
        "application/at+jwt",
        "urn:ietf:params:oauth:token-type:access_token",
    }
)
# a ``typ`` claim copying the header's says nothing of the kind either way
_NEUTRAL_KINDS = frozenset({"jwt", "application/jwt"})


def check_access_token(claims: Mapping[str, Any]) -> bool:
    """Refuse a token whose claims name another kind; True if one names it an access token."""
    said = False
    for name in _KIND_CLAIMS:
        value = claims.get(name)
        if value is None:
            continue
        kind = value.lower() if isinstance(value, str) else None
        if kind in _ACCESS_KINDS:
            said = True
        elif kind not in _NEUTRAL_KINDS or name != "typ":
            raise InvalidToken(
                f"the token is a {named(value, 60)!r} ({name}), not a bearer access token"
            )
    return said


def check_not_bound(claims: Mapping[str, Any]) -> None:
    """Refuse a sender-constrained token (DPoP, mTLS): its proof cannot be checked here."""
    if "cnf" in claims:
        raise InvalidToken(
            "the token is bound to a key ('cnf'); sender-constrained tokens are not supported"
        )


def audiences_of(audience: str | Iterable[str]) -> frozenset[str]:
    """The accepted audiences: the resource URL, an API's identifier or client id, or several."""
    found = frozenset([audience] if isinstance(audience, str) else audience)
    if not found:
        raise ValueError("at least one audience must be accepted (the resource URL)")
    for one in found:
        if not isinstance(one, str) or not one or len(one) > 2048:
            raise ValueError(f"an audience is a string of 1 to 2048 characters, got {one!r}")
        if not one.isprintable() or any(c.isspace() for c in one):
            raise ValueError(f"an audience has no spaces or control characters, got {one!r}")
    return found


def named(value: Any, limit: int = 100) -> str:
    """A claim's value for a message: a bounded repr."""
    return shown(repr(value) if not isinstance(value, str) else value, limit)
