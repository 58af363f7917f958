# The leases of the requests this replica runs for shared sessions (_event_store.py says
# what a lease is and who reads it).
#
# A request whose client may resume its stream on another replica holds a lease in the
# event store from its stream's first event to its answer: the session ``hold``s it once
# that event went out with the lease, and ``release``s it when the stream completes. One
# task renews every lease held and drops the released ones in one store call every third
# of a lease, so a request costs no store call of its own beyond its events, and a
# replica that dies stops renewing all its leases at once. A renewal that fails (the
# store is away) is tried again at the next turn; a lease that lapsed meanwhile stays
# lapsed, and its followers end with an error: the lease is the promise, and it was not
# kept. When the replica stops, the task drops what it still holds, so that followers
# elsewhere learn at once that those requests ended with it.

from __future__ import annotations

import logging
from typing import Final

import attrs
import trio

from ...protocol import describe_error
from ._event_store import EventStore, StreamKey

__all__ = ["REQUEST_LEASE", "LeaseKeeper", "LeaseStatistics"]

#: seconds a request's lease lasts unless renewed (it is renewed every third of that)
REQUEST_LEASE: Final = 10.0
# Seconds a stopping replica gives the store to drop its leases.
_LAST_WORD: Final = 2.0

_log = logging.getLogger("mcpactor.http")


@attrs.frozen
class LeaseStatistics:
    """What a LeaseKeeper holds and has done."""

    #: leases held now
    held: int
    #: released leases waiting to be dropped at the next renewal
    released: int
    #: renewals made (each one store call for every lease)
    renewals: int
    #: renewals that could not reach the store
    failures: int


class LeaseKeeper:
    """The leases this replica holds on its request streams, renewed together by one task."""

    def __init__(self, store: EventStore, seconds: float = REQUEST_LEASE) -> None:
        if not seconds > 0:
            raise ValueError(f"a lease lasts a positive number of seconds, got {seconds!r}")
        self.store = store
        #: seconds a lease lasts unless renewed
        self.seconds = seconds
        # Ordered sets: dicts of None.
        self._held: dict[StreamKey, None] = {}
        self._released: dict[StreamKey, None] = {}
        self._busy = trio.Event()
        self._renewals = 0
        self._failures = 0
        self._failing = False

    def hold(self, session_id: str, stream_id: str) -> None:
        """A stream's first event went out with its lease: renew it from now on."""
        key = (session_id, stream_id)
        self._released.pop(key, None)
        self._held[key] = None
        self._busy.set()

    def release(self, session_id: str, stream_id: str) -> None:
        """The stream completed (or ended unanswered): drop its lease at the next renewal."""
        key = (session_id, stream_id)
        if self._held.pop(key, False) is None:
            self._released[key] = None

    def statistics(self) -> LeaseStatistics:
        """Return how many leases are held and released, and the renewals so far."""
        return LeaseStatistics(
            len(self._held), len(self._released), self._renewals, self._failures
        )

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """Renew the held leases every third of a lease until cancelled; then drop them."""
        task_status.started()
        try:
            while True:
                if not self._held and not self._released:
                    self._busy = trio.Event()
                    await self._busy.wait()
                await trio.sleep(self.seconds / 3)
                await self._renew()
        finally:
            # Stopping: what this replica runs ends with it, and says so now.
            self._released.update(self._held)
            self._held.clear()
            with trio.CancelScope(shield=True), trio.move_on_after(_LAST_WORD):
                await self._renew()

    async def _renew(self) -> None:
        held = tuple(self._held)
        released = tuple(self._released)
        self._released.clear()
        if not held and not released:
            return
        self._renewals += 1
        try:
            await self.store.renew_leases(held, released, self.seconds)
        except Exception as exc:
            # Tried again at the next turn; released leases lapse by themselves.
            self._failures += 1
            if not self._failing:
                _log.warning(
                    "the leases of %d running requests could not be renewed: %s",
                    len(held),
                    describe_error(exc),
                )
            self._failing = True
            return
        if self._failing:
            _log.warning("the leases of running requests are renewed again")
            self._failing = False
