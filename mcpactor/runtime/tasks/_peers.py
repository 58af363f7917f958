# The peers a task's handler talks to through its Context.
#
# A session's task (2025-11-25) talks to the session's client as the request did, with
# the task named in each message's ``_meta``; while it waits on the client (sampling,
# elicitation, roots) it is ``input_required``. A task of the tasks extension has no
# stream left: its notifications are dropped and its questions park it instead.

from __future__ import annotations

from typing import TYPE_CHECKING

import trio

from ..._exceptions import LocalProtocolError
from ...protocol import JSONObject, RequestId
from ...server import Peer, with_related_task
from .._peer_base import Delegating, Sessionless
from ._table import Announce, TaskEntry

if TYPE_CHECKING:
    from ...server import SessionTaskHost

__all__ = ["ExtensionTaskPeer", "SessionTaskPeer"]


class SessionTaskPeer(Delegating):
    """The peer of a session task's Context: the session's, with the task's ``_meta``."""

    __slots__ = ("_announce", "_entry", "_host", "_peer")

    def __init__(
        self, peer: Peer, host: SessionTaskHost, entry: TaskEntry, announce: Announce
    ) -> None:
        self._peer = peer
        self._host = host
        self._entry = entry
        self._announce = announce

    @property
    def tasks(self) -> SessionTaskHost:
        """The session's tasks."""
        return self._host

    async def notify(
        self, method: str, params: JSONObject, *, related_request_id: RequestId | None
    ) -> None:
        """Send a notification tied to the task."""
        entry = self._entry
        await self._peer.notify(
            method,
            with_related_task(params, entry.state.task_id),
            related_request_id=entry.stream,
        )

    async def request(
        self,
        method: str,
        params: JSONObject,
        *,
        related_request_id: RequestId | None,
        timeout: float | None,
    ) -> JSONObject:
        """Ask the client for something; the task is ``input_required`` until it answers."""
        entry = self._entry
        asked = self._asking()
        try:
            try:
                if asked:
                    await self._announce(entry)
                result = await self._peer.request(
                    method,
                    with_related_task(params, entry.state.task_id),
                    related_request_id=entry.stream,
                    timeout=timeout,
                )
            finally:
                resumed = self._answered()
        except Exception:
            if resumed:
                await self._announce(entry)
            raise
        if resumed:
            await self._announce(entry)
        return result

    def _asking(self) -> bool:
        # One more question in flight; whether the task just became input_required.
        entry = self._entry
        entry.asking += 1
        if entry.state.status != "working":
            return False
        entry.state.move("input_required", "waiting for the client's answer", trio.current_time())
        return True

    def _answered(self) -> bool:
        # One question fewer in flight; whether the task just went back to working.
        entry = self._entry
        entry.asking -= 1
        if entry.asking or entry.state.status != "input_required":
            return False
        entry.state.move("working", None, trio.current_time())
        return True

    async def close_sse_stream(self, *, related_request_id: RequestId) -> None:
        """Nothing to close: the request that created the task was answered long ago."""

    def log_enabled(self, level: str) -> bool:
        """Return whether the client wants log messages at ``level``."""
        return self._peer.log_enabled(level)

    def subscribe(self, uri: str) -> None:
        """Remember that the client wants updates of ``uri``."""
        self._peer.subscribe(uri)

    def unsubscribe(self, uri: str) -> None:
        """Forget the client's subscription to ``uri``."""
        self._peer.unsubscribe(uri)

    async def subscriptions_changed(self) -> None:
        """Tell the session's replicas, as the session's own peer does."""
        await self._peer.subscriptions_changed()


class ExtensionTaskPeer(Sessionless, Delegating):
    """The peer of a task's Context (tasks extension): the request it came from is over.

    Its notifications have no stream to go on (a task reaches the client only through
    ``tasks/get`` and ``notifications/tasks``), so they are dropped; its questions park
    it (``TaskAsker``), never reaching ``request``; work that needs the runtime (threads,
    worker processes) still runs through the request's peer.
    """

    __slots__ = ("_peer",)

    def __init__(self, peer: Peer) -> None:
        self._peer = peer

    @property
    def tasks(self) -> SessionTaskHost:
        """There are no session tasks at a revision without sessions."""
        raise LocalProtocolError("a task of the tasks extension has no session tasks")

    async def notify(
        self, method: str, params: JSONObject, *, related_request_id: RequestId | None
    ) -> None:
        """Drop the notification: no stream carries it."""
        await trio.lowlevel.checkpoint()

    def _refusal(self, method: str) -> Exception:
        return LocalProtocolError(f"a task cannot send the client a request ({method})")
