# Writing a stream's items to one HTTP response.
#
# A POST whose stream has not started waits for its first item: a lone final answer
# without an event id goes out as plain JSON; anything else starts an SSE response.
# A stream that opens with a priming event (SSE responses, 2025-11-25) waits a moment
# for the item behind it: when that is the final answer, as it is for most requests,
# priming event and answer go out as one complete text/event-stream response, which
# costs the HTTP server what a JSON answer costs (no chunked body, no disconnect watch).
# So does an SSE stream whose first item is its last (no priming event: a revision
# without them, or a stateless server).
# GET streams start as SSE at once, with what the session replays for them first.
# While SSE flows, the writer watches for the client leaving while it waits for the
# next item (in the same task: ``Attachment.get_or_gone``), and stops once it has gone;
# either way the session hears through ``release`` that this connection is done. A
# POST's stream starts that watch only after WATCH_AFTER seconds (the session manager's
# timer says when): each item then ends a wait on the socket, which costs more than a
# short streamed call should, and a client that leaves such a call loses nothing it
# could not resume. A streamed body ends in the write that carries the stream's last
# item.

from __future__ import annotations

import functools
from collections.abc import Awaitable, Callable
from typing import Final

import trio

from ..runtime import METRICS
from ..runtime.http import Attachment, HttpSession, Item
from . import _sse
from ._exchange import Exchange, reply, send_body, start_sse

__all__ = ["write_stream"]

_MAX_CHUNK_EVENTS: Final = 256
_NO_CACHE: Final = (b"cache-control", b"no-cache")


async def write_stream(
    exchange: Exchange,
    session: HttpSession,
    attachment: Attachment,
    headers: list[tuple[bytes, bytes]],
    *,
    started: bool,
    retry_ms: int,
    json_only: bool = False,
    preamble: bytes = b"",
    step_up: Callable[[bytes], list[tuple[bytes, bytes]] | None] | None = None,
) -> None:
    """Write the items of ``attachment`` until its stream ends or the client leaves.

    ``step_up`` looks at an answer sent as plain JSON: the headers it returns make that
    answer a 403 (a refusal for scope, while the status is still to be sent).

    Raises:
        trio.BusyResourceError: another task is writing ``attachment`` already.
    """
    with attachment:
        try:
            items: list[Item] = []
            if not started:
                # Most answers are one JSON document: wait for it without watching for a
                # disconnect (that is a task per request); a client that leaves now loses
                # nothing it could have resumed.
                try:
                    first = attachment.next_nowait()
                    woken = first is None
                    if woken:
                        first = await attachment.get()
                except trio.EndOfChannel:
                    first = None
                if first is not None and first[2] and not attachment.stream.sse:
                    data = first[1]
                    challenge = step_up(data) if step_up is not None else None
                    METRICS.sent("http", len(data))
                    if challenge is not None:
                        headers = [*headers, *challenge]
                    # Woken by the answer's sender, with the other answers it sent in
                    # its batch: they leave together without a further turn.
                    await exchange.respond(
                        403 if challenge is not None else 200, data, headers, batched=woken
                    )
                    return
                opening = await _open_post(
                    exchange, session, attachment, headers, first, retry_ms, json_only, preamble
                )
                if opening is None:
                    return
                items = opening
            try:
                if not started:
                    # A POST's stream: most end within WATCH_AFTER, so it starts unwatched.
                    await _open_sse(exchange, attachment, headers, items, preamble, retry_ms)
                    session.manager.watch_delay.nudge_later(attachment)
                    if await _write_items(
                        exchange, attachment, retry_ms, attachment.get_unless_nudged
                    ):
                        return
                else:
                    await _open_sse(exchange, attachment, headers, items, preamble, retry_ms)
                # Watched: the wait for the next item ends when the client leaves.
                watched = _until_gone(exchange, attachment)
                await _write_items(exchange, attachment, retry_ms, watched)
            finally:
                attachment.abandon()
        finally:
            # Waits only on an event store that must be awaited, and shields that.
            await session.release(attachment)


def _until_gone(
    exchange: Exchange, attachment: Attachment
) -> Callable[[], Awaitable[Item | None]]:
    # The next item, or None once the client has gone.
    return functools.partial(attachment.get_or_gone, exchange.disconnected)


async def _open_post(
    exchange: Exchange,
    session: HttpSession,
    attachment: Attachment,
    headers: list[tuple[bytes, bytes]],
    first: Item | None,
    retry_ms: int,
    json_only: bool,
    preamble: bytes,
) -> list[Item] | None:
    # A POST's stream whose first item is not a plain JSON answer: None once it went out
    # as one whole response, else the items to open an SSE response with.
    if first is not None and first[2] and not preamble and not attachment.replay:
        # The stream's one event (no priming event: an older revision, or no
        # session to resume): one complete response.
        await _reply_sse(exchange, attachment, headers, [first], retry_ms)
        return None
    if first is None:
        if json_only:
            # Over before it began (the request was cancelled): nothing to say, and
            # this server promised never to stream.
            await reply(exchange, 202, b"", headers, content_type=None)
            return None
        return []
    if first[1] or preamble or attachment.replay:
        return [first]
    # A priming event: what follows it within COALESCE_SECONDS goes in the same write.
    try:
        second = attachment.next_nowait()
        if second is None:
            session.manager.coalescing.nudge_later(attachment)
            second = await attachment.get_unless_nudged()
    except trio.EndOfChannel:
        second = None
    if second is None:
        return [first]
    if not second[2]:
        return [first, second]
    # The answer: priming event and answer framed in one piece.
    priming_id = first[0]
    assert priming_id is not None  # a priming event has an id
    event_id, data, _ = second
    attachment.stream.delivered = priming_id if event_id is None else event_id
    await reply(
        exchange,
        200,
        _sse.primed_message(priming_id, data, event_id, retry_ms=retry_ms),
        [_NO_CACHE, *headers],
        content_type=_sse.CONTENT_TYPE,
    )
    return None


async def _reply_sse(
    exchange: Exchange,
    attachment: Attachment,
    headers: list[tuple[bytes, bytes]],
    items: list[Item],
    retry_ms: int,
) -> None:
    # The whole stream is known: one text/event-stream response with a Content-Length.
    stream = attachment.stream
    body = []
    for event_id, data, _ in items:
        body.append(_sse.message_event(data, event_id, retry_ms=retry_ms))
        if event_id is not None:
            stream.delivered = event_id
    await reply(
        exchange,
        200,
        b"".join(body),
        [_NO_CACHE, *headers],
        content_type=_sse.CONTENT_TYPE,
    )


async def _open_sse(
    exchange: Exchange,
    attachment: Attachment,
    headers: list[tuple[bytes, bytes]],
    first: list[Item],
    preamble: bytes,
    retry_ms: int,
) -> None:
    # Start the response, with what comes before the live items in its first write.
    stream = attachment.stream
    await start_sse(exchange, headers)
    chunk = [preamble] if preamble else []
    for replayed_id, data in attachment.replay:
        chunk.append(_sse.message_event(data, replayed_id, retry_ms=retry_ms))
        stream.delivered = replayed_id
    for event_id, data, _ in first:
        chunk.append(_sse.message_event(data, event_id, retry_ms=retry_ms))
        if event_id is not None:
            stream.delivered = event_id
    # Even with nothing to write yet (a GET resuming after its last event): the head
    # must leave now, or the client waits for the status of a stream that is open.
    await send_body(exchange, b"".join(chunk))


async def _write_items(
    exchange: Exchange,
    attachment: Attachment,
    retry_ms: int,
    next_item: Callable[[], Awaitable[Item | None]],
) -> bool:
    # Write items as they come; True once the response is over, False if next_item
    # gave None (the writer is to go on in another way).
    stream = attachment.stream
    skip = attachment.skip
    while True:
        try:
            item = await next_item()
        except trio.EndOfChannel:
            await exchange.write(b"", False)
            return True
        if item is None:
            return False
        # Whatever else is queued already goes out in the same write.
        chunk = []
        while True:
            event_id = item[0]
            if event_id is None or event_id not in skip:
                chunk.append(_sse.message_event(item[1], event_id, retry_ms=retry_ms))
                if event_id is not None:
                    stream.delivered = event_id
            if item[2]:
                # The stream's last item: the end of the body goes in the same write.
                await send_body(exchange, b"".join(chunk), False)
                return True
            if len(chunk) >= _MAX_CHUNK_EVENTS:
                break
            try:
                item = attachment.get_nowait()
            except (trio.WouldBlock, trio.EndOfChannel):
                break
        if chunk:
            await send_body(exchange, b"".join(chunk))
