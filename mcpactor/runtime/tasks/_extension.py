# The tasks of the tasks extension (``io.modelcontextprotocol/tasks``) at a revision
# without sessions.
#
# One table serves the whole process, in a nursery the caller (the app) owns, since any
# request of any connection may ask about a task. Each task belongs to the principal
# that created it. Its questions park it until ``tasks/update`` answers them
# (``TaskInput``); status changes are published on a change bus, from which listen
# streams naming the task send ``notifications/tasks``. With a store, a task running on
# another replica is answered from its record, and cancels and answers for it are sent
# to that replica.

from __future__ import annotations

import functools
import time
from collections.abc import Collection, Mapping
from typing import TYPE_CHECKING, Final, Protocol

import trio

# The tasks extension's wire forms (``protocol.Snapshot``, ``protocol.acknowledgement``,
# ...) are read through the package, so they load with the first tasks request.
from ... import protocol
from ..._exceptions import INTERNAL_ERROR, ProtocolError, RequestError
from ...protocol import JSONObject, RequestId
from ...server import Context
from .._bus import ChangeEvent
from ._options import TaskOptions

# The table and what serves it are read with the first task (or tasks/* request, or a
# store): a process that never runs one imports none of it.
if TYPE_CHECKING:
    from ...protocol import Snapshot, Update
    from ...server import TaskHost
    from .._statistics import TaskStatistics
    from .._views import TaskView
    from ._expiry import TaskExpiry
    from ._input import TaskInput
    from ._replica import TaskReplica
    from ._runner import TaskRunner, Work
    from ._store import TaskRecord
    from ._table import TaskEntry, TaskTable

__all__ = ["TaskPublisher", "TaskRegistry"]

_SHUTTING_DOWN: Final[JSONObject] = {
    "code": INTERNAL_ERROR,
    "message": "the server is shutting down",
}


class TaskPublisher(Protocol):
    """Where a ``TaskRegistry`` publishes status changes: a ``ChangeBus`` will do."""

    def publish(self, event: ChangeEvent) -> None:
        """Hand ``event`` to every listener; never blocks, never raises."""


class TaskRegistry:
    """The tasks of the tasks extension: one table for the process, in its nursery.

    ``nursery`` (the app's) owns every task actor and the reaper: closing it ends them.
    Each status change is published to ``bus`` as a ``ChangeEvent`` of kind ``task``
    whose payload is the task's ``DetailedTask`` (the body of ``notifications/tasks``).
    """

    def __init__(
        self,
        nursery: trio.Nursery,
        *,
        bus: TaskPublisher | None = None,
        options: TaskOptions | None = None,
    ) -> None:
        self.options = options = options or TaskOptions()
        self._nursery = nursery
        self._bus = bus
        # The table, its expiry, questions and runner are made with the first task
        # (``_made``), its clock tied to the wall clock now, as it always was.
        self._anchor = (time.time(), trio.current_time())
        self._table: TaskTable | None = None
        self._replica: TaskReplica | None = None
        if options.store is not None:
            self._made()

    # set by ``_made``, with the table
    _expiry: TaskExpiry
    _input: TaskInput
    _runner: TaskRunner

    def _made(self) -> TaskTable:
        # The table and what serves it (with a store, the replica sharing it), made once.
        table = self._table
        if table is not None:
            return table
        from ._expiry import TaskExpiry
        from ._input import TaskInput
        from ._replica import TaskReplica
        from ._runner import TaskRunner
        from ._table import TaskTable

        options = self.options
        table = TaskTable(options, "per process")
        table.anchor(self._anchor)
        self._expiry = TaskExpiry(table, self._announce)
        self._input = TaskInput(self._announce)
        self._replica = replica = (
            TaskReplica(
                options.store,
                table,
                session=lambda: None,
                take_answers=self._take_answers,
                on_stopped=self._given_up,
            )
            if options.store is not None
            else None
        )
        # A tool that ran and reported an error is a completed task (the extension's
        # "error semantics"); failed is for protocol errors.
        self._runner = TaskRunner(
            table,
            self._announce,
            replica=lambda: replica,
            tool_errors_fail=False,
        )
        self._table = table
        return table

    def view(self, limit: int | None = None) -> tuple[TaskView, ...]:
        """A read-only view of the first ``limit`` tasks (all by default)."""
        table = self._table
        return () if table is None else table.view(limit)

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

    def _lookup(
        self, task_id: str, principal: str | None, request_id: RequestId | None
    ) -> TaskEntry:
        entry = self._made().tasks.get(task_id)
        if entry is None or entry.principal != principal:
            raise protocol.task_not_found(task_id, request_id=request_id)
        return entry

    def _elsewhere(self, task_id: str, principal: str | None) -> TaskReplica | None:
        # The replica to ask when ``task_id`` is not a task of ``principal`` here.
        if self._replica is None:
            return None
        entry = self._made().tasks.get(task_id)
        return self._replica if entry is None or entry.principal != principal else None

    def _snapshot(self, entry: TaskEntry) -> Snapshot:
        state = entry.state
        status = state.status
        instant = self._made().instant
        return protocol.Snapshot(
            task_id=state.task_id,
            status=status,
            created_at=instant(state.created_at),
            last_updated_at=instant(state.updated_at),
            ttl_ms=state.ttl_ms,
            poll_interval_ms=state.poll_interval_ms,
            status_message=state.status_message,
            result=entry.result if status == "completed" else None,
            error=entry.error if status == "failed" else None,
            input_requests=dict(entry.outstanding) if status == "input_required" else None,
        )

    async def _announce(self, entry: TaskEntry) -> None:
        if self._replica is None or await self._replica.save(entry):
            self._publish(self._snapshot(entry))

    def _publish(self, snapshot: Snapshot) -> None:
        if self._bus is not None:
            payload = protocol.detailed_task(snapshot)
            self._bus.publish(ChangeEvent("task", task_id=snapshot.task_id, payload=payload))

    def _given_up(self, record: TaskRecord) -> None:
        # A load here found the task's replica gone and failed it: say so, once.
        from ._replica import record_snapshot

        self._publish(record_snapshot(record))

    def _take_answers(self, entry: TaskEntry, responses: Mapping[str, JSONObject]) -> None:
        # Answers another replica's tasks/update passed on to a task running here.
        if self._input.accept(entry, responses):
            self._nursery.start_soon(self._announce, entry)

    async def _remote(
        self,
        replica: TaskReplica,
        task_id: str,
        principal: str | None,
        request_id: RequestId | None,
    ) -> TaskRecord:
        # A task of the extension running on another replica, from the store.
        record = await replica.load(task_id)
        if record is None or record.session is not None or record.principal != principal:
            raise protocol.task_not_found(task_id, request_id=request_id)
        return record

    # --- the TaskHost of server/_tasks.py ------------------------------------------------

    async def create(
        self, work: Work, ctx: Context, *, principal: str | None = None
    ) -> JSONObject:
        """Start ``work`` as a Task actor; return the ``CreateTaskResult`` once stored."""
        from ._input import TaskAsker
        from ._peers import ExtensionTaskPeer

        nursery = self._nursery
        table = self._made()
        entry = table.add(table.ttl_ms(None), principal)
        self._expiry.schedule(nursery, entry)
        if self._replica is not None:
            await self._replica.create(entry)
        task_ctx = Context(
            peer=ExtensionTaskPeer(ctx._peer),
            request_id=ctx.request_id,
            negotiated=ctx.negotiated,
            meta=ctx.meta,
            server=ctx.server,
        )
        task_ctx._asker = TaskAsker(self._input, entry)
        rounds = functools.partial(self._input.rounds, entry, work)
        try:
            self._runner.spawn(nursery, entry, rounds, task_ctx)
        except RuntimeError:
            # The app's nursery is closing: nothing may start in it any more.
            table.finish(entry, "failed", "the server is shutting down", error=_SHUTTING_DOWN)
            raise RequestError(
                INTERNAL_ERROR, "server busy: the server is shutting down"
            ) from None
        return protocol.create_task_result(self._snapshot(entry))

    async def get(
        self, task_id: str, *, principal: str | None = None, request_id: RequestId | None = None
    ) -> JSONObject:
        """Return the ``GetTaskResult``: the task and what its status carries."""
        await trio.lowlevel.checkpoint()
        replica = self._elsewhere(task_id, principal)
        if replica is not None:
            from ._replica import record_snapshot

            record = await self._remote(replica, task_id, principal, request_id)
            return protocol.get_task_result(record_snapshot(record))
        entry = self._lookup(task_id, principal, request_id)
        return protocol.get_task_result(self._snapshot(entry))

    async def update(
        self, update: Update, *, principal: str | None = None, request_id: RequestId | None = None
    ) -> JSONObject:
        """Hand answers to a parked task; answers nobody waits for are ignored."""
        await trio.lowlevel.checkpoint()
        replica = self._elsewhere(update.task_id, principal)
        if replica is not None:
            # Only the replica running it holds the question its answers go to.
            record = await self._remote(replica, update.task_id, principal, request_id)
            if record.status == "input_required":
                from ._store import TaskCommand

                command = TaskCommand("update", record.task_id, dict(update.responses))
                await replica.send(record, command)
            return protocol.acknowledgement()
        entry = self._lookup(update.task_id, principal, request_id)
        if self._input.accept(entry, update.responses):
            await self._announce(entry)
        return protocol.acknowledgement()

    async def cancel(
        self, task_id: str, *, principal: str | None = None, request_id: RequestId | None = None
    ) -> JSONObject:
        """Cancel the task's actor; a finished task stays as it is. The empty ack."""
        await trio.lowlevel.checkpoint()
        replica = self._elsewhere(task_id, principal)
        if replica is not None:
            record = await self._remote(replica, task_id, principal, request_id)
            if not record.terminal:
                stood = await replica.cancel(record)
                if stood.status == "cancelled":
                    from ._replica import record_snapshot

                    self._publish(record_snapshot(stood))
            return protocol.acknowledgement()
        entry = self._lookup(task_id, principal, request_id)
        if not entry.state.terminal:
            self._made().cancel(
                entry, "The task was cancelled by request.", "cancelled by tasks/cancel"
            )
            await self._announce(entry)
        return protocol.acknowledgement()

    def known(self, task_id: str, *, principal: str | None = None) -> bool:
        """Whether ``task_id`` names a task of ``principal``."""
        table = self._table
        entry = None if table is None else table.tasks.get(task_id)
        return entry is not None and entry.principal == principal

    async def known_tasks(
        self, task_ids: Collection[str], *, principal: str | None = None
    ) -> frozenset[str]:
        """Those of ``task_ids`` that name tasks of ``principal``, on any replica."""
        known = {task_id for task_id in task_ids if self.known(task_id, principal=principal)}
        if self._replica is not None:
            for task_id in task_ids:
                if task_id not in known:
                    try:
                        await self._remote(self._replica, task_id, principal, None)
                    except (ProtocolError, RequestError):
                        # Unknown, another's, or the store is out of reach: not honoured.
                        continue
                    known.add(task_id)
        await trio.lowlevel.checkpoint()
        return frozenset(known)


if TYPE_CHECKING:
    # What serve_stateless asks of the runtime for the tasks extension.
    _extension_host: TaskHost = TaskRegistry.__new__(TaskRegistry)
