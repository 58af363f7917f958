# JWT access tokens (RFC 9068, and plain signed JWTs), checked locally with the issuer's keys.
#
# joserfc does the JOSE work: it is maintained, typed, has no asyncio in it, and is what
# authlib's own ``authlib.jose`` (now deprecated) points to. What is checked, in order —
# cheap refusals first, so a token that cannot pass never costs a key fetch:
#
# 1. the token's text (length, characters) and its JWS compact shape;
# 2. the header: ``alg`` in the allow-list (never ``none``; HS* only with a configured
#    secret), ``typ`` absent or ``at+jwt``/``JWT`` (``at+jwt`` only, with
#    ``require_at_jwt``: RFC 9068 §4, which tells an access token from an ID token), no
#    unencoded payload (``b64``);
# 3. ``iss`` one of the trusted issuers; ``aud`` names one of the accepted audiences (the
#    resource URL, RFC 8707, or what the provider puts there: an API's client id or
#    ``api://`` URI); ``exp``, ``nbf``, ``iat`` within the leeway; no ``cnf`` (a
#    sender-constrained token); no claim naming it another kind of token (``_claims``:
#    Keycloak's ``typ: ID`` or ``Refresh``, ``token_use: id``);
# 4. a key of that issuer with the token's ``kid`` whose type fits ``alg`` (see
#    ``_jwks``), and the signature with it.
#
# A token that passes is a Principal, remembered (``_cache``) until it expires, or for
# ``cache_max_age`` at most: the next request with it costs a hash and a dict lookup.

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterable
from types import MappingProxyType
from typing import Any

import orjson
from joserfc import jws
from joserfc.errors import JoseError, UnsupportedAlgorithmError
from joserfc.jwa import JWSAlgModel
from joserfc.jwk import OctKey

from ._cache import DEFAULT_CACHE_SIZE, TokenCache, token_key
from ._claims import (
    audiences_of,
    check_access_token,
    check_audience,
    check_not_bound,
    check_times,
    check_token,
    client_of,
    named,
    number,
    scopes_of,
    subject_of,
)
from ._errors import InvalidToken
from ._fetch import DEFAULT_MAX_BYTES, DEFAULT_TIMEOUT, Fetcher, FetchError
from ._jwks import (
    ALGORITHM_KEYS,
    DEFAULT_JWKS_TTL,
    DEFAULT_MAX_KEYS,
    DEFAULT_MAX_REFRESH_WAIT,
    DEFAULT_MIN_REFRESH_INTERVAL,
    DEFAULT_RETRY_INTERVAL,
    IssuerKeys,
    Key,
    parse_jwks,
)
from ._metadata import check_issuer
from ._principal import Principal

#: the signing algorithms accepted unless told otherwise (asymmetric only)
DEFAULT_ALGORITHMS: tuple[str, ...] = (
    "RS256",
    "RS384",
    "RS512",
    "PS256",
    "PS384",
    "PS512",
    "ES256",
    "ES384",
    "ES512",
    "EdDSA",
    "Ed25519",
)
#: the leeway on ``exp``, ``nbf`` and ``iat``, in seconds
DEFAULT_LEEWAY = 30.0

_AT_JWT_TYPES = frozenset({"at+jwt", "application/at+jwt"})
_ACCEPTED_TYPES = _AT_JWT_TYPES | {"jwt", "application/jwt"}
_HMAC = frozenset({"HS256", "HS384", "HS512"})
#: the longest a verified token is remembered, in seconds (it is checked again after)
DEFAULT_CACHE_MAX_AGE = 600.0


class _Registry(jws.JWSRegistry):
    # a JWT's header may carry a few more parameters than joserfc's default budget allows
    # (x5t, a long kid); the token's whole length is bounded before this is reached
    max_header_length = 2048

    def get_alg(self, name: str) -> JWSAlgModel:
        # The allow-list is the verifier's, checked before; joserfc's own would warn on
        # every EdDSA token (RFC 9864 prefers "Ed25519"), which is what most issuers send.
        if name not in self.algorithms or not self.allowed or name not in self.allowed:
            raise UnsupportedAlgorithmError(f"the algorithm {name!r} is not accepted")
        return self.algorithms[name]


class JwtVerifier:
    """Verifies JWT access tokens with the keys of the issuers it trusts."""

    def __init__(
        self,
        issuers: str | Iterable[str],
        audience: str | Iterable[str],
        *,
        algorithms: Iterable[str] = DEFAULT_ALGORITHMS,
        leeway: float = DEFAULT_LEEWAY,
        jwks_file: str | os.PathLike[str] | None = None,
        jwks: dict[str, Any] | None = None,
        jwks_urls: dict[str, str] | None = None,
        hmac_secret: bytes | None = None,
        require_exp: bool = True,
        require_at_jwt: bool = False,
        timeout: float = DEFAULT_TIMEOUT,
        max_jwks_bytes: int = DEFAULT_MAX_BYTES,
        max_keys: int = DEFAULT_MAX_KEYS,
        jwks_ttl: float = DEFAULT_JWKS_TTL,
        min_refresh_interval: float = DEFAULT_MIN_REFRESH_INTERVAL,
        max_refresh_wait: float = DEFAULT_MAX_REFRESH_WAIT,
        retry_interval: float = DEFAULT_RETRY_INTERVAL,
        cache_size: int = DEFAULT_CACHE_SIZE,
        cache_max_age: float = DEFAULT_CACHE_MAX_AGE,
        fetcher: Fetcher | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        """Trust ``issuers``, accept tokens whose ``aud`` names ``audience`` (or one of several).

        The keys come from ``jwks`` (a JWKS document) or ``jwks_file`` when given — then
        nothing is fetched — else from each issuer's metadata (``jwks_uri``), or from
        ``jwks_urls[issuer]``. A token naming a key id the keys lack makes them fetched
        again, at most once per ``min_refresh_interval``; a token arriving sooner waits
        for that fetch when it is at most ``max_refresh_wait`` away, else gets
        ``VerifierUnavailable`` with its ``retry_after``. ``require_at_jwt`` refuses
        tokens whose header ``typ`` is not ``at+jwt`` (RFC 9068). ``clock`` is the wall
        clock ``exp`` is compared with.
        """
        names = [issuers] if isinstance(issuers, str) else list(issuers)
        if not names:
            raise ValueError("a JWT verifier needs at least one issuer to trust")
        self.issuers = tuple(check_issuer(name) for name in names)
        self.audiences = audiences_of(audience)
        self.algorithms = _check_algorithms(algorithms, hmac_secret)
        if leeway < 0:
            raise ValueError("the leeway must be at least 0 seconds")
        self.leeway = float(leeway)
        self.require_exp = require_exp
        self.require_at_jwt = require_at_jwt
        self._types = _AT_JWT_TYPES if require_at_jwt else _ACCEPTED_TYPES
        self._clock = clock
        self._cache = TokenCache(cache_size, clock)
        self.cache_max_age = float(cache_max_age)
        self._registry = _Registry(algorithms=list(self.algorithms), strict_check_header=False)
        self._hmac_keys: list[Key] = (
            [OctKey.import_key(hmac_secret)] if hmac_secret is not None else []
        )
        fetcher = fetcher or Fetcher(timeout=timeout, max_bytes=max_jwks_bytes)
        static = _configured_keys(jwks, jwks_file, max_keys)
        urls = jwks_urls or {}
        self._keys = {
            name: IssuerKeys(
                name,
                fetcher,
                jwks_url=urls.get(name),
                keys=static,
                max_keys=max_keys,
                ttl=jwks_ttl,
                min_refresh_interval=min_refresh_interval,
                max_refresh_wait=max_refresh_wait,
                retry_interval=retry_interval,
            )
            for name in self.issuers
        }

    def keys_of(self, issuer: str) -> IssuerKeys:
        """The key store of ``issuer`` (one of ``issuers``)."""
        return self._keys[issuer]

    def cached(self, token: str) -> Principal | None:
        """The principal remembered for ``token``, without waiting; None: not remembered.

        Raises ``InvalidToken`` for a token recently refused.
        """
        return self._cache.find(token)

    async def verify(self, token: str) -> Principal:
        """The principal a valid JWT names; raises ``InvalidToken`` or ``VerifierUnavailable``."""
        key = token_key(token)
        cached = self._cache.lookup(key)
        if cached is not None:
            return cached
        principal = await self._verify(token)
        # remembered until it expires, but not past cache_max_age: a key the issuer
        # withdrew stops vouching for its tokens within that time
        until = self._clock() + self.cache_max_age
        if principal.expires_at is not None:
            until = min(until, principal.expires_at + self.leeway)
        self._cache.remember(key, principal, until)
        return principal

    async def _verify(self, token: str) -> Principal:
        check_token(token)
        try:
            signed = jws.extract_compact(token.encode("ascii"), registry=self._registry)
        except (JoseError, ValueError):
            raise InvalidToken("the token is not a well-formed JWT") from None
        header = signed.protected
        alg = header.get("alg")
        if not isinstance(alg, str) or alg not in self.algorithms:
            raise InvalidToken(f"the token's algorithm {named(alg, 20)!r} is not accepted")
        typ = header.get("typ")
        if (typ is not None or self.require_at_jwt) and (
            not isinstance(typ, str) or typ.lower() not in self._types
        ):
            raise InvalidToken(f"the token's type {named(typ, 40)!r} is not an access token")
        if "b64" in header:
            raise InvalidToken("the token's payload is not encoded (b64); refused")
        kid = header.get("kid")
        if kid is not None and not isinstance(kid, str):
            raise InvalidToken("the token's 'kid' is not a string")
        try:
            claims = orjson.loads(signed.payload)
        except orjson.JSONDecodeError:
            raise InvalidToken("the token's claims are not JSON") from None
        if not isinstance(claims, dict):
            raise InvalidToken("the token's claims are not a JSON object")

        issuer = claims.get("iss")
        if not isinstance(issuer, str) or issuer not in self._keys:
            raise InvalidToken(f"the token's issuer {named(issuer)!r} is not trusted")
        check_audience(claims, self.audiences)
        check_times(claims, self._clock(), self.leeway, need_exp=self.require_exp)
        check_not_bound(claims)
        check_access_token(claims)
        client_id = client_of(claims)
        subject = subject_of(claims, client_id)
        scopes = scopes_of(claims)

        if alg in _HMAC:
            candidates = self._hmac_keys
        else:
            candidates = await self._keys[issuer].keys_for(kid, alg)
        if not candidates:
            raise InvalidToken(
                f"no key of {issuer} fits the token (kid {named(kid, 60)!r}, alg {alg})"
            )
        if not any(self._signed_by(signed, key) for key in candidates):
            raise InvalidToken("the token's signature does not verify")

        return Principal(
            subject=subject,
            issuer=issuer,
            client_id=client_id,
            scopes=scopes,
            claims=MappingProxyType(claims),
            expires_at=number(claims, "exp"),
        )

    def _signed_by(self, signed: jws.CompactSignature, key: Key) -> bool:
        try:
            return jws.validate_compact(signed, key, registry=self._registry)
        except (JoseError, ValueError):
            return False


def _check_algorithms(algorithms: Iterable[str], hmac_secret: bytes | None) -> tuple[str, ...]:
    chosen = tuple(dict.fromkeys(algorithms))
    if not chosen:
        raise ValueError("at least one signing algorithm must be accepted")
    for alg in chosen:
        if alg.lower() == "none":
            raise ValueError("the algorithm 'none' is never accepted")
        if alg not in ALGORITHM_KEYS:
            known = ", ".join(sorted(a for a in ALGORITHM_KEYS))
            raise ValueError(f"unknown signing algorithm {alg!r} (known: {known})")
        if alg in _HMAC and hmac_secret is None:
            raise ValueError(f"{alg} needs a shared secret, and none is configured")
    if hmac_secret is not None and len(hmac_secret) < 32:
        raise ValueError("an HMAC secret must be at least 32 bytes")
    return chosen


def _configured_keys(
    jwks: dict[str, Any] | None, jwks_file: str | os.PathLike[str] | None, max_keys: int
) -> list[Key] | None:
    # The keys given in the configuration (a JWKS document, else a JWKS file): they are
    # never fetched. None when neither is given.
    source = "the configuration"
    if jwks_file is not None and jwks is None:
        jwks = _read_jwks_file(jwks_file)
        source = f"the file {os.fspath(jwks_file)}"
    if jwks is None:
        return None
    try:
        keys = parse_jwks(jwks, source, max_keys)
    except FetchError as exc:
        raise ValueError(exc.reason) from None
    if not keys:
        raise ValueError(f"the JWKS of {source} has no key that can verify signatures")
    return keys


def _read_jwks_file(path: str | os.PathLike[str]) -> dict[str, Any]:
    try:
        with open(path, "rb") as file:
            raw = file.read(DEFAULT_MAX_BYTES + 1)
    except OSError as exc:
        raise ValueError(f"cannot read the JWKS file {os.fspath(path)!r}: {exc}") from None
    if len(raw) > DEFAULT_MAX_BYTES:
        raise ValueError(f"the JWKS file {os.fspath(path)!r} is over {DEFAULT_MAX_BYTES} bytes")
    try:
        document = orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        raise ValueError(f"the JWKS file {os.fspath(path)!r} is not JSON: {exc}") from None
    if not isinstance(document, dict):
        raise ValueError(f"the JWKS file {os.fspath(path)!r} is not a JSON object")
    return document
