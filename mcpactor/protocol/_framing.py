# Newline-delimited JSON framing (the stdio transport), sans-io.
#
# ``LineFramer.feed`` takes whatever bytes arrived and returns the complete lines in
# them. A line longer than ``max_line_bytes`` is not buffered: the framer drops bytes
# until the next newline and reports one ``FrameTooLong`` in its place, so a hostile or
# broken peer costs at most ``max_line_bytes`` of memory and the session keeps going.
# ``decode`` turns one frame into a JSON value or a RemoteProtocolError: -32700 when it is
# not JSON (orjson parses at most 1024 levels), -32600 when it nests deeper than
# ``MAX_DEPTH`` (128 levels, see _bounded.py); a response nested too deep becomes an error
# response for its id, so whoever waits for it hears why instead of waiting forever.
# ``encode``/``serialize`` never raise: a response whose result cannot be written as JSON
# (nested 255 levels or more, a key that is not a string, an int past 64 bits, a
# non-JSON object) goes out as a -32603 error response for its id instead. Given a
# ``limit`` (the transport's largest message, the one its peer is held to), a response
# whose JSON is larger goes out the same way, with ``data: {"limit": …}`` like every
# refusal over a limit; the check is one comparison of the length just written.

from __future__ import annotations

from typing import Final

import attrs
import orjson

from .._exceptions import INTERNAL_ERROR, INVALID_REQUEST, PARSE_ERROR, RemoteProtocolError
from ._bounded import MAX_DEPTH, clip, exceeds_depth
from ._jsonrpc import JSONValue

__all__ = [
    "DEFAULT_MAX_LINE_BYTES",
    "FrameTooLong",
    "LineFramer",
    "decode",
    "encode",
    "serialize",
]

DEFAULT_MAX_LINE_BYTES: Final = 4 * 1024 * 1024

# The shortest JSON text nesting objects alone MAX_DEPTH + 1 levels deep: the outermost
# object's two braces and five bytes for each level below it.
_SHORTEST_TOO_DEEP_OBJECTS: Final = 2 + 5 * MAX_DEPTH


@attrs.frozen
class FrameTooLong:
    """A line was longer than the limit and was dropped."""

    size: int
    limit: int

    def to_exception(self) -> RemoteProtocolError:
        """Return the -32700 error that answers this frame."""
        return RemoteProtocolError(
            f"message of at least {self.size} bytes exceeds the {self.limit}-byte limit",
            code=PARSE_ERROR,
            data={"limit": self.limit},
        )


class LineFramer:
    """Split a byte stream into newline-terminated frames, bounded in size."""

    def __init__(self, max_line_bytes: int = DEFAULT_MAX_LINE_BYTES) -> None:
        self.max_line_bytes = max_line_bytes
        self._buffer = bytearray()
        # Bytes of an over-long line dropped so far; -1 when not skipping.
        self._skipped = -1

    def feed(self, data: bytes | bytearray) -> list[bytes | FrameTooLong]:
        """Take newly arrived bytes; return the frames they complete, in order.

        A blank line (whitespace only) is no frame.
        """
        frames: list[bytes | FrameTooLong] = []
        limit = self.max_line_bytes
        buffer = self._buffer
        start = 0
        while True:
            end = data.find(b"\n", start)
            if end < 0:
                break
            if self._skipped >= 0:
                frames.append(FrameTooLong(self._skipped + end - start, limit))
                self._skipped = -1
            else:
                if buffer:
                    buffer += data[start:end]
                    line = bytes(buffer)
                    buffer.clear()
                else:
                    line = bytes(data[start:end])
                if len(line) > limit:
                    frames.append(FrameTooLong(len(line), limit))
                elif line.strip():
                    frames.append(line)
            start = end + 1
        rest = len(data) - start
        if rest:
            if self._skipped >= 0:
                self._skipped += rest
            elif len(buffer) + rest > limit:
                self._skipped = len(buffer) + rest
                buffer.clear()
            else:
                buffer += data[start:]
        return frames

    def flush(self) -> bytes | FrameTooLong | None:
        """At end of input: the last line if it had no newline, else None."""
        if self._skipped >= 0:
            frame: bytes | FrameTooLong = FrameTooLong(self._skipped, self.max_line_bytes)
        elif self._buffer.strip():
            frame = bytes(self._buffer)
        else:
            frame = None  # type: ignore[assignment]
        self._buffer.clear()
        self._skipped = -1
        return frame

    def pending(self) -> int:
        """Return how many bytes of an incomplete line are buffered."""
        return len(self._buffer)


def decode(frame: bytes | bytearray | memoryview | str) -> JSONValue:
    """Decode one frame into a JSON value of at most ``MAX_DEPTH`` levels.

    Raises:
        RemoteProtocolError: -32700 if the frame is not UTF-8 JSON; -32600 if it nests
            deeper than ``MAX_DEPTH`` (naming the request's id when it has one).
    """
    try:
        value = orjson.loads(frame)
    except orjson.JSONDecodeError as exc:
        raise RemoteProtocolError(
            f"invalid JSON: {exc}", code=PARSE_ERROR, data={"position": exc.pos}
        ) from None
    # Every level takes two bytes, and one "[" or "{" at least: most frames are ruled
    # out without looking at the value.
    size = len(frame)
    if size > 2 * MAX_DEPTH:
        if type(frame) is bytes and frame.find(b"[") < 0:
            # No arrays (most frames, every stateless request's envelope among them):
            # a level below the first is an object that is a member's value, five bytes
            # at least ({"":} around what it holds), so a frame too short for that is
            # ruled out without counting its braces.
            if size < _SHORTEST_TOO_DEEP_OBJECTS:
                return value
            openers = frame.count(b"{")
        else:
            openers = _openers(frame)
        if openers > MAX_DEPTH and exceeds_depth(value, MAX_DEPTH):
            return _too_deep(value)
    return value


def _openers(frame: bytes | bytearray | memoryview | str) -> int:
    if isinstance(frame, str):
        return frame.count("[") + frame.count("{")
    data = frame if not isinstance(frame, memoryview) else frame.tobytes()
    # ``find`` looks for a byte with memchr, much faster than ``count`` walks the frame:
    # most messages have no array at all, and then one count is enough. (Not ``in``: on
    # bytes it first tries the operand as an integer, raising and clearing a TypeError.)
    if data.find(b"[") < 0:
        return data.count(b"{")
    return data.count(b"[") + data.count(b"{")


def _too_deep(value: JSONValue) -> JSONValue:
    why = f"the message nests deeper than {MAX_DEPTH} levels"
    if type(value) is dict:
        raw_id = value.get("id")
        request_id = raw_id if type(raw_id) is int or type(raw_id) is str else None
        if (
            request_id is not None
            and "method" not in value
            and ("result" in value or "error" in value)
        ):
            # A response (to a request of ours): whoever waits for it gets this instead.
            return {
                "jsonrpc": "2.0",
                "id": request_id,
                "error": {"code": INVALID_REQUEST, "message": f"invalid response: {why}"},
            }
        raise RemoteProtocolError(
            why, code=INVALID_REQUEST, data={"maxDepth": MAX_DEPTH}, request_id=request_id
        )
    raise RemoteProtocolError(why, code=INVALID_REQUEST, data={"maxDepth": MAX_DEPTH})


def serialize(value: JSONValue, limit: int | None = None) -> bytes | None:
    """Return the JSON of one outgoing message or batch; never raises.

    A response whose content cannot be written as JSON, or whose JSON is longer than
    ``limit`` bytes, becomes a -32603 error response for its id; a request or
    notification that cannot be written, or is too long, is None (not sent).
    """
    try:
        data = orjson.dumps(value)
    except TypeError as exc:  # orjson.JSONEncodeError
        if type(value) is list:
            return _batch(value, limit)
        why = f"could not be written as JSON: {exc}"
        return _unwritable(value, f"the response {why}", f"its data {why}")
    if limit is not None and len(data) > limit:
        if type(value) is list:
            return _batch(value, limit)
        why = f"is {len(data)} bytes, over the {limit}-byte message limit"
        return _unwritable(value, f"the response {why}", f"the error response {why}", limit)
    return data


def _batch(items: list[JSONValue], limit: int | None) -> bytes:
    # Each reply of a batch on its own: one that cannot go out does not take the others.
    written = [serialize(item, limit) for item in items]
    return b"[" + b",".join(item for item in written if item is not None) + b"]"


def _unwritable(
    value: JSONValue, why: str, why_of_error: str, limit: int | None = None
) -> bytes | None:
    # The error response sent instead of ``value``: -32603 saying ``why``, or the error's
    # own code and message with ``why_of_error``.
    if type(value) is not dict or "method" in value:
        return None
    if "result" not in value and "error" not in value:
        return None
    original = value.get("error")
    if (
        type(original) is dict
        and type(original.get("code")) is int
        and type(original.get("message")) is str
    ):
        # An error that cannot be sent keeps its code and says what was lost.
        message = f"{clip(original['message'])} ({why_of_error})"
        error: dict[str, JSONValue] = {"code": original["code"], "message": message}
    else:
        error = {"code": INTERNAL_ERROR, "message": why}
    if limit is not None:
        error["data"] = {"limit": limit}
    reply: dict[str, JSONValue] = {"jsonrpc": "2.0", "error": error}
    raw_id = value.get("id")
    if type(raw_id) is int or type(raw_id) is str:
        reply["id"] = raw_id
    try:
        data = orjson.dumps(reply)
    except TypeError:  # an int id past 64 bits
        del reply["id"]
        data = orjson.dumps(reply)
    if limit is not None and len(data) > limit:
        # Even this is too long (an id of more than the limit): nothing can be sent.
        return None
    return data


def encode(value: JSONValue, limit: int | None = None) -> bytes:
    """Encode one outgoing message as a newline-terminated frame; never raises.

    What ``serialize`` cannot send at all is b"" (nothing to write); ``limit`` is as
    there (the newline is not counted, as a frame read is held to its limit without it).
    """
    data = serialize(value, limit)
    return b"" if data is None else data + b"\n"
