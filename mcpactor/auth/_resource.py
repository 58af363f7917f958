# mcpactor as an OAuth 2.1 resource server: what it tells clients and whom it admits.
#
# A ResourceServer is settings plus three pure pieces the HTTP layer calls:
#
# - the Protected Resource Metadata document (RFC 9728 §2), served at
#   ``/.well-known/oauth-protected-resource`` and at the form suffixed with the MCP
#   endpoint's path (§3.1), which is the URL every challenge names;
# - the ``WWW-Authenticate`` challenges (RFC 6750 §3): ``resource_metadata`` always
#   (RFC 9728 §5.1), ``scope`` where it tells the client what to ask for, ``error`` and a
#   bounded, quoted ``error_description`` when a token was refused;
# - ``authorize``: the ``Authorization`` header → a Principal, or an AuthError carrying
#   the status it earns. The token is checked by the TokenVerifier, under an overall
#   deadline, so that an issuer that hangs gives 503, never a hung request.
#
# Everything here reads values off the wire: they are bounded before they are looked at,
# and the token itself is never put in a message or a log.

from __future__ import annotations

import logging
import math
import re
import urllib.parse
from collections.abc import Iterable, Mapping
from typing import Any, Final

import attrs
import orjson
import trio

from ._errors import (
    AuthError,
    InsufficientScope,
    InvalidRequest,
    InvalidToken,
    MissingToken,
    VerifierUnavailable,
)
from ._principal import Principal
from ._verifier import TokenVerifier

__all__ = ["METADATA_PATH", "ResourceServer"]

_log = logging.getLogger("mcpactor.auth")

#: the well-known path of the Protected Resource Metadata document (RFC 9728 §3)
METADATA_PATH: Final = "/.well-known/oauth-protected-resource"
#: the longest Authorization header value read (a JWT with many claims fits well within)
MAX_AUTHORIZATION: Final = 16 * 1024
# RFC 6750 §2.1: b64token = 1*( ALPHA / DIGIT / "-" / "." / "_" / "~" / "+" / "/" ) *"="
# Checked by deleting these bytes and finding none left: a regular expression over a
# JWT of 600 bytes costs more than hashing it.
_B64TOKEN: Final = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~+/"
# RFC 6750 §3: scope-token = 1*( %x21 / %x23-5B / %x5D-7E )
_SCOPE_TOKEN: Final = re.compile(r"[\x21\x23-\x5b\x5d-\x7e]+")
# RFC 6750 §3: error_description is %x20-21 / %x23-5B / %x5D-7E; anything else is dropped.
_NOT_DESCRIPTION: Final = re.compile(r"[^\x20\x21\x23-\x5b\x5d-\x7e]+")
_MAX_DESCRIPTION: Final = 200
# Scopes a challenge names at most: an answer's ``requiredScopes`` came from a handler.
_MAX_CHALLENGE_SCOPES: Final = 32
# The longest wait a 503's Retry-After asks for, in seconds (a verifier's own may say more).
_MAX_RETRY_AFTER: Final = 3600


def _strings(value: str | Iterable[str]) -> tuple[str, ...]:
    # A lone string is one item, not a sequence of letters.
    return (value,) if isinstance(value, str) else tuple(value)


def _optional_strings(value: str | Iterable[str] | None) -> tuple[str, ...] | None:
    return None if value is None else _strings(value)


def _check_url(name: str, value: str) -> None:
    parts = urllib.parse.urlsplit(value)
    if parts.scheme.lower() not in ("http", "https") or not parts.netloc:
        raise ValueError(f"{name} must be an absolute http(s) URL, got {value!r}")
    if parts.fragment or "#" in value:
        raise ValueError(f"{name} must not have a fragment, got {value!r}")


def _check_scopes(name: str, scopes: tuple[str, ...]) -> None:
    for scope in scopes:
        if not isinstance(scope, str) or not _SCOPE_TOKEN.fullmatch(scope):
            raise ValueError(
                f"{name}: a scope is printable ASCII without spaces, quotes or "
                f"backslashes, got {scope!r}"
            )


def metadata_url(resource: str) -> str:
    """The URL of ``resource``'s metadata document: the well-known path, then its own."""
    parts = urllib.parse.urlsplit(resource)
    path = parts.path.rstrip("/")
    return urllib.parse.urlunsplit((parts.scheme, parts.netloc, METADATA_PATH + path, "", ""))


@attrs.frozen(kw_only=True)
class ResourceServer:
    """How mcpactor acts as an OAuth 2.1 resource server: whom it trusts, what it needs."""

    #: the canonical URL of the MCP endpoint (RFC 8707), as the metadata says it; the
    #: audience tokens must name unless the verifier was given others (an API's client id)
    resource: str
    #: the issuers of the tokens accepted, as the metadata lists them
    authorization_servers: tuple[str, ...] = attrs.field(converter=_strings)
    #: what turns a bearer token into a Principal
    verifier: TokenVerifier
    #: scopes every request needs
    required_scopes: tuple[str, ...] = attrs.field(default=(), converter=_strings)
    #: the metadata's ``scopes_supported``; None: the required scopes and every scope the
    #: served tools, resources and prompts declare (``with_declared_scopes``)
    scopes_supported: tuple[str, ...] | None = attrs.field(
        default=None, converter=_optional_strings
    )
    #: put before every scope clients are told of (challenges, ``scopes_supported``): the
    #: name the authorization server knows a scope by when tokens carry it without, as
    #: Entra ID's ``api://CLIENT-ID/`` (asked for as ``api://CLIENT-ID/mcp``, in ``scp`` as
    #: ``mcp``); scopes are checked, and configured, by the names tokens carry
    scope_prefix: str = ""
    #: a human-readable name of the resource, for the metadata
    resource_name: str | None = None
    #: a page about the resource for people, for the metadata
    resource_documentation: str | None = None
    #: tools/list and the like leave out what the caller may not call
    hide_unauthorized: bool = False
    #: seconds a token check may take at most before the request gets 503
    verify_timeout: float = 10.0

    def __attrs_post_init__(self) -> None:
        _check_url("resource", self.resource)
        if not self.authorization_servers:
            raise ValueError("authorization_servers: the metadata must name at least one issuer")
        for issuer in self.authorization_servers:
            _check_url("authorization_servers", issuer)
        if not isinstance(self.verifier, TokenVerifier):
            raise TypeError(
                f"verifier must have an async verify(token) method, got {self.verifier!r}"
            )
        _check_scopes("required_scopes", self.required_scopes)
        if self.scopes_supported is not None:
            _check_scopes("scopes_supported", self.scopes_supported)
        if self.scope_prefix:
            _check_scopes("scope_prefix", (self.scope_prefix,))
        if self.resource_documentation is not None:
            _check_url("resource_documentation", self.resource_documentation)
        timeout = self.verify_timeout
        if isinstance(timeout, bool) or not isinstance(timeout, int | float) or not timeout > 0:
            raise ValueError(
                f"verify_timeout must be a positive number of seconds, got {timeout!r}"
            )

    # --- what clients are told ---------------------------------------------------------

    @property
    def metadata_url(self) -> str:
        """Where the metadata document is, as the challenges name it (RFC 9728 §3.1)."""
        return metadata_url(self.resource)

    def metadata_paths(self, endpoint_path: str) -> frozenset[str]:
        """The paths the metadata is served at, for an MCP endpoint at ``endpoint_path``.

        The bare well-known path, the one suffixed with the endpoint's path, and the one
        suffixed with the resource URL's path (they differ behind a proxy that maps paths).
        """
        suffixes = {
            "",
            endpoint_path.rstrip("/"),
            urllib.parse.urlsplit(self.resource).path.rstrip("/"),
        }
        return frozenset(METADATA_PATH + suffix for suffix in suffixes)

    def with_declared_scopes(self, declared: Iterable[str]) -> ResourceServer:
        """This server with ``scopes_supported`` filled in, when it was left unset.

        The required scopes come first, then ``declared`` (the scopes the served tools,
        resources and prompts ask for) in their order, each once.
        """
        if self.scopes_supported is not None:
            return self
        supported = dict.fromkeys(self.required_scopes)
        supported.update(dict.fromkeys(s for s in declared if _SCOPE_TOKEN.fullmatch(s)))
        return attrs.evolve(self, scopes_supported=tuple(supported))

    def metadata(self) -> dict[str, Any]:
        """The Protected Resource Metadata document (RFC 9728 §2)."""
        document: dict[str, Any] = {
            "resource": self.resource,
            "authorization_servers": list(self.authorization_servers),
        }
        supported = (
            self.scopes_supported if self.scopes_supported is not None else self.required_scopes
        )
        if supported:
            document["scopes_supported"] = [self.scope_prefix + scope for scope in supported]
        # RFC 9728 §2: the one way a token may be presented here (no query, no form body).
        document["bearer_methods_supported"] = ["header"]
        if self.resource_name is not None:
            document["resource_name"] = self.resource_name
        if self.resource_documentation is not None:
            document["resource_documentation"] = self.resource_documentation
        return document

    def metadata_body(self) -> bytes:
        """The metadata document as JSON."""
        return orjson.dumps(self.metadata())

    def challenge(self, error: AuthError | None = None) -> str:
        """The ``WWW-Authenticate`` value for a refusal (``error``) or a bare 401 (None)."""
        parts = []
        code = error.error if error is not None else None
        if code is not None:
            parts.append(f'error="{code}"')
        if isinstance(error, InsufficientScope):
            scopes = _challenge_scopes(error.scopes)
        elif code is None or code == "invalid_token":
            # What to ask for when (re)authorizing; none required: the metadata says.
            scopes = self.required_scopes
        else:
            scopes = ()
        if scopes:
            prefix = self.scope_prefix
            parts.append(f'scope="{" ".join(prefix + scope for scope in scopes)}"')
        parts.append(f'resource_metadata="{self.metadata_url}"')
        if code is not None and error is not None:
            parts.append(f'error_description="{_description(error.reason)}"')
        return "Bearer " + ", ".join(parts)

    def refusal_headers(self, error: AuthError) -> list[tuple[bytes, bytes]]:
        """The headers of a refusal: the Bearer challenge; for a 503, ``Retry-After``."""
        if error.status != 503:
            return [(b"www-authenticate", self.challenge(error).encode("latin-1"))]
        # RFC 6750 has no challenge for "cannot check now"; a client told when to come back
        # keeps its token instead of asking for another.
        retry_after = getattr(error, "retry_after", None)
        if (
            isinstance(retry_after, bool)
            or not isinstance(retry_after, int | float)
            or not math.isfinite(retry_after)
        ):
            return []
        seconds = min(max(math.ceil(retry_after), 1), _MAX_RETRY_AFTER)
        return [(b"retry-after", str(seconds).encode("ascii"))]

    def scope_error(self, scopes: Iterable[str]) -> InsufficientScope:
        """The refusal of a request whose target needs ``scopes`` (besides the required)."""
        needed = dict.fromkeys(self.required_scopes)
        needed.update(dict.fromkeys(scopes))
        return InsufficientScope(needed)

    # --- admission -----------------------------------------------------------------

    async def authorize(self, headers: Mapping[str, str], query_string: bytes = b"") -> Principal:
        """The principal of a request, from its ``Authorization`` header.

        Raises:
            MissingToken: no bearer token (401).
            InvalidRequest: a token in the query string, or a malformed header (400).
            InvalidToken: the verifier refused the token (401).
            InsufficientScope: the token lacks a required scope (403).
            VerifierUnavailable: the token could not be checked now (503).
        """
        if (
            query_string
            # The name as sent, or percent-encoded (then only parsing tells).
            # (find: ``in`` on bytes raises and clears a TypeError before it searches)
            and (query_string.find(b"access_token") >= 0 or query_string.find(b"%") >= 0)
            and _query_token(query_string)
        ):
            # RFC 6750 §2.3 allows it; OAuth 2.1 §5.1 and MCP forbid it: URLs get logged.
            raise InvalidRequest("access tokens are not accepted in the query string")
        token = bearer_token(headers.get("authorization"))
        # verify's first step, without its coroutine: a known token is every request
        # but the first, and a coroutine per request costs more than the lookup.
        principal = self._remembered(token)
        if principal is None:
            principal = await self._verify(token)
        if self.required_scopes and principal.missing(self.required_scopes):
            raise InsufficientScope(self.required_scopes)
        return principal

    async def verify(self, token: str) -> Principal:
        """Ask the verifier about ``token``, within ``verify_timeout`` seconds."""
        # A verifier that remembers tokens answers a known one without waiting: then the
        # deadline below (a cancel scope with a registered deadline, the dearest part of
        # admitting a request) is not needed.
        principal = self._remembered(token)
        if principal is not None:
            return principal
        return await self._verify(token)

    def _remembered(self, token: str) -> Principal | None:
        # What a verifier that remembers tokens knows of ``token`` now; None: ask it.
        cached = getattr(self.verifier, "cached", None)
        if cached is None:
            return None
        try:
            remembered: object = cached(token)
        except AuthError:
            raise
        except Exception:
            return None  # the guarded path (_verify) names the failure
        return remembered if isinstance(remembered, Principal) else None

    async def _verify(self, token: str) -> Principal:
        # The verifier's own answer, under the deadline.
        # object: a verifier written in Python may return anything at all.
        principal: object = None
        with trio.move_on_after(self.verify_timeout):
            try:
                principal = await self.verifier.verify(token)
            except AuthError:
                raise
            except Exception as exc:
                # A broken verifier must not take the request down with a traceback that
                # may hold the token: say what kind of failure, keep the rest out.
                _log.warning("the token verifier failed: %s", type(exc).__name__)
                raise VerifierUnavailable("the token could not be checked now") from None
        if principal is None:
            raise VerifierUnavailable(
                f"the token could not be checked within {self.verify_timeout:g} s"
            )
        if not isinstance(principal, Principal):
            _log.warning("the token verifier returned %s, not a Principal", type(principal))
            raise VerifierUnavailable("the token could not be checked now")
        return principal


def bearer_token(value: str | None) -> str:
    """The token of an ``Authorization: Bearer`` header value (RFC 6750 §2.1).

    Raises:
        MissingToken: no header, or another scheme.
        InvalidRequest: more than one credential, or none after ``Bearer``.
        InvalidToken: not token68, or too long.
    """
    if value is None:
        raise MissingToken("a bearer token is required")
    if len(value) > MAX_AUTHORIZATION:
        raise InvalidToken(f"the Authorization header is longer than {MAX_AUTHORIZATION} bytes")
    scheme, _, rest = value.strip(" \t").partition(" ")
    if scheme.lower() != "bearer":
        # Another scheme: to RFC 6750 §3.1 that is no credentials at all.
        raise MissingToken("a bearer token is required")
    token = rest.strip(" \t")
    if not token:
        raise InvalidRequest("the Authorization header has no token after Bearer")
    if "," in token or " " in token or "\t" in token:
        # Headers.of joins repeated fields with ", ": two Authorization headers land here.
        raise InvalidRequest("the request carries more than one credential")
    body = token.rstrip("=")
    if not body or not body.isascii() or body.encode("ascii").translate(None, _B64TOKEN):
        raise InvalidToken("the token is not a valid bearer token")
    return token


def _query_token(query_string: bytes) -> bool:
    try:
        text = query_string.decode("latin-1")
    except UnicodeDecodeError:  # pragma: no cover - latin-1 decodes any byte
        return False
    return any(
        urllib.parse.unquote_plus(part.partition("=")[0]) == "access_token"
        for part in text.split("&")
    )


def _challenge_scopes(scopes: Iterable[str]) -> tuple[str, ...]:
    # Scopes from a handler's error: only those a challenge can carry, and not too many.
    kept: list[str] = []
    for scope in scopes:
        if isinstance(scope, str) and _SCOPE_TOKEN.fullmatch(scope) and scope not in kept:
            kept.append(scope[:200])
            if len(kept) == _MAX_CHALLENGE_SCOPES:
                break
    return tuple(kept)


def _description(reason: str) -> str:
    text = _NOT_DESCRIPTION.sub(" ", reason[: _MAX_DESCRIPTION * 2]).strip()
    return text[:_MAX_DESCRIPTION] if len(text) > _MAX_DESCRIPTION else text
