"""ResourceServer on its own: the Authorization header, the challenges, the metadata."""

from __future__ import annotations

import logging

import pytest
import trio

from mcpactor.auth import (
    InsufficientScope,
    InvalidRequest,
    InvalidToken,
    MissingToken,
    Principal,
    ResourceServer,
    VerifierUnavailable,
)
from mcpactor.auth._resource import MAX_AUTHORIZATION, bearer_token, metadata_url

ISSUER = "https://auth.example.com"
TOKEN = "eyJhbGciOi.J9.sig-_~+/=="


class Echo:
    """Knows one token; what ``verify`` returns or raises otherwise is set per test."""

    def __init__(self, result: object = None, error: Exception | None = None) -> None:
        self.result = result
        self.error = error

    async def verify(self, token: str) -> Principal:
        if self.error is not None:
            raise self.error
        if self.result is not None:
            return self.result  # type: ignore[return-value]
        return Principal("alice", issuer=ISSUER, scopes=frozenset({"mcp"}))


def resource_server(verifier: object = None, **extra: object) -> ResourceServer:
    return ResourceServer(
        resource="https://mcp.example.com/mcp",
        authorization_servers=[ISSUER],
        verifier=verifier or Echo(),  # type: ignore[arg-type]
        **extra,  # type: ignore[arg-type]
    )


@pytest.mark.parametrize(
    "value", [f"Bearer {TOKEN}", f"bearer {TOKEN}", f"BEARER   {TOKEN} ", f" Bearer {TOKEN}"]
)
def test_a_bearer_token_is_read_in_any_case(value: str) -> None:
    assert bearer_token(value) == TOKEN


@pytest.mark.parametrize(
    ("value", "error"),
    [
        (None, MissingToken),
        ("Basic YWxhZGRpbjpvcGVuc2VzYW1l", MissingToken),
        ("", MissingToken),
        ("Bearer", InvalidRequest),
        ("Bearer   ", InvalidRequest),
        ("Bearer a b", InvalidRequest),
        (f"Bearer {TOKEN}, Bearer {TOKEN}", InvalidRequest),
        ("Bearer ab=cd", InvalidToken),
        ("Bearer é", InvalidToken),
        ("Bearer " + "a" * MAX_AUTHORIZATION, InvalidToken),
    ],
)
def test_a_wrong_authorization_header_gets_its_error(
    value: str | None, error: type[Exception]
) -> None:
    with pytest.raises(error) as info:
        bearer_token(value)
    assert type(info.value) is error


@pytest.mark.parametrize(
    ("resource", "expected"),
    [
        ("https://mcp.example.com/mcp", "/.well-known/oauth-protected-resource/mcp"),
        ("https://mcp.example.com/mcp/", "/.well-known/oauth-protected-resource/mcp"),
        ("https://mcp.example.com", "/.well-known/oauth-protected-resource"),
        ("https://mcp.example.com:8443/a/b", "/.well-known/oauth-protected-resource/a/b"),
    ],
)
def test_the_metadata_url_inserts_the_well_known_path(resource: str, expected: str) -> None:
    prefix = resource.split("/", 3)
    assert metadata_url(resource) == f"{prefix[0]}//{prefix[2]}{expected}"


def test_the_metadata_paths_cover_the_endpoint_and_the_resource() -> None:
    rs = ResourceServer(
        resource="https://gw.example.com/tenant/mcp",
        authorization_servers=[ISSUER],
        verifier=Echo(),
    )
    assert rs.metadata_paths("/mcp") == {
        "/.well-known/oauth-protected-resource",
        "/.well-known/oauth-protected-resource/mcp",
        "/.well-known/oauth-protected-resource/tenant/mcp",
    }
    assert rs.metadata_url == (
        "https://gw.example.com/.well-known/oauth-protected-resource/tenant/mcp"
    )


def test_declared_scopes_fill_in_scopes_supported_once() -> None:
    rs = resource_server(required_scopes=["mcp"])
    filled = rs.with_declared_scopes(["admin", "mcp", "bad scope", "read"])
    assert filled.scopes_supported == ("mcp", "admin", "read")
    # Set by the operator: kept as it is.
    fixed = resource_server(scopes_supported=["only"])
    assert fixed.with_declared_scopes(["admin"]) is fixed
    assert fixed.metadata()["scopes_supported"] == ["only"]
    # Nothing at all: the key is left out.
    assert "scopes_supported" not in resource_server().metadata()


def test_the_metadata_names_what_was_configured() -> None:
    rs = resource_server(
        resource_name="Notes", resource_documentation="https://docs.example.com/notes"
    )
    assert rs.metadata() == {
        "resource": "https://mcp.example.com/mcp",
        "authorization_servers": [ISSUER],
        "bearer_methods_supported": ["header"],
        "resource_name": "Notes",
        "resource_documentation": "https://docs.example.com/notes",
    }


def test_the_challenges() -> None:
    rs = resource_server(required_scopes=["mcp", "read"])
    url = rs.metadata_url
    assert rs.challenge() == f'Bearer scope="mcp read", resource_metadata="{url}"'
    assert rs.challenge(InvalidToken("expired")) == (
        f'Bearer error="invalid_token", scope="mcp read", resource_metadata="{url}", '
        'error_description="expired"'
    )
    assert rs.challenge(InvalidRequest("two")) == (
        f'Bearer error="invalid_request", resource_metadata="{url}", error_description="two"'
    )
    refused = rs.scope_error(["admin", "mcp"])
    assert refused.scopes == ("mcp", "read", "admin")
    assert rs.challenge(refused).startswith(
        'Bearer error="insufficient_scope", scope="mcp read admin"'
    )
    # Scopes from a handler that a challenge cannot carry are left out.
    odd = rs.challenge(InsufficientScope(["ok", 'b"ad', "sp ace", "ok"]))
    assert 'scope="ok"' in odd


async def test_authorize_checks_the_required_scopes() -> None:
    rs = resource_server(required_scopes=["mcp"])
    principal = await rs.authorize({"authorization": f"Bearer {TOKEN}"})
    assert principal.subject == "alice"
    strict = resource_server(required_scopes=["mcp", "admin"])
    with pytest.raises(InsufficientScope) as info:
        await strict.authorize({"authorization": f"Bearer {TOKEN}"})
    assert info.value.scopes == ("mcp", "admin")


@pytest.mark.parametrize(
    "query", [b"access_token=x", b"a=1&access_token=", b"access%5Ftoken=x", b"access_token"]
)
async def test_a_query_token_is_refused(query: bytes) -> None:
    with pytest.raises(InvalidRequest, match="query string"):
        await resource_server().authorize({"authorization": f"Bearer {TOKEN}"}, query)


async def test_a_query_that_only_mentions_the_name_is_fine() -> None:
    principal = await resource_server().authorize(
        {"authorization": f"Bearer {TOKEN}"}, b"q=access_token"
    )
    assert principal.subject == "alice"


async def test_a_failing_verifier_is_503_and_logs_no_token(
    caplog: pytest.LogCaptureFixture,
) -> None:
    rs = resource_server(Echo(error=RuntimeError(f"boom with {TOKEN}")))
    with (
        caplog.at_level(logging.WARNING, logger="mcpactor.auth"),
        pytest.raises(VerifierUnavailable) as info,
    ):
        await rs.authorize({"authorization": f"Bearer {TOKEN}"})
    assert TOKEN not in str(info.value)
    assert info.value.__cause__ is None
    assert "RuntimeError" in caplog.text
    assert TOKEN not in caplog.text


async def test_a_verifier_returning_no_principal_is_503() -> None:
    rs = resource_server(Echo(result="alice"))
    with pytest.raises(VerifierUnavailable):
        await rs.authorize({"authorization": f"Bearer {TOKEN}"})


async def test_the_verifiers_own_refusal_passes_through() -> None:
    rs = resource_server(Echo(error=InvalidToken("wrong audience")))
    with pytest.raises(InvalidToken, match="wrong audience"):
        await rs.authorize({"authorization": f"Bearer {TOKEN}"})


async def test_a_slow_verifier_is_cut_at_the_deadline(autojump_clock: trio.abc.Clock) -> None:
    class Slow:
        async def verify(self, token: str) -> Principal:
            await trio.sleep(3600)
            raise AssertionError("not reached")

    rs = resource_server(Slow(), verify_timeout=1.5)
    started = trio.current_time()
    with pytest.raises(VerifierUnavailable, match=r"within 1\.5 s"):
        await rs.authorize({"authorization": f"Bearer {TOKEN}"})
    assert trio.current_time() - started == pytest.approx(1.5)
