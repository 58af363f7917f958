"""JSON-RPC envelope classification: every valid shape, every way to be invalid."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mcpactor._exceptions import INVALID_PARAMS, INVALID_REQUEST, RemoteProtocolError
from mcpactor.protocol import (
    ErrorResponse,
    Notification,
    Request,
    Response,
    classify,
)
from mcpactor.protocol._jsonrpc import error_response

V = {"jsonrpc": "2.0"}


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        pytest.param({**V, "id": 1, "method": "ping"}, Request(1, "ping"), id="int-id"),
        pytest.param({**V, "id": 0, "method": "ping"}, Request(0, "ping"), id="zero-id"),
        pytest.param({**V, "id": -7, "method": "ping"}, Request(-7, "ping"), id="negative-id"),
        pytest.param({**V, "id": "a", "method": "ping"}, Request("a", "ping"), id="str-id"),
        pytest.param({**V, "id": "", "method": "ping"}, Request("", "ping"), id="empty-str-id"),
        pytest.param(
            {**V, "id": 2**63, "method": "ping"}, Request(2**63, "ping"), id="big-int-id"
        ),
        pytest.param(
            {**V, "id": 1, "method": "tools/call", "params": {"name": "x"}},
            Request(1, "tools/call", {"name": "x"}),
            id="request-params",
        ),
        pytest.param(
            {**V, "id": 1, "method": "ping", "params": {}},
            Request(1, "ping", {}),
            id="request-empty-params",
        ),
        pytest.param(
            {"method": "ping", "id": 1, **V, "x-extra": [1]},
            Request(1, "ping"),
            id="unknown-keys-ignored",
        ),
        pytest.param(
            {**V, "method": "notifications/initialized"},
            Notification("notifications/initialized"),
            id="notification",
        ),
        pytest.param(
            {**V, "method": "notifications/cancelled", "params": {"requestId": 3}},
            Notification("notifications/cancelled", {"requestId": 3}),
            id="notification-params",
        ),
        pytest.param({**V, "id": 1, "result": {}}, Response(1, {}), id="response"),
        pytest.param(
            {**V, "id": "x", "result": {"roots": []}},
            Response("x", {"roots": []}),
            id="response-str-id",
        ),
        pytest.param(
            {**V, "id": 1, "error": {"code": -32601, "message": "no"}},
            ErrorResponse(1, -32601, "no"),
            id="error",
        ),
        pytest.param(
            {**V, "id": "q", "error": {"code": 5, "message": "", "data": {"why": [1]}}},
            ErrorResponse("q", 5, "", {"why": [1]}),
            id="error-data",
        ),
        pytest.param(
            {**V, "id": None, "error": {"code": -32700, "message": "bad"}},
            ErrorResponse(None, -32700, "bad"),
            id="error-null-id",
        ),
        pytest.param(
            {**V, "error": {"code": -32700, "message": "bad"}},
            ErrorResponse(None, -32700, "bad"),
            id="error-no-id",
        ),
    ],
)
def test_classify_valid(value: dict[str, Any], expected: Any) -> None:
    message = classify(value)
    assert message == expected
    assert type(message) is type(expected)


@pytest.mark.parametrize(
    ("value", "request_id", "fragment"),
    [
        # not an object at all
        pytest.param([], None, "got list", id="list"),
        pytest.param("ping", None, "got str", id="string"),
        pytest.param(1, None, "got int", id="number"),
        pytest.param(None, None, "got NoneType", id="null"),
        # the jsonrpc member; a readable id is kept so the error can name it
        pytest.param({"id": 1, "method": "ping"}, 1, "'jsonrpc'", id="jsonrpc-missing"),
        pytest.param(
            {"jsonrpc": "1.0", "id": "a", "method": "ping"}, "a", "'1.0'", id="jsonrpc-1.0"
        ),
        pytest.param(
            {"jsonrpc": 2.0, "id": 1, "method": "ping"}, 1, "got 2.0", id="jsonrpc-number"
        ),
        pytest.param(
            {"jsonrpc": "2.0 ", "id": 1, "method": "ping"}, 1, "got '2.0 '", id="jsonrpc-space"
        ),
        pytest.param(
            {"jsonrpc": "1.0", "id": 1.5, "method": "ping"}, None, "'1.0'", id="jsonrpc-bad-id"
        ),
        # request ids
        pytest.param({**V, "id": None, "method": "ping"}, None, "None", id="id-null"),
        pytest.param({**V, "id": True, "method": "ping"}, None, "True", id="id-bool"),
        pytest.param({**V, "id": False, "method": "ping"}, None, "False", id="id-false"),
        pytest.param({**V, "id": 1.0, "method": "ping"}, None, "1.0", id="id-float"),
        pytest.param({**V, "id": {"a": 1}, "method": "ping"}, None, "'a'", id="id-object"),
        pytest.param({**V, "id": [1], "method": "ping"}, None, "[1]", id="id-array"),
        # method
        pytest.param({**V, "id": 1, "method": ""}, 1, "non-empty", id="method-empty"),
        pytest.param({**V, "id": 1, "method": 7}, 1, "non-empty", id="method-number"),
        pytest.param({**V, "id": 1, "method": ["x"]}, 1, "non-empty", id="method-array"),
        pytest.param({**V, "method": False}, None, "non-empty", id="notification-method-bool"),
        # params that are no JSON-RPC params at all (arrays and null: see below)
        pytest.param(
            {**V, "id": 2, "method": "ping", "params": "x"}, 2, "got str", id="params-string"
        ),
        pytest.param(
            {**V, "method": "notifications/x", "params": 3},
            None,
            "got int",
            id="notification-params-number",
        ),
        pytest.param(
            {**V, "id": 1, "method": "ping", "result": {}}, 1, "cannot carry", id="request-result"
        ),
        pytest.param(
            {**V, "method": "x", "error": {"code": 1, "message": "m"}},
            None,
            "cannot carry",
            id="notification-error",
        ),
        # responses
        pytest.param({**V, "id": 1, "result": []}, 1, "got list", id="result-array"),
        pytest.param({**V, "id": 1, "result": "ok"}, 1, "got str", id="result-string"),
        pytest.param({**V, "id": 1, "result": None}, 1, "got NoneType", id="result-null"),
        pytest.param({**V, "result": {}}, None, "None", id="result-no-id"),
        pytest.param({**V, "id": None, "result": {}}, None, "None", id="result-null-id"),
        pytest.param({**V, "id": True, "result": {}}, None, "True", id="result-bool-id"),
        pytest.param({**V, "id": 0.5, "result": {}}, None, "0.5", id="result-float-id"),
        pytest.param(
            {**V, "id": 4, "result": {}, "error": {"code": 1, "message": "m"}},
            4,
            "both",
            id="result-and-error",
        ),
        # error objects
        pytest.param({**V, "id": 1, "error": "boom"}, 1, "'error'", id="error-string"),
        pytest.param({**V, "id": 1, "error": None}, 1, "'error'", id="error-null"),
        pytest.param({**V, "id": 1, "error": {"message": "m"}}, 1, "'code'", id="error-no-code"),
        pytest.param(
            {**V, "id": 1, "error": {"code": "1", "message": "m"}}, 1, "'code'", id="code-string"
        ),
        pytest.param(
            {**V, "id": 1, "error": {"code": 1.0, "message": "m"}}, 1, "'code'", id="code-float"
        ),
        pytest.param(
            {**V, "id": 1, "error": {"code": True, "message": "m"}}, 1, "'code'", id="code-bool"
        ),
        pytest.param({**V, "id": 1, "error": {"code": 1}}, 1, "'message'", id="error-no-message"),
        pytest.param(
            {**V, "id": 1, "error": {"code": 1, "message": 5}}, 1, "'message'", id="message-int"
        ),
        pytest.param(
            {**V, "id": False, "error": {"code": 1, "message": "m"}},
            None,
            "False",
            id="error-bool-id",
        ),
        pytest.param(
            {**V, "id": [], "error": {"code": 1, "message": "m"}}, None, "[]", id="error-list-id"
        ),
        # nothing to classify by
        pytest.param({**V, "id": 9}, 9, "'method', 'result' or 'error'", id="id-only"),
        pytest.param({**V}, None, "'method', 'result' or 'error'", id="version-only"),
        pytest.param({}, None, "'jsonrpc'", id="empty-object"),
    ],
)
def test_classify_invalid(value: Any, request_id: Any, fragment: str) -> None:
    with pytest.raises(RemoteProtocolError) as info:
        classify(value)
    assert info.value.code == INVALID_REQUEST
    assert info.value.request_id == request_id
    # a readable id is an id of the right type, never a lookalike
    assert type(info.value.request_id) is type(request_id)
    assert fragment in info.value.message


@pytest.mark.parametrize(
    ("value", "request_id", "fragment"),
    [
        # MCP passes params by name: by-position params and null are the wrong params
        pytest.param({**V, "id": 1, "method": "ping", "params": [1, 2]}, 1, "array", id="array"),
        pytest.param({**V, "id": "n", "method": "ping", "params": None}, "n", "null", id="null"),
        pytest.param({**V, "method": "notifications/x", "params": []}, None, "array", id="notif"),
        # _meta is an object, and a progress token a string or an integer
        pytest.param(
            {**V, "id": 1, "method": "ping", "params": {"_meta": None}}, 1, "null", id="meta-null"
        ),
        pytest.param(
            {**V, "id": 1, "method": "ping", "params": {"_meta": [1]}}, 1, "array", id="meta-list"
        ),
        pytest.param(
            {**V, "id": 1, "method": "ping", "params": {"_meta": "x"}}, 1, "str", id="meta-str"
        ),
        pytest.param(
            {**V, "method": "notifications/x", "params": {"_meta": 3}}, None, "int", id="meta-int"
        ),
        pytest.param(
            {**V, "id": 2, "method": "tools/call", "params": {"_meta": {"progressToken": 1.5}}},
            2,
            "1.5",
            id="token-float",
        ),
        pytest.param(
            {**V, "id": 2, "method": "x", "params": {"_meta": {"progressToken": None}}},
            2,
            "None",
            id="token-null",
        ),
        pytest.param(
            {**V, "id": 2, "method": "x", "params": {"_meta": {"progressToken": [[[[[1]]]]]}}},
            2,
            "[[[[…]]]]",
            id="token-deep",
        ),
        pytest.param(
            {**V, "id": 2, "method": "x", "params": {"_meta": {"progressToken": True}}},
            2,
            "True",
            id="token-bool",
        ),
    ],
)
def test_classify_invalid_params(value: Any, request_id: Any, fragment: str) -> None:
    with pytest.raises(RemoteProtocolError) as info:
        classify(value)
    assert info.value.code == INVALID_PARAMS
    assert info.value.request_id == request_id
    assert fragment in info.value.message


def test_classify_keeps_meta_and_tokens() -> None:
    value = {**V, "id": 1, "method": "x", "params": {"_meta": {"progressToken": "t", "k": [1]}}}
    assert classify(value) == Request(1, "x", {"_meta": {"progressToken": "t", "k": [1]}})


def _nested(depth: int) -> Any:
    value: Any = 0
    for _ in range(depth):
        value = [value]
    return value


@pytest.mark.parametrize(
    "value",
    [
        pytest.param({**V, "method": "ping", "id": _nested(5000)}, id="id"),
        pytest.param({**V, "method": _nested(5000), "id": 1}, id="method"),
        pytest.param({"jsonrpc": _nested(5000), "id": 1}, id="jsonrpc"),
        pytest.param({**V, "result": {}, "id": _nested(5000)}, id="response-id"),
        pytest.param({**V, "error": {"code": 1, "message": "m"}, "id": {"a": _nested(5000)}}),
        pytest.param(
            {**V, "id": 1, "method": "x", "params": {"_meta": {"progressToken": _nested(5000)}}},
            id="token",
        ),
    ],
)
def test_classify_quotes_any_value_bounded(value: Any) -> None:
    # Issue "Hardening": an id nested 1000 deep made the error message's repr recurse.
    with pytest.raises(RemoteProtocolError) as info:
        classify(value)
    assert len(info.value.message) < 300


def test_classify_quotes_long_values_bounded() -> None:
    with pytest.raises(RemoteProtocolError) as info:
        classify({**V, "id": "x" * 1_000_000, "method": 5})
    assert len(info.value.message) < 300
    assert info.value.request_id == "x" * 1_000_000  # the id itself is kept to answer it


def test_to_json_wire_forms() -> None:
    assert Request(1, "ping").to_json() == {"jsonrpc": "2.0", "id": 1, "method": "ping"}
    assert Request("a", "x", {"k": 1}).to_json() == {
        "jsonrpc": "2.0",
        "id": "a",
        "method": "x",
        "params": {"k": 1},
    }
    assert Notification("n").to_json() == {"jsonrpc": "2.0", "method": "n"}
    assert Notification("n", {}).to_json() == {"jsonrpc": "2.0", "method": "n", "params": {}}
    assert Response(3, {"a": 1}).to_json() == {"jsonrpc": "2.0", "id": 3, "result": {"a": 1}}
    assert ErrorResponse(3, -1, "m").to_json() == {
        "jsonrpc": "2.0",
        "id": 3,
        "error": {"code": -1, "message": "m"},
    }
    # no null id on the wire: an unreadable id is left out
    assert ErrorResponse(None, -32700, "m", [1]).to_json() == {
        "jsonrpc": "2.0",
        "error": {"code": -32700, "message": "m", "data": [1]},
    }


def test_error_response_from_exception() -> None:
    exc = RemoteProtocolError("bad", code=INVALID_PARAMS, data={"errors": ["x"]})
    assert error_response(4, exc) == ErrorResponse(4, INVALID_PARAMS, "bad", {"errors": ["x"]})


json_scalars = st.none() | st.booleans() | st.integers() | st.text(max_size=5)
json_values = st.recursive(
    json_scalars | st.floats(allow_nan=False, allow_infinity=False),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner),
    max_leaves=8,
)
ids = st.integers() | st.text(max_size=8)
params = st.none() | st.dictionaries(
    st.text(max_size=6).filter(lambda key: key != "_meta"), json_values, max_size=3
)
methods = st.text(min_size=1, max_size=20)
messages = st.one_of(
    st.builds(Request, ids, methods, params),
    st.builds(Notification, methods, params),
    st.builds(Response, ids, st.dictionaries(st.text(max_size=6), json_values, max_size=3)),
    st.builds(ErrorResponse, st.none() | ids, st.integers(), st.text(max_size=10), json_values),
)


@given(messages)
def test_classify_round_trips_to_json(message: Any) -> None:
    assert classify(message.to_json()) == message
