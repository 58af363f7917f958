"""A client core and a server core talking in memory: plain synchronous code, no trio.

Every message crosses an orjson round trip, as it would on a wire, and what the client
sends is checked against the revision's schema.
"""

from __future__ import annotations

import ast
import inspect
from typing import Any

import orjson
import pytest

import mcpactor.protocol._client_session as client_session_module
from mcpactor import CapabilityError, LocalProtocolError
from mcpactor.protocol import (
    CancelRequested,
    ErrorReceived,
    Exchange,
    Initialized,
    Negotiated,
    Notification,
    NotificationReceived,
    Phase,
    ResponseReceived,
    RootsChanged,
    Send,
    ServerSession,
)
from mcpactor.protocol._client_session import (
    ClientEvent,
    ClientPhase,
    ClientSessionCore,
    ProgressReceived,
    ServerRequestReceived,
    SessionInitialized,
    UnexpectedResponse,
)
from mcpactor.protocol._session import Event
from tests.protocol.helpers import (
    SESSION_VERSIONS,
    UNBATCHED_VERSIONS,
    exchange_of,
    make_session,
)
from tests.spec_schema import check, check_server_message

CLIENT_INFO = {"name": "pair-client", "version": "1.0"}
ROOTS = {"roots": [{"uri": "file:///work", "name": "work"}]}


def wire(value: Any) -> Any:
    """``value`` as the far end decodes it."""
    return orjson.loads(orjson.dumps(value))


class Pair:
    """A client core and a server core, and the version they are meant to speak."""

    def __init__(self, version: str, client_capabilities: dict[str, Any] | None = None) -> None:
        self.version = version
        self.client = ClientSessionCore()
        self.server: ServerSession = make_session()
        self.client_capabilities = client_capabilities or {}

    def to_server(self, message: Any) -> list[Event]:
        """Deliver what the client wrote; return the server's events."""
        return self.server.receive(wire(message))

    def to_client(self, message: Any, request_method: str | None = None) -> list[ClientEvent]:
        """Deliver what the server wrote (checked against the schema); return the events."""
        check_server_message(message, self.version, request_method=request_method)
        return self.client.receive(wire(message))

    def reply(self, events: list[Event]) -> Any:
        """The one thing the server wrote by itself among ``events``."""
        [sent] = [event for event in events if type(event) is Send]
        return sent.payload

    def handshake(self) -> SessionInitialized:
        """Initialize both sides; return the client's event for the answer."""
        request = self.client.initialize(self.version, self.client_capabilities, CLIENT_INFO)
        check(request.to_json(), self.version, "InitializeRequest")
        answer = self.reply(self.to_server(request.to_json()))
        [event] = self.to_client(answer, "initialize")
        assert type(event) is SessionInitialized
        initialized = self.client.notification("notifications/initialized")
        check(initialized.to_json(), self.version, "InitializedNotification")
        assert self.to_server(initialized.to_json()) == [Initialized()]
        return event


@pytest.mark.parametrize("version", SESSION_VERSIONS)
def test_the_handshake_at_every_session_revision(version: str) -> None:
    pair = Pair(version, {"roots": {"listChanged": True}})
    phases = [pair.client.phase]
    event = pair.handshake()
    phases.append(pair.client.phase)
    assert phases == [ClientPhase.NEW, ClientPhase.OPERATING]
    assert event.revision.version == version
    assert event.result["protocolVersion"] == version
    assert pair.client.revision is event.revision
    assert pair.client.initialize_result == event.result
    assert pair.client.server_capabilities == pair.server.server_capabilities
    assert pair.client.server_info == event.result["serverInfo"]
    assert pair.server.phase is Phase.OPERATING
    assert pair.server.negotiated == Negotiated(
        event.revision, {"roots": {"listChanged": True}}, CLIENT_INFO
    )
    assert pair.client.pending() == {}


def test_a_revision_the_server_does_not_know_gets_its_latest() -> None:
    pair = Pair("1999-01-01")
    request = pair.client.initialize("1999-01-01", {}, CLIENT_INFO)
    answer = pair.reply(pair.to_server(request.to_json()))
    [event] = pair.client.receive(wire(answer))
    assert type(event) is SessionInitialized
    assert event.revision.version == SESSION_VERSIONS[-1]


@pytest.mark.parametrize("version", SESSION_VERSIONS)
def test_ping_both_ways(version: str) -> None:
    pair = Pair(version)
    pair.handshake()
    ping = pair.client.send_request("ping")
    check(ping.to_json(), version, "PingRequest")
    answer = pair.reply(pair.to_server(ping.to_json()))
    assert pair.to_client(answer, "ping") == [ResponseReceived(ping.id, {})]
    server_ping = pair.server.send_request("ping")
    [event] = pair.to_client(server_ping.to_json())
    assert event == ServerRequestReceived(server_ping)
    reply = pair.client.respond(server_ping.id, {})
    check(reply, version, "JSONRPCResponse")
    assert pair.to_server(reply) == [ResponseReceived(server_ping.id, {})]
    assert pair.client.serving() == frozenset()


def test_a_request_answered_with_a_result_and_one_with_an_error() -> None:
    pair = Pair("2025-11-25")
    pair.handshake()
    call = pair.client.send_request("tools/call", {"name": "add", "arguments": {"a": 1}})
    read = pair.client.send_request("resources/read", {"uri": "file:///nope"})
    assert pair.client.pending() == {call.id: "tools/call", read.id: "resources/read"}
    [received_call] = pair.to_server(call.to_json())
    [received_read] = pair.to_server(read.to_json())
    assert type(received_call) is Exchange
    assert type(received_read) is Exchange
    assert received_call.request == call
    assert received_read.request == read
    assert received_call.negotiated is pair.server.negotiated
    # Answered out of order; each through its own exchange.
    error = received_read.respond_error(-32002, "not found", {"uri": "file:///nope"})
    [event] = pair.to_client(error)
    assert type(event) is ErrorReceived
    assert (event.request_id, event.error.code, event.error.data) == (
        read.id,
        -32002,
        {"uri": "file:///nope"},
    )
    result = {"content": [{"type": "text", "text": "1"}], "isError": False}
    answer = received_call.respond(result)
    assert pair.to_client(answer, "tools/call") == [ResponseReceived(call.id, result)]
    assert pair.client.pending() == {}
    assert list(pair.server.in_flight()) == []


def test_a_server_request_answered_by_the_client() -> None:
    pair = Pair("2025-11-25", {"roots": {"listChanged": True}, "sampling": {}})
    pair.handshake()
    roots = pair.server.send_request("roots/list")
    [event] = pair.to_client(roots.to_json())
    assert event == ServerRequestReceived(roots)
    assert pair.client.serving() == {roots.id}
    reply = pair.client.respond(roots.id, ROOTS)
    check(reply["result"], "2025-11-25", "ListRootsResult")
    assert pair.to_server(reply) == [ResponseReceived(roots.id, ROOTS)]
    # What the client cannot answer goes back as an error.
    sampling = pair.server.send_request("sampling/createMessage", {"messages": [], "maxTokens": 9})
    [event] = pair.to_client(sampling.to_json())
    assert event == ServerRequestReceived(sampling)
    refusal = pair.client.respond_error(sampling.id, -32601, "method not found")
    [error] = pair.to_server(refusal)
    assert type(error) is ErrorReceived
    assert error.error.code == -32601


def test_the_server_asks_only_for_what_the_client_declared() -> None:
    pair = Pair("2025-11-25")
    pair.handshake()
    with pytest.raises(CapabilityError):
        pair.server.send_request("roots/list")


def test_cancellation_notices_both_ways() -> None:
    pair = Pair("2025-11-25", {"roots": {}})
    pair.handshake()
    # The client gives up on its request: the server is told, the late answer ignored.
    call = pair.client.send_request("tools/call", {"name": "slow", "arguments": {}})
    received = pair.to_server(call.to_json())
    notice = pair.client.cancel(call.id, "the user pressed stop")
    assert notice is not None
    check(notice.to_json(), "2025-11-25", "CancelledNotification")
    assert pair.to_server(notice.to_json()) == [CancelRequested(call.id, "the user pressed stop")]
    assert exchange_of(received, call.id).abandon() is None
    late: dict[str, Any] = {"jsonrpc": "2.0", "id": call.id, "result": {"content": []}}
    [ignored] = pair.client.receive(late)
    assert type(ignored) is UnexpectedResponse
    assert pair.client.cancel(call.id) is None  # nothing left to cancel
    # The server gives up on its request: the client stops answering it.
    roots = pair.server.send_request("roots/list")
    pair.to_client(roots.to_json())
    pair.server.forget_outgoing(roots.id)
    cancel = Notification("notifications/cancelled", {"requestId": roots.id, "reason": "late"})
    events = pair.to_client(cancel.to_json())
    assert events == [CancelRequested(roots.id, "late"), NotificationReceived(cancel)]
    pair.client.abandon(roots.id)
    assert pair.client.serving() == frozenset()
    # An answer that went out anyway is no answer the server waits for.
    assert pair.to_server({"jsonrpc": "2.0", "id": roots.id, "result": ROOTS}) == []


def test_initialize_is_never_cancelled() -> None:
    pair = Pair("2025-11-25")
    request = pair.client.initialize("2025-11-25", {}, CLIENT_INFO)
    assert pair.client.cancel(request.id, "impatient") is None
    assert pair.client.phase is ClientPhase.NEW
    assert pair.client.pending() == {}


def test_progress_reaches_the_request_it_belongs_to() -> None:
    pair = Pair("2025-11-25")
    pair.handshake()
    call = pair.client.send_request("tools/call", {"name": "long"}, progress=True)
    [received] = pair.to_server(call.to_json())
    assert type(received) is Exchange
    assert received.request.params is not None
    token = received.request.params["_meta"]["progressToken"]
    progress = Notification(
        "notifications/progress", {"progressToken": token, "progress": 1, "total": 2}
    ).to_json()
    events = pair.to_client(progress)
    assert events[0] == ProgressReceived(call.id, progress["params"])
    assert type(events[1]) is NotificationReceived
    pair.to_client(received.respond({"content": []}), "tools/call")
    # After the response, the token belongs to nobody.
    assert [type(e) for e in pair.to_client(progress)] == [NotificationReceived]


def test_a_batch_at_the_revision_that_has_them() -> None:
    pair = Pair("2025-03-26")
    pair.handshake()
    ping = pair.client.send_request("ping")
    call = pair.client.send_request("tools/call", {"name": "add", "arguments": {}})
    note = pair.client.notification("notifications/roots/list_changed")
    batch = pair.client.batch([ping, call, note])
    check(batch, "2025-03-26", "JSONRPCBatchRequest")
    events = pair.to_server(batch)
    # The ping is answered by the machine but held until the batch is complete.
    assert [type(e) for e in events] == [Exchange, RootsChanged]
    answers = exchange_of(events, call.id).respond({"content": []})
    assert isinstance(answers, list)
    assert len(answers) == 2
    events_back = pair.to_client(answers)
    assert sorted(events_back, key=lambda e: str(e)) == sorted(
        [ResponseReceived(ping.id, {}), ResponseReceived(call.id, {"content": []})],
        key=lambda e: str(e),
    )
    assert pair.client.pending() == {}


@pytest.mark.parametrize("version", UNBATCHED_VERSIONS)
def test_no_batch_where_the_revision_has_none(version: str) -> None:
    pair = Pair(version)
    pair.handshake()
    ping = pair.client.send_request("ping")
    with pytest.raises(LocalProtocolError, match="batches"):
        pair.client.batch([ping])
    # Sent anyway, the server refuses it as a whole.
    refusal = pair.reply(pair.to_server([ping.to_json()]))
    assert refusal["error"]["code"] == -32600


def test_responses_to_unknown_ids_on_either_side() -> None:
    pair = Pair("2025-11-25")
    pair.handshake()
    stray = {"jsonrpc": "2.0", "id": 4242, "result": {}}
    [event] = pair.to_client(stray)
    assert type(event) is UnexpectedResponse
    assert event.response.id == 4242
    error = {"jsonrpc": "2.0", "id": "nope", "error": {"code": -32603, "message": "x"}}
    [event] = pair.client.receive(error)
    assert type(event) is UnexpectedResponse
    assert pair.to_server({"jsonrpc": "2.0", "id": 777, "result": {}}) == []


def test_the_client_answers_what_the_server_got_wrong() -> None:
    pair = Pair("2025-11-25")
    pair.handshake()
    ping = pair.server.send_request("ping")
    pair.to_client(ping.to_json())
    events = pair.client.receive(wire(ping.to_json()))  # the same id again
    [sent] = events
    assert type(sent) is Send
    check(sent.payload, "2025-11-25", "JSONRPCErrorResponse")
    [error] = pair.to_server(sent.payload)
    assert type(error) is ErrorReceived
    assert error.error.code == -32600


def test_the_core_needs_no_trio() -> None:
    tree = ast.parse(inspect.getsource(client_session_module))
    imported: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            imported.update(alias.name.partition(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and not node.level:
            imported.add((node.module or "").partition(".")[0])
    assert imported <= {"__future__", "enum", "typing", "attrs"}, imported
