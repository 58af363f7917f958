# One timer task for many entries that each fall due a fixed delay after they are added.
#
# Since the delay is the same for all, entries fall due in the order they came: a deque
# is the queue, and the timer sleeps until its head. Entries due within ``tick`` of
# each other are handed over in one wake: under load one falls due every few
# microseconds, and a wake-up each would cost what the timer saves. An entry may thus
# be handed over up to ``tick`` early; a timer whose exact moment matters little (the
# late watch of stateless requests) takes a coarse tick and wakes rarely.

from __future__ import annotations

import collections
from collections.abc import Callable
from typing import Final, Generic, NoReturn, TypeVar

import trio

__all__ = ["TICK", "Later"]

T = TypeVar("T")

#: the default tick: entries due within a millisecond go together
TICK: Final = 0.001


class Later(Generic[T]):
    """Entries handed to ``run``'s callback ``delay`` seconds after ``add``, in order."""

    __slots__ = ("_clock", "_waits", "_watched", "delay", "tick")

    def __init__(self, delay: float, *, tick: float = TICK) -> None:
        self.delay = delay
        self.tick = tick
        self._waits: collections.deque[tuple[float, T]] = collections.deque()
        self._watched = trio.Event()
        # The run's clock, once known (trio.current_time is three calls down to it):
        # entries may be added for every request.
        self._clock: trio.abc.Clock | None = None

    def add(self, entry: T) -> None:
        """Hand ``entry`` over once ``delay`` seconds have passed."""
        clock = self._clock
        if clock is None:
            clock = self._clock = trio.lowlevel.current_clock()
        self._waits.append((clock.current_time() + self.delay, entry))
        if len(self._waits) == 1:
            self._watched.set()

    async def run(self, due: Callable[[T], None]) -> NoReturn:
        """Call ``due`` with each entry as it falls due, for ever."""
        waits = self._waits
        while True:
            if not waits:
                await self._watched.wait()
                self._watched = trio.Event()
                continue
            await trio.sleep_until(waits[0][0])
            until = trio.current_time() + self.tick
            while waits and waits[0][0] <= until:
                due(waits.popleft()[1])
