# The table of one owner's tasks: the entries, their limits, their counts and their clock.
#
# An entry is stored with its ``TaskState`` (server/_tasks.py) and the CancelScope its
# actor runs in; finishing it fixes its outcome (result or error) and wakes whoever waits
# for it. Cancelling moves the task to ``cancelled`` first and then cancels its scope, so
# the outcome is fixed from then on. Ids come from ``secrets`` (128 bits).

from __future__ import annotations

import contextlib
import secrets
import time
from collections.abc import Awaitable, Callable, Iterator
from typing import TYPE_CHECKING

import attrs
import trio

from ..._exceptions import INTERNAL_ERROR, INVALID_PARAMS, RequestError
from ...protocol import JSONObject, RequestId, TaskStatus, describe
from ...server import TaskState, isoformat
from .._metrics import METRICS
from ._options import TaskOptions, ms

if TYPE_CHECKING:
    # Built where a view is asked for (the admin page): not on a server's start.
    from .._views import TaskView

__all__ = ["Announce", "TaskEntry", "TaskTable", "cancel_error"]


@attrs.define(eq=False)
class TaskEntry:
    """One task in a table: its state, its actor's scope, its outcome and who waits."""

    state: TaskState
    #: creation order, for ``tasks/list`` cursors
    number: int
    scope: trio.CancelScope = attrs.field(factory=trio.CancelScope)
    #: set once the task is terminal (or deleted): ``tasks/result`` waits on it
    done: trio.Event = attrs.field(factory=trio.Event)
    #: the result, or the JSON-RPC error object, once terminal
    result: JSONObject | None = None
    error: JSONObject | None = None
    expired: bool = False
    #: ``tasks/result`` requests waiting: the task's messages go on their streams
    readers: list[RequestId] = attrs.field(factory=list)
    #: server→client requests in flight for this task (``input_required`` while > 0)
    asking: int = 0
    #: who created it (tasks extension); another principal does not find it
    principal: str | None = None
    #: the input requests the task is parked on, by key (tasks extension)
    outstanding: dict[str, JSONObject] = attrs.field(factory=dict)
    #: answers handed in and not yet taken by the question waiting for them
    answers: dict[str, JSONObject] = attrs.field(factory=dict)
    #: set when answers arrive; replaced once set
    answered: trio.Event = attrs.field(factory=trio.Event)

    @property
    def stream(self) -> RequestId | None:
        """The request whose stream carries the task's messages, if one waits for it.

        A waiting ``tasks/result`` carries them (the spec's flow for input_required);
        otherwise they go wherever unrelated messages go.
        """
        return self.readers[0] if self.readers else None


#: tells whoever follows a task that its state changed (after storing it, with a store)
Announce = Callable[[TaskEntry], Awaitable[None]]


def cancel_error(task_id: str, message: str | None) -> JSONObject:
    """What ``tasks/result`` answers for a cancelled task."""
    return {
        "code": INVALID_PARAMS,
        "message": f"task {describe(task_id)} was cancelled: {message}",
        "data": {"taskId": task_id, "status": "cancelled"},
    }


class TaskTable:
    """The tasks of one owner by id, held to the owner's limits, with their counts."""

    __slots__ = (
        "_active",
        "_anchor",
        "_idle",
        "_number",
        "_scope",
        "options",
        "running",
        "tasks",
        "waiters",
    )

    def __init__(self, options: TaskOptions, scope: str) -> None:
        self.options = options
        #: how the limits in error messages are scoped ("per session", "per process")
        self._scope = scope
        self.tasks: dict[str, TaskEntry] = {}
        self._number = 0
        #: tasks not yet terminal
        self._active = 0
        #: task actors alive
        self.running = 0
        #: ``tasks/result`` requests waiting for a task to finish
        self.waiters = 0
        # Events are made when someone waits: an idle table should cost little.
        self._idle: trio.Event | None = None
        # ISO timestamps follow the runtime's clock (a MockClock in tests), anchored to
        # the wall clock once.
        self._anchor: tuple[float, float] | None = None

    async def wait_idle(self) -> None:
        """Wait until no task actor is running."""
        if not self.running:
            await trio.lowlevel.checkpoint()
            return
        if self._idle is None:
            self._idle = trio.Event()
        await self._idle.wait()

    def started(self) -> None:
        """Count a task actor that started."""
        self.running += 1

    def ended(self) -> None:
        """Count a task actor that ended; wake ``wait_idle`` when none is left."""
        self.running -= 1
        if not self.running and self._idle is not None:
            self._idle.set()
            self._idle = None

    @contextlib.contextmanager
    def waiting(self) -> Iterator[None]:
        """Count a ``tasks/result`` request waiting while the block runs."""
        self.waiters += 1
        try:
            yield
        finally:
            self.waiters -= 1

    # --- the clock ---------------------------------------------------------------------

    def anchor(self, at: tuple[float, float] | None = None) -> None:
        """Tie the runtime's clock to the wall clock, once (in the event loop).

        ``at``: the (wall clock, runtime clock) pair its owner read when the table was
        due, for a table made later than that.
        """
        if self._anchor is None:
            self._anchor = at if at is not None else (time.time(), trio.current_time())

    def instant(self, moment: float) -> str:
        """A moment of the runtime's clock as an ISO 8601 timestamp."""
        return isoformat(self.epoch(moment))

    def epoch(self, moment: float) -> float:
        """A moment of the runtime's clock in wall-clock seconds since the epoch."""
        assert self._anchor is not None
        wall, clock = self._anchor
        return wall + (moment - clock)

    # --- entries -----------------------------------------------------------------------

    def ttl_ms(self, requested: int | None) -> int | None:
        """The TTL granted for ``requested`` (ms): the default, or cut to the longest."""
        options = self.options
        if requested is None:
            return ms(options.default_ttl)
        limit = ms(options.max_ttl)
        return requested if limit is None else min(requested, limit)

    def add(self, ttl_ms: int | None, principal: str | None = None) -> TaskEntry:
        """A new working task in the table; -32603 RequestError past the limits."""
        options = self.options
        if self._active >= options.max_running:
            raise RequestError(
                INTERNAL_ERROR,
                f"server busy: too many tasks running (limit {options.max_running} "
                f"{self._scope}); wait for one to finish or cancel one",
                {"limit": options.max_running},
            )
        if len(self.tasks) >= options.max_stored:
            raise RequestError(
                INTERNAL_ERROR,
                f"server busy: too many tasks kept (limit {options.max_stored} {self._scope}); "
                "finished tasks are kept until their ttl passes",
                {"limit": options.max_stored},
            )
        task_id = secrets.token_urlsafe(16)
        state = TaskState(
            task_id=task_id,
            created_at=trio.current_time(),
            ttl_ms=ttl_ms,
            poll_interval_ms=ms(options.poll_interval),
        )
        self._number += 1
        entry = TaskEntry(state=state, number=self._number, principal=principal)
        METRICS.task_created()
        self.tasks[task_id] = entry
        self._active += 1
        return entry

    def forget(self, entry: TaskEntry) -> None:
        """Undo ``add`` for a task that never started."""
        del self.tasks[entry.state.task_id]
        self._active -= 1

    def finish(
        self,
        entry: TaskEntry,
        status: TaskStatus,
        message: str | None,
        *,
        result: JSONObject | None = None,
        error: JSONObject | None = None,
    ) -> None:
        """Move the task to a terminal ``status`` with its outcome; wake its waiters."""
        entry.state.move(status, message, trio.current_time())
        self._active -= 1
        METRICS.task_finished(status, entry.state)
        if status == "cancelled":
            error = cancel_error(entry.state.task_id, message)
            result = None
        entry.result = result
        entry.error = error
        entry.outstanding.clear()
        entry.done.set()

    def cancel(self, entry: TaskEntry, message: str, reason: str) -> None:
        """Fix the task as cancelled, then cancel its actor's scope."""
        self.finish(entry, "cancelled", message)
        entry.scope.cancel(reason)

    def view(self, limit: int | None = None) -> tuple[TaskView, ...]:
        """The first ``limit`` tasks (all by default), in the order they were made."""
        from .._views import TaskView

        entries = list(self.tasks.values())[: None if limit is None else max(0, limit)]
        return tuple(
            TaskView(
                id=entry.state.task_id,
                status=entry.state.status,
                created=entry.state.created_at,
                expires=entry.state.expires_at,
                message=entry.state.status_message,
                terminal=entry.state.terminal,
                principal=entry.principal,
            )
            for entry in entries
        )
