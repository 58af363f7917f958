# Watching for a client that leaves, started only for requests that outlast a moment.
#
# A stateless POST is served in the HTTP handler's own task, and the client leaving
# must cancel it. Watching for that is a task reading the connection, and a task (with
# the nursery around it) cost more than the rest of a short call. So a request is
# served unwatched and only armed here: one timer task for every request of the app
# starts a watch for those still running ``delay`` seconds later. The watch runs in the
# app's nursery, reads the connection, and cancels the request's scope when the client
# has gone; it is cancelled the moment the request ends (``Armed.disarm``), so nothing
# it watched for outlives the request. A request that ends in time costs an entry in a
# deque.

from __future__ import annotations

from collections.abc import Awaitable, Callable

import trio

from ._later import Later

__all__ = ["Armed", "LateWatch"]


class Armed:
    """One request's place in a LateWatch: disarm it when the request ends."""

    __slots__ = ("done", "gone", "target", "watching")

    def __init__(self, gone: Callable[[], Awaitable[None]], target: trio.CancelScope) -> None:
        #: returns once the client has gone (None once disarmed)
        self.gone: Callable[[], Awaitable[None]] | None = gone
        #: what the client leaving cancels (None once disarmed)
        self.target: trio.CancelScope | None = target
        self.done = False
        #: the scope of the watch task, once it started
        self.watching: trio.CancelScope | None = None

    def disarm(self) -> None:
        """The request is over: stop (or never start) watching its client."""
        self.done = True
        # The entry waits in the timer's queue a while yet: it must not keep the
        # request's objects alive meanwhile (under load, hundreds of requests' worth,
        # which the cycle collector would walk again and again).
        self.gone = None
        self.target = None
        if self.watching is not None:
            self.watching.cancel()


class LateWatch:
    """Starts a watch for each armed request still running ``delay`` seconds later."""

    def __init__(self, delay: float) -> None:
        self.delay = delay
        # A watch that starts a fifth of the delay early is as good: under load the
        # timer then wakes a few dozen times a second, not a thousand.
        self._later: Later[Armed] = Later(delay, tick=delay / 5)
        self._nursery: trio.Nursery | None = None
        #: watches running now
        self.watching = 0

    def arm(self, gone: Callable[[], Awaitable[None]], target: trio.CancelScope) -> Armed:
        """Watch with ``gone`` and cancel ``target`` if the request outlasts ``delay``."""
        armed = Armed(gone, target)
        self._later.add(armed)
        return armed

    async def run(self) -> None:
        """Start the watches that fall due, for ever (in the app's nursery)."""
        async with trio.open_nursery() as nursery:
            self._nursery = nursery
            await self._later.run(self._start)

    def _start(self, armed: Armed) -> None:
        if not armed.done and armed.gone is not None:
            assert self._nursery is not None
            armed.watching = trio.CancelScope()
            self.watching += 1
            self._nursery.start_soon(self._watch, armed)

    async def _watch(self, armed: Armed) -> None:
        try:
            assert armed.watching is not None
            gone, target = armed.gone, armed.target
            if gone is None or target is None:
                # The request ended between the start of this watch and its first step.
                return
            with armed.watching:
                await gone()
                target.cancel("the client closed the response")
        finally:
            self.watching -= 1
