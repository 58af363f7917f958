# A Server's lifespans, and the state the first of them yields.
#
# ``Server(lifespan=fn)`` makes a ``Server[State]`` of what ``fn`` yields; while the
# server runs it is ``server.state``, and ``ctx.state`` of every request the server's
# handlers serve (``Context.server`` is always the handler's own server, a mounted one's
# too). It lives on the Server, per running: the same for every session and revision,
# and read only by handlers that ask for it. ``@server.lifespan`` adds more, entered
# after that one; what they yield is not kept.

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, AsyncExitStack, asynccontextmanager
from typing import Any

__all__ = ["Lifespan", "Lifespans"]

#: an async context manager factory, called with the server
Lifespan = Callable[[Any], AbstractAsyncContextManager[Any]]


class Lifespans:
    """The lifespans of one server, and the states of its runnings."""

    def __init__(self, state_lifespan: Lifespan | None) -> None:
        #: the ``lifespan`` given to ``Server``: what it yields is the state
        self.state_lifespan = state_lifespan
        #: the lifespans added with ``@server.lifespan``, entered in order after it
        self.others: list[Lifespan] = []
        # (token, state) of each running of the server, the latest last.
        self._states: list[tuple[object, Any]] = []

    def state(self, server: object) -> Any:
        """The latest running's state; None without a state lifespan.

        Raises:
            RuntimeError: there is a state lifespan, but ``server`` is not running it.
        """
        states = self._states
        if states:
            return states[-1][1]
        if self.state_lifespan is None:
            return None
        raise RuntimeError(
            f"{server!r} is not running, so its lifespan has yielded no state: the state "
            "exists while the server is served (mcpactor serve, mcpactor.testing.client, "
            "or inside 'async with server.running()')"
        )

    @asynccontextmanager
    async def running(self, server: object) -> AsyncIterator[None]:
        """Enter every lifespan in order (left in reverse) around the body."""
        async with AsyncExitStack() as stack:
            if self.state_lifespan is not None:
                state = await stack.enter_async_context(self.state_lifespan(server))
                token = object()
                self._states.append((token, state))
                # Left after the lifespans below, which may use the state to close.
                stack.callback(self._forget, token)
            for factory in self.others:
                await stack.enter_async_context(factory(server))
            yield

    def _forget(self, token: object) -> None:
        self._states = [entry for entry in self._states if entry[0] is not token]
