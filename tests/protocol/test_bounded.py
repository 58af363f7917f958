"""describe() and friends: bounded views of peers' values that never raise."""

from __future__ import annotations

from typing import Any

import orjson
import pytest
from hypothesis import given
from hypothesis import strategies as st

from mcpactor._exceptions import INTERNAL_ERROR, INVALID_REQUEST, PARSE_ERROR, RemoteProtocolError
from mcpactor.protocol import (
    MAX_DEPTH,
    bounded_value,
    clip,
    clip_all,
    decode,
    describe,
    describe_error,
    encode,
    error_message_for,
    error_text,
    exceeds_depth,
    over_limit,
    serialize,
    utf8_size,
)
from mcpactor.protocol._bounded import DESCRIBE_LENGTH


def nested(depth: int, leaf: Any = 0, *, key: str | None = None) -> Any:
    value = leaf
    for _ in range(depth):
        value = {key: value} if key is not None else [value]
    return value


class Hostile:
    def __repr__(self) -> str:
        raise RuntimeError("no repr for you")


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (None, "None"),
        (True, "True"),
        (1, "1"),
        (1.5, "1.5"),
        ("a\x00b\x1b", "'a\\x00b\\x1b'"),
        ([1, "x"], "[1, 'x']"),
        ({"a": [1, {"b": 2}]}, "{'a': [1, {'b': 2}]}"),
        ([[[[[1]]]]], "[[[[…]]]]"),
        ({"a": {"b": {"c": {"d": 1}}}}, "{'a': {'b': {'c': {…}}}}"),
        ([], "[]"),
        ({}, "{}"),
        ((1, 2), "(1, 2)"),
        (b"\x00b", "b'\\x00b'"),
        pytest.param(10**5000, "<int of 16610 bits>", id="huge-int"),
        (Hostile(), "<Hostile>"),
    ],
)
def test_describe_is_repr_like_and_bounded(value: Any, expected: str) -> None:
    assert describe(value) == expected


@pytest.mark.parametrize(
    "value",
    [
        nested(100_000),
        nested(100_000, key="k"),
        "x" * 10_000_000,
        ["y" * 1000] * 10_000,
        {str(i): i for i in range(100_000)},
        [10**5000] * 10,
    ],
    ids=["deep-list", "deep-object", "long-string", "long-list", "big-object", "huge-ints"],
)
def test_describe_caps_depth_and_length_of_anything(value: Any) -> None:
    text = describe(value)
    assert len(text) <= DESCRIBE_LENGTH
    assert text.endswith(("…", "]", "}"))


def test_describe_of_a_cycle_stops() -> None:
    cycle: list[Any] = []
    cycle.append(cycle)
    assert describe(cycle) == "[[[[…]]]]"


@given(
    st.recursive(
        st.none() | st.integers() | st.text(),
        lambda inner: st.lists(inner) | st.dictionaries(st.text(), inner),
    )
)
def test_describe_never_raises_and_keeps_its_length(value: Any) -> None:
    text = describe(value, length=40)
    assert len(text) <= 40


def test_clip_and_clip_all() -> None:
    assert clip("abc", 5) == "abc"
    assert clip("abcdef", 4) == "abc…"
    assert clip_all(["a" * 10] * 30, 2, 5) == ["aaaa…", "aaaa…", "… and 28 more"]


def test_bounded_value_keeps_scalars_and_describes_the_rest() -> None:
    assert bounded_value(3) == 3
    assert bounded_value(None) is None
    assert bounded_value("x" * 1000) == "x" * 499 + "…"
    assert bounded_value(nested(1000)) == "[[[[…]]]]"


def test_error_text_survives_exceptions_holding_deep_values() -> None:
    deep = nested(100_000)
    # str() of these recurses through the deep value and raises RecursionError.
    assert error_text(ValueError(deep)).startswith("([[[")
    assert describe_error(KeyError(deep)) == "KeyError: [[[[…]]]]"
    assert describe_error(ValueError("plain")) == "ValueError: plain"
    assert describe_error(RuntimeError()) == "RuntimeError"
    assert error_text(ValueError("x" * 10_000), None) == "x" * 10_000
    assert len(error_text(ValueError("x" * 10_000))) == 500


def test_exceeds_depth_counts_containers() -> None:
    assert not exceeds_depth(1)
    assert not exceeds_depth(nested(MAX_DEPTH))
    assert exceeds_depth(nested(MAX_DEPTH + 1))
    assert exceeds_depth(nested(MAX_DEPTH + 1, key="k"))
    assert not exceeds_depth([nested(MAX_DEPTH - 1), {"a": nested(MAX_DEPTH - 2)}])
    assert exceeds_depth([1, [2, [3]]], 2)
    assert exceeds_depth(nested(1_000_000))  # iterative: any depth is safe to ask about


# --- decode: the depth limit ---------------------------------------------------------


def test_decode_accepts_max_depth_and_refuses_one_more() -> None:
    # The message object is level 1: params 2, arguments 3, and so on.
    message = {"jsonrpc": "2.0", "id": 1, "method": "m", "params": nested(MAX_DEPTH - 1)}
    assert decode(orjson.dumps(message)) == message
    message["params"] = {"a": nested(MAX_DEPTH - 1)}
    with pytest.raises(RemoteProtocolError) as info:
        decode(orjson.dumps(message))
    assert info.value.code == INVALID_REQUEST
    assert info.value.request_id == 1
    assert info.value.data == {"maxDepth": MAX_DEPTH}


def test_decode_names_no_id_for_a_notification_or_an_unreadable_id() -> None:
    for message in (
        {"jsonrpc": "2.0", "method": "m", "params": {"a": nested(MAX_DEPTH)}},
        {"jsonrpc": "2.0", "method": "m", "id": nested(MAX_DEPTH)},
        nested(MAX_DEPTH + 1),
    ):
        with pytest.raises(RemoteProtocolError) as info:
            decode(orjson.dumps(message))
        assert info.value.request_id is None
        assert info.value.code == INVALID_REQUEST


def test_decode_turns_a_too_deep_response_into_an_error_for_its_id() -> None:
    for body in (
        {"result": {"a": nested(MAX_DEPTH)}},
        {"error": {"code": 1, "message": "m", "data": nested(MAX_DEPTH)}},
    ):
        value = decode(orjson.dumps({"jsonrpc": "2.0", "id": "r", **body}))
        assert value["id"] == "r"
        assert value["error"]["code"] == INVALID_REQUEST
        assert str(MAX_DEPTH) in value["error"]["message"]


def test_decode_refuses_the_shortest_frame_of_objects_alone_nested_too_deep() -> None:
    # Objects nest in five bytes a level ({"":...}): the length that rules a frame
    # without arrays out must not let this one through.
    too_deep = b'{"":' * MAX_DEPTH + b"{}" + b"}" * MAX_DEPTH
    with pytest.raises(RemoteProtocolError) as info:
        decode(too_deep)
    assert info.value.code == INVALID_REQUEST
    deepest = b'{"":' * (MAX_DEPTH - 1) + b"{}" + b"}" * (MAX_DEPTH - 1)
    assert exceeds_depth(decode(deepest), MAX_DEPTH) is False


@given(
    depth=st.integers(min_value=MAX_DEPTH - 3, max_value=MAX_DEPTH + 3),
    key=st.text(max_size=2),
    padding=st.integers(min_value=0, max_value=400),
    with_array=st.booleans(),
)
def test_decode_refuses_exactly_the_frames_that_nest_too_deep(
    depth: int, key: str, padding: int, with_array: bool
) -> None:
    value: Any = [0] if with_array else 0
    for _ in range(depth - (1 if with_array else 0)):
        value = {key: value}
    frame = orjson.dumps({"pad": "x" * padding, "v": value})
    too_deep = exceeds_depth(orjson.loads(frame), MAX_DEPTH)
    if too_deep:
        with pytest.raises(RemoteProtocolError):
            decode(frame)
    else:
        assert decode(frame) == orjson.loads(frame)


def test_decode_past_what_orjson_parses_is_a_parse_error() -> None:
    frame = b'{"jsonrpc":"2.0","id":1,"method":"m","params":' + b"[" * 2000 + b"]" * 2000 + b"}"
    with pytest.raises(RemoteProtocolError) as info:
        decode(frame)
    assert info.value.code == PARSE_ERROR


def test_decode_takes_str_and_memoryview_frames() -> None:
    deep = orjson.dumps(
        {"jsonrpc": "2.0", "id": 2, "method": "m", "params": {"a": nested(MAX_DEPTH)}}
    )
    for frame in (deep.decode(), memoryview(deep), bytearray(deep)):
        with pytest.raises(RemoteProtocolError):
            decode(frame)


# --- serialize: never raises ---------------------------------------------------------


@pytest.mark.parametrize(
    "result",
    [nested(300), {1: "int key"}, 2**64 + 1, {"a": {1, 2}}, Hostile()],
    ids=["too-deep", "int-key", "huge-int", "set", "object"],
)
def test_an_unwritable_result_becomes_an_internal_error_for_its_id(result: Any) -> None:
    reply = orjson.loads(encode({"jsonrpc": "2.0", "id": 4, "result": {"x": result}}))
    assert reply["id"] == 4
    assert reply["error"]["code"] == INTERNAL_ERROR
    assert "could not be written as JSON" in reply["error"]["message"]


def test_an_error_with_unwritable_data_keeps_its_code_and_message() -> None:
    reply = orjson.loads(
        encode(
            {
                "jsonrpc": "2.0",
                "id": "e",
                "error": {"code": -32602, "message": "bad", "data": nested(300)},
            }
        )
    )
    assert reply == {
        "jsonrpc": "2.0",
        "id": "e",
        "error": {
            "code": -32602,
            "message": "bad (its data could not be written as JSON: Recursion limit reached)",
        },
    }


def test_an_error_whose_message_holds_a_lone_surrogate_is_sent_escaped() -> None:
    # A file name's undecodable bytes in a handler's error: JSON text cannot carry them.
    reply = orjson.loads(
        encode(
            {
                "jsonrpc": "2.0",
                "id": "e",
                "error": {"code": -32602, "message": "bad \udcff", "data": {"p": "\udcff"}},
            }
        )
    )
    assert reply["id"] == "e"
    assert reply["error"]["code"] == -32602
    assert reply["error"]["message"].startswith("bad \\udcff (its data could not be written")
    assert error_text(ValueError("x \ud800 y")) == "x \\ud800 y"
    assert error_text(ValueError("é")) == "é"


def test_a_batch_keeps_its_good_replies() -> None:
    batch = [
        {"jsonrpc": "2.0", "id": 1, "result": {"x": nested(300)}},
        {"jsonrpc": "2.0", "id": 2, "result": {}},
    ]
    replies = orjson.loads(encode(batch))
    assert [reply["id"] for reply in replies] == [1, 2]
    assert replies[0]["error"]["code"] == INTERNAL_ERROR
    assert replies[1] == batch[1]


def test_an_unwritable_request_or_notification_is_not_sent() -> None:
    assert serialize({"jsonrpc": "2.0", "method": "n", "params": {"x": nested(300)}}) is None
    assert serialize({"jsonrpc": "2.0", "id": 1, "method": "r", "params": {1: 2}}) is None
    assert encode({"jsonrpc": "2.0", "method": "n", "params": {"x": {1}}}) == b""


def test_what_can_be_written_is_written_as_is() -> None:
    message = {"jsonrpc": "2.0", "id": 1, "result": {"x": nested(250)}}
    assert orjson.loads(encode(message)) == message


@pytest.mark.parametrize(
    "text", ["", "ascii", "é", "€uro", "😀", "a\x00b", "\udc80", "é" * 5000 + "x"]
)
def test_utf8_size_is_the_length_of_the_utf8_encoding(text: str) -> None:
    assert utf8_size(text) == len(text.encode("utf-8", "surrogatepass"))


def test_over_limit_has_the_one_shape_of_every_limit() -> None:
    error = over_limit("too big: at most 10", 10)
    assert error.to_error() == {
        "code": -32602,
        "message": "too big: at most 10",
        "data": {"limit": 10},
    }
    other = over_limit("busy", 3, code=-32603, request_id=7)
    assert error_message_for(other) == {
        "jsonrpc": "2.0",
        "id": 7,
        "error": {"code": -32603, "message": "busy", "data": {"limit": 3}},
    }
