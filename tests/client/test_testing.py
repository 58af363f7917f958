"""mcpactor.testing: the helpers users test their servers with."""

from __future__ import annotations

import pytest

import mcpactor.testing
from mcpactor import Context, Server
from mcpactor.client import ClientSession

from .conftest import ServerMessages


def make_server() -> Server:
    server = Server("under-test")

    @server.tool()
    async def version(ctx: Context) -> str:
        """The negotiated revision."""
        return ctx.protocol_version

    return server


async def test_client_is_initialized_at_the_requested_revision() -> None:
    checker = ServerMessages("2025-03-26")
    async with mcpactor.testing.client(
        make_server(), protocol_version="2025-03-26", on_server_message=checker
    ) as client:
        assert client.server.protocol_version == "2025-03-26"
        result = await client.call_tool("version")
        assert result["content"][0]["text"] == "2025-03-26"
    # Initialized, then pinged: the server has seen notifications/initialized.
    assert checker.answered() == ["initialize", "ping", "tools/call"]


every_revision = mcpactor.testing.client_fixture(
    make_server,
    protocol_version=mcpactor.testing.SESSION_REVISIONS,
    on_server_message=ServerMessages("2025-11-25"),
)
one_server = make_server()
latest = mcpactor.testing.client_fixture(
    one_server, on_server_message=ServerMessages("2025-11-25")
)


async def test_a_parametrized_fixture_runs_once_per_revision(
    every_revision: ClientSession, request: pytest.FixtureRequest
) -> None:
    revision = request.node.callspec.params["every_revision"]
    assert revision in mcpactor.testing.SESSION_REVISIONS
    assert every_revision.server.protocol_version == revision
    result = await every_revision.call_tool("version")
    assert result["content"][0]["text"] == revision


async def test_a_fixture_of_one_server(latest: ClientSession) -> None:
    assert latest.server.protocol_version == "2025-11-25"
    assert latest.server.info == {"name": "under-test", "version": "0.1.0"}
