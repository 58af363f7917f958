# Task records in a store that several replicas share.
#
# A Task actor runs on one replica, the task's *owner*; every replica may be asked about
# it. Without a store (the default) the owner's own table (``TaskTable``) is the whole
# truth, as it has always been. With one, the owner also writes each of the task's
# states to the store as a ``TaskRecord``, and a replica that does not run the task
# answers from the record:
#
# - ``create`` stores a new record (the store numbers it, for ``tasks/list`` cursors)
#   and ``save`` writes each later state. Terminal states are final in the store too: a
#   ``save`` of a task that is already terminal there changes nothing and hands back
#   what stands, which is how the owner learns it was cancelled elsewhere.
# - The owner holds a *lease* on each task its actors run and ``renew``s it while they
#   do. A record that is not terminal and whose lease lapsed belongs to a replica that
#   stopped: ``load`` marks it ``failed`` ("the replica running it stopped") before
#   handing it out, so it never stays ``working`` forever.
# - ``cancel`` fixes a task's outcome as ``cancelled`` wherever it is asked, and the
#   owner's actor hears of it through ``send``: a ``TaskCommand`` goes to the replica in
#   the record, where the handler the owner attached with ``serve`` takes it (a cancel
#   ends the actor's scope, an update hands its answers in).
# - Every change of a record is announced: ``watch`` wakes whoever waits on a task
#   (``tasks/result`` on another replica). Listen streams hear tasks through the change
#   bus as before, which replicas share the same way.
#
# Times in records are wall-clock seconds since the epoch, so every replica reads the
# same instants. Leases and expiry are each store's business: ``InMemoryTaskStore`` uses
# the event loop's clock (virtual in tests), a Redis store uses key expiry.
#
# ``InMemoryTaskStore`` is one process's store, shared by the task tables of that
# process as if each were a replica of its own: what the tests of several replicas use.

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Collection, Iterator, Mapping
from contextlib import AbstractContextManager
from typing import Any, Final, Literal, Protocol

import attrs
import trio

from ..._exceptions import INTERNAL_ERROR
from ...protocol import TERMINAL, JSONObject, TaskStatus

__all__ = [
    "REPLICA_STOPPED",
    "CommandHandler",
    "InMemoryTaskStore",
    "StoppedHook",
    "TaskCommand",
    "TaskRecord",
    "TaskStore",
    "TaskWatch",
    "TaskWatchers",
    "stopped",
]

#: the status message of a task whose owner's lease lapsed
REPLICA_STOPPED: Final = "the replica running it stopped"

_STATUSES: Final = frozenset({"working", "input_required", "completed", "failed", "cancelled"})


@attrs.frozen(kw_only=True)
class TaskRecord:
    """One task as a shared store holds it: what any replica needs to answer for it."""

    task_id: str
    #: creation order among the store's tasks (``tasks/list`` cursors); 0 until stored
    number: int = 0
    status: TaskStatus = "working"
    status_message: str | None = None
    #: wall-clock seconds since the epoch
    created_at: float
    updated_at: float
    #: the ttl in milliseconds, None for unlimited
    ttl_ms: int | None = None
    poll_interval_ms: int | None = None
    #: who created it (tasks extension); another principal does not find it
    principal: str | None = None
    #: the session whose task it is (2025-11-25); None for the tasks extension
    session: str | None = None
    #: the final result (completed, or failed by a tool's error)
    result: JSONObject | None = None
    #: the JSON-RPC error object the task ended with (failed, cancelled)
    error: JSONObject | None = None
    #: the input requests the task is parked on, by key (tasks extension)
    input_requests: Mapping[str, JSONObject] | None = None
    #: the replica whose Task actor runs it
    replica: str = ""

    @property
    def terminal(self) -> bool:
        """Whether the task reached a final status."""
        return self.status in TERMINAL

    def to_json(self) -> JSONObject:
        """The record as a JSON object, for stores that keep text."""
        value: JSONObject = {
            "taskId": self.task_id,
            "number": self.number,
            "status": self.status,
            "createdAt": self.created_at,
            "updatedAt": self.updated_at,
            "replica": self.replica,
        }
        optional = {
            "statusMessage": self.status_message,
            "ttlMs": self.ttl_ms,
            "pollIntervalMs": self.poll_interval_ms,
            "principal": self.principal,
            "session": self.session,
            "result": self.result,
            "error": self.error,
            "inputRequests": dict(self.input_requests) if self.input_requests else None,
        }
        value.update((key, field) for key, field in optional.items() if field is not None)
        return value

    @classmethod
    def from_json(cls, value: object) -> TaskRecord:
        """Read a record written by ``to_json``; ValueError for anything else."""
        if type(value) is not dict:
            raise ValueError(f"a task record is an object, got {type(value).__name__}")
        try:
            return cls(
                task_id=_typed(value, "taskId", str),
                number=_typed(value, "number", int),
                status=_status(value.get("status")),
                status_message=_typed(value, "statusMessage", str, None),
                created_at=float(_typed(value, "createdAt", (int, float))),
                updated_at=float(_typed(value, "updatedAt", (int, float))),
                ttl_ms=_typed(value, "ttlMs", int, None),
                poll_interval_ms=_typed(value, "pollIntervalMs", int, None),
                principal=_typed(value, "principal", str, None),
                session=_typed(value, "session", str, None),
                result=_typed(value, "result", dict, None),
                error=_typed(value, "error", dict, None),
                input_requests=_typed(value, "inputRequests", dict, None),
                replica=_typed(value, "replica", str),
            )
        except (TypeError, KeyError) as exc:
            raise ValueError(f"malformed task record: {exc}") from None


_ABSENT: Final = object()


def _typed(value: dict[str, Any], key: str, kind: Any, default: Any = _ABSENT) -> Any:
    field = value.get(key, _ABSENT)
    if field is _ABSENT or field is None:
        if default is _ABSENT:
            raise KeyError(f"{key!r} is missing")
        return default
    if not isinstance(field, kind) or type(field) is bool:
        raise TypeError(f"{key!r} has the wrong type: {type(field).__name__}")
    return field


def _status(value: object) -> TaskStatus:
    if value not in _STATUSES:
        raise TypeError(f"'status' is not a task status: {value!r}")
    return value  # type: ignore[return-value]


def stopped(record: TaskRecord, now: float) -> TaskRecord:
    """``record`` marked failed because the replica running it stopped (at ``now``)."""
    return attrs.evolve(
        record,
        status="failed",
        status_message=REPLICA_STOPPED,
        updated_at=now,
        result=None,
        input_requests=None,
        error={"code": INTERNAL_ERROR, "message": f"task failed: {REPLICA_STOPPED}"},
    )


@attrs.frozen
class TaskCommand:
    """What a replica asks of the replica running a task: cancel it or hand it answers."""

    kind: Literal["cancel", "update"]
    task_id: str
    #: the client's answers, by the keys of the input requests they answer (update)
    responses: Mapping[str, JSONObject] | None = None

    def to_json(self) -> JSONObject:
        """The command as a JSON object, for stores that send text."""
        value: JSONObject = {"kind": self.kind, "taskId": self.task_id}
        if self.responses is not None:
            value["responses"] = dict(self.responses)
        return value

    @classmethod
    def from_json(cls, value: object) -> TaskCommand:
        """Read a command written by ``to_json``; ValueError for anything else."""
        if type(value) is not dict:
            raise ValueError("a task command is an object")
        kind, task_id, responses = value.get("kind"), value.get("taskId"), value.get("responses")
        if kind not in ("cancel", "update") or type(task_id) is not str:
            raise ValueError("a task command needs a kind and a taskId")
        if responses is not None and (
            type(responses) is not dict or not all(type(v) is dict for v in responses.values())
        ):
            raise ValueError("a task command's responses are objects by key")
        return cls(kind, task_id, responses)


#: what the owner of a task does with a command for it; called in the event loop
CommandHandler = Callable[[TaskCommand], None]
#: told of a task a load just found given up by its replica (to announce it)
StoppedHook = Callable[[TaskRecord], None]


class TaskWatch(Protocol):
    """Changes of one task: ``wait`` returns once it changed since the last ``wait``."""

    async def wait(self) -> None:
        """Wait for the next change of the task (one already seen returns at once)."""


class TaskStore(Protocol):
    """Task records shared by the replicas of one deployment."""

    #: the replica this process is, named in the records of the tasks it runs
    replica: str
    #: seconds a lease lasts; the owner renews it well within that
    lease: float

    async def create(self, record: TaskRecord) -> TaskRecord:
        """Store a new task; return it numbered, as stored."""

    async def load(
        self, task_id: str, *, on_stopped: StoppedHook | None = None
    ) -> TaskRecord | None:
        """Return the task, failed if its owner's lease lapsed; None if unknown or expired.

        ``on_stopped`` is called with the record when this load is what failed it.
        """

    async def save(self, record: TaskRecord) -> TaskRecord:
        """Write a later state of a task; return what stands (a terminal state stays)."""

    async def cancel(self, task_id: str, message: str, now: float) -> TaskRecord | None:
        """Make the task cancelled unless terminal; return what stands, None if unknown."""

    async def renew(self, task_ids: Collection[str]) -> None:
        """Extend this replica's lease on each of ``task_ids``."""

    async def release(self, task_id: str) -> None:
        """Give up the lease on a task whose actor ended."""

    async def page(self, session: str, after: int, size: int) -> tuple[list[TaskRecord], bool]:
        """The tasks of ``session`` numbered after ``after``, at most ``size``; and if more."""

    async def send(self, record: TaskRecord, command: TaskCommand) -> None:
        """Hand ``command`` to the replica running ``record``'s task (lost if it stopped)."""

    def serve(self, task_id: str, handler: CommandHandler) -> AbstractContextManager[None]:
        """Take the commands for ``task_id`` sent to this replica while the block runs."""

    def watch(self, task_id: str) -> AbstractContextManager[TaskWatch]:
        """Hear the changes of ``task_id`` while the block runs."""


@attrs.define(eq=False)
class _Watch:
    _changed: trio.Event = attrs.field(factory=trio.Event)

    def touch(self) -> None:
        self._changed.set()

    async def wait(self) -> None:
        await self._changed.wait()
        self._changed = trio.Event()


class TaskWatchers:
    """Watches by task id, each woken on a change: what stores hand out as ``watch``."""

    def __init__(self) -> None:
        self._by_task: dict[str, set[_Watch]] = {}

    def touch(self, task_id: str) -> None:
        """Wake every watch of ``task_id``."""
        for watch in self._by_task.get(task_id, ()):
            watch.touch()

    def touch_all(self) -> None:
        """Wake every watch (changes may have been missed: each looks again)."""
        for watches in self._by_task.values():
            for watch in watches:
                watch.touch()

    @contextlib.contextmanager
    def watch(self, task_id: str) -> Iterator[TaskWatch]:
        """Watch ``task_id`` until the block ends."""
        watch = _Watch()
        watches = self._by_task.setdefault(task_id, set())
        watches.add(watch)
        try:
            yield watch
        finally:
            watches.discard(watch)
            if not watches:
                del self._by_task[task_id]


class InMemoryTaskStore:
    """The task store of one process: its tables share it as replicas would share Redis.

    Leases and TTLs follow the event loop's clock; a record whose TTL passed is gone.
    Not thread-safe: use it from the event loop's thread.
    """

    def __init__(self, *, replica: str = "memory", lease: float = 15.0) -> None:
        if not lease > 0:
            raise ValueError(f"a lease lasts a positive number of seconds, got {lease!r}")
        self.replica = replica
        self.lease = lease
        self._records: dict[str, TaskRecord] = {}
        #: task id -> (deadline of its TTL or None, deadline of its lease or None)
        self._deadlines: dict[str, tuple[float | None, float | None]] = {}
        self._number = 0
        self._handlers: dict[str, CommandHandler] = {}
        self._watchers = TaskWatchers()
        self._anchor: tuple[float, float] | None = None

    def now(self) -> float:
        """Wall-clock seconds, advancing with the event loop's clock (virtual in tests)."""
        if self._anchor is None:
            self._anchor = (time.time(), trio.current_time())
        wall, clock = self._anchor
        return wall + (trio.current_time() - clock)

    def __len__(self) -> int:
        return len(self._records)

    def _live(self, task_id: str) -> TaskRecord | None:
        record = self._records.get(task_id)
        if record is None:
            return None
        expires, _ = self._deadlines[task_id]
        if expires is not None and expires <= trio.current_time():
            del self._records[task_id], self._deadlines[task_id]
            return None
        return record

    def _put(self, record: TaskRecord) -> None:
        self._records[record.task_id] = record
        self._watchers.touch(record.task_id)

    async def create(self, record: TaskRecord) -> TaskRecord:
        """Store a new task; return it numbered, as stored."""
        await trio.lowlevel.checkpoint()
        self._number += 1
        record = attrs.evolve(record, number=self._number)
        now = trio.current_time()
        expires = None if record.ttl_ms is None else now + record.ttl_ms / 1000
        self._deadlines[record.task_id] = (expires, now + self.lease)
        self._put(record)
        return record

    async def load(
        self, task_id: str, *, on_stopped: StoppedHook | None = None
    ) -> TaskRecord | None:
        """Return the task, failed if its owner's lease lapsed; None if unknown or expired."""
        await trio.lowlevel.checkpoint()
        record = self._live(task_id)
        if record is None or record.terminal:
            return record
        expires, lease = self._deadlines[task_id]
        if lease is None or lease <= trio.current_time():
            record = stopped(record, self.now())
            self._deadlines[task_id] = (expires, None)
            self._put(record)
            if on_stopped is not None:
                on_stopped(record)
        return record

    async def save(self, record: TaskRecord) -> TaskRecord:
        """Write a later state of a task; return what stands (a terminal state stays)."""
        await trio.lowlevel.checkpoint()
        stored = self._live(record.task_id)
        if stored is None:
            return record
        if stored.terminal:
            return stored
        self._put(attrs.evolve(record, number=stored.number))
        return self._records[record.task_id]

    async def cancel(self, task_id: str, message: str, now: float) -> TaskRecord | None:
        """Make the task cancelled unless terminal; return what stands, None if unknown."""
        record = await self.load(task_id)
        if record is None or record.terminal:
            return record
        record = attrs.evolve(
            record,
            status="cancelled",
            status_message=message,
            updated_at=now,
            result=None,
            input_requests=None,
        )
        self._put(record)
        return record

    async def renew(self, task_ids: Collection[str]) -> None:
        """Extend this replica's lease on each of ``task_ids``."""
        await trio.lowlevel.checkpoint()
        until = trio.current_time() + self.lease
        for task_id in task_ids:
            deadlines = self._deadlines.get(task_id)
            if deadlines is not None and deadlines[1] is not None:
                self._deadlines[task_id] = (deadlines[0], until)

    async def release(self, task_id: str) -> None:
        """Give up the lease on a task whose actor ended."""
        await trio.lowlevel.checkpoint()
        deadlines = self._deadlines.get(task_id)
        if deadlines is not None:
            self._deadlines[task_id] = (deadlines[0], None)

    async def page(self, session: str, after: int, size: int) -> tuple[list[TaskRecord], bool]:
        """The tasks of ``session`` numbered after ``after``, at most ``size``; and if more."""
        await trio.lowlevel.checkpoint()
        chosen: list[TaskRecord] = []
        for task_id in list(self._records):
            record = self._live(task_id)
            if record is not None and record.session == session and record.number > after:
                chosen.append(record)
        chosen.sort(key=lambda record: record.number)
        page = [await self.load(record.task_id) or record for record in chosen[:size]]
        return page, len(chosen) > size

    async def send(self, record: TaskRecord, command: TaskCommand) -> None:
        """Hand ``command`` to the table running the task, if it still does."""
        await trio.lowlevel.checkpoint()
        handler = self._handlers.get(command.task_id)
        if handler is not None:
            handler(command)

    @contextlib.contextmanager
    def serve(self, task_id: str, handler: CommandHandler) -> Iterator[None]:
        """Take the commands for ``task_id`` while the block runs."""
        self._handlers[task_id] = handler
        try:
            yield
        finally:
            if self._handlers.get(task_id) is handler:
                del self._handlers[task_id]

    def watch(self, task_id: str) -> AbstractContextManager[TaskWatch]:
        """Hear the changes of ``task_id`` while the block runs."""
        return self._watchers.watch(task_id)
