# Replays for the connections of a session's streams: a GET attached to the standalone
# stream, a client resuming a stream (``Last-Event-ID``) here or, with replicas, a
# stream of another replica's copy, in the event store they share.

from __future__ import annotations

import functools
import logging
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING

from ._follow import Followers, ends_stream
from ._routing import Routing
from ._session_records import StoreUnavailable
from ._streams import Attachment, Stream

if TYPE_CHECKING:
    from ._event_store import EventStore, Replay

__all__ = ["replay_attached", "replay_into", "resume_elsewhere", "resume_here"]

_log = logging.getLogger("mcpactor.http")


async def replay_attached(store: EventStore, session_id: str, event_id: str) -> Replay | None:
    """The events after ``event_id`` for a connection already attached; None if none."""
    # A store that cannot be reached costs the connection its replay (live events still
    # come), never the attachment.
    try:
        return await store.replay_after(session_id, event_id)
    except StoreUnavailable as exc:
        _log.warning("session %s: a stream goes on without its replay: %s", session_id, exc)
        return None


async def replay_into(
    attachment: Attachment, store: EventStore, session_id: str, event_id: str
) -> None:
    """Give a connection just attached what its stream sent after ``event_id``."""
    replay = await replay_attached(store, session_id, event_id)
    if replay is not None:
        attachment.replay = replay.events
        attachment.skip = frozenset(event_id for event_id, _ in replay.events)


async def resume_here(
    session: Routing, stream: Stream, first: Replay, last_event_id: str
) -> Attachment:
    """Re-attach to one of the session's own streams, ``first`` replayed from the store."""
    assert session.id is not None
    attachment = session.attach(stream)
    # Events appended between the first look and attaching are in neither the first
    # replay nor the live channel: look again from where the first replay ended.
    cursor = first.events[-1][0] if first.events else last_event_id
    second = await replay_attached(session.store, session.id, cursor)
    events = first.events + (second.events if second is not None else [])
    attachment.replay = events
    attachment.skip = frozenset(event_id for event_id, _ in events)
    if stream.complete:
        # Nothing more will be routed to it: the replay is all there is.
        session.detach(stream, attachment)
    session.retained.pop(stream.id, None)
    return attachment


def resume_elsewhere(
    session: Routing,
    replay: Replay,
    last_event_id: str,
    followers: Followers,
    spawn: Callable[[Callable[[], Awaitable[None]]], None],
    closing: Callable[[], bool],
) -> Attachment:
    """Attach to a stream of another replica's copy, in the store they share.

    What is stored, then, while its request runs there, what is appended (_follow.py).
    """
    stream = Stream(replay.stream_id)
    stream.sse = True
    attachment = session.attach(stream)
    attachment.replay = replay.events
    attachment.skip = frozenset(event_id for event_id, _ in replay.events)
    if (
        attachment.gone
        or any(ends_stream(data) for _, data in replay.events)
        or not followers.take()
    ):
        stream.complete = True
        session.detach(stream, attachment)
        return attachment
    assert session.id is not None
    after = replay.events[-1][0] if replay.events else last_event_id
    spawn(
        functools.partial(followers.follow, session.store, session.id, attachment, after, closing)
    )
    return attachment
