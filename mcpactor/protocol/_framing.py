# Newline-delimited JSON framing (the stdio transport), sans-io.
#
# ``LineFramer.feed`` takes whatever bytes arrived and returns the complete lines in
# them. A line longer than ``max_line_bytes`` is not buffered: the framer drops bytes
# until the next newline and reports one ``FrameTooLong`` in its place, so a hostile or
# broken peer costs at most ``max_line_bytes`` of memory and the session keeps going.
# That report's class (_too_long.py) is built with the first over-long line.
# A line's JSON is read by ``decode`` (_jsonrpc.py).

from __future__ import annotations

from typing import TYPE_CHECKING, Final

if TYPE_CHECKING:
    from ._too_long import FrameTooLong

__all__ = ["DEFAULT_MAX_LINE_BYTES", "LineFramer"]

DEFAULT_MAX_LINE_BYTES: Final = 4 * 1024 * 1024


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
        size = len(data)
        start = 0
        # Most reads end with a newline: no search of what is left after it.
        while start < size:
            end = data.find(b"\n", start)
            if end < 0:
                break
            if self._skipped >= 0:
                from ._too_long import FrameTooLong

                frames.append(FrameTooLong(self._skipped + end - start, limit))
                self._skipped = -1
            else:
                if buffer:
                    buffer += data[start:end]
                    line = bytes(buffer)
                    buffer.clear()
                else:
                    # A slice of bytes is bytes: only other buffers are copied into bytes.
                    line = data[start:end] if type(data) is bytes else bytes(data[start:end])
                if len(line) > limit:
                    from ._too_long import FrameTooLong

                    frames.append(FrameTooLong(len(line), limit))
                elif line.strip():
                    frames.append(line)
            start = end + 1
        rest = size - start
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
            from ._too_long import FrameTooLong

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
