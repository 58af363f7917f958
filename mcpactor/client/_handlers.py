# How the client answers the server's requests: ping, and one handler per capability.
#
# A capability is declared exactly when its handler is there, so a server that asks
# anyway is breaking the protocol and gets -32601, like any unknown method.

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

import attrs

from .._exceptions import METHOD_NOT_FOUND, RequestError
from ..protocol import (
    LATEST,
    CreateMessageResult,
    ElicitResult,
    JSONObject,
    JSONValue,
    Request,
    Revision,
    Root,
    bounded_value,
    describe,
    unstructure,
)

__all__ = [
    "ClientHandlers",
    "ClientMessageHook",
    "ElicitationHandler",
    "ProgressHandler",
    "RootsSource",
    "SamplingHandler",
    "ServerMessageHook",
]

#: ``async fn(progress, total, message)``, called for each progress notification of a call
ProgressHandler = Callable[[float, float | None, str | None], Awaitable[None]]
#: ``async fn(params)`` answering ``sampling/createMessage``
SamplingHandler = Callable[[JSONObject], Awaitable[JSONObject | CreateMessageResult]]
#: ``async fn(params)`` answering ``elicitation/create``
ElicitationHandler = Callable[[JSONObject], Awaitable[JSONObject | ElicitResult]]
#: the client's roots: a list, or a (sync or async) callable returning one
RootsSource = (
    Sequence[Root | JSONObject]
    | Callable[[], Sequence[Root | JSONObject] | Awaitable[Sequence[Root | JSONObject]]]
)
#: ``fn(message, request_method)`` seeing every message the server sends, before the
#: client acts on it; ``request_method`` names the request a response answers. What it
#: raises fails the connection, so a validator plugged in by a test fails that test.
ServerMessageHook = Callable[[JSONValue, str | None], None]
#: ``fn(message)`` seeing every message the client sends, before it is written; what
#: it raises fails the sender
ClientMessageHook = Callable[[JSONValue], None]


@attrs.define
class ClientHandlers:
    """The client's answers to server→client requests, and the capabilities they imply."""

    sampling: SamplingHandler | None = None
    elicitation: ElicitationHandler | None = None
    roots: RootsSource | None = None

    def capabilities(self, revision: Revision = LATEST) -> JSONObject:
        """The capabilities to declare at ``revision``: one per handler present."""
        capabilities: JSONObject = {}
        if self.sampling is not None:
            capabilities["sampling"] = {}
        if self.elicitation is not None and revision.elicitation:
            capabilities["elicitation"] = {"form": {}} if revision.elicitation_url else {}
        if self.roots is not None:
            capabilities["roots"] = {"listChanged": True}
        return capabilities

    async def answer(self, request: Request) -> JSONObject:
        """Return the result for a server→client request.

        Raises:
            RequestError: -32601 for a method this client has no handler for, or what
                the handler raised.
        """
        method = request.method
        params = request.params or {}
        if method == "ping":
            return {}
        if method == "sampling/createMessage" and self.sampling is not None:
            return _as_json(await self.sampling(params), method)
        if method == "elicitation/create" and self.elicitation is not None:
            return _as_json(await self.elicitation(params), method)
        if method == "roots/list" and self.roots is not None:
            return {"roots": [_as_json(root, method) for root in await self._current_roots()]}
        raise RequestError(
            METHOD_NOT_FOUND,
            f"method not found: {describe(method)} (this client declared no such capability)",
            {"method": bounded_value(method)},
        )

    async def _current_roots(self) -> Sequence[Root | JSONObject]:
        source = self.roots
        if not callable(source):
            return source or ()
        found = source()
        if inspect.isawaitable(found):
            return await found
        return found


def _as_json(value: Any, method: str) -> JSONObject:
    if attrs.has(type(value)):
        value = unstructure(value)
    if not isinstance(value, dict):
        raise TypeError(
            f"a {describe(method)} answer must be a dict or a wire type, got {describe(value)}"
        )
    return value
