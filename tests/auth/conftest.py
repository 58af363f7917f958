"""Fixtures of the authorization tests: real authorization servers on loopback."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from ._provider import OidcProvider, running_provider


@pytest.fixture(scope="session")
def oidc_provider() -> Iterator[OidcProvider]:
    """The authorization server the tests' resource servers trust."""
    with running_provider() as provider:
        yield provider


@pytest.fixture(scope="session")
def other_oidc_provider() -> Iterator[OidcProvider]:
    """A second, independent authorization server: its tokens carry another issuer."""
    with running_provider() as provider:
        yield provider


@pytest.fixture
def rotating_oidc_provider() -> Iterator[OidcProvider]:
    """An authorization server of one test's own, for tests that rotate its keys.

    Rotating the shared one would leave every long-lived resource server of the other
    tests holding keys that no longer sign, until its next refresh.
    """
    with running_provider() as provider:
        yield provider
