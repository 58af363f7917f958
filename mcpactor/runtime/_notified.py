# The notifications a client sends that the core leaves to the Server (an extension
# receives them, or its middleware sees them), as one session runs them through the
# chain (in the session era; a 2026-07-28 notification is the stateless host's).
#
# A notification has no answer and no id to cancel it by, so a handler runs in a task
# of the session's nursery and ends with the session. A client sending them faster than
# they finish would grow tasks without bound: past a limit, one is dropped with a
# warning.

from __future__ import annotations

import logging
from typing import Final

import trio

from ..protocol import Notification, ServerSession, describe
from ..server import Context, Peer, Server
from ._chain import notified

__all__ = ["MAX_RUNNING", "NotificationHandlers"]

_log = logging.getLogger("mcpactor")

#: notification handlers one session runs at once
MAX_RUNNING: Final = 64


class NotificationHandlers:
    """One session's running handlers of extension notifications."""

    __slots__ = ("_core", "_peer", "_server", "running")

    def __init__(self, server: Server, core: ServerSession, peer: Peer) -> None:
        self._server = server
        self._core = core
        self._peer = peer
        #: handlers running now (the session is not at rest while any runs)
        self.running = 0

    def start(self, nursery: trio.Nursery | None, notification: Notification) -> None:
        """Run the handler of ``notification``, if an extension receives it."""
        method = notification.method
        negotiated = self._core.negotiated
        server = self._server
        if (
            nursery is None
            or negotiated is None
            or (server.extensions.receiver(method) is None and server.middleware.first is None)
        ):
            _log.debug("ignored notification %s", describe(method))
            return
        if self.running >= MAX_RUNNING:
            _log.warning(
                "dropped notification %s: %d handlers already running",
                describe(method),
                MAX_RUNNING,
            )
            return
        params = notification.params or {}
        meta = params.get("_meta")
        ctx = Context(
            self._peer, None, negotiated, meta if type(meta) is dict else None, self._server
        )
        self.running += 1
        nursery.start_soon(self._run, method, params, ctx)

    async def _run(self, method: str, params: dict[str, object], ctx: Context) -> None:
        try:
            await notified(self._server, method, params, ctx)
        finally:
            self.running -= 1
