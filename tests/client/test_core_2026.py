"""The client core and its sans-io helpers at the revision without sessions, alone.

Plain synchronous code: the core builds each message (checked against the 2026-07-28
schema), and the server's answers are written by hand.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mcpactor._exceptions import LocalProtocolError, RemoteProtocolError, RequestError
from mcpactor.client._http_headers import encode_header_value, mirrored_params, request_headers
from mcpactor.client._rounds import (
    HeaderMismatch,
    MissingClientCapability,
    UnsupportedProtocolVersion,
    read_input_required,
    request_error,
    result_type,
    retry_params,
)
from mcpactor.protocol import REVISIONS, Notification
from mcpactor.protocol._client_session import (
    ClientPhase,
    ClientSessionCore,
    Discovered,
    DiscoverRefused,
    ErrorReceived,
    MalformedReceived,
    NotificationReceived,
    ResponseReceived,
    SubscriptionAcknowledged,
    SubscriptionCancelled,
    SubscriptionNotification,
)

from .client_schema import STATELESS, check_client_message

CAPABILITIES: dict[str, Any] = {"elicitation": {"form": {}}}
INFO = {"name": "tests", "version": "1.0"}
ENVELOPE = {
    "io.modelcontextprotocol/protocolVersion": STATELESS,
    "io.modelcontextprotocol/clientCapabilities": CAPABILITIES,
    "io.modelcontextprotocol/clientInfo": INFO,
}
ROW = REVISIONS[STATELESS]


def discover_result(versions: list[str]) -> dict[str, Any]:
    return {
        "resultType": "complete",
        "supportedVersions": versions,
        "capabilities": {"tools": {"listChanged": True}},
        "_meta": {"io.modelcontextprotocol/serverInfo": {"name": "srv", "version": "2"}},
    }


def answer(request_id: Any, result: dict[str, Any]) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request_id, "result": result}


def stateless_core() -> ClientSessionCore:
    core = ClientSessionCore()
    core.use_envelope(STATELESS, CAPABILITIES, INFO)
    return core


def notification(method: str, subscription: Any, **params: Any) -> dict[str, Any]:
    meta = {"io.modelcontextprotocol/subscriptionId": subscription}
    return {"jsonrpc": "2.0", "method": method, "params": {"_meta": meta, **params}}


# --- discovery -------------------------------------------------------------------------


def test_discover_carries_the_envelope_and_a_listed_revision_is_adopted() -> None:
    core = ClientSessionCore()
    request = core.discover(STATELESS, CAPABILITIES, INFO)
    check_client_message(request.to_json())
    assert request.method == "server/discover"
    assert request.params == {"_meta": ENVELOPE}
    assert core.envelope is None

    [event] = core.receive(answer(request.id, discover_result(["2025-11-25", STATELESS])))

    assert event == Discovered(request.id, discover_result(["2025-11-25", STATELESS]), ROW)
    assert core.stateless
    assert core.revision is ROW
    assert core.phase is ClientPhase.OPERATING
    assert core.server_info == {"name": "srv", "version": "2"}
    assert core.server_capabilities == {"tools": {"listChanged": True}}
    assert core.initialize_result is None
    assert core.pending() == {}


def test_a_discover_result_without_a_stateless_revision_of_ours_is_refused() -> None:
    core = ClientSessionCore()
    request = core.discover(STATELESS, CAPABILITIES, INFO)

    [event] = core.receive(answer(request.id, discover_result(["2025-11-25", "2099-01-01"])))

    assert isinstance(event, DiscoverRefused)
    assert event.error.data == {"supportedVersions": ["2025-11-25", "2099-01-01"]}
    assert not core.stateless
    assert core.revision is None
    assert core.discover_result is None


def test_an_error_to_discover_adopts_nothing() -> None:
    core = ClientSessionCore()
    request = core.discover(STATELESS, CAPABILITIES, INFO)
    error = {"jsonrpc": "2.0", "id": request.id, "error": {"code": -32601, "message": "no"}}

    [event] = core.receive(error)

    assert isinstance(event, ErrorReceived)
    assert event.error.code == -32601
    assert not core.stateless
    assert core.pending() == {}
    # A later initialize is judged as always.
    handshake = core.initialize("2025-11-25", {}, INFO)
    core.receive(answer(handshake.id, {"protocolVersion": "2025-11-25", "capabilities": {}}))
    assert core.revision is REVISIONS["2025-11-25"]
    assert not core.stateless


def test_use_envelope_refuses_a_session_revision() -> None:
    core = ClientSessionCore()
    with pytest.raises(LocalProtocolError, match="not a revision served request by request"):
        core.use_envelope("2025-11-25", {}, INFO)
    assert not core.stateless


# --- the envelope on every request -----------------------------------------------------


@pytest.mark.parametrize(
    ("method", "params"),
    [
        ("tools/list", None),
        ("tools/call", {"name": "echo", "arguments": {"text": "hi"}}),
        ("resources/read", {"uri": "memo://a"}),
        ("prompts/get", {"name": "p", "arguments": {"topic": "x"}}),
        ("resources/templates/list", {"cursor": "c1"}),
    ],
)
def test_every_request_carries_the_envelope(method: str, params: dict[str, Any] | None) -> None:
    core = stateless_core()
    request = core.send_request(method, params)
    check_client_message(request.to_json())
    assert request.params is not None
    assert request.params["_meta"] == ENVELOPE
    assert {k: v for k, v in request.params.items() if k != "_meta"} == (params or {})


def test_the_callers_own_meta_stays_beside_the_envelope() -> None:
    core = stateless_core()
    request = core.send_request("tools/call", {"name": "t", "arguments": {}}, progress=True)
    check_client_message(request.to_json())
    assert request.params is not None
    assert request.params["_meta"] == {**ENVELOPE, "progressToken": request.id}


def test_a_session_core_sends_no_envelope() -> None:
    core = ClientSessionCore()
    assert core.send_request("tools/list").params is None


def test_the_log_level_is_part_of_the_envelope() -> None:
    with pytest.raises(LocalProtocolError):
        ClientSessionCore().log_level = "info"
    core = stateless_core()
    core.log_level = "warning"
    request = core.send_request("tools/list")
    check_client_message(request.to_json())
    assert request.params is not None
    assert request.params["_meta"]["io.modelcontextprotocol/logLevel"] == "warning"
    core.log_level = None
    assert core.send_request("tools/list").params == {"_meta": ENVELOPE}


# --- subscriptions/listen --------------------------------------------------------------


def test_listen_needs_a_stateless_revision() -> None:
    with pytest.raises(LocalProtocolError, match="stateless"):
        ClientSessionCore().listen({"toolsListChanged": True})


def test_a_listen_stream_is_acknowledged_then_delivers_its_notifications() -> None:
    core = stateless_core()
    request = core.listen({"toolsListChanged": True, "resourceSubscriptions": ["memo://a"]})
    check_client_message(request.to_json())
    sid = request.id

    early = core.receive(notification("notifications/tools/list_changed", sid))
    assert [type(e) for e in early] == [MalformedReceived, NotificationReceived]

    ack = core.receive(
        notification(
            "notifications/subscriptions/acknowledged",
            sid,
            notifications={"toolsListChanged": True},
        )
    )
    assert ack[0] == SubscriptionAcknowledged(sid, {"toolsListChanged": True})
    assert type(ack[1]) is NotificationReceived
    # A second acknowledgment says nothing new.
    again = core.receive(notification("notifications/subscriptions/acknowledged", sid))
    assert [type(e) for e in again] == [NotificationReceived]

    changed = notification("notifications/tools/list_changed", sid)
    events = core.receive(changed)
    assert events[0] == SubscriptionNotification(
        sid, Notification("notifications/tools/list_changed", changed["params"])
    )
    # Another stream's notification is only logged.
    other = core.receive(notification("notifications/tools/list_changed", f"not-{sid}"))
    assert [type(e) for e in other] == [NotificationReceived]

    # The server's graceful end answers the request; the stream is gone after it.
    [end] = core.receive(answer(sid, {"resultType": "complete"}))
    assert end == ResponseReceived(sid, {"resultType": "complete"})
    late = core.receive(notification("notifications/tools/list_changed", sid))
    assert [type(e) for e in late] == [NotificationReceived]


def test_leaving_a_listen_stream_cancels_it_and_the_server_may_end_it() -> None:
    core = stateless_core()
    first = core.listen({"toolsListChanged": True})
    notice = core.cancel(first.id, "done")
    assert notice is not None
    check_client_message(notice.to_json())
    assert notice.params == {"requestId": first.id, "reason": "done"}
    assert core.pending() == {}

    second = core.listen({"promptsListChanged": True})
    ended = core.receive(
        {
            "jsonrpc": "2.0",
            "method": "notifications/cancelled",
            "params": {"requestId": second.id, "reason": "shutting down"},
        }
    )
    assert ended[0] == SubscriptionCancelled(second.id, "shutting down")
    assert core.pending() == {}


# --- results and rounds ----------------------------------------------------------------


def test_result_type_reads_the_field_and_defaults_to_complete() -> None:
    assert result_type({"resultType": "input_required"}) == "input_required"
    assert result_type({"resultType": "task"}) == "task"
    assert result_type({"content": []}) == "complete"


def test_read_input_required_takes_the_keyed_requests_and_the_state() -> None:
    asked = {
        "who": {
            "method": "elicitation/create",
            "params": {"mode": "form", "message": "Who?", "requestedSchema": {"type": "object"}},
        },
        "roots": {"method": "roots/list"},
    }
    found = read_input_required(
        {"resultType": "input_required", "inputRequests": asked, "requestState": "s1"}, ROW
    )
    assert found.input_requests == asked
    assert found.request_state == "s1"
    only_state = read_input_required({"resultType": "input_required", "requestState": "s"}, ROW)
    assert only_state.input_requests == {}
    assert only_state.request_state == "s"


@pytest.mark.parametrize(
    "result",
    [
        {"resultType": "input_required"},
        {"resultType": "input_required", "inputRequests": []},
        {"resultType": "input_required", "requestState": 7},
        {"resultType": "input_required", "inputRequests": {"k": {"method": "tools/call"}}},
        {"resultType": "input_required", "inputRequests": {"k": "roots/list"}},
        {"resultType": "input_required", "inputRequests": {"": {"method": "roots/list"}}},
        {
            "resultType": "input_required",
            "inputRequests": {"k": {"method": "roots/list", "params": [1]}},
        },
        {
            "resultType": "input_required",
            "inputRequests": {f"k{i}": {"method": "roots/list"} for i in range(65)},
        },
    ],
)
def test_a_malformed_input_required_result_is_refused(result: dict[str, Any]) -> None:
    with pytest.raises(RemoteProtocolError, match="malformed input_required"):
        read_input_required(result, ROW)


def test_retry_params_replace_the_last_rounds_answers_and_echo_the_state() -> None:
    original = {"name": "book", "arguments": {"table": "t"}}
    first = retry_params(original, {"k": {"action": "accept"}}, "s1")
    assert first == {
        **original,
        "inputResponses": {"k": {"action": "accept"}},
        "requestState": "s1",
    }
    # No state from the server: the retry carries none, and old rounds' keys are gone.
    second = retry_params(first, {}, None)
    assert second == original
    assert original == {"name": "book", "arguments": {"table": "t"}}


def test_the_stateless_errors_have_classes_of_their_own() -> None:
    mismatch = request_error(-32020, "Mcp-Name differs")
    assert type(mismatch) is HeaderMismatch
    missing = request_error(-32021, "needs", {"requiredCapabilities": {"elicitation": {}}})
    assert type(missing) is MissingClientCapability
    assert missing.required_capabilities == {"elicitation": {}}
    unsupported = request_error(-32022, "no", {"supported": ["2025-11-25"], "requested": "x"})
    assert type(unsupported) is UnsupportedProtocolVersion
    assert unsupported.supported == ["2025-11-25"]
    assert type(request_error(-32601, "no such method")) is RequestError
    assert request_error(-32022, "no", "garbage").supported == []  # type: ignore[attr-defined]


# --- HTTP headers ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "encoded"),
    [
        # The transports page's own examples.
        ("us-west1", "us-west1"),
        ("Hello, 世界", "=?base64?SGVsbG8sIOS4lueVjA==?="),
        (" padded ", "=?base64?IHBhZGRlZCA=?="),
        ("line1\nline2", "=?base64?bGluZTEKbGluZTI=?="),
        ("=?base64?literal?=", "=?base64?PT9iYXNlNjQ/bGl0ZXJhbD89?="),
        ("file:///projects/myapp/config.json", "file:///projects/myapp/config.json"),
    ],
)
def test_header_values_are_plain_or_base64(value: str, encoded: str) -> None:
    assert encode_header_value(value) == encoded


def test_mirrored_params_follow_properties_only() -> None:
    schema = {
        "type": "object",
        "properties": {
            "region": {"type": "string", "x-mcp-header": "Region"},
            "query": {"type": "string"},
            "where": {
                "type": "object",
                "properties": {"zone": {"type": "integer", "x-mcp-header": "Zone"}},
            },
            "many": {"type": "array", "items": {"x-mcp-header": "Nope"}},
        },
    }
    assert mirrored_params(schema) == {("region",): "Region", ("where", "zone"): "Zone"}
    assert mirrored_params(None) == {}
    assert mirrored_params({"properties": []}) == {}


def test_request_headers_name_the_method_the_target_and_the_mirrored_params() -> None:
    core = stateless_core()
    tools = {"q": {("region",): "Region", ("where", "zone"): "Zone", ("flag",): "Flag"}}
    call = core.send_request(
        "tools/call",
        {"name": "q", "arguments": {"region": "eu west", "where": {"zone": 3}, "flag": False}},
    )
    assert request_headers(call.to_json(), tools) == [
        ("mcp-protocol-version", STATELESS),
        ("mcp-method", "tools/call"),
        ("mcp-name", "q"),
        ("mcp-param-Region", "eu west"),
        ("mcp-param-Zone", "3"),
        ("mcp-param-Flag", "false"),
    ]
    # An absent value (or one of another type) has no header.
    partial = core.send_request("tools/call", {"name": "q", "arguments": {"region": ["x"]}})
    assert request_headers(partial.to_json(), tools)[2:] == [("mcp-name", "q")]
    read = core.send_request("resources/read", {"uri": "memo://ü"})
    assert request_headers(read.to_json(), tools)[1:] == [
        ("mcp-method", "resources/read"),
        ("mcp-name", encode_header_value("memo://ü")),
    ]
    assert request_headers(core.send_request("tools/list").to_json(), tools) == [
        ("mcp-protocol-version", STATELESS),
        ("mcp-method", "tools/list"),
    ]
    session = ClientSessionCore().send_request("tools/call", {"name": "q", "arguments": {}})
    assert request_headers(session.to_json(), tools) == []


# --- robustness ------------------------------------------------------------------------

_ANY = st.recursive(
    st.none() | st.booleans() | st.integers(0, 3) | st.text(max_size=6),
    lambda children: (
        st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=6), children, max_size=3)
    ),
    max_leaves=12,
)
_SUBSCRIPTION_META = st.fixed_dictionaries(
    {"io.modelcontextprotocol/subscriptionId": st.integers(1, 4) | _ANY}
)
_FROM_SERVER = st.fixed_dictionaries(
    {"jsonrpc": st.just("2.0")},
    optional={
        "id": st.integers(1, 4) | _ANY,
        "method": st.sampled_from(
            [
                "notifications/subscriptions/acknowledged",
                "notifications/tools/list_changed",
                "notifications/cancelled",
                "notifications/progress",
            ]
        )
        | _ANY,
        "params": st.fixed_dictionaries(
            {},
            optional={
                "_meta": _SUBSCRIPTION_META | _ANY,
                "notifications": _ANY,
                "requestId": st.integers(1, 4) | _ANY,
                "supportedVersions": st.lists(st.sampled_from([STATELESS, "2025-11-25"])) | _ANY,
            },
        )
        | _ANY,
        "result": st.fixed_dictionaries(
            {}, optional={"supportedVersions": st.just([STATELESS]) | _ANY, "_meta": _ANY}
        )
        | _ANY,
    },
)


@given(st.lists(_FROM_SERVER | _ANY, max_size=8))
def test_nothing_the_server_sends_raises_out_of_a_stateless_core(values: list[Any]) -> None:
    core = ClientSessionCore()
    core.discover(STATELESS, CAPABILITIES, INFO)  # id 1
    core.use_envelope(STATELESS, CAPABILITIES, INFO)
    core.listen({"toolsListChanged": True})  # id 2
    core.listen({"promptsListChanged": True})  # id 3
    core.send_request("tools/call", {"name": "t"}, progress=True)  # id 4
    acknowledged: set[Any] = set()
    for value in values:
        for event in core.receive(value):
            if type(event) is SubscriptionAcknowledged:
                # Once per stream, and only for a stream that is open.
                assert event.subscription_id not in acknowledged
                acknowledged.add(event.subscription_id)
            elif type(event) is SubscriptionNotification:
                assert event.subscription_id in acknowledged
                assert event.notification.method != "notifications/subscriptions/acknowledged"
    assert set(core.pending()) <= {1, 2, 3, 4}
