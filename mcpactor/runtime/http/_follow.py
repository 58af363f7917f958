# A stream resumed on a replica other than the one running its request.
#
# The replica running a request appends each event of the request's SSE stream to the
# shared event store (_event_store.py), whether or not a connection is attached there.
# A client that reconnects with ``Last-Event-ID`` and reaches another replica gets what
# is stored; while the request still runs elsewhere, this replica then follows the
# stream in the store (``EventStore.wait_after``) and writes each event as it is
# appended, until the request's answer (the one response a POST stream ends with: a
# JSON-RPC response, or a batch's array of them).
#
# A request that died with its replica appends nothing more, and the client must not
# wait for it for ever: the replica running a request holds a lease on it in the store
# (_leases.py). When the stream is quiet — at the start, and after each wait of at most
# ``WAIT_STEP`` seconds with nothing new — the follower looks at the lease; once it is
# gone with no answer stored, the response ends with a JSON-RPC error for the stream's
# requests (the protocol core's ``unanswered_reply``), so the client stops waiting: at
# most a lease plus one wait step after the replica's last renewal.
#
# It also stops, ending the response without the answer, when the client leaves, the
# session's copy here closes, the stream is forgotten or trimmed past the last event
# written, the store cannot be reached, or nothing is appended for ``FOLLOW_QUIET``
# seconds (the bound where the store keeps no leases). The client then resumes again
# from its last event, as after any cut, and gets the answer if it came meanwhile.
#
# At most ``MAX_FOLLOWERS`` streams are followed at once in a process (each may hold a
# store connection while it waits); past that a resumption gets what is stored, as if
# the stream were at its end.

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Final

import orjson
import trio

from ...protocol import describe, unanswered_reply
from ._event_store import EventStore
from ._session_records import StoreUnavailable
from ._streams import Attachment

__all__ = ["FOLLOW_QUIET", "LOST", "MAX_FOLLOWERS", "WAIT_STEP", "Followers", "ends_stream"]

#: seconds a followed stream may go without a new event before its response ends
FOLLOW_QUIET: Final = 60.0
#: streams one process follows at once, at most
MAX_FOLLOWERS: Final = 256
#: the longest single wait in the store: a client that left, or a lease that lapsed, is
#: noticed within it
WAIT_STEP: Final = 5.0
#: what the requests of a stream whose lease lapsed unanswered are told
LOST: Final = (
    "the request was lost: the server running it stopped (or could not store its answer) "
    "before answering"
)

_log = logging.getLogger("mcpactor.http")


def ends_stream(data: bytes) -> bool:
    """Whether a stored event is the answer a POST stream ends with."""
    if not data or data[0] not in b"{[":
        return False  # a priming event, or not a message
    try:
        value = orjson.loads(data)
    except orjson.JSONDecodeError:
        return False
    if type(value) is list:
        return True  # a batch's answers go out together, as one message
    return (
        type(value) is dict and "method" not in value and ("result" in value or "error" in value)
    )


class Followers:
    """The streams this process follows in a shared store, bounded by ``limit``."""

    def __init__(
        self, limit: int = MAX_FOLLOWERS, quiet: float = FOLLOW_QUIET, step: float = WAIT_STEP
    ) -> None:
        self.limit = limit
        self.quiet = quiet
        #: the longest single wait for the next event before the lease is looked at
        self.step = step
        #: streams followed right now
        self.active = 0

    def take(self) -> bool:
        """Count one more followed stream; False (counting nothing) at the limit."""
        if self.active >= self.limit:
            return False
        self.active += 1
        return True

    async def follow(
        self,
        store: EventStore,
        session_id: str,
        attachment: Attachment,
        after: str,
        closing: Callable[[], bool],
    ) -> None:
        """Write the stream's events after ``after`` to ``attachment`` as they are stored.

        The caller has ``take``n a place, which this gives back when it ends.
        """
        stream = attachment.stream
        quiet_until = trio.current_time() + self.quiet
        try:
            # A request that died before the client came back is said at once.
            if await _ended_unanswered(store, session_id, attachment, after):
                return
            while not attachment.gone and not closing():
                left = quiet_until - trio.current_time()
                if left <= 0:
                    _log.debug("stopped following stream %s: nothing new", describe(stream.id))
                    return
                try:
                    replay = await store.wait_after(session_id, after, min(left, self.step))
                except StoreUnavailable as exc:
                    _log.warning("stopped following a resumed stream: %s", describe(str(exc)))
                    return
                if replay is None:
                    return  # forgotten (the answer was read elsewhere) or trimmed
                for event_id, data in replay.events:
                    final = ends_stream(data)
                    await attachment.put((event_id, data, final))
                    after = event_id
                    if final:
                        return
                if replay.events:
                    quiet_until = trio.current_time() + self.quiet
                elif await _ended_unanswered(store, session_id, attachment, after):
                    return
        except (trio.BrokenResourceError, trio.ClosedResourceError):
            return  # the client left, or the connection was released
        except Exception:
            # Runs in the manager's nursery: a fault here ends this response only.
            _log.exception("stopped following a resumed stream")
        finally:
            self.active -= 1
            stream.complete = True
            attachment.end()


async def _ended_unanswered(
    store: EventStore, session_id: str, attachment: Attachment, after: str
) -> bool:
    # Whether the stream's lease is gone: then its answer, if stored just before the
    # lease was dropped, or else an error for its requests, ends the response (True).
    stream = attachment.stream
    try:
        lease = await store.lease(session_id, stream.id)
        if lease is None or lease.held:
            return False
        replay = await store.replay_after(session_id, after)
    except StoreUnavailable:
        return False  # the next wait says so
    if replay is None:
        return True  # forgotten (the session ended) or trimmed
    for event_id, data in replay.events:
        final = ends_stream(data)
        await attachment.put((event_id, data, final))
        if final:
            return True
    if lease.requests:
        _log.debug("stream %s: its requests died with their replica", describe(stream.id))
        await attachment.put((None, orjson.dumps(unanswered_reply(lease.requests, LOST)), True))
    return True
