# Where what a proxied remote sends on its own goes: its log messages and its requests
# to the client (sampling, elicitation, roots).
#
# The remote's log messages and requests carry no link to the request that caused them
# (nothing on a stdio wire says which request a message belongs to), so they go to the
# requests being forwarded when they arrive: a log message to each client with a
# forwarded request in flight, a server→client request to the client of the most recent
# one — and to nobody when requests of several clients are in flight, rather than to the
# wrong one. With no request in flight, the client that used the proxy last is asked, and
# log messages go to this process's log.

from __future__ import annotations

import contextlib
import logging
from typing import Final

import trio

from .._exceptions import (
    INTERNAL_ERROR,
    MCPActorError,
    ProtocolError,
    RequestError,
    TransportError,
)
from ..protocol import JSONObject, describe
from ..server import Context

__all__ = ["ForwardedRequest", "ForwardedRequests", "detached", "report_progress"]

_log = logging.getLogger("mcpactor.proxy")

# Log messages queued for one forwarded request before further ones are dropped.
_RELAY_BUFFER: Final = 64

_PYTHON_LEVELS: Final = {
    "debug": logging.DEBUG,
    "info": logging.INFO,
    "notice": logging.INFO,
    "warning": logging.WARNING,
    "error": logging.ERROR,
    "critical": logging.CRITICAL,
    "alert": logging.CRITICAL,
    "emergency": logging.CRITICAL,
}


class ForwardedRequest:
    """One forwarded request: where the remote's log messages for it go."""

    def __init__(self, ctx: Context) -> None:
        self.ctx = ctx
        self._send, self._receive = trio.open_memory_channel[JSONObject](_RELAY_BUFFER)

    def push(self, params: JSONObject) -> None:
        """Queue a log message for the request's client; dropped when the queue is full."""
        with contextlib.suppress(trio.WouldBlock, trio.ClosedResourceError):
            self._send.send_nowait(params)

    def close(self) -> None:
        """Take no more messages; ``run`` ends once the queued ones are passed on."""
        self._send.close()

    async def run(self) -> None:
        """Pass the queued log messages to the request's client, in order."""
        async with self._receive:
            async for params in self._receive:
                level = params.get("level")
                logger = params.get("logger")
                # A client that went away meanwhile just misses the message.
                with contextlib.suppress(
                    MCPActorError, trio.ClosedResourceError, trio.BrokenResourceError
                ):
                    await self.ctx.log(
                        level if isinstance(level, str) else "info",
                        params.get("data"),
                        logger=logger if isinstance(logger, str) else None,
                    )


class ForwardedRequests:
    """The requests a proxy is forwarding, and the client it used last."""

    def __init__(self, name: str) -> None:
        self._name = name
        self._relays: list[ForwardedRequest] = []
        self._last_ctx: Context | None = None

    def remember(self, ctx: Context) -> None:
        """Make the client of ``ctx`` the one asked when no request is in flight."""
        self._last_ctx = detached(ctx)

    def open(self, ctx: Context) -> ForwardedRequest:
        """Start relaying to the request of ``ctx``; end it with ``close``."""
        self.remember(ctx)
        relay = ForwardedRequest(ctx)
        self._relays.append(relay)
        return relay

    def close(self, relay: ForwardedRequest) -> None:
        """The request of ``relay`` is answered: relay nothing more to it."""
        self._relays.remove(relay)

    def log(self, params: JSONObject) -> None:
        """Pass a remote's log message to each client with a request in flight."""
        by_client: dict[object, ForwardedRequest] = {}
        for relay in self._relays:
            by_client.setdefault(relay.ctx._peer, relay)
        if not by_client:
            level = params.get("level")
            level = _PYTHON_LEVELS.get(level, logging.INFO) if isinstance(level, str) else 20
            _log.log(level, "%s: %s", self._name, describe(params.get("data")))
            return
        for relay in by_client.values():
            relay.push(params)

    def asker(self, method: str) -> Context:
        """The context to ask the client through for the remote's ``method`` request.

        Raises:
            RequestError: there is no client to ask, or no way to tell which one.
        """
        by_client: dict[object, Context] = {}
        for relay in reversed(self._relays):
            by_client.setdefault(relay.ctx._peer, relay.ctx)
        if len(by_client) == 1:
            return next(iter(by_client.values()))
        if by_client:
            raise RequestError(
                INTERNAL_ERROR,
                f"{describe(self._name)}: the remote server sent {describe(method)} while "
                "requests of "
                f"{len(by_client)} clients were in flight; it cannot be told which to ask",
            )
        if self._last_ctx is None:
            raise RequestError(
                INTERNAL_ERROR,
                f"{describe(self._name)}: the remote server sent {describe(method)} before "
                "any client "
                "used it; there is no client to ask",
            )
        return self._last_ctx

    async def ask_client(self, method: str, params: JSONObject) -> JSONObject:
        """Ask a real client the remote's request; return its answer."""
        ctx = self.asker(method)
        try:
            return await ctx._peer.request(
                method, params, related_request_id=ctx.request_id, timeout=None
            )
        except ProtocolError as exc:
            # The real client lacks the capability (or its session is over).
            raise RequestError(exc.code, exc.message, exc.data) from None
        except TransportError as exc:
            raise RequestError(INTERNAL_ERROR, f"the client went away: {exc}") from None

    async def client_roots(self) -> list[JSONObject]:
        """The roots of the client asked, for the remote's ``roots/list``."""
        result = await self.ask_client("roots/list", {})
        roots = result.get("roots")
        return (
            [root for root in roots if isinstance(root, dict)] if isinstance(roots, list) else []
        )


async def report_progress(
    ctx: Context, progress: float, total: float | None, message: str | None
) -> None:
    """Pass the remote's progress for a forwarded request to its client."""
    await ctx.report_progress(progress, total, message)


def detached(ctx: Context) -> Context:
    """A context for asking the client later, outside the request it came from."""
    return Context(
        peer=ctx._peer, request_id=None, negotiated=ctx.negotiated, meta=None, server=ctx.server
    )
