"""The attack probe's served processes, one per HTTP server, shared by its modules."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator

import attrs
import pytest
import trio

from ._probe import Served, check_log, open_session, ping, serve


@attrs.define
class Probed:
    """A served process and a session of a bystander, which every case must leave be."""

    served: Served
    bystander: str
    #: how much of the log the cases so far have checked
    checked: int = 0


@pytest.fixture(scope="session", params=["builtin", "hypercorn"])
def probed(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Probed]:
    with serve(request.param, tmp_path_factory.mktemp(f"probe-{request.param}")) as served:
        yield Probed(served, trio.run(open_session, served))


@pytest.fixture
async def served(probed: Probed) -> AsyncIterator[Served]:
    """The process under attack; after the case it still runs, the bystander's session
    still answers, and what the case made it log is escaped and bounded."""
    served = probed.served
    yield served
    served.check_alive()
    await ping(served, probed.bystander)
    served.check_alive()
    text, probed.checked = served.whole_lines_since(probed.checked)
    check_log(text)
