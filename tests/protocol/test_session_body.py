"""A body classified once: classify_body, the one batch rule, and what a reply answers."""

from __future__ import annotations

import pytest

from mcpactor._exceptions import INVALID_REQUEST, RemoteProtocolError
from mcpactor.protocol import (
    REVISIONS,
    Batch,
    Notification,
    Request,
    Response,
    Send,
    ServerSession,
    answered_ids,
    batch_refusal,
    classify_body,
    owed_ids,
)


def ping(request_id: int | str) -> dict[str, object]:
    return {"jsonrpc": "2.0", "id": request_id, "method": "ping"}


def test_a_classified_body_is_taken_as_it_is() -> None:
    body = classify_body(ping(1))
    assert body == Request(1, "ping")
    assert classify_body(body) is body
    batch = classify_body([ping(1)])
    assert classify_body(batch) is batch
    error = classify_body({"jsonrpc": "2.0"})
    assert isinstance(error, RemoteProtocolError)
    assert classify_body(error) is error


def test_a_malformed_message_is_the_error_to_answer_with() -> None:
    error = classify_body({"jsonrpc": "1.0", "id": 7, "method": "ping"})
    assert isinstance(error, RemoteProtocolError)
    assert (error.code, error.request_id) == (INVALID_REQUEST, 7)
    assert isinstance(classify_body("not an object"), RemoteProtocolError)


def test_a_batch_names_the_answers_it_is_owed() -> None:
    body = classify_body(
        [
            ping(1),
            {"jsonrpc": "2.0", "method": "notifications/x"},
            {"jsonrpc": "2.0", "id": "bad", "method": 3},
            {"jsonrpc": "2.0", "id": 9, "result": {}},
            {"jsonrpc": "2.0", "method": "initialize", "id": 4},
        ]
    )
    assert isinstance(body, Batch)
    assert body.request_ids == (1, "bad", 4)
    assert body.initialize
    assert type(body.items[1]) is Notification
    assert type(body.items[3]) is Response
    refused = body.items[4]
    assert isinstance(refused, RemoteProtocolError)
    assert "batch" in refused.message
    assert owed_ids(body) == (1, "bad", 4)
    assert owed_ids(classify_body(ping("a"))) == ("a",)
    assert owed_ids(classify_body({"jsonrpc": "2.0", "method": "x"})) == ()


@pytest.mark.parametrize(
    ("version", "items", "refused"),
    [
        (None, [ping(1)], "before initialize"),
        ("2025-06-18", [ping(1)], "does not allow"),
        ("2025-03-26", [], "must not be empty"),
        ("2025-03-26", [ping(1)], None),
    ],
)
def test_one_rule_decides_whether_a_batch_is_served(
    version: str | None, items: list[object], refused: str | None
) -> None:
    body = classify_body(items)
    assert isinstance(body, Batch)
    why = batch_refusal(body, REVISIONS[version] if version is not None else None)
    assert (why is None) if refused is None else (why is not None and refused in why)


def test_answered_ids_reads_a_response_or_a_batch_of_them() -> None:
    assert answered_ids({"jsonrpc": "2.0", "id": 3, "result": {}}) == [3]
    assert answered_ids([{"id": 1}, {"id": "x"}, {"error": {}}]) == [1, "x"]


def test_a_reply_of_the_machine_names_the_request_it_answers() -> None:
    session = ServerSession(server_info=lambda _: {"name": "s"}, capabilities=lambda _: {})
    assert session.receive(ping(5)) == [Send({"jsonrpc": "2.0", "id": 5, "result": {}}, 5)]
    [refusal] = session.receive({"jsonrpc": "2.0", "id": 6})
    assert isinstance(refusal, Send)
    assert refusal.request_id == 6
    [unreadable] = session.receive(b"x")
    assert isinstance(unreadable, Send)
    assert unreadable.request_id is None


def test_the_core_builds_what_the_actor_sends() -> None:
    session = ServerSession(server_info=lambda _: {"name": "s"}, capabilities=lambda _: {})
    # Before initialize only log messages may go out.
    assert session.notification("notifications/tools/list_changed", {}) is None
    assert session.notification("notifications/message", {"level": "info"}) == {
        "jsonrpc": "2.0",
        "method": "notifications/message",
        "params": {"level": "info"},
    }
    assert session.cancel_outgoing(4, "too slow") == {
        "jsonrpc": "2.0",
        "method": "notifications/cancelled",
        "params": {"requestId": 4, "reason": "too slow"},
    }
    one = session.ended_reply([1])
    assert isinstance(one, dict)
    assert one["id"] == 1
    assert one["error"]["message"] == "the session ended before the request was answered"
    several = session.ended_reply([1, 2])
    assert isinstance(several, list)
    assert [reply["id"] for reply in several] == [1, 2]
