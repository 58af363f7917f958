# A stream resumed on a replica other than the one running its request.
#
# The replica running a request appends each event of the request's SSE stream to the
# shared event store (_event_store.py), whether or not a connection is attached there.
# A client that reconnects with ``Last-Event-ID`` and reaches another replica gets what
# is stored; while the request still runs elsewhere, this replica then follows the
# stream in the store (``EventStore.wait_after``) and writes each event as it is
# appended, until the request's answer (the one response a POST stream ends with: a
# JSON-RPC response, or a batch's array of them). It also stops, ending the response
# without the answer, when the client leaves, the session's copy here closes, the
# stream is forgotten or trimmed past the last event written, the store cannot be
# reached, or nothing is appended for ``FOLLOW_QUIET`` seconds — a request that died
# with its replica appends nothing more. The client then resumes again from its last
# event, as after any cut, and gets the answer if it came meanwhile.
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

from ...protocol import describe
from ._event_store import EventStore
from ._session_records import StoreUnavailable
from ._streams import Attachment

__all__ = ["FOLLOW_QUIET", "MAX_FOLLOWERS", "Followers", "ends_stream"]

#: seconds a followed stream may go without a new event before its response ends
FOLLOW_QUIET: Final = 60.0
#: streams one process follows at once, at most
MAX_FOLLOWERS: Final = 256
# The longest single wait in the store: a client that left is noticed within it.
_WAIT_STEP: Final = 5.0

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

    def __init__(self, limit: int = MAX_FOLLOWERS, quiet: float = FOLLOW_QUIET) -> None:
        self.limit = limit
        self.quiet = quiet
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
            while not attachment.gone and not closing():
                left = quiet_until - trio.current_time()
                if left <= 0:
                    _log.debug("stopped following stream %s: nothing new", describe(stream.id))
                    return
                try:
                    replay = await store.wait_after(session_id, after, min(left, _WAIT_STEP))
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
        except (trio.BrokenResourceError, trio.ClosedResourceError):
            return  # the client left, or the connection was released
        except Exception:
            # Runs in the manager's nursery: a fault here ends this response only.
            _log.exception("stopped following a resumed stream")
        finally:
            self.active -= 1
            stream.complete = True
            attachment.end()
