# Server-Sent Events framing (WHATWG HTML, "event stream interpretation"), write side.
#
# A message is one compact JSON document, which never contains a newline (orjson does
# not indent), so it always fits one ``data:`` line. Every message is sent as
# ``event: message`` because some clients dispatch on the event name. An event with an
# id and an empty ``data`` field is a priming event: it hands the client a
# ``Last-Event-ID`` to resume from and carries the ``retry`` delay.

from __future__ import annotations

from typing import Final

__all__ = ["CONTENT_TYPE", "endpoint_event", "message_event"]

CONTENT_TYPE: Final = b"text/event-stream"


def message_event(data: bytes, event_id: str | None = None, *, retry_ms: int = 0) -> bytes:
    """Frame one message (or, with empty ``data``, a priming event)."""
    if not data:
        assert event_id is not None  # a priming event is only worth its id
        return b"id: " + event_id.encode() + b"\nretry: %d\ndata: \n\n" % retry_ms
    if event_id is None:
        return b"event: message\ndata: " + data + b"\n\n"
    return b"event: message\nid: " + event_id.encode() + b"\ndata: " + data + b"\n\n"


def endpoint_event(url: str) -> bytes:
    """The first event of a legacy (2024-11-05) HTTP+SSE stream: where to POST."""
    return b"event: endpoint\ndata: " + url.encode() + b"\n\n"
