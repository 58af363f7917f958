# Answers ready and not yet written: where the console's latency of a request ends.
#
# While the admin listener keeps the history (``METRICS.keep_history``), a request's end
# writes its history entry and its cell of the rates at once, with the time from its
# arrival to its answer being ready, and leaves a ``Fix`` here. When the answer's bytes
# have been handed to the socket, whoever learns it first settles the fix: the entry's
# duration and the cell's latency become the time from the arrival to that write. A fix
# nobody settles (an answer dropped, a client gone, a transport that does not say, such
# as the in-memory connection) keeps the time to the ready answer; when ``LIMIT`` of
# them wait, they are all let go at once (letting go of the oldest one by one would cost
# a walk over the dict's freed slots each time). Nothing here runs while nobody
# watches: the requests' end, the metrics and their histogram are as they were, and a
# fix is left only while the history is kept.
#
# Who settles what, each after the write and with no new task or channel hop:
#
# - a session's request over Streamable HTTP: its POST's response was written when the
#   connection releases its stream (``HttpSession.release``, which reads the clock
#   anyway); ``owe`` notes the stream's requests when the POST opens it;
# - a WebSocket or legacy SSE session (one stream for everything): an answer was written
#   once its item left the connection's queue and the writer asks for the next one
#   (``Attachment.get``); ``queued`` notes the item when the router queues it;
# - a request without a session id: over stdio, the pipe's sink writes first in, first
#   out, so every answer ready before one of its writes ends is written by then
#   (``pipe_written``); a 2026-07-28 request over HTTP is answered by the task that
#   served it (``task_written``). Both are told by ``METRICS.sent``, which every sink
#   calls after a write, and which does this only while the history is kept.

from __future__ import annotations

from bisect import bisect_left
from collections import deque
from collections.abc import Iterable, Sequence
from typing import Any, Final

import trio

from ..protocol import RequestId
from ._rates import GRID

__all__ = ["LIMIT", "Fix", "Unwritten", "settle"]

#: fixes kept waiting for their write, per kind of destination (more: all are let go)
LIMIT: Final = 4096

#: a request's history entry (a list), its rates cell, the cell's bucket, and when the
#: request arrived (trio's clock); ``Metrics`` keeps it in ``requests`` or ``lone_fixes``
Fix = tuple[list[Any], list[Any], int, float]


def settle(fix: Fix, at: float) -> None:
    """Make ``fix``'s request end at ``at`` (trio's clock): the entry's and the cell's."""
    entry, cell, bucket, started = fix
    seconds = max(at - started, 0.0)
    before = entry[4]
    entry[4] = seconds
    cell[3] += seconds - before
    buckets = cell[4]
    left = buckets.get(bucket, 0) - 1
    if left > 0:
        buckets[bucket] = left
    else:
        buckets.pop(bucket, None)
    moved = bisect_left(GRID, seconds)
    buckets[moved] = buckets.get(moved, 0) + 1


class Unwritten:
    """The fixes of answers ready and not yet written, and the ways they are settled."""

    __slots__ = ("_queued", "_streams", "lone_fixes", "requests")

    #: fixes kept in ``requests`` or ``lone_fixes`` (more: all are let go)
    limit: Final = LIMIT

    def __init__(self, queued: dict[object, deque[tuple[object, list[Fix]]]]) -> None:
        # Connections of one-stream sessions -> the answers queued on them
        # (``_metrics.QUEUED``, which their writers look at).
        self._queued = queued
        #: (session id, request id) -> its fix: requests of sessions with an id
        self.requests: dict[tuple[str, object], Fix] = {}
        #: the task that served it -> its fix: requests without a session id
        self.lone_fixes: dict[object, Fix] = {}
        # A POST's stream -> the fixes of the answers it carries.
        self._streams: dict[object, list[Fix]] = {}

    def take(self, session: str | None, request_ids: Iterable[RequestId]) -> list[Fix]:
        """The fixes of the answers to these requests of ``session``, which the router is
        putting on a stream (a session without an id: the answer of the running task,
        the request's own, which routes its answer itself when nothing else is)."""
        if session is None:
            fix = self.lone_fixes.pop(trio.lowlevel.current_task(), None)
            return [] if fix is None else [fix]
        requests = self.requests
        fixes = []
        for request_id in request_ids:
            fix = requests.pop((session, request_id), None)
            if fix is not None:
                fixes.append(fix)
        return fixes

    # --- Streamable HTTP: a POST's stream ---------------------------------------------

    def owe(self, stream: object, session: str | None, request_ids: Iterable[RequestId]) -> None:
        """Note the answers to these requests, which the router is putting on the POST's
        ``stream`` (whose connection lets go of it after writing them)."""
        if session is None:
            fixes = self.take(None, request_ids)
        else:
            # ``take``, unrolled: every answer of a watched Streamable HTTP session.
            requests = self.requests
            fixes = []
            for request_id in request_ids:
                fix = requests.pop((session, request_id), None)
                if fix is not None:
                    fixes.append(fix)
        if not fixes:
            return
        streams = self._streams
        owed = streams.get(stream)
        if owed is None:
            streams[stream] = fixes
            if len(streams) > LIMIT:
                streams.clear()
        else:
            owed.extend(fixes)

    def released(self, stream: object, connection: object, at: float) -> None:
        """A connection let go of ``stream`` at ``at``, after its last write."""
        self._queued.pop(connection, None)
        for fix in self._streams.pop(stream, ()):
            settle(fix, at)

    # --- one stream for everything (WebSocket, legacy SSE) ------------------------------

    def queued(
        self,
        connection: object,
        items: Sequence[Any],
        session: str | None,
        request_ids: Iterable[RequestId],
    ) -> None:
        """Note the answers to these requests, which the router just queued on
        ``connection`` (the last of its ``items``)."""
        fixes = self.take(session, request_ids)
        if not fixes or not items:
            return
        queued = self._queued
        marks = queued.get(connection)
        if marks is None:
            marks = queued[connection] = deque()
        marks.append((items[-1], fixes))
        if len(queued) > LIMIT:
            queued.clear()

    def taken(self, connection: object, items: Sequence[Any], at: float) -> None:
        """The writer of ``connection`` asks for more at ``at``: the answers it took
        (no longer in its ``items``) are written."""
        marks = self._queued.get(connection)
        if marks is None:
            return
        while marks and not any(item is marks[0][0] for item in items):
            for fix in marks.popleft()[1]:
                settle(fix, at)
        if not marks:
            del self._queued[connection]

    # --- requests without a session id, not routed ----------------------------------------

    def pipe_written(self, at: float) -> None:
        """The pipe's sink ended a write at ``at``: every answer ready before it is out."""
        lone = self.lone_fixes
        for fix in lone.values():
            settle(fix, at)
        lone.clear()

    def task_written(self, task: object, at: float) -> None:
        """``task`` wrote an HTTP response at ``at``: the answer it served, if any."""
        fix = self.lone_fixes.pop(task, None)
        if fix is not None:
            settle(fix, at)

    def clear(self) -> None:
        """Forget every fix (the history is no longer kept)."""
        self.requests.clear()
        self.lone_fixes.clear()
        self._streams.clear()
        self._queued.clear()
