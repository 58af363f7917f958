# The Server's roots-changed hooks, as one session runs them when its client says its
# roots changed (notifications/roots/list_changed).
#
# Each such notification would start every hook again, and each hook may ask roots/list:
# a client sending them in a loop would grow tasks and pending requests without bound.
# One round runs at a time; what arrives during it asks for one more round, which sees
# every change before it.

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

import trio

from ..protocol import ServerSession
from ..server import Context, Peer, Server

__all__ = ["RootsHooks"]

_log = logging.getLogger("mcpactor")


class RootsHooks:
    """One session's rounds of the Server's roots-changed hooks."""

    __slots__ = ("_again", "_core", "_peer", "_server", "running")

    def __init__(self, server: Server, core: ServerSession, peer: Peer) -> None:
        self._server = server
        self._core = core
        # The session, as its hooks' Context sees it.
        self._peer = peer
        #: a round is running (the session is not at rest)
        self.running = False
        self._again = False

    def start(self, nursery: trio.Nursery | None) -> None:
        """Run a round in ``nursery``, or one more after the round that runs now."""
        if not self._server.roots_changed_hooks or self._core.negotiated is None:
            return
        if nursery is None:
            return
        if self.running:
            self._again = True
            return
        self.running = True
        nursery.start_soon(self._rounds)

    async def _rounds(self) -> None:
        server = self._server
        try:
            while True:
                self._again = False
                negotiated = self._core.negotiated
                assert negotiated is not None
                async with trio.open_nursery() as hooks:
                    for hook in list(server.roots_changed_hooks):
                        ctx = Context(
                            peer=self._peer,
                            request_id=None,
                            negotiated=negotiated,
                            meta=None,
                            server=server,
                        )
                        hooks.start_soon(_run_hook, hook, ctx)
                if not self._again:
                    return
        finally:
            self.running = False


async def _run_hook(hook: Callable[[Context], Any], ctx: Context) -> None:
    try:
        await hook(ctx)
    except Exception:
        _log.exception("roots-changed hook %r failed", hook)
