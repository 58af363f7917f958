# The process's counters: what requests, sessions, tasks and streams did.
#
# Plain ints in dicts and lists, incremented where things end: a request actor calls
# ``METRICS.request_ended`` once, after its reply is built. Nothing here locks (one trio
# thread increments; a scrape reads between two checkpoints) and nothing is formatted
# until someone asks: the Prometheus collector (``mcpactor.observability``) turns these
# into metric families at scrape time, so the hot path never touches a metrics library.
#
# Labels come from the wire (a method, a tool's name), so each label set is bounded: the
# first ``MAX_METHODS`` methods and ``MAX_NAMES`` names seen keep their own label, longer
# than ``MAX_LABEL`` characters or later ones are counted as "other". A client sending
# ten thousand made-up tool names makes one extra series, not ten thousand.
#
# The module also holds the switches the request actors read on their way: a tracer
# (OpenTelemetry, set by ``mcpactor.observability.enable_tracing``) and whether log
# records want the request's ids (JSON logs). Both are off unless something turns them
# on, and cost one attribute read each when off. So do the history of requests that
# ended (``_history.py``) and their rates per tool and client (``_rates.py``), which
# ``keep_history`` turns on for the admin page: then a request's end makes one more
# call, ``_watched``, which writes down what they keep of it, and leaves the answer's
# write to end the request's time there (``_unwritten.py``): while the history is kept,
# ``sent``, which every sink calls after a write, also settles what that write carried.

from __future__ import annotations

import collections
import contextvars
from bisect import bisect_left
from collections.abc import Mapping
from time import time as _now
from typing import TYPE_CHECKING, Any, Final, Protocol

import trio

from ..protocol import CLIENT_INFO
from ._rates import GRID, Rates, SessionClients
from ._texts import client_name

if TYPE_CHECKING:
    from ..server import TaskState
    from ._history import History
    from ._unwritten import Fix, Unwritten

__all__ = [
    "BUCKETS",
    "CANCELLED",
    "ERROR",
    "LOG_CONTEXT",
    "MAX_LABEL",
    "MAX_METHODS",
    "MAX_NAMES",
    "METRICS",
    "OK",
    "OTHER",
    "QUEUED",
    "LogContext",
    "Metrics",
    "RequestTrace",
    "RequestTracer",
]

#: upper bounds (seconds) of the request latency buckets; one more bucket holds the rest
BUCKETS: Final = (
    0.0005,
    0.001,
    0.0025,
    0.005,
    0.01,
    0.025,
    0.05,
    0.1,
    0.25,
    0.5,
    1.0,
    2.5,
    5.0,
    10.0,
    30.0,
    60.0,
    300.0,
)
#: distinct method labels kept; later ones are "other"
MAX_METHODS: Final = 64
#: distinct tool / prompt name labels kept; later ones are "other"
MAX_NAMES: Final = 128
#: the longest method or name kept as a label
MAX_LABEL: Final = 64
OTHER: Final = "other"

#: a request's outcome: answered with a result
OK: Final = "ok"
#: answered with an error (or a tool's ``isError`` result)
ERROR: Final = "error"
#: cancelled before it was answered
CANCELLED: Final = "cancelled"

# A task's terminal status as a request's outcome.
_TASK_OUTCOMES: Final = {"completed": OK, "failed": ERROR, "cancelled": CANCELLED}

# Methods whose ``params.name`` says what was called (the name label).
_NAMED: Final = frozenset({"tools/call", "prompts/get"})


class RequestTrace(Protocol):
    """One request's span, ended once with the request's outcome."""

    def end(self, outcome: str, error: str | None) -> None:
        """End the span: ``outcome`` is ok, error or cancelled; ``error`` says why."""


class RequestTracer(Protocol):
    """Opens a span per request (``mcpactor.observability`` provides the real one)."""

    def start(
        self,
        method: str,
        params: Mapping[str, Any] | None,
        request_id: object,
        session_id: str | None,
        version: str | None,
    ) -> RequestTrace:
        """Start the span of one request, current in the calling task until it ends."""

    def start_task(self, task_id: str) -> RequestTrace:
        """Start the span of one task actor, current in its task until it ends."""

    def current_trace_id(self) -> str | None:
        """The trace id of the span current in the calling task (hex), if any."""


#: connections of one-stream sessions (WebSocket, legacy SSE) -> the answers queued on
#: them while the console watches: (item, the fixes of its answers), in order. Here, not
#: in ``_unwritten.py``, which is imported only once the history is kept: a connection's
#: writer looks at it each time it asks for an item (``Attachment.get``).
QUEUED: Final[dict[object, collections.deque[tuple[object, list[Any]]]]] = {}

#: (session id, request id, method) of the request the running task serves, for logs
LogContext = tuple[str | None, object, str]
LOG_CONTEXT: Final[contextvars.ContextVar[LogContext | None]] = contextvars.ContextVar(
    "mcpactor.request", default=None
)


class Metrics:
    """The process's counters; ``METRICS`` is the one every actor increments."""

    def __init__(self) -> None:
        # (method, name, outcome) → [count, seconds summed, count per bucket of BUCKETS
        # and one for the rest]: one lookup per request. Keys are labels (name "" where
        # none applies); a request whose method or name is not a label of its own is
        # looked up again under its labels, never stored under what it sent.
        self._series: dict[tuple[str, str, str], list[float]] = {}
        #: (method, kind) → requests answered with an error: "request" (a JSON-RPC
        #: error the handler meant), "internal" (the handler raised) or "tool" (isError)
        self.errors: dict[tuple[str, str], int] = {}
        #: what was cancelled ("request", "task") → how many times
        self.cancellations: dict[str, int] = {}
        self.sessions_opened = 0
        self.sessions_closed = 0
        self.tasks_created = 0
        #: terminal status → tasks that reached it
        self.tasks_finished: dict[str, int] = {}
        #: response streams opened (one per POST that carries requests, and the GET's)
        self.streams_opened = 0
        #: transport → bytes of messages received / sent
        self.bytes_in: dict[str, int] = {}
        self.bytes_out: dict[str, int] = {}
        #: set to trace requests (OpenTelemetry); None: no spans
        self.tracer: RequestTracer | None = None
        #: set when log records want the request's ids (``LOG_CONTEXT``)
        self.log_context = False
        #: the requests that ended lately; None: not kept (see ``keep_history``)
        self.history: History | None = None
        #: rates and latency per tool and client, kept with the history; None: not kept
        self.rates: Rates | None = None
        #: answers ready and not yet written, kept with the history; None: not kept
        self.unwritten: Unwritten | None = None
        self._history_users = 0
        self._log_context_before = False
        self._methods: set[str] = set()
        self._names: set[str] = set()

    # --- labels from the wire --------------------------------------------------------

    def method_label(self, method: str) -> str:
        """Return the label ``method`` is counted under (bounded, see the module)."""
        if method in self._methods:
            return method
        if len(self._methods) >= MAX_METHODS or len(method) > MAX_LABEL:
            return OTHER
        self._methods.add(method)
        return method

    def name_label(self, name: object) -> str:
        """Return the label a tool or prompt ``name`` is counted under."""
        if type(name) is not str:
            return OTHER
        if name in self._names:
            return name
        if len(self._names) >= MAX_NAMES or len(name) > MAX_LABEL:
            return OTHER
        self._names.add(name)
        return name

    # --- what the actors report --------------------------------------------------------

    def request_ended(
        self,
        method: str,
        params: Mapping[str, Any] | None,
        outcome: str,
        seconds: float,
        error: str | None = None,
        detail: str | None = None,
        ended: float | None = None,
        principal: object = None,
    ) -> None:
        """Count one request that ended with ``outcome`` after ``seconds``.

        ``error`` is the kind of error it was answered with, when it was, and ``detail``
        its message, when the caller has it (the history shows it); ``ended`` is when,
        on trio's clock (the rates count it then); ``principal`` what a request without a
        session was admitted as (the history shows it).
        """
        name: object = ""
        if method in _NAMED and params is not None:
            name = params.get("name")
            if type(name) is not str:
                name = OTHER
        key = (method, name, outcome)
        series = self._series.get(key)  # type: ignore[arg-type]
        if series is None:
            series = self._admit(method, name, outcome)
        series[0] += 1
        series[1] += seconds
        series[2 + bisect_left(BUCKETS, seconds)] += 1
        if error is not None:
            kind = (method if method in self._methods else OTHER, error)
            self.errors[kind] = self.errors.get(kind, 0) + 1
        elif outcome == CANCELLED:
            self.cancelled("request")
        if self.history is not None:
            self._watched(method, params, name, outcome, seconds, error, detail, ended, principal)

    def _watched(
        self,
        method: str,
        params: Mapping[str, Any] | None,
        name: object,
        outcome: str,
        seconds: float,
        error: str | None,
        detail: str | None,
        ended: float | None,
        principal: object,
    ) -> None:
        # What the admin listener keeps of a request while it serves: its history entry
        # (one list; the rest is worked out when someone reads it), its params for its
        # story, and its cell of the rates (see _rates.py). An initialize's entry keeps
        # the clientInfo its client sent, for the session's name; a 2026-07-28 request's
        # keeps the client it names and its principal, having no session to name them.
        history, rates = self.history, self.rates
        assert history is not None
        assert rates is not None
        context = LOG_CONTEXT.get()
        session = context[0] if context is not None else None
        if session is not None:
            client = rates.clients.get(session) or self._new_session(session)
            who = None
        else:
            client, who = _lone_client(rates, params, principal)
        kept = name
        if method == "initialize":
            kept = params.get("clientInfo") if params else None
            rates.initialized(session, kept)
        tracer = self.tracer
        trace = tracer.current_trace_id() if tracer is not None else None
        # A list: the answer's write sets its duration again (``_unwritten.settle``).
        entry = [_now(), method, kept, outcome, seconds, error, detail, context, trace, who]
        history.append(entry)
        history.stories.append((context, params))
        if outcome != OK:
            history.failures.append((entry, params))
        if ended is None:
            return
        if ended >= rates.ends:
            rates.turn(ended)
        # Counted under its labels: what it sent, when those are labels (a hit), else
        # what the metrics count it under.
        cell = rates.cells.get((method, name, client)) or rates.cell(  # type: ignore[arg-type]
            (
                method if method in self._methods else OTHER,
                name if not name or name in self._names else OTHER,  # type: ignore[arg-type]
                client,
            )
        )
        cell[0] += 1
        if outcome == CANCELLED:
            cell[2] += 1
            return
        if outcome == ERROR:
            cell[1] += 1
        cell[3] += seconds
        buckets = cell[4]
        bucket = bisect_left(GRID, seconds)
        buckets[bucket] = buckets.get(bucket, 0) + 1
        unwritten = self.unwritten
        if context is not None and unwritten is not None:
            # Its time on the page ends when its answer is written (``_unwritten.py``).
            fix = (entry, cell, bucket, ended - seconds)
            if session is None:
                waiting: dict[Any, Fix] = unwritten.lone_fixes
                waiting[trio.lowlevel.current_task()] = fix
            else:
                waiting = unwritten.requests
                waiting[session, context[1]] = fix
            if len(waiting) > unwritten.limit:
                waiting.clear()  # answers nobody wrote: they keep the time to the ready one

    def _new_session(self, session: str) -> str:
        # The first request of a session whose end the admin sees: its client and
        # principal, asked once of whoever keeps the history (``keep_history``'s
        # ``sessions``); else its requests are counted under its id, and it is named
        # when someone reads them.
        history, rates = self.history, self.rates
        assert history is not None
        assert rates is not None
        found = rates.sessions(session) if rates.sessions is not None else None
        if found is None:
            return rates.unknown(session)
        info, principal = found
        history.learn([(session, client_name(info), principal)])
        rates.learn([(session, info)])
        return rates.clients[session]

    def keep_history(
        self, size: int | None = None, *, sessions: SessionClients | None = None
    ) -> History:
        """Keep the requests that end from now on in a ring (``size`` of them at most),
        and their rates; ``sessions`` names a live session's client (clientInfo) and
        principal, asked once per session (the Observatory's ``session_client``).

        Each request's ids come from ``LOG_CONTEXT``, which this turns on until the last
        caller calls ``drop_history``. Asked again, it returns the ring already kept.
        """
        from ._history import DEFAULT_HISTORY, History
        from ._unwritten import Unwritten

        if self.history is None:
            self.history = History(size or DEFAULT_HISTORY)
            self.unwritten = Unwritten(QUEUED)
            try:
                since: float | None = trio.current_time()
            except RuntimeError:  # not in a run: the rates count from the first request
                since = None
            self.rates = Rates(since)
            self._log_context_before = self.log_context
            self.log_context = True
        if sessions is not None and self.rates is not None and self.rates.sessions is None:
            self.rates.sessions = sessions
        self._history_users += 1
        return self.history

    def drop_history(self) -> None:
        """Undo one ``keep_history``: the last one stops keeping the history."""
        if self._history_users == 0:
            return
        self._history_users -= 1
        if self._history_users == 0:
            if self.unwritten is not None:
                self.unwritten.clear()
            self.history = self.rates = self.unwritten = None
            self.log_context = self._log_context_before

    def _admit(self, method: str, name: object, outcome: str) -> list[float]:
        # The first request of its kind: the series of its labels (made if new).
        key = (self.method_label(method), self.name_label(name) if name else "", outcome)
        series = self._series.get(key)
        if series is None:
            series = self._series[key] = [0.0] * (len(BUCKETS) + 3)
        return series

    def requests(self) -> dict[tuple[str, str, str], int]:
        """Return the requests ended so far by (method, name, outcome) labels."""
        return {key: int(series[0]) for key, series in self._series.items()}

    def latency(self) -> dict[str, tuple[list[int], float]]:
        """Return per method label the count per bucket of ``BUCKETS`` (and the rest), and
        the seconds summed."""
        latency: dict[str, tuple[list[int], float]] = {}
        for (method, _, _), series in self._series.items():
            counts, total = latency.get(method, ([0] * (len(BUCKETS) + 1), 0.0))
            for index, count in enumerate(series[2:]):
                counts[index] += int(count)
            latency[method] = (counts, total + series[1])
        return latency

    def cancelled(self, what: str) -> None:
        """Count one cancellation of a ``what`` (request, task)."""
        self.cancellations[what] = self.cancellations.get(what, 0) + 1

    def session_opened(self) -> None:
        """Count a session that started."""
        self.sessions_opened += 1

    def session_closed(self) -> None:
        """Count a session that ended."""
        self.sessions_closed += 1

    def task_created(self) -> None:
        """Count a task that was created."""
        self.tasks_created += 1

    def task_finished(self, status: str, task: TaskState | None = None) -> None:
        """Count a task that reached the terminal ``status``; the history keeps ``task``'s
        id, time and status message too."""
        finished = self.tasks_finished
        finished[status] = finished.get(status, 0) + 1
        if status == "cancelled":
            self.cancelled("task")
        history = self.history
        if history is not None and task is not None:
            outcome = _TASK_OUTCOMES.get(status, status)
            seconds = task.updated_at - task.created_at
            entry = (_now(), "task", task.task_id, outcome, seconds, None, task.status_message)
            history.append((*entry, None, None, None))

    def stream_opened(self) -> None:
        """Count a response stream that was opened."""
        self.streams_opened += 1

    def received(self, transport: str, size: int) -> None:
        """Count ``size`` bytes received over ``transport``."""
        self.bytes_in[transport] = self.bytes_in.get(transport, 0) + size

    def sent(self, transport: str, size: int) -> None:
        """Count ``size`` bytes sent over ``transport`` (called after they were written)."""
        self.bytes_out[transport] = self.bytes_out.get(transport, 0) + size
        unwritten = self.unwritten
        if unwritten is not None and unwritten.lone_fixes:
            # An answer without a session id waits for its write: over stdio this one
            # carried it, or one before did (the pipe's sink writes in order); over HTTP,
            # if this task served it.
            if transport == "stdio":
                unwritten.pipe_written(trio.current_time())
            else:
                unwritten.task_written(trio.lowlevel.current_task(), trio.current_time())


def _lone_client(
    rates: Rates, params: Mapping[str, Any] | None, principal: object
) -> tuple[str, Any]:
    # The client label of a request without a session id, and what the history keeps of
    # who sent it: a 2026-07-28 request's (client, principal), having no session to name
    # them; stdio's session is the process's one client.
    meta = params.get("_meta") if params is not None else None
    if type(meta) is dict and CLIENT_INFO in meta:
        client = rates.envelope_client(meta)
        return client, (client, principal)
    return rates.lone, None


#: the process's counters
METRICS: Final = Metrics()
