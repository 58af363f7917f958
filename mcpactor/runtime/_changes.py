# The Server's listener half of a session actor: list-changed and resource-updated
# notices, coalesced.
#
# The Server calls ``list_changed``/``resource_updated`` on every registered session
# (from a worker thread too, for a blocking handler). A change is queued in a set and
# one short task in the actor's nursery sends what is queued, once the session is
# operating; changes made meanwhile join it. While the actor rests (a hibernating HTTP
# session) the changes wait, and the next period sends them.

from __future__ import annotations

import contextlib
from collections.abc import Callable

import trio

from ..protocol import Phase
from ._peer import SessionPeer

__all__ = ["ChangeNotices"]


class ChangeNotices(SessionPeer):
    """The Server's listener: queues change notices and sends them, coalesced."""

    _changed_lists: set[str] | None
    _updated: set[str] | None
    _changes_queued: bool
    _helpers: int
    _nursery: trio.Nursery | None
    _token: trio.lowlevel.TrioToken | None

    def list_changed(self, kind: str) -> None:
        """Queue ``notifications/<kind>/list_changed`` (coalesced)."""
        if not trio.lowlevel.in_trio_run():
            self._from_thread(self.list_changed, kind)
            return
        if self._changed_lists is None:
            self._changed_lists = set()
        self._changed_lists.add(kind)
        self._schedule_changes()

    def resource_updated(self, uri: str) -> None:
        """Queue ``notifications/resources/updated`` if the client subscribed to ``uri``."""
        if not trio.lowlevel.in_trio_run():
            self._from_thread(self.resource_updated, uri)
            return
        if self._subscriptions is not None and uri in self._subscriptions:
            if self._updated is None:
                self._updated = set()
            self._updated.add(uri)
            self._schedule_changes()

    def _from_thread(self, method: Callable[[str], None], value: str) -> None:
        # A blocking handler changed the registry from a worker thread: record the
        # change on the event loop's thread.
        if self._token is not None:
            with contextlib.suppress(trio.RunFinishedError):
                self._token.run_sync_soon(method, value)

    def _schedule_changes(self) -> None:
        # One short task sends what is queued, once the session is operating and the
        # actor runs; changes made meanwhile join it (coalesced). While the actor rests,
        # the next period starts it.
        if (
            self._changes_queued
            or self._nursery is None
            or not (self._changed_lists or self._updated)
            or self.core.phase is not Phase.OPERATING
        ):
            return
        self._changes_queued = True
        self._helpers += 1
        self._nursery.start_soon(self._send_changes)

    async def _send_changes(self) -> None:
        try:
            while self._changed_lists or self._updated:
                capabilities = self.core.server_capabilities
                kinds = sorted(self._changed_lists or ())
                uris = sorted(self._updated or ())
                self._changed_lists = None
                self._updated = None
                for kind in kinds:
                    if capabilities.get(kind, {}).get("listChanged"):
                        await self.notify(
                            f"notifications/{kind}/list_changed", {}, related_request_id=None
                        )
                for uri in uris:
                    await self.notify(
                        "notifications/resources/updated", {"uri": uri}, related_request_id=None
                    )
        finally:
            self._changes_queued = False
            self._helpers -= 1
