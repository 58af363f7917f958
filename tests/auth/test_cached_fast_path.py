"""A verifier's remembered answer admits a request without the guarded wait."""

from __future__ import annotations

import pytest

from mcpactor.auth import InvalidToken, Principal, ResourceServer


class Remembering:
    """Answers remembered tokens from ``cached``; ``verify`` counts what reaches it."""

    def __init__(self) -> None:
        self.known = {"good": Principal("alice", issuer="https://id.example")}
        self.verified = 0

    def cached(self, token: str) -> Principal | None:
        if token == "refused":
            raise InvalidToken("refused a moment ago")
        return self.known.get(token)

    async def verify(self, token: str) -> Principal:
        self.verified += 1
        return Principal("bob", issuer="https://id.example")


def resource_server(verifier: Remembering) -> ResourceServer:
    return ResourceServer(
        resource="https://mcp.example/mcp",
        authorization_servers=["https://id.example"],
        verifier=verifier,
    )


async def test_a_remembered_token_is_not_verified_again() -> None:
    verifier = Remembering()
    principal = await resource_server(verifier).authorize({"authorization": "Bearer good"})
    assert (principal.subject, verifier.verified) == ("alice", 0)


async def test_an_unknown_token_goes_to_verify() -> None:
    verifier = Remembering()
    principal = await resource_server(verifier).authorize({"authorization": "Bearer other"})
    assert (principal.subject, verifier.verified) == ("bob", 1)


async def test_a_remembered_refusal_is_refused_at_once() -> None:
    verifier = Remembering()
    with pytest.raises(InvalidToken, match="refused a moment ago"):
        await resource_server(verifier).authorize({"authorization": "Bearer refused"})
    assert verifier.verified == 0
