"""Newline framing with a size limit, and JSON decoding of frames."""

from __future__ import annotations

from typing import Any

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mcpactor._exceptions import PARSE_ERROR, RemoteProtocolError
from mcpactor.protocol import (
    DEFAULT_MAX_LINE_BYTES,
    FrameTooLong,
    LineFramer,
    decode,
    encode,
    serialize,
)


def feed_all(framer: LineFramer, chunks: list[bytes]) -> list[bytes | FrameTooLong]:
    """Feed every chunk, then flush, collecting every frame in order."""
    frames: list[bytes | FrameTooLong] = []
    for chunk in chunks:
        frames.extend(framer.feed(chunk))
        assert framer.pending() <= framer.max_line_bytes
    last = framer.flush()
    if last is not None:
        frames.append(last)
    return frames


def test_feed_whole_lines() -> None:
    framer = LineFramer()
    assert framer.feed(b'{"a":1}\n[2]\n') == [b'{"a":1}', b"[2]"]
    assert framer.pending() == 0
    assert framer.flush() is None


def test_feed_partial_line_waits_for_newline() -> None:
    framer = LineFramer()
    assert framer.feed(b'{"a"') == []
    assert framer.pending() == 4
    assert framer.feed(b":1}") == []
    assert framer.feed(b"\n{") == [b'{"a":1}']
    assert framer.pending() == 1
    assert framer.feed(b"}\n") == [b"{}"]


def test_feed_copies_out_of_a_bytearray() -> None:
    framer = LineFramer()
    data = bytearray(b"[1]\n[2")
    frames = framer.feed(data)
    data[:] = b"xxxxxx"  # the framer must not keep a view of the caller's buffer
    assert frames == [b"[1]"]
    assert framer.feed(b"]\n") == [b"[2]"]
    assert all(type(frame) is bytes for frame in frames)


def test_crlf_lines_decode() -> None:
    framer = LineFramer()
    frames = framer.feed(b'{"a":1}\r\n{"b":2}\r\n')
    assert frames == [b'{"a":1}\r', b'{"b":2}\r']
    assert [decode(frame) for frame in frames if type(frame) is bytes] == [{"a": 1}, {"b": 2}]


@pytest.mark.parametrize("blank", [b"\n", b"\r\n", b"  \n", b"\t \r\n", b"\n\n\n"])
def test_blank_lines_are_skipped(blank: bytes) -> None:
    framer = LineFramer()
    assert framer.feed(blank + b"[1]\n" + blank) == [b"[1]"]
    assert framer.flush() is None


def test_flush_returns_unterminated_last_line_once() -> None:
    framer = LineFramer()
    assert framer.feed(b"[1]\n[2]") == [b"[1]"]
    assert framer.flush() == b"[2]"
    assert framer.flush() is None
    assert framer.pending() == 0


@pytest.mark.parametrize("tail", [b"", b"  ", b"\r", b" \t"])
def test_flush_of_nothing_or_blank_is_none(tail: bytes) -> None:
    framer = LineFramer()
    framer.feed(tail)
    assert framer.flush() is None


def test_line_of_exactly_the_limit_is_a_frame() -> None:
    framer = LineFramer(max_line_bytes=8)
    assert framer.feed(b"12345678\n") == [b"12345678"]
    # the same, arriving one byte at a time
    frames: list[bytes | FrameTooLong] = []
    for byte in b"12345678\n":
        frames += framer.feed(bytes([byte]))
    assert frames == [b"12345678"]


@pytest.mark.parametrize(
    "chunks",
    [
        pytest.param([b"123456789\n[1]\n"], id="one-chunk"),
        pytest.param([b"123456789", b"\n[1]\n"], id="newline-in-next-chunk"),
        pytest.param([b"1234", b"56789\n[1]", b"\n"], id="overflow-on-second-chunk"),
        pytest.param([bytes([b]) for b in b"123456789\n[1]\n"], id="byte-by-byte"),
        pytest.param([b"12345678", b"9", b"\n[1]\n"], id="overflow-by-one"),
    ],
)
def test_too_long_line_reported_once_then_stream_continues(chunks: list[bytes]) -> None:
    framer = LineFramer(max_line_bytes=8)
    assert feed_all(framer, chunks) == [FrameTooLong(size=9, limit=8), b"[1]"]


def test_too_long_line_is_not_buffered() -> None:
    framer = LineFramer(max_line_bytes=10)
    framer.feed(b"x" * 5)
    framer.feed(b"x" * 100)
    assert framer.pending() == 0
    framer.feed(b"y" * 1000)
    assert framer.pending() == 0
    assert framer.feed(b"z\n{}\n") == [FrameTooLong(size=1106, limit=10), b"{}"]


def test_too_long_line_at_end_of_input() -> None:
    framer = LineFramer(max_line_bytes=4)
    assert framer.feed(b"[1]\n" + b"7" * 6) == [b"[1]"]
    assert framer.flush() == FrameTooLong(size=6, limit=4)
    assert framer.flush() is None


def test_frame_too_long_becomes_parse_error() -> None:
    exc = FrameTooLong(size=20, limit=10).to_exception()
    assert isinstance(exc, RemoteProtocolError)
    assert exc.code == PARSE_ERROR
    assert exc.data == {"limit": 10}
    assert "20" in exc.message
    assert "10" in exc.message


def test_default_limit() -> None:
    assert LineFramer().max_line_bytes == DEFAULT_MAX_LINE_BYTES == 4 * 1024 * 1024


# --- splitting a stream anywhere gives the same frames --------------------------------

LIMIT = 16
lines = st.one_of(
    st.binary(max_size=LIMIT + 8).map(lambda b: b.replace(b"\n", b"")),
    st.sampled_from([b"", b"\r", b"  ", b'{"jsonrpc":"2.0"}\r', b"x" * LIMIT, b"y" * (LIMIT + 1)]),
)


def expected_frames(stream_lines: list[bytes]) -> list[bytes | FrameTooLong]:
    """What the framer must produce, worked out line by line."""
    frames: list[bytes | FrameTooLong] = []
    for line in stream_lines:
        if len(line) > LIMIT:
            frames.append(FrameTooLong(size=len(line), limit=LIMIT))
        elif line.strip():
            frames.append(line)
    return frames


@given(
    stream_lines=st.lists(lines, max_size=8),
    terminated=st.booleans(),
    cuts=st.lists(st.integers(min_value=0), max_size=12),
)
@settings(max_examples=300)
def test_any_split_gives_the_same_frames(
    stream_lines: list[bytes], terminated: bool, cuts: list[int]
) -> None:
    stream = b"\n".join(stream_lines) + (b"\n" if terminated and stream_lines else b"")
    points = sorted({cut % (len(stream) + 1) for cut in cuts})
    chunks = [stream[a:b] for a, b in zip([0, *points], [*points, len(stream)], strict=True)]
    assert b"".join(chunks) == stream
    expected = expected_frames(stream_lines)
    assert feed_all(LineFramer(max_line_bytes=LIMIT), [stream]) == expected
    assert feed_all(LineFramer(max_line_bytes=LIMIT), chunks) == expected


# --- decode and encode ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("frame", "value"),
    [
        (b"{}", {}),
        (b' {"a": [1, 2.5, null, true]} ', {"a": [1, 2.5, None, True]}),
        (b'"\\u00e9\xc3\xa9"', "éé"),
        (b"[]\r", []),
        (b"18446744073709551615", 18446744073709551615),
    ],
)
def test_decode_valid(frame: bytes, value: Any) -> None:
    assert decode(frame) == value


@pytest.mark.parametrize(
    "frame",
    [
        pytest.param(b"", id="empty"),
        pytest.param(b"{", id="truncated"),
        pytest.param(b"{}x", id="trailing-garbage"),
        pytest.param(b"{} {}", id="two-values"),
        pytest.param(b"{'a': 1}", id="single-quotes"),
        pytest.param(b"NaN", id="nan"),
        pytest.param(b"[Infinity]", id="infinity"),
        pytest.param(b"1e400", id="overflowing-number"),
        pytest.param(b"\xff\xfe", id="invalid-utf8"),
        pytest.param(b'"\xed\xa0\x80"', id="utf8-encoded-surrogate"),
        pytest.param(b'"caf\xe9"', id="latin1"),
        pytest.param(b'"\\ud800"', id="lone-surrogate-escape"),
        pytest.param(b"[" * 2000 + b"]" * 2000, id="too-deep"),
        pytest.param(b"\xef\xbb\xbf{}", id="byte-order-mark"),
    ],
)
def test_decode_invalid_is_parse_error(frame: bytes) -> None:
    with pytest.raises(RemoteProtocolError) as info:
        decode(frame)
    assert info.value.code == PARSE_ERROR
    assert type(info.value.data["position"]) is int
    assert info.value.message.startswith("invalid JSON")


json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**63), max_value=2**64 - 1)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
    max_leaves=12,
)


@given(json_values)
def test_encode_is_one_frame(value: Any) -> None:
    data = encode(value)
    # strings with newlines are escaped: one value is always exactly one line
    assert data.endswith(b"\n")
    assert data.count(b"\n") == 1
    framer = LineFramer()
    (frame,) = framer.feed(data)
    assert type(frame) is bytes
    assert decode(frame) == value
    assert orjson.loads(data) == value


# --- what we write is held to the transport's message limit (issue 43, item 17) ------


def _response(request_id: Any, text: str) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request_id, "result": {"text": text}}


def test_a_response_within_the_limit_is_written_as_it_is() -> None:
    reply = _response(1, "x" * 100)
    exact = len(orjson.dumps(reply))
    assert serialize(reply, exact) == orjson.dumps(reply)
    assert encode(reply, exact) == orjson.dumps(reply) + b"\n"
    assert serialize(reply, None) == orjson.dumps(reply)


def test_a_response_over_the_limit_becomes_an_error_naming_the_limit() -> None:
    reply = _response("r-1", "é" * 1000)  # 1 000 characters, 2 000 bytes and more
    size = len(orjson.dumps(reply))
    written = orjson.loads(encode(reply, 1024))
    assert written == {
        "jsonrpc": "2.0",
        "id": "r-1",
        "error": {
            "code": -32603,
            "message": f"the response is {size} bytes, over the 1024-byte message limit",
            "data": {"limit": 1024},
        },
    }


def test_an_error_response_over_the_limit_keeps_its_code_and_says_why() -> None:
    error = {
        "jsonrpc": "2.0",
        "id": 4,
        "error": {"code": -32602, "message": "m" * 2000, "data": "d" * 5000},
    }
    written = orjson.loads(serialize(error, 1024) or b"")
    assert written["id"] == 4
    assert written["error"]["code"] == -32602
    assert written["error"]["data"] == {"limit": 1024}
    assert written["error"]["message"].endswith("over the 1024-byte message limit)")
    assert len(orjson.dumps(written)) <= 1024


def test_a_notification_or_request_over_the_limit_is_not_written() -> None:
    note = {"jsonrpc": "2.0", "method": "notifications/message", "params": {"data": "x" * 2000}}
    ask = {"jsonrpc": "2.0", "id": 1, "method": "sampling/createMessage", "params": note}
    assert serialize(note, 1024) is None
    assert serialize(ask, 1024) is None
    assert encode(note, 1024) == b""
    # An id longer than the limit leaves nothing that could be sent in its place.
    assert serialize(_response("i" * 2000, ""), 1024) is None


def test_each_reply_of_a_batch_is_held_to_the_limit_on_its_own() -> None:
    small, big = _response(1, "ok"), _response(2, "x" * 2000)
    written = orjson.loads(serialize([small, big], 1024) or b"")
    assert written[0] == small
    assert (written[1]["id"], written[1]["error"]["data"]) == (2, {"limit": 1024})
