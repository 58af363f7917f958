# Rates and latency per tool and per client over the last minutes, for the admin page.
#
# Kept beside the history (``METRICS.keep_history`` turns both on; nothing is kept while
# no admin listener serves). ``Metrics._watched``, where a request's end writes down what
# the admin keeps of it, writes into the current slot itself (a call here only for a
# new slot or a new cell): a slot is a dict of cells, one per (method label, name label,
# client label), each ``[requests, errors, cancelled, seconds summed, {bucket: count}]``
# where a bucket is an index into ``GRID``. A slot is ``SLOT`` seconds of trio's clock;
# the last ``SLOTS`` are kept, so memory is bounded by ``SLOTS × MAX_CELLS`` cells of at
# most ``len(GRID) + 1`` buckets each, whatever the load. A slot holds ``MAX_CELLS``
# distinct cells; later ones in the same slot are counted under ("other", "other",
# "other"). Client labels are bounded like the metrics' labels: the first
# ``MAX_CLIENTS`` names, then "other".
#
# A request's client is its session's, learned when the session's first request ends
# (``Metrics`` asks the run's Observatory once) or when a reader names the live sessions
# (``learn``); a 2026-07-28 request names its own client in its envelope; a session
# without an id is stdio's, the process's one client. A session not known otherwise is
# recorded under its id and named when the rates are read.
#
# The grid's buckets grow by ``2 ** (1 / 8)``, so a percentile read from them (the
# bucket's rank interpolated geometrically) is within about 4.5 % of the true value.

from __future__ import annotations

import collections
import math
from collections.abc import Callable, Iterable, Mapping
from typing import Any, Final

from ..protocol import CLIENT_INFO, JSONValue
from ._texts import client_name, text

__all__ = [
    "GRID",
    "MAX_CELLS",
    "MAX_CLIENTS",
    "SLOT",
    "SLOTS",
    "UNKNOWN",
    "Rates",
    "SessionClients",
    "percentile",
]

#: seconds of trio's clock in one slot
SLOT: Final = 5.0
#: slots kept (the current one included): the longest window read
SLOTS: Final = 60
#: distinct (method, name, client) cells one slot keeps apart
MAX_CELLS: Final = 512
#: distinct client labels kept; later ones are "other"
MAX_CLIENTS: Final = 64
#: the longest client label kept
MAX_CLIENT_LABEL: Final = 80
OTHER: Final = "other"
#: the client label of a request whose client never said its name
UNKNOWN: Final = "unknown"
#: upper bounds (seconds) of the latency buckets: 10 µs to about 22 minutes
GRID: Final = tuple(1e-5 * 2 ** (index / 8) for index in range(8 * 27))
# A session whose client is not known yet: its cells are labelled with this and its id.
_SESSION: Final = "\x00"
# A rate is never read over less than this many seconds (the start of a slot would
# make a single request a rate of thousands a second).
_SHORTEST: Final = 1.0
# The cell of everything over MAX_CELLS in a slot.
OVERFLOW: Final = (OTHER, OTHER, OTHER)

#: one cell: [requests, errors, cancelled, seconds summed, {bucket: count}]
Cell = list[Any]
#: a live session's (clientInfo, principal as text) by its id, or None
SessionClients = Callable[[str], "tuple[JSONValue, str | None] | None"]


class Rates:
    """The last ``SLOTS`` slots of requests counted per tool and per client."""

    def __init__(self, since: float | None = None) -> None:
        #: when counting began on trio's clock (None: at the first request)
        self.since = since
        #: when the current slot ends (the first request starts one)
        self.ends = -math.inf
        #: the current slot's cells by (method label, name label, client label)
        self.cells: dict[tuple[str, str, str], Cell] = {}
        #: the slots before it: (start, cells), the newest last
        self._past: collections.deque[tuple[float, dict[tuple[str, str, str], Cell]]] = (
            collections.deque(maxlen=SLOTS - 1)
        )
        #: session id -> client label
        self.clients: dict[str, str] = {}
        #: a client's name as sent -> its label
        self._labels: dict[str, str] = {}
        #: names a live session's client and principal (``Metrics.keep_history``'s)
        self.sessions: SessionClients | None = None
        #: the client label of the session without an id (stdio's); until it is known,
        #: the mark its requests are counted under, named when they are read
        self.lone = _SESSION

    # --- writing (``Metrics.request_ended`` writes a cell itself) -----------------------

    def turn(self, now: float) -> None:
        """Start the slot ``now`` falls in, keeping the one that ended."""
        if self.since is None:
            self.since = now
        if self.cells:
            self._past.append((self.ends - SLOT, self.cells))
        self.cells = {}
        self.ends = (math.floor(now / SLOT) + 1) * SLOT

    def cell(self, label: tuple[str, str, str]) -> Cell:
        """The current slot's new cell for ``label`` (the overflow's once it is full)."""
        cells = self.cells
        if len(cells) >= MAX_CELLS:
            label = OVERFLOW
        cell = cells.get(label)
        if cell is None:
            cell = cells[label] = [0, 0, 0, 0.0, {}]
        return cell

    def client_label(self, info: JSONValue) -> str:
        """The label a client's ``clientInfo`` is counted under (bounded)."""
        name = client_name(info)
        if name is None:
            return UNKNOWN
        label = self._labels.get(name)
        if label is None:
            full = len(self._labels) >= MAX_CLIENTS or len(name) > MAX_CLIENT_LABEL
            label = OTHER if full else name
            if not full:
                self._labels[name] = label
        return label

    def envelope_client(self, meta: Mapping[str, Any]) -> str:
        """The label of the client a 2026-07-28 request names in its ``_meta``."""
        return self.client_label(meta.get(CLIENT_INFO))

    def initialized(self, session: str | None, info: JSONValue) -> None:
        """Note the client of ``session``, whose initialize sent ``info`` (a session
        without an id is the process's stdio session: its client is ``lone``)."""
        if session is None:
            self.lone = self.client_label(info)
        else:
            self._know(session, self.client_label(info))

    def unknown(self, session: str) -> str:
        """The mark a session's requests are counted under until its client is known."""
        mark = self.clients[session] = _SESSION + session
        return mark

    def learn(self, sessions: Iterable[tuple[str | None, JSONValue]]) -> None:
        """Note the client of live sessions: (session id, the clientInfo it sent); a
        session without an id is stdio's."""
        for session, info in sessions:
            if session is None:
                if self.lone == _SESSION:
                    self.lone = self.client_label(info)
            elif self.clients.get(session, _SESSION).startswith(_SESSION):
                self._know(session, self.client_label(info))

    def _know(self, session: str, label: str) -> None:
        clients = self.clients
        clients.pop(session, None)
        clients[session] = label
        while len(clients) > MAX_CELLS * 4:
            del clients[next(iter(clients))]

    # --- reading ------------------------------------------------------------------------

    def read(self, now: float, window: float = 60.0, limit: int = 50) -> dict[str, Any]:
        """Requests/s, errors/s and latency percentiles per tool and per client over the
        last ``window`` seconds (whole slots, the current one included) at ``now``.

        Each row has ``chart``: its requests/s in each slot of the window, oldest first.
        """
        count = max(1, min(SLOTS, math.ceil(window / SLOT)))
        if self.since is None:
            return _empty(count)
        first = (math.floor(now / SLOT) - count + 1) * SLOT
        slots = [*self._past, (self.ends - SLOT, self.cells)]
        slots = [(start, cells) for start, cells in slots if first <= start <= now]
        spans = [
            max(min(now, start + SLOT) - max(start, self.since), _SHORTEST)
            for start in (first + index * SLOT for index in range(count))
        ]
        covered = max(now - max(first, self.since), _SHORTEST)
        tools: dict[tuple[str, str], _Sum] = {}
        clients: dict[str, _Sum] = {}
        for start, cells in slots:
            index = round((start - first) / SLOT)
            for (method, name, client), cell in cells.items():
                if client.startswith(_SESSION):
                    client = self._named(client[1:])
                tool = tools.get((method, name))
                if tool is None:
                    tool = tools[method, name] = _Sum(count)
                tool.add(cell, index)
                who = clients.get(client)
                if who is None:
                    who = clients[client] = _Sum(count)
                who.add(cell, index)
        return {
            "kept": True,
            "window": count * SLOT,
            "slot": SLOT,
            "covered": round(covered, 3),
            "tools": _rows(tools, covered, spans, limit, _tool_fields),
            "clients": _rows(clients, covered, spans, limit, _client_fields),
        }

    def _named(self, session: str) -> str:
        # The client of a session that was not known when its requests were counted.
        if session:
            client = self.clients.get(session, UNKNOWN)
            return UNKNOWN if client.startswith(_SESSION) else client
        return UNKNOWN if self.lone == _SESSION else self.lone


def percentile(buckets: Mapping[int, int], fraction: float) -> float | None:
    """The value under which ``fraction`` of the counted latencies fall, read from
    ``buckets`` (index into ``GRID`` -> count); None if nothing was counted."""
    total = sum(buckets.values())
    if total == 0:
        return None
    rank = fraction * total
    seen = 0
    for index in sorted(buckets):
        count = buckets[index]
        if seen + count >= rank:
            high = GRID[index] if index < len(GRID) else GRID[-1] * 2
            low = GRID[index - 1] if index > 0 else high / 2
            part = (rank - seen) / count if count else 1.0
            return float(low * (high / low) ** part)
        seen += count
    return float(GRID[-1])


class _Sum:
    # One row's cells added up: counts, summed seconds, merged buckets, per-slot counts.

    def __init__(self, slots: int) -> None:
        self.requests = 0
        self.errors = 0
        self.cancelled = 0
        self.seconds = 0.0
        self.buckets: dict[int, int] = {}
        self.chart = [0] * slots

    def add(self, cell: Cell, slot: int) -> None:
        self.requests += cell[0]
        self.errors += cell[1]
        self.cancelled += cell[2]
        self.seconds += cell[3]
        buckets = self.buckets
        for index, count in cell[4].items():
            buckets[index] = buckets.get(index, 0) + count
        self.chart[slot] += cell[0]


def _tool_fields(key: Any) -> dict[str, Any]:
    method, name = key
    return {"method": text(method), "name": text(name) or None}


def _client_fields(key: Any) -> dict[str, Any]:
    return {"client": text(key)}


def _rows(
    sums: Mapping[Any, _Sum],
    covered: float,
    spans: list[float],
    limit: int,
    fields: Any,
) -> list[dict[str, Any]]:
    rows = []
    for key, total in sorted(sums.items(), key=lambda pair: -pair[1].requests)[:limit]:
        timed = total.requests - total.cancelled
        rows.append(
            {
                **fields(key),
                "requests": total.requests,
                "errors": total.errors,
                "cancelled": total.cancelled,
                "rate": round(total.requests / covered, 3),
                "error_rate": round(total.errors / covered, 3),
                "mean": round(total.seconds / timed, 6) if timed else None,
                "p50": _rounded(percentile(total.buckets, 0.50)),
                "p95": _rounded(percentile(total.buckets, 0.95)),
                "p99": _rounded(percentile(total.buckets, 0.99)),
                "chart": [round(n / span, 3) for n, span in zip(total.chart, spans, strict=True)],
            }
        )
    return rows


def _rounded(value: float | None) -> float | None:
    return None if value is None else round(value, 6)


def _empty(count: int) -> dict[str, Any]:
    return {
        "kept": True,
        "window": count * SLOT,
        "slot": SLOT,
        "covered": 0.0,
        "tools": [],
        "clients": [],
    }
