# The middleware chain of one request, run in the request actor's own task.
#
# ``through`` is what ``handled`` (_request.py) awaits instead of the handler when the
# server has middleware: it makes the request's chain and returns the one coroutine that
# serves it (``_served``). The layers are async generators (server/_middleware.py); the
# innermost ``call_next`` is the request's ``Terminal``. Two things run in the one task:
#
# - the chain: its outermost loop (``_deliver``, an ``async for`` over the outermost
#   layer) stepped by hand (``_served`` for the request, ``_drive`` for each notice
#   and a cancellation). Each step forwards whatever trio asks of it to the event
#   loop, until the terminal wants the next message (it yields itself, known by
#   identity) or the chain is over;
# - the handler, awaited inside that step when the terminal first wants a message, as
#   it would be without middleware (so the cancel scopes it enters nest in its own
#   frames, as trio requires).
#
# So no task is spawned and nothing is buffered. Each notice the handler sends for its
# request (its Context's peer is a ``_Tapped`` of the request's ``_Pump`` meanwhile)
# steps the chain again from inside the handler's ``await``: the layers see it, the
# notice the outermost one lets through is sent (the core builds it), and the handler
# goes on. The handler's result (or failure, thrown in) steps the chain to its end. A
# chain that answers or refuses while the handler runs ends the handler at its pending
# notice (``ChainAnswered``, a BaseException like Cancelled; a cancel scope per request
# would cost more than the rest of the chain). Every layer's stream is closed,
# innermost first, before ``through`` returns, whatever happened.

from __future__ import annotations

import contextlib
import logging
import types
from collections.abc import AsyncIterator, Awaitable, Callable, Coroutine, Generator
from typing import TYPE_CHECKING, Any

import trio

from ..protocol import JSONObject, RequestId, describe
from ..server import (
    NO_ANSWER,
    Context,
    InputRequiredResult,
    Message,
    MiddlewareChain,
    Notice,
    Result,
    Server,
    Terminal,
    notice_of,
)
from ._peer_base import Delegating

if TYPE_CHECKING:
    pass

__all__ = ["ChainAnswered", "Step", "notified", "through"]

_log = logging.getLogger("mcpactor")

#: what the innermost step awaits: the server's handling of a method with its params
Step = Callable[[str, JSONObject | None, Context], Awaitable[JSONObject | None]]


class _Tapped(Delegating):
    """A Context's peer while its request runs through middleware: its notices go in.

    It stands in for the Context's own peer (the pump's ``peer``); its threads,
    processes and principal are that peer's (``Delegating``). The chain's state is on
    the pump, whose class has no ``__getattr__``: a class with one makes every
    attribute read on it slower, and the chain reads the pump's fields often.
    """

    __slots__ = ("pump",)

    pump: _Pump

    @property
    def _peer(self) -> Any:  # type: ignore[override]
        return self.pump.peer

    def __getattr__(self, name: str) -> Any:
        # Whatever else a peer offers (the session's id, a flight's scope, …).
        return getattr(self.pump.peer, name)

    async def notify(
        self, method: str, params: JSONObject, *, related_request_id: RequestId | None
    ) -> None:
        """Pass a notice for the request through the chain; send others as they are."""
        pump = self.pump
        request_id = pump.request_id
        if request_id is None or related_request_id != request_id:
            # Not the request's own, or the request is over (a peer kept past it).
            await pump.peer.notify(method, params, related_request_id=related_request_id)
            return
        if not pump.ended:
            lock = getattr(pump, "lock", None)  # set by the first notice only
            if lock is None:
                lock = pump.lock = trio.StrictFIFOLock()
            async with lock:
                if not pump.ended:
                    await _drive(pump, notice_of(method, params), None)
        if pump.ended:
            # The chain is over (it answered or refused): the handler ends here.
            raise ChainAnswered

    async def request(
        self,
        method: str,
        params: JSONObject,
        *,
        related_request_id: RequestId | None,
        timeout: float | None,
    ) -> JSONObject:
        """Send a server→client request and wait for its result."""
        result: JSONObject = await self.pump.peer.request(
            method, params, related_request_id=related_request_id, timeout=timeout
        )
        return result

    async def close_sse_stream(self, *, related_request_id: RequestId) -> None:
        """Close the response stream of a request (HTTP only)."""
        await self.pump.peer.close_sse_stream(related_request_id=related_request_id)

    def log_enabled(self, level: str) -> bool:
        """Return whether the client wants log messages at ``level``."""
        return bool(self.pump.peer.log_enabled(level))

    def subscribe(self, uri: str) -> None:
        """Remember that the client wants updates of ``uri``."""
        self.pump.peer.subscribe(uri)

    def unsubscribe(self, uri: str) -> None:
        """Forget the client's subscription to ``uri``."""
        self.pump.peer.unsubscribe(uri)

    async def subscriptions_changed(self) -> None:
        """Make a change of the subscriptions known where it must be."""
        await self.pump.peer.subscriptions_changed()


class _Pump(Terminal):
    # One request's chain: the call the outermost layer gets, its innermost step (the
    # Terminal it is), the outermost loop it steps by hand, and how the chain ended.
    # One object, not three: each costs its construction on every request. While the
    # handler runs, its Context's peer is a ``_Tapped`` of it: its notices go in.
    __slots__ = ("coro", "ended", "error", "final", "lock", "peer", "request_id")

    # ``through`` sets every field but ``lock`` as it makes one, without an ``__init__``
    # call (Call's is the public signature): one frame less per request.
    #: the Context's own peer, and the request's id (None once the request is over)
    peer: Any
    request_id: RequestId | None
    #: the chain's outermost loop (``_deliver``), stepped by hand
    coro: Coroutine[Any, Any, None] | None
    ended: bool
    final: Result | None
    error: Exception | None
    #: notices from several tasks of the handler's pass one at a time: made by the
    #: request's first notice, unset before (a request without notices never writes it)
    lock: trio.StrictFIFOLock


#: what a pump's optional fields start as (typed Any: ``through`` sets them all at once)
_UNSET: Any = None


@types.coroutine
def _drive(pump: _Pump, value: object, error: BaseException | None) -> Generator[Any, Any, bool]:
    # Step the chain with ``value`` (or ``error`` thrown in) until the terminal wants the
    # next message (True) or the chain is over (False): a notice's way through it, and
    # a cancellation's. What trio asks of the chain on the way passes through, both ways.
    coro = pump.coro
    assert coro is not None
    while True:
        try:
            yielded = coro.throw(error) if error is not None else coro.send(value)
        except StopIteration:
            pump.ended = True
            return False
        except Exception as exc:
            pump.ended = True
            pump.error = exc
            return False
        except BaseException:
            pump.ended = True
            raise
        if yielded is pump:
            return True
        error = None
        try:
            value = yield yielded
        except BaseException as exc:
            value, error = None, exc


@types.coroutine
def _passed(yielded: object) -> Generator[Any, Any, Any]:
    # What a layer awaits of trio's, passed on to trio, and trio's answer back.
    return (yield yielded)


# The request's way through the chain, in the request's own task: the chain is stepped
# here until the terminal wants the handler's answer, the handler is awaited right here
# (its cancel scopes nest in its own frames, as trio requires) and its result, or its
# failure thrown in, steps the chain to its end. A notice the outermost layer yields is
# sent (the core builds it), the answer is kept (``_deliver``). This is ``_drive``'s
# loop with the handler in it, in a coroutine that awaits the handler and passes on
# what a layer awaits only when one does: a generator that stepped the handler through
# ``__await__`` cost more per request. Its end (the answer) is written out here too: a
# call of a function costs about 400 instructions, a tenth of a µs, on every request.
async def _served(
    pump: _Pump, stream: AsyncIterator[Message], step: Step, ctx: Context
) -> JSONObject | None:
    coro: Any = pump.coro
    value: object = None
    error: BaseException | None = None
    handled = False
    try:
        while True:
            try:
                yielded = coro.throw(error) if error is not None else coro.send(value)
            except StopIteration:
                pump.ended = True
                break
            except Exception as exc:
                pump.ended = True
                pump.error = exc
                break
            except BaseException:
                pump.ended = True
                raise
            error = None
            if yielded is not pump:
                try:
                    value = await _passed(yielded)
                except BaseException as exc:
                    value, error = None, exc
                continue
            if handled:
                # The handler runs once: a layer that wants more after its answer is wrong.
                raise RuntimeError("a middleware asked for more after the answer")
            handled = True
            wanted = pump.served
            assert wanted is not None
            try:
                result = await step(wanted.method, wanted.params, ctx)
            except Exception as exc:
                value, error = None, exc
            except BaseException as exc:
                # The chain answered (or refused) while the handler ran: the handler was
                # ended from its pending notice, and what the chain said is the answer.
                if pump.ended and _answered_only(exc):
                    break
                raise
            else:
                if result is None:
                    value = NO_ANSWER
                elif result.get("resultType") == "input_required":
                    value = InputRequiredResult(result)
                else:
                    value = Result(result)
            if pump.ended:
                # It swallowed the ChainAnswered of a notice: the chain's answer stands.
                break
    except BaseException as exc:
        if not pump.ended:
            # Cancelled (or failed) with the chain waiting on the handler: each layer
            # sees it where it waits, and ends as it would.
            with contextlib.suppress(BaseException):
                await _drive(pump, None, exc)
        raise
    finally:
        if pump.request_id is not None:
            ctx._peer = pump.peer
        if pump.opened is not None or getattr(stream, "ag_frame", True) is not None:
            await _closed(pump, stream)
        # The call is its own terminal: part it from itself, so that reference counting
        # frees the request's chain at once, without the cycle collector.
        pump.served = pump.coro = pump.request_id = pump._terminal = None
    if pump.error is not None:
        raise pump.error
    final = pump.final
    if pump.kind != "request":
        return None
    if final is None:
        raise RuntimeError("the middleware chain ended without an answer")
    payload = final.payload
    if ctx.negotiated.revision.result_type and "resultType" not in payload:
        return _finished(pump, ctx, payload)
    return payload


async def _deliver(pump: _Pump, stream: AsyncIterator[Message]) -> None:
    # The outermost loop, the one coroutine ``_drive`` steps: a notice the outermost
    # layer yields is sent (the core builds it), the answer is kept.
    async for message in stream:
        if isinstance(message, Result) and pump.final is None:
            pump.final = message
        elif isinstance(message, Notice):
            await pump.peer.notify(
                message.method, message.params, related_request_id=pump.request_id
            )
        else:
            _refuse(pump, message)
            return


def _refuse(pump: _Pump, message: object) -> None:
    # A second answer, or not a message at all: the chain ends failed.
    if isinstance(message, Result):
        pump.error = RuntimeError("a middleware yielded a second answer")
    else:
        kind = type(message).__name__
        pump.error = TypeError(f"a middleware yielded {kind}, not a message")
    pump.ended = True


def through(
    chain: MiddlewareChain,
    step: Step,
    method: str,
    params: JSONObject | None,
    ctx: Context,
    scope: trio.CancelScope | None,
    kind: str = "request",
) -> Awaitable[JSONObject | None]:
    """Serve one request (or client notification) through ``chain`` around ``step``.

    Awaited, returns the result to answer with (None for a notification); raises what
    the chain raised (a RequestError refusal, a failing layer's or handler's exception).
    A plain function that makes the request's chain and returns its coroutine, awaited
    at once by the caller: one coroutine a request, not two.
    """
    first = chain.first
    assert first is not None
    pump = object.__new__(_Pump)  # its fields are all set here (see _Pump)
    pump.method = method
    pump.params = params
    pump.context = ctx
    pump.cancel_scope = scope
    pump.kind = kind
    pump._terminal = pump
    pump.started = pump.done = pump.ended = False
    pump.served = pump.opened = pump.final = pump.error = _UNSET
    pump.peer = ctx._peer
    pump.request_id = request_id = ctx.request_id
    # The outermost layer's stream is the pump's own; the layers inside it note theirs.
    stream = first.middleware(pump, first.inner)
    pump.coro = _deliver(pump, stream)
    if request_id is not None:
        # Made without an ``__init__`` of its own: the call would cost more than the rest
        # of the tap (a class with ``__getattr__`` makes its construction slower too).
        tap = ctx._peer = _Tapped()
        tap.pump = pump
    return _served(pump, stream, step, ctx)


async def _closed(pump: _Pump, stream: AsyncIterator[Message]) -> None:
    # Every layer's stream left open (the request ended in the middle of them),
    # innermost first, as a stack unwinds.
    opened = pump.opened
    if opened is not None:
        for inside in reversed(opened):
            if getattr(inside, "ag_frame", True) is not None:
                await _close(inside)
        opened.clear()
    if getattr(stream, "ag_frame", True) is not None:
        await _close(stream)


def _finished(pump: _Pump, ctx: Context, payload: JSONObject) -> JSONObject:
    # An answer a layer made itself, shaped as the revision sends results (the stateless
    # serving loads with the first such request).
    from ..server import finish_stateless

    return finish_stateless(ctx.server, pump.method, pump.params, ctx, payload)


async def notified(server: Server, method: str, params: JSONObject, ctx: Context) -> None:
    """Serve a client notification the core leaves to the server, in both eras.

    Its middleware sees it first; inside, the extension that receives it (if any) runs
    its handler. A failing layer or handler is logged and the session (or the stateless
    host) goes on: a notification has no answer to carry an error.
    """
    try:
        if server.middleware.first is None:
            await _received(method, params, ctx)
        else:
            await through(server.middleware, _received, method, params, ctx, None, "notification")
    except Exception:
        _log.exception("serving notification %s failed", describe(method))


async def _received(method: str, params: JSONObject | None, ctx: Context) -> None:
    # The innermost step of a client notification: its extension's handler, if any.
    server = ctx.server
    if not await server.extensions.notified(method, params or {}, ctx):
        _log.debug("ignored notification %s", describe(method))


async def _close(stream: AsyncIterator[Message]) -> None:
    # A layer's stream left open (the request ended in the middle of it): innermost
    # first, as a stack unwinds.
    aclose = getattr(stream, "aclose", None)
    if aclose is None:
        return
    try:
        await aclose()
    except trio.Cancelled:
        # Its cleanup was cut short by the request's own cancellation, which goes on.
        return
    except Exception:
        _log.exception("a middleware failed while closing")


class ChainAnswered(BaseException):
    """Raised in a handler, at its pending notice, once its middleware answered or refused.

    A BaseException, as trio's Cancelled is: the handler unwinds (its ``finally`` runs,
    its nursery's tasks are cancelled) and what the chain said is the request's answer.
    """


def _answered_only(exc: BaseException) -> bool:
    # The handler ended by ChainAnswered alone (a nursery of its own may group it).
    if isinstance(exc, ChainAnswered):
        return True
    if isinstance(exc, BaseExceptionGroup):
        rest = exc.split(ChainAnswered)[1]
        return rest is None
    return False
