# The notifications a client received: a bounded log that tests and callers can await.
#
# Every notification is appended; a waiter registered by ``wait_for`` claims the first
# one that matches. A logged notification is returned at most once by ``wait_for``, so
# "it arrived before I started waiting" and "wait for the second one" both just work.
# The reader writes to the ``NotificationLog``; callers read ``ClientSession.notifications``,
# the ``NotificationInbox`` in front of it.

from __future__ import annotations

import collections
from collections.abc import Callable
from typing import final

import attrs
import trio

from ..protocol import Notification

__all__ = ["NotificationInbox", "NotificationLog", "NotificationPredicate"]

#: ``fn(notification) -> bool`` choosing which notification to wait for
NotificationPredicate = Callable[[Notification], bool]


@attrs.define
class _Logged:
    notification: Notification
    claimed: bool = False


@attrs.define(eq=False)
class _Waiter:
    method: str
    predicate: NotificationPredicate | None
    done: trio.Event = attrs.field(factory=trio.Event)
    found: Notification | None = None
    error: Exception | None = None


def _matches(
    notification: Notification, method: str, predicate: NotificationPredicate | None
) -> bool:
    return notification.method == method and (predicate is None or predicate(notification))


class NotificationLog:
    """The last ``maxlen`` notifications received, and the tasks waiting for one."""

    def __init__(self, maxlen: int) -> None:
        self._entries: collections.deque[_Logged] = collections.deque(maxlen=maxlen)
        self._waiters: list[_Waiter] = []

    def __len__(self) -> int:
        return len(self._entries)

    def notifications(self) -> list[Notification]:
        """Return the logged notifications, oldest first."""
        return [entry.notification for entry in self._entries]

    def clear(self) -> None:
        """Forget every logged notification."""
        self._entries.clear()

    def append(self, notification: Notification) -> None:
        """Log a notification and hand it to the first waiter it matches."""
        entry = _Logged(notification)
        self._entries.append(entry)
        for waiter in self._waiters:
            if _matches(notification, waiter.method, waiter.predicate):
                entry.claimed = True
                waiter.found = notification
                waiter.done.set()
                self._waiters.remove(waiter)
                return

    def fail_waiters(self, error: Callable[[], Exception]) -> None:
        """Wake every waiter with a fresh ``error()``: nothing more will arrive."""
        for waiter in self._waiters:
            waiter.error = error()
            waiter.done.set()
        self._waiters.clear()

    def claim(self, method: str, predicate: NotificationPredicate | None) -> Notification | None:
        """Return (and claim) the oldest unclaimed logged match, or None."""
        for entry in self._entries:
            if not entry.claimed and _matches(entry.notification, method, predicate):
                entry.claimed = True
                return entry.notification
        return None

    async def wait_for(self, method: str, predicate: NotificationPredicate | None) -> Notification:
        """Wait for the next matching notification to arrive."""
        waiter = _Waiter(method, predicate)
        self._waiters.append(waiter)
        try:
            await waiter.done.wait()
        finally:
            if waiter in self._waiters:
                self._waiters.remove(waiter)
        if waiter.error is not None:
            raise waiter.error
        assert waiter.found is not None
        return waiter.found


@final
class NotificationInbox:
    """The notifications a client received, and waiting for the next one."""

    __slots__ = ("_check_open", "_log")

    def __init__(self, log: NotificationLog, check_open: Callable[[], None]) -> None:
        self._log = log
        self._check_open = check_open

    def __repr__(self) -> str:
        return f"<NotificationInbox of {len(self._log)}>"

    @property
    def received(self) -> list[Notification]:
        """The notifications received, oldest first (at most ``max_notifications``)."""
        return self._log.notifications()

    async def wait_for(
        self, method: str, predicate: NotificationPredicate | None = None
    ) -> Notification:
        """Wait for a notification of ``method`` (matching ``predicate``, if given).

        Returns the oldest received match that no earlier call returned, so a
        notification that arrived before the call is not missed and none is returned
        twice.

        Raises:
            TransportError: the connection closed first.
        """
        found = self._log.claim(method, predicate)
        if found is not None:
            return found
        self._check_open()
        return await self._log.wait_for(method, predicate)

    def clear(self) -> None:
        """Forget every notification received so far."""
        self._log.clear()
