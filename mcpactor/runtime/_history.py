# What ended lately: a bounded ring of the requests and tasks this process finished.
#
# The ring is off until something asks for it (``METRICS.keep_history``: the admin
# listener, while it serves): then ``METRICS.request_ended`` appends one small list per
# request, of what it was given and the request's ``LOG_CONTEXT`` (its session and
# request id), whose duration its answer's write sets again (``_unwritten.py``);
# ``task_finished`` appends a tuple for a task. Everything a reader wants (text clipped,
# the client and principal of the session, filters) is worked out when it is read, from
# the entries and the names of live sessions the reader passes in (``learn``).
#
# Under load the ring turns over in moments (a thousand quick calls a second fill it in
# one), which would take a failure out of sight before anyone looked. So the requests
# that did not end well (an error, a cancel, a timeout) are kept a second time, with
# their params, in a ring of their own (``failures``, ``FAILURES`` of them): a reader
# sees the main ring and, older than it, the failures that left it.

from __future__ import annotations

import collections
import itertools
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any, Final

from ._texts import client_name, principal_text, text

__all__ = ["DEFAULT_HISTORY", "FAILURES", "Ended", "History", "tool_error"]

#: requests the ring keeps by default (the oldest go first)
DEFAULT_HISTORY: Final = 1000
#: session ids whose client and principal are remembered after they were seen
_KNOWN_SESSIONS: Final = 1000
#: the latest requests whose params are kept for their story (a request's params may be
#: as large as a message may be, so far fewer than the entries)
STORIES: Final = 100
#: the latest requests that did not end well kept beside the ring, with their params
FAILURES: Final = 200

#: one request that ended: (Unix time, method, name or "" (an initialize's clientInfo),
#: outcome, seconds, error kind, what it failed with, its ``LOG_CONTEXT``: (session id,
#: request id, method) or None, its trace id or None, and for a request without a
#: session (2026-07-28) its (client label, principal), else None). A request's own is a
#: list: its duration is set again once its answer is written (``_unwritten.py``).
Ended = Sequence[Any]
#: the params of one request that ended, with its ``LOG_CONTEXT``
Story = tuple[Any, Any]


#: the longest message of a tool's error result kept
_TOOL_ERROR: Final = 1000


def tool_error(result: Mapping[str, Any]) -> str | None:
    """What a tool's error result (``isError``) says: its first text, cut short."""
    content = result.get("content")
    if type(content) is not list:
        return None
    for part in content[:8]:
        if type(part) is dict and part.get("type") == "text":
            said = part.get("text")
            return said[:_TOOL_ERROR] if type(said) is str else None
    return None


class History:
    """The ring of the requests that ended lately, and the way to read it."""

    def __init__(self, size: int = DEFAULT_HISTORY) -> None:
        if size < 1:
            raise ValueError(f"the history must keep at least one request, not {size}")
        self._ring: collections.deque[Ended] = collections.deque(maxlen=size)
        #: session id -> (client, principal), as last seen by a reader
        self._known: dict[str, tuple[str | None, str | None]] = {}
        self.size = size
        #: keep one ``Ended``
        self.append = self._ring.append
        #: the params of the latest ``STORIES`` requests
        self.stories: collections.deque[Story] = collections.deque(maxlen=STORIES)
        #: the latest ``FAILURES`` requests that did not end well, with their params
        self.failures: collections.deque[tuple[Ended, Any]] = collections.deque(maxlen=FAILURES)

    def __len__(self) -> int:
        return len(self._ring)

    def learn(self, sessions: Iterable[tuple[str, str | None, str | None]]) -> None:
        """Remember the client and principal of live sessions (id, client, principal)."""
        known = self._known
        for session, client, principal in sessions:
            known.pop(session, None)
            known[session] = (client, principal)
        while len(known) > _KNOWN_SESSIONS:
            del known[next(iter(known))]

    def items(
        self,
        *,
        limit: int = 200,
        outcome: str | None = None,
        tool: str | None = None,
        client: str | None = None,
        find: str | None = None,
        cancelled_by: Mapping[tuple[str, str], str] | None = None,
    ) -> list[dict[str, Any]]:
        """The latest ``limit`` requests that pass the filters, the newest first.

        ``tool``, ``client`` and ``find`` are lowercase parts of the method or name, of
        the client's name, and of an id, client or principal; ``cancelled_by`` names who
        cancelled a (session, request id) when it was not the client.
        """
        self._learn_clients()
        found: list[dict[str, Any]] = []
        for entry in self._newest():
            item = self._item(entry, cancelled_by or {})
            if _wanted(item, outcome, tool, client, find):
                found.append(item)
                if len(found) >= limit:
                    break
        return found

    def story(
        self,
        session: str | None,
        request: object,
        at: float | None = None,
        cancelled_by: Mapping[tuple[str, str], str] | None = None,
    ) -> tuple[dict[str, Any], Any] | None:
        """The newest ended request of ``session`` with id ``request`` (ended at ``at``,
        as ``items`` rounds it, when given) and its params if still kept (else None)."""
        self._learn_clients()
        for entry in self._newest():
            context = entry[7]
            if context is None or context[0] != session or str(context[1]) != str(request):
                continue
            if at is not None and round(entry[0], 3) != at:
                continue
            item = self._item(entry, cancelled_by or {})
            for kept, params in reversed(self.stories):
                if kept is context:
                    return item, params
            for failed, params in reversed(self.failures):
                if failed is entry:
                    return item, params
            return item, None
        return None

    def task(self, task_id: str) -> dict[str, Any] | None:
        """The newest entry of the task ``task_id`` that ended, or None."""
        for entry in self._newest():
            if entry[1] == "task" and entry[2] == task_id:
                return self._item(entry, {})
        return None

    def since(
        self, mark: object = None, *, params: bool = False
    ) -> tuple[list[dict[str, Any]], object]:
        """The entries kept after ``mark`` (every one kept when ``mark`` is None or has
        left the ring), the oldest first, and the mark to ask with next time. With
        ``params``, each entry has its request's ``params`` too (None once ``stories``
        no longer keeps them), for its story.

        Read off the request path (the shared history's writer asks once a second).
        """
        self._learn_clients()
        fresh: list[Ended] = []
        for entry in reversed(self._ring):
            if entry is mark:
                break
            fresh.append(entry)
        newest = self._ring[-1] if self._ring else mark
        items = [self._item(entry, {}) for entry in reversed(fresh)]
        if params:
            # A story's params go with its entry's context (the same object).
            kept = {id(context): value for context, value in self.stories if context is not None}
            for item, entry in zip(items, reversed(fresh), strict=True):
                context = entry[7]
                item["params"] = kept.get(id(context)) if context is not None else None
        return items, newest

    def _newest(self) -> Iterator[Ended]:
        # The ring, the newest first, then the failures that left it (all older).
        failures = self.failures
        if not failures:
            return reversed(self._ring)
        inside = {id(entry) for entry in self._ring}
        left = [entry for entry, _ in failures if id(entry) not in inside]
        return itertools.chain(reversed(self._ring), reversed(left))

    @staticmethod
    def passes(
        item: Mapping[str, Any],
        outcome: str | None = None,
        tool: str | None = None,
        client: str | None = None,
        find: str | None = None,
    ) -> bool:
        """Whether an entry as ``items`` gives it passes the filters ``items`` takes."""
        return _wanted(item, outcome, tool, client, find)

    def _learn_clients(self) -> None:
        # The client of a session that ended before anyone read its name: its initialize
        # kept the clientInfo in its name's place.
        known = self._known
        for _, method, info, _, _, _, _, context, _, _ in self._ring:
            if method == "initialize" and context is not None and context[0] not in known:
                known[context[0]] = (client_name(info), None)

    def _item(self, entry: Ended, cancelled_by: Mapping[tuple[str, str], str]) -> dict[str, Any]:
        at, method, name, outcome, seconds, error, detail, context, trace_id, sessionless = entry
        if method == "initialize":
            name = None  # its clientInfo: the client's name says it
        session, request = (context[0], context[1]) if context is not None else (None, None)
        who, principal = self._known.get(session, (None, None)) if session else (None, None)
        if sessionless is not None:
            who, principal = text(sessionless[0]), principal_text(sessionless[1])
        by = None
        if outcome == "cancelled" and session is not None:
            by = cancelled_by.get((session, str(request)))
        if outcome == "error" and detail is not None and "timed out" in detail:
            outcome = "timed out"
        return {
            "at": round(at, 3),
            "method": text(method),
            "name": text(name) if name else None,
            "outcome": outcome,
            "seconds": round(seconds, 6),
            "error": error,
            "detail": text(detail),
            "session": text(session),
            "request": request if isinstance(request, int) else text(request),
            "client": who,
            "principal": principal,
            "cancelled_by": by,
            "trace_id": trace_id,
        }


def _wanted(
    item: Mapping[str, Any],
    outcome: str | None,
    tool: str | None,
    client: str | None,
    find: str | None,
) -> bool:
    if outcome is not None and item.get("outcome") != outcome:
        return False
    if tool is not None and not any(
        tool in str(item.get(k) or "").lower() for k in ("method", "name")
    ):
        return False
    if client is not None and client not in str(item.get("client") or "").lower():
        return False
    if find is not None:
        places = ("session", "request", "client", "principal", "name")
        return any(find in str(item.get(k) or "").lower() for k in places)
    return True
