"""The exact answer to each kind of bad input, over stdio, and that the session goes on.

JSON-RPC 2.0: -32700 when the frame is no JSON, -32600 when it is no valid request
object, -32601 for an unknown method, -32602 for the wrong params. MCP passes params by
name, so an array (by-position params) or null is -32602; a string or number is no
JSON-RPC params at all, -32600. Values we cannot handle (nested past MAX_DEPTH, results
that cannot be written as JSON) get a clear error of their own.
"""

from __future__ import annotations

from typing import Any

import pytest

from mcpactor._exceptions import (
    INTERNAL_ERROR,
    INVALID_PARAMS,
    INVALID_REQUEST,
    METHOD_NOT_FOUND,
    PARSE_ERROR,
)
from mcpactor.protocol import MAX_DEPTH

from ._hostile import Probe
from ._scenarios import run, stdio_session, wire


def nested(depth: int, leaf: Any = 0) -> Any:
    value = leaf
    for _ in range(depth):
        value = [value]
    return value


async def _answer(message: Any) -> Any:
    async with stdio_session(Probe()) as session:
        await session.send(message)
        await session.send({"jsonrpc": "2.0", "id": "good", "method": "ping"})
        assert (await session.answer_of("good"))["result"] == {}
        request_id = message.get("id")
        if type(request_id) in (int, str) and type(message.get("method")) is str:
            return await session.answer_of(request_id)
        replies = [reply for reply in session.seen if reply.get("id") not in ("init", "good")]
        assert len(replies) == 1, session.seen
        return replies[0]


def answer(message: Any) -> Any:
    """The server's answer to ``message`` (after which a ping is still answered)."""
    return run(_answer, message)


def request(method: Any, params: Any = ..., request_id: Any = 5) -> dict[str, Any]:
    message: dict[str, Any] = {"jsonrpc": "2.0", "id": request_id, "method": method}
    if params is not ...:
        message["params"] = params
    return message


def error(reply: Any, request_id: Any = 5) -> dict[str, Any]:
    assert reply.get("id") == request_id, reply
    found: dict[str, Any] = reply["error"]
    return found


@pytest.mark.parametrize(
    ("params", "code"),
    [
        pytest.param(None, INVALID_PARAMS, id="null"),
        pytest.param([1, 2], INVALID_PARAMS, id="array"),
        pytest.param([], INVALID_PARAMS, id="empty-array"),
        pytest.param("x", INVALID_REQUEST, id="string"),
        pytest.param(3, INVALID_REQUEST, id="number"),
        pytest.param(True, INVALID_REQUEST, id="boolean"),
        pytest.param({"_meta": None}, INVALID_PARAMS, id="meta-null"),
        pytest.param({"_meta": []}, INVALID_PARAMS, id="meta-array"),
        pytest.param({"_meta": "m"}, INVALID_PARAMS, id="meta-string"),
        pytest.param({"_meta": 0}, INVALID_PARAMS, id="meta-number"),
        pytest.param({"_meta": {"progressToken": 1.5}}, INVALID_PARAMS, id="token-float"),
        pytest.param({"_meta": {"progressToken": {}}}, INVALID_PARAMS, id="token-object"),
        pytest.param({"_meta": {"progressToken": None}}, INVALID_PARAMS, id="token-null"),
    ],
)
def test_params_of_the_wrong_shape(params: Any, code: int) -> None:
    assert error(answer(request("tools/list", params)))["code"] == code


def test_params_of_the_right_shape_are_served() -> None:
    for params in ({}, {"_meta": {}}, {"_meta": {"progressToken": "t", "x": [1]}}):
        assert "tools" in answer(request("tools/list", params))["result"]


@pytest.mark.parametrize(
    "method",
    ["tools/li\x00st", "ping\n", "\x1b[31mred", "\u2028", "x" * 100_000],
    ids=["nul", "newline", "escape", "line-separator", "long"],
)
def test_a_method_name_with_control_characters_or_of_any_length_is_not_found(
    method: str,
) -> None:
    found = error(answer(request(method)))
    assert found["code"] == METHOD_NOT_FOUND
    # Quoted escaped and bounded: no raw control character reaches a log or a terminal.
    assert len(found["message"]) < 200
    assert not any(ord(char) < 0x20 for char in found["message"])
    assert len(found["data"]["method"]) <= 500


def test_an_id_nested_1000_deep_is_refused_and_the_server_lives() -> None:
    # Issue "Hardening": this line ended `mcpactor serve` with a RecursionError.
    reply = answer({"jsonrpc": "2.0", "method": "ping", "id": nested(1000)})
    assert reply == {
        "jsonrpc": "2.0",
        "error": {
            "code": INVALID_REQUEST,
            "message": f"the message nests deeper than {MAX_DEPTH} levels",
            "data": {"maxDepth": MAX_DEPTH},
        },
    }


@pytest.mark.parametrize("position", ["id", "method", "jsonrpc"])
def test_a_deep_value_where_a_scalar_belongs_is_quoted_bounded(position: str) -> None:
    message: dict[str, Any] = {"jsonrpc": "2.0", "id": 5, "method": "ping"}
    message[position] = nested(MAX_DEPTH - 1)
    found = answer(message)["error"]
    assert found["code"] == INVALID_REQUEST
    assert len(found["message"]) < 200


def test_params_nested_past_the_limit_are_refused_naming_the_request() -> None:
    # envelope, params and arguments are 3 levels, the object 1: MAX_DEPTH in all
    value = {"k": nested(MAX_DEPTH - 4)}
    accepted = request("tools/call", {"name": "echo", "arguments": {"value": value}})
    assert answer(accepted)["result"]["content"][0]["text"] == wire(value).decode()
    refused = request("tools/call", {"name": "echo", "arguments": {"value": {"k": [value]}}})
    found = error(answer(refused))
    assert found == {
        "code": INVALID_REQUEST,
        "message": f"the message nests deeper than {MAX_DEPTH} levels",
        "data": {"maxDepth": MAX_DEPTH},
    }


def test_nesting_past_what_the_parser_reads_is_a_parse_error() -> None:
    async def scenario() -> Any:
        async with stdio_session(Probe()) as session:
            await session.send_raw(
                b'{"jsonrpc":"2.0","id":5,"method":"ping","params":'
                + b"[" * 1100
                + b"]" * 1100
                + b"}"
            )
            reply = await session.receive()
            await session.send({"jsonrpc": "2.0", "id": "good", "method": "ping"})
            assert (await session.answer_of("good"))["result"] == {}
            return reply

    reply = run(scenario)
    assert "id" not in reply
    assert reply["error"]["code"] == PARSE_ERROR


@pytest.mark.parametrize(
    ("levels", "fragment"),
    [
        # the result nests levels + 3 deep: orjson writes 254 levels at most
        pytest.param(252, "the response could not be written as JSON", id="message-too-deep"),
        pytest.param(300, "Recursion limit reached", id="content-too-deep"),
    ],
)
def test_a_result_too_deep_to_write_is_an_internal_error_for_its_request(
    levels: int, fragment: str
) -> None:
    fine = answer(request("tools/call", {"name": "nested", "arguments": {"levels": 251}}))
    assert fine["result"]["structuredContent"] == {"v": nested(251, "leaf")}
    found = error(
        answer(request("tools/call", {"name": "nested", "arguments": {"levels": levels}}))
    )
    assert found["code"] == INTERNAL_ERROR
    assert fragment in found["message"]


def test_an_argument_failing_a_recursive_schema_is_answered_bounded() -> None:
    reply = answer(
        request("tools/call", {"name": "checked", "arguments": {"tree": nested(MAX_DEPTH - 5, 7)}})
    )
    # 2025-11-25 reports input errors as a tool result with isError.
    result = reply["result"]
    assert result["isError"] is True
    assert len(result["content"][0]["text"]) < 25 * 600


@pytest.mark.parametrize(
    ("argument", "valid"),
    [
        ({"pair": [1, [True, {"a": None}]]}, True),
        ({"pair": [1, [1, {"a": None}]]}, False),  # true is not 1
        ({"pair": [1.0, [True, {"a": None}]]}, True),  # 1.0 is 1
        ({"pick": [1]}, True),
        ({"pick": [True]}, False),
        ({"pick": {"b": [2.5]}}, True),
        ({"pick": {"b": [2.5], "c": 1}}, False),
    ],
)
def test_deep_const_and_enum_compare_as_json(argument: dict[str, Any], valid: bool) -> None:
    result = answer(request("tools/call", {"name": "checked", "arguments": argument}))["result"]
    assert result.get("isError", False) is not valid, result


def test_many_violations_are_listed_up_to_a_limit() -> None:
    reply = answer(
        request("tools/call", {"name": "checked", "arguments": {"numbers": ["x"] * 10_000}})
    )
    text = reply["result"]["content"][0]["text"]
    assert text.count("'x' is not of type 'integer'") == 20
    assert text.endswith("… and more violations")


async def _deep_answer(body: dict[str, Any]) -> Any:
    async with stdio_session(Probe()) as session:
        ask = request("tools/call", {"name": "ask", "arguments": {"what": "sampling"}}, "ask")
        await session.send(ask)
        asked = await session.next_request()
        await session.send_raw(wire({"jsonrpc": "2.0", "id": asked["id"], **body}))
        return await session.answer_of("ask")


@pytest.mark.parametrize(
    "body",
    [
        {"result": {"role": "assistant", "model": "m", "content": nested(MAX_DEPTH)}},
        {"result": {"role": "assistant", "model": "m", "content": nested(600)}},
        {"error": {"code": 1, "message": "m", "data": nested(MAX_DEPTH)}},
    ],
    ids=["result-too-deep", "result-unwritable", "error-data-too-deep"],
)
def test_a_client_answer_nested_too_deep_fails_the_waiting_handler_clearly(
    body: dict[str, Any],
) -> None:
    reply = run(_deep_answer, body)
    assert reply["error"]["code"] == INVALID_REQUEST
    assert f"nests deeper than {MAX_DEPTH} levels" in reply["error"]["message"]


def test_a_client_answer_of_the_wrong_shape_is_a_bounded_error() -> None:
    content = [{"type": "text", "text": ["x" * 100] * 100}] * 100
    reply = run(_deep_answer, {"result": {"role": "assistant", "model": "m", "content": content}})
    # The tool's ctx.sample() raised; a failing tool is an error result.
    result = reply["result"]
    assert result["isError"] is True
    text = result["content"][0]["text"]
    assert "invalid CreateMessageResult" in text
    assert len(text) <= 600


def test_a_prompt_argument_that_does_not_convert_is_quoted_bounded() -> None:
    # float()'s own message quotes the whole string, however long.
    found = error(
        answer(request("prompts/get", {"name": "scaled", "arguments": {"factor": "x" * 100_000}}))
    )
    assert found["code"] == INVALID_PARAMS
    assert len(found["message"]) < 700
    assert len(found["data"]["value"]) <= 500
    served = answer(request("prompts/get", {"name": "scaled", "arguments": {"factor": "2.5"}}))
    assert served["result"]["messages"][0]["content"]["text"] == "scaled by 2.5"
