# Server-Sent Events, read side (WHATWG HTML, "event stream interpretation").
#
# The write side is mcpactor/transports/_sse.py. Lines end with CRLF, LF or CR (a CR at
# the end of a chunk may be half of a CRLF). A block's ``id`` becomes the stream's last
# event id when the block ends, as in a browser: an id whose block was cut short is not
# one the client has seen. Limits: one event (its data and the line being read) at most
# ``max_event_bytes``.

from __future__ import annotations

from typing import Final

import attrs

from .._exceptions import INTERNAL_ERROR, RemoteProtocolError

__all__ = ["SseEvent", "SseParser"]

_BOM: Final = b"\xef\xbb\xbf"


@attrs.frozen
class SseEvent:
    """One dispatched Server-Sent Event."""

    #: the event type ("message" unless the server named another)
    event: str
    data: str
    #: the stream's last event id when this event was dispatched ("" if none)
    id: str


class SseParser:
    """An incremental ``text/event-stream`` parser (WHATWG HTML, event stream interpretation).

    ``feed`` returns the events completed by a chunk. ``last_event_id`` and ``retry_ms``
    follow the stream's ``id`` and ``retry`` fields, including those of blocks without a
    ``data`` field, which dispatch nothing. (MCP's priming event has an empty ``data``
    field: it is dispatched, with empty data.)
    """

    def __init__(self, max_event_bytes: int = 4 * 1024 * 1024) -> None:
        self.max_event_bytes = max_event_bytes
        #: the id to resume from: set when an event block ends, as a browser would
        self.last_event_id = ""
        #: the reconnection delay the server asked for, in milliseconds
        self.retry_ms: int | None = None
        self._buffer = bytearray()
        self._started = False
        self._skip_lf = False
        self._data: list[str] = []
        self._data_size = 0
        self._event = ""
        self._id: str | None = None

    def feed(self, chunk: bytes) -> list[SseEvent]:
        """Parse ``chunk``; return the events it completed.

        Raises:
            RemoteProtocolError: one event is longer than ``max_event_bytes``.
        """
        buffer = self._buffer
        buffer += chunk
        if not self._started:
            if len(buffer) < 3 and _BOM.startswith(bytes(buffer)):
                return []  # maybe the start of a byte order mark
            self._started = True
            if buffer.startswith(_BOM):
                del buffer[:3]
        events: list[SseEvent] = []
        start = 0
        while True:
            if self._skip_lf and start < len(buffer):
                # A CR ended the previous line; a LF right behind it belongs to it.
                if buffer[start] == 0x0A:
                    start += 1
                self._skip_lf = False
            cr = buffer.find(b"\r", start)
            lf = buffer.find(b"\n", start)
            if cr < 0 and lf < 0:
                break
            end = lf if cr < 0 or (0 <= lf < cr) else cr
            line = bytes(buffer[start:end])
            start = end + 1
            if end == cr:
                self._skip_lf = True
            event = self._line(line.decode("utf-8", "replace"), len(line))
            if event is not None:
                events.append(event)
        del buffer[:start]
        if len(buffer) + self._data_size > self.max_event_bytes:
            raise RemoteProtocolError(
                f"an SSE event exceeds {self.max_event_bytes} bytes", code=INTERNAL_ERROR
            )
        return events

    def _line(self, line: str, size: int) -> SseEvent | None:
        # ``size``: the line's bytes as they arrived, which the limit counts (decoded,
        # a line of two-byte characters would count half).
        if not line:
            return self._dispatch()
        if line.startswith(":"):
            return None  # a comment (keep-alive)
        name, colon, value = line.partition(":")
        if colon and value.startswith(" "):
            value = value[1:]
        if name == "data":
            self._data.append(value)
            # The field's name and colon (and space) are one byte a character.
            self._data_size += size - (len(line) - len(value)) + 1
            if self._data_size > self.max_event_bytes:
                raise RemoteProtocolError(
                    f"an SSE event exceeds {self.max_event_bytes} bytes", code=INTERNAL_ERROR
                )
        elif name == "event":
            self._event = value
        elif name == "id" and "\x00" not in value:
            self._id = value
        elif name == "retry" and value.isascii() and value.isdigit():
            self.retry_ms = int(value)
        return None

    def _dispatch(self) -> SseEvent | None:
        if self._id is not None:
            self.last_event_id = self._id
            self._id = None
        data, event = self._data, self._event
        self._data, self._data_size, self._event = [], 0, ""
        if not data:
            return None
        return SseEvent(event or "message", "\n".join(data), self.last_event_id)
