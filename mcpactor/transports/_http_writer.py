# Writing a stream's items to one HTTP response.
#
# A POST whose stream has not started waits for its first item: a lone final answer
# without an event id goes out as plain JSON; anything else starts an SSE response.
# GET streams start as SSE at once, with what the session replays for them first.
# While SSE flows, a task watches for the client leaving and cancels the writer; either
# way the session hears through ``release`` that this connection is done.

from __future__ import annotations

from typing import Final

import trio

from . import _sse
from ._asgi import Receive, Send, cancel_on_disconnect, reply, send_body, start_sse
from ._http_sessions import Attachment, HttpSession, Item

__all__ = ["write_stream"]

_MAX_CHUNK_EVENTS: Final = 256


async def write_stream(
    receive: Receive,
    send: Send,
    session: HttpSession,
    attachment: Attachment,
    headers: list[tuple[bytes, bytes]],
    *,
    started: bool,
    retry_ms: int,
    json_only: bool = False,
    preamble: bytes = b"",
) -> None:
    """Write the items of ``attachment`` until its stream ends or the client leaves."""
    try:
        first = None
        if not started:
            # Most answers are one JSON document: wait for it without watching for a
            # disconnect (that is a task per request); a client that leaves now loses
            # nothing it could have resumed.
            try:
                first = await attachment.receive.receive()
            except trio.EndOfChannel:
                first = None
            if first is not None and first[0] is None and first[2] and first[1]:
                await reply(send, 200, first[1], headers)
                return
            if first is None and json_only:
                # Over before it began (the request was cancelled): nothing to say, and
                # this server promised never to stream.
                await reply(send, 202, b"", headers, content_type=None)
                return
        async with trio.open_nursery() as nursery:
            nursery.start_soon(cancel_on_disconnect, receive, nursery.cancel_scope)
            await _write_sse(send, attachment, headers, first, preamble, retry_ms)
            nursery.cancel_scope.cancel()
    finally:
        with trio.CancelScope(shield=True):
            await session.release(attachment)


async def _write_sse(
    send: Send,
    attachment: Attachment,
    headers: list[tuple[bytes, bytes]],
    first: Item | None,
    preamble: bytes,
    retry_ms: int,
) -> None:
    stream = attachment.stream
    skip = attachment.skip
    await start_sse(send, headers)
    chunk = [preamble] if preamble else []
    for replayed_id, data in attachment.replay:
        chunk.append(_sse.message_event(data, replayed_id, retry_ms=retry_ms))
        stream.delivered = replayed_id
    if first is not None:
        chunk.append(_sse.message_event(first[1], first[0], retry_ms=retry_ms))
        if first[0] is not None:
            stream.delivered = first[0]
    if chunk:
        await send_body(send, b"".join(chunk))
    async with attachment.receive as items:
        async for item in items:
            # Whatever else is queued already goes out in the same write.
            chunk = []
            while True:
                event_id = item[0]
                if event_id is None or event_id not in skip:
                    chunk.append(_sse.message_event(item[1], event_id, retry_ms=retry_ms))
                    if event_id is not None:
                        stream.delivered = event_id
                if len(chunk) >= _MAX_CHUNK_EVENTS:
                    break
                try:
                    item = items.receive_nowait()
                except (trio.WouldBlock, trio.EndOfChannel):
                    break
            if chunk:
                await send_body(send, b"".join(chunk))
    await send({"type": "http.response.body", "body": b"", "more_body": False})
