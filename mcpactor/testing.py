"""Helpers for testing mcpactor servers under pytest-trio.

Use the context manager in a test::

    async def test_add() -> None:
        async with mcpactor.testing.client(server) as client:
            result = await client.call_tool("add", {"a": 1, "b": 2})
            assert result.data == 3

or make a fixture of it (in a test module or ``conftest.py``)::

    client = mcpactor.testing.client_fixture(make_server, protocol_version=SESSION_REVISIONS)

    async def test_add(client: ClientSession) -> None: ...

The client talks to the server in memory, through a real ``SessionActor``, with every
message encoded and decoded as JSON on the way. The server's lifespans run while the
client is open (``server.state`` is what its lifespan yielded), and a tool result's
``data`` is what the tool returned, of its annotated type (``ToolResult``).
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Callable, Sequence
from typing import Any, Unpack

from .client import ClientArgs, ClientSession, ToolResult, connect_memory
from .protocol import LATEST, SESSION_REVISIONS
from .runtime import SessionOptions
from .server import Server

__all__ = ["SESSION_REVISIONS", "ToolResult", "client", "client_fixture"]


@contextlib.asynccontextmanager
async def client(
    server: Server,
    *,
    protocol_version: str = LATEST.version,
    options: SessionOptions | None = None,
    **client_args: Unpack[ClientArgs],
) -> AsyncIterator[ClientSession]:
    """Yield an in-memory client of ``server``, initialized at ``protocol_version``.

    The server's lifespans are entered around it, so its handlers' ``ctx.state`` (and
    ``server.state`` in the test) is what the lifespan yielded.
    """
    async with connect_memory(
        server,
        options=options,
        initialize=True,
        protocol_version=protocol_version,
        **client_args,
    ) as session:
        yield session


def client_fixture(
    server: Server | Callable[[], Server],
    *,
    protocol_version: str | Sequence[str] = LATEST.version,
    options: SessionOptions | None = None,
    **client_args: Unpack[ClientArgs],
) -> Any:
    """Return a pytest fixture yielding ``client(server, ...)``; name it by assignment.

    ``server`` may be a factory, called once per test. A sequence of protocol versions
    parametrizes the fixture: every test using it runs once per revision.
    """
    import pytest

    def open_client(version: str) -> contextlib.AbstractAsyncContextManager[ClientSession]:
        target = server if isinstance(server, Server) else server()
        return client(target, protocol_version=version, options=options, **client_args)

    if isinstance(protocol_version, str):
        version = protocol_version

        @pytest.fixture
        async def fixture() -> AsyncIterator[ClientSession]:
            async with open_client(version) as session:
                yield session

        return fixture

    versions = list(protocol_version)

    @pytest.fixture(params=versions, ids=versions)
    async def parametrized(request: pytest.FixtureRequest) -> AsyncIterator[ClientSession]:
        async with open_client(request.param) as session:
            yield session

    return parametrized
