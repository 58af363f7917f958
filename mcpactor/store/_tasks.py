# Task records in Redis: the TaskStore (runtime/tasks/_store.py) of several replicas.
#
# Keys, under a prefix (``mcpactor`` by default):
#
# - ``{p}:task:{id}``: a hash per task: ``status``, ``number`` and ``record`` (the
#   record's JSON). It expires with the task's TTL, so Redis forgets a task when the
#   replicas would have.
# - ``{p}:task-lease:{id}``: the owner's lease, the owner replica's name with a TTL of
#   one lease; the owner renews it (PEXPIRE) while the Task actor runs. A task that is not
#   terminal and has no lease belongs to a replica that stopped.
# - ``{p}:task-number``: the counter that numbers tasks (``tasks/list`` cursors).
# - ``{p}:tasks-of:{session}``: a sorted set of a session's task ids by number, for
#   ``tasks/list`` of the session era; it lives as long as its longest-lived task.
#
# Channels: ``{p}:task-changed`` carries the id of each task whose record changed (every
# replica hears it and wakes its ``tasks/result`` waiters); ``{p}:task-commands:{replica}``
# carries the cancels and answers other replicas send the tasks that replica runs.
#
# Every write that decides a task's outcome is one Lua script, so two replicas never
# both win: a terminal status is final (``save`` hands back what stands), and marking a
# task failed for a lapsed lease checks, in the same script, that the lease is still
# gone. The scripts hold no JSON: the record is built in Python and stored as text.
#
# The subscription comes back by itself after Redis restarts or goes away a while
# (_subscription.py). What was published meanwhile is lost, and caught up with once
# subscribed again: every waiter here reads its task's record again, and each task this
# replica runs whose record says cancelled (a cancel sent meanwhile) is cancelled. Until
# then a waiter still reads the record at least once per lease, and an owner that missed
# a cancel finds it in the store at its task's next change.

from __future__ import annotations

import contextlib
import logging
import time
from collections.abc import AsyncIterator, Collection, Iterator, Mapping
from typing import Any, Final

import attrs
import coredis
import orjson
import trio
from coredis.tokens import PureToken

from ..protocol import MAX_TASK_ID_LENGTH, describe, describe_error
from ..runtime import (
    CommandHandler,
    StoppedHook,
    TaskCommand,
    TaskRecord,
    TaskWatch,
    TaskWatchers,
    stopped,
)
from ._client import store_location
from ._subscription import RedisSubscription

__all__ = ["RedisTaskStore", "open_redis_task_store"]

_log = logging.getLogger("mcpactor.store")

#: the largest command read from the commands channel (an update's answers)
MAX_COMMAND_BYTES: Final = 1 << 20

_TERMINAL_LUA: Final = "local terminal = {completed=true, failed=true, cancelled=true}\n"

# KEYS: task, lease, counter, session set. ARGV: status, record, ttl ms ('' for none),
# replica, lease ms, '1' if the task has a session, task id, changed channel.
_CREATE: Final = """
local number = redis.call('INCR', KEYS[3])
redis.call('DEL', KEYS[1])
redis.call('HSET', KEYS[1], 'status', ARGV[1], 'record', ARGV[2], 'number', number)
if ARGV[3] ~= '' then redis.call('PEXPIRE', KEYS[1], ARGV[3]) end
redis.call('SET', KEYS[2], ARGV[4], 'PX', ARGV[5])
if ARGV[6] == '1' then
  local fresh = redis.call('EXISTS', KEYS[4]) == 0
  redis.call('ZADD', KEYS[4], number, ARGV[7])
  if ARGV[3] == '' then
    redis.call('PERSIST', KEYS[4])
  else
    local left = redis.call('PTTL', KEYS[4])
    if fresh or (left >= 0 and left < tonumber(ARGV[3])) then
      redis.call('PEXPIRE', KEYS[4], ARGV[3])
    end
  end
end
redis.call('PUBLISH', ARGV[8], ARGV[7])
return number
"""

# KEYS: task, lease. -> {status, record, number, lease exists} or nil.
_LOAD: Final = """
local found = redis.call('HMGET', KEYS[1], 'status', 'record', 'number')
if not found[1] then return false end
return {found[1], found[2], found[3], redis.call('EXISTS', KEYS[2])}
"""

# KEYS: task, lease. ARGV: status, record, changed channel, task id, '1' to write only
# while the lease is gone. -> {1 if written, record, number} or nil if the task is gone.
_SAVE: Final = (
    _TERMINAL_LUA
    + """
local found = redis.call('HMGET', KEYS[1], 'status', 'record', 'number')
if not found[1] then return false end
if terminal[found[1]] then return {0, found[2], found[3]} end
if ARGV[5] == '1' and redis.call('EXISTS', KEYS[2]) == 1 then
  return {0, found[2], found[3]}
end
redis.call('HSET', KEYS[1], 'status', ARGV[1], 'record', ARGV[2])
redis.call('PUBLISH', ARGV[3], ARGV[4])
return {1, ARGV[2], found[3]}
"""
)


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


class RedisTaskStore:
    """Task records in Redis, shared by every replica that names the same prefix.

    ``listen`` must run (``open_redis_task_store`` runs it) for commands to reach this
    replica's tasks and for waiters to wake on changes.
    """

    def __init__(
        self,
        client: coredis.Redis[Any],
        *,
        replica: str,
        prefix: str = "mcpactor",
        lease: float = 15.0,
    ) -> None:
        if not lease > 0:
            raise ValueError(f"a lease lasts a positive number of seconds, got {lease!r}")
        if not replica:
            raise ValueError("a replica needs a name")
        self.replica = replica
        self.lease = lease
        self._client = client
        self._prefix = prefix
        self._changed = f"{prefix}:task-changed"
        self._commands = f"{prefix}:task-commands:{replica}"
        self._create = client.register_script(_CREATE)
        self._load = client.register_script(_LOAD)
        self._save = client.register_script(_SAVE)
        self._handlers: dict[str, CommandHandler] = {}
        self._watchers = TaskWatchers()
        #: the subscription to changes and this replica's commands (``listen`` runs it)
        self.subscription = RedisSubscription(
            client,
            [self._changed, self._commands],
            self._dispatch,
            name="task store",
            location=store_location(client),
            on_resubscribed=self._catch_up,
        )

    # --- keys ---------------------------------------------------------------------

    def _task_key(self, task_id: str) -> str:
        return f"{self._prefix}:task:{task_id}"

    def _lease_key(self, task_id: str) -> str:
        return f"{self._prefix}:task-lease:{task_id}"

    def _session_key(self, session: str) -> str:
        return f"{self._prefix}:tasks-of:{session}"

    def _lease_ms(self) -> int:
        return max(1, round(self.lease * 1000))

    # --- records ------------------------------------------------------------------

    def _read(self, task_id: str, text: Any, number: Any) -> TaskRecord | None:
        try:
            record = TaskRecord.from_json(orjson.loads(text))
            return attrs.evolve(record, number=int(number))
        except (ValueError, TypeError) as exc:
            # Not a record this code wrote: treat the task as unknown, say so once here.
            _log.warning("task %s: unreadable record in Redis: %s", describe(task_id), exc)
            return None

    async def create(self, record: TaskRecord) -> TaskRecord:
        """Store a new task with its lease; return it numbered."""
        task_id = record.task_id
        session = record.session
        number: Any = await self._create(
            keys=[
                self._task_key(task_id),
                self._lease_key(task_id),
                f"{self._prefix}:task-number",
                self._session_key(session if session is not None else ""),
            ],
            args=[
                record.status,
                orjson.dumps(record.to_json()),
                "" if record.ttl_ms is None else str(max(1, record.ttl_ms)),
                self.replica,
                str(self._lease_ms()),
                "1" if session is not None else "0",
                task_id,
                self._changed,
            ],
        )
        return attrs.evolve(record, number=int(number))

    async def load(
        self, task_id: str, *, on_stopped: StoppedHook | None = None
    ) -> TaskRecord | None:
        """Return the task, failed if its owner's lease lapsed; None if unknown or expired."""
        found: Any = await self._load(keys=[self._task_key(task_id), self._lease_key(task_id)])
        if found is None:
            return None
        _, text, number, leased = found
        record = self._read(task_id, text, number)
        if record is None or record.terminal or leased:
            return record
        record, written = await self._write(stopped(record, time.time()), only_unleased=True)
        if written and on_stopped is not None:
            on_stopped(record)
        return record

    async def _write(
        self, record: TaskRecord, *, only_unleased: bool = False
    ) -> tuple[TaskRecord, bool]:
        # What stands after the write, and whether it was this write.
        task_id = record.task_id
        stood: Any = await self._save(
            keys=[self._task_key(task_id), self._lease_key(task_id)],
            args=[
                record.status,
                orjson.dumps(record.to_json()),
                self._changed,
                task_id,
                "1" if only_unleased else "0",
            ],
        )
        if stood is None:
            return record, False
        written, text, number = stood
        return self._read(task_id, text, number) or record, bool(written)

    async def save(self, record: TaskRecord) -> TaskRecord:
        """Write a later state of a task; return what stands (a terminal state stays)."""
        return (await self._write(record))[0]

    async def cancel(self, task_id: str, message: str, now: float) -> TaskRecord | None:
        """Make the task cancelled unless terminal; return what stands, None if unknown."""
        record = await self.load(task_id)
        if record is None or record.terminal:
            return record
        cancelled = attrs.evolve(
            record,
            status="cancelled",
            status_message=message,
            updated_at=now,
            result=None,
            input_requests=None,
        )
        return (await self._write(cancelled))[0]

    async def renew(self, task_ids: Collection[str]) -> None:
        """Extend this replica's lease on each of ``task_ids`` (one round trip)."""
        if not task_ids:
            return
        lease_ms = self._lease_ms()
        async with self._client.pipeline(transaction=False) as pipeline:
            for task_id in task_ids:
                pipeline.pexpire(self._lease_key(task_id), lease_ms)

    async def page(self, session: str, after: int, size: int) -> tuple[list[TaskRecord], bool]:
        """The tasks of ``session`` numbered after ``after``, at most ``size``; and if more."""
        key = self._session_key(session)
        ids = await self._client.zrange(
            key, f"({after}", "+inf", sortby=PureToken.BYSCORE, offset=0, count=size + 1
        )
        records: list[TaskRecord] = []
        gone: list[str] = []
        for raw in ids[:size]:
            task_id = _text(raw)
            record = await self.load(task_id)
            if record is None:
                gone.append(task_id)
            else:
                records.append(record)
        if gone:
            # Expired with their TTL: the set forgets them too.
            await self._client.zrem(key, gone)
        return records, len(ids) > size

    async def send(self, record: TaskRecord, command: TaskCommand) -> None:
        """Publish ``command`` on the commands channel of the replica running the task."""
        channel = f"{self._prefix}:task-commands:{record.replica}"
        await self._client.publish(channel, orjson.dumps(command.to_json()))

    @contextlib.contextmanager
    def serve(self, task_id: str, handler: CommandHandler) -> Iterator[None]:
        """Take the commands for ``task_id`` sent to this replica while the block runs."""
        self._handlers[task_id] = handler
        try:
            yield
        finally:
            if self._handlers.get(task_id) is handler:
                del self._handlers[task_id]

    def watch(self, task_id: str) -> contextlib.AbstractContextManager[TaskWatch]:
        """Hear the changes of ``task_id`` while the block runs."""
        return self._watchers.watch(task_id)

    # --- the subscription -----------------------------------------------------------

    async def listen(
        self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED
    ) -> None:
        """Hear changes and this replica's commands until cancelled (ready once subscribed).

        Subscribes again, with backoff, whenever the subscription breaks.
        """
        await self.subscription.run(task_status=task_status)

    async def _catch_up(self) -> None:
        # Subscribed again after a break: what was published meanwhile is lost.
        self._watchers.touch_all()
        served = list(self._handlers)
        if not served:
            return
        async with self._client.pipeline(transaction=False) as pipeline:
            statuses = [pipeline.hget(self._task_key(task_id), "status") for task_id in served]
        for task_id, status in zip(served, statuses, strict=True):
            if _text(await status) == "cancelled":
                self._command(TaskCommand("cancel", task_id))

    def _dispatch(self, message: Mapping[str, Any]) -> None:
        if message.get("type") != "message":
            return
        channel = _text(message.get("channel"))
        data = message.get("data")
        if not isinstance(data, (bytes, str)):
            return
        if channel == self._changed:
            if len(data) <= MAX_TASK_ID_LENGTH:
                self._watchers.touch(_text(data))
            return
        if channel != self._commands:
            return
        if len(data) > MAX_COMMAND_BYTES:
            _log.warning("a task command of %d bytes was dropped", len(data))
            return
        try:
            command = TaskCommand.from_json(orjson.loads(data))
        except (ValueError, orjson.JSONDecodeError) as exc:
            _log.warning("an unreadable task command was dropped: %s", describe_error(exc))
            return
        self._command(command)

    def _command(self, command: TaskCommand) -> None:
        handler = self._handlers.get(command.task_id)
        if handler is None:
            return
        try:
            handler(command)
        except Exception:
            # One task's trouble must not end the subscription every task relies on.
            _log.exception("task %s: a command failed", describe(command.task_id))


@contextlib.asynccontextmanager
async def open_redis_task_store(
    client: coredis.Redis[Any],
    *,
    replica: str,
    prefix: str = "mcpactor",
    lease: float = 15.0,
) -> AsyncIterator[RedisTaskStore]:
    """A ``RedisTaskStore`` with its subscription running until the block ends."""
    store = RedisTaskStore(client, replica=replica, prefix=prefix, lease=lease)
    async with trio.open_nursery() as nursery:
        await nursery.start(store.listen)
        try:
            yield store
        finally:
            nursery.cancel_scope.cancel("the task store is closing")
