# Newline-delimited JSON framing (the stdio transport), sans-io.
#
# ``LineFramer.feed`` takes whatever bytes arrived and returns the complete lines in
# them. A line longer than ``max_line_bytes`` is not buffered: the framer drops bytes
# until the next newline and reports one ``FrameTooLong`` in its place, so a hostile or
# broken peer costs at most ``max_line_bytes`` of memory and the session keeps going.
# ``decode`` turns one line into a JSON value or a -32700 RemoteProtocolError.

from __future__ import annotations

from typing import Final

import attrs
import orjson

from .._exceptions import PARSE_ERROR, RemoteProtocolError
from ._jsonrpc import JSONValue

__all__ = ["DEFAULT_MAX_LINE_BYTES", "FrameTooLong", "LineFramer", "decode", "encode"]

DEFAULT_MAX_LINE_BYTES: Final = 4 * 1024 * 1024


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
        """Take newly arrived bytes; return the frames they complete, in order."""
        frames: list[bytes | FrameTooLong] = []
        start = 0
        while True:
            end = data.find(b"\n", start)
            if end < 0:
                break
            if self._skipped >= 0:
                frames.append(FrameTooLong(self._skipped + end - start, self.max_line_bytes))
                self._skipped = -1
            elif self._buffer:
                self._buffer += data[start:end]
                frame = bytes(self._buffer)
                self._buffer.clear()
                frames.append(self._check(frame))
            else:
                frames.append(self._check(bytes(data[start:end])))
            start = end + 1
        rest = len(data) - start
        if rest:
            if self._skipped >= 0:
                self._skipped += rest
            elif len(self._buffer) + rest > self.max_line_bytes:
                self._skipped = len(self._buffer) + rest
                self._buffer.clear()
            else:
                self._buffer += data[start:]
        return [frame for frame in frames if not (type(frame) is bytes and _blank(frame))]

    def _check(self, frame: bytes) -> bytes | FrameTooLong:
        if len(frame) > self.max_line_bytes:
            return FrameTooLong(len(frame), self.max_line_bytes)
        return frame

    def flush(self) -> bytes | FrameTooLong | None:
        """At end of input: the last line if it had no newline, else None."""
        if self._skipped >= 0:
            frame: bytes | FrameTooLong = FrameTooLong(self._skipped, self.max_line_bytes)
        elif self._buffer and not _blank(bytes(self._buffer)):
            frame = bytes(self._buffer)
        else:
            frame = None  # type: ignore[assignment]
        self._buffer.clear()
        self._skipped = -1
        return frame

    def pending(self) -> int:
        """Return how many bytes of an incomplete line are buffered."""
        return len(self._buffer)


def _blank(frame: bytes) -> bool:
    return not frame.strip()


def decode(frame: bytes) -> JSONValue:
    """Decode one frame; raise a -32700 RemoteProtocolError if it is not UTF-8 JSON."""
    try:
        return orjson.loads(frame)
    except orjson.JSONDecodeError as exc:
        raise RemoteProtocolError(
            f"invalid JSON: {exc}", code=PARSE_ERROR, data={"position": exc.pos}
        ) from None


def encode(value: JSONValue) -> bytes:
    """Encode one JSON value as a newline-terminated frame."""
    return orjson.dumps(value) + b"\n"
