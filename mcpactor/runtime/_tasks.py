# Task actors (2025-11-25): task-augmented requests that outlive their request.
#
# Each session has one ``TaskManager``. Its nursery is opened by the session actor's
# ``run`` (``running()``), beside the nursery of request actors, so a task is owned by
# the session, not by the request that created it: it survives the request's answer and
# a dropped HTTP connection, and ends with its TTL or the session.
#
# - ``create`` stores a ``TaskState`` (the sans-io record of server/_tasks.py), starts a
#   Task actor in the manager's nursery inside the task's own CancelScope and returns the
#   ``CreateTaskResult`` at once.
# - The actor runs the work with a Context whose peer is a ``_TaskPeer``: what the
#   handler sends carries the related-task ``_meta``, and while it waits on the client
#   (sampling, elicitation, roots) the task is ``input_required``.
# - Every status change goes through ``TaskState.move`` (the status machine) and is
#   announced with ``notifications/tasks/status``.
# - ``tasks/cancel`` moves the task to ``cancelled`` first (the spec wants it cancelled
#   before the answer) and then cancels its scope; the outcome is fixed from then on.
# - One reaper task, alive only while the table has entries, deletes each task when its
#   TTL has passed, cancelling it first if it still runs.
#
# A session that hibernates (HTTP) enters ``running()`` once per waking period: between
# periods no task actor runs, the table stays, and entries whose TTL passed meanwhile are
# dropped when the next period begins, before any request can ask for them.
#
# Tasks are bound to their session: another session has another manager, so it sees
# none of these ids. Ids come from ``secrets`` (128 bits).

from __future__ import annotations

import contextlib
import heapq
import logging
import math
import secrets
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from typing import TYPE_CHECKING, Any, TypeVar

import attrs
import trio

from .._exceptions import (
    INTERNAL_ERROR,
    INVALID_PARAMS,
    METHOD_NOT_FOUND,
    ProtocolError,
    RequestError,
)
from ..protocol import JSONObject, RequestId, clip, describe, describe_error
from ..server import Context, Peer
from ..server._execution import Offload
from ..server._tasks import (
    TaskMetadata,
    TaskState,
    TaskStatus,
    encode_cursor,
    failure_message,
    isoformat,
    with_related_task,
)

if TYPE_CHECKING:
    from ..server._tasks import TaskHost

__all__ = ["TaskManager", "TaskOptions", "TaskStatistics"]

T = TypeVar("T")

_log = logging.getLogger("mcpactor")


def _positive(instance: object, attribute: attrs.Attribute[Any], value: Any) -> None:
    if value is not None and not value > 0:
        raise ValueError(f"{attribute.name} must be positive, got {value!r}")


@attrs.frozen
class TaskOptions:
    """Limits of the tasks of one session; the defaults suit most servers."""

    #: tasks of one session running at once; more are refused with a clear error
    max_running: int = attrs.field(default=32, validator=_positive)
    #: tasks one session keeps (running or finished, until their TTL passes)
    max_stored: int = attrs.field(default=1024, validator=_positive)
    #: seconds a task is kept when the client asks for no TTL (None: until the session ends)
    default_ttl: float | None = attrs.field(default=3600.0, validator=_positive)
    #: the longest TTL granted, in seconds; longer requests are cut to it (None: no limit)
    max_ttl: float | None = attrs.field(default=86400.0, validator=_positive)
    #: the polling interval suggested to clients, in seconds
    poll_interval: float | None = attrs.field(default=1.0, validator=_positive)
    #: tasks per ``tasks/list`` page
    page_size: int = attrs.field(default=100, validator=_positive)
    #: whether the session offers tasks at all; off, the ``tasks`` capability is not
    #: declared and task metadata is ignored (stateless HTTP: a task would end with its
    #: one-request session)
    enabled: bool = True


@attrs.frozen
class TaskStatistics:
    """A snapshot of one session's tasks."""

    #: task actors alive (working, waiting for input, or finishing after a cancel)
    running: int
    #: tasks in the table, finished or not
    stored: int
    #: ``tasks/result`` requests waiting for a task to finish
    waiting: int


@attrs.define(eq=False)
class _Task:
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


class TaskManager:
    """The tasks of one session: their table, their actors and their expiry."""

    def __init__(self, peer: Peer, options: TaskOptions | None = None) -> None:
        self._peer = peer
        self.options = options or TaskOptions()
        self._tasks: dict[str, _Task] = {}
        self._expiry: list[tuple[float, str]] = []
        self._number = 0
        #: tasks not yet terminal
        self._active = 0
        #: task actors alive
        self._running = 0
        self._waiting = 0
        # Events are made when someone waits: an idle session should cost little.
        self._idle: trio.Event | None = None
        self._reaping = False
        self._wake_reaper: trio.Event | None = None
        self._nursery: trio.Nursery | None = None
        # ISO timestamps follow the runtime's clock (a MockClock in tests), anchored to
        # the wall clock once.
        self._anchor: tuple[float, float] | None = None

    def statistics(self) -> TaskStatistics:
        """Return how many tasks run, are stored, and are being waited for."""
        return TaskStatistics(
            running=self._running, stored=len(self._tasks), waiting=self._waiting
        )

    @contextlib.asynccontextmanager
    async def running(self) -> AsyncIterator[TaskManager]:
        """Own the task actors while the session runs; cancel what is left on exit.

        A session that rests between periods enters this once per period; the table
        outlives it, and what expired in between is dropped on entry.
        """
        async with trio.open_nursery() as nursery:
            if self._anchor is None:
                self._anchor = (time.time(), trio.current_time())
            self._nursery = nursery
            self._drop_expired()
            if self._expiry and not self._reaping:
                self._reaping = True
                nursery.start_soon(self._reap)
            try:
                yield self
            finally:
                self._nursery = None
                nursery.cancel_scope.cancel("the session ended")

    async def wait_idle(self) -> None:
        """Wait until no task actor is running."""
        if not self._running:
            await trio.lowlevel.checkpoint()
            return
        if self._idle is None:
            self._idle = trio.Event()
        await self._idle.wait()

    def _instant(self, moment: float) -> str:
        assert self._anchor is not None
        wall, clock = self._anchor
        return isoformat(wall + (moment - clock))

    def _wire(self, task: _Task) -> JSONObject:
        return task.state.wire(self._instant)

    def _find(self, task_id: str, method: str) -> _Task:
        if not self.options.enabled:
            raise RequestError(
                METHOD_NOT_FOUND, f"method not found: {describe(method)}", {"method": clip(method)}
            )
        task = self._tasks.get(task_id)
        if task is None:
            raise RequestError(
                INVALID_PARAMS,
                f"Failed to retrieve task: Task not found ({describe(task_id)})",
                {"taskId": clip(task_id)},
            )
        return task

    # --- creating tasks -------------------------------------------------------------

    async def create(
        self,
        work: Callable[[Context], Awaitable[JSONObject]],
        ctx: Context,
        task: TaskMetadata,
    ) -> JSONObject:
        """Start ``work`` as a Task actor; return the ``CreateTaskResult`` at once."""
        if not self.options.enabled:
            # A receiver that does not declare tasks processes the request normally,
            # ignoring the task metadata (spec "Task Support and Handling").
            return await work(ctx)
        nursery = self._nursery
        if nursery is None:
            raise RequestError(INTERNAL_ERROR, "server busy: the session is shutting down")
        options = self.options
        if self._active >= options.max_running:
            raise RequestError(
                INTERNAL_ERROR,
                f"server busy: too many tasks running (limit {options.max_running} per "
                "session); wait for one to finish or cancel one",
                {"limit": options.max_running},
            )
        if len(self._tasks) >= options.max_stored:
            raise RequestError(
                INTERNAL_ERROR,
                f"server busy: too many tasks kept (limit {options.max_stored} per session); "
                "finished tasks are kept until their ttl passes",
                {"limit": options.max_stored},
            )
        now = trio.current_time()
        task_id = secrets.token_urlsafe(16)
        state = TaskState(
            task_id=task_id,
            created_at=now,
            ttl_ms=self._ttl_ms(task.ttl_ms),
            poll_interval_ms=_ms(options.poll_interval),
        )
        self._number += 1
        record = _Task(state=state, number=self._number)
        self._tasks[task_id] = record
        self._active += 1
        expires_at = state.expires_at
        if expires_at is not None:
            heapq.heappush(self._expiry, (expires_at, task_id))
            if self._wake_reaper is not None:
                self._wake_reaper.set()
            if not self._reaping:
                self._reaping = True
                nursery.start_soon(self._reap)
        task_ctx = Context(
            peer=_TaskPeer(self._peer, self, record),
            request_id=ctx.request_id,
            negotiated=ctx.negotiated,
            meta=ctx.meta,
            server=ctx.server,
        )
        self._running += 1
        nursery.start_soon(self._run_task, record, work, task_ctx, name=f"task {task_id}")
        return {"task": self._wire(record)}

    def _ttl_ms(self, requested: int | None) -> int | None:
        options = self.options
        if requested is None:
            return _ms(options.default_ttl)
        limit = _ms(options.max_ttl)
        return requested if limit is None else min(requested, limit)

    async def _run_task(
        self,
        task: _Task,
        work: Callable[[Context], Awaitable[JSONObject]],
        ctx: Context,
    ) -> None:
        result: JSONObject | None = None
        error: JSONObject | None = None
        try:
            with task.scope:
                try:
                    result = await work(ctx)
                except (RequestError, ProtocolError) as exc:
                    error = exc.to_error()
                except Exception as exc:
                    # As in a request actor: a failing handler becomes the error the
                    # plain request would have been answered with.
                    _log.exception("task %s failed", describe(task.state.task_id))
                    error = {
                        "code": INTERNAL_ERROR,
                        "message": f"internal error in 'tools/call': {describe_error(exc)}",
                    }
            if task.state.terminal:
                # Cancelled or expired meanwhile (the only ways its scope is cancelled):
                # that outcome stands, whatever the work did after.
                return
            status: TaskStatus = "completed"
            message: str | None = None
            if error is not None:
                status, message = "failed", str(error["message"])
            elif result is not None and result.get("isError") is True:
                # A tool's isError result fails the task (spec "Task Execution Errors").
                status, message = "failed", failure_message(result)
            self._finish(task, status, message, result=result, error=error)
            await self._announce(task)
        finally:
            self._running -= 1
            if not self._running and self._idle is not None:
                self._idle.set()
                self._idle = None

    def _finish(
        self,
        task: _Task,
        status: TaskStatus,
        message: str | None,
        *,
        result: JSONObject | None = None,
        error: JSONObject | None = None,
    ) -> None:
        task.state.move(status, message, trio.current_time())
        self._active -= 1
        if status == "cancelled":
            error = {
                "code": INVALID_PARAMS,
                "message": f"task {describe(task.state.task_id)} was cancelled: {message}",
                "data": {"taskId": task.state.task_id, "status": "cancelled"},
            }
            result = None
        task.result = result
        task.error = error
        task.done.set()

    async def _announce(self, task: _Task) -> None:
        # No related-task _meta: the task id is in the params (spec "Task Notifications").
        await self._peer.notify(
            "notifications/tasks/status", self._wire(task), related_request_id=None
        )

    # --- input_required ----------------------------------------------------------------

    def _ask(self, task: _Task) -> bool:
        task.asking += 1
        if task.state.status != "working":
            return False
        task.state.move("input_required", "waiting for the client's answer", trio.current_time())
        return True

    def _answered(self, task: _Task) -> bool:
        task.asking -= 1
        if task.asking or task.state.status != "input_required":
            return False
        task.state.move("working", None, trio.current_time())
        return True

    def _stream_of(self, task: _Task) -> RequestId | None:
        # A waiting tasks/result carries the task's messages (the spec's flow for
        # input_required); otherwise they go wherever unrelated messages go.
        return task.readers[0] if task.readers else None

    # --- the tasks/* methods --------------------------------------------------------

    async def get(self, task_id: str) -> JSONObject:
        """Return the ``Task`` (``tasks/get``)."""
        return self._wire(self._find(task_id, "tasks/get"))

    async def result(self, task_id: str, *, request_id: RequestId | None) -> JSONObject:
        """Wait until the task is terminal, then answer as the plain request would have."""
        task = self._find(task_id, "tasks/result")
        if not task.done.is_set():
            readers = [request_id] if request_id is not None else []
            task.readers.extend(readers)
            self._waiting += 1
            try:
                await task.done.wait()
            finally:
                self._waiting -= 1
                for reader in readers:
                    task.readers.remove(reader)
        if task.expired:
            raise RequestError(
                INVALID_PARAMS,
                f"Failed to retrieve task: Task has expired ({describe(task_id)})",
                {"taskId": clip(task_id)},
            )
        if task.error is not None:
            error = task.error
            raise RequestError(error["code"], error["message"], error.get("data"))
        assert task.result is not None
        return with_related_task(task.result, task_id)

    async def page(self, after: int) -> JSONObject:
        """Return the tasks created after number ``after``, one page (``tasks/list``)."""
        if not self.options.enabled:
            raise RequestError(
                METHOD_NOT_FOUND, "method not found: 'tasks/list'", {"method": "tasks/list"}
            )
        size = self.options.page_size
        chosen = [task for task in self._tasks.values() if task.number > after]
        # The table keeps creation order, so the page is the first ``size`` of these.
        page = chosen[:size]
        listed: JSONObject = {"tasks": [self._wire(task) for task in page]}
        if len(chosen) > size:
            listed["nextCursor"] = encode_cursor(page[-1].number)
        return listed

    async def cancel(self, task_id: str) -> JSONObject:
        """Cancel a task (``tasks/cancel``); -32602 if it already finished."""
        task = self._find(task_id, "tasks/cancel")
        if task.state.terminal:
            raise RequestError(
                INVALID_PARAMS,
                f"Cannot cancel task: already in terminal status {describe(task.state.status)}",
                {"taskId": task_id, "status": task.state.status},
            )
        self._finish(task, "cancelled", "The task was cancelled by request.")
        task.scope.cancel("cancelled by tasks/cancel")
        await self._announce(task)
        return self._wire(task)

    # --- expiry ------------------------------------------------------------------------

    def _drop_expired(self) -> None:
        # Between periods nothing runs, so every task due is finished: forget it now.
        now = trio.current_time()
        expiry = self._expiry
        while expiry and expiry[0][0] <= now:
            task = self._tasks.get(expiry[0][1])
            if task is not None and not task.state.terminal:
                break  # still running: the reaper cancels it and says so
            heapq.heappop(expiry)
            if task is not None:
                del self._tasks[task.state.task_id]
                task.expired = True
                task.done.set()

    async def _reap(self) -> None:
        # Alive only while some task can expire, so an idle session has no extra task.
        try:
            while self._expiry:
                when, task_id = self._expiry[0]
                if when > trio.current_time():
                    wake = self._wake_reaper = trio.Event()
                    with trio.move_on_at(when):
                        await wake.wait()
                    continue
                heapq.heappop(self._expiry)
                task = self._tasks.pop(task_id, None)
                if task is None:
                    continue
                task.expired = True
                if not task.state.terminal:
                    self._finish(task, "cancelled", "the task's ttl passed")
                    task.scope.cancel("the task's ttl passed")
                    await self._announce(task)
                task.done.set()
        finally:
            self._reaping = False
            self._wake_reaper = None


class _TaskPeer:
    """The peer of a task's Context: the session's, with the task's ``_meta`` added."""

    def __init__(self, peer: Peer, manager: TaskManager, task: _Task) -> None:
        self._peer = peer
        self._manager = manager
        self._task = task

    @property
    def tasks(self) -> TaskHost:
        """The session's tasks."""
        return self._manager

    async def notify(
        self, method: str, params: JSONObject, *, related_request_id: RequestId | None
    ) -> None:
        """Send a notification tied to the task."""
        task = self._task
        await self._peer.notify(
            method,
            with_related_task(params, task.state.task_id),
            related_request_id=self._manager._stream_of(task),
        )

    async def request(
        self,
        method: str,
        params: JSONObject,
        *,
        related_request_id: RequestId | None,
        timeout: float | None,
    ) -> JSONObject:
        """Ask the client for something; the task is ``input_required`` until it answers."""
        manager, task = self._manager, self._task
        asked = manager._ask(task)
        try:
            try:
                if asked:
                    await manager._announce(task)
                result = await self._peer.request(
                    method,
                    with_related_task(params, task.state.task_id),
                    related_request_id=manager._stream_of(task),
                    timeout=timeout,
                )
            finally:
                resumed = manager._answered(task)
        except Exception:
            if resumed:
                await manager._announce(task)
            raise
        if resumed:
            await manager._announce(task)
        return result

    async def close_sse_stream(self, *, related_request_id: RequestId) -> None:
        """Nothing to close: the request that created the task was answered long ago."""

    def log_enabled(self, level: str) -> bool:
        """Return whether the client wants log messages at ``level``."""
        return self._peer.log_enabled(level)

    def subscribe(self, uri: str) -> None:
        """Remember that the client wants updates of ``uri``."""
        self._peer.subscribe(uri)

    def unsubscribe(self, uri: str) -> None:
        """Forget the client's subscription to ``uri``."""
        self._peer.unsubscribe(uri)

    async def run_sync(self, fn: Callable[[], T]) -> T:
        """Run a blocking callable in a worker thread, cancellable cooperatively."""
        return await self._peer.run_sync(fn)

    async def call(
        self,
        fn: Callable[..., Any],
        kwargs: Mapping[str, Any],
        *,
        offload: Offload,
        timeout: float | None,
    ) -> Any:
        """Run a tool's function as ``offload`` says, under its timeout."""
        return await self._peer.call(fn, kwargs, offload=offload, timeout=timeout)


def _ms(seconds: float | None) -> int | None:
    if seconds is None or math.isinf(seconds):
        return None
    return round(seconds * 1000)
