# Opaque tokens, asked about at the authorization server (RFC 7662 token introspection).
#
# The token is POSTed to the introspection endpoint as a form, the server authenticating
# itself with client_secret_basic (RFC 6749 §2.3.1: id and secret form-encoded, then
# base64). The answer must say ``"active": true`` (the JSON value, not a string); then
# its ``exp``/``nbf``/``iat``, ``iss`` (when issuers are configured) and ``cnf`` are
# checked as a JWT's would be, and so is ``aud``: it must name one of the accepted
# audiences, and an answer without one is refused (RFC 8707; the MCP authorization spec
# has a server reject tokens not issued for it) — a token asked for without a resource
# indicator, or a refresh token, is active too and names no audience at oidc-provider.
# ``require_audience=False`` is the opt-out for an authorization server that never says
# ``aud``: then an answer without one must at least call itself an access token
# (``token_type: Bearer`` or the like), since nothing else tells a refresh token apart.
# Any answer naming another kind of token (``token_type``, ``token_use``, ``typ``: see
# ``_claims``) is refused.
#
# The answer is remembered until the token expires, but never longer than ``max_age``:
# a token revoked at the authorization server stops working here within ``max_age``
# seconds (0: every request is introspected). A refusal is remembered for
# ``negative_ttl``, so a client retrying a dead token does not hammer the endpoint. At
# most ``max_concurrent`` introspections run at once.

from __future__ import annotations

import base64
import time
from collections.abc import Callable, Iterable
from types import MappingProxyType
from typing import Any
from urllib.parse import quote_plus

import trio

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
    text,
)
from ._errors import InvalidToken, VerifierUnavailable
from ._fetch import Fetcher, FetchError, check_url, shown
from ._jwks import DEFAULT_RETRY_INTERVAL
from ._metadata import check_issuer, discover, endpoint
from ._principal import Principal

#: the longest an introspection answer is trusted, in seconds: a revoked token is refused
#: within this time
DEFAULT_MAX_AGE = 300.0
#: how long a refused token is remembered, in seconds
DEFAULT_NEGATIVE_TTL = 10.0
#: the largest introspection answer accepted, in bytes
DEFAULT_MAX_ANSWER_BYTES = 64 * 1024
#: how many introspection requests may be in flight at once
DEFAULT_MAX_CONCURRENT = 16


def basic_credentials(client_id: str, client_secret: str) -> str:
    """The ``Authorization`` value of client_secret_basic (RFC 6749 §2.3.1)."""
    pair = f"{quote_plus(client_id)}:{quote_plus(client_secret)}"
    return "Basic " + base64.b64encode(pair.encode("utf-8")).decode("ascii")


class IntrospectionVerifier:
    """Verifies opaque tokens by RFC 7662 introspection at the authorization server."""

    def __init__(
        self,
        url: str | None,
        client_id: str,
        client_secret: str,
        *,
        audience: str | Iterable[str] | None = None,
        require_audience: bool = True,
        issuers: str | Iterable[str] = (),
        discover_from: str | None = None,
        leeway: float = 30.0,
        max_age: float = DEFAULT_MAX_AGE,
        negative_ttl: float = DEFAULT_NEGATIVE_TTL,
        cache_size: int = DEFAULT_CACHE_SIZE,
        timeout: float = 5.0,
        max_answer_bytes: int = DEFAULT_MAX_ANSWER_BYTES,
        max_concurrent: int = DEFAULT_MAX_CONCURRENT,
        retry_interval: float = DEFAULT_RETRY_INTERVAL,
        fetcher: Fetcher | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        """Introspect at ``url``, or at the ``introspection_endpoint`` of ``discover_from``.

        An answer's ``aud`` must name ``audience`` (or one of several); with
        ``require_audience=False`` an answer without ``aud`` is taken if it calls itself an
        access token, and ``audience`` may be None (then ``aud`` is not checked at all).
        ``issuers``, when given, must include an answer's ``iss`` if it has one. An answer
        is trusted for ``max_age`` seconds at most.
        """
        if url is None and discover_from is None:
            raise ValueError("introspection needs its endpoint's URL or an issuer to discover it")
        self.url = check_url(url, "the introspection URL") if url is not None else None
        self._discover_from = check_issuer(discover_from) if discover_from else None
        if not client_id or not client_secret:
            raise ValueError("introspection needs this server's client id and client secret")
        self._authorization = basic_credentials(client_id, client_secret)
        if audience is None and require_audience:
            raise ValueError(
                "introspection needs the audience tokens must name (the resource URL), "
                "or require_audience=False"
            )
        self.audiences = audiences_of(audience) if audience is not None else None
        self.require_audience = require_audience
        names = [issuers] if isinstance(issuers, str) else list(issuers)
        self.issuers = frozenset(check_issuer(name) for name in names)
        # the issuer a principal is bound to when the answer does not name one
        self._default_issuer = self._discover_from or (names[0] if len(names) == 1 else None)
        if leeway < 0 or max_age < 0 or negative_ttl < 0:
            raise ValueError("the leeway, max age and negative TTL must be at least 0 seconds")
        self.leeway = float(leeway)
        self.max_age = float(max_age)
        self.negative_ttl = float(negative_ttl)
        self._clock = clock
        self._cache = TokenCache(cache_size, clock)
        self._fetcher = fetcher or Fetcher(timeout=timeout, max_bytes=max_answer_bytes)
        self._limiter = trio.CapacityLimiter(max_concurrent)
        self._discovery_lock = trio.Lock()
        self._discovery_failed: tuple[trio.lowlevel.TrioToken, float, str] | None = None
        self.retry_interval = float(retry_interval)
        #: how many introspection requests were sent (tests and statistics read it)
        self.requests = 0

    def cached(self, token: str) -> Principal | None:
        """The principal remembered for ``token``, without waiting; None: not remembered.

        Raises ``InvalidToken`` for a token recently refused.
        """
        return self._cache.find(token)

    async def verify(self, token: str) -> Principal:
        """The principal an active token names; raises InvalidToken or VerifierUnavailable."""
        key = token_key(token)
        cached = self._cache.lookup(key)
        if cached is not None:
            return cached
        check_token(token)
        answer = await self._introspect(token)
        try:
            principal = self._principal(answer)
        except InvalidToken as exc:
            self._cache.remember(key, exc.reason, self._clock() + self.negative_ttl)
            raise
        until = self._clock() + self.max_age
        if principal.expires_at is not None:
            until = min(until, principal.expires_at + self.leeway)
        self._cache.remember(key, principal, until)
        return principal

    async def _endpoint(self) -> str:
        if self.url is not None:
            return self.url
        issuer = self._discover_from
        assert issuer is not None
        async with self._discovery_lock:
            # another task may have discovered it while this one waited for the lock
            found = self._known_url()
            if found is not None:
                return found
            run, now = trio.lowlevel.current_trio_token(), trio.current_time()
            failed = self._discovery_failed
            if failed is not None and failed[0] is run and now - failed[1] < self.retry_interval:
                # an issuer that is down is asked again only after a pause, not per token
                raise FetchError(failed[2])
            try:
                document = await discover(self._fetcher, issuer)
                self.url = endpoint(document, "introspection_endpoint", issuer)
            except FetchError as exc:
                self._discovery_failed = (run, trio.current_time(), exc.reason)
                raise
        return self.url

    def _known_url(self) -> str | None:
        return self.url

    async def _introspect(self, token: str) -> dict[str, Any]:
        url = await self._endpoint()
        async with self._limiter:
            self.requests += 1
            status, answer = await self._fetcher.request_json(
                "POST",
                url,
                form={"token": token, "token_type_hint": "access_token"},
                headers={"Authorization": self._authorization},
            )
        if status in (401, 403):
            raise VerifierUnavailable(
                f"the introspection endpoint {shown(url)} refused this server's client "
                f"credentials ({status})"
            )
        if status != 200:
            raise FetchError(f"POST {shown(url)} answered {status}", status)
        return answer

    def _principal(self, answer: dict[str, Any]) -> Principal:
        if answer.get("active") is not True:
            raise InvalidToken("the token is not active")
        said_access = check_access_token(answer)
        check_times(answer, self._clock(), self.leeway, need_exp=False)
        issuer = text(answer, "iss")
        if issuer is not None and self.issuers and issuer not in self.issuers:
            raise InvalidToken(f"the token's issuer {named(issuer)!r} is not trusted")
        if answer.get("aud") is not None or self.require_audience:
            if self.audiences is not None:
                check_audience(answer, self.audiences)
        elif not said_access:
            raise InvalidToken(
                "the token names no audience, nor that it is an access token ('token_type')"
            )
        check_not_bound(answer)
        client_id = client_of(answer)
        subject = subject_of(answer, text(answer, "username") or client_id)
        return Principal(
            subject=subject,
            issuer=issuer or self._default_issuer,
            client_id=client_id,
            scopes=scopes_of(answer),
            claims=MappingProxyType(answer),
            expires_at=number(answer, "exp"),
        )
