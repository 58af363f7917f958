# The Task actor: one per task, the same in both eras.
#
# It runs the handler inside the task's own CancelScope, in a nursery its owner holds (a
# session's, or the app's for the tasks extension), so a task outlives the request that
# created it. When the handler returns the outcome is fixed (completed, or failed with
# the error the plain request would have been answered with) and announced, unless the
# task was cancelled or expired meanwhile: that outcome stands. With a store the actor
# holds the task's lease and takes the commands other replicas send it while it runs.

from __future__ import annotations

import contextlib
import logging
from collections.abc import Awaitable, Callable
from typing import Final

import orjson
import trio

from ..._exceptions import INTERNAL_ERROR, ProtocolError, RequestError
from ...protocol import JSONObject, TaskStatus, describe, describe_error, over_limit
from ...server import Context, failure_message
from .._metrics import CANCELLED, ERROR, METRICS, OK
from ._replica import TaskReplica
from ._table import Announce, TaskEntry, TaskTable

__all__ = ["TaskRunner", "Work"]

_log = logging.getLogger("mcpactor")

#: what a task does: the handler of the request it was created for
Work = Callable[[Context], Awaitable[JSONObject]]

# A task's terminal status as the outcome its span ends with.
_OUTCOMES: Final = {"completed": OK, "failed": ERROR, "cancelled": CANCELLED}


def _oversized(result: JSONObject, limit: int) -> JSONObject | None:
    # A finished task keeps its result until its TTL passes: held to the message limit,
    # measured once, as it finishes (what cannot be written at all is the writer's).
    try:
        size = len(orjson.dumps(result))
    except TypeError:
        return None
    if size <= limit:
        return None
    return over_limit(
        f"the task's result is {size} bytes, over the {limit}-byte message limit",
        limit,
        code=INTERNAL_ERROR,
    ).to_error()


class TaskRunner:
    """Starts each task's actor in its owner's nursery and fixes its outcome."""

    __slots__ = ("_announce", "_replica", "_table", "_tool_errors_fail")

    def __init__(
        self,
        table: TaskTable,
        announce: Announce,
        *,
        replica: Callable[[], TaskReplica | None],
        tool_errors_fail: bool,
    ) -> None:
        self._table = table
        self._announce = announce
        #: the replica this table's tasks are shared through, if they are
        self._replica = replica
        #: whether a tool's ``isError`` result fails the task (2025-11-25) or completes it
        self._tool_errors_fail = tool_errors_fail

    def spawn(self, nursery: trio.Nursery, entry: TaskEntry, work: Work, ctx: Context) -> None:
        """Start ``entry``'s actor in ``nursery``: ``work(ctx)`` in the task's scope.

        RuntimeError if ``nursery`` no longer takes new tasks.
        """
        replica = self._replica()
        if replica is not None:
            replica.keep_leases(nursery)
        nursery.start_soon(self._run_task, entry, work, ctx, name=f"task {entry.state.task_id}")
        self._table.started()

    async def _run_task(self, entry: TaskEntry, work: Work, ctx: Context) -> None:
        # The span of a task actor: a child of its request's, which is current here.
        tracer = METRICS.tracer
        trace = tracer.start_task(entry.state.task_id) if tracer is not None else None
        replica = self._replica()
        try:
            with replica.leasing(entry) if replica is not None else contextlib.nullcontext():
                result, error = await self._perform(entry, work, ctx, replica)
                if not entry.state.terminal:
                    # Cancelled or expired meanwhile (the only ways its scope is
                    # cancelled): that outcome stands, whatever the work did after.
                    await self._conclude(entry, result, error)
        finally:
            if trace is not None:
                state = entry.state
                trace.end(
                    _OUTCOMES.get(state.status, CANCELLED),
                    state.status if state.status == "failed" else None,
                )
            self._table.ended()

    async def _perform(
        self, entry: TaskEntry, work: Work, ctx: Context, replica: TaskReplica | None
    ) -> tuple[JSONObject | None, JSONObject | None]:
        # The handler's result, or the error it ends with; neither once cancelled.
        serving = replica.serving(entry) if replica is not None else contextlib.nullcontext()
        with serving, entry.scope:
            try:
                result = await work(ctx)
                limit = self._table.options.max_result_bytes
                error = _oversized(result, limit) if limit is not None else None
                return (None, error) if error is not None else (result, None)
            except (RequestError, ProtocolError) as exc:
                return None, exc.to_error()
            except Exception as exc:
                # As in a request actor: a failing handler becomes the error the plain
                # request would have been answered with.
                _log.exception("task %s failed", describe(entry.state.task_id))
                return None, {
                    "code": INTERNAL_ERROR,
                    "message": f"internal error in 'tools/call': {describe_error(exc)}",
                }
        return None, None

    async def _conclude(
        self, entry: TaskEntry, result: JSONObject | None, error: JSONObject | None
    ) -> None:
        # Fix the outcome the handler reached and say so.
        status: TaskStatus = "completed"
        message: str | None = None
        if error is not None:
            status, message = "failed", str(error["message"])
        elif self._tool_errors_fail and result is not None and result.get("isError") is True:
            # A tool's isError result fails the task (spec "Task Execution Errors").
            status, message = "failed", failure_message(result)
        self._table.finish(entry, status, message, result=result, error=error)
        await self._announce(entry)
