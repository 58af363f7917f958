"""SSE framing on the write side, and the queue look that a writer makes before it waits."""

from __future__ import annotations

import pytest
import trio

from mcpactor.runtime.http._streams import Attachment, Stream
from mcpactor.transports import _sse


@pytest.mark.parametrize("event_id", ["3.2", None])
@pytest.mark.parametrize("retry_ms", [0, 1500])
def test_a_primed_message_is_the_priming_event_then_the_message(
    event_id: str | None, retry_ms: int
) -> None:
    data = b'{"jsonrpc":"2.0","id":7,"result":{}}'
    assert _sse.primed_message("3.1", data, event_id, retry_ms=retry_ms) == _sse.message_event(
        b"", "3.1", retry_ms=retry_ms
    ) + _sse.message_event(data, event_id, retry_ms=retry_ms)


def test_events_are_framed_as_the_event_stream_format_reads_them() -> None:
    assert _sse.message_event(b"", "1.1", retry_ms=250) == b"id: 1.1\nretry: 250\ndata: \n\n"
    assert _sse.message_event(b"{}", "1.2") == b"event: message\nid: 1.2\ndata: {}\n\n"
    assert _sse.message_event(b"{}") == b"event: message\ndata: {}\n\n"
    assert _sse.primed_message("1.1", b"{}", "1.2", retry_ms=250) == (
        b"id: 1.1\nretry: 250\ndata: \n\nevent: message\nid: 1.2\ndata: {}\n\n"
    )


def test_next_nowait_gives_none_while_empty_and_ends_once_ended() -> None:
    queue = Attachment(Stream("1"))
    assert queue.next_nowait() is None
    queue.put_nowait(("1.1", b"", False))
    queue.end()
    assert queue.next_nowait() == ("1.1", b"", False)
    with pytest.raises(trio.EndOfChannel):
        queue.next_nowait()
