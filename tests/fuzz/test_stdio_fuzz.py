"""Arbitrary JSON in every position of a message, over stdio: the session lives on.

Each example is one session (see _scenarios.py): a request held in flight, the hostile
message, a ping, then the held request released. The server must answer the ping and
the held request as if nothing had happened, owe the hostile message exactly the answer
JSON-RPC asks for (one response naming its id when it is a request with a usable id),
and write nothing the revision's schema rejects.
"""

from __future__ import annotations

from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from mcpactor._exceptions import INVALID_REQUEST, PARSE_ERROR
from mcpactor.protocol import MAX_DEPTH

from ._hostile import (
    FUZZ,
    Probe,
    client_answers,
    hostile_messages,
    is_request_with_id,
    parsable,
    too_deep,
)
from ._scenarios import run, stdio_session, wire

HELD = {"jsonrpc": "2.0", "id": "held", "method": "tools/call", "params": {"name": "hold"}}
PING = {"jsonrpc": "2.0", "id": "good", "method": "ping"}


async def _hostile_message(message: Any) -> None:
    probe = Probe()
    async with stdio_session(probe) as session:
        await session.send(HELD)
        await probe.started.wait()
        await session.send(message)
        await session.send(PING)
        assert (await session.answer_of("good"))["result"] == {}
        probe.release.set()
        held = await session.answer_of("held")
        assert held["result"]["content"][0]["text"] == "released"
        if not parsable(message):
            assert {"code": PARSE_ERROR} in [
                {"code": reply.get("error", {}).get("code")} for reply in session.seen
            ]
        elif is_request_with_id(message):
            reply = await session.answer_of(message["id"])
            if too_deep(message):
                assert reply["error"]["code"] == INVALID_REQUEST
                assert reply["error"]["data"] == {"maxDepth": MAX_DEPTH}
        # Nothing the server wrote names an id the client never used.
        used = ["init", "held", "good", message.get("id")]
        for reply in session.seen:
            if type(reply) is dict and "method" not in reply and "id" in reply:
                assert reply["id"] in used, reply


@FUZZ
@given(hostile_messages())
def test_any_value_in_any_position_leaves_the_session_serving(case: tuple[str, Any]) -> None:
    _, message = case
    run(_hostile_message, message)


async def _hostile_answer(what: str, answer: dict[str, Any]) -> None:
    probe = Probe()
    async with stdio_session(probe) as session:
        await session.send(HELD)
        await probe.started.wait()
        await session.send(
            {
                "jsonrpc": "2.0",
                "id": "ask",
                "method": "tools/call",
                "params": {"name": "ask", "arguments": {"what": what}},
            }
        )
        asked = await session.next_request()
        await session.send_raw(wire({"jsonrpc": "2.0", "id": asked["id"], **answer}))
        await session.send(PING)
        assert (await session.answer_of("good"))["result"] == {}
        # Whatever the client answered, the tool's request is answered: with its result,
        # an error result, or an error (a timeout when the answer was no response at all).
        reply = await session.answer_of("ask")
        assert ("result" in reply) != ("error" in reply)
        probe.release.set()
        held = await session.answer_of("held")
        assert held["result"]["content"][0]["text"] == "released"


@FUZZ
@given(what=..., answer=client_answers())
def test_any_answer_to_a_server_request_is_survived(what: bool, answer: dict[str, Any]) -> None:
    run(_hostile_answer, "sampling" if what else "roots", answer)


@FUZZ
@given(answer=client_answers())
def test_any_answer_to_an_elicitation_is_survived(answer: dict[str, Any]) -> None:
    run(_hostile_answer, "elicitation", answer)


async def _hostile_batch(messages: list[Any]) -> None:
    # 2025-03-26 is the one revision with JSON-RPC batches.
    probe = Probe()
    async with stdio_session(probe, "2025-03-26") as session:
        await session.send(HELD)
        await probe.started.wait()
        batch = [*messages, {"jsonrpc": "2.0", "id": "in batch", "method": "ping"}]
        await session.send_raw(wire(batch))
        await session.send(PING)
        assert (await session.answer_of("good"))["result"] == {}
        probe.release.set()
        assert (await session.answer_of("held"))["result"]["content"][0]["text"] == "released"
        if parsable(batch) and not too_deep(batch):
            # The batch's ping is answered inside the batch's reply array.
            replies = [reply for reply in session.seen if type(reply) is list]
            assert any(item.get("id") == "in batch" for reply in replies for item in reply)


@FUZZ
@given(st.lists(hostile_messages().map(lambda case: case[1]), min_size=1, max_size=3))
def test_a_batch_of_hostile_messages_leaves_the_session_serving(messages: list[Any]) -> None:
    run(_hostile_batch, messages)
