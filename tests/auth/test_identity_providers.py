"""The settings docs/authorization.md gives for Keycloak, Auth0, Entra ID and Okta admit
tokens shaped exactly as each provider issues them, and refuse their other tokens.

Each provider's ``[auth]`` table is read from the page (the TOML block under its heading)
and built as ``mcpactor serve --config`` builds it, with one change: the keys come from a
JWKS file of keys made here, so nothing is fetched. The tokens are signed with them;
their headers and claims are those of the provider's real tokens (placeholders for the
ids, the names of the page for the issuer, the API and the scopes).
"""

from __future__ import annotations

import argparse
import json
import re
import time
import tomllib
import uuid
from pathlib import Path
from typing import Any, Final

import pytest
from joserfc import jwk, jws

from mcpactor.auth import InvalidToken, Principal, ResourceServer
from mcpactor.cli._auth import build_resource_server
from mcpactor.config import parse_config

PAGE: Final = Path(__file__).resolve().parents[2] / "docs" / "authorization.md"
RESOURCE: Final = "https://mcp.example.com/mcp"

KEYCLOAK: Final = "https://keycloak.example.com/realms/mcp"
AUTH0: Final = "https://example.us.auth0.com/"
TENANT: Final = "11111111-2222-3333-4444-555555555555"
ENTRA_V2: Final = f"https://login.microsoftonline.com/{TENANT}/v2.0"
ENTRA_V1: Final = f"https://sts.windows.net/{TENANT}/"
API_CLIENT: Final = "66666666-7777-8888-9999-000000000000"
OKTA: Final = "https://example.okta.com/oauth2/default"


def provider_table(heading: str) -> dict[str, Any]:
    """The configuration file the page shows under ``### heading``."""
    text = PAGE.read_text(encoding="utf-8")
    start = text.index(f"\n### {heading}\n")
    section = text[start : text.index("\n#", start + 1)]
    (block,) = re.findall(r"^```toml\n(.*?)^```", section, re.S | re.M)
    return tomllib.loads(block)


@pytest.fixture(scope="module")
def key() -> jwk.RSAKey:
    return jwk.RSAKey.generate_key(2048, parameters={"kid": "Kx1"})


def resource_server(heading: str, key: jwk.RSAKey, tmp_path: Path) -> ResourceServer:
    data = provider_table(heading)
    jwks = tmp_path / "jwks.json"
    jwks.write_text(json.dumps({"keys": [key.as_dict(private=False)]}))
    data["auth"]["jwks_file"] = str(jwks)
    config = parse_config(data, source=tmp_path / "mcpactor.toml")
    built = build_resource_server(argparse.Namespace(), config)
    assert isinstance(built, ResourceServer)
    return built


def sign(key: jwk.RSAKey, header: dict[str, Any], claims: dict[str, Any]) -> str:
    return jws.serialize_compact(
        {"alg": "RS256", **header, "kid": key.kid}, json.dumps(claims).encode(), key
    )


async def admitted(rs: ResourceServer, token: str) -> Principal:
    return await rs.authorize({"authorization": f"Bearer {token}"})


async def refused(rs: ResourceServer, token: str, match: str) -> None:
    with pytest.raises(InvalidToken, match=match):
        await rs.verify(token)


def times(lifetime: int = 300) -> dict[str, int]:
    now = int(time.time())
    return {"iat": now, "exp": now + lifetime}


# --- Keycloak -------------------------------------------------------------------------


def keycloak_claims(**changes: Any) -> dict[str, Any]:
    # an access token of the authorization-code flow, with the mcp client scope's
    # Audience mapper adding the resource URL
    claims = {
        **times(),
        "auth_time": int(time.time()) - 5,
        "jti": f"onrtac:{uuid.uuid4()}",
        "iss": KEYCLOAK,
        "aud": [RESOURCE, "account"],
        "sub": "f4c9a2d6-1b7e-4f38-9d2a-3c5e8b1a7f60",
        "typ": "Bearer",
        "azp": "mcp-client",
        "sid": "0d2c6f3e-8a1b-4c9d-b7e5-2f4a6c8e0b1d",
        "acr": "1",
        "allowed-origins": ["http://localhost:6274"],
        "realm_access": {"roles": ["default-roles-mcp", "offline_access"]},
        "resource_access": {"account": {"roles": ["manage-account", "view-profile"]}},
        "scope": "openid mcp profile email",
        "email_verified": True,
        "preferred_username": "ann",
    }
    claims.update(changes)
    return claims


async def test_keycloak(key: jwk.RSAKey, tmp_path: Path) -> None:
    rs = resource_server("Keycloak", key, tmp_path)
    assert rs.metadata()["authorization_servers"] == [KEYCLOAK]
    header = {"typ": "JWT"}
    principal = await admitted(rs, sign(key, header, keycloak_claims()))
    assert principal.subject == "f4c9a2d6-1b7e-4f38-9d2a-3c5e8b1a7f60"
    assert principal.client_id == "mcp-client"
    assert principal.scopes == {"openid", "mcp", "profile", "email"}
    # without the mapper Keycloak names only its account console
    await refused(rs, sign(key, header, keycloak_claims(aud="account")), "another audience")
    # its ID token, even with the mapper adding the resource to it too
    id_token = keycloak_claims(
        typ="ID", aud=[RESOURCE, "mcp-client"], nonce="n-0S6_WzA2Mj", at_hash="77QmUPtjPfzW"
    )
    for name in ("scope", "allowed-origins", "realm_access", "resource_access"):
        del id_token[name]
    await refused(rs, sign(key, header, id_token), r"'ID' \(typ\)")
    # its refresh and offline tokens (signed with the realm's secret, named here as if not)
    for kind in ("Refresh", "Offline"):
        refresh = keycloak_claims(typ=kind, aud=[RESOURCE, KEYCLOAK])
        await refused(rs, sign(key, header, refresh), rf"'{kind}' \(typ\)")


# --- Auth0 ----------------------------------------------------------------------------


async def test_auth0(key: jwk.RSAKey, tmp_path: Path) -> None:
    rs = resource_server("Auth0", key, tmp_path)
    assert rs.metadata()["authorization_servers"] == [AUTH0]
    header = {"typ": "JWT"}
    user = {
        "iss": AUTH0,
        "sub": "auth0|64b1f0c2e4a9d7f3b5c8e1a0",
        "aud": [RESOURCE, f"{AUTH0}userinfo"],
        **times(86400),
        "scope": "openid profile email",
        "azp": "AbCdEfGhIjKlMnOpQrStUvWxYz012345",
        "permissions": ["mcp", "tools:admin"],
    }
    principal = await admitted(rs, sign(key, header, user))
    assert principal.subject == "auth0|64b1f0c2e4a9d7f3b5c8e1a0"
    assert principal.client_id == "AbCdEfGhIjKlMnOpQrStUvWxYz012345"
    assert principal.scopes == {"openid", "profile", "email", "mcp", "tools:admin"}
    machine = {
        "iss": AUTH0,
        "sub": "ZyXwVuTsRqPoNmLkJiHgFeDcBa987654@clients",
        "aud": RESOURCE,
        **times(86400),
        "scope": "mcp",
        "gty": "client-credentials",
        "azp": "ZyXwVuTsRqPoNmLkJiHgFeDcBa987654",
        "permissions": ["mcp"],
    }
    principal = await admitted(rs, sign(key, header, machine))
    assert principal.client_id == "ZyXwVuTsRqPoNmLkJiHgFeDcBa987654"
    assert principal.scopes == {"mcp"}
    # a token of the tenant without the API's audience is for userinfo alone
    userinfo = {**user, "aud": f"{AUTH0}userinfo", "permissions": []}
    await refused(rs, sign(key, header, userinfo), "another audience")
    # the ID token names the client
    id_token = {
        "iss": AUTH0,
        "sub": user["sub"],
        "aud": user["azp"],
        **times(36000),
        "nickname": "ann",
        "sid": "Gx3_Yq",
        "nonce": "abc",
    }
    await refused(rs, sign(key, header, id_token), "another audience")


# --- Microsoft Entra ID ---------------------------------------------------------------


def entra_v2(**changes: Any) -> dict[str, Any]:
    now = int(time.time())
    claims = {
        "aud": API_CLIENT,
        "iss": ENTRA_V2,
        "iat": now,
        "nbf": now,
        "exp": now + 3900,
        "aio": "AWQAm/8YAAAA",
        "azp": "77777777-8888-9999-0000-111111111111",
        "azpacr": "0",
        "name": "Ann Example",
        "oid": "aaaaaaaa-bbbb-cccc-dddd-eeeeeeeeeeee",
        "preferred_username": "ann@example.com",
        "rh": "1.AQ0A",
        "scp": "mcp",
        "sid": "00000000-1111-2222-3333-444444444444",
        "sub": "Kf3zQ1s9Qp0a-Qyq3yqW8m7c2d1e0f9g8h7i6j5k4l",
        "tid": TENANT,
        "uti": "AbCdEfGhIj",
        "ver": "2.0",
    }
    claims.update(changes)
    return claims


def entra_v1(**changes: Any) -> dict[str, Any]:
    now = int(time.time())
    claims = {
        "aud": f"api://{API_CLIENT}",
        "iss": ENTRA_V1,
        "iat": now,
        "nbf": now,
        "exp": now + 3900,
        "acr": "1",
        "aio": "AVQAq/8YAAAA",
        "amr": ["pwd"],
        "appid": "77777777-8888-9999-0000-111111111111",
        "appidacr": "0",
        "family_name": "Example",
        "given_name": "Ann",
        "ipaddr": "203.0.113.7",
        "name": "Ann Example",
        "oid": "aaaaaaaa-bbbb-cccc-dddd-eeeeeeeeeeee",
        "rh": "0.AQ0A",
        "scp": "mcp",
        "sub": "Zy9x8W7v6U5t4S3r2Q1p0OnMlKjIhGfEdCbA",
        "tid": TENANT,
        "unique_name": "ann@example.com",
        "upn": "ann@example.com",
        "uti": "KlMnOpQrSt",
        "ver": "1.0",
    }
    claims.update(changes)
    return claims


async def test_entra_id(key: jwk.RSAKey, tmp_path: Path) -> None:
    rs = resource_server("Microsoft Entra ID", key, tmp_path)
    # clients sign in at the v2.0 issuer, and ask for the scope by its full name
    assert rs.metadata()["authorization_servers"] == [ENTRA_V2, ENTRA_V1]
    assert rs.metadata()["resource"] == RESOURCE
    assert f'scope="api://{API_CLIENT}/mcp"' in rs.challenge()
    assert rs.metadata()["scopes_supported"] == [f"api://{API_CLIENT}/mcp"]
    v2 = await admitted(rs, sign(key, {"typ": "JWT"}, entra_v2()))
    assert v2.issuer == ENTRA_V2
    assert v2.client_id == "77777777-8888-9999-0000-111111111111"
    assert v2.scopes == {"mcp"}
    v1_header = {"typ": "JWT", "x5t": key.kid}
    v1 = await admitted(rs, sign(key, v1_header, entra_v1()))
    assert v1.issuer == ENTRA_V1
    assert v1.client_id == "77777777-8888-9999-0000-111111111111"
    assert v1.scopes == {"mcp"}
    # a v2.0 token naming the API by its URI, a v1.0 one by its client id: both occur
    await admitted(rs, sign(key, {"typ": "JWT"}, entra_v2(aud=f"api://{API_CLIENT}")))
    # a token for Microsoft Graph, and an ID token (named for the client app)
    graph = entra_v1(aud="00000003-0000-0000-c000-000000000000", scp="User.Read")
    await refused(rs, sign(key, v1_header, graph), "another audience")
    id_token = entra_v2(aud="77777777-8888-9999-0000-111111111111", nonce="n", scp=None)
    del id_token["scp"]
    await refused(rs, sign(key, {"typ": "JWT"}, id_token), "another audience")
    # another tenant's token
    other = entra_v2(iss="https://login.microsoftonline.com/99999999-0000-0000-0000-0/v2.0")
    await refused(rs, sign(key, {"typ": "JWT"}, other), "not trusted")


# --- Okta -----------------------------------------------------------------------------


def okta_claims(**changes: Any) -> dict[str, Any]:
    now = int(time.time())
    claims = {
        "ver": 1,
        "jti": "AT.a1B2c3D4e5F6g7H8i9J0kLmNoPqRsTuVwXyZ",
        "iss": OKTA,
        "aud": "api://default",
        "iat": now,
        "exp": now + 3600,
        "cid": "0oa1b2c3d4e5F6g7H8i9",
        "uid": "00u1a2b3c4D5e6F7g8h9",
        "scp": ["openid", "mcp"],
        "auth_time": now - 10,
        "sub": "ann@example.com",
    }
    claims.update(changes)
    return claims


async def test_okta(key: jwk.RSAKey, tmp_path: Path) -> None:
    rs = resource_server("Okta", key, tmp_path)
    assert rs.metadata()["resource"] == RESOURCE
    # Okta's access tokens carry no typ in their header
    principal = await admitted(rs, sign(key, {}, okta_claims()))
    assert principal.subject == "ann@example.com"
    assert principal.client_id == "0oa1b2c3d4e5F6g7H8i9"
    assert principal.scopes == {"openid", "mcp"}
    machine = okta_claims(sub="0oa1b2c3d4e5F6g7H8i9", scp=["mcp"])
    del machine["uid"]
    assert (await admitted(rs, sign(key, {}, machine))).subject == "0oa1b2c3d4e5F6g7H8i9"
    # the ID token names the client; a token of the org authorization server, Okta's APIs
    id_token = okta_claims(aud="0oa1b2c3d4e5F6g7H8i9", amr=["pwd"], idp="00o1")
    await refused(rs, sign(key, {}, id_token), "another audience")
    org = okta_claims(iss="https://example.okta.com", aud="https://example.okta.com")
    await refused(rs, sign(key, {}, org), "not trusted")


def test_every_provider_of_the_page_is_tested() -> None:
    headings = re.findall(r"^### (.+)$", PAGE.read_text(encoding="utf-8"), re.M)
    with_settings = [heading for heading in headings if "auth" in _tables(heading)]
    assert with_settings == ["Keycloak", "Auth0", "Microsoft Entra ID", "Okta"]


def _tables(heading: str) -> dict[str, Any]:
    try:
        return provider_table(heading)
    except ValueError:
        return {}
