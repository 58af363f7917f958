"""A token signed with a key the verifier has not fetched yet, while fetches are rate-limited.

Issue 43: after an unknown-kid token made the verifier fetch the keys, every token of a
key rotated in just after was refused with 401 ``invalid_token`` until the rate limit
ran out, and clients threw those good tokens away. Now such a token waits for the next
allowed fetch when it is near, else gets 503 with ``Retry-After``; tokens waiting together
share one fetch. The keys come from an in-memory fetcher, so the virtual clock
(``autojump_clock``) can run through every wait without real sockets.
"""

from __future__ import annotations

import time
from typing import Any

import pytest
import trio
import trio.testing
from joserfc import jwk, jwt

from mcpactor.auth import InvalidToken, JwtVerifier, ResourceServer, VerifierUnavailable
from mcpactor.auth._fetch import FetchError

ISSUER = "https://id.example.com"
JWKS_URL = "https://id.example.com/jwks"
AUDIENCE = "https://mcp.example.com/mcp"


class Keys:
    """Serves a JWKS from memory, counting fetches; ``hold`` makes a fetch wait."""

    def __init__(self, *keys: jwk.RSAKey) -> None:
        self.published = list(keys)
        self.fetches = 0
        self.hold: trio.Event | None = None
        self.down = False

    def publish(self, *keys: jwk.RSAKey) -> None:
        self.published = list(keys)

    async def get_json(self, url: str) -> dict[str, Any]:
        assert url == JWKS_URL
        self.fetches += 1
        if self.hold is not None:
            await self.hold.wait()
        if self.down:
            raise FetchError(f"GET {url} answered 500", 500)
        return {"keys": [key.as_dict(private=False) for key in self.published]}


@pytest.fixture(scope="module")
def old_key() -> jwk.RSAKey:
    return jwk.RSAKey.generate_key(2048, parameters={"kid": "old"})


@pytest.fixture(scope="module")
def new_key() -> jwk.RSAKey:
    return jwk.RSAKey.generate_key(2048, parameters={"kid": "new"})


@pytest.fixture(scope="module")
def stray_key() -> jwk.RSAKey:
    return jwk.RSAKey.generate_key(2048, parameters={"kid": "never-published"})


def token(key: jwk.RSAKey, jti: str = "1") -> str:
    now = int(time.time())
    claims = {"iss": ISSUER, "aud": AUDIENCE, "sub": "ann", "exp": now + 600, "jti": jti}
    return jwt.encode({"alg": "RS256", "typ": "at+jwt", "kid": key.kid}, claims, key)


def verifier(keys: Keys, **options: Any) -> JwtVerifier:
    return JwtVerifier(ISSUER, AUDIENCE, jwks_urls={ISSUER: JWKS_URL}, fetcher=keys, **options)


async def rotated_after_a_stray_kid(
    keys: Keys, v: JwtVerifier, old_key: jwk.RSAKey, new_key: jwk.RSAKey, stray_key: jwk.RSAKey
) -> None:
    # The issue's sequence: the keys fetched, then a token of a kid nobody publishes made
    # the verifier fetch them again (and it was refused: the fetch was made for it), then
    # the issuer rotated.
    await v.verify(token(old_key))
    with pytest.raises(InvalidToken, match=r"no key of .* fits"):
        await v.verify(token(stray_key))
    assert keys.fetches == 2
    keys.publish(new_key, old_key)


async def test_a_rotated_key_within_the_rate_limit_waits_for_the_next_fetch(
    autojump_clock: trio.testing.MockClock,
    old_key: jwk.RSAKey,
    new_key: jwk.RSAKey,
    stray_key: jwk.RSAKey,
) -> None:
    keys = Keys(old_key)
    v = verifier(keys, min_refresh_interval=5, max_refresh_wait=5)
    await rotated_after_a_stray_kid(keys, v, old_key, new_key, stray_key)
    await trio.sleep(1)
    started = trio.current_time()
    principal = await v.verify(token(new_key))
    assert principal.subject == "ann"
    # it waited for what was left of the interval, then one fetch found the new key
    assert trio.current_time() - started == pytest.approx(4)
    assert keys.fetches == 3


async def test_tokens_waiting_together_share_one_fetch(
    autojump_clock: trio.testing.MockClock,
    old_key: jwk.RSAKey,
    new_key: jwk.RSAKey,
    stray_key: jwk.RSAKey,
) -> None:
    keys = Keys(old_key)
    v = verifier(keys, min_refresh_interval=5, max_refresh_wait=5)
    await rotated_after_a_stray_kid(keys, v, old_key, new_key, stray_key)
    subjects: list[str] = []

    async def one(jti: str) -> None:
        subjects.append((await v.verify(token(new_key, jti))).subject)

    async with trio.open_nursery() as nursery:
        for n in range(10):
            nursery.start_soon(one, str(n))
            await trio.sleep(0.25)  # virtual time: they arrive over 2.5 s of the 5
    assert subjects == ["ann"] * 10
    assert keys.fetches == 3


async def test_a_token_arriving_during_a_fetch_takes_its_keys(
    autojump_clock: trio.testing.MockClock,
    old_key: jwk.RSAKey,
    new_key: jwk.RSAKey,
) -> None:
    keys = Keys(old_key)
    v = verifier(keys)
    await v.verify(token(old_key))
    keys.publish(new_key, old_key)
    keys.hold = trio.Event()
    subjects: list[str] = []

    async def one(jti: str) -> None:
        subjects.append((await v.verify(token(new_key, jti))).subject)

    async with trio.open_nursery() as nursery:
        nursery.start_soon(one, "first")
        await trio.testing.wait_all_tasks_blocked()
        assert keys.fetches == 2  # the first token's lookup, under way
        nursery.start_soon(one, "second")
        await trio.testing.wait_all_tasks_blocked()
        keys.hold.set()
    assert subjects == ["ann", "ann"]
    assert keys.fetches == 2


async def test_a_wait_longer_than_allowed_is_503_with_retry_after(
    autojump_clock: trio.testing.MockClock,
    old_key: jwk.RSAKey,
    new_key: jwk.RSAKey,
    stray_key: jwk.RSAKey,
) -> None:
    keys = Keys(old_key)
    v = verifier(keys, min_refresh_interval=30, max_refresh_wait=5)
    await rotated_after_a_stray_kid(keys, v, old_key, new_key, stray_key)
    await trio.sleep(10)
    started = trio.current_time()
    with pytest.raises(VerifierUnavailable, match="fetched again in 20 s") as caught:
        await v.verify(token(new_key))
    # answered at once: nothing waited, nothing fetched
    assert trio.current_time() == started
    assert caught.value.status == 503
    assert caught.value.retry_after == pytest.approx(20)
    assert keys.fetches == 2
    resource_server = ResourceServer(resource=AUDIENCE, authorization_servers=[ISSUER], verifier=v)
    assert resource_server.refusal_headers(caught.value) == [(b"retry-after", b"20")]
    # within max_refresh_wait of the next allowed fetch, a token waits for it
    await trio.sleep(16)
    assert (await v.verify(token(new_key))).subject == "ann"
    assert trio.current_time() - started == pytest.approx(20)
    assert keys.fetches == 3


async def test_a_kid_missing_from_keys_fetched_since_the_token_came_is_401_at_once(
    autojump_clock: trio.testing.MockClock, old_key: jwk.RSAKey, stray_key: jwk.RSAKey
) -> None:
    keys = Keys(old_key)
    v = verifier(keys)
    started = trio.current_time()
    # the first fetch was made for this very token: its keys are the issuer's answer
    with pytest.raises(InvalidToken, match=r"no key of .* fits"):
        await v.verify(token(stray_key))
    assert keys.fetches == 1
    # the next stray token gets its own lookup at once (none was made for a kid yet)...
    with pytest.raises(InvalidToken, match=r"no key of .* fits"):
        await v.verify(token(stray_key, "2"))
    assert keys.fetches == 2
    # ...and one more waits for the rate limit, then is refused after that fetch
    with pytest.raises(InvalidToken, match=r"no key of .* fits"):
        await v.verify(token(stray_key, "3"))
    assert keys.fetches == 3
    assert trio.current_time() - started == pytest.approx(5)


async def test_a_lookup_that_fails_is_503_not_401(
    autojump_clock: trio.testing.MockClock, old_key: jwk.RSAKey, new_key: jwk.RSAKey
) -> None:
    keys = Keys(old_key)
    v = verifier(keys, min_refresh_interval=7)
    await v.verify(token(old_key))
    keys.publish(new_key, old_key)
    keys.down = True
    with pytest.raises(VerifierUnavailable, match="answered 500") as caught:
        await v.verify(token(new_key))
    assert caught.value.retry_after == pytest.approx(7)
    # the old keys are still used meanwhile
    assert (await v.verify(token(old_key, "2"))).subject == "ann"


async def test_an_issuer_down_from_the_start_says_when_to_retry(
    autojump_clock: trio.testing.MockClock, old_key: jwk.RSAKey
) -> None:
    keys = Keys(old_key)
    keys.down = True
    v = verifier(keys, retry_interval=5)
    with pytest.raises(VerifierUnavailable) as first:
        await v.verify(token(old_key))
    assert first.value.retry_after == pytest.approx(5)
    await trio.sleep(2)
    with pytest.raises(VerifierUnavailable) as second:
        await v.verify(token(old_key))
    assert second.value.retry_after == pytest.approx(3)
    assert keys.fetches == 1


def test_refusal_headers() -> None:
    class Never:
        async def verify(self, token: str) -> Any:
            raise AssertionError

    rs = ResourceServer(resource=AUDIENCE, authorization_servers=[ISSUER], verifier=Never())
    assert rs.refusal_headers(VerifierUnavailable("down")) == []
    assert rs.refusal_headers(VerifierUnavailable("down", retry_after=0.2)) == [
        (b"retry-after", b"1")
    ]
    assert rs.refusal_headers(VerifierUnavailable("down", retry_after=1e9)) == [
        (b"retry-after", b"3600")
    ]
    for odd in (float("nan"), float("inf"), True, "5"):
        error = VerifierUnavailable("down")
        error.retry_after = odd  # type: ignore[assignment]
        assert rs.refusal_headers(error) == []
    ((name, value),) = rs.refusal_headers(InvalidToken("expired"))
    assert name == b"www-authenticate"
    assert value.startswith(b'Bearer error="invalid_token"')
