"""JwtVerifier against keys made here and metadata and JWKS served on loopback."""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import subprocess
import sys
import time
import warnings
from collections.abc import AsyncIterator
from typing import Any

import pytest
import trio
import trio.testing
from joserfc import jwk, jws, jwt
from joserfc.errors import SecurityWarning

from mcpactor.auth import InvalidToken, JwtVerifier, Principal, VerifierUnavailable
from mcpactor.auth._fetch import Fetcher

from ._documents import Answer, DocumentServer, Request, serving_documents, unused_port

AUDIENCE = "https://mcp.example.com/mcp"
METADATA = "/.well-known/oauth-authorization-server"
JWKS = "/jwks"


@pytest.fixture(scope="module")
def rsa_key() -> jwk.RSAKey:
    return jwk.RSAKey.generate_key(2048, parameters={"kid": "rsa-1"})


@pytest.fixture(scope="module")
def other_rsa_key() -> jwk.RSAKey:
    return jwk.RSAKey.generate_key(2048, parameters={"kid": "rsa-2"})


@pytest.fixture(scope="module")
def ec_key() -> jwk.ECKey:
    return jwk.ECKey.generate_key("P-256", parameters={"kid": "ec-1"})


@pytest.fixture(scope="module")
def ed_key() -> jwk.OKPKey:
    return jwk.OKPKey.generate_key("Ed25519", parameters={"kid": "ed-1"})


def public_jwks(*keys: Any) -> dict[str, Any]:
    return {"keys": [key.as_dict(private=False) for key in keys]}


class Issuer:
    """An authorization server's metadata and keys, served by a DocumentServer."""

    def __init__(self, server: DocumentServer, path: str = "") -> None:
        self.server = server
        self.issuer = server.url + path
        self.metadata_path = METADATA + path
        server.serve(self.metadata_path, {"issuer": self.issuer, "jwks_uri": server.url + JWKS})

    def publish(self, *keys: Any) -> None:
        self.server.serve(JWKS, public_jwks(*keys))

    @property
    def jwks_fetches(self) -> int:
        return self.server.hits[JWKS]

    def token(self, key: Any, *, alg: str = "RS256", **options: Any) -> str:
        return mint(options.pop("iss", self.issuer), key, alg=alg, **options)


def mint(
    iss: str | None,
    key: Any,
    *,
    alg: str = "RS256",
    header: dict[str, Any] | None = None,
    **claims: Any,
) -> str:
    """A token of ``iss`` signed with ``key``: the usual claims, changed by ``claims``."""
    now = int(time.time())
    body = {
        "iss": iss,
        "aud": AUDIENCE,
        "sub": "alice",
        "client_id": "the-client",
        "iat": now,
        "exp": now + 300,
        "scope": "tools:read tools:call",
        "jti": "id-1",
    }
    body.update(claims)
    for name in [name for name, value in body.items() if value is None]:
        del body[name]
    head = {"alg": alg, "typ": "at+jwt", "kid": key.kid}
    head.update(header or {})
    for name in [name for name, value in head.items() if value is None]:
        del head[name]
    with warnings.catch_warnings():
        # joserfc warns that "EdDSA" is deprecated by RFC 9864; issuers still send it
        warnings.simplefilter("ignore", SecurityWarning)
        return jwt.encode(head, body, key, algorithms=[alg])


@pytest.fixture
async def issuer(rsa_key: jwk.RSAKey) -> AsyncIterator[Issuer]:
    async with serving_documents() as server:
        found = Issuer(server)
        found.publish(rsa_key)
        yield found


def verifier(issuer: Issuer, **options: Any) -> JwtVerifier:
    return JwtVerifier(issuer.issuer, AUDIENCE, **options)


def unsigned(header: dict[str, Any], claims: dict[str, Any], signature: bytes = b"") -> str:
    def part(data: bytes) -> str:
        return base64.urlsafe_b64encode(data).rstrip(b"=").decode()

    return ".".join(
        [
            part(json.dumps(header).encode()),
            part(json.dumps(claims).encode()),
            part(signature),
        ]
    )


async def refused(v: JwtVerifier, token: str, match: str) -> InvalidToken:
    with pytest.raises(InvalidToken, match=match) as caught:
        await v.verify(token)
    assert caught.value.status == 401
    return caught.value


# --- tokens that pass ---------------------------------------------------------------


async def test_a_valid_token_names_its_principal(issuer: Issuer, rsa_key: jwk.RSAKey) -> None:
    principal = await verifier(issuer).verify(issuer.token(rsa_key))
    assert principal == Principal(subject="alice", issuer=issuer.issuer, client_id="the-client")
    assert principal.scopes == {"tools:read", "tools:call"}
    assert principal.claims["jti"] == "id-1"
    assert principal.expires_at == principal.claims["exp"]
    assert issuer.server.hits[issuer.metadata_path] == 1
    assert issuer.jwks_fetches == 1


async def test_scp_and_azp_and_an_audience_list(issuer: Issuer, rsa_key: jwk.RSAKey) -> None:
    token = issuer.token(
        rsa_key,
        scope=None,
        client_id=None,
        scp=["a", "b"],
        azp="web",
        aud=["https://other.example", AUDIENCE],
        header={"typ": "JWT"},
    )
    principal = await verifier(issuer).verify(token)
    assert principal.scopes == {"a", "b"}
    assert principal.client_id == "web"


async def test_a_client_credentials_token_without_sub_names_its_client(
    issuer: Issuer, rsa_key: jwk.RSAKey
) -> None:
    principal = await verifier(issuer).verify(issuer.token(rsa_key, sub=None))
    assert principal.subject == "the-client"


@pytest.mark.parametrize(
    ("key_name", "alg"), [("ec_key", "ES256"), ("ed_key", "EdDSA"), ("ed_key", "Ed25519")]
)
async def test_ec_and_okp_keys(
    issuer: Issuer, request: pytest.FixtureRequest, key_name: str, alg: str
) -> None:
    key = request.getfixturevalue(key_name)
    issuer.publish(key)
    principal = await verifier(issuer).verify(issuer.token(key, alg=alg))
    assert principal.subject == "alice"


async def test_a_token_within_the_leeway_is_accepted(issuer: Issuer, rsa_key: jwk.RSAKey) -> None:
    now = int(time.time())
    token = issuer.token(rsa_key, exp=now - 10, nbf=now + 10)
    assert (await verifier(issuer, leeway=30).verify(token)).subject == "alice"


# --- tokens that are refused --------------------------------------------------------


async def test_wrong_audience(issuer: Issuer, rsa_key: jwk.RSAKey) -> None:
    v = verifier(issuer)
    await refused(v, issuer.token(rsa_key, aud="https://other.example/mcp"), "another audience")
    await refused(v, issuer.token(rsa_key, aud=["https://a.example", 3]), "another audience")
    await refused(v, issuer.token(rsa_key, aud=None), "no audience")


async def test_wrong_issuer_is_refused_before_any_fetch(
    issuer: Issuer, rsa_key: jwk.RSAKey
) -> None:
    v = verifier(issuer)
    await refused(v, issuer.token(rsa_key, iss="https://evil.example"), "issuer .* not trusted")
    await refused(v, issuer.token(rsa_key, iss=None), "not trusted")
    assert issuer.server.requests == []


async def test_expired_and_not_yet_valid(issuer: Issuer, rsa_key: jwk.RSAKey) -> None:
    now = int(time.time())
    v = verifier(issuer, leeway=5)
    await refused(v, issuer.token(rsa_key, exp=now - 60), "expired")
    await refused(v, issuer.token(rsa_key, nbf=now + 60), "not valid yet")
    await refused(v, issuer.token(rsa_key, iat=now + 60), "issued in the future")
    await refused(v, issuer.token(rsa_key, exp=None), "no expiry")
    await refused(v, issuer.token(rsa_key, exp="soon"), "not a number")
    await refused(v, issuer.token(rsa_key, exp=True), "not a number")


async def test_alg_none_is_refused(issuer: Issuer, rsa_key: jwk.RSAKey) -> None:
    good = issuer.token(rsa_key)
    claims = json.loads(base64.urlsafe_b64decode(good.split(".")[1] + "=="))
    v = verifier(issuer)
    await refused(v, unsigned({"alg": "none", "typ": "at+jwt"}, claims), "'none' is not accepted")
    await refused(v, unsigned({"alg": "None"}, claims), "not accepted")
    with pytest.raises(ValueError, match="never accepted"):
        verifier(issuer, algorithms=["RS256", "none"])


async def test_hs256_signed_with_the_public_key_is_refused(
    issuer: Issuer, rsa_key: jwk.RSAKey
) -> None:
    # the classic confusion: the public key's PEM used as an HMAC secret
    # (joserfc itself refuses such a key, so the token is made by hand)
    pem = rsa_key.as_pem(private=False)
    head, payload, _ = issuer.token(rsa_key).split(".")
    head = unsigned({"alg": "HS256", "typ": "at+jwt", "kid": "rsa-1"}, {}).split(".")[0]
    mac = hmac.new(pem, f"{head}.{payload}".encode(), hashlib.sha256).digest()
    token = f"{head}.{payload}.{base64.urlsafe_b64encode(mac).rstrip(b'=').decode()}"
    await refused(verifier(issuer), token, "'HS256' is not accepted")
    # even where HS256 is allowed, its only key is the configured secret, never a JWK
    shared = b"s" * 32
    v = verifier(issuer, algorithms=["RS256", "HS256"], hmac_secret=shared)
    await refused(v, token, "signature does not verify")
    good = issuer.token(jwk.OctKey.import_key(shared), alg="HS256", header={"kid": None})
    assert (await v.verify(good)).subject == "alice"
    with pytest.raises(ValueError, match="needs a shared secret"):
        verifier(issuer, algorithms=["HS256"])


async def test_a_jwks_symmetric_key_is_never_used(issuer: Issuer, rsa_key: jwk.RSAKey) -> None:
    shared = jwk.OctKey.import_key(b"k" * 32, parameters={"kid": "oct"})
    issuer.server.serve(JWKS, {"keys": [shared.as_dict(private=True), rsa_key.as_dict()]})
    token = issuer.token(shared, alg="HS256")
    v = verifier(issuer, algorithms=["RS256", "HS256"], hmac_secret=b"x" * 32)
    await refused(v, token, "signature does not verify")


async def test_forged_signatures(
    issuer: Issuer, rsa_key: jwk.RSAKey, other_rsa_key: jwk.RSAKey
) -> None:
    v = verifier(issuer)
    # another key claiming the issuer's kid
    await refused(
        v, issuer.token(other_rsa_key, header={"kid": "rsa-1"}), "signature does not verify"
    )
    # a genuine token whose claims were changed after signing
    head, payload, signature = issuer.token(rsa_key).split(".")
    claims = json.loads(base64.urlsafe_b64decode(payload + "=="))
    claims["scope"] = "admin"
    forged = unsigned({}, claims).split(".")[1]
    await refused(v, f"{head}.{forged}.{signature}", "signature does not verify")


async def test_a_key_of_the_wrong_type_for_the_alg(
    issuer: Issuer, rsa_key: jwk.RSAKey, ec_key: jwk.ECKey
) -> None:
    issuer.publish(rsa_key, ec_key)
    # ES256 naming the RSA key: the key does not fit the algorithm
    token = issuer.token(ec_key, alg="ES256", header={"kid": "rsa-1"})
    await refused(verifier(issuer), token, "no key of .* fits")


async def test_tokens_of_other_kinds_and_shapes(issuer: Issuer, rsa_key: jwk.RSAKey) -> None:
    v = verifier(issuer)
    await refused(v, issuer.token(rsa_key, header={"typ": "dpop+jwt"}), "not an access token")
    await refused(v, issuer.token(rsa_key, cnf={"jkt": "x"}), "sender-constrained")
    await refused(v, "not-a-jwt", "not a well-formed JWT")
    await refused(v, "a.b.c", "not a well-formed JWT")
    await refused(v, "eyJ.eyJ.x y", "characters")
    await refused(v, "", "empty")
    await refused(v, "a" * 20_000, "longer than")
    assert issuer.server.requests == []


@pytest.mark.parametrize(
    ("claims", "match"),
    [
        # Keycloak's ID and refresh tokens are JWTs of the same issuer, typed in a claim
        ({"typ": "ID"}, r"'ID' \(typ\)"),
        ({"typ": "Refresh"}, r"'Refresh' \(typ\)"),
        ({"typ": "Offline"}, r"'Offline' \(typ\)"),
        # Cognito's ID tokens say token_use: id
        ({"token_use": "id"}, r"'id' \(token_use\)"),
        ({"token_type": "refresh_token"}, r"'refresh_token' \(token_type\)"),
        ({"typ": 3}, "not a bearer access token"),
        ({"sub": "", "client_id": None}, "no subject"),
        ({"sub": 7}, "'sub' is not a string"),
        ({"permissions": "x", "scp": {"a": 1}}, "'scp' is neither"),
        ({"permissions": [1]}, "'permissions' is neither"),
    ],
)
async def test_tokens_of_other_kinds_by_their_claims(
    issuer: Issuer, rsa_key: jwk.RSAKey, claims: dict[str, Any], match: str
) -> None:
    v = verifier(issuer)
    await refused(v, issuer.token(rsa_key, **claims), match)


async def test_claims_that_say_access_token(issuer: Issuer, rsa_key: jwk.RSAKey) -> None:
    v = verifier(issuer)
    token = issuer.token(
        rsa_key, typ="Bearer", token_use="access", scope="a", scp="b c", permissions=["d"]
    )
    principal = await v.verify(token)
    assert principal.scopes == {"a", "b", "c", "d"}
    # a payload typ copying the header's says nothing either way
    assert (await v.verify(issuer.token(rsa_key, typ="JWT"))).subject == "alice"


@pytest.mark.parametrize(
    ("claims", "client"),
    [
        ({"client_id": "a", "azp": "b", "appid": "c", "cid": "d"}, "a"),
        ({"client_id": None, "azp": "b", "appid": "c"}, "b"),
        ({"client_id": None, "appid": "c", "cid": "d"}, "c"),  # Entra ID v1
        ({"client_id": None, "cid": "d"}, "d"),  # Okta
        ({"client_id": "", "azp": "b"}, "b"),
        ({"client_id": None}, None),
    ],
)
async def test_the_client_is_read_where_providers_put_it(
    issuer: Issuer, rsa_key: jwk.RSAKey, claims: dict[str, Any], client: str | None
) -> None:
    principal = await verifier(issuer).verify(issuer.token(rsa_key, **claims))
    assert principal.client_id == client


async def test_at_jwt_may_be_required(issuer: Issuer, rsa_key: jwk.RSAKey) -> None:
    v = verifier(issuer, require_at_jwt=True)
    assert (await v.verify(issuer.token(rsa_key))).subject == "alice"
    typed = issuer.token(rsa_key, header={"typ": "application/at+jwt"}, jti="2")
    assert (await v.verify(typed)).subject == "alice"
    # an ID token's header says JWT, or nothing
    await refused(v, issuer.token(rsa_key, header={"typ": "JWT"}), "'JWT' is not an access")
    claims = json.loads(base64.urlsafe_b64decode(issuer.token(rsa_key).split(".")[1] + "=="))
    untyped = jws.serialize_compact(
        {"alg": "RS256", "kid": rsa_key.kid}, json.dumps(claims).encode(), rsa_key
    )
    await refused(v, untyped, "'None' is not an access")
    # not required: both are taken
    assert (await verifier(issuer).verify(untyped)).subject == "alice"


async def test_audiences_other_than_the_resource_url(issuer: Issuer, rsa_key: jwk.RSAKey) -> None:
    # Entra ID's v2 tokens name the API's client id, its v1 tokens its api:// URI
    client_id = "6e9c1d2f-3b4a-4c5d-8e6f-7a8b9c0d1e2f"
    v = JwtVerifier(issuer.issuer, [client_id, f"api://{client_id}"])
    assert (await v.verify(issuer.token(rsa_key, aud=client_id))).subject == "alice"
    assert (await v.verify(issuer.token(rsa_key, aud=f"api://{client_id}"))).subject == "alice"
    # the resource URL is no longer one of them
    await refused(v, issuer.token(rsa_key, jti="2"), "another audience")
    for wrong in ["", "a b", "x" * 3000, "tab\there"]:
        with pytest.raises(ValueError, match="audience"):
            JwtVerifier(issuer.issuer, [client_id, wrong])


async def test_configuration_errors(issuer: Issuer) -> None:
    with pytest.raises(ValueError, match="https"):
        JwtVerifier("http://issuer.example", AUDIENCE)
    with pytest.raises(ValueError, match="at least one issuer"):
        JwtVerifier([], AUDIENCE)
    with pytest.raises(ValueError, match="audience"):
        JwtVerifier(issuer.issuer, [])
    with pytest.raises(ValueError, match="unknown signing algorithm"):
        verifier(issuer, algorithms=["RS999"])


# --- keys: discovery, rotation, rate limits -----------------------------------------


async def test_issuer_with_a_path_and_openid_discovery(rsa_key: jwk.RSAKey) -> None:
    async with serving_documents() as server:
        issuer = server.url + "/tenant1"
        # only the OpenID Connect form, with path insertion
        server.serve(
            "/.well-known/openid-configuration/tenant1",
            {"issuer": issuer, "jwks_uri": server.url + JWKS},
        )
        server.serve(JWKS, public_jwks(rsa_key))
        principal = await JwtVerifier(issuer, AUDIENCE).verify(mint(issuer, rsa_key))
        assert principal.issuer == issuer
        asked = [r.path for r in server.requests]
        assert asked == [
            "/.well-known/oauth-authorization-server/tenant1",
            "/.well-known/openid-configuration/tenant1",
            JWKS,
        ]


async def test_an_issuer_with_a_trailing_slash_as_entra_v1_has(rsa_key: jwk.RSAKey) -> None:
    # Entra ID's v1.0 issuer is https://sts.windows.net/TENANT/, slash included, and its
    # metadata is found by appending the OpenID path to it
    async with serving_documents() as server:
        v1 = server.url + "/tenant1/"
        v2 = server.url + "/tenant1/v2.0"
        server.serve(
            "/tenant1/.well-known/openid-configuration",
            {"issuer": v1, "jwks_uri": server.url + JWKS},
        )
        server.serve(
            "/tenant1/v2.0/.well-known/openid-configuration",
            {"issuer": v2, "jwks_uri": server.url + JWKS},
        )
        server.serve(JWKS, public_jwks(rsa_key))
        v = JwtVerifier([v2, v1], ["client-id", "api://client-id"])
        first = await v.verify(mint(v1, rsa_key, aud="api://client-id"))
        second = await v.verify(mint(v2, rsa_key, aud="client-id"))
        assert (first.issuer, second.issuer) == (v1, v2)
        # a token naming the issuer without its slash is another issuer's
        await refused(v, mint(v1.rstrip("/"), rsa_key, aud="client-id"), "not trusted")


async def test_metadata_naming_another_issuer_is_refused(
    issuer: Issuer, rsa_key: jwk.RSAKey
) -> None:
    issuer.server.serve(
        issuer.metadata_path, {"issuer": "https://evil.example", "jwks_uri": issuer.server.url}
    )
    with pytest.raises(
        VerifierUnavailable, match=r"names the issuer 'https://evil\.example'"
    ) as e:
        await verifier(issuer).verify(issuer.token(rsa_key))
    assert e.value.status == 503
    assert issuer.jwks_fetches == 0


async def test_key_rotation_one_refresh_then_the_rate_limit(
    issuer: Issuer,
    rsa_key: jwk.RSAKey,
    other_rsa_key: jwk.RSAKey,
    mock_clock: trio.testing.MockClock,
) -> None:
    v = verifier(issuer, min_refresh_interval=30)
    await v.verify(issuer.token(rsa_key))
    assert issuer.jwks_fetches == 1

    # the issuer rotates: a token signed with a new key names a kid we do not have yet
    mock_clock.jump(31)
    issuer.publish(rsa_key, other_rsa_key)
    principal = await v.verify(issuer.token(other_rsa_key))
    assert principal.subject == "alice"
    assert issuer.jwks_fetches == 2
    assert issuer.server.hits[issuer.metadata_path] == 1

    # an unknown kid again, within the rate limit and longer than a request may wait for
    # its end: 503 with the time left, never 401 (the key may be there by then)
    stranger = jwk.RSAKey.generate_key(2048, parameters={"kid": "rsa-9"})
    for _ in range(5):
        with pytest.raises(VerifierUnavailable, match="fetched again in 30 s") as caught:
            await v.verify(issuer.token(stranger))
        assert caught.value.status == 503
        assert caught.value.retry_after == pytest.approx(30)
    assert issuer.jwks_fetches == 2

    # once the interval has passed, one more fetch, and the kid is not there: 401
    mock_clock.jump(31)
    await refused(v, issuer.token(stranger), "no key of .* fits")
    assert issuer.jwks_fetches == 3


async def test_the_keys_are_fetched_again_after_their_ttl(
    issuer: Issuer, rsa_key: jwk.RSAKey, mock_clock: trio.testing.MockClock
) -> None:
    v = verifier(issuer, jwks_ttl=600)
    await v.verify(issuer.token(rsa_key, jti="a"))
    mock_clock.jump(300)
    await v.verify(issuer.token(rsa_key, jti="b"))
    assert issuer.jwks_fetches == 1
    mock_clock.jump(301)
    await v.verify(issuer.token(rsa_key, jti="c"))
    assert issuer.jwks_fetches == 2

    # a refresh that fails keeps the old keys in use
    issuer.server.serve(JWKS, Answer(500, b"{}"))
    mock_clock.jump(601)
    assert (await v.verify(issuer.token(rsa_key, jti="d"))).subject == "alice"
    assert issuer.jwks_fetches == 3


async def test_concurrent_first_fetches_are_coalesced(issuer: Issuer, rsa_key: jwk.RSAKey) -> None:
    release = trio.Event()
    jwks = public_jwks(rsa_key)

    async def slow_jwks(request: Request) -> Answer:
        await release.wait()
        return Answer(200, json.dumps(jwks).encode())

    issuer.server.serve(JWKS, slow_jwks)
    v = verifier(issuer)
    results: list[Principal] = []

    async def one(n: int) -> None:
        results.append(await v.verify(issuer.token(rsa_key, jti=f"t{n}")))

    async with trio.open_nursery() as nursery:
        for n in range(10):
            nursery.start_soon(one, n)
        while issuer.jwks_fetches == 0:
            await trio.testing.wait_all_tasks_blocked()
        release.set()
    assert len(results) == 10
    assert issuer.jwks_fetches == 1
    assert issuer.server.hits[issuer.metadata_path] == 1


# --- an issuer that is down, or slow, or sends too much -----------------------------


async def test_an_issuer_nothing_listens_for(rsa_key: jwk.RSAKey) -> None:
    port = await unused_port()
    issuer = f"http://127.0.0.1:{port}"
    v = JwtVerifier(issuer, AUDIENCE, timeout=2.0)
    token = mint(issuer, rsa_key)
    with trio.fail_after(5):
        with pytest.raises(VerifierUnavailable, match=f"127.0.0.1:{port}") as caught:
            await v.verify(token)
    assert caught.value.status == 503
    assert token not in caught.value.reason
    # within the retry interval, refused at once without trying again
    with pytest.raises(VerifierUnavailable, match="unavailable"):
        await v.verify(token)
    assert v.keys_of(issuer).fetches == 1


def test_each_trio_run_starts_the_key_deadlines_over(rsa_key: jwk.RSAKey) -> None:
    # trio's clock restarts at a random offset in each run: a verifier kept across runs
    # must not read one run's deadlines with another's clock
    async def attempt(v: JwtVerifier, issuer: str) -> None:
        with pytest.raises(VerifierUnavailable):
            await v.verify(mint(issuer, rsa_key))

    async def main() -> None:
        port = await unused_port()
        issuer = f"http://127.0.0.1:{port}"
        v = JwtVerifier(issuer, AUDIENCE, retry_interval=1000)
        await attempt(v, issuer)
        await attempt(v, issuer)
        assert v.keys_of(issuer).fetches == 1
        trio_runs.append((v, issuer))

    # MockClock starts at 0 in both runs: the first run's attempt looks "just now"
    trio_runs: list[tuple[JwtVerifier, str]] = []
    trio.run(main, clock=trio.testing.MockClock())
    v, issuer = trio_runs[0]
    trio.run(attempt, v, issuer, clock=trio.testing.MockClock())
    assert v.keys_of(issuer).fetches == 2


async def test_an_issuer_that_never_answers(
    issuer: Issuer, rsa_key: jwk.RSAKey, mock_clock: trio.testing.MockClock
) -> None:
    async def never(request: Request) -> Answer:
        await trio.sleep_forever()
        raise AssertionError

    issuer.server.serve(issuer.metadata_path, never)
    v = verifier(issuer, timeout=3.0)
    # the clock jumps once every task has waited a little in real time (sockets included)
    mock_clock.autojump_threshold = 0.05
    start = trio.current_time()
    with pytest.raises(VerifierUnavailable, match="did not answer within 3 s"):
        await v.verify(issuer.token(rsa_key))
    assert trio.current_time() - start == pytest.approx(3.0)


async def test_an_oversized_jwks_is_refused(issuer: Issuer, rsa_key: jwk.RSAKey) -> None:
    issuer.server.serve(JWKS, {"keys": [rsa_key.as_dict()], "padding": "x" * 5000})
    v = verifier(issuer, max_jwks_bytes=4096)
    with pytest.raises(VerifierUnavailable, match="over 4096 bytes"):
        await v.verify(issuer.token(rsa_key))


async def test_a_jwks_with_too_many_keys_is_refused(issuer: Issuer, rsa_key: jwk.RSAKey) -> None:
    issuer.server.serve(JWKS, {"keys": [rsa_key.as_dict()] * 5})
    with pytest.raises(VerifierUnavailable, match="5 keys, more than the 4 allowed"):
        await verifier(issuer, max_keys=4).verify(issuer.token(rsa_key))


async def test_a_jwks_that_is_not_one(issuer: Issuer, rsa_key: jwk.RSAKey) -> None:
    issuer.server.serve(JWKS, Answer(200, b"<html>"))
    with pytest.raises(VerifierUnavailable, match="not JSON"):
        await verifier(issuer).verify(issuer.token(rsa_key))


async def test_weak_and_encryption_keys_are_left_out(issuer: Issuer, rsa_key: jwk.RSAKey) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SecurityWarning)
        weak = jwk.RSAKey.generate_key(1024, parameters={"kid": "weak"})
    encrypting = rsa_key.as_dict(private=False) | {"use": "enc", "kid": "enc"}
    issuer.server.serve(JWKS, {"keys": [weak.as_dict(private=False), encrypting]})
    v = verifier(issuer)
    await refused(v, issuer.token(weak), "no key of .* fits")
    await refused(v, issuer.token(rsa_key, header={"kid": "enc"}), "no key of .* fits")


# --- no fetch at all: a JWKS file; and the cache -----------------------------------


async def test_a_jwks_file_needs_no_fetch(
    issuer: Issuer, rsa_key: jwk.RSAKey, tmp_path: Any
) -> None:
    path = tmp_path / "jwks.json"
    path.write_text(json.dumps(public_jwks(rsa_key)))
    v = JwtVerifier(issuer.issuer, AUDIENCE, jwks_file=path)
    assert (await v.verify(issuer.token(rsa_key))).subject == "alice"
    assert issuer.server.requests == []
    (tmp_path / "empty.json").write_text('{"keys": []}')
    with pytest.raises(ValueError, match="no key that can verify"):
        JwtVerifier(issuer.issuer, AUDIENCE, jwks_file=tmp_path / "empty.json")
    with pytest.raises(ValueError, match="cannot read"):
        JwtVerifier(issuer.issuer, AUDIENCE, jwks_file=tmp_path / "missing.json")


class WallClock:
    def __init__(self) -> None:
        self.now = time.time()

    def __call__(self) -> float:
        return self.now


async def test_a_repeated_token_is_a_cache_hit_until_it_expires(
    issuer: Issuer, rsa_key: jwk.RSAKey
) -> None:
    clock = WallClock()
    v = verifier(issuer, clock=clock, leeway=10)
    token = issuer.token(rsa_key, exp=int(clock.now) + 60)
    first = await v.verify(token)
    issuer.server.routes.clear()  # a second check would fail on any fetch
    assert await v.verify(token) is first
    clock.now += 65
    assert await v.verify(token) is first
    clock.now += 10
    await refused(v, token, "expired")


async def test_a_long_lived_token_is_checked_again_after_the_cache_max_age(
    issuer: Issuer, rsa_key: jwk.RSAKey
) -> None:
    clock = WallClock()
    v = verifier(issuer, clock=clock, cache_max_age=30)
    token = issuer.token(rsa_key, exp=int(clock.now) + 3600)
    first = await v.verify(token)
    clock.now += 29
    assert await v.verify(token) is first
    clock.now += 2
    again = await v.verify(token)
    assert again is not first
    assert again == first
    with pytest.raises(TypeError):
        again.claims["sub"] = "mallory"  # type: ignore[index]


async def test_the_cache_is_bounded(issuer: Issuer, rsa_key: jwk.RSAKey) -> None:
    v = verifier(issuer, cache_size=3)
    tokens = [issuer.token(rsa_key, jti=str(n)) for n in range(5)]
    for token in tokens:
        await v.verify(token)
    assert len(v._cache) == 3


def test_fetcher_defaults_are_bounded() -> None:
    fetcher = Fetcher()
    assert 0 < fetcher.timeout <= 10
    assert 0 < fetcher.max_bytes <= 1024 * 1024


def test_importing_mcpactor_loads_neither_joserfc_nor_httpx() -> None:
    # cold start: the verifiers and their libraries load when a verifier is first named
    script = (
        "import sys, mcpactor, mcpactor.auth, mcpactor.transports, mcpactor.cli\n"
        "print(sorted(m for m in ('joserfc', 'httpx') if m in sys.modules))\n"
        "mcpactor.auth.JwtVerifier\n"
        "print(sorted(m for m in ('joserfc', 'httpx') if m in sys.modules))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True, timeout=60
    )
    assert done.stdout.splitlines() == ["[]", "['joserfc']"]
