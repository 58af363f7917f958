"""Attack probe: absurd JSON, batches, ids, cancellations and progress tokens, on the wire.

The framer's verdicts have their own sans-io tests (tests/protocol/test_framing.py);
here the same kinds of body travel the whole stack of both HTTP servers into a live
session, and each case checks the answer's status and JSON-RPC code, that every id is
answered exactly once, and that the session (and a bystander's) still serves.
"""

from __future__ import annotations

import pytest
import trio

from ._probe import (
    Reply,
    Served,
    answer,
    call_tool,
    holding,
    open_session,
    ping,
    post,
    sse_messages,
    tool_text,
)

OLD = "2025-03-26"
V_OLD = {"MCP-Protocol-Version": OLD}


def _request(request_id: object, method: str = "ping", **params: object) -> dict[str, object]:
    message: dict[str, object] = {"jsonrpc": "2.0", "id": request_id, "method": method}
    if params:
        message["params"] = params
    return message


def _ids(reply: Reply) -> list[object]:
    messages = sse_messages(reply)
    assert len(messages) == 1, reply.body[:300]
    assert type(messages[0]) is list, reply.body[:300]
    return [item.get("id") for item in messages[0]]


# --- bodies that are not JSON, or not JSON-RPC --------------------------------------------


@pytest.mark.parametrize(
    "body",
    [
        pytest.param(b'{"jsonrpc":"2.0","id":1,"method":"\\ud800"}', id="lone-surrogate"),
        pytest.param(b'\xef\xbb\xbf{"jsonrpc":"2.0","id":1,"method":"ping"}', id="bom"),
        pytest.param(b'{"jsonrpc":"2.0","id":1,"method":"pi\x00ng"}', id="raw-nul"),
        pytest.param(b'{"jsonrpc":"2.0","id":1,"method":"\xff\xfe"}', id="invalid-utf8"),
        pytest.param(b'{"jsonrpc":"2.0","id":1e400,"method":"ping"}', id="overflowing-number"),
        pytest.param(b'{"jsonrpc":"2.0","id":NaN,"method":"ping"}', id="nan"),
        pytest.param(b"[" * 100_000 + b"]" * 100_000, id="nested-100000-deep"),
        pytest.param(b'{"a":' * 50_000 + b"1" + b"}" * 50_000, id="objects-50000-deep"),
        pytest.param(b'{"jsonrpc":"2.0","id":1,"method":"ping"}{}', id="two-values"),
        pytest.param(b"", id="empty"),
    ],
)
async def test_bodies_that_are_not_json_are_parse_errors(served: Served, body: bytes) -> None:
    session = await open_session(served)
    reply = await post(served, body, session)
    assert reply.status == 400, reply.body[:300]
    assert reply.error_code == -32700, reply.body[:300]
    assert len(reply.body) < 2000
    await ping(served, session)


@pytest.mark.parametrize(
    "body",
    [
        pytest.param(
            b'{"jsonrpc":"2.0","id":18446744073709551617,"method":"ping"}', id="id-2**64+1"
        ),
        pytest.param(b'{"jsonrpc":"2.0","id":1.5,"method":"ping"}', id="id-float"),
        pytest.param(b'{"jsonrpc":"2.0","id":null,"method":"ping"}', id="id-null"),
        pytest.param(b'{"jsonrpc":"2.0","id":{"a":1},"method":"ping"}', id="id-object"),
        pytest.param(b'{"jsonrpc":"2.0","id":[1],"method":"ping"}', id="id-array"),
        pytest.param(b'{"jsonrpc":"1.0","id":1,"method":"ping"}', id="jsonrpc-1.0"),
        pytest.param(b'{"jsonrpc":"2.0","id":1,"method":7}', id="method-number"),
        pytest.param(b'"ping"', id="a-string"),
        pytest.param(b"null", id="null"),
    ],
)
async def test_json_that_is_not_a_message_is_an_invalid_request(
    served: Served, body: bytes
) -> None:
    session = await open_session(served)
    reply = await post(served, body, session)
    assert reply.status == 400, reply.body[:300]
    assert reply.error_code == -32600, reply.body[:300]
    await ping(served, session)


async def test_duplicate_keys_are_read_as_the_last_says(served: Served) -> None:
    # As Python's json and JavaScript's JSON.parse read them: a proxy that checks the
    # method and this server agree on which one it is.
    session = await open_session(served)
    body = b'{"jsonrpc":"2.0","id":1,"method":"tools/call","method":"ping","id":2}'
    reply = await post(served, body, session)
    assert answer(reply, 2) == {"jsonrpc": "2.0", "id": 2, "result": {}}


async def test_nul_and_separators_in_a_string_id_come_back_exactly(served: Served) -> None:
    session = await open_session(served)
    request_id = "a\x00b\u2028c\r\nd"
    reply = await post(served, _request(request_id), session)
    assert answer(reply, request_id)["result"] == {}


async def test_a_method_name_of_control_characters_is_not_found_and_quoted(
    served: Served,
) -> None:
    session = await open_session(served)
    reply = await post(served, _request(1, "tools/list\r\n\x1b[2J" + "x" * 100_000), session)
    error = answer(reply, 1)["error"]
    assert error["code"] == -32601
    assert len(error["message"]) < 1000
    assert "\x1b" not in error["message"]
    assert "\n" not in error["message"]


# --- batches -----------------------------------------------------------------------------


async def test_batches_are_refused_after_2025_03_26(served: Served) -> None:
    session = await open_session(served)
    reply = await post(served, [_request(1), _request(2)], session)
    assert reply.status == 400
    assert reply.error_code == -32600
    assert "batch" in reply.error_message


async def test_a_batch_before_initialize_is_refused(served: Served) -> None:
    reply = await post(served, [_request(1)], None, **V_OLD)
    assert reply.status == 400
    assert reply.error_code == -32600


async def test_an_empty_batch_is_refused(served: Served) -> None:
    session = await open_session(served, OLD)
    reply = await post(served, [], session, **V_OLD)
    assert reply.status == 400
    assert reply.error_code == -32600


async def test_twenty_thousand_pings_in_a_batch_are_each_answered_once(served: Served) -> None:
    session = await open_session(served, OLD)
    before = served.rss()
    reply = await post(served, [_request(n) for n in range(20_000)], session, **V_OLD)
    assert sorted(_ids(reply)) == list(range(20_000))  # type: ignore[type-var]
    assert served.rss() - before < 64 << 20


async def test_a_batch_past_the_in_flight_limit_is_refused_item_by_item(served: Served) -> None:
    # 1024 requests of a session run at once; the rest are refused, each with its id.
    session = await open_session(served, OLD)
    calls = [
        _request(n, "tools/call", name="clock_countdown", arguments={"seconds": 1})
        for n in range(1200)
    ]
    reply = await post(served, calls, session, **V_OLD)
    messages = sse_messages(reply)[0]
    assert sorted(message["id"] for message in messages) == list(range(1200))
    busy = [message for message in messages if "error" in message]
    assert len(busy) == 1200 - 1024
    assert {message["error"]["code"] for message in busy} == {-32603}
    await ping(served, session, OLD)


async def test_initialize_inside_a_batch_is_refused_and_the_rest_served(served: Served) -> None:
    session = await open_session(served, OLD)
    init = {**_request("again", "initialize"), "params": {"protocolVersion": OLD}}
    reply = await post(served, [init, _request(5)], session, **V_OLD)
    messages = {message["id"]: message for message in sse_messages(reply)[0]}
    assert messages["again"]["error"]["code"] == -32600
    assert messages[5]["result"] == {}


async def test_a_batch_of_malformed_items_only_is_answered_with_their_errors(
    served: Served,
) -> None:
    # Nothing in it has an id, yet each item is owed its error (JSON-RPC 2.0 §6): a 202
    # would lose them.
    session = await open_session(served, OLD)
    reply = await post(served, [1, {"foo": 1}, [2]], session, **V_OLD)
    assert reply.status == 400, reply.body[:300]
    errors = reply.json()
    assert [error["error"]["code"] for error in errors] == [-32600] * 3
    assert all(error.get("id") is None for error in errors)
    await ping(served, session, OLD)


async def test_a_batch_of_malformed_items_and_notifications_answers_the_errors(
    served: Served,
) -> None:
    session = await open_session(served, OLD)
    notification = {"jsonrpc": "2.0", "method": "notifications/roots/list_changed"}
    reply = await post(served, [notification, {"foo": 1}], session, **V_OLD)
    assert reply.status == 400, reply.body[:300]
    assert [error["error"]["code"] for error in reply.json()] == [-32600]


async def test_a_batch_of_notifications_and_unknown_responses_is_accepted(
    served: Served,
) -> None:
    session = await open_session(served, OLD)
    items = [
        {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 5}},
        {"jsonrpc": "2.0", "id": 12345, "result": {}},
        {"jsonrpc": "2.0", "id": "never-asked", "error": {"code": 1, "message": "x"}},
    ]
    reply = await post(served, items, session, **V_OLD)
    assert reply.status == 202
    assert reply.body == b""
    await ping(served, session, OLD)


async def test_two_running_requests_of_one_batch_may_not_share_an_id(served: Served) -> None:
    session = await open_session(served, OLD)
    call = _request(7, "tools/call", name="clock_countdown", arguments={"seconds": 0})
    reply = await post(served, [call, call], session, **V_OLD)
    messages = sse_messages(reply)[0]
    assert [message["id"] for message in messages] == [7, 7]
    outcomes = sorted("error" in message for message in messages)
    assert outcomes == [False, True], messages
    refused = next(message for message in messages if "error" in message)
    assert refused["error"]["code"] == -32600


# --- ids in flight, across sessions, cancellations -----------------------------------------


async def test_an_id_in_flight_cannot_be_reused_and_the_first_still_answers(
    served: Served,
) -> None:
    session = await open_session(served)
    async with holding(served, session, "reuse", "same") as held:
        again = await post(served, _request("same"), session)
        assert again.status == 400, again.body[:300]
        assert again.error_code == -32600
        assert "already in flight" in again.error_message
    assert tool_text(answer(held.reply, "same")) == "held reuse"


async def test_the_same_id_in_two_sessions_is_two_requests(served: Served) -> None:
    first = await open_session(served)
    second = await open_session(served)
    day = {"start": "2020-01-01T00:00:00Z", "end": "2020-01-02T00:00:00Z"}
    hour = {"start": "2020-01-01T00:00:00Z", "end": "2020-01-01T01:00:00Z"}
    async with trio.open_nursery() as nursery:
        found: dict[str, object] = {}

        async def call(session: str, arguments: dict[str, str]) -> None:
            found[session] = await call_tool(served, session, "clock_time_between", arguments, "x")

        nursery.start_soon(call, first, day)
        nursery.start_soon(call, second, hour)
    one, two = found[first], found[second]
    assert one["result"]["structuredContent"]["seconds"] == 86400
    assert two["result"]["structuredContent"]["seconds"] == 3600


async def test_cancelling_another_sessions_request_id_cancels_nothing(served: Served) -> None:
    victim = await open_session(served)
    attacker = await open_session(served)
    async with holding(served, victim, "victim", 42) as held:
        cancel = {
            "jsonrpc": "2.0",
            "method": "notifications/cancelled",
            "params": {"requestId": 42, "reason": "gotcha"},
        }
        assert (await post(served, cancel, attacker)).status == 202
        # The attacker's own requests go on; the victim's is still held.
        await ping(served, attacker)
    assert tool_text(answer(held.reply, 42)) == "held victim"


async def test_cancellations_naming_nothing_in_flight_are_accepted_and_ignored(
    served: Served,
) -> None:
    session = await open_session(served)
    for request_id in ("init", 99_999, "x" * 10_000, {"a": 1}, None, [1]):
        cancel = {
            "jsonrpc": "2.0",
            "method": "notifications/cancelled",
            "params": {"requestId": request_id},
        }
        reply = await post(served, cancel, session)
        assert reply.status == 202, (request_id, reply.body[:200])
    await ping(served, session)


async def test_a_flood_of_cancellations_in_a_batch_is_cheap(served: Served) -> None:
    session = await open_session(served, OLD)
    cancels = [
        {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": n}}
        for n in range(10_000)
    ]
    with trio.fail_after(5):
        reply = await post(served, cancels, session, **V_OLD)
    assert reply.status == 202
    await ping(served, session, OLD)


async def test_two_requests_in_flight_with_one_progress_token_each_hear_their_own(
    served: Served,
) -> None:
    # Progress goes to the request that gave the token, by request, not by token.
    session = await open_session(served)
    replies: dict[str, Reply] = {}

    async def call(request_id: str) -> None:
        message = _request(
            request_id,
            "tools/call",
            name="clock_countdown",
            arguments={"seconds": 1},
            _meta={"progressToken": "shared"},
        )
        replies[request_id] = await post(served, message, session)

    async with trio.open_nursery() as nursery:
        nursery.start_soon(call, "a")
        nursery.start_soon(call, "b")
    for request_id, reply in replies.items():
        messages = sse_messages(reply)
        final = [m for m in messages if m.get("id") == request_id]
        assert len(final) == 1, messages
        assert "result" in final[0], messages
        assert all(m.get("id") in (None, request_id) for m in messages), messages


async def test_a_progress_token_of_a_hundred_kilobytes_is_refused_or_echoed_bounded(
    served: Served,
) -> None:
    session = await open_session(served)
    token = "t" * 100_000
    message = _request(
        1, "tools/call", name="clock_countdown", arguments={"seconds": 0},
        _meta={"progressToken": token},
    )  # fmt: skip
    reply = await post(served, message, session)
    final = answer(reply, 1)
    assert "result" in final or final["error"]["code"] == -32602
    assert len(reply.body) < 1_000_000
