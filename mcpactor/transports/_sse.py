# Server-Sent Events framing (WHATWG HTML, "event stream interpretation"), write side.
#
# A message is one compact JSON document, which never contains a newline (orjson does
# not indent), so it always fits one ``data:`` line. Every message is sent as
# ``event: message`` because some clients dispatch on the event name. An event with an
# id and an empty ``data`` field is a priming event: it hands the client a
# ``Last-Event-ID`` to resume from and carries the ``retry`` delay.

from __future__ import annotations

from typing import Final

__all__ = ["CONTENT_TYPE", "endpoint_event", "message_event", "primed_message"]

CONTENT_TYPE: Final = b"text/event-stream"


def message_event(data: bytes, event_id: str | None = None, *, retry_ms: int = 0) -> bytes:
    """Frame one message (or, with empty ``data``, a priming event)."""
    # One join of the pieces: each + would copy all that came before it.
    if not data:
        assert event_id is not None  # a priming event is only worth its id
        return b"".join((b"id: ", event_id.encode(), b"\nretry: %d\ndata: \n\n" % retry_ms))
    if event_id is None:
        return b"".join((b"event: message\ndata: ", data, b"\n\n"))
    return b"".join((b"event: message\nid: ", event_id.encode(), b"\ndata: ", data, b"\n\n"))


def primed_message(
    priming_id: str, data: bytes, event_id: str | None = None, *, retry_ms: int = 0
) -> bytes:
    """Frame a priming event and the one message behind it, in one piece."""
    # What message_event gives for each, joined; the common SSE answer is just this.
    priming = b"\nretry: %d\ndata: \n\nevent: message\n" % retry_ms
    if event_id is None:
        return b"".join((b"id: ", priming_id.encode(), priming, b"data: ", data, b"\n\n"))
    return b"".join(
        (
            b"id: ",
            priming_id.encode(),
            priming,
            b"id: ",
            event_id.encode(),
            b"\ndata: ",
            data,
            b"\n\n",
        )
    )


def endpoint_event(url: str) -> bytes:
    """The first event of a legacy (2024-11-05) HTTP+SSE stream: where to POST."""
    return b"event: endpoint\ndata: " + url.encode() + b"\n\n"
