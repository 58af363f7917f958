"""A child's SSE stream on its way to a client of ``mcpactor dev``'s HTTP front.

Event ids carry the generation (``N/id``), so that a ``Last-Event-ID`` from an earlier
child can be told apart; the answers the events carry are noted, so that the requests
still owed when the stream ends can be answered with an error instead of silence.
"""

from __future__ import annotations

from collections.abc import Sequence

from .._exceptions import RemoteProtocolError
from ..protocol import RequestId, decode, serialize
from ..transports import message_event
from ._dev_child import Failure

__all__ = ["EventRelay"]


class EventRelay:
    """A child's SSE stream on its way to the client: event ids tagged with the generation.

    While requests of the stream are unanswered, each event's data is read for the
    answers it carries, so that those still owed when the stream ends can be told.
    """

    def __init__(self, generation: int, owed: Sequence[RequestId], limit: int) -> None:
        self._tag = b"%d/" % generation
        #: requests of the stream not answered yet
        self.pending = set(owed)
        self._limit = limit
        self._buffer = bytearray()
        self._data: list[bytes] = []
        self._size = 0

    def feed(self, chunk: bytes) -> bytes:
        """Take a chunk of the child's stream; return what goes on to the client.

        Raises:
            RemoteProtocolError: a line longer than the limit (not a stream of ours).
        """
        buffer = self._buffer
        buffer += chunk
        out: list[bytes] = []
        start = 0
        while (end := buffer.find(b"\n", start)) >= 0:
            out.append(self._line(bytes(buffer[start : end + 1])))
            start = end + 1
        del buffer[:start]
        if len(buffer) > self._limit:
            raise RemoteProtocolError(f"an SSE line exceeds {self._limit} bytes")
        return b"".join(out)

    def unanswered(self, failure: Failure) -> bytes:
        """Events that answer each request still owed with ``failure``'s error."""
        events = []
        for request_id in sorted(self.pending, key=str):
            data = serialize(failure.error(request_id).to_json())
            if data is not None:
                events.append(message_event(data))
        self.pending.clear()
        return b"".join(events)

    def _line(self, line: bytes) -> bytes:
        if line.startswith(b"id:"):
            value = line[3:]
            return b"id: " + self._tag + (value[1:] if value.startswith(b" ") else value)
        if not self.pending:
            return line
        if line.startswith(b"data:"):
            value = line[5:].rstrip(b"\r\n")
            value = value[1:] if value.startswith(b" ") else value
            self._size += len(value) + 1
            if self._size <= self._limit:
                self._data.append(value)
        elif line in (b"\n", b"\r\n"):
            data, self._data, self._size = b"\n".join(self._data), [], 0
            if data:
                for request_id in _answered(data):
                    self.pending.discard(request_id)
        return line


def _answered(data: bytes) -> list[RequestId]:
    # The ids an SSE event's message answers (a response, or a batch of them).
    try:
        value = decode(data)
    except RemoteProtocolError:
        return []
    items = value if type(value) is list else [value]
    return [
        item["id"]
        for item in items
        if type(item) is dict
        and "method" not in item
        and (type(item.get("id")) is str or type(item.get("id")) is int)
    ]
