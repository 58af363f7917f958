# Middleware: what wraps the one request path, in both eras and on every transport.
#
# A middleware is an async generator function ``(call, call_next)``: it sees the ``Call``
# (method, params, the request's Context and cancel scope), may rewrite its params,
# answer without calling ``call_next``, refuse by raising RequestError, and otherwise
# iterates ``call_next(call)`` and yields each message of the answer as it comes — every
# notice the handler sends for its request (progress, log messages), then the result
# (or, at 2026-07-28, the ``input_required`` result that asks for more). It never sees
# the envelope: the protocol core builds every message from the payloads it lets pass.
#
# The chain is composed once, when a middleware is added: each layer's ``call_next`` is a
# ``_Link`` to the layer inside it, and the innermost ``call_next`` is the request's own
# ``Terminal``, the stream the runtime feeds from the handler (runtime/_chain.py). This
# module is pure: no trio, no I/O; the runtime drives it.

from __future__ import annotations

import types
from collections.abc import AsyncIterator, Awaitable, Callable, Generator, Iterator
from typing import TYPE_CHECKING, Any, Final

from .._exceptions import PluginError
from ..protocol import JSONObject

if TYPE_CHECKING:
    from ..auth import Principal
    from ._context import Context

__all__ = [
    "NO_ANSWER",
    "Call",
    "InputRequiredResult",
    "LogMessage",
    "Message",
    "Middleware",
    "MiddlewareChain",
    "Next",
    "Notice",
    "Progress",
    "Result",
    "Terminal",
    "notice_of",
    "refuse_mounted_middleware",
]

PROGRESS: Final = "notifications/progress"
LOG: Final = "notifications/message"


class Notice:
    """A notification sent for the request being served: its method and its params."""

    __slots__ = ("method", "params")

    def __init__(self, method: str, params: JSONObject) -> None:
        #: the notification's method, e.g. ``notifications/progress``
        self.method = method
        #: its params (``_meta`` included); replace or change them to change what is sent
        self.params = params

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.method!r})"


class Progress(Notice):
    """A ``notifications/progress`` the handler reported."""

    __slots__ = ()


class LogMessage(Notice):
    """A ``notifications/message`` (a log message) the handler sent."""

    __slots__ = ()


class Result:
    """The request's result: the payload the core answers with (``_meta`` included)."""

    __slots__ = ("payload",)

    def __init__(self, payload: JSONObject) -> None:
        #: the result object; replace or change it to change the answer
        self.payload = payload

    def __repr__(self) -> str:
        return f"{type(self).__name__}({sorted(self.payload)!r})"


class InputRequiredResult(Result):
    """A 2026-07-28 result that asks the client for more input (``input_required``)."""

    __slots__ = ()


#: what a middleware receives from ``call_next`` and yields: notices, then the answer
Message = Notice | Result


class Call:
    """One request (or client notification) on its way to the server's handler.

    ``params`` may be replaced or changed before ``call_next(call)``; the method, the
    request's id and its envelope are the protocol's and stay as they came.
    """

    __slots__ = ("_terminal", "cancel_scope", "context", "kind", "method", "params")

    def __init__(
        self,
        method: str,
        params: JSONObject | None,
        context: Context,
        cancel_scope: Any,
        kind: str,
        terminal: Terminal | None,
    ) -> None:
        #: the method called (or notified)
        self.method = method
        #: its params (``_meta`` included), or None
        self.params = params
        #: the request's Context: principal, client capabilities, revision, its _meta
        self.context = context
        #: the request's ``trio.CancelScope`` (cancelling it cancels the request)
        self.cancel_scope = cancel_scope
        #: ``"request"`` or ``"notification"``
        self.kind = kind
        self._terminal = terminal

    def __repr__(self) -> str:
        return f"Call({self.method!r}, {self.kind})"

    @property
    def revision(self) -> str:
        """The protocol revision the request is served under, e.g. ``"2026-07-28"``."""
        return self.context.negotiated.revision.version

    @property
    def principal(self) -> Principal | None:
        """Who the request was admitted as (HTTP authorization), or None."""
        return self.context.principal

    @property
    def client_capabilities(self) -> JSONObject:
        """The capabilities the client declared (the request's own at 2026-07-28)."""
        return self.context.negotiated.client_capabilities


#: the next step of the chain: the layer inside, or the handler itself
Next = Callable[[Call], AsyncIterator[Message]]
#: a middleware: an async generator function ``layer(call, call_next)`` yielding messages
Middleware = Callable[[Call, Next], AsyncIterator[Message]]


#: fed to a Terminal when the handler is done without an answer (a notification)
NO_ANSWER: Final = object()


class Terminal(Call):
    """The innermost ``call_next``: the handler's messages, as the runtime feeds them.

    A request's Call is its own terminal (one object per request, not two); the
    runtime's driver of one request's chain is a Terminal of its own kind, and sets
    these fields as it makes one.
    """

    __slots__ = ("done", "opened", "served", "started")

    #: the call the innermost layer passed on (its params as the layers left them)
    served: Call | None
    started: bool
    done: bool
    #: the streams of the layers inside the outermost one, outermost first (closed at
    #: the request's end); None until there is one
    opened: list[AsyncIterator[Message]] | None

    def __aiter__(self) -> Terminal:
        return self

    def __anext__(self) -> Awaitable[Message]:
        # Once the answer has passed, the end at once, without an awaitable: every layer
        # asks once more after the answer, to end its loop.
        if self.done:
            raise StopAsyncIteration
        return _wanted(self)


@types.coroutine
def _wanted(terminal: Terminal) -> Generator[Any, Any, Message]:
    # The awaitable of the terminal's next message: the terminal is yielded up through
    # every layer to its driver, which knows it by identity and answers with the next
    # message (or throws the handler's failure in here). A plain generator lets
    # StopAsyncIteration through as it is.
    item = yield terminal
    if item is NO_ANSWER:
        terminal.done = True
        raise StopAsyncIteration
    if isinstance(item, Result):
        terminal.done = True
    return item  # type: ignore[no-any-return]


def _innermost(call: Call) -> AsyncIterator[Message]:
    # The innermost layer's ``call_next``: the request's terminal.
    terminal = call._terminal
    if terminal is None:
        raise RuntimeError("a middleware called call_next() after its request ended")
    if terminal.started:
        raise RuntimeError("a middleware called call_next() twice for one request")
    terminal.started = True
    terminal.served = call
    return terminal


def _next_to(middleware: Middleware, inner: Next) -> Next:
    # The ``call_next`` of the layer outside ``middleware``: a plain function made once
    # per chain (calling one costs less than calling an object's ``__call__``).

    def call_next(call: Call) -> AsyncIterator[Message]:
        terminal = call._terminal
        if terminal is None:
            raise RuntimeError("a middleware called call_next() after its request ended")
        stream = middleware(call, inner)
        opened = terminal.opened
        if opened is None:
            terminal.opened = [stream]
        else:
            opened.append(stream)
        return stream

    return call_next


class _Link:
    # The outermost layer and its ``call_next`` (the layer inside it, or the terminal).
    __slots__ = ("inner", "middleware")

    def __init__(self, middleware: Middleware, inner: Next) -> None:
        self.middleware = middleware
        self.inner = inner


class MiddlewareChain:
    """The middleware around a server's requests, outermost first (registration order).

    ``server.middleware.use(layer)`` adds ``layer`` inside those added before it: the
    first added sees a request first and its answer last.
    """

    __slots__ = ("_layers", "first")

    def __init__(self) -> None:
        self._layers: list[Middleware] = []
        #: the outermost step, or None while the chain is empty (the handler is called)
        self.first: _Link | None = None

    def use(self, middleware: Middleware) -> Middleware:
        """Add ``middleware`` inside every one added before; return it (a decorator)."""
        if not callable(middleware):
            raise TypeError(f"a middleware must be callable, got {type(middleware).__name__}")
        self._layers.append(middleware)
        inner: Next = _innermost
        for layer in reversed(self._layers[1:]):
            inner = _next_to(layer, inner)
        self.first = _Link(self._layers[0], inner)
        return middleware

    def __len__(self) -> int:
        return len(self._layers)

    def __iter__(self) -> Iterator[Middleware]:
        return iter(tuple(self._layers))

    def __repr__(self) -> str:
        names = ", ".join(getattr(m, "__name__", type(m).__name__) for m in self._layers)
        return f"MiddlewareChain([{names}])"


def notice_of(method: str, params: JSONObject) -> Notice:
    """The typed message of a notification sent for a request."""
    if method == PROGRESS:
        return Progress(method, params)
    if method == LOG:
        return LogMessage(method, params)
    return Notice(method, params)


def refuse_mounted_middleware(server: Any) -> None:
    """Refuse to serve a tree where a mounted server has middleware the served one lacks.

    The chain that runs is the served server's: a mounted server's layers (its own or
    its extensions') that the served server has not taken into its own chain would be
    skipped without a word, so starting says so instead.

    Raises:
        PluginError: names the mounted server and its layers.
    """
    served = {id(layer) for layer in server.middleware}
    pending = [(mount, mount.name) for mount in server.mounts]
    while pending:
        mount, where = pending.pop()
        missing = [layer for layer in mount.server.middleware if id(layer) not in served]
        if missing:
            names = ", ".join(getattr(m, "__name__", type(m).__name__) for m in missing)
            raise PluginError(
                f"mounted server {where!r} has middleware ({names}) that the server "
                "mounting it does not run: only the served server's chain runs, so add "
                "these layers to it (server.middleware.use)"
            )
        pending += [(child, f"{where}/{child.name}") for child in mount.server.mounts]
