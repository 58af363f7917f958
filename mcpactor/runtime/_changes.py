# One session's listener on its Server: list-changed and resource-updated notices,
# coalesced. The session's actor owns one (``SessionActor.changes``); it is what the
# Server's ``listeners`` hold.
#
# The Server calls ``list_changed``/``resource_updated`` on every registered listener
# (from a worker thread too, for a blocking handler). A change is queued in a set and
# one short task in the actor's nursery sends what is queued through the session's peer,
# once the session is operating; changes made meanwhile join it. While the actor rests
# (a hibernating HTTP session) the changes wait, and the next run sends them; the owner
# of a resting session that a client listens to (a GET stream) starts that run at once.

from __future__ import annotations

import contextlib
from collections.abc import Callable

import trio

from ..protocol import Phase, ServerSession
from ..server import Server
from ._peer import SessionPeer

__all__ = ["ChangeNotices"]


class ChangeNotices:
    """The Server's listener for one session: queues change notices and sends them, coalesced."""

    __slots__ = (
        "_changed_lists",
        "_core",
        "_nursery",
        "_peer",
        "_server",
        "_token",
        "_updated",
        "sending",
        "wake",
    )

    def __init__(self, server: Server, core: ServerSession, peer: SessionPeer) -> None:
        self._server = server
        self._core = core
        # Sends the notices, and knows what the client subscribed to.
        self._peer = peer
        self._changed_lists: set[str] | None = None
        self._updated: set[str] | None = None
        #: a task is sending the queued notices (the session is not at rest)
        self.sending = False
        # Where that task runs: the actor's nursery while it runs, else None.
        self._nursery: trio.Nursery | None = None
        self._token: trio.lowlevel.TrioToken | None = None
        #: called when a change is queued while the actor rests (None: it waits for the
        #: next run); an owner that may rest while a client listens wakes the actor here
        self.wake: Callable[[], None] | None = None

    def listen(self) -> None:
        """Start hearing the Server's changes, from this trio run and its worker threads."""
        self._token = trio.lowlevel.current_trio_token()
        self._server.listeners.add(self)

    def close(self) -> None:
        """Stop hearing the Server's changes."""
        self._server.listeners.discard(self)

    def send_in(self, nursery: trio.Nursery | None) -> None:
        """Send queued and later changes from ``nursery``; None: keep them until given one."""
        self._nursery = nursery
        self._schedule()

    @property
    def waiting(self) -> bool:
        """Whether changes are queued, not sent yet."""
        return bool(self._changed_lists or self._updated)

    def forget(self) -> None:
        """Drop the queued changes: the client lists everything fresh after initializing."""
        self._changed_lists = None
        self._updated = None

    def list_changed(self, kind: str) -> None:
        """Queue ``notifications/<kind>/list_changed`` (coalesced)."""
        if not trio.lowlevel.in_trio_run():
            self._from_thread(self.list_changed, kind)
            return
        if self._changed_lists is None:
            self._changed_lists = set()
        self._changed_lists.add(kind)
        self._schedule()

    def resource_updated(self, uri: str) -> None:
        """Queue ``notifications/resources/updated`` if the client subscribed to ``uri``."""
        if not trio.lowlevel.in_trio_run():
            self._from_thread(self.resource_updated, uri)
            return
        subscriptions = self._peer.subscriptions
        if subscriptions is not None and uri in subscriptions:
            if self._updated is None:
                self._updated = set()
            self._updated.add(uri)
            self._schedule()

    def _from_thread(self, method: Callable[[str], None], value: str) -> None:
        # A blocking handler changed the registry from a worker thread: record the
        # change on the event loop's thread.
        if self._token is not None:
            with contextlib.suppress(trio.RunFinishedError):
                self._token.run_sync_soon(method, value)

    def _schedule(self) -> None:
        # One short task sends what is queued, once the session is operating and the
        # actor runs; changes made meanwhile join it (coalesced). While the actor rests,
        # the next run starts it (which ``wake`` may start now).
        if (
            self.sending
            or not (self._changed_lists or self._updated)
            or self._core.phase is not Phase.OPERATING
        ):
            return
        if self._nursery is None:
            if self.wake is not None:
                self.wake()
            return
        self.sending = True
        self._nursery.start_soon(self._send)

    async def _send(self) -> None:
        notify = self._peer.notify
        try:
            while self._changed_lists or self._updated:
                capabilities = self._core.server_capabilities
                kinds = sorted(self._changed_lists or ())
                uris = sorted(self._updated or ())
                self._changed_lists = None
                self._updated = None
                for kind in kinds:
                    if capabilities.get(kind, {}).get("listChanged"):
                        await notify(
                            f"notifications/{kind}/list_changed", {}, related_request_id=None
                        )
                for uri in uris:
                    await notify(
                        "notifications/resources/updated", {"uri": uri}, related_request_id=None
                    )
        finally:
            self.sending = False
