"""Fuzzing the core: bytes through framer, decoder and session; JSON values through receive.

Every input is judged by a small model written from the spec's rules (JSON-RPC 2.0 and
the MCP lifecycle), independently of the code under test: it says which reply each
message must get, with which code and id. The code must agree on every input, raise
nothing it does not document, and keep serving afterwards.
"""

from __future__ import annotations

import json
import math
from typing import Any, Final

import attrs
import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mcpactor._exceptions import (
    INVALID_PARAMS,
    INVALID_REQUEST,
    METHOD_NOT_FOUND,
    PARSE_ERROR,
    RemoteProtocolError,
)
from mcpactor.protocol import (
    LOG_LEVELS,
    Exchange,
    FrameTooLong,
    LineFramer,
    Phase,
    Send,
    ServerSession,
    decode,
    negotiate,
)
from tests.protocol.helpers import SESSION_VERSIONS, notification, request, session_in
from tests.spec_schema import check_server_message

FUZZ: Final = settings(
    max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
MISSING: Final = "<no id>"
NOT_JSON: Final = object()
LIMIT: Final = 200


def _is_id(value: object) -> bool:
    return type(value) is int or type(value) is str


# --- the model --------------------------------------------------------------------------


@attrs.define
class Model:
    """What a spec-abiding server session must answer, message by message."""

    phase: Phase
    version: str
    in_flight: set[Any] = attrs.field(factory=set)
    #: the session's exchange for each request it handed on, to answer it through
    exchanges: dict[Any, Exchange] = attrs.field(factory=dict)

    @property
    def batching(self) -> bool:
        return self.version == "2025-03-26" and self.phase is not Phase.AWAITING_INITIALIZE

    def expect(self, value: Any) -> tuple[str, Any, Any]:
        """One of ("error", id, code), ("result", id, {}), ("init", id, version),
        ("request", id, None) or ("silent", None, None)."""
        if self.phase is Phase.CLOSED:
            return ("silent", None, None)
        if type(value) is not dict:
            return ("error", MISSING, INVALID_REQUEST)
        readable = value["id"] if _is_id(value.get("id")) else MISSING
        if value.get("jsonrpc") != "2.0":
            return ("error", readable, INVALID_REQUEST)
        method = value.get("method")
        if method is not None:
            params = value.get("params")
            if type(method) is not str or method == "":
                return ("error", readable, INVALID_REQUEST)
            if "result" in value or "error" in value:
                return ("error", readable, INVALID_REQUEST)
            if "id" in value and readable is MISSING:
                return ("error", MISSING, INVALID_REQUEST)
            if "params" in value:
                # JSON-RPC params are structured; MCP's are an object, whose _meta is an
                # object with a string or integer progressToken.
                if params is None or type(params) is list:
                    return ("error", readable, INVALID_PARAMS)
                if type(params) is not dict:
                    return ("error", readable, INVALID_REQUEST)
                if "_meta" in params:
                    meta = params["_meta"]
                    if type(meta) is not dict:
                        return ("error", readable, INVALID_PARAMS)
                    if "progressToken" in meta and not _is_id(meta["progressToken"]):
                        return ("error", readable, INVALID_PARAMS)
            if "id" not in value:
                self._notification(method)
                return ("silent", None, None)
            return self._request(readable, method, params or {})
        if "result" in value:
            if "error" in value or readable is MISSING:
                return ("error", readable, INVALID_REQUEST)
            if type(value["result"]) is not dict:
                return ("error", readable, INVALID_REQUEST)
            return ("silent", None, None)
        if "error" in value:
            error = value["error"]
            if (
                type(error) is not dict
                or type(error.get("code")) is not int
                or type(error.get("message")) is not str
            ):
                return ("error", readable, INVALID_REQUEST)
            if value.get("id") is not None and readable is MISSING:
                return ("error", MISSING, INVALID_REQUEST)
            return ("silent", None, None)
        return ("error", readable, INVALID_REQUEST)

    def keep_exchanges(self, events: list[Any]) -> list[Any]:
        """Keep the exchanges among ``events`` for answering later; return their ids."""
        started = []
        for event in events:
            if type(event) is Exchange:
                assert event.request.id not in self.exchanges, events
                self.exchanges[event.request.id] = event
                started.append(event.request.id)
        return started

    def _notification(self, method: str) -> None:
        if method == "notifications/initialized" and self.phase is Phase.AWAITING_INITIALIZED:
            self.phase = Phase.OPERATING

    def _request(
        self, request_id: Any, method: str, params: dict[str, Any]
    ) -> tuple[str, Any, Any]:
        if request_id in self.in_flight:
            return ("error", request_id, INVALID_REQUEST)
        if not method.isprintable():
            # No method is named with control or unassigned characters, in any phase.
            return ("error", request_id, METHOD_NOT_FOUND)
        if self.phase is Phase.AWAITING_INITIALIZE and method not in ("initialize", "ping"):
            return ("error", request_id, INVALID_REQUEST)
        if method == "initialize":
            if self.phase is not Phase.AWAITING_INITIALIZE:
                return ("error", request_id, INVALID_REQUEST)
            version = params.get("protocolVersion")
            capabilities = params.get("capabilities")
            client_info = params.get("clientInfo")
            if (
                type(version) is not str
                or (capabilities is not None and type(capabilities) is not dict)
                or (client_info is not None and type(client_info) is not dict)
            ):
                return ("error", request_id, INVALID_PARAMS)
            self.phase = Phase.AWAITING_INITIALIZED
            self.version = negotiate(version).version
            return ("init", request_id, self.version)
        if method == "ping":
            return ("result", request_id, {})
        if method == "logging/setLevel":
            if params.get("level") in LOG_LEVELS and type(params.get("level")) is str:
                return ("result", request_id, {})
            return ("error", request_id, INVALID_PARAMS)
        self.in_flight.add(request_id)
        return ("request", request_id, None)


def payload_matches(payload: Any, expected: tuple[str, Any, Any]) -> bool:
    kind, request_id, detail = expected
    if kind == "error":
        return bool(
            payload.get("id", MISSING) == request_id
            and type(payload.get("id", MISSING)) is type(request_id)
            and payload["error"]["code"] == detail
        )
    if kind == "result":
        return bool(payload == {"jsonrpc": "2.0", "id": request_id, "result": detail})
    assert kind == "init"
    return bool(payload["id"] == request_id and payload["result"]["protocolVersion"] == detail)


def check_reply(session: ServerSession, model: Model, value: Any) -> None:
    """Feed one value and hold the machine to the model."""
    if type(value) is list and model.phase is not Phase.CLOSED:
        if model.batching and value:
            return check_batch(session, model, value)
        # a batch where the revision has none, before initialize, or an empty one
        expected: tuple[str, Any, Any] = ("error", MISSING, INVALID_REQUEST)
    else:
        expected = model.expect(value)
    events = session.receive(value)
    sends = [event.payload for event in events if type(event) is Send]
    started = model.keep_exchanges(events)
    for payload in sends:
        check_server_message(payload, model.version, request_method=_method(value))
    kind = expected[0]
    if kind == "silent":
        assert (sends, started) == ([], []), (value, events)
    elif kind == "request":
        assert (sends, started) == ([], [expected[1]]), (value, events)
    else:
        assert started == [], (value, events)
        assert len(sends) == 1, (value, events)
        assert payload_matches(sends[0], expected), (value, expected, sends)
    assert session.phase is model.phase


def check_batch(session: ServerSession, model: Model, values: list[Any]) -> None:
    immediate: list[tuple[str, Any, Any]] = []
    waiting: list[Any] = []
    for value in values:
        if type(value) is dict and value.get("method") == "initialize":
            readable = value["id"] if _is_id(value.get("id")) else MISSING
            expected = ("error", readable, INVALID_REQUEST)
        else:
            expected = model.expect(value)
        if expected[0] == "request":
            waiting.append(expected[1])
        elif expected[0] != "silent":
            immediate.append(expected)
    events = session.receive(values)
    sends = [event.payload for event in events if type(event) is Send]
    started = model.keep_exchanges(events)
    assert started == waiting, (values, events)
    if waiting:
        assert sends == []
        reply = None
        for request_id in waiting:
            model.in_flight.discard(request_id)
            assert reply is None
            reply = model.exchanges.pop(request_id).respond({"n": 1})
        sends = [reply] if reply is not None else []
    if not immediate and not waiting:
        assert sends == []
        return
    (batch,) = sends
    check_server_message(batch, model.version)
    answered = [("result", request_id, {"n": 1}) for request_id in waiting]
    assert len(batch) == len(immediate) + len(answered)
    for payload, expected in zip(batch, immediate + answered, strict=True):
        assert payload_matches(payload, expected), (values, batch)


def _method(value: Any) -> str | None:
    method = value.get("method") if type(value) is dict else None
    return method if type(method) is str else None


def finish(session: ServerSession, model: Model) -> None:
    """Answer what is still in flight; then a ping must still get ``{}``."""
    for request_id in list(model.in_flight):
        model.exchanges.pop(request_id).respond({})
    assert model.exchanges == {}
    model.in_flight.clear()
    assert list(session.in_flight()) == []
    events = session.receive(request("final-ping", "ping"))
    if model.phase is Phase.CLOSED:
        assert events == []
    else:
        assert [e.payload for e in events if type(e) is Send] == [
            {"jsonrpc": "2.0", "id": "final-ping", "result": {}}
        ]


# --- strategies -----------------------------------------------------------------------

json_scalars = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**63), max_value=2**64 - 1)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=6)
)
json_values = st.recursive(
    json_scalars,
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner, max_size=3)
    ),
    max_leaves=6,
)
METHODS = [
    "initialize",
    "ping",
    "logging/setLevel",
    "tools/list",
    "tools/call",
    "notifications/initialized",
    "notifications/cancelled",
    "notifications/roots/list_changed",
    "notifications/x",
    "",
]
ids = st.integers(-3, 3) | st.sampled_from(["a", "b", ""]) | json_values
params = st.one_of(
    st.fixed_dictionaries(
        {},
        optional={
            "protocolVersion": st.sampled_from([*SESSION_VERSIONS, "2099-01-01"]) | json_values,
            "capabilities": st.just({}) | json_values,
            "clientInfo": st.just({"name": "c", "version": "1"}) | json_values,
            "level": st.sampled_from([*LOG_LEVELS, "loud"]) | json_values,
            "requestId": ids,
        },
    ),
    json_values,
)
error_objects = st.fixed_dictionaries(
    {},
    optional={
        "code": st.integers(-33000, 0) | json_values,
        "message": st.text(max_size=5) | json_values,
        "data": json_values,
    },
)
# Message-shaped objects: each member present or not, well-typed or not.
message_like = st.fixed_dictionaries(
    {},
    optional={
        "jsonrpc": st.just("2.0") | json_values,
        "id": ids,
        "method": st.sampled_from(METHODS) | json_values,
        "params": params,
        "result": st.just({}) | json_values,
        "error": error_objects | json_values,
    },
)
small_ids = st.integers(0, 4) | st.sampled_from(["a", "b"])
init_params = st.fixed_dictionaries(
    {"protocolVersion": st.sampled_from([*SESSION_VERSIONS, "2099-01-01"])},
    optional={
        "capabilities": st.just({"sampling": {}}),
        "clientInfo": st.just({"name": "c", "version": "1"}),
    },
)
# Well-formed messages of every kind the machine treats differently.
well_formed = st.one_of(
    st.builds(request, small_ids, st.just("initialize"), init_params),
    st.builds(request, small_ids, st.just("ping"), st.none() | st.just({})),
    st.builds(
        request,
        small_ids,
        st.just("logging/setLevel"),
        st.builds(lambda level: {"level": level}, st.sampled_from([*LOG_LEVELS, "loud"])),
    ),
    st.builds(
        request,
        small_ids,
        st.sampled_from(["tools/list", "tools/call", "resources/read"]),
        st.none() | st.just({"name": "t"}),
    ),
    st.builds(
        notification,
        st.sampled_from(
            ["notifications/initialized", "notifications/roots/list_changed", "notifications/x"]
        ),
    ),
    st.builds(
        lambda request_id: notification("notifications/cancelled", {"requestId": request_id}),
        small_ids,
    ),
    st.builds(lambda i: {"jsonrpc": "2.0", "id": i, "result": {}}, small_ids),
    st.builds(
        lambda i: {"jsonrpc": "2.0", "id": i, "error": {"code": -1, "message": "m"}},
        st.none() | small_ids,
    ),
)
# ... and the same with one member replaced by something arbitrary, or removed.
corrupted = st.builds(
    lambda message, key, value, drop: (
        {k: v for k, v in message.items() if k != key} if drop else {**message, key: value}
    ),
    well_formed,
    st.sampled_from(["jsonrpc", "id", "method", "params", "result", "error"]),
    json_values,
    st.booleans(),
)
messages = well_formed | well_formed | corrupted | message_like | json_values
values = messages | st.lists(messages, max_size=4)


# --- arbitrary JSON values in every phase ----------------------------------------------


@FUZZ
@given(
    phase=st.sampled_from(list(Phase)),
    version=st.sampled_from(SESSION_VERSIONS),
    inputs=st.lists(values, max_size=6),
)
def test_json_values_in_every_phase(phase: Phase, version: str, inputs: list[Any]) -> None:
    session = session_in(phase, version)
    model = Model(phase, version if phase is not Phase.AWAITING_INITIALIZE else "2025-11-25")
    for value in inputs:
        check_reply(session, model, value)
    finish(session, model)


# --- arbitrary bytes through framer, decoder and session ---------------------------------


def reference_decode(line: bytes) -> Any:
    """RFC 8259 JSON as a strict decoder reads it; ValueError for anything else."""
    text = line.decode("utf-8")  # rejects invalid UTF-8 and encoded surrogates

    def reject(token: str) -> Any:
        raise ValueError(f"{token} is not JSON")

    def number(token: str) -> Any:
        # integers beyond 64 bits become doubles, as in most JSON decoders
        value: Any = int(token) if len(token) < 25 else None
        if value is None or not -(2**63) <= value < 2**64:
            value = float(token)
        if math.isinf(value):
            raise ValueError("number out of range")
        return value

    def real(token: str) -> float:
        value = float(token)
        if math.isinf(value):
            raise ValueError("number out of range")
        return value

    value = json.loads(text, parse_constant=reject, parse_int=number, parse_float=real)
    _no_lone_surrogates(value)
    return value


def _no_lone_surrogates(value: Any) -> None:
    if type(value) is str:
        value.encode("utf-8")  # a lone surrogate from a \uD800 escape cannot be encoded
    elif type(value) is list:
        for item in value:
            _no_lone_surrogates(item)
    elif type(value) is dict:
        for key, item in value.items():
            _no_lone_surrogates(key)
            _no_lone_surrogates(item)


def mutate(data: bytes, edits: list[tuple[int, int, bytes]]) -> bytes:
    for position, cut, insert in edits:
        at = position % (len(data) + 1)
        data = data[:at] + insert + data[at + cut % 3 :]
    return data


encoded = messages.map(orjson.dumps)
lines = st.one_of(
    st.binary(max_size=30),
    encoded,
    encoded,
    st.builds(
        mutate,
        encoded,
        st.lists(
            st.tuples(st.integers(0), st.integers(0), st.binary(max_size=3)),
            min_size=1,
            max_size=3,
        ),
    ),
    st.sampled_from(
        [b"", b"  ", b"\r", b"\xef\xbb\xbf{}", b"[" * 90 + b"]" * 90, b"x" * (LIMIT + 1)]
    ),
).map(lambda line: line.replace(b"\n", b""))


@FUZZ
@given(
    version=st.sampled_from(SESSION_VERSIONS),
    initialize_first=st.booleans(),
    stream_lines=st.lists(lines, max_size=8),
    crlf=st.booleans(),
    cuts=st.lists(st.integers(min_value=0), max_size=6),
)
def test_bytes_through_framer_decoder_and_session(
    version: str,
    initialize_first: bool,
    stream_lines: list[bytes],
    crlf: bool,
    cuts: list[int],
) -> None:
    phase = Phase.OPERATING if initialize_first else Phase.AWAITING_INITIALIZE
    session = session_in(phase, version)
    model = Model(phase, version if initialize_first else "2025-11-25")
    framer = LineFramer(max_line_bytes=LIMIT)
    ending = b"\r\n" if crlf else b"\n"
    stream = b"".join(line + ending for line in stream_lines)
    points = sorted({cut % (len(stream) + 1) for cut in cuts})
    chunks = [stream[a:b] for a, b in zip([0, *points], [*points, len(stream)], strict=True)]

    frames: list[bytes | FrameTooLong] = []
    for chunk in chunks:
        frames += framer.feed(chunk)
    assert framer.flush() is None  # every line was terminated

    expected_lines = [line + ending[:-1] for line in stream_lines if (line + ending[:-1]).strip()]
    assert len(frames) == len(expected_lines)
    for frame, line in zip(frames, expected_lines, strict=True):
        if len(line) > LIMIT:
            assert frame == FrameTooLong(size=len(line), limit=LIMIT)
            assert frame.to_exception().code == PARSE_ERROR
            continue
        assert frame == line
        try:
            value = reference_decode(line)
        except (ValueError, RecursionError):
            value = NOT_JSON
        if value is NOT_JSON:
            with pytest.raises(RemoteProtocolError) as info:
                decode(line)
            assert info.value.code == PARSE_ERROR
            continue
        assert decode(line) == value
        check_reply(session, model, value)
    finish(session, model)
