"""IntrospectionVerifier, CombinedVerifier and verifier_from against an endpoint on loopback."""

from __future__ import annotations

import base64
import json
import time
from collections.abc import AsyncIterator
from typing import Any
from urllib.parse import parse_qs

import pytest
import trio
import trio.testing
from joserfc import jwk, jwt

from mcpactor.auth import (
    CombinedVerifier,
    IntrospectionVerifier,
    InvalidToken,
    JwtVerifier,
    Principal,
    TokenVerifier,
    VerifierUnavailable,
    verifier_from,
)

from ._documents import (
    Answer,
    DocumentServer,
    Request,
    json_answer,
    serving_documents,
    unused_port,
)

AUDIENCE = "https://mcp.example.com/mcp"
INTROSPECT = "/introspect"
CLIENT_ID = "mcp server"
CLIENT_SECRET = "s3cret:with&odd=chars"


class Endpoint:
    """An introspection endpoint: tokens it knows, and what it was asked."""

    def __init__(self, server: DocumentServer) -> None:
        self.server = server
        self.url = server.url + INTROSPECT
        self.issuer = server.url
        self.active: dict[str, dict[str, Any]] = {}
        server.serve(INTROSPECT, self._introspect)

    async def _introspect(self, request: Request) -> Answer:
        expected = base64.b64encode(b"mcp+server:s3cret%3Awith%26odd%3Dchars").decode()
        if request.headers.get("authorization") != f"Basic {expected}":
            return json_answer({"error": "invalid_client"}, 401)
        form = parse_qs(request.body.decode())
        assert form["token_type_hint"] == ["access_token"]
        answer = self.active.get(form["token"][0])
        return json_answer(answer if answer is not None else {"active": False})

    @property
    def asked(self) -> int:
        return self.server.hits[INTROSPECT]

    def grant(self, token: str, **fields: Any) -> None:
        answer = {
            "active": True,
            "sub": "bob",
            "client_id": "the-client",
            "scope": "notes:read notes:write",
            "iss": self.issuer,
            "aud": AUDIENCE,
            "exp": int(time.time()) + 600,
            "token_type": "Bearer",
        }
        answer.update(fields)
        self.active[token] = {name: value for name, value in answer.items() if value is not None}


@pytest.fixture
async def endpoint() -> AsyncIterator[Endpoint]:
    async with serving_documents() as server:
        yield Endpoint(server)


class WallClock:
    def __init__(self) -> None:
        self.now = time.time()

    def __call__(self) -> float:
        return self.now


def introspection(endpoint: Endpoint, **options: Any) -> IntrospectionVerifier:
    options.setdefault("audience", AUDIENCE)
    return IntrospectionVerifier(endpoint.url, CLIENT_ID, CLIENT_SECRET, **options)


async def test_an_active_token_names_its_principal(endpoint: Endpoint) -> None:
    endpoint.grant("opaque-1")
    v = introspection(endpoint)
    principal = await v.verify("opaque-1")
    assert principal == Principal(subject="bob", issuer=endpoint.issuer, client_id="the-client")
    assert principal.scopes == {"notes:read", "notes:write"}
    assert principal.claims["token_type"] == "Bearer"
    # cached for its life: the endpoint is asked once
    assert await v.verify("opaque-1") is principal
    assert endpoint.asked == 1
    request = endpoint.server.requests[0]
    assert request.method == "POST"
    assert request.headers["content-type"] == "application/x-www-form-urlencoded"


async def test_an_inactive_token_is_refused_and_remembered_briefly(endpoint: Endpoint) -> None:
    clock = WallClock()
    v = introspection(endpoint, clock=clock, negative_ttl=10)
    for _ in range(3):
        with pytest.raises(InvalidToken, match="not active"):
            await v.verify("unknown")
    assert endpoint.asked == 1
    clock.now += 11
    endpoint.grant("unknown")
    assert (await v.verify("unknown")).subject == "bob"
    assert endpoint.asked == 2


async def test_an_answer_is_trusted_for_max_age_at_most(endpoint: Endpoint) -> None:
    clock = WallClock()
    endpoint.grant("long-lived", exp=int(clock.now) + 3600)
    v = introspection(endpoint, clock=clock, max_age=60)
    await v.verify("long-lived")
    clock.now += 59
    await v.verify("long-lived")
    assert endpoint.asked == 1
    clock.now += 2
    del endpoint.active["long-lived"]  # revoked meanwhile
    with pytest.raises(InvalidToken, match="not active"):
        await v.verify("long-lived")
    assert endpoint.asked == 2


async def test_a_short_lived_answer_is_cached_until_the_token_expires(endpoint: Endpoint) -> None:
    clock = WallClock()
    endpoint.grant("short", exp=int(clock.now) + 20)
    v = introspection(endpoint, clock=clock, leeway=0, max_age=300)
    await v.verify("short")
    clock.now += 21
    with pytest.raises(InvalidToken, match="expired"):
        await v.verify("short")
    assert endpoint.asked == 2


@pytest.mark.parametrize(
    ("fields", "match"),
    [
        ({"aud": "https://other.example"}, "another audience"),
        ({"aud": ["https://a.example", "https://b.example"]}, "another audience"),
        ({"exp": int(time.time()) - 3600}, "expired"),
        ({"nbf": int(time.time()) + 3600}, "not valid yet"),
        ({"iss": "https://evil.example"}, "not trusted"),
        ({"token_type": "refresh_token"}, "not a bearer access token"),
        ({"token_type": "urn:ietf:params:oauth:token-type:refresh_token"}, "not a bearer"),
        ({"token_type": "DPoP"}, "not a bearer access token"),
        ({"token_type": "N_A"}, "not a bearer access token"),
        ({"token_type": 1}, "not a bearer access token"),
        # Ory Hydra says what a token is for in token_use, Keycloak in typ
        ({"token_use": "refresh_token"}, "'refresh_token' \\(token_use\\)"),
        ({"typ": "Refresh"}, "'Refresh' \\(typ\\)"),
        ({"typ": "ID"}, "'ID' \\(typ\\)"),
        ({"aud": None}, "names no audience"),
        ({"aud": []}, "another audience"),
        ({"aud": ""}, "another audience"),
        ({"aud": 7}, "neither a string nor a list"),
        ({"iat": int(time.time()) + 3600}, "issued in the future"),
        ({"sub": "", "client_id": None}, "no subject"),
        ({"cnf": {"jkt": "abc"}}, "sender-constrained"),
        ({"sub": None, "client_id": None}, "no subject"),
        ({"active": "true"}, "not active"),
        ({"active": 1}, "not active"),
        ({"scope": 7}, "'scope' is neither"),
        ({"scp": [1]}, "'scp' is neither"),
    ],
)
async def test_answers_that_are_refused(
    endpoint: Endpoint, fields: dict[str, Any], match: str
) -> None:
    endpoint.grant("tok", **fields)
    with pytest.raises(InvalidToken, match=match):
        await introspection(endpoint, issuers=[endpoint.issuer]).verify("tok")


@pytest.mark.parametrize(
    "fields",
    [
        {"aud": ["https://other.example", AUDIENCE]},
        {"aud": AUDIENCE, "token_type": "bearer"},
        {"token_type": None},
        {"token_type": "access_token", "token_use": "access_token", "typ": "Bearer"},
        {"token_type": "urn:ietf:params:oauth:token-type:access_token"},
        {"scope": None, "scp": "notes:read", "permissions": ["notes:write"]},
    ],
)
async def test_answers_that_are_accepted(endpoint: Endpoint, fields: dict[str, Any]) -> None:
    endpoint.grant("tok", **fields)
    principal = await introspection(endpoint, issuers=[endpoint.issuer]).verify("tok")
    assert principal.subject == "bob"
    assert principal.scopes == {"notes:read", "notes:write"}


async def test_an_answer_without_an_audience_is_refused(endpoint: Endpoint) -> None:
    # issue 43: oidc-provider's answer for a token asked for without a resource indicator
    # (a userinfo token) is active, with every scope, and names no audience
    endpoint.grant("userinfo", aud=None, scope="openid mcp tools:admin")
    # and a refresh token's answer says neither its audience nor its type
    endpoint.grant("refresh", aud=None, token_type=None, scope="openid mcp tools:admin")
    v = introspection(endpoint)
    for token in ("userinfo", "refresh"):
        with pytest.raises(InvalidToken, match="names no audience"):
            await v.verify(token)
    with pytest.raises(ValueError, match="require_audience=False"):
        IntrospectionVerifier(endpoint.url, CLIENT_ID, CLIENT_SECRET)


async def test_the_opt_out_takes_an_access_token_without_an_audience(endpoint: Endpoint) -> None:
    endpoint.grant("tok", aud=None, iss=None, sub=None, username="carol")
    endpoint.grant("refresh", aud=None, token_type=None)
    endpoint.grant("elsewhere", aud="https://other.example")
    v = introspection(endpoint, issuers=[endpoint.issuer], require_audience=False)
    principal = await v.verify("tok")
    assert principal.subject == "carol"
    # the one configured issuer vouches when the answer names none
    assert principal.issuer == endpoint.issuer
    # what does not call itself an access token may be a refresh token: refused
    with pytest.raises(InvalidToken, match="nor that it is an access token"):
        await v.verify("refresh")
    # an audience that is said is still checked
    with pytest.raises(InvalidToken, match="another audience"):
        await v.verify("elsewhere")
    # with no audience configured at all, none is checked
    anywhere = IntrospectionVerifier(
        endpoint.url, CLIENT_ID, CLIENT_SECRET, require_audience=False
    )
    assert (await anywhere.verify("elsewhere")).subject == "bob"


async def test_an_endpoint_nothing_listens_on() -> None:
    port = await unused_port()
    v = IntrospectionVerifier(
        f"http://127.0.0.1:{port}/introspect", CLIENT_ID, CLIENT_SECRET, audience=AUDIENCE
    )
    with trio.fail_after(5):
        with pytest.raises(VerifierUnavailable, match=f"127.0.0.1:{port}/introspect") as caught:
            await v.verify("some-token")
    assert caught.value.status == 503
    assert "some-token" not in caught.value.reason


async def test_an_endpoint_that_fails_or_refuses_us(endpoint: Endpoint) -> None:
    v = IntrospectionVerifier(endpoint.url, CLIENT_ID, "wrong secret", audience=AUDIENCE)
    with pytest.raises(VerifierUnavailable, match="refused this server's client credentials"):
        await v.verify("tok")
    endpoint.server.serve(INTROSPECT, Answer(503, b"{}"))
    with pytest.raises(VerifierUnavailable, match="answered 503"):
        await introspection(endpoint).verify("tok")
    endpoint.server.serve(INTROSPECT, Answer(200, b"[1, 2]"))
    with pytest.raises(VerifierUnavailable, match="not a JSON object"):
        await introspection(endpoint).verify("tok")


async def test_an_endpoint_that_never_answers(
    endpoint: Endpoint, mock_clock: trio.testing.MockClock
) -> None:
    async def never(request: Request) -> Answer:
        await trio.sleep_forever()
        raise AssertionError

    endpoint.server.serve(INTROSPECT, never)
    mock_clock.autojump_threshold = 0.05
    with pytest.raises(VerifierUnavailable, match="did not answer within 2 s"):
        await introspection(endpoint, timeout=2.0).verify("tok")


async def test_the_endpoint_discovered_from_the_issuer(endpoint: Endpoint) -> None:
    endpoint.server.serve(
        "/.well-known/oauth-authorization-server",
        {"issuer": endpoint.issuer, "introspection_endpoint": endpoint.url},
    )
    endpoint.grant("tok")
    v = IntrospectionVerifier(
        None, CLIENT_ID, CLIENT_SECRET, audience=AUDIENCE, discover_from=endpoint.issuer
    )
    assert (await v.verify("tok")).subject == "bob"
    endpoint.grant("tok2")
    await v.verify("tok2")
    assert endpoint.server.hits["/.well-known/oauth-authorization-server"] == 1


async def test_discovery_of_an_issuer_that_fails_is_retried_after_a_pause(
    endpoint: Endpoint, mock_clock: trio.testing.MockClock
) -> None:
    metadata = "/.well-known/oauth-authorization-server"
    endpoint.server.serve(metadata, Answer(500, b"{}"))
    v = IntrospectionVerifier(
        None,
        CLIENT_ID,
        CLIENT_SECRET,
        audience=AUDIENCE,
        discover_from=endpoint.issuer,
        retry_interval=5,
    )
    for token in ["a", "b", "c"]:
        with pytest.raises(VerifierUnavailable, match="answered 500"):
            await v.verify(token)
    assert endpoint.server.hits[metadata] == 1
    mock_clock.jump(6)
    endpoint.server.serve(
        metadata, {"issuer": endpoint.issuer, "introspection_endpoint": endpoint.url}
    )
    endpoint.grant("a")
    assert (await v.verify("a")).subject == "bob"
    assert endpoint.server.hits[metadata] == 2


async def test_malformed_tokens_are_not_sent(endpoint: Endpoint) -> None:
    v = introspection(endpoint)
    for bad in ["", "has space", "x" * 20_000, "ünïcode"]:
        with pytest.raises(InvalidToken):
            await v.verify(bad)
    assert endpoint.asked == 0


def test_configuration_errors() -> None:
    with pytest.raises(ValueError, match="client id and client secret"):
        IntrospectionVerifier("https://as.example/introspect", CLIENT_ID, "")
    with pytest.raises(ValueError, match="URL or an issuer"):
        IntrospectionVerifier(None, CLIENT_ID, CLIENT_SECRET)
    with pytest.raises(ValueError, match="https"):
        IntrospectionVerifier("http://as.example/introspect", CLIENT_ID, CLIENT_SECRET)


# --- the combined verifier and verifier_from --------------------------------------


@pytest.fixture(scope="module")
def rsa_key() -> jwk.RSAKey:
    return jwk.RSAKey.generate_key(2048, parameters={"kid": "k1"})


def a_jwt(issuer: str, key: jwk.RSAKey) -> str:
    now = int(time.time())
    claims = {"iss": issuer, "aud": AUDIENCE, "sub": "jay", "exp": now + 60, "iat": now}
    return jwt.encode({"alg": "RS256", "kid": key.kid, "typ": "at+jwt"}, claims, key)


async def test_jwts_and_opaque_tokens_go_their_own_ways(
    endpoint: Endpoint, rsa_key: jwk.RSAKey
) -> None:
    endpoint.server.serve(
        "/.well-known/oauth-authorization-server",
        {
            "issuer": endpoint.issuer,
            "jwks_uri": endpoint.server.url + "/jwks",
            "introspection_endpoint": endpoint.url,
        },
    )
    endpoint.server.serve("/jwks", {"keys": [rsa_key.as_dict(private=False)]})
    endpoint.grant("opaque")
    v = verifier_from(
        issuers=[endpoint.issuer],
        resource=AUDIENCE,
        client_id=CLIENT_ID,
        client_secret=CLIENT_SECRET,
        leeway=10,
    )
    assert isinstance(v, CombinedVerifier)
    assert isinstance(v, TokenVerifier)
    assert (await v.verify(a_jwt(endpoint.issuer, rsa_key))).subject == "jay"
    assert (await v.verify("opaque")).subject == "bob"
    assert endpoint.asked == 1
    # a JWT that fails locally is refused, never introspected
    with pytest.raises(InvalidToken, match="not trusted"):
        await v.verify(a_jwt("https://evil.example", rsa_key))
    assert endpoint.asked == 1


async def test_without_introspection_an_opaque_token_is_refused(
    rsa_key: jwk.RSAKey, tmp_path: Any
) -> None:
    path = tmp_path / "jwks.json"
    path.write_text(json.dumps({"keys": [rsa_key.as_dict(private=False)]}))
    v = verifier_from(issuers=["https://as.example"], resource=AUDIENCE, jwks_file=path)
    assert isinstance(v, JwtVerifier)
    assert (await v.verify(a_jwt("https://as.example", rsa_key))).subject == "jay"
    combined = CombinedVerifier(jwt=v)
    with pytest.raises(InvalidToken, match="not a JWT"):
        await combined.verify("opaque")


def test_verifier_from_alone() -> None:
    v = verifier_from(
        introspection_url="https://as.example/introspect",
        client_id=CLIENT_ID,
        client_secret=CLIENT_SECRET,
        resource=AUDIENCE,
    )
    assert isinstance(v, IntrospectionVerifier)
    assert v.audiences == frozenset({AUDIENCE})
    assert v.require_audience is True
    assert v.max_age == 300
    # the opt-out needs no audience at all; the cache bound is the caller's
    loose = verifier_from(
        introspection_url="https://as.example/introspect",
        client_id=CLIENT_ID,
        client_secret=CLIENT_SECRET,
        introspection_without_audience=True,
        introspection_max_age=0,
    )
    assert isinstance(loose, IntrospectionVerifier)
    assert loose.audiences is None
    assert loose.require_audience is False
    assert loose.max_age == 0


async def test_revocation_takes_effect_within_max_age_and_never_with_0(endpoint: Endpoint) -> None:
    clock = WallClock()
    endpoint.grant("tok", exp=int(clock.now) + 3600)
    v = introspection(endpoint, clock=clock, max_age=0)
    for _ in range(3):
        assert (await v.verify("tok")).subject == "bob"
    assert endpoint.asked == 3
    del endpoint.active["tok"]  # revoked
    with pytest.raises(InvalidToken, match="not active"):
        await v.verify("tok")


@pytest.mark.parametrize(
    ("settings", "match"),
    [
        ({}, "nothing to verify tokens with"),
        ({"issuers": ["https://as.example"]}, "needs the resource"),
        ({"jwks_file": "jwks.json", "resource": AUDIENCE}, "needs the issuer"),
        ({"introspection_url": "https://as.example/i"}, "client id and the client secret"),
        ({"client_id": "a", "client_secret": "b"}, "its URL, or an issuer"),
        (
            {"introspection_url": "https://as.example/i", "client_id": "a", "client_secret": "b"},
            "introspection needs the resource",
        ),
        (
            {"issuers": ["https://as.example"], "resource": AUDIENCE, "audiences": ["a b"]},
            "no spaces",
        ),
        (
            {"issuers": ["https://as.example"], "resource": AUDIENCE, "algorithms": ["HS256"]},
            "needs a shared secret",
        ),
    ],
)
def test_verifier_from_names_what_is_wrong(settings: dict[str, Any], match: str) -> None:
    with pytest.raises(ValueError, match=match):
        verifier_from(**settings)
