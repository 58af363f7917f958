# Task actors: requests that outlive their request, in both eras.
#
# One Task actor type (``_Task`` and ``_TaskTable._run_task``) and one status table
# (protocol/_ext_tasks.py, through ``TaskState.move``) serve two owners:
#
# - ``TaskManager``, the tasks of one session (2025-11-25). Its nursery is opened by the
#   session actor's ``run`` (``running()``), beside the nursery of request actors, so a
#   task is owned by the session, not by the request that created it: it survives the
#   request's answer and a dropped HTTP connection, and ends with its TTL or the session.
#   While the handler waits on the client (sampling, elicitation, roots, sent as
#   requests through a ``_TaskPeer``) the task is ``input_required``; status changes are
#   announced with ``notifications/tasks/status``.
# - ``TaskRegistry``, the tasks of the tasks extension (``io.modelcontextprotocol/tasks``)
#   at a revision without sessions: one table for the whole process, in a nursery the
#   caller (the app) owns, since any request of any connection may ask about a task.
#   A question the handler asks (``ctx.elicit`` …) parks the task with keyed
#   ``inputRequests`` until ``tasks/update`` brings the answers, and the handler goes on
#   where it stopped; a returned ``InputRequired`` parks it too and runs the handler
#   again with the answers. Status changes are published on a change bus, from which
#   listen streams naming the task send ``notifications/tasks``.
#
# Common to both: ``create`` stores a ``TaskState`` (server/_tasks.py) and starts the
# actor inside the task's own CancelScope; cancelling moves the task to ``cancelled``
# first and then cancels its scope, so the outcome is fixed from then on; one reaper task,
# alive only while the table has entries, deletes each task when its TTL has passed,
# cancelling it first if it still runs. Ids come from ``secrets`` (128 bits).
#
# A session that hibernates (HTTP) enters ``running()`` once per waking period: between
# periods no task actor runs, the table stays, and entries whose TTL passed meanwhile are
# dropped when the next period begins, before any request can ask for them.
#
# With a ``TaskStore`` in the options (runtime/_task_store.py) the table is also a replica
# among others: each state of its tasks is written to the store before anyone hears of it,
# each running actor holds a lease the table renews and takes the commands other replicas
# send it (a cancel, an update's answers), and a task the table does not run is answered
# from its record. Without one nothing of this runs.
#
# Longer than most modules: the two owners only make sense beside the actor they share.

from __future__ import annotations

import contextlib
import functools
import heapq
import logging
import math
import secrets
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Collection, Mapping
from typing import TYPE_CHECKING, Any, ClassVar, Final, Protocol, TypeVar

import attrs
import orjson
import trio

from .._exceptions import (
    INTERNAL_ERROR,
    INVALID_PARAMS,
    METHOD_NOT_FOUND,
    LocalProtocolError,
    ProtocolError,
    RequestError,
)
from ..protocol import JSONObject, RequestId, clip, describe, describe_error, over_limit
from ..protocol._ext_tasks import (
    TERMINAL,
    Snapshot,
    Update,
    acknowledgement,
    apply_update,
    create_task_result,
    detailed_task,
    get_task_result,
    task_not_found,
)
from ..server import Context, Peer
from ..server._rounds import InputNeeded, Rounds
from ..server._tasks import (
    TaskMetadata,
    TaskState,
    TaskStatus,
    encode_cursor,
    failure_message,
    isoformat,
    with_related_task,
)
from ._bus import ChangeEvent
from ._metrics import CANCELLED, ERROR, METRICS, OK
from ._peer_base import Relay, Sessionless
from ._task_store import TaskCommand, TaskRecord, TaskStore
from ._views import TaskView

if TYPE_CHECKING:
    from ..server._tasks import SessionTaskHost, TaskHost

__all__ = [
    "TaskManager",
    "TaskOptions",
    "TaskPublisher",
    "TaskRegistry",
    "TaskStatistics",
]

T = TypeVar("T")

_log = logging.getLogger("mcpactor")

# A task's terminal status as the outcome its span ends with.
_OUTCOMES: Final = {"completed": OK, "failed": ERROR, "cancelled": CANCELLED}


def _positive(instance: object, attribute: attrs.Attribute[Any], value: Any) -> None:
    if value is not None and not value > 0:
        raise ValueError(f"{attribute.name} must be positive, got {value!r}")


@attrs.frozen
class TaskOptions:
    """Limits of the tasks of one session (of the process, for the tasks extension)."""

    #: tasks running at once; more are refused with a clear error
    max_running: int = attrs.field(default=32, validator=_positive)
    #: tasks kept (running or finished, until their TTL passes)
    max_stored: int = attrs.field(default=1024, validator=_positive)
    #: seconds a task is kept when nobody asks for a TTL (None: until the owner ends)
    default_ttl: float | None = attrs.field(default=3600.0, validator=_positive)
    #: the longest TTL granted, in seconds; longer requests are cut to it (None: no limit)
    max_ttl: float | None = attrs.field(default=86400.0, validator=_positive)
    #: the polling interval suggested to clients, in seconds
    poll_interval: float | None = attrs.field(default=1.0, validator=_positive)
    #: tasks per ``tasks/list`` page
    page_size: int = attrs.field(default=100, validator=_positive)
    #: the largest result (as JSON, in bytes) a finished task keeps; a larger one fails
    #: the task with -32603 naming the limit. None: the transport's message limit,
    #: which ``serve_stdio`` and ``serve_http`` fill in (no limit elsewhere)
    max_result_bytes: int | None = attrs.field(default=None, validator=_positive)
    #: whether the session offers tasks at all; off, the ``tasks`` capability is not
    #: declared and task metadata is ignored (stateless HTTP: a task would end with its
    #: one-request session)
    enabled: bool = True
    #: the task store shared with other replicas (None: this table is the whole truth)
    store: TaskStore | None = attrs.field(default=None, eq=False, repr=False)


@attrs.frozen
class TaskStatistics:
    """A snapshot of one table's tasks."""

    #: task actors alive (working, waiting for input, or finishing after a cancel)
    running: int
    #: tasks in the table, finished or not
    stored: int
    #: ``tasks/result`` requests waiting for a task to finish
    waiting: int


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


class TaskPublisher(Protocol):
    """Where a ``TaskRegistry`` publishes status changes: a ``ChangeBus`` will do."""

    def publish(self, event: ChangeEvent) -> None:
        """Hand ``event`` to every listener; never blocks, never raises."""


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
    #: who created it (tasks extension); another principal does not find it
    principal: str | None = None
    #: the input requests the task is parked on, by key (tasks extension)
    outstanding: dict[str, JSONObject] = attrs.field(factory=dict)
    #: answers handed in and not yet taken by the question waiting for them
    answers: dict[str, JSONObject] = attrs.field(factory=dict)
    #: set when answers arrive; replaced once set
    answered: trio.Event = attrs.field(factory=trio.Event)


class _TaskTable:
    """A table of Task actors: storage, limits, the actor itself and expiry."""

    #: how the limits in error messages are scoped
    _scope: ClassVar[str] = "per session"
    #: whether a tool's ``isError`` result fails the task (2025-11-25) or completes it
    _tool_errors_fail: ClassVar[bool] = True

    def __init__(self, options: TaskOptions | None = None) -> None:
        self.options = options or TaskOptions()
        self._tasks: dict[str, _Task] = {}
        self._expiry: list[tuple[float, str]] = []
        self._number = 0
        #: tasks not yet terminal
        self._active = 0
        #: task actors alive
        self._running = 0
        self._waiting = 0
        # Events are made when someone waits: an idle table should cost little.
        self._idle: trio.Event | None = None
        self._reaping = False
        self._wake_reaper: trio.Event | None = None
        self._nursery: trio.Nursery | None = None
        # ISO timestamps follow the runtime's clock (a MockClock in tests), anchored to
        # the wall clock once.
        self._anchor: tuple[float, float] | None = None
        self._shared = self.options.store
        #: tasks whose actors run here and hold a lease in the store
        self._leased: set[str] = set()
        self._leases_idle: trio.Event | None = None

    def statistics(self) -> TaskStatistics:
        """Return how many tasks run, are stored, and are being waited for."""
        return TaskStatistics(
            running=self._running, stored=len(self._tasks), waiting=self._waiting
        )

    async def wait_idle(self) -> None:
        """Wait until no task actor is running."""
        if not self._running:
            await trio.lowlevel.checkpoint()
            return
        if self._idle is None:
            self._idle = trio.Event()
        await self._idle.wait()

    def _instant(self, moment: float) -> str:
        return isoformat(self._epoch(moment))

    def _epoch(self, moment: float) -> float:
        assert self._anchor is not None
        wall, clock = self._anchor
        return wall + (moment - clock)

    def _ttl_ms(self, requested: int | None) -> int | None:
        options = self.options
        if requested is None:
            return _ms(options.default_ttl)
        limit = _ms(options.max_ttl)
        return requested if limit is None else min(requested, limit)

    def _store(
        self, nursery: trio.Nursery, ttl_ms: int | None, principal: str | None = None
    ) -> _Task:
        # A new task in the table (limits checked), its expiry scheduled.
        options = self.options
        if self._active >= options.max_running:
            raise RequestError(
                INTERNAL_ERROR,
                f"server busy: too many tasks running (limit {options.max_running} "
                f"{self._scope}); wait for one to finish or cancel one",
                {"limit": options.max_running},
            )
        if len(self._tasks) >= options.max_stored:
            raise RequestError(
                INTERNAL_ERROR,
                f"server busy: too many tasks kept (limit {options.max_stored} {self._scope}); "
                "finished tasks are kept until their ttl passes",
                {"limit": options.max_stored},
            )
        now = trio.current_time()
        task_id = secrets.token_urlsafe(16)
        state = TaskState(
            task_id=task_id,
            created_at=now,
            ttl_ms=ttl_ms,
            poll_interval_ms=_ms(options.poll_interval),
        )
        self._number += 1
        record = _Task(state=state, number=self._number, principal=principal)
        METRICS.task_created()
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
        return record

    def _spawn(
        self,
        nursery: trio.Nursery,
        task: _Task,
        work: Callable[[Context], Awaitable[JSONObject]],
        ctx: Context,
    ) -> None:
        self._running += 1
        if self._shared is not None and self._leases_idle is None:
            self._leases_idle = trio.Event()
            nursery.start_soon(self._renew_leases, self._shared, self._leases_idle)
        nursery.start_soon(self._run_task, task, work, ctx, name=f"task {task.state.task_id}")

    async def _run_task(
        self,
        task: _Task,
        work: Callable[[Context], Awaitable[JSONObject]],
        ctx: Context,
    ) -> None:
        result: JSONObject | None = None
        error: JSONObject | None = None
        # The span of a task actor: a child of its request's, which is current here.
        tracer = METRICS.tracer
        trace = tracer.start_task(task.state.task_id) if tracer is not None else None
        shared = self._sharing()
        task_id = task.state.task_id
        serving = (
            shared.serve(task_id, functools.partial(self._command, task))
            if shared is not None
            else contextlib.nullcontext()
        )
        if shared is not None:
            self._leased.add(task_id)
        try:
            with serving, task.scope:
                try:
                    result = await work(ctx)
                    limit = self.options.max_result_bytes
                    if limit is not None:
                        error = _oversized(result, limit)
                        if error is not None:
                            result = None
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
            elif self._tool_errors_fail and result is not None and result.get("isError") is True:
                # A tool's isError result fails the task (spec "Task Execution Errors").
                status, message = "failed", failure_message(result)
            self._finish(task, status, message, result=result, error=error)
            await self._announce(task)
        finally:
            if shared is not None:
                self._leased.discard(task_id)
                if not self._leased and self._leases_idle is not None:
                    self._leases_idle.set()
                    self._leases_idle = None
            if trace is not None:
                state = task.state
                trace.end(
                    _OUTCOMES.get(state.status, CANCELLED),
                    state.status if state.status == "failed" else None,
                )
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
        METRICS.task_finished(status)
        if status == "cancelled":
            error = _cancel_error(task.state.task_id, message)
            result = None
        task.result = result
        task.error = error
        task.outstanding.clear()
        task.done.set()

    async def _announce(self, task: _Task) -> None:
        raise NotImplementedError

    def _cancel(self, task: _Task, message: str, reason: str) -> None:
        self._finish(task, "cancelled", message)
        task.scope.cancel(reason)

    # --- the shared store ------------------------------------------------------------

    def _owner(self) -> tuple[str | None, str | None]:
        # (principal, session) written in the records of this table's tasks.
        raise NotImplementedError

    def _sharing(self) -> TaskStore | None:
        # The store this table's tasks are written to, if any.
        return self._shared

    def _record(self, task: _Task) -> TaskRecord:
        shared = self._sharing()
        assert shared is not None
        state = task.state
        principal, session = self._owner()
        return TaskRecord(
            task_id=state.task_id,
            number=task.number,
            status=state.status,
            status_message=state.status_message,
            created_at=self._epoch(state.created_at),
            updated_at=self._epoch(state.updated_at),
            ttl_ms=state.ttl_ms,
            poll_interval_ms=state.poll_interval_ms,
            principal=task.principal if principal is None else principal,
            session=session,
            result=task.result,
            error=task.error,
            input_requests=dict(task.outstanding) if task.outstanding else None,
            replica=shared.replica,
        )

    async def _stored(self, task: _Task) -> None:
        # A new task's first record: until it is stored the task does not exist.
        shared = self._sharing()
        if shared is None:
            return
        try:
            stored = await shared.create(self._record(task))
        except Exception as exc:
            self._forget(task)
            raise _store_unavailable(exc) from None
        task.number = stored.number

    def _forget(self, task: _Task) -> None:
        # Undo ``_store`` for a task that never started.
        del self._tasks[task.state.task_id]
        self._active -= 1

    async def _save(self, task: _Task) -> bool:
        # Write the task's state before anyone hears of it; False when another state
        # stands there, which whoever wrote it announced. A terminal state in the store
        # wins over a later one: a task cancelled (or given up) elsewhere stops here too.
        shared = self._sharing()
        if shared is None:
            return True
        try:
            stood = await shared.save(self._record(task))
        except Exception as exc:
            _log.warning(
                "task %s: its state could not be stored: %s",
                describe(task.state.task_id),
                describe_error(exc),
            )
            return True
        state = task.state
        if not stood.terminal or stood.status == state.status:
            return True
        if not state.terminal:
            self._finish(task, stood.status, stood.status_message, error=stood.error)
            task.scope.cancel(f"the task is {stood.status} in the store")
        else:
            # Finished here after it was decided elsewhere: the store's outcome stands.
            state.status = stood.status
            state.status_message = stood.status_message
            task.result = stood.result
            task.error = stood.error if stood.status != "cancelled" else _cancelled(stood)
        return False

    def _command(self, task: _Task, command: TaskCommand) -> None:
        # Another replica's request for a task running here. A cancel's outcome is in the
        # store already (the replica that took tasks/cancel wrote and announced it).
        if task.state.terminal:
            return
        if command.kind == "cancel":
            self._finish(task, "cancelled", "The task was cancelled by request.")
            task.scope.cancel("cancelled by tasks/cancel on another replica")
        elif command.responses is not None:
            self._take_answers(task, command.responses)

    def _take_answers(self, task: _Task, responses: Mapping[str, JSONObject]) -> None:
        # Only the tasks extension answers a task's questions by command (tasks/update);
        # a session's tasks ask their client directly, so an update sent for one is
        # dropped, not allowed to end the replica's command loop.
        _log.warning(
            "an update for task %s, which takes no answers, was dropped",
            describe(task.state.task_id),
        )

    async def _renew_leases(self, shared: TaskStore, idle: trio.Event) -> None:
        # Alive while some actor runs here with a lease: renewed at a third of its length,
        # so one missed renewal does not lose it.
        while not idle.is_set():
            with trio.move_on_after(shared.lease / 3):
                await idle.wait()
            if self._leased:
                try:
                    await shared.renew(tuple(self._leased))
                except Exception as exc:
                    _log.warning("task leases could not be renewed: %s", describe_error(exc))

    async def _load(self, task_id: str) -> TaskRecord | None:
        # A task this table does not run, from the store.
        assert self._shared is not None
        try:
            return await self._shared.load(task_id, on_stopped=self._given_up)
        except Exception as exc:
            raise _store_unavailable(exc) from None

    def _given_up(self, record: TaskRecord) -> None:
        # A load here found the task's replica gone and failed it: say so, once.
        raise NotImplementedError

    async def _cancel_remote(self, record: TaskRecord) -> TaskRecord:
        # Fix the outcome in the store, then tell the replica whose actor runs it.
        shared = self._shared
        assert shared is not None
        task_id = record.task_id
        try:
            stood = await shared.cancel(
                task_id, "The task was cancelled by request.", self._epoch(trio.current_time())
            )
            if stood is not None and stood.status == "cancelled":
                await shared.send(stood, TaskCommand("cancel", task_id))
        except Exception as exc:
            raise _store_unavailable(exc) from None
        return record if stood is None else stood

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
        # Alive only while some task can expire, so an idle table has no extra task.
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
                    self._cancel(task, "the task's ttl passed", "the task's ttl passed")
                    await self._announce(task)
                task.done.set()
        finally:
            self._reaping = False
            self._wake_reaper = None

    def view(self, limit: int | None = None) -> tuple[TaskView, ...]:
        """The first ``limit`` tasks (all by default), in the order they were made."""
        return tuple(
            TaskView(
                id=task.state.task_id,
                status=task.state.status,
                created=task.state.created_at,
                expires=task.state.expires_at,
                message=task.state.status_message,
                terminal=task.state.terminal,
                principal=task.principal,
            )
            for task in list(self._tasks.values())[: None if limit is None else max(0, limit)]
        )


class TaskManager(_TaskTable):
    """The tasks of one session (2025-11-25): their table, their actors and their expiry."""

    def __init__(self, peer: Peer, options: TaskOptions | None = None) -> None:
        super().__init__(options)
        self._peer = peer

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
        record = self._store(nursery, self._ttl_ms(task.ttl_ms))
        await self._stored(record)
        task_ctx = Context(
            peer=_TaskPeer(self._peer, self, record),
            request_id=ctx.request_id,
            negotiated=ctx.negotiated,
            meta=ctx.meta,
            server=ctx.server,
        )
        self._spawn(nursery, record, work, task_ctx)
        return {"task": self._wire(record)}

    async def _announce(self, task: _Task) -> None:
        if await self._save(task):
            await self._peer_notify(self._wire(task))

    async def _peer_notify(self, wire: JSONObject) -> None:
        # No related-task _meta: the task id is in the params (spec "Task Notifications").
        await self._peer.notify("notifications/tasks/status", wire, related_request_id=None)

    def _owner(self) -> tuple[str | None, str | None]:
        session = getattr(self._peer, "session_id", None)
        return None, session if isinstance(session, str) else None

    def _given_up(self, record: TaskRecord) -> None:
        if self._nursery is not None:
            self._nursery.start_soon(self._peer_notify, _record_wire(record))

    def _sharing(self) -> TaskStore | None:
        # A session without an id (stdio) has nobody to share its tasks with.
        return self._shared if self._owner()[1] is not None else None

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

    async def _find_any(self, task_id: str, method: str) -> _Task | TaskRecord:
        # A task of this table, or of the same session on another replica (the store's).
        try:
            return self._find(task_id, method)
        except RequestError:
            session = self._owner()[1]
            if self._shared is None or session is None:
                raise
            record = await self._load(task_id)
            if record is None or record.session != session:
                raise
            return record

    async def get(self, task_id: str) -> JSONObject:
        """Return the ``Task`` (``tasks/get``)."""
        task = await self._find_any(task_id, "tasks/get")
        return _record_wire(task) if isinstance(task, TaskRecord) else self._wire(task)

    async def result(self, task_id: str, *, request_id: RequestId | None) -> JSONObject:
        """Wait until the task is terminal, then answer as the plain request would have."""
        found = await self._find_any(task_id, "tasks/result")
        if isinstance(found, TaskRecord):
            return await self._remote_result(found)
        task = found
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
        session = self._owner()[1]
        if self._shared is not None and session is not None:
            try:
                records, more = await self._shared.page(session, after, size)
            except Exception as exc:
                raise _store_unavailable(exc) from None
            shared_page: JSONObject = {"tasks": [_record_wire(record) for record in records]}
            if more and records:
                shared_page["nextCursor"] = encode_cursor(records[-1].number)
            return shared_page
        chosen = [task for task in self._tasks.values() if task.number > after]
        # The table keeps creation order, so the page is the first ``size`` of these.
        page = chosen[:size]
        listed: JSONObject = {"tasks": [self._wire(task) for task in page]}
        if len(chosen) > size:
            listed["nextCursor"] = encode_cursor(page[-1].number)
        return listed

    async def cancel(self, task_id: str) -> JSONObject:
        """Cancel a task (``tasks/cancel``); -32602 if it already finished."""
        task = await self._find_any(task_id, "tasks/cancel")
        status = task.status if isinstance(task, TaskRecord) else task.state.status
        if status in TERMINAL:
            raise RequestError(
                INVALID_PARAMS,
                f"Cannot cancel task: already in terminal status {describe(status)}",
                {"taskId": task_id, "status": status},
            )
        if isinstance(task, TaskRecord):
            stood = await self._cancel_remote(task)
            wire = _record_wire(stood)
            if stood.status == "cancelled":
                await self._peer_notify(wire)
            return wire
        self._cancel(task, "The task was cancelled by request.", "cancelled by tasks/cancel")
        await self._announce(task)
        return self._wire(task)

    async def _remote_result(self, record: TaskRecord) -> JSONObject:
        # tasks/result for a task running on another replica: wait for its record to be
        # terminal. A lapsed lease makes it failed on a load, so the wait re-reads it at
        # least once per lease and never outlasts a replica that stopped.
        shared = self._shared
        assert shared is not None
        task_id = record.task_id
        with shared.watch(task_id) as watch:
            self._waiting += 1
            try:
                while True:
                    loaded = await self._load(task_id)
                    if loaded is None:
                        raise RequestError(
                            INVALID_PARAMS,
                            f"Failed to retrieve task: Task has expired ({describe(task_id)})",
                            {"taskId": clip(task_id)},
                        )
                    record = loaded
                    if record.terminal:
                        break
                    with trio.move_on_after(shared.lease):
                        await watch.wait()
            finally:
                self._waiting -= 1
        error = record.error
        if record.status == "cancelled":
            error = error or _cancelled(record)
        if error is not None:
            raise RequestError(error["code"], error["message"], error.get("data"))
        if record.result is None:
            raise RequestError(INTERNAL_ERROR, f"task {describe(task_id)} ended with no result")
        return with_related_task(record.result, task_id)


class TaskRegistry(_TaskTable):
    """The tasks of the tasks extension: one table for the process, in its nursery.

    ``nursery`` (the app's) owns every task actor and the reaper: closing it ends them.
    Each status change is published to ``bus`` as a ``ChangeEvent`` of kind ``task``
    whose payload is the task's ``DetailedTask`` (the body of ``notifications/tasks``).
    """

    _scope = "per process"
    # A tool that ran and reported an error is a completed task (the extension's
    # "error semantics"); failed is for protocol errors.
    _tool_errors_fail = False

    def __init__(
        self,
        nursery: trio.Nursery,
        *,
        bus: TaskPublisher | None = None,
        options: TaskOptions | None = None,
    ) -> None:
        super().__init__(options)
        self._nursery = nursery
        self._bus = bus
        self._anchor = (time.time(), trio.current_time())

    def _lookup(self, task_id: str, principal: str | None, request_id: RequestId | None) -> _Task:
        task = self._tasks.get(task_id)
        if task is None or task.principal != principal:
            raise task_not_found(task_id, request_id=request_id)
        return task

    def _snapshot(self, task: _Task) -> Snapshot:
        state = task.state
        status = state.status
        return Snapshot(
            task_id=state.task_id,
            status=status,
            created_at=self._instant(state.created_at),
            last_updated_at=self._instant(state.updated_at),
            ttl_ms=state.ttl_ms,
            poll_interval_ms=state.poll_interval_ms,
            status_message=state.status_message,
            result=task.result if status == "completed" else None,
            error=task.error if status == "failed" else None,
            input_requests=dict(task.outstanding) if status == "input_required" else None,
        )

    async def _announce(self, task: _Task) -> None:
        if await self._save(task):
            self._publish(self._snapshot(task))

    def _publish(self, snapshot: Snapshot) -> None:
        if self._bus is not None:
            payload = detailed_task(snapshot)
            self._bus.publish(ChangeEvent("task", task_id=snapshot.task_id, payload=payload))

    def _owner(self) -> tuple[str | None, str | None]:
        return None, None

    def _given_up(self, record: TaskRecord) -> None:
        self._publish(_record_snapshot(record))

    async def _remote(
        self, task_id: str, principal: str | None, request_id: RequestId | None
    ) -> TaskRecord:
        # A task of the extension running on another replica, from the store.
        record = await self._load(task_id) if self._shared is not None else None
        if record is None or record.session is not None or record.principal != principal:
            raise task_not_found(task_id, request_id=request_id)
        return record

    # --- the TaskHost of server/_tasks.py ------------------------------------------------

    async def create(
        self,
        work: Callable[[Context], Awaitable[JSONObject]],
        ctx: Context,
        *,
        principal: str | None = None,
    ) -> JSONObject:
        """Start ``work`` as a Task actor; return the ``CreateTaskResult`` once stored."""
        nursery = self._nursery
        assert nursery is not None
        record = self._store(nursery, self._ttl_ms(None), principal)
        await self._stored(record)
        task_ctx = Context(
            peer=_DetachedPeer(ctx._peer),
            request_id=ctx.request_id,
            negotiated=ctx.negotiated,
            meta=ctx.meta,
            server=ctx.server,
        )
        task_ctx._asker = _Asker(self, record)
        try:
            self._spawn(nursery, record, functools.partial(self._rounds, record, work), task_ctx)
        except RuntimeError:
            # The app's nursery is closing: nothing may start in it any more.
            self._running -= 1
            self._finish(record, "failed", "the server is shutting down", error=_SHUTTING_DOWN)
            raise RequestError(
                INTERNAL_ERROR, "server busy: the server is shutting down"
            ) from None
        return create_task_result(self._snapshot(record))

    async def get(
        self, task_id: str, *, principal: str | None = None, request_id: RequestId | None = None
    ) -> JSONObject:
        """Return the ``GetTaskResult``: the task and what its status carries."""
        await trio.lowlevel.checkpoint()
        task = self._tasks.get(task_id)
        if self._shared is not None and (task is None or task.principal != principal):
            record = await self._remote(task_id, principal, request_id)
            return get_task_result(_record_snapshot(record))
        return get_task_result(self._snapshot(self._lookup(task_id, principal, request_id)))

    async def update(
        self, update: Update, *, principal: str | None = None, request_id: RequestId | None = None
    ) -> JSONObject:
        """Hand answers to a parked task; answers nobody waits for are ignored."""
        await trio.lowlevel.checkpoint()
        task = self._tasks.get(update.task_id)
        if self._shared is not None and (task is None or task.principal != principal):
            # Only the replica running it holds the question its answers go to.
            record = await self._remote(update.task_id, principal, request_id)
            if record.status == "input_required":
                command = TaskCommand("update", record.task_id, dict(update.responses))
                try:
                    await self._shared.send(record, command)
                except Exception as exc:
                    raise _store_unavailable(exc) from None
            return acknowledgement()
        task = self._lookup(update.task_id, principal, request_id)
        if self._accept(task, update.responses):
            await self._announce(task)
        return acknowledgement()

    def _accept(self, task: _Task, responses: Mapping[str, JSONObject]) -> bool:
        # Hand answers to a parked task; whether any was taken.
        if task.state.status != "input_required":
            return False
        outcome = apply_update(task.outstanding, responses)
        if not outcome.accepted:
            return False
        task.answers.update(outcome.accepted)
        task.outstanding = dict(outcome.remaining)
        if outcome.status == "working":
            task.state.move("working", None, trio.current_time())
        task.answered.set()
        task.answered = trio.Event()
        return True

    def _take_answers(self, task: _Task, responses: Mapping[str, JSONObject]) -> None:
        if self._accept(task, responses) and self._nursery is not None:
            self._nursery.start_soon(self._announce, task)

    async def cancel(
        self, task_id: str, *, principal: str | None = None, request_id: RequestId | None = None
    ) -> JSONObject:
        """Cancel the task's actor; a finished task stays as it is. The empty ack."""
        await trio.lowlevel.checkpoint()
        task = self._tasks.get(task_id)
        if self._shared is not None and (task is None or task.principal != principal):
            record = await self._remote(task_id, principal, request_id)
            if not record.terminal:
                stood = await self._cancel_remote(record)
                if stood.status == "cancelled":
                    self._publish(_record_snapshot(stood))
            return acknowledgement()
        task = self._lookup(task_id, principal, request_id)
        if not task.state.terminal:
            self._cancel(task, "The task was cancelled by request.", "cancelled by tasks/cancel")
            await self._announce(task)
        return acknowledgement()

    def known(self, task_id: str, *, principal: str | None = None) -> bool:
        """Whether ``task_id`` names a task of ``principal``."""
        task = self._tasks.get(task_id)
        return task is not None and task.principal == principal

    async def known_tasks(
        self, task_ids: Collection[str], *, principal: str | None = None
    ) -> frozenset[str]:
        """Those of ``task_ids`` that name tasks of ``principal``, on any replica."""
        known = {task_id for task_id in task_ids if self.known(task_id, principal=principal)}
        if self._shared is not None:
            for task_id in task_ids:
                if task_id not in known:
                    try:
                        await self._remote(task_id, principal, None)
                    except (ProtocolError, RequestError):
                        # Unknown, another's, or the store is out of reach: not honoured.
                        continue
                    known.add(task_id)
        await trio.lowlevel.checkpoint()
        return frozenset(known)

    # --- questions -------------------------------------------------------------------

    async def _park(
        self, task: _Task, requests: Mapping[str, JSONObject]
    ) -> dict[str, JSONObject]:
        # Wait, input_required, until every one of ``requests`` is answered.
        task.outstanding.update(requests)
        if task.state.status == "working":
            task.state.move(
                "input_required", "waiting for the client's input", trio.current_time()
            )
        await self._announce(task)
        while not all(key in task.answers for key in requests):
            await task.answered.wait()
        return {key: task.answers.pop(key) for key in requests}

    async def _rounds(
        self,
        task: _Task,
        work: Callable[[Context], Awaitable[JSONObject]],
        ctx: Context,
    ) -> JSONObject:
        # A handler that returns InputRequired runs again with the answers, as a retry
        # would run it (its questions asked through ctx are answered in place instead).
        while True:
            try:
                return await work(ctx)
            except InputNeeded as needed:
                if not needed.requests:
                    raise LocalProtocolError(
                        "a task's handler returned InputRequired without input requests"
                    ) from None
                answers = await self._park(task, needed.requests)
                before = ctx._rounds.answers if ctx._rounds is not None else {}
                ctx._rounds = Rounds({**before, **answers}, needed.state)


def _cancel_error(task_id: str, message: str | None) -> JSONObject:
    # What tasks/result answers for a cancelled task.
    return {
        "code": INVALID_PARAMS,
        "message": f"task {describe(task_id)} was cancelled: {message}",
        "data": {"taskId": task_id, "status": "cancelled"},
    }


def _cancelled(record: TaskRecord) -> JSONObject:
    return _cancel_error(record.task_id, record.status_message)


def _store_unavailable(exc: Exception) -> RequestError:
    return RequestError(INTERNAL_ERROR, f"the task store is unavailable: {describe_error(exc)}")


def _record_wire(record: TaskRecord) -> JSONObject:
    # The 2025-11-25 ``Task`` of a record: the same fields a table's own task has.
    state = TaskState(
        task_id=record.task_id,
        created_at=record.created_at,
        ttl_ms=record.ttl_ms,
        poll_interval_ms=record.poll_interval_ms,
        status=record.status,
        status_message=record.status_message,
        updated_at=record.updated_at,
    )
    return state.wire(isoformat)


def _record_snapshot(record: TaskRecord) -> Snapshot:
    # The extension's view of a record, as ``TaskRegistry._snapshot`` makes of its own.
    status = record.status
    error = record.error
    if status == "failed" and error is None:
        error = {"code": INTERNAL_ERROR, "message": record.status_message or "the task failed"}
    return Snapshot(
        task_id=record.task_id,
        status=status,
        created_at=isoformat(record.created_at),
        last_updated_at=isoformat(record.updated_at),
        ttl_ms=record.ttl_ms,
        poll_interval_ms=record.poll_interval_ms,
        status_message=record.status_message,
        result=record.result if status == "completed" else None,
        error=error if status == "failed" else None,
        input_requests=record.input_requests if status == "input_required" else None,
    )


_SHUTTING_DOWN: Final[JSONObject] = {
    "code": INTERNAL_ERROR,
    "message": "the server is shutting down",
}


class _Asker:
    """Answers a task's questions in place: the task parks until ``tasks/update``."""

    def __init__(self, registry: TaskRegistry, task: _Task) -> None:
        self._registry = registry
        self._task = task

    async def ask(self, key: str, request: JSONObject) -> JSONObject:
        """Park the task on ``request`` under ``key``; return the client's answer."""
        answers = await self._registry._park(self._task, {key: request})
        return answers[key]


class _DetachedPeer(Sessionless, Relay):
    """The peer of a task's Context (tasks extension): the request it came from is over.

    Its notifications have no stream to go on (a task reaches the client only through
    ``tasks/get`` and ``notifications/tasks``), so they are dropped; its questions park
    it (``_Asker``), never reaching ``request``; work that needs the runtime (threads,
    worker processes) still runs through the request's peer.
    """

    __slots__ = ("_peer",)

    def __init__(self, peer: Peer) -> None:
        self._peer = peer

    @property
    def tasks(self) -> SessionTaskHost:
        """There are no session tasks at a revision without sessions."""
        raise LocalProtocolError("a task of the tasks extension has no session tasks")

    async def notify(
        self, method: str, params: JSONObject, *, related_request_id: RequestId | None
    ) -> None:
        """Drop the notification: no stream carries it."""
        await trio.lowlevel.checkpoint()

    def _refusal(self, method: str) -> Exception:
        return LocalProtocolError(f"a task cannot send the client a request ({method})")


if TYPE_CHECKING:
    # Both owners are what their hosts' Protocols ask for.
    _session_host: SessionTaskHost = TaskManager.__new__(TaskManager)
    _extension_host: TaskHost = TaskRegistry.__new__(TaskRegistry)


class _TaskPeer(Relay):
    """The peer of a task's Context: the session's, with the task's ``_meta`` added."""

    def __init__(self, peer: Peer, manager: TaskManager, task: _Task) -> None:
        self._peer = peer
        self._manager = manager
        self._task = task

    @property
    def tasks(self) -> SessionTaskHost:
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

    async def subscriptions_changed(self) -> None:
        """Tell the session's replicas, as the session's own peer does."""
        await self._peer.subscriptions_changed()


def _ms(seconds: float | None) -> int | None:
    if seconds is None or math.isinf(seconds):
        return None
    return round(seconds * 1000)
