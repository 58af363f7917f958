"""Builders shared by the protocol-core tests: sessions in a given phase, messages."""

from __future__ import annotations

from typing import Any

from mcpactor.protocol import (
    Exchange,
    Phase,
    Revision,
    Send,
    ServerSession,
)
from mcpactor.protocol._session_events import Event
from tests.spec_schema import check_server_message

#: the session revisions, oldest first
SESSION_VERSIONS = ("2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25")
#: revisions without JSON-RPC batches
UNBATCHED_VERSIONS = ("2024-11-05", "2025-06-18", "2025-11-25")


def server_info(revision: Revision) -> dict[str, Any]:
    """Our serverInfo, with every field the revision defines."""
    info: dict[str, Any] = {"name": "test-server", "version": "1.0.0"}
    if "title" in revision.implementation_fields:
        info["title"] = "Test server"
    if "websiteUrl" in revision.implementation_fields:
        info["websiteUrl"] = "https://example.com"
    return info


def capabilities(revision: Revision) -> dict[str, Any]:
    """Server capabilities with logging, so the machine answers logging/setLevel."""
    caps: dict[str, Any] = {
        "logging": {},
        "tools": {"listChanged": True},
        "prompts": {"listChanged": True},
        "resources": {"subscribe": True, "listChanged": True},
    }
    if revision.completions_capability:
        caps["completions"] = {}
    return caps


def make_session(**options: Any) -> ServerSession:
    """A fresh session awaiting initialize."""
    options.setdefault("server_info", server_info)
    options.setdefault("capabilities", capabilities)
    return ServerSession(**options)


def request(request_id: Any, method: str, params: Any = None) -> dict[str, Any]:
    """A request's wire form (``params`` left out when None)."""
    message: dict[str, Any] = {"jsonrpc": "2.0", "id": request_id, "method": method}
    if params is not None:
        message["params"] = params
    return message


def notification(method: str, params: Any = None) -> dict[str, Any]:
    """A notification's wire form (``params`` left out when None)."""
    message: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
    if params is not None:
        message["params"] = params
    return message


def initialize(
    request_id: Any = 0, version: Any = "2025-11-25", client_capabilities: Any = None
) -> dict[str, Any]:
    """A well-formed initialize request."""
    return request(
        request_id,
        "initialize",
        {
            "protocolVersion": version,
            "capabilities": {} if client_capabilities is None else client_capabilities,
            "clientInfo": {"name": "test-client", "version": "0.1"},
        },
    )


def only_send(events: list[Event]) -> Any:
    """The payload of the single Send in ``events``; fail if there is anything else."""
    assert len(events) == 1, events
    (event,) = events
    assert type(event) is Send, event
    return event.payload


def exchange_of(events: list[Event], request_id: Any) -> Exchange:
    """The one Exchange in ``events`` for ``request_id``; fail if there is none or more."""
    found = [
        event
        for event in events
        if type(event) is Exchange
        and type(event.request.id) is type(request_id)
        and event.request.id == request_id
    ]
    assert len(found) == 1, events
    return found[0]


def session_in(
    phase: Phase,
    version: str = "2025-11-25",
    *,
    client_capabilities: dict[str, Any] | None = None,
    **options: Any,
) -> ServerSession:
    """A session driven through the handshake as far as ``phase``."""
    session = make_session(**options)
    if phase is Phase.AWAITING_INITIALIZE:
        return session
    reply = only_send(session.receive(initialize("init", version, client_capabilities)))
    assert reply["result"]["protocolVersion"] == version
    if phase is not Phase.AWAITING_INITIALIZED:
        session.receive(notification("notifications/initialized"))
    if phase is Phase.CLOSED:
        session.close()
    assert session.phase is phase
    return session


def feed(session: ServerSession, value: Any, version: str) -> list[Event]:
    """Receive ``value`` and check every reply the machine produced against the schema."""
    events = session.receive(value)
    method = value.get("method") if isinstance(value, dict) else None
    for event in events:
        if type(event) is Send:
            check_server_message(
                event.payload, version, request_method=method if isinstance(method, str) else None
            )
    return events
