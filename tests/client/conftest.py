"""Clients whose every received message is checked against the official schema."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any, Final

from mcpactor import Server
from mcpactor.client import ClientSession, connect_memory
from mcpactor.protocol import LATEST, JSONValue
from tests.spec_schema import check_server_message

SESSION_REVISIONS: Final = ("2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25")

# Long enough for every legitimate virtual wait; a hang fails instead of blocking.
GUARD: Final = 10_000.0


class ServerMessages:
    """Every message a server sent, each checked against the schema as it arrives."""

    def __init__(self, revision: str) -> None:
        self.revision = revision
        #: (message, the method of the request it answers) in arrival order
        self.seen: list[tuple[JSONValue, str | None]] = []

    def __call__(self, message: JSONValue, request_method: str | None) -> None:
        if request_method == "initialize" and "result" in message:
            self.revision = message["result"]["protocolVersion"]
        check_server_message(message, self.revision, request_method=request_method)
        self.seen.append((message, request_method))

    def methods(self) -> list[str | None]:
        """The methods of the server's requests and notifications, in order."""
        return [m.get("method") for m, _ in self.seen if isinstance(m, dict) and "method" in m]

    def answered(self) -> list[str | None]:
        """The methods of our requests the server answered, in order."""
        return [method for m, method in self.seen if isinstance(m, dict) and "method" not in m]


@asynccontextmanager
async def connect(
    server: Server,
    *,
    protocol_version: str = LATEST.version,
    initialize: bool = True,
    **client: Any,
) -> AsyncIterator[ClientSession]:
    """An in-memory client of ``server`` that validates everything the server sends.

    The checker is reachable as ``client.on_server_message`` (a ``ServerMessages``).
    """
    checker = ServerMessages(protocol_version)
    async with connect_memory(
        server,
        initialize=initialize,
        protocol_version=protocol_version,
        on_server_message=checker,
        **client,
    ) as session:
        yield session


def checker_of(client: ClientSession) -> ServerMessages:
    """The ``ServerMessages`` plugged into a client made by ``connect``."""
    checker = client.on_server_message
    assert isinstance(checker, ServerMessages)
    return checker


def text_of(result: Any) -> str:
    """The text of a result with exactly one text block."""
    content = result["content"]
    assert len(content) == 1, result
    assert content[0]["type"] == "text", result
    text: str = content[0]["text"]
    return text
