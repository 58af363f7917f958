"""The authorization server of the tests issues what the end-to-end tests rely on.

Tokens are checked here with `cryptography` alone, not with mcpactor's verifiers, so a fault
of the provider set-up is told apart from a fault of the code under test.
"""

from __future__ import annotations

import base64
import json
from typing import Any
from urllib.parse import urlencode

import httpx2
import pytest
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import padding, rsa

from ._provider import REDIRECT_URI, TIMEOUT, OidcProvider, follow_authorization, pkce_pair

RESOURCE = "http://127.0.0.1:9/mcp"


def _b64(part: str) -> bytes:
    return base64.urlsafe_b64decode(part + "=" * (-len(part) % 4))


def decode(token: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """The header and claims of a JWS compact token, unchecked."""
    header, claims, _ = token.split(".")
    return json.loads(_b64(header)), json.loads(_b64(claims))


def verify_rs256(token: str, jwks: dict[str, Any]) -> dict[str, Any]:
    """The claims of ``token`` once its RS256 signature checks with its kid's key."""
    header, claims = decode(token)
    assert header["alg"] == "RS256"
    (key,) = [key for key in jwks["keys"] if key["kid"] == header["kid"]]
    public = rsa.RSAPublicNumbers(
        int.from_bytes(_b64(key["e"]), "big"), int.from_bytes(_b64(key["n"]), "big")
    ).public_key()
    signed, _, signature = token.rpartition(".")
    public.verify(_b64(signature), signed.encode("ascii"), padding.PKCS1v15(), hashes.SHA256())
    return claims


async def test_provider_metadata_names_the_endpoints_a_resource_server_needs(
    oidc_provider: OidcProvider,
) -> None:
    metadata = await oidc_provider.metadata()
    issuer = oidc_provider.issuer
    assert metadata["issuer"] == issuer
    assert metadata["jwks_uri"] == f"{issuer}/jwks"
    assert metadata["introspection_endpoint"] == f"{issuer}/token/introspection"
    assert metadata["registration_endpoint"] == f"{issuer}/reg"
    assert metadata["token_endpoint"] == f"{issuer}/token"
    assert metadata["code_challenge_methods_supported"] == ["S256"]
    assert {"authorization_code", "client_credentials"} <= set(metadata["grant_types_supported"])
    assert "tools:admin" in metadata["scopes_supported"]
    # OpenID discovery's document is the same one.
    async with httpx2.AsyncClient(timeout=TIMEOUT) as http:
        response = await http.get(f"{issuer}/.well-known/openid-configuration")
    assert response.json() == metadata


async def test_provider_jwks_publishes_public_keys_only(oidc_provider: OidcProvider) -> None:
    jwks = await oidc_provider.jwks()
    assert jwks["keys"]
    for key in jwks["keys"]:
        assert key["kty"] == "RSA"
        assert key["use"] == "sig"
        assert key["alg"] == "RS256"
        assert key["kid"]
        assert not {"d", "p", "q", "dp", "dq", "qi"} & key.keys()


async def test_provider_client_credentials_token_is_an_rfc9068_jwt_for_the_resource(
    oidc_provider: OidcProvider,
) -> None:
    answer = await oidc_provider.client_credentials(scope="tools:read mcp", resource=RESOURCE)
    assert answer["token_type"] == "Bearer"
    assert answer["scope"] == "tools:read mcp"
    header, _ = decode(answer["access_token"])
    assert header["typ"] == "at+jwt"
    claims = verify_rs256(answer["access_token"], await oidc_provider.jwks())
    service = oidc_provider.clients["service"].client_id
    assert claims["iss"] == oidc_provider.issuer
    assert claims["aud"] == RESOURCE
    assert claims["sub"] == service
    assert claims["client_id"] == service
    assert claims["scope"] == "tools:read mcp"
    assert claims["exp"] - claims["iat"] == 600
    assert claims["jti"]


async def test_provider_tokens_of_two_clients_name_two_subjects(
    oidc_provider: OidcProvider,
) -> None:
    first = await oidc_provider.client_credentials_token(scope="mcp", resource=RESOURCE)
    second = await oidc_provider.client_credentials_token(
        scope="mcp", resource=RESOURCE, client="other"
    )
    assert decode(first)[1]["sub"] == oidc_provider.clients["service"].client_id
    assert decode(second)[1]["sub"] == oidc_provider.clients["other"].client_id


async def test_provider_grants_only_the_scopes_it_knows(oidc_provider: OidcProvider) -> None:
    answer = await oidc_provider.client_credentials(scope="root mcp", resource=RESOURCE)
    assert answer["scope"] == "mcp"
    assert decode(answer["access_token"])[1]["scope"] == "mcp"


async def test_provider_two_instances_are_two_issuers(
    oidc_provider: OidcProvider, other_oidc_provider: OidcProvider
) -> None:
    assert oidc_provider.issuer != other_oidc_provider.issuer
    token = await other_oidc_provider.client_credentials_token(scope="mcp", resource=RESOURCE)
    assert decode(token)[1]["iss"] == other_oidc_provider.issuer
    with pytest.raises(ValueError, match="not enough values"):
        # the other issuer's key is not in this one's JWKS
        verify_rs256(token, await oidc_provider.jwks())


async def test_provider_opaque_token_is_introspected_by_the_resource_server(
    oidc_provider: OidcProvider,
) -> None:
    token = await oidc_provider.client_credentials_token(
        scope="tools:admin", resource=RESOURCE, client="opaque"
    )
    assert token.count(".") == 0
    answer = await oidc_provider.introspect(token)
    opaque = oidc_provider.clients["opaque"].client_id
    assert answer["active"] is True
    assert answer["iss"] == oidc_provider.issuer
    assert answer["aud"] == RESOURCE
    assert answer["scope"] == "tools:admin"
    assert answer["client_id"] == opaque
    assert answer["sub"] == opaque
    assert answer["exp"] > answer["iat"]
    assert (await oidc_provider.introspect(token + "x")) == {"active": False}


async def test_provider_introspection_of_a_userinfo_or_refresh_token_names_no_audience(
    oidc_provider: OidcProvider,
) -> None:
    # What issue 43 found: tokens a resource server must refuse that introspect as active.
    # Asked for without a resource indicator, the access token is for the userinfo
    # endpoint, opaque, with every scope asked for, and its answer has no aud.
    userinfo = await oidc_provider.authorization_code(None, "openid mcp tools:admin")
    assert userinfo["access_token"].count(".") == 0
    answer = await oidc_provider.introspect(userinfo["access_token"])
    assert answer["active"] is True
    assert "aud" not in answer
    assert answer["token_type"] == "Bearer"
    assert answer["scope"] == "openid mcp tools:admin"
    # A refresh token's answer says neither its audience nor its type.
    granted = await oidc_provider.authorization_code(
        RESOURCE, "openid offline_access mcp tools:admin", prompt="consent"
    )
    answer = await oidc_provider.introspect(granted["refresh_token"])
    assert answer["active"] is True
    assert "aud" not in answer
    assert "token_type" not in answer
    assert "tools:admin" in answer["scope"].split()
    # The ID token is a JWT naming the client.
    header, claims = decode(granted["id_token"])
    assert claims["aud"] == oidc_provider.clients["public"].client_id
    assert header.get("typ") != "at+jwt"


async def test_provider_authorization_code_flow_without_a_browser(
    oidc_provider: OidcProvider,
) -> None:
    token = await oidc_provider.authorization_code_token(RESOURCE, scope="tools:read")
    claims = verify_rs256(token, await oidc_provider.jwks())
    assert claims["sub"] == "test-user"
    assert claims["aud"] == RESOURCE
    assert claims["scope"] == "tools:read"
    assert claims["client_id"] == oidc_provider.clients["public"].client_id
    other = await oidc_provider.authorization_code_token(RESOURCE, "mcp", login_hint="someone")
    assert decode(other)[1]["sub"] == "someone"


async def test_provider_registers_clients_dynamically(oidc_provider: OidcProvider) -> None:
    metadata = await oidc_provider.metadata()
    async with httpx2.AsyncClient(timeout=TIMEOUT) as http:
        response = await http.post(
            metadata["registration_endpoint"],
            json={
                "redirect_uris": [REDIRECT_URI],
                "grant_types": ["authorization_code"],
                "response_types": ["code"],
                "token_endpoint_auth_method": "none",
                "application_type": "native",
            },
        )
    assert response.status_code == 201, response.text
    registered = response.json()
    assert registered["client_id"]
    assert registered["redirect_uris"] == [REDIRECT_URI]


async def test_provider_rotation_signs_new_tokens_with_a_new_kid(
    rotating_oidc_provider: OidcProvider,
) -> None:
    before = await rotating_oidc_provider.client_credentials_token(scope="mcp", resource=RESOURCE)
    old_kid = decode(before)[0]["kid"]
    new_kid = await rotating_oidc_provider.rotate_keys()
    assert new_kid != old_kid
    after = await rotating_oidc_provider.client_credentials_token(scope="mcp", resource=RESOURCE)
    assert decode(after)[0]["kid"] == new_kid
    jwks = await rotating_oidc_provider.jwks()
    assert {old_kid, new_kid} <= {key["kid"] for key in jwks["keys"]}
    assert verify_rs256(after, jwks)["aud"] == RESOURCE
    # The old key is still published: what it signed still checks.
    assert verify_rs256(before, jwks)["aud"] == RESOURCE


async def test_provider_rotation_can_retire_the_old_keys(
    rotating_oidc_provider: OidcProvider,
) -> None:
    before = await rotating_oidc_provider.client_credentials_token(scope="mcp", resource=RESOURCE)
    new_kid = await rotating_oidc_provider.rotate_keys(retire=True)
    jwks = await rotating_oidc_provider.jwks()
    assert [key["kid"] for key in jwks["keys"]] == [new_kid]
    with pytest.raises(ValueError, match="not enough values"):
        verify_rs256(before, jwks)


async def test_provider_a_forged_signature_does_not_check(oidc_provider: OidcProvider) -> None:
    token = await oidc_provider.client_credentials_token(scope="mcp", resource=RESOURCE)
    header, claims, signature = token.split(".")
    forged_claims = base64.urlsafe_b64encode(
        json.dumps({**json.loads(_b64(claims)), "scope": "tools:admin"}).encode()
    ).rstrip(b"=")
    with pytest.raises(InvalidSignature):
        verify_rs256(f"{header}.{forged_claims.decode()}.{signature}", await oidc_provider.jwks())


async def test_provider_rotation_keeps_registrations_and_interactions(
    rotating_oidc_provider: OidcProvider,
) -> None:
    async with httpx2.AsyncClient(timeout=TIMEOUT) as http:
        registered = await http.post(
            f"{rotating_oidc_provider.issuer}/reg",
            json={
                "redirect_uris": [REDIRECT_URI],
                "token_endpoint_auth_method": "none",
                "application_type": "native",
            },
        )
        client_id = registered.json()["client_id"]
        verifier, challenge = pkce_pair()
        query = {
            "client_id": client_id,
            "response_type": "code",
            "redirect_uri": REDIRECT_URI,
            "scope": "mcp",
            "resource": RESOURCE,
            "code_challenge": challenge,
            "code_challenge_method": "S256",
            "state": "before",
        }
        begun = await http.get(f"{rotating_oidc_provider.issuer}/auth?{urlencode(query)}")
        assert begun.status_code == 303
        kid = await rotating_oidc_provider.rotate_keys()
        interaction = f"{rotating_oidc_provider.issuer}{begun.headers['location']}"
        returned = await follow_authorization(http, interaction)
        assert returned["state"] == "before"
        form = {
            "grant_type": "authorization_code",
            "code": returned["code"],
            "redirect_uri": REDIRECT_URI,
            "code_verifier": verifier,
            "client_id": client_id,
        }
        answer = await http.post(f"{rotating_oidc_provider.issuer}/token", data=form)
    assert answer.status_code == 200, answer.text
    token = answer.json()["access_token"]
    assert decode(token)[0]["kid"] == kid
    assert verify_rs256(token, await rotating_oidc_provider.jwks())["client_id"] == client_id
