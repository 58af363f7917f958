"""The verifiers against a real authorization server (oidc-provider on loopback)."""

from __future__ import annotations

from typing import Any

import pytest
import trio.testing

from mcpactor.auth import CombinedVerifier, InvalidToken, JwtVerifier, verifier_from

from ._provider import OidcProvider

RESOURCE = "http://127.0.0.1:9/mcp"


async def test_a_client_credentials_jwt_is_verified_by_discovery(
    oidc_provider: OidcProvider,
) -> None:
    token = await oidc_provider.client_credentials_token(scope="tools:read mcp", resource=RESOURCE)
    v = JwtVerifier(oidc_provider.issuer, RESOURCE)
    principal = await v.verify(token)
    service = oidc_provider.clients["service"].client_id
    assert principal.issuer == oidc_provider.issuer
    assert principal.client_id == service
    assert {"tools:read", "mcp"} <= principal.scopes
    assert v.keys_of(oidc_provider.issuer).fetches == 1


async def test_an_authorization_code_jwt_names_the_user(oidc_provider: OidcProvider) -> None:
    token = await oidc_provider.authorization_code_token(RESOURCE, scope="mcp", login_hint="ann")
    principal = await JwtVerifier(oidc_provider.issuer, RESOURCE).verify(token)
    assert principal.subject == "ann"
    assert principal.client_id == oidc_provider.clients["public"].client_id


async def test_a_token_for_another_resource_or_issuer_is_refused(
    oidc_provider: OidcProvider, other_oidc_provider: OidcProvider
) -> None:
    v = JwtVerifier(oidc_provider.issuer, RESOURCE)
    elsewhere = await oidc_provider.client_credentials_token(
        scope="mcp", resource="http://127.0.0.1:9/other"
    )
    with pytest.raises(InvalidToken, match="another audience"):
        await v.verify(elsewhere)
    stranger = await other_oidc_provider.client_credentials_token(scope="mcp", resource=RESOURCE)
    with pytest.raises(InvalidToken, match="not trusted"):
        await v.verify(stranger)


async def test_after_a_key_rotation_new_tokens_still_verify(
    oidc_provider: OidcProvider, mock_clock: trio.testing.MockClock
) -> None:
    v = JwtVerifier(oidc_provider.issuer, RESOURCE, min_refresh_interval=30)
    before = await oidc_provider.client_credentials_token(scope="mcp", resource=RESOURCE)
    await v.verify(before)
    keys = v.keys_of(oidc_provider.issuer)
    assert keys.fetches == 1

    await oidc_provider.rotate_keys()
    after = await oidc_provider.client_credentials_token(scope="mcp", resource=RESOURCE)
    mock_clock.jump(31)
    assert (await v.verify(after)).client_id == oidc_provider.clients["service"].client_id
    assert keys.fetches == 2
    # the old key is still published, and the old token still cached
    assert (await v.verify(before)).issuer == oidc_provider.issuer
    assert keys.fetches == 2


async def test_an_opaque_token_is_introspected(oidc_provider: OidcProvider) -> None:
    introspector = oidc_provider.introspector
    v = verifier_from(
        issuers=[oidc_provider.issuer],
        resource=RESOURCE,
        client_id=introspector.client_id,
        client_secret=introspector.client_secret,
    )
    assert isinstance(v, CombinedVerifier)
    token = await oidc_provider.client_credentials_token(
        scope="tools:admin", resource=RESOURCE, client="opaque"
    )
    principal = await v.verify(token)
    opaque = oidc_provider.clients["opaque"].client_id
    assert principal.subject == opaque
    assert principal.scopes == {"tools:admin"}
    assert principal.issuer == oidc_provider.issuer
    with pytest.raises(InvalidToken, match="not active"):
        await v.verify(token + "x")


async def test_introspected_tokens_without_an_audience_are_refused(
    oidc_provider: OidcProvider,
) -> None:
    # issue 43: a userinfo token (asked for without a resource indicator) and a refresh
    # token are active at introspection, with tools:admin, and name no audience
    introspector = oidc_provider.introspector
    settings: dict[str, Any] = {
        "issuers": [oidc_provider.issuer],
        "resource": RESOURCE,
        "client_id": introspector.client_id,
        "client_secret": introspector.client_secret,
    }
    userinfo = await oidc_provider.authorization_code(None, "openid mcp tools:admin")
    granted = await oidc_provider.authorization_code(
        RESOURCE, "openid offline_access mcp tools:admin", prompt="consent"
    )
    v = verifier_from(**settings)
    for token in (userinfo["access_token"], granted["refresh_token"]):
        with pytest.raises(InvalidToken, match="names no audience"):
            await v.verify(token)
    # the ID token is a JWT for the client, not for this resource
    with pytest.raises(InvalidToken, match="another audience"):
        await v.verify(granted["id_token"])
    # the opt-out takes an answer that calls itself an access token, never a refresh token
    loose = verifier_from(**settings, introspection_without_audience=True)
    assert (await loose.verify(userinfo["access_token"])).subject == "test-user"
    with pytest.raises(InvalidToken, match="nor that it is an access token"):
        await loose.verify(granted["refresh_token"])
