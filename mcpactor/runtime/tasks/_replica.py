# A table as one replica among others: its tasks written to a shared ``TaskStore``.
#
# Each state of a task is written to the store before anyone hears of it; each running
# actor holds a lease the replica renews and takes the commands other replicas send it
# (a cancel, an update's answers); a task the table does not run is answered from its
# record. Without a store nothing of this exists.

from __future__ import annotations

import contextlib
import functools
import logging
from collections.abc import Callable, Iterator, Mapping
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING

import trio

from ..._exceptions import INTERNAL_ERROR, RequestError
from ...protocol import JSONObject, Snapshot, describe, describe_error
from ...server import TaskState, isoformat
from ._table import TaskEntry, TaskTable, cancel_error

if TYPE_CHECKING:
    # A replica exists only with a store, whose owner imported these: read on use.
    from ._store import StoppedHook, TaskCommand, TaskRecord, TaskStore, TaskWatch

__all__ = [
    "TaskReplica",
    "record_cancel_error",
    "record_snapshot",
    "record_wire",
    "store_unavailable",
]

_log = logging.getLogger("mcpactor")

#: hands a parked task the answers another replica passed on
TakeAnswers = Callable[[TaskEntry, Mapping[str, JSONObject]], None]


def store_unavailable(exc: Exception) -> RequestError:
    """The error a request gets when the task store cannot be reached."""
    return RequestError(INTERNAL_ERROR, f"the task store is unavailable: {describe_error(exc)}")


def record_cancel_error(record: TaskRecord) -> JSONObject:
    """What ``tasks/result`` answers for a record of a cancelled task."""
    return cancel_error(record.task_id, record.status_message)


def record_wire(record: TaskRecord) -> JSONObject:
    """The 2025-11-25 ``Task`` of a record: the same fields a table's own task has."""
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


def record_snapshot(record: TaskRecord) -> Snapshot:
    """The extension's view of a record, as the registry makes of its own tasks."""
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


class TaskReplica:
    """A table's tasks in the store other replicas share: written, leased, commanded."""

    __slots__ = (
        "_leased",
        "_leases_idle",
        "_on_stopped",
        "_session",
        "_table",
        "_take_answers",
        "store",
    )

    def __init__(
        self,
        store: TaskStore,
        table: TaskTable,
        *,
        session: Callable[[], str | None],
        take_answers: TakeAnswers,
        on_stopped: StoppedHook,
    ) -> None:
        self.store = store
        self._table = table
        #: the session whose tasks these are (2025-11-25), read when a record is written
        self._session = session
        self._take_answers = take_answers
        self._on_stopped = on_stopped
        #: tasks whose actors run here and hold a lease in the store
        self._leased: set[str] = set()
        self._leases_idle: trio.Event | None = None

    def record(self, entry: TaskEntry) -> TaskRecord:
        """The task as the store keeps it."""
        from ._store import TaskRecord

        state = entry.state
        table = self._table
        return TaskRecord(
            task_id=state.task_id,
            number=entry.number,
            status=state.status,
            status_message=state.status_message,
            created_at=table.epoch(state.created_at),
            updated_at=table.epoch(state.updated_at),
            ttl_ms=state.ttl_ms,
            poll_interval_ms=state.poll_interval_ms,
            principal=entry.principal,
            session=self._session(),
            result=entry.result,
            error=entry.error,
            input_requests=dict(entry.outstanding) if entry.outstanding else None,
            replica=self.store.replica,
        )

    async def create(self, entry: TaskEntry) -> None:
        """Store a new task's first record: until it is stored the task does not exist."""
        try:
            stored = await self.store.create(self.record(entry))
        except Exception as exc:
            self._table.forget(entry)
            raise store_unavailable(exc) from None
        entry.number = stored.number

    async def save(self, entry: TaskEntry) -> bool:
        """Write the task's state before anyone hears of it.

        False when another state stands there, which whoever wrote it announced. A
        terminal state in the store wins over a later one: a task cancelled (or given
        up) elsewhere stops here too.
        """
        try:
            stood = await self.store.save(self.record(entry))
        except Exception as exc:
            _log.warning(
                "task %s: its state could not be stored: %s",
                describe(entry.state.task_id),
                describe_error(exc),
            )
            return True
        state = entry.state
        if not stood.terminal or stood.status == state.status:
            return True
        if not state.terminal:
            self._table.finish(entry, stood.status, stood.status_message, error=stood.error)
            entry.scope.cancel(f"the task is {stood.status} in the store")
        else:
            # Finished here after it was decided elsewhere: the store's outcome stands.
            state.status = stood.status
            state.status_message = stood.status_message
            entry.result = stood.result
            entry.error = (
                stood.error if stood.status != "cancelled" else record_cancel_error(stood)
            )
        return False

    # --- the actors running here ------------------------------------------------------

    def keep_leases(self, nursery: trio.Nursery) -> None:
        """Renew the leases of the actors running here, from now until none is left."""
        if self._leases_idle is not None:
            return
        idle = self._leases_idle = trio.Event()
        try:
            nursery.start_soon(self._renew_leases, idle)
        except RuntimeError:
            self._leases_idle = None
            raise

    @contextlib.contextmanager
    def leasing(self, entry: TaskEntry) -> Iterator[None]:
        """Hold the task's lease while its actor runs here."""
        task_id = entry.state.task_id
        self._leased.add(task_id)
        try:
            yield
        finally:
            self._leased.discard(task_id)
            if not self._leased and self._leases_idle is not None:
                self._leases_idle.set()
                self._leases_idle = None

    def serving(self, entry: TaskEntry) -> AbstractContextManager[None]:
        """Take the commands other replicas send for the task while the block runs."""
        return self.store.serve(entry.state.task_id, functools.partial(self._command, entry))

    def _command(self, entry: TaskEntry, command: TaskCommand) -> None:
        # Another replica's request for a task running here. A cancel's outcome is in the
        # store already (the replica that took tasks/cancel wrote and announced it).
        if entry.state.terminal:
            return
        if command.kind == "cancel":
            self._table.finish(entry, "cancelled", "The task was cancelled by request.")
            entry.scope.cancel("cancelled by tasks/cancel on another replica")
        elif command.responses is not None:
            self._take_answers(entry, command.responses)

    async def _renew_leases(self, idle: trio.Event) -> None:
        # Alive while some actor runs here with a lease: renewed at a third of its length,
        # so one missed renewal does not lose it.
        store = self.store
        while not idle.is_set():
            with trio.move_on_after(store.lease / 3):
                await idle.wait()
            if self._leased:
                try:
                    await store.renew(tuple(self._leased))
                except Exception as exc:
                    _log.warning("task leases could not be renewed: %s", describe_error(exc))

    # --- tasks running elsewhere --------------------------------------------------------

    async def load(self, task_id: str) -> TaskRecord | None:
        """A task this table does not run, from the store; None if unknown or expired."""
        try:
            return await self.store.load(task_id, on_stopped=self._on_stopped)
        except Exception as exc:
            raise store_unavailable(exc) from None

    async def cancel(self, record: TaskRecord) -> TaskRecord:
        """Fix the outcome in the store, then tell the replica whose actor runs it."""
        from ._store import TaskCommand

        store = self.store
        task_id = record.task_id
        try:
            stood = await store.cancel(
                task_id,
                "The task was cancelled by request.",
                self._table.epoch(trio.current_time()),
            )
            if stood is not None and stood.status == "cancelled":
                await store.send(stood, TaskCommand("cancel", task_id))
        except Exception as exc:
            raise store_unavailable(exc) from None
        return record if stood is None else stood

    async def send(self, record: TaskRecord, command: TaskCommand) -> None:
        """Hand ``command`` to the replica running ``record``'s task."""
        try:
            await self.store.send(record, command)
        except Exception as exc:
            raise store_unavailable(exc) from None

    async def page(self, session: str, after: int, size: int) -> tuple[list[TaskRecord], bool]:
        """The records of ``session``'s tasks numbered after ``after``, and if more."""
        try:
            return await self.store.page(session, after, size)
        except Exception as exc:
            raise store_unavailable(exc) from None

    def watch(self, task_id: str) -> AbstractContextManager[TaskWatch]:
        """Hear the changes of ``task_id`` while the block runs."""
        return self.store.watch(task_id)
