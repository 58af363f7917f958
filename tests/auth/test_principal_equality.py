"""A Principal's equality is its identity; the bearer token's alphabet is RFC 6750's."""

from __future__ import annotations

import pytest

from mcpactor.auth import InvalidToken, Principal
from mcpactor.auth._resource import bearer_token


def test_principals_of_one_caller_are_equal_whatever_their_scopes() -> None:
    first = Principal("alice", "https://issuer.example", "app", scopes={"read"}, expires_at=1.0)
    second = Principal("alice", "https://issuer.example", "app", scopes={"write"})
    assert first == second
    assert (first != second) is False
    assert hash(first) == hash(second)
    assert len({first, second}) == 1


@pytest.mark.parametrize(
    "other",
    [
        Principal("bob", "https://issuer.example", "app"),
        Principal("alice", "https://other.example", "app"),
        Principal("alice", "https://issuer.example", "other"),
        Principal("alice", None, "app"),
    ],
)
def test_principals_of_other_callers_differ(other: Principal) -> None:
    alice = Principal("alice", "https://issuer.example", "app")
    assert alice != other
    assert (alice == other) is False
    assert other != alice


def test_a_principal_equals_itself_and_no_other_type() -> None:
    alice = Principal("alice")
    assert alice == alice
    assert (alice != alice) is False
    assert alice != "alice"
    assert (alice == "alice") is False


@pytest.mark.parametrize("token", ["a", "aZ09-._~+/", "abc=", "abc==", "x.y.z"])
def test_token68_is_accepted(token: str) -> None:
    assert bearer_token("Bearer " + token) == token


@pytest.mark.parametrize("token", ["=", "==", "a=b", "ab\u00e9", 'a"b', "a;b", "a\x00b", "a*b"])
def test_anything_else_is_not_a_bearer_token(token: str) -> None:
    with pytest.raises(InvalidToken):
        bearer_token("Bearer " + token)
