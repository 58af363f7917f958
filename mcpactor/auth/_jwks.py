# An issuer's signing keys: a JWKS, fetched, bounded, kept fresh, never fetched per request.
#
# Theory of operation. ``IssuerKeys`` holds the keys of one issuer. The first token of that
# issuer fetches them (discovering ``jwks_uri`` from the issuer's metadata unless a JWKS
# URL was given); after that they are served from memory. They are fetched again
#
# - when they are older than ``ttl`` (keys rotate; a stale set is kept and used if the
#   refresh fails),
# - when a token names a ``kid`` the set lacks (the issuer rotated), unless a fetch began
#   since the token arrived (its answer is the issuer's keys as of then), but at most once
#   per ``min_refresh_interval`` counted between such lookups (a scheduled fetch does not
#   start the count, so the first token signed after a rotation is accepted at once): a
#   flood of tokens with made-up kids costs one fetch per interval, not one each. A token
#   arriving within the interval is never refused for a kid its keys merely might have:
#   it waits for the next allowed fetch when that is at most ``max_refresh_wait`` away,
#   else it gets 503 with ``Retry-After`` (a 401 ``invalid_token`` makes a client throw a
#   good token away). Tokens waiting together share that one fetch,
# - and, after a failed fetch with nothing to fall back on, not before ``retry_interval``:
#   meanwhile every token is refused at once with the last error (503), so an issuer that
#   is down makes no request wait.
#
# Concurrent refreshes are coalesced: the first caller fetches under the lock, the others
# wait for it and take its result (the generation counter tells them a fetch happened
# while they waited). A caller cancelled mid-fetch leaves the generation unchanged, so the
# next waiter fetches instead. Time is trio's clock, so tests drive it with MockClock (a
# verifier used by several trio runs starts its deadlines over in each).
#
# Only keys that can verify signatures are kept: RSA (2048 bits or more), EC and OKP keys
# whose ``use`` is ``sig`` or absent. Symmetric keys in a published JWKS are ignored —
# an HMAC key is only ever the configured secret, so a public key can never be turned
# into one (the classic RS256 → HS256 confusion).

from __future__ import annotations

import base64
import logging
from collections.abc import Callable, Iterable, Mapping
from typing import Any

import trio
from joserfc import jwk
from joserfc.errors import JoseError

from ._errors import VerifierUnavailable
from ._fetch import Fetcher, FetchError, shown
from ._metadata import discover, endpoint

log = logging.getLogger("mcpactor.auth")

Key = jwk.RSAKey | jwk.ECKey | jwk.OKPKey | jwk.OctKey

#: the key type and curves each signing algorithm needs
ALGORITHM_KEYS: Mapping[str, tuple[str, frozenset[str] | None]] = {
    **{f"RS{n}": ("RSA", None) for n in (256, 384, 512)},
    **{f"PS{n}": ("RSA", None) for n in (256, 384, 512)},
    "ES256": ("EC", frozenset({"P-256"})),
    "ES384": ("EC", frozenset({"P-384"})),
    "ES512": ("EC", frozenset({"P-521"})),
    "ES256K": ("EC", frozenset({"secp256k1"})),
    "EdDSA": ("OKP", frozenset({"Ed25519", "Ed448"})),
    "Ed25519": ("OKP", frozenset({"Ed25519"})),
    "Ed448": ("OKP", frozenset({"Ed448"})),
    **{f"HS{n}": ("oct", None) for n in (256, 384, 512)},
}

#: the members of a public key, per key type (private members are dropped on import)
_PUBLIC_MEMBERS = {
    "RSA": ("n", "e"),
    "EC": ("crv", "x", "y"),
    "OKP": ("crv", "x"),
}
_COMMON_MEMBERS = ("kty", "kid", "alg", "use", "key_ops")
_MIN_RSA_BITS = 2048

#: the most keys one JWKS may hold
DEFAULT_MAX_KEYS = 64
#: how long a fetched JWKS is used before it is fetched again, in seconds
DEFAULT_JWKS_TTL = 600.0
#: the least time between two fetches of one issuer's keys for unknown key ids, in seconds
DEFAULT_MIN_REFRESH_INTERVAL = 5.0
#: the longest a token with an unknown key id waits for the next allowed fetch, in seconds
DEFAULT_MAX_REFRESH_WAIT = 5.0
#: after a failed fetch with no keys to fall back on, the wait before trying again
DEFAULT_RETRY_INTERVAL = 5.0


def key_fits(key: Key, alg: str) -> bool:
    """Whether ``key`` may verify a signature made with ``alg`` (type, curve, its own alg)."""
    wanted = ALGORITHM_KEYS.get(alg)
    if wanted is None:
        return False
    kty, curves = wanted
    if key.key_type != kty:
        return False
    if curves is not None and key.get("crv") not in curves:
        return False
    own = key.get("alg")
    return own is None or own == alg


def _public_dict(raw: Mapping[str, Any]) -> dict[str, Any] | None:
    kty = raw.get("kty")
    members = _PUBLIC_MEMBERS.get(kty) if isinstance(kty, str) else None
    if members is None:
        return None
    if raw.get("use", "sig") != "sig":
        return None
    ops = raw.get("key_ops")
    if ops is not None and (not isinstance(ops, list) or "verify" not in ops):
        return None
    for name in ("kid", "alg"):
        if name in raw and not isinstance(raw[name], str):
            return None
    return {name: raw[name] for name in (*_COMMON_MEMBERS, *members) if name in raw}


def _rsa_bits(public: Mapping[str, Any]) -> int:
    modulus = public.get("n")
    if not isinstance(modulus, str) or len(modulus) > 2048:
        return 0
    try:
        raw = base64.urlsafe_b64decode(modulus + "=" * (-len(modulus) % 4))
    except ValueError:
        return 0
    return int.from_bytes(raw, "big").bit_length()


def parse_jwks(document: Any, source: str, max_keys: int = DEFAULT_MAX_KEYS) -> list[Key]:
    """The signing keys of the JWKS ``document``; raises ``FetchError`` if it is refused."""
    keys = document.get("keys") if isinstance(document, dict) else None
    if not isinstance(keys, list):
        raise FetchError(f"the JWKS of {shown(source)} has no list of keys")
    if len(keys) > max_keys:
        raise FetchError(
            f"the JWKS of {shown(source)} has {len(keys)} keys, more than the {max_keys} allowed"
        )
    found: list[Key] = []
    skipped = 0
    for raw in keys:
        public = _public_dict(raw) if isinstance(raw, dict) else None
        key: Key | None = None
        # a short RSA modulus is left out before import (joserfc would warn about it)
        if public is not None and (public["kty"] != "RSA" or _rsa_bits(public) >= _MIN_RSA_BITS):
            try:
                key = jwk.import_key(public)
            except (JoseError, ValueError, TypeError):
                key = None
        if key is None:
            skipped += 1
        else:
            found.append(key)
    if skipped:
        log.debug("%d key(s) in the JWKS of %s cannot verify signatures", skipped, shown(source))
    return found


class IssuerKeys:
    """The signing keys of one issuer, fetched on first use and refreshed within limits."""

    def __init__(
        self,
        issuer: str,
        fetcher: Fetcher,
        *,
        jwks_url: str | None = None,
        keys: Iterable[Key] | None = None,
        max_keys: int = DEFAULT_MAX_KEYS,
        ttl: float = DEFAULT_JWKS_TTL,
        min_refresh_interval: float = DEFAULT_MIN_REFRESH_INTERVAL,
        max_refresh_wait: float = DEFAULT_MAX_REFRESH_WAIT,
        retry_interval: float = DEFAULT_RETRY_INTERVAL,
        clock: Callable[[], float] = trio.current_time,
    ) -> None:
        if min(ttl, min_refresh_interval, max_refresh_wait, retry_interval) < 0:
            raise ValueError("the key store's intervals must be at least 0 seconds")
        self.issuer = issuer
        self._fetcher = fetcher
        self._jwks_url = jwks_url
        #: keys given, not fetched (a JWKS file): never refreshed
        self._static = keys is not None
        self._keys: list[Key] | None = list(keys) if keys is not None else None
        self._max_keys = max_keys
        self._ttl = ttl
        self._min_refresh_interval = min_refresh_interval
        self._max_refresh_wait = max_refresh_wait
        self._retry_interval = retry_interval
        self._clock = clock
        self._fresh_until = float("-inf")
        self._run: trio.lowlevel.TrioToken | None = None
        self._attempted_at: float | None = None
        #: when a token's unknown kid last made us fetch (the rate limit's start)
        self._kid_lookup_at: float | None = None
        self._error: FetchError | None = None
        self._generation = 0
        self._lock = trio.Lock()
        #: how many times the JWKS was fetched (tests and statistics read it)
        self.fetches = 0

    async def keys_for(self, kid: str | None, alg: str) -> list[Key]:
        """The keys that may have signed a token with ``kid`` and ``alg`` (maybe none).

        Raises ``VerifierUnavailable`` when they cannot be had now (``retry_after`` says
        when they may be).
        """
        if self._static:
            return self._select(kid, alg)
        now = self._current_time()
        arrived = self._generation
        if self._keys is None or now >= self._fresh_until:
            await self._refresh(now)
        found = self._select(kid, alg)
        if found or kid is None:
            return found
        await self._look_up(arrived)
        found = self._select(kid, alg)
        if not found and self._error is not None:
            raise self._unavailable(self._min_refresh_interval)
        return found

    async def _look_up(self, arrived: int) -> None:
        # The keys again, for a token naming a kid they lack: unless a fetch has begun since
        # the token arrived (generation ``arrived``), as soon as the rate limit allows.
        while self._generation == arrived:
            if self._lock.locked():
                # a fetch is under way: its keys are as new as any this token could get
                await self._refresh_from(arrived)
                return
            now = self._clock()
            last = self._kid_lookup_at
            wait = 0.0 if last is None else last + self._min_refresh_interval - now
            if wait <= 0:
                log.info("a token of %s names an unknown key id: fetching its keys", self.issuer)
                self._kid_lookup_at = now
                await self._refresh_from(arrived)
                return
            if wait > self._max_refresh_wait:
                raise VerifierUnavailable(
                    f"the token names a key id the keys of {shown(self.issuer)} lack; they "
                    f"may be fetched again in {wait:.0f} s",
                    retry_after=wait,
                )
            # the tokens waiting here wake together, and the first one's fetch serves all
            await trio.sleep(wait)

    def _current_time(self) -> float:
        # trio's clock starts anew (at a random offset) in every trio.run: deadlines kept
        # from another run mean nothing in this one, so a new run starts them over
        run = trio.lowlevel.current_trio_token()
        if run is not self._run:
            self._run = run
            self._fresh_until = float("-inf")
            self._attempted_at = None
            self._kid_lookup_at = None
        return self._clock()

    def _select(self, kid: str | None, alg: str) -> list[Key]:
        keys = self._keys or ()
        return [k for k in keys if (kid is None or k.kid == kid) and key_fits(k, alg)]

    async def _refresh(self, now: float) -> None:
        attempted = self._attempted_at
        if self._keys is None and attempted is not None and now - attempted < self._retry_interval:
            raise self._unavailable(attempted + self._retry_interval - now)
        await self._refresh_from(self._generation)
        if self._keys is None:
            raise self._unavailable(self._retry_interval)

    async def _refresh_from(self, generation: int) -> None:
        # Fetch, unless a fetch has ended since ``generation``: the coalescing of refreshes.
        async with self._lock:
            if self._generation == generation:
                await self._fetch_keys()

    async def _fetch_keys(self) -> None:
        self.fetches += 1
        try:
            url = self._jwks_url
            if url is None:
                url = endpoint(await discover(self._fetcher, self.issuer), "jwks_uri", self.issuer)
                # the metadata is fetched once; its jwks_uri serves every later refresh
                self._jwks_url = url
            keys = parse_jwks(await self._fetcher.get_json(url), url, self._max_keys)
        except FetchError as exc:
            now = self._clock()
            self._attempted_at = now
            self._error = exc
            self._generation += 1
            if self._keys is not None:
                log.warning("keeping the old keys of %s: %s", self.issuer, exc.reason)
                self._fresh_until = now + self._retry_interval
            else:
                log.warning("the keys of %s cannot be fetched: %s", self.issuer, exc.reason)
            return
        now = self._clock()
        self._keys = keys
        self._attempted_at = now
        self._fresh_until = now + self._ttl
        self._error = None
        self._generation += 1
        log.info("fetched %d signing key(s) of %s", len(keys), self.issuer)

    def _unavailable(self, retry_after: float) -> FetchError:
        reason = self._error.reason if self._error is not None else "not fetched"
        return FetchError(
            f"the signing keys of {shown(self.issuer)} are unavailable: {reason}",
            retry_after=retry_after,
        )
