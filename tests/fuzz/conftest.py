"""The attack probe's served processes, one per HTTP server, shared by its modules."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator

import attrs
import pytest
import trio

from ._probe import Served, open_session, ping, serve


@attrs.frozen
class Probed:
    """A served process and a session of a bystander, which every case must leave be."""

    served: Served
    bystander: str


@pytest.fixture(scope="session", params=["builtin", "hypercorn"])
def probed(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Probed]:
    with serve(request.param, tmp_path_factory.mktemp(f"probe-{request.param}")) as served:
        yield Probed(served, trio.run(open_session, served))


@pytest.fixture
async def served(probed: Probed) -> AsyncIterator[Served]:
    """The process under attack; after the case it still runs, and the bystander's
    session still answers."""
    yield probed.served
    probed.served.check_alive()
    await ping(probed.served, probed.bystander)
    probed.served.check_alive()
