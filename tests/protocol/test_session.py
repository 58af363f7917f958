"""The server session machine: phases, handshake, ids, cancellation, batches, gates."""

from __future__ import annotations

import itertools
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mcpactor._exceptions import (
    INVALID_PARAMS,
    INVALID_REQUEST,
    METHOD_NOT_FOUND,
    CapabilityError,
    LocalProtocolError,
)
from mcpactor.protocol import (
    LOG_LEVELS,
    REVISIONS,
    CancelRequested,
    ErrorReceived,
    ErrorResponse,
    Exchange,
    Initialized,
    Negotiated,
    Notification,
    NotificationReceived,
    Phase,
    Request,
    ResponseReceived,
    RootsChanged,
    Send,
    ServerSession,
)
from tests.protocol.helpers import (
    SESSION_VERSIONS,
    UNBATCHED_VERSIONS,
    capabilities,
    exchange_of,
    feed,
    initialize,
    make_session,
    notification,
    only_send,
    request,
    server_info,
    session_in,
)
from tests.spec_schema import check, check_server_message

PHASES = list(Phase)


def error_code(payload: Any) -> int:
    assert "result" not in payload, payload
    return payload["error"]["code"]  # type: ignore[no-any-return]


# --- the table: (phase, incoming, expected) ---------------------------------------------
#
# Expected is one of
#   ("result", {...})       the machine answers with this result
#   ("error", code)         the machine answers with this error code, naming the id
#   (EventType, ...)        these events and nothing else
#   ()                      nothing at all

A = Phase.AWAITING_INITIALIZE
B = Phase.AWAITING_INITIALIZED
O = Phase.OPERATING  # noqa: E741
C = Phase.CLOSED

TABLE: list[tuple[Phase, Any, tuple[Any, ...]]] = [
    # before initialize: only initialize and ping are served
    (A, request(1, "ping"), ("result", {})),
    (A, request(1, "tools/list"), ("error", INVALID_REQUEST)),
    (A, request(1, "logging/setLevel", {"level": "debug"}), ("error", INVALID_REQUEST)),
    (A, request(1, "resources/read", {"uri": "x"}), ("error", INVALID_REQUEST)),
    # a name with control characters names no method, in any phase
    (A, request(1, "pi\x00ng"), ("error", METHOD_NOT_FOUND)),
    (B, request(1, "tools/list\n"), ("error", METHOD_NOT_FOUND)),
    (A, notification("notifications/initialized"), ()),
    (A, notification("notifications/roots/list_changed"), ()),
    (A, notification("notifications/whatever"), ()),
    (A, notification("notifications/cancelled", {"requestId": 1}), ()),
    (A, {"jsonrpc": "2.0", "id": 5, "result": {}}, ()),
    # initialized sent, initialized notification not yet: the client may already ask
    (B, request(1, "ping"), ("result", {})),
    (B, request(1, "tools/list"), (Exchange,)),
    (B, request(1, "logging/setLevel", {"level": "debug"}), ("result", {})),
    (B, initialize(1), ("error", INVALID_REQUEST)),
    (B, notification("notifications/initialized"), (Initialized,)),
    (B, notification("notifications/roots/list_changed"), (RootsChanged,)),
    (B, notification("notifications/whatever"), (NotificationReceived,)),
    (B, notification("notifications/cancelled", {"requestId": 99}), ()),
    # operating
    (O, request(1, "ping"), ("result", {})),
    (O, request(1, "ping", {"_meta": {"progressToken": 1}}), ("result", {})),
    (O, request(1, "tools/call", {"name": "t"}), (Exchange,)),
    (O, request("s", "no/such/method"), (Exchange,)),
    (O, request(1, "logging/setLevel", {"level": "error"}), ("result", {})),
    (O, request(1, "logging/setLevel", {"level": "loud"}), ("error", INVALID_PARAMS)),
    (O, initialize(1), ("error", INVALID_REQUEST)),
    (O, notification("notifications/initialized"), ()),
    (O, notification("notifications/roots/list_changed"), (RootsChanged,)),
    (
        O,
        notification("notifications/progress", {"progressToken": 1, "progress": 1}),
        (NotificationReceived,),
    ),
    (O, notification("notifications/cancelled", {"requestId": 1}), ()),
    (O, {"jsonrpc": "2.0", "id": 5, "result": {}}, ()),
    (O, {"jsonrpc": "2.0", "id": 5, "error": {"code": 1, "message": "m"}}, ()),
    (O, {"jsonrpc": "2.0", "error": {"code": 1, "message": "m"}}, ()),
    # closed: nothing is answered
    (C, request(1, "ping"), ()),
    (C, initialize(1), ()),
    (C, notification("notifications/initialized"), ()),
    (C, {"id": 1}, ()),
    (C, "garbage", ()),
]


def _table_id(row: tuple[Phase, Any, Any]) -> str:
    phase, message, _ = row
    return (
        f"{phase.name}-{message.get('method', 'response') if isinstance(message, dict) else 'x'}"
    )


@pytest.mark.parametrize("version", SESSION_VERSIONS)
@pytest.mark.parametrize(
    ("phase", "incoming", "expected"), TABLE, ids=[_table_id(row) for row in TABLE]
)
def test_phase_table(phase: Phase, incoming: Any, expected: tuple[Any, ...], version: str) -> None:
    session = session_in(phase, version)
    events = feed(session, incoming, version)
    if expected and expected[0] == "result":
        assert only_send(events) == {"jsonrpc": "2.0", "id": incoming["id"], "result": expected[1]}
    elif expected and expected[0] == "error":
        reply = only_send(events)
        assert reply["id"] == incoming["id"]
        assert error_code(reply) == expected[1]
    else:
        assert [type(event) for event in events] == list(expected)


@pytest.mark.parametrize("phase", PHASES)
@pytest.mark.parametrize(
    ("incoming", "request_id"),
    [
        ({"jsonrpc": "1.0", "id": 3, "method": "ping"}, 3),
        ({"jsonrpc": "2.0", "id": None, "method": "ping"}, None),
        ({"jsonrpc": "2.0", "id": 3, "method": "ping", "params": 1}, 3),
        ({"jsonrpc": "2.0", "id": 3, "result": 5}, 3),
        ({"jsonrpc": "2.0", "id": 3.5, "result": {}}, None),
        ("ping", None),
        (None, None),
    ],
)
def test_invalid_messages_get_32600_unless_closed(
    phase: Phase, incoming: Any, request_id: Any
) -> None:
    session = session_in(phase)
    before = session.phase
    events = feed(session, incoming, "2025-11-25")
    if phase is Phase.CLOSED:
        assert events == []
        return
    reply = only_send(events)
    assert error_code(reply) == INVALID_REQUEST
    assert reply.get("id") == request_id
    assert ("id" in reply) == (request_id is not None)
    assert session.phase is before


# --- initialize ------------------------------------------------------------------------


@pytest.mark.parametrize("version", SESSION_VERSIONS)
def test_initialize_echoes_each_supported_revision(version: str) -> None:
    session = make_session(instructions="Use the tools wisely.")
    events = feed(session, initialize(7, version, {"roots": {"listChanged": True}}), version)
    reply = only_send(events)
    revision = REVISIONS[version]
    assert reply == {
        "jsonrpc": "2.0",
        "id": 7,
        "result": {
            "protocolVersion": version,
            "capabilities": capabilities(revision),
            "serverInfo": server_info(revision),
            "instructions": "Use the tools wisely.",
        },
    }
    assert session.phase is Phase.AWAITING_INITIALIZED
    assert session.negotiated == Negotiated(
        revision, {"roots": {"listChanged": True}}, {"name": "test-client", "version": "0.1"}
    )
    assert session.server_capabilities == capabilities(revision)


@pytest.mark.parametrize("requested", ["2099-01-01", "2024-10-07", "2026-07-28", "latest"])
def test_initialize_unsupported_revision_gets_latest(requested: str) -> None:
    session = make_session()
    reply = only_send(feed(session, initialize(1, requested), "2025-11-25"))
    assert reply["result"]["protocolVersion"] == "2025-11-25"
    assert session.negotiated is not None
    assert session.negotiated.revision is REVISIONS["2025-11-25"]


def test_initialize_within_the_servers_supported_revisions() -> None:
    session = make_session(supported=("2025-03-26", "2025-06-18"))
    reply = only_send(feed(session, initialize(1, "2025-11-25"), "2025-06-18"))
    assert reply["result"]["protocolVersion"] == "2025-06-18"


def test_initialize_without_instructions_leaves_them_out() -> None:
    reply = only_send(make_session().receive(initialize(1)))
    assert "instructions" not in reply["result"]


def test_initialize_without_capabilities_or_client_info() -> None:
    session = make_session()
    only_send(session.receive(request(1, "initialize", {"protocolVersion": "2025-06-18"})))
    assert session.negotiated == Negotiated(REVISIONS["2025-06-18"], {}, None)


@pytest.mark.parametrize(
    ("params", "fragment"),
    [
        (None, "'protocolVersion'"),
        ({}, "'protocolVersion'"),
        ({"protocolVersion": 20250618}, "'protocolVersion'"),
        ({"protocolVersion": None, "capabilities": {}}, "'protocolVersion'"),
        ({"protocolVersion": "2025-06-18", "capabilities": []}, "'capabilities'"),
        ({"protocolVersion": "2025-06-18", "capabilities": "all"}, "'capabilities'"),
        ({"protocolVersion": "2025-06-18", "clientInfo": "me"}, "'clientInfo'"),
        ({"protocolVersion": "2025-06-18", "clientInfo": [1]}, "'clientInfo'"),
    ],
)
def test_initialize_bad_params_is_32602_and_changes_nothing(params: Any, fragment: str) -> None:
    session = make_session()
    reply = only_send(feed(session, request("i", "initialize", params), "2025-11-25"))
    assert reply["id"] == "i"
    assert error_code(reply) == INVALID_PARAMS
    assert fragment in reply["error"]["message"]
    assert session.phase is Phase.AWAITING_INITIALIZE
    assert session.negotiated is None
    # the client may try again
    reply = only_send(session.receive(initialize("again")))
    assert reply["result"]["protocolVersion"] == "2025-11-25"


def test_initialize_as_a_notification_is_ignored() -> None:
    session = make_session()
    assert session.receive(notification("initialize", {"protocolVersion": "2025-06-18"})) == []
    assert session.phase is Phase.AWAITING_INITIALIZE


def test_second_initialize_keeps_the_first_handshake() -> None:
    session = session_in(Phase.OPERATING, "2025-03-26")
    reply = only_send(session.receive(initialize(2, "2025-11-25")))
    assert error_code(reply) == INVALID_REQUEST
    assert session.phase is Phase.OPERATING
    assert session.negotiated is not None
    assert session.negotiated.revision.version == "2025-03-26"


def test_initialized_notification_moves_to_operating_once() -> None:
    session = session_in(Phase.AWAITING_INITIALIZED)
    assert session.receive(notification("notifications/initialized")) == [Initialized()]
    assert session.phase is Phase.OPERATING
    assert session.receive(notification("notifications/initialized")) == []
    assert session.phase is Phase.OPERATING


def test_requests_carry_the_negotiated_view() -> None:
    session = session_in(Phase.OPERATING, "2025-06-18", client_capabilities={"sampling": {}})
    (event,) = session.receive(request(1, "tools/list", {"cursor": "c"}))
    assert session.negotiated is not None
    assert type(event) is Exchange
    assert event.request == Request(1, "tools/list", {"cursor": "c"})
    assert event.negotiated is session.negotiated
    assert event.negotiated.revision.version == "2025-06-18"
    assert event.negotiated.client_has("sampling")


def test_notifications_are_passed_on_with_params() -> None:
    session = session_in(Phase.OPERATING)
    message = notification("notifications/custom", {"a": [1]})
    assert session.receive(message) == [
        NotificationReceived(Notification("notifications/custom", {"a": [1]}))
    ]


# --- ids in flight -----------------------------------------------------------------------


def test_duplicate_in_flight_id_refused_until_answered() -> None:
    session = session_in(Phase.OPERATING)
    events = session.receive(request(1, "tools/list"))
    assert [type(e) for e in events] == [Exchange]
    for again in (request(1, "tools/call", {"name": "x"}), request(1, "ping")):
        reply = only_send(feed(session, again, "2025-11-25"))
        assert reply["id"] == 1
        assert error_code(reply) == INVALID_REQUEST
        assert "already in flight" in reply["error"]["message"]
    assert list(session.in_flight()) == [1]
    # string "1" is a different id
    assert [type(e) for e in session.receive(request("1", "tools/list"))] == [Exchange]
    assert exchange_of(events, 1).respond({"tools": []}) == {
        "jsonrpc": "2.0",
        "id": 1,
        "result": {"tools": []},
    }
    assert list(session.in_flight()) == ["1"]
    assert [type(e) for e in session.receive(request(1, "tools/list"))] == [Exchange]


@pytest.mark.parametrize("version", SESSION_VERSIONS)
def test_respond_error_wire_form(version: str) -> None:
    session = session_in(Phase.OPERATING, version)
    events = session.receive(request("r", "tools/call", {"name": "x"}))
    reply = exchange_of(events, "r").respond_error(-32602, "bad arguments", {"errors": ["$.a"]})
    assert reply == {
        "jsonrpc": "2.0",
        "id": "r",
        "error": {"code": -32602, "message": "bad arguments", "data": {"errors": ["$.a"]}},
    }
    check_server_message(reply, version)
    events = session.receive(request("s", "tools/call", {"name": "x"}))
    reply = exchange_of(events, "s").respond_error(-32603, "boom")
    assert reply == {"jsonrpc": "2.0", "id": "s", "error": {"code": -32603, "message": "boom"}}


def test_abandon_answers_nothing() -> None:
    session = session_in(Phase.OPERATING)
    events = session.receive(request(1, "tools/list"))
    assert exchange_of(events, 1).abandon() is None
    assert list(session.in_flight()) == []


FINISHES = [
    lambda exchange: exchange.respond({}),
    lambda exchange: exchange.respond_error(-1, "m"),
    lambda exchange: exchange.abandon(),
]
FINISH_IDS = ["respond", "respond_error", "abandon"]


@pytest.mark.parametrize("again", FINISHES, ids=FINISH_IDS)
@pytest.mark.parametrize("first", FINISHES, ids=FINISH_IDS)
def test_finishing_an_exchange_twice_is_a_local_error(first: Any, again: Any) -> None:
    # An id that was never received cannot be answered at all: only an Exchange answers,
    # and the session makes one only for a request it hands on (never for ping,
    # initialize or setLevel, which it answers itself). What is left to refuse is a
    # second answer through the same exchange.
    session = session_in(Phase.OPERATING)
    exchange = exchange_of(session.receive(request(3, "tools/list")), 3)
    first(exchange)
    assert list(session.in_flight()) == []
    with pytest.raises(LocalProtocolError, match="not in flight"):
        again(exchange)
    assert list(session.in_flight()) == []


def test_an_answered_exchange_stays_answered_when_its_id_comes_back() -> None:
    # The peer may reuse an id once its request is answered: the old exchange must not
    # answer the new request.
    session = session_in(Phase.OPERATING)
    old = exchange_of(session.receive(request(3, "tools/list")), 3)
    assert old.respond({"tools": []}) is not None
    new = exchange_of(session.receive(request(3, "tools/list")), 3)
    with pytest.raises(LocalProtocolError, match="already answered"):
        old.respond({"tools": []})
    assert list(session.in_flight()) == [3]
    assert new.respond({"tools": []}) == {"jsonrpc": "2.0", "id": 3, "result": {"tools": []}}
    assert list(session.in_flight()) == []


def test_the_machines_own_answers_hand_on_no_exchange() -> None:
    # ping, initialize and setLevel are answered by the machine: never in flight, so
    # there is nothing the owner could answer them through.
    session = make_session()
    for value in (
        initialize("init"),
        request(2, "ping"),
        request(3, "logging/setLevel", {"level": "debug"}),
    ):
        only_send(session.receive(value))
        assert list(session.in_flight()) == []


def test_an_exchange_without_a_session_builds_the_plain_messages() -> None:
    # As the 2026-07-28 envelope reader makes it for a stateless request: no session
    # counts it, so each answer is the message itself and abandoning writes nothing.
    negotiated = Negotiated(REVISIONS["2025-11-25"], {}, None)
    exchange = Exchange(Request("q", "tools/call", {"name": "t"}), negotiated)
    assert exchange.negotiated is negotiated
    assert exchange.respond({"content": []}) == {
        "jsonrpc": "2.0",
        "id": "q",
        "result": {"content": []},
    }
    assert exchange.respond_error(-32602, "bad arguments", {"errors": ["$.a"]}) == {
        "jsonrpc": "2.0",
        "id": "q",
        "error": {"code": -32602, "message": "bad arguments", "data": {"errors": ["$.a"]}},
    }
    assert exchange.respond_error(-32603, "boom") == {
        "jsonrpc": "2.0",
        "id": "q",
        "error": {"code": -32603, "message": "boom"},
    }
    assert exchange.abandon() is None
    numbered = Exchange(Request(7, "tools/list", None), negotiated)
    assert numbered.respond({"tools": []}) == {"jsonrpc": "2.0", "id": 7, "result": {"tools": []}}


# --- cancellation ------------------------------------------------------------------------


def test_cancel_in_flight_request() -> None:
    session = session_in(Phase.OPERATING)
    session.receive(request("a", "tools/call", {"name": "slow"}))
    session.receive(request(2, "tools/call", {"name": "slow"}))
    cancel = notification("notifications/cancelled", {"requestId": "a", "reason": "user"})
    assert session.receive(cancel) == [CancelRequested("a", "user")]
    cancel = notification("notifications/cancelled", {"requestId": 2})
    assert session.receive(cancel) == [CancelRequested(2, None)]
    # still in flight until the owner answers or abandons it
    assert set(session.in_flight()) == {"a", 2}


@pytest.mark.parametrize(
    "params",
    [
        None,
        {},
        {"requestId": 404},
        {"requestId": "1"},
        {"requestId": True},
        {"requestId": 1.0},
        {"requestId": None},
        {"requestId": [1]},
        {"requestId": {"id": 1}},
    ],
)
def test_cancel_of_unknown_or_unreadable_id_does_nothing(params: Any) -> None:
    session = session_in(Phase.OPERATING)
    session.receive(request(1, "tools/call", {"name": "slow"}))
    assert session.receive(notification("notifications/cancelled", params)) == []
    assert list(session.in_flight()) == [1]


def test_cancel_reason_that_is_not_a_string_is_dropped() -> None:
    session = session_in(Phase.OPERATING)
    session.receive(request(1, "tools/call", {"name": "slow"}))
    cancel = notification("notifications/cancelled", {"requestId": 1, "reason": {"why": 1}})
    assert session.receive(cancel) == [CancelRequested(1, None)]


def test_cancel_reason_is_clipped() -> None:
    session = session_in(Phase.OPERATING)
    session.receive(request(1, "tools/call", {"name": "slow"}))
    cancel = notification("notifications/cancelled", {"requestId": 1, "reason": "r" * 100_000})
    assert session.receive(cancel) == [CancelRequested(1, "r" * 499 + "…")]


def test_cancel_of_finished_request_does_nothing() -> None:
    session = session_in(Phase.OPERATING)
    events = session.receive(request(1, "tools/list"))
    exchange_of(events, 1).respond({"tools": []})
    assert session.receive(notification("notifications/cancelled", {"requestId": 1})) == []


def test_initialize_cannot_be_cancelled() -> None:
    session = make_session()
    only_send(session.receive(initialize("init")))
    assert session.receive(notification("notifications/cancelled", {"requestId": "init"})) == []
    assert session.phase is Phase.AWAITING_INITIALIZED


# --- batches -------------------------------------------------------------------------


def test_batch_before_initialize_is_refused() -> None:
    session = make_session()
    reply = only_send(feed(session, [initialize(1)], "2025-11-25"))
    assert reply == {
        "jsonrpc": "2.0",
        "error": {"code": INVALID_REQUEST, "message": "batches are not allowed before initialize"},
    }
    assert session.phase is Phase.AWAITING_INITIALIZE


@pytest.mark.parametrize("version", UNBATCHED_VERSIONS)
@pytest.mark.parametrize("phase", [Phase.AWAITING_INITIALIZED, Phase.OPERATING])
def test_batch_refused_where_the_revision_has_none(version: str, phase: Phase) -> None:
    session = session_in(phase, version)
    reply = only_send(feed(session, [request(1, "ping"), request(2, "tools/list")], version))
    assert "id" not in reply
    assert error_code(reply) == INVALID_REQUEST
    assert version in reply["error"]["message"]
    assert list(session.in_flight()) == []


def batch_session(phase: Phase = Phase.OPERATING) -> ServerSession:
    return session_in(phase, "2025-03-26")


def check_batch_reply(reply: Any) -> None:
    check_server_message(reply, "2025-03-26")
    # 2025-03-26 has no form for an error whose id could not be read (see spec_schema);
    # everything else must make a valid batch response of that revision.
    check([item for item in reply if "id" in item], "2025-03-26", "JSONRPCBatchResponse")


def test_empty_batch_is_refused() -> None:
    reply = only_send(feed(batch_session(), [], "2025-03-26"))
    assert error_code(reply) == INVALID_REQUEST
    assert "id" not in reply


def test_batch_replies_collected_into_one_array() -> None:
    session = batch_session()
    events = feed(
        session,
        [
            request(1, "tools/list"),
            request(2, "ping"),
            notification("notifications/progress", {"progressToken": 1, "progress": 1}),
            request(3, "tools/call", {"name": "x"}),
            {"jsonrpc": "2.0", "id": 4, "method": 5},
        ],
        "2025-03-26",
    )
    # the machine's own replies wait for the batch's last answer
    assert [type(e) for e in events] == [Exchange, NotificationReceived, Exchange]
    assert exchange_of(events, 3).respond({"content": []}) is None
    reply = exchange_of(events, 1).respond_error(-32603, "boom")
    assert reply is not None
    assert reply == [
        {"jsonrpc": "2.0", "id": 2, "result": {}},
        {
            "jsonrpc": "2.0",
            "id": 4,
            "error": {"code": INVALID_REQUEST, "message": reply[1]["error"]["message"]},
        },
        {"jsonrpc": "2.0", "id": 3, "result": {"content": []}},
        {"jsonrpc": "2.0", "id": 1, "error": {"code": -32603, "message": "boom"}},
    ]
    check_batch_reply(reply)
    assert list(session.in_flight()) == []


@given(st.permutations(range(5)))
def test_batch_completes_in_any_order(order: list[int]) -> None:
    session = batch_session()
    events = session.receive([request(i, "tools/call", {"name": str(i)}) for i in range(5)])
    assert [e.request.id for e in events if isinstance(e, Exchange)] == list(range(5))
    for i in order[:-1]:
        assert exchange_of(events, i).respond({"n": i}) is None
    reply = exchange_of(events, order[-1]).respond({"n": order[-1]})
    assert reply == [{"jsonrpc": "2.0", "id": i, "result": {"n": i}} for i in order]


def test_batch_that_answers_itself_is_sent_at_once() -> None:
    session = batch_session()
    reply = only_send(
        feed(
            session,
            [request(1, "ping"), request(2, "logging/setLevel", {"level": "debug"}), 7],
            "2025-03-26",
        )
    )
    assert reply[:2] == [
        {"jsonrpc": "2.0", "id": 1, "result": {}},
        {"jsonrpc": "2.0", "id": 2, "result": {}},
    ]
    assert error_code(reply[2]) == INVALID_REQUEST
    assert "id" not in reply[2]
    assert session.log_level == "debug"
    check_batch_reply(reply)


def test_initialize_inside_a_batch_is_refused() -> None:
    session = batch_session(Phase.AWAITING_INITIALIZED)
    reply = only_send(
        feed(session, [initialize(5, "2025-03-26"), request(6, "ping")], "2025-03-26")
    )
    assert reply[0]["id"] == 5
    assert error_code(reply[0]) == INVALID_REQUEST
    assert "batch" in reply[0]["error"]["message"]
    assert reply[1] == {"jsonrpc": "2.0", "id": 6, "result": {}}
    assert session.phase is Phase.AWAITING_INITIALIZED
    # an initialize with an unreadable id is refused without one
    reply = only_send(session.receive([{**initialize(), "id": None}]))
    assert "id" not in reply[0]


def test_all_notification_batch_gets_no_reply() -> None:
    session = batch_session(Phase.AWAITING_INITIALIZED)
    session.receive(request(9, "tools/call", {"name": "slow"}))
    events = session.receive(
        [
            notification("notifications/initialized"),
            notification("notifications/cancelled", {"requestId": 9}),
            notification("notifications/roots/list_changed"),
        ]
    )
    assert events == [Initialized(), CancelRequested(9, None), RootsChanged()]
    assert session.phase is Phase.OPERATING


def test_batch_of_responses_gets_no_reply() -> None:
    session = batch_session()
    outgoing = session.send_request("ping")
    events = session.receive([{"jsonrpc": "2.0", "id": outgoing.id, "result": {}}])
    assert events == [ResponseReceived(outgoing.id, {})]


def test_abandon_inside_a_batch() -> None:
    session = batch_session()
    events = session.receive([request(1, "tools/call", {"name": "a"}), request(2, "tools/list")])
    assert exchange_of(events, 1).abandon() is None
    assert exchange_of(events, 2).respond({"tools": []}) == [
        {"jsonrpc": "2.0", "id": 2, "result": {"tools": []}}
    ]


def test_batch_of_abandoned_requests_gets_no_reply() -> None:
    session = batch_session()
    events = session.receive([request(1, "tools/call", {"name": "a"}), request(2, "tools/list")])
    assert exchange_of(events, 2).abandon() is None
    assert exchange_of(events, 1).abandon() is None
    assert list(session.in_flight()) == []


def test_abandoned_request_keeps_the_batchs_other_replies() -> None:
    session = batch_session()
    events = session.receive([request(1, "tools/call", {"name": "a"}), request(2, "ping")])
    assert exchange_of(events, 1).abandon() == [{"jsonrpc": "2.0", "id": 2, "result": {}}]


def test_batch_duplicate_ids_refused_inside_the_batch() -> None:
    session = batch_session()
    events = session.receive([request(1, "tools/list"), request(1, "tools/list")])
    assert [type(e) for e in events] == [Exchange]
    reply = exchange_of(events, 1).respond({"tools": []})
    assert reply is not None
    assert error_code(reply[0]) == INVALID_REQUEST
    assert reply[1]["result"] == {"tools": []}


def test_nested_batch_item_is_invalid() -> None:
    session = batch_session()
    reply = only_send(session.receive([[request(1, "ping")]]))
    assert error_code(reply[0]) == INVALID_REQUEST


def test_two_batches_complete_independently() -> None:
    session = batch_session()
    first = session.receive([request(1, "tools/list"), request(2, "tools/list")])
    second = session.receive([request(3, "tools/list")])
    assert exchange_of(second, 3).respond({"tools": []}) == [
        {"jsonrpc": "2.0", "id": 3, "result": {"tools": []}}
    ]
    assert exchange_of(first, 1).respond({"tools": []}) is None
    reply = exchange_of(first, 2).respond({"tools": []})
    assert reply is not None
    assert [r["id"] for r in reply] == [1, 2]


# --- logging ---------------------------------------------------------------------------


@pytest.mark.parametrize("level", LOG_LEVELS)
def test_set_level_filters_log_enabled(level: str) -> None:
    session = session_in(Phase.OPERATING)
    reply = only_send(
        feed(session, request(1, "logging/setLevel", {"level": level}), "2025-11-25")
    )
    assert reply == {"jsonrpc": "2.0", "id": 1, "result": {}}
    assert session.log_level == level
    rank = LOG_LEVELS.index(level)
    assert [session.log_enabled(other) for other in LOG_LEVELS] == [
        i >= rank for i in range(len(LOG_LEVELS))
    ]


def test_default_log_level_is_info() -> None:
    session = make_session()
    assert session.log_level == "info"
    assert not session.log_enabled("debug")
    assert session.log_enabled("info")
    assert session.log_enabled("emergency")
    assert make_session(log_level="error").log_enabled("warning") is False


@pytest.mark.parametrize(
    "params", [None, {}, {"level": "verbose"}, {"level": "INFO"}, {"level": 3}, {"level": []}]
)
def test_set_level_invalid_is_32602(params: Any) -> None:
    session = session_in(Phase.OPERATING)
    reply = only_send(feed(session, request(1, "logging/setLevel", params), "2025-11-25"))
    assert error_code(reply) == INVALID_PARAMS
    assert reply["error"]["data"] == {"expected": list(LOG_LEVELS)}
    assert session.log_level == "info"


def test_set_level_without_logging_capability_goes_to_the_owner() -> None:
    session = session_in(Phase.OPERATING, capabilities=lambda revision: {"tools": {}})
    (event,) = session.receive(request(1, "logging/setLevel", {"level": "debug"}))
    assert isinstance(event, Exchange)
    assert session.log_level == "info"


# --- what we send ------------------------------------------------------------------------

GATED = [
    ("sampling/createMessage", "sampling"),
    ("elicitation/create", "elicitation"),
    ("roots/list", "roots"),
]


@pytest.mark.parametrize(("method", "capability"), GATED)
@pytest.mark.parametrize("declared", [None, {}, {"experimental": {}}, {"sampling_": {}}])
def test_send_request_needs_the_client_capability(
    method: str, capability: str, declared: Any
) -> None:
    session = session_in(Phase.OPERATING, client_capabilities=declared)
    with pytest.raises(CapabilityError) as info:
        session.send_request(method, {})
    assert isinstance(info.value, LocalProtocolError)
    assert info.value.data == {"requiredCapabilities": {capability: {}}}
    assert capability in info.value.message


@pytest.mark.parametrize(("method", "capability"), GATED)
@pytest.mark.parametrize("value", [False, None])
def test_capability_declared_false_or_null_is_not_declared(
    method: str, capability: str, value: Any
) -> None:
    session = session_in(Phase.OPERATING, client_capabilities={capability: value})
    with pytest.raises(CapabilityError):
        session.send_request(method)


@pytest.mark.parametrize(("method", "capability"), GATED)
def test_send_request_with_the_capability(method: str, capability: str) -> None:
    session = session_in(Phase.OPERATING, client_capabilities={capability: {}})
    first = session.send_request(method, {"a": 1})
    second = session.send_request("ping")
    assert first == Request(first.id, method, {"a": 1})
    assert second.id != first.id


@pytest.mark.parametrize("version", SESSION_VERSIONS)
def test_outgoing_requests_validate(version: str) -> None:
    session = session_in(Phase.OPERATING, version, client_capabilities={"roots": {}})
    check_server_message(session.send_request("ping").to_json(), version)
    check_server_message(session.send_request("roots/list").to_json(), version)


@pytest.mark.parametrize("phase", [Phase.AWAITING_INITIALIZE, Phase.AWAITING_INITIALIZED])
def test_only_ping_before_initialized(phase: Phase) -> None:
    everything: dict[str, Any] = {"sampling": {}, "elicitation": {}, "roots": {}}
    session = session_in(phase, client_capabilities=everything)
    assert session.send_request("ping").method == "ping"
    for method, _ in GATED:
        with pytest.raises(LocalProtocolError, match=phase.value) as info:
            session.send_request(method)
        assert not isinstance(info.value, CapabilityError)


def test_nothing_is_sent_once_closed() -> None:
    session = session_in(Phase.CLOSED)
    with pytest.raises(LocalProtocolError, match="closed"):
        session.send_request("ping")


def test_responses_to_our_requests() -> None:
    session = session_in(Phase.OPERATING, client_capabilities={"roots": {}})
    roots = session.send_request("roots/list")
    ping = session.send_request("ping")
    assert session.receive({"jsonrpc": "2.0", "id": roots.id, "result": {"roots": []}}) == [
        ResponseReceived(roots.id, {"roots": []})
    ]
    error = {"jsonrpc": "2.0", "id": ping.id, "error": {"code": -1, "message": "no", "data": 2}}
    assert session.receive(error) == [ErrorReceived(ping.id, ErrorResponse(ping.id, -1, "no", 2))]
    # each answer is taken once
    assert session.receive({"jsonrpc": "2.0", "id": roots.id, "result": {"roots": []}}) == []
    assert session.receive(error) == []


@pytest.mark.parametrize(
    "answer",
    [
        {"jsonrpc": "2.0", "id": 12345, "result": {}},
        {"jsonrpc": "2.0", "id": "1", "result": {}},
        {"jsonrpc": "2.0", "id": 12345, "error": {"code": 1, "message": "m"}},
        {"jsonrpc": "2.0", "id": None, "error": {"code": 1, "message": "m"}},
        {"jsonrpc": "2.0", "error": {"code": 1, "message": "m"}},
    ],
)
def test_answers_to_unknown_ids_are_ignored(answer: Any) -> None:
    session = session_in(Phase.OPERATING)
    request_id = session.send_request("ping").id
    assert request_id == 1
    assert session.receive(answer) == []
    # our request is still waiting
    assert session.receive({"jsonrpc": "2.0", "id": 1, "result": {}}) == [ResponseReceived(1, {})]


def test_forget_outgoing_drops_the_late_answer() -> None:
    session = session_in(Phase.OPERATING)
    request_id = session.send_request("ping").id
    session.forget_outgoing(request_id)
    session.forget_outgoing(request_id)  # idempotent
    assert session.receive({"jsonrpc": "2.0", "id": request_id, "result": {}}) == []


def test_outgoing_ids_are_unique() -> None:
    session = session_in(Phase.OPERATING)
    ids = [session.send_request("ping").id for _ in range(50)]
    assert len(set(ids)) == 50


MAY_NOTIFY = {
    Phase.AWAITING_INITIALIZE: {"notifications/message"},
    Phase.AWAITING_INITIALIZED: {"notifications/message", "notifications/progress"},
    Phase.OPERATING: {
        "notifications/message",
        "notifications/progress",
        "notifications/tools/list_changed",
        "notifications/resources/updated",
        "notifications/cancelled",
    },
    Phase.CLOSED: set(),
}


@pytest.mark.parametrize("phase", PHASES)
def test_may_notify_by_phase(phase: Phase) -> None:
    session = session_in(phase)
    candidates = set().union(*MAY_NOTIFY.values())
    assert {m for m in candidates if session.may_notify(m)} == MAY_NOTIFY[phase]


# --- closing -----------------------------------------------------------------------------


def test_closed_session_ignores_everything_but_can_still_finish() -> None:
    session = session_in(Phase.OPERATING, "2025-03-26")
    events = session.receive(request(1, "tools/list"))
    outgoing = session.send_request("ping")
    session.close()
    assert session.phase is Phase.CLOSED
    value: Any
    for value in (
        request(2, "ping"),
        [request(3, "ping")],
        {"jsonrpc": "2.0", "id": outgoing.id, "result": {}},
        notification("notifications/cancelled", {"requestId": 1}),
        b"not even json",
    ):
        assert session.receive(value) == []
    # the owner may still wind down what was in flight
    assert exchange_of(events, 1).abandon() is None


# --- every reply the machine makes is valid at every revision -------------------------

SELF_ANSWERED = [
    request(1, "ping"),
    request("x", "ping", {"_meta": {"progressToken": "t"}}),
    request(2, "logging/setLevel", {"level": "warning"}),
    request(3, "logging/setLevel", {"level": "nope"}),
    request(4, "logging/setLevel", {"level": {"a": 1}}),
    initialize(5),
    request(6, "initialize", {"protocolVersion": 1}),
    {"jsonrpc": "2.0", "id": 7, "method": "ping", "params": "x"},
    {"jsonrpc": "2.0", "id": [7], "method": "ping"},
    {"jsonrpc": "2.0", "id": 8, "result": 1},
    {"jsonrpc": "2.0", "id": 9, "error": {}},
    {"jsonrpc": "2.0"},
    [request(10, "ping")],
    [],
    42,
]


@pytest.mark.parametrize("version", SESSION_VERSIONS)
@pytest.mark.parametrize(("phase", "incoming"), list(itertools.product(PHASES[:3], SELF_ANSWERED)))
def test_every_machine_reply_validates(version: str, phase: Phase, incoming: Any) -> None:
    session = session_in(phase, version)
    events = feed(session, incoming, version)
    assert any(type(event) is Send for event in events)


# --- adopting a revision without a handshake (stateless HTTP) ---------------------------


@pytest.mark.parametrize("version", SESSION_VERSIONS)
def test_an_adopted_revision_serves_requests_at_once(version: str) -> None:
    session = make_session()
    negotiated = session.adopt(version, {"name": "c", "version": "0"})
    assert session.phase is Phase.OPERATING
    assert negotiated == session.negotiated
    assert negotiated.revision is REVISIONS[version]
    assert negotiated.client_capabilities == {}
    assert session.server_capabilities == capabilities(REVISIONS[version])
    (event,) = feed(session, request(7, "tools/list"), version)
    assert isinstance(event, Exchange)
    assert event.negotiated is negotiated


def test_adopting_needs_a_session_that_has_not_started() -> None:
    initialized = session_in(Phase.OPERATING)
    with pytest.raises(LocalProtocolError, match="cannot adopt"):
        initialized.adopt("2025-11-25")
    adopted = make_session()
    adopted.adopt("2025-11-25")
    with pytest.raises(LocalProtocolError, match="cannot adopt"):
        adopted.adopt("2025-06-18")
    # And a handshake cannot change the revision afterwards.
    reply = only_send(feed(adopted, initialize(1, "2025-06-18"), "2025-11-25"))
    assert error_code(reply) == INVALID_REQUEST
    assert adopted.negotiated is not None
    assert adopted.negotiated.revision.version == "2025-11-25"
