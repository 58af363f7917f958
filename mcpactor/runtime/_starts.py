"""Request actors waiting for their first step, and the gate that lets intake wait for them."""

# trio runs what became runnable during one pass of its scheduler in the next pass. When
# a burst of requests arrives at once, their connection tasks are woken in one pass, and
# every request actor they spawn waits for the next: each handler starts only after all
# of the burst's requests have been parsed, checked and decoded, the handlers start
# together, and calls of equal length then end together, so their answers queue behind
# one another. A server taking in one request after another would start each handler as
# its request arrives and answer each as it ends. The gate gives that order back: HTTP intake
# waits while ``limit`` request actors are spawned but not yet started, and each actor
# that starts lets one waiting connection go on.

from __future__ import annotations

from typing import Final

import trio

__all__ = ["StartGate", "current_start_gate"]

#: request actors that may wait for their first step before intake waits for them
START_BACKLOG: Final = 16


class StartGate:
    """Counts request actors in flight and not yet started; intake waits while many wait."""

    __slots__ = ("_lot", "in_flight", "limit", "waiting")

    def __init__(self, limit: int = START_BACKLOG) -> None:
        self.limit = limit
        #: request actors spawned whose first step has not run
        self.waiting = 0
        #: request actors spawned that have not ended
        self.in_flight = 0
        self._lot = trio.lowlevel.ParkingLot()

    def spawned(self) -> None:
        """Note a request actor handed to the scheduler."""
        self.waiting += 1
        self.in_flight += 1

    def ended(self) -> None:
        """Note a request actor that is done (its reply queued, or none to send)."""
        self.in_flight -= 1

    def started(self) -> None:
        """Note a request actor's first step; let one waiting intake go on if there is room."""
        self.waiting -= 1
        if self._lot and self.waiting < self.limit:
            self._lot.unpark()

    @property
    def closed(self) -> bool:
        """Whether intake should wait now."""
        return self.waiting >= self.limit

    async def wait_turn(self) -> None:
        """Wait until request actors spawned earlier have started (at once if few wait)."""
        if self.waiting >= self.limit:
            await self._lot.park()
            # With no request actor left to start, no start will let the next intake go:
            # this one may start none (a notification, a GET, a refusal), so pass the
            # turn on now rather than leave the others parked.
            if self._lot and not self.waiting:
                self._lot.unpark()

    def statistics(self) -> tuple[int, int]:
        """Return (request actors not yet started, intakes waiting), for tests."""
        return self.waiting, len(self._lot)


_GATE: trio.lowlevel.RunVar[StartGate] = trio.lowlevel.RunVar("mcpactor.start_gate")


def current_start_gate() -> StartGate:
    """Return this trio run's gate, shared by every session and HTTP server in it."""
    try:
        return _GATE.get()
    except LookupError:
        gate = StartGate()
        _GATE.set(gate)
        return gate
