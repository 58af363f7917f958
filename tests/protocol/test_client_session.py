"""ClientSessionCore on its own: what it builds, what it makes of what arrives."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mcpactor import LocalProtocolError, RemoteProtocolError
from mcpactor.protocol import (
    CancelRequested,
    ErrorReceived,
    ErrorResponse,
    Notification,
    NotificationReceived,
    Request,
    Response,
    ResponseReceived,
    Send,
)
from mcpactor.protocol._client_session import (
    ClientEvent,
    ClientPhase,
    ClientSessionCore,
    InitializeRefused,
    MalformedReceived,
    ProgressReceived,
    ServerRequestReceived,
    SessionInitialized,
    UnattributedError,
    UnexpectedResponse,
)
from tests.protocol.helpers import SESSION_VERSIONS

INFO = {"name": "c", "version": "1"}


def result(request_id: Any, value: Any) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request_id, "result": value}


def initialized(version: str = "2025-11-25") -> ClientSessionCore:
    core = ClientSessionCore()
    request = core.initialize(version, {}, INFO)
    [event] = core.receive(
        result(request.id, {"protocolVersion": version, "capabilities": {}, "serverInfo": INFO})
    )
    assert type(event) is SessionInitialized
    core.notification("notifications/initialized")
    return core


# --- what it builds -------------------------------------------------------------------


def test_requests_get_fresh_ids_and_are_remembered_by_method() -> None:
    core = ClientSessionCore()
    first = core.send_request("tools/list")
    second = core.send_request("tools/call", {"name": "x"})
    assert first == Request(1, "tools/list", None)
    assert second == Request(2, "tools/call", {"name": "x"})
    assert core.pending() == {1: "tools/list", 2: "tools/call"}
    assert first.to_json() == {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}


def test_a_progress_token_is_added_unless_the_caller_gave_one() -> None:
    core = ClientSessionCore()
    params = {"name": "x", "_meta": {"trace": "t"}}
    own = core.send_request("tools/call", params, progress=True)
    assert own.params == {"name": "x", "_meta": {"trace": "t", "progressToken": own.id}}
    assert params == {"name": "x", "_meta": {"trace": "t"}}  # the caller's dict is left alone
    given_token = core.send_request(
        "tools/call", {"_meta": {"progressToken": "mine"}}, progress=True
    )
    assert given_token.params == {"_meta": {"progressToken": "mine"}}
    events = core.receive(
        Notification("notifications/progress", {"progressToken": "mine", "progress": 3}).to_json()
    )
    assert events[0] == ProgressReceived(given_token.id, {"progressToken": "mine", "progress": 3})
    assert type(events[1]) is NotificationReceived


def test_the_initialize_request_has_the_three_fields() -> None:
    core = ClientSessionCore()
    request = core.initialize("2025-06-18", {"roots": {}}, INFO)
    assert request.method == "initialize"
    assert request.params == {
        "protocolVersion": "2025-06-18",
        "capabilities": {"roots": {}},
        "clientInfo": INFO,
    }
    assert core.phase is ClientPhase.INITIALIZING


def test_notifications_and_the_phase_they_end() -> None:
    core = ClientSessionCore()
    assert core.notification("notifications/initialized") == Notification(
        "notifications/initialized"
    )
    assert core.phase is ClientPhase.NEW  # not before the handshake was answered
    core = initialized()
    assert core.phase is ClientPhase.OPERATING
    note = core.notification("notifications/roots/list_changed", {"x": 1})
    assert note.to_json() == {
        "jsonrpc": "2.0",
        "method": "notifications/roots/list_changed",
        "params": {"x": 1},
    }


def test_cancel_builds_the_notice_once_and_forget_builds_none() -> None:
    core = ClientSessionCore()
    request = core.send_request("tools/call", progress=True)
    notice = core.cancel(request.id, "bored")
    assert notice == Notification(
        "notifications/cancelled", {"requestId": request.id, "reason": "bored"}
    )
    assert core.cancel(request.id, "bored") is None
    assert core.pending() == {}
    without_reason = core.send_request("ping")
    assert core.cancel(without_reason.id) == Notification(
        "notifications/cancelled", {"requestId": without_reason.id}
    )
    forgotten = core.send_request("ping")
    core.forget(forgotten.id)
    core.forget(forgotten.id)  # twice is fine
    assert core.cancel(forgotten.id) is None
    [event] = core.receive(result(forgotten.id, {}))
    assert event == UnexpectedResponse(Response(forgotten.id, {}))
    # The progress token went with its request.
    progress = Notification("notifications/progress", {"progressToken": request.id, "progress": 1})
    assert core.receive(progress.to_json()) == [NotificationReceived(progress)]


def test_a_forgotten_handshake_may_be_tried_again() -> None:
    core = ClientSessionCore()
    request = core.initialize("2025-11-25", {}, INFO)
    core.forget(request.id)
    assert core.phase is ClientPhase.NEW
    again = core.initialize("2025-11-25", {}, INFO)
    assert again.id != request.id


def test_the_pending_table_is_bounded() -> None:
    core = ClientSessionCore(max_pending=2)
    core.send_request("ping")
    second = core.send_request("ping")
    with pytest.raises(LocalProtocolError, match="limit 2"):
        core.send_request("ping")
    core.receive(result(second.id, {}))
    core.send_request("ping")  # room again


def test_answering_names_the_method_a_response_answers() -> None:
    core = ClientSessionCore()
    request = core.send_request("prompts/list")
    assert core.answering(result(request.id, {})) == "prompts/list"
    assert core.answering(result(999, {})) is None
    assert core.answering({"jsonrpc": "2.0", "id": request.id, "method": "ping"}) is None
    assert core.answering({"id": [1]}) is None
    assert core.answering([result(request.id, {})]) is None


def test_batches_follow_the_revision() -> None:
    with pytest.raises(LocalProtocolError, match="before initialize"):
        ClientSessionCore().batch([Notification("x")])
    core = initialized("2025-03-26")
    with pytest.raises(LocalProtocolError, match="empty"):
        core.batch([])
    with pytest.raises(LocalProtocolError, match="initialize"):
        core.batch([Request(99, "initialize", {})])
    ping = core.send_request("ping")
    assert core.batch([ping, Notification("n")]) == [
        ping.to_json(),
        {"jsonrpc": "2.0", "method": "n"},
    ]
    with pytest.raises(LocalProtocolError, match="2025-06-18"):
        initialized("2025-06-18").batch([ping])


# --- the handshake --------------------------------------------------------------------


@pytest.mark.parametrize("version", SESSION_VERSIONS)
def test_the_handshake_opens_the_session(version: str) -> None:
    core = ClientSessionCore()
    request = core.initialize(version, {}, INFO)
    answer = {"protocolVersion": version, "capabilities": {"tools": {}}, "serverInfo": INFO}
    [event] = core.receive(result(request.id, answer))
    assert type(event) is SessionInitialized
    assert (event.request_id, event.result, event.revision.version) == (
        request.id,
        answer,
        version,
    )
    assert core.phase is ClientPhase.INITIALIZED
    assert core.server_capabilities == {"tools": {}}
    assert core.server_info == INFO
    assert core.pending() == {}


@pytest.mark.parametrize("chosen", ["1999-01-01", None, 20251125, "2026-07-28"])
def test_a_revision_outside_the_session_revisions_is_refused(chosen: Any) -> None:
    core = ClientSessionCore()
    request = core.initialize("2025-11-25", {}, INFO)
    [event] = core.receive(result(request.id, {"protocolVersion": chosen, "capabilities": {}}))
    assert type(event) is InitializeRefused
    assert isinstance(event.error, RemoteProtocolError)
    assert event.error.data == {"protocolVersion": chosen}
    assert "this client supports" in str(event.error)
    assert core.initialize_result is None
    assert core.revision is None
    assert core.phase is ClientPhase.NEW
    assert core.server_capabilities == {}
    assert core.server_info is None


def test_an_initialize_error_is_an_error_and_leaves_the_session_new() -> None:
    core = ClientSessionCore()
    request = core.initialize("2025-11-25", {}, INFO)
    error = {"jsonrpc": "2.0", "id": request.id, "error": {"code": -32602, "message": "no"}}
    [event] = core.receive(error)
    assert event == ErrorReceived(request.id, ErrorResponse(request.id, -32602, "no"))
    assert core.phase is ClientPhase.NEW


def test_only_the_initialize_request_is_judged_as_a_handshake() -> None:
    core = ClientSessionCore()
    plain = core.send_request("initialize", {})
    [event] = core.receive(result(plain.id, {"protocolVersion": "1999-01-01"}))
    assert event == ResponseReceived(plain.id, {"protocolVersion": "1999-01-01"})
    assert core.initialize_result is None


# --- what the server asks -------------------------------------------------------------


def test_a_server_request_is_in_flight_until_answered() -> None:
    core = ClientSessionCore()
    [event] = core.receive({"jsonrpc": "2.0", "id": "s1", "method": "roots/list"})
    assert event == ServerRequestReceived(Request("s1", "roots/list"))
    assert core.serving() == {"s1"}
    assert core.respond("s1", {"roots": []}) == result("s1", {"roots": []})
    assert core.serving() == frozenset()
    with pytest.raises(LocalProtocolError, match="not in flight"):
        core.respond("s1", {})
    core.receive({"jsonrpc": "2.0", "id": 2, "method": "sampling/createMessage"})
    assert core.respond_error(2, -32601, "no", {"method": "x"}) == {
        "jsonrpc": "2.0",
        "id": 2,
        "error": {"code": -32601, "message": "no", "data": {"method": "x"}},
    }
    with pytest.raises(LocalProtocolError):
        core.abandon(2)


def test_a_reused_server_request_id_is_refused_by_the_core() -> None:
    core = ClientSessionCore()
    core.receive({"jsonrpc": "2.0", "id": 1, "method": "ping"})
    [event] = core.receive({"jsonrpc": "2.0", "id": 1, "method": "ping"})
    assert type(event) is Send
    assert (event.request_id, event.payload["id"]) == (1, 1)
    assert event.payload["error"]["code"] == -32600
    assert "already in use" in event.payload["error"]["message"]
    core.respond(1, {})
    [again] = core.receive({"jsonrpc": "2.0", "id": 1, "method": "ping"})
    assert type(again) is ServerRequestReceived  # free once answered


def test_server_requests_in_flight_are_bounded() -> None:
    core = ClientSessionCore(max_serving=1)
    core.receive({"jsonrpc": "2.0", "id": 1, "method": "ping"})
    [event] = core.receive({"jsonrpc": "2.0", "id": 2, "method": "ping"})
    assert type(event) is Send
    assert event.request_id == 2
    assert event.payload["error"]["code"] == -32603
    assert "limit 1" in event.payload["error"]["message"]
    assert core.serving() == {1}


def test_the_servers_cancellation_of_its_request() -> None:
    core = ClientSessionCore()
    core.receive({"jsonrpc": "2.0", "id": 5, "method": "elicitation/create"})
    cancelled = Notification("notifications/cancelled", {"requestId": 5, "reason": "x" * 5000})
    events = core.receive(cancelled.to_json())
    assert type(events[0]) is CancelRequested
    assert events[0].request_id == 5
    assert events[0].reason is not None
    assert len(events[0].reason) < 1000  # clipped
    assert events[1] == NotificationReceived(cancelled)
    # Unknown, finished or unusable ids: only logged.
    for request_id in (6, "5", [5], None):
        note = Notification("notifications/cancelled", {"requestId": request_id})
        assert core.receive(note.to_json()) == [NotificationReceived(note)]
    core.abandon(5)
    note = Notification("notifications/cancelled", {"requestId": 5})
    assert core.receive(note.to_json()) == [NotificationReceived(note)]


# --- what else arrives ----------------------------------------------------------------


def test_responses_and_errors_by_id() -> None:
    core = ClientSessionCore()
    first = core.send_request("tools/list")
    second = core.send_request("tools/call")
    error = {"jsonrpc": "2.0", "id": second.id, "error": {"code": 1, "message": "m", "data": 2}}
    assert core.receive(error) == [ErrorReceived(second.id, ErrorResponse(second.id, 1, "m", 2))]
    assert core.receive(result(first.id, {"tools": []})) == [
        ResponseReceived(first.id, {"tools": []})
    ]
    assert core.receive(result(first.id, {})) == [UnexpectedResponse(Response(first.id, {}))]


def test_an_error_without_an_id_is_unattributed() -> None:
    core = ClientSessionCore()
    core.send_request("ping")
    [event] = core.receive({"jsonrpc": "2.0", "error": {"code": -32700, "message": "bad"}})
    assert event == UnattributedError(ErrorResponse(None, -32700, "bad"))
    assert core.pending() == {1: "ping"}


def test_a_malformed_request_with_an_id_is_answered() -> None:
    core = ClientSessionCore()
    events = core.receive({"jsonrpc": "2.0", "id": 5, "method": "ping", "params": [1]})
    assert type(events[0]) is MalformedReceived
    assert events[0].error.code == -32602
    assert events[1] == Send(
        {"jsonrpc": "2.0", "id": 5, "error": {"code": -32602, "message": events[0].error.message}},
        5,
    )
    assert core.serving() == frozenset()
    # Without a readable id, or not a request: nothing to answer.
    for value in ({"jsonrpc": "1.0", "result": {}}, {"id": [1], "jsonrpc": "2.0", "result": {}}):
        [event] = core.receive(value)
        assert type(event) is MalformedReceived


def test_a_batch_from_the_server_is_taken_apart() -> None:
    core = ClientSessionCore()
    request = core.send_request("ping")
    events = core.receive(
        [result(request.id, {}), {"jsonrpc": "2.0", "id": "b", "method": "ping"}, [1], 7]
    )
    assert [type(event) for event in events] == [
        ResponseReceived,
        ServerRequestReceived,
        MalformedReceived,
        MalformedReceived,
    ]
    assert core.receive([]) == []


_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=8),
    lambda children: (
        st.lists(children, max_size=4)
        | st.dictionaries(
            st.sampled_from(["jsonrpc", "id", "method", "params", "result", "error", "x"]),
            children,
            max_size=5,
        )
    ),
    max_leaves=20,
)
_MESSAGE = st.fixed_dictionaries(
    {"jsonrpc": st.just("2.0")},
    optional={
        "id": st.one_of(st.integers(0, 3), st.sampled_from(["a", "b"]), _JSON),
        "method": st.sampled_from(["ping", "roots/list", "notifications/cancelled", "x"]) | _JSON,
        "params": _JSON,
        "result": _JSON,
        "error": st.fixed_dictionaries({"code": st.integers(), "message": st.text()}) | _JSON,
    },
)


@given(st.lists(_MESSAGE | _JSON, max_size=6))
def test_nothing_the_server_sends_raises_out_of_receive(values: list[Any]) -> None:
    core = ClientSessionCore(max_serving=4)
    for _ in range(3):
        core.send_request("ping", progress=True)
    for value in values:
        events: list[ClientEvent] = core.receive(value)
        for event in events:
            if type(event) is ServerRequestReceived:
                core.respond(event.request.id, {})
            elif type(event) is Send:
                assert isinstance(event.payload, dict)
                assert event.payload["error"]["code"] in (-32600, -32602, -32603)
    assert len(core.pending()) <= 3
