# The tasks of one session (2025-11-25).
#
# The session actor's ``run`` opens the tasks' nursery (``running()``) beside the nursery
# of request actors, so a task is owned by the session, not by the request that created
# it: it survives the request's answer and a dropped HTTP connection, and ends with its
# TTL or the session. A session that rests between periods (HTTP) enters ``running()``
# once per waking period. Status changes are announced with
# ``notifications/tasks/status``; with a store, a task of the same session running on
# another replica is answered from its record.

from __future__ import annotations

import contextlib
import logging
import time
from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING

import trio

from ... import server
from ..._exceptions import INTERNAL_ERROR, INVALID_PARAMS, METHOD_NOT_FOUND, RequestError
from ...protocol import JSONObject, RequestId, clip, describe
from ...server import Context, Peer, TaskMetadata
from ._options import TaskOptions

# The table and what serves it are read with the session's first task (or tasks/*
# request, or a store): a session that never runs one imports none of it; the tasks
# requests' own module (server's ``with_related_task``, ``encode_cursor``) is read
# through the package for the same reason.
if TYPE_CHECKING:
    from ...server import SessionTaskHost
    from .._statistics import TaskStatistics
    from .._views import TaskView
    from ._expiry import TaskExpiry
    from ._replica import TaskReplica
    from ._runner import TaskRunner, Work
    from ._store import TaskRecord
    from ._table import TaskEntry, TaskTable

__all__ = ["TaskManager"]

_log = logging.getLogger("mcpactor")


def _not_found(task_id: str) -> RequestError:
    return RequestError(
        INVALID_PARAMS,
        f"Failed to retrieve task: Task not found ({describe(task_id)})",
        {"taskId": clip(task_id)},
    )


def _expired(task_id: str) -> RequestError:
    return RequestError(
        INVALID_PARAMS,
        f"Failed to retrieve task: Task has expired ({describe(task_id)})",
        {"taskId": clip(task_id)},
    )


def _drop_answers(entry: TaskEntry, responses: Mapping[str, JSONObject]) -> None:
    # Only the tasks extension answers a task's questions by command (tasks/update); a
    # session's tasks ask their client directly, so an update sent for one is dropped,
    # not allowed to end the replica's command loop.
    _log.warning(
        "an update for task %s, which takes no answers, was dropped",
        describe(entry.state.task_id),
    )


class TaskManager:
    """The tasks of one session (2025-11-25): their table, their actors and their expiry."""

    __slots__ = (
        "_anchor",
        "_expiry",
        "_nursery",
        "_peer",
        "_replica",
        "_runner",
        "_table",
        "options",
    )

    def __init__(self, peer: Peer, options: TaskOptions | None = None) -> None:
        self.options = options = options or TaskOptions()
        self._peer = peer
        # Made with the first task (``_made``): a session that never runs one should cost
        # little, and import nothing of them.
        self._table: TaskTable | None = None
        self._anchor: tuple[float, float] | None = None
        self._expiry: TaskExpiry | None = None
        self._runner: TaskRunner | None = None
        self._replica: TaskReplica | None = None
        self._nursery: trio.Nursery | None = None
        if options.store is not None:
            self._made()

    def _made(self) -> TaskTable:
        # The table (and with a store, the replica sharing it), made once.
        table = self._table
        if table is not None:
            return table
        from ._replica import TaskReplica
        from ._table import TaskTable

        table = self._table = TaskTable(self.options, "per session")
        if self._anchor is not None:
            table.anchor(self._anchor)
        store = self.options.store
        if store is not None:
            self._replica = TaskReplica(
                store,
                table,
                session=self._session,
                take_answers=_drop_answers,
                on_stopped=self._given_up,
            )
        return table

    def view(self, limit: int | None = None) -> tuple[TaskView, ...]:
        """A read-only view of the first ``limit`` tasks (all by default)."""
        table = self._table
        return () if table is None else table.view(limit)

    @property
    def alive(self) -> int:
        """How many task actors are alive: what the session waits for before it ends."""
        table = self._table
        return 0 if table is None else table.running

    def statistics(self) -> TaskStatistics:
        """Return how many tasks run, are stored, and are being waited for."""
        from .._statistics import TaskStatistics

        table = self._table
        if table is None:
            return TaskStatistics(running=0, stored=0, waiting=0)
        return TaskStatistics(
            running=table.running, stored=len(table.tasks), waiting=table.waiters
        )

    async def wait_idle(self) -> None:
        """Wait until no task actor is running."""
        table = self._table
        if table is None:
            await trio.lowlevel.checkpoint()
            return
        await table.wait_idle()

    @contextlib.contextmanager
    def running(self, nursery: trio.Nursery) -> Iterator[TaskManager]:
        """Start task actors in ``nursery`` (the session's) while the session runs.

        A session that rests between runs enters this once per run; the table outlives
        it, and what expired in between is dropped on entry; the reaper of expired
        tasks stops on exit.
        """
        table = self._table
        if table is not None:
            table.anchor()
        elif self._anchor is None:
            # The clock is tied now, as the table made later will be.
            self._anchor = (time.time(), trio.current_time())
        self._nursery = nursery
        if self._expiry is not None:
            self._expiry.resume(nursery)
        try:
            yield self
        finally:
            self._nursery = None
            if self._expiry is not None:
                self._expiry.pause()

    def _actors(self) -> tuple[TaskExpiry, TaskRunner]:
        # The expiry and the runner of the session's tasks, made with the first task.
        if self._expiry is None or self._runner is None:
            from ._expiry import TaskExpiry
            from ._runner import TaskRunner

            table = self._made()
            self._expiry = TaskExpiry(table, self._announce)
            self._runner = TaskRunner(
                table, self._announce, replica=self._shared, tool_errors_fail=True
            )
        return self._expiry, self._runner

    def _session(self) -> str | None:
        session = getattr(self._peer, "session_id", None)
        return session if isinstance(session, str) else None

    def _shared(self) -> TaskReplica | None:
        # A session without an id (stdio) has nobody to share its tasks with.
        return self._replica if self._session() is not None else None

    def _wire(self, entry: TaskEntry) -> JSONObject:
        return entry.state.wire(self._made().instant)

    async def _announce(self, entry: TaskEntry) -> None:
        replica = self._shared()
        if replica is None or await replica.save(entry):
            await self._notify_status(self._wire(entry))

    async def _notify_status(self, wire: JSONObject) -> None:
        # No related-task _meta: the task id is in the params (spec "Task Notifications").
        await self._peer.notify("notifications/tasks/status", wire, related_request_id=None)

    def _given_up(self, record: TaskRecord) -> None:
        # A load here found the task's replica gone and failed it: say so, once.
        if self._nursery is not None:
            from ._replica import record_wire

            self._nursery.start_soon(self._notify_status, record_wire(record))

    # --- creating tasks ----------------------------------------------------------------

    async def create(self, work: Work, ctx: Context, task: TaskMetadata) -> JSONObject:
        """Start ``work`` as a Task actor; return the ``CreateTaskResult`` at once."""
        if not self.options.enabled:
            # A receiver that does not declare tasks processes the request normally,
            # ignoring the task metadata (spec "Task Support and Handling").
            return await work(ctx)
        nursery = self._nursery
        if nursery is None:
            raise RequestError(INTERNAL_ERROR, "server busy: the session is shutting down")
        table = self._made()
        expiry, runner = self._actors()
        entry = table.add(table.ttl_ms(task.ttl_ms))
        expiry.schedule(nursery, entry)
        replica = self._shared()
        if replica is not None:
            await replica.create(entry)
        from ._peers import SessionTaskPeer

        task_ctx = Context(
            peer=SessionTaskPeer(self._peer, self, entry, self._announce),
            request_id=ctx.request_id,
            negotiated=ctx.negotiated,
            meta=ctx.meta,
            server=ctx.server,
        )
        runner.spawn(nursery, entry, work, task_ctx)
        return {"task": self._wire(entry)}

    # --- the tasks/* methods -----------------------------------------------------------

    def _find(self, task_id: str, method: str) -> TaskEntry:
        if not self.options.enabled:
            raise RequestError(
                METHOD_NOT_FOUND, f"method not found: {describe(method)}", {"method": clip(method)}
            )
        entry = self._made().tasks.get(task_id)
        if entry is None:
            raise _not_found(task_id)
        return entry

    async def _find_any(self, task_id: str, method: str) -> TaskEntry | TaskRecord:
        # A task of this table, or of the same session on another replica (the store's).
        try:
            return self._find(task_id, method)
        except RequestError:
            replica = self._shared()
            if replica is None:
                raise
            record = await replica.load(task_id)
            if record is None or record.session != self._session():
                raise
            return record

    async def get(self, task_id: str) -> JSONObject:
        """Return the ``Task`` (``tasks/get``)."""
        # A record comes only from a store, whose owner imported its module.
        from ._replica import record_wire
        from ._store import TaskRecord

        task = await self._find_any(task_id, "tasks/get")
        return record_wire(task) if isinstance(task, TaskRecord) else self._wire(task)

    async def result(self, task_id: str, *, request_id: RequestId | None) -> JSONObject:
        """Wait until the task is terminal, then answer as the plain request would have."""
        from ._store import TaskRecord

        found = await self._find_any(task_id, "tasks/result")
        if isinstance(found, TaskRecord):
            return await self._remote_result(found)
        entry = found
        if not entry.done.is_set():
            readers = [request_id] if request_id is not None else []
            entry.readers.extend(readers)
            with self._made().waiting():
                try:
                    await entry.done.wait()
                finally:
                    for reader in readers:
                        entry.readers.remove(reader)
        if entry.expired:
            raise _expired(task_id)
        if entry.error is not None:
            error = entry.error
            raise RequestError(error["code"], error["message"], error.get("data"))
        assert entry.result is not None
        return server.with_related_task(entry.result, task_id)

    async def page(self, after: int) -> JSONObject:
        """Return the tasks created after number ``after``, one page (``tasks/list``)."""
        if not self.options.enabled:
            raise RequestError(
                METHOD_NOT_FOUND, "method not found: 'tasks/list'", {"method": "tasks/list"}
            )
        size = self.options.page_size
        replica = self._shared()
        if replica is not None:
            session = self._session()
            assert session is not None
            records, more = await replica.page(session, after, size)
            from ._replica import record_wire

            shared_page: JSONObject = {"tasks": [record_wire(record) for record in records]}
            if more and records:
                shared_page["nextCursor"] = server.encode_cursor(records[-1].number)
            return shared_page
        chosen = [entry for entry in self._made().tasks.values() if entry.number > after]
        # The table keeps creation order, so the page is the first ``size`` of these.
        page = chosen[:size]
        listed: JSONObject = {"tasks": [self._wire(entry) for entry in page]}
        if len(chosen) > size:
            listed["nextCursor"] = server.encode_cursor(page[-1].number)
        return listed

    async def cancel(self, task_id: str) -> JSONObject:
        """Cancel a task (``tasks/cancel``); -32602 if it already finished."""
        from ...protocol import TERMINAL
        from ._replica import record_wire
        from ._store import TaskRecord

        task = await self._find_any(task_id, "tasks/cancel")
        status = task.status if isinstance(task, TaskRecord) else task.state.status
        if status in TERMINAL:
            raise RequestError(
                INVALID_PARAMS,
                f"Cannot cancel task: already in terminal status {describe(status)}",
                {"taskId": task_id, "status": status},
            )
        if isinstance(task, TaskRecord):
            replica = self._replica
            assert replica is not None
            stood = await replica.cancel(task)
            wire = record_wire(stood)
            if stood.status == "cancelled":
                await self._notify_status(wire)
            return wire
        self._made().cancel(
            task, "The task was cancelled by request.", "cancelled by tasks/cancel"
        )
        await self._announce(task)
        return self._wire(task)

    async def _remote_result(self, record: TaskRecord) -> JSONObject:
        # tasks/result for a task running on another replica: wait for its record to be
        # terminal. A lapsed lease makes it failed on a load, so the wait re-reads it at
        # least once per lease and never outlasts a replica that stopped.
        replica = self._replica
        assert replica is not None
        task_id = record.task_id
        with replica.watch(task_id) as watch, self._made().waiting():
            while True:
                loaded = await replica.load(task_id)
                if loaded is None:
                    raise _expired(task_id)
                record = loaded
                if record.terminal:
                    break
                with trio.move_on_after(replica.store.lease):
                    await watch.wait()
        from ._replica import record_cancel_error

        error = record.error
        if record.status == "cancelled":
            error = error or record_cancel_error(record)
        if error is not None:
            raise RequestError(error["code"], error["message"], error.get("data"))
        if record.result is None:
            raise RequestError(INTERNAL_ERROR, f"task {describe(task_id)} ended with no result")
        return server.with_related_task(record.result, task_id)


if TYPE_CHECKING:
    # What a session's peer hands its Context as ``tasks``.
    _session_host: SessionTaskHost = TaskManager.__new__(TaskManager)
