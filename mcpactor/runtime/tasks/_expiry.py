# Expiry: each task is deleted once its TTL has passed, cancelled first if it still runs.
#
# One reaper task, alive only while some task of the table can expire, sleeps until the
# earliest deadline. A session that rests between periods (HTTP) runs no task actor in
# between; the table stays, and what expired meanwhile is dropped when the next period
# begins (``resume``), before any request can ask for it.

from __future__ import annotations

import heapq

import trio

from ._table import Announce, TaskEntry, TaskTable

__all__ = ["TaskExpiry"]


class TaskExpiry:
    """The deadlines of a table's tasks and the reaper that keeps them."""

    __slots__ = ("_announce", "_deadlines", "_reaping", "_scope", "_table", "_wake")

    def __init__(self, table: TaskTable, announce: Announce) -> None:
        self._table = table
        self._announce = announce
        self._deadlines: list[tuple[float, str]] = []
        self._reaping = False
        self._wake: trio.Event | None = None
        # The running reaper's scope: ``pause`` ends it when the session stops running.
        self._scope: trio.CancelScope | None = None

    def __len__(self) -> int:
        return len(self._deadlines)

    def schedule(self, nursery: trio.Nursery, entry: TaskEntry) -> None:
        """Delete ``entry`` when its TTL passes (never, without one)."""
        expires_at = entry.state.expires_at
        if expires_at is None:
            return
        heapq.heappush(self._deadlines, (expires_at, entry.state.task_id))
        if self._wake is not None:
            self._wake.set()
        self._start(nursery)

    def resume(self, nursery: trio.Nursery) -> None:
        """Begin a period: drop what expired while nothing ran, reap the rest in ``nursery``."""
        self._drop_expired()
        if self._deadlines:
            self._start(nursery)

    def pause(self) -> None:
        """End the reaper: the session stops running (``resume`` starts it again)."""
        if self._scope is not None:
            self._scope.cancel("the session stopped running")

    def _start(self, nursery: trio.Nursery) -> None:
        if not self._reaping:
            self._reaping = True
            nursery.start_soon(self._reap)

    def _drop_expired(self) -> None:
        # Between periods nothing runs, so every task due is finished: forget it now.
        now = trio.current_time()
        deadlines = self._deadlines
        tasks = self._table.tasks
        while deadlines and deadlines[0][0] <= now:
            entry = tasks.get(deadlines[0][1])
            if entry is not None and not entry.state.terminal:
                break  # still running: the reaper cancels it and says so
            heapq.heappop(deadlines)
            if entry is not None:
                del tasks[entry.state.task_id]
                entry.expired = True
                entry.done.set()

    async def _reap(self) -> None:
        # Alive only while some task can expire, so an idle table has no extra task.
        try:
            with trio.CancelScope() as self._scope:
                await self._reap_due()
        finally:
            self._reaping = False
            self._wake = None
            self._scope = None

    async def _reap_due(self) -> None:
        while self._deadlines:
            when, task_id = self._deadlines[0]
            if when > trio.current_time():
                wake = self._wake = trio.Event()
                with trio.move_on_at(when):
                    await wake.wait()
                continue
            heapq.heappop(self._deadlines)
            entry = self._table.tasks.pop(task_id, None)
            if entry is None:
                continue
            entry.expired = True
            if not entry.state.terminal:
                self._table.cancel(entry, "the task's ttl passed", "the task's ttl passed")
                await self._announce(entry)
            entry.done.set()
