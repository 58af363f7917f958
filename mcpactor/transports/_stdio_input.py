# What the client sends on a pipe: read, framed, decoded, and handed to its owner.
#
# ``read_input`` is the one reader: it splits the client's bytes into frames, decodes
# each and hands it on. It hands on the frames of one read in runs, letting the
# scheduler run what a run started before the next: a pipelining client's read holds
# its whole window, and handed on at once every answer would wait for the last request
# (the client refilling its window only then) while the server idles.
#
# ``PipeRouter`` sees each message first. A request is routed by its envelope: one
# whose ``params._meta`` names a protocol version (``has_envelope``, 2026-07-28) is
# served by the StatelessHost, every other message goes to the session's inbox; for a
# session-era message that costs the envelope check and nothing else. Each stateless
# request is a Request actor in the reader's nursery, inside a CancelScope of its own
# (``notifications/cancelled`` naming its id cancels it, and ends a listen stream, which
# then sends nothing more). What it sends — notifications, then its answer — goes to
# the pipe's one sink. When input ends, requests get the session's grace period; listen
# streams end with their closing result.
#
# The router also knows what of the pipe's is being served (``quiet``): its own
# requests, and the session's once the session was handed a message (before that it
# serves nothing), so that the sink writes a lone answer at once and leaves answers
# made together to its writer task, to leave in one write.

from __future__ import annotations

import logging
from collections.abc import Awaitable
from typing import TYPE_CHECKING, Final

import trio

from .._exceptions import INVALID_REQUEST, ProtocolError, RemoteProtocolError
from ..protocol import (
    PROTOCOL_VERSION,
    JSONObject,
    JSONValue,
    LineFramer,
    Notification,
    Request,
    RequestId,
    decode,
    describe,
    error_message,
)
from ..runtime import METRICS, Outbound, OutboundKind, StatelessHost
from ._pipe import PipeSink

if TYPE_CHECKING:
    from ..runtime import SessionActor

__all__ = ["PipeRouter", "read_input"]

_log = logging.getLogger("mcpactor")

_RECEIVE_SIZE: Final = 65536
# Frames of one read handed on before the reader lets the scheduler run what they
# started (docs/performance.md has the measurements behind the size of a run).
_DISPATCH_RUN: Final = 16

_CANCELLED: Final = "notifications/cancelled"
_TASK_NAME: Final = "mcpactor.stateless-request"
_RESPONSE: Final = OutboundKind.RESPONSE
_NOTIFICATION: Final = OutboundKind.NOTIFICATION


async def read_input(
    stream: trio.abc.ReceiveStream,
    inbox: trio.MemorySendChannel[JSONValue | ProtocolError],
    *,
    host: StatelessHost,
    sink: PipeSink,
    session: SessionActor | None,
    max_line_bytes: int,
    grace: float,
    reader: trio.CancelScope,
    task_status: trio.TaskStatus[PipeRouter] = trio.TASK_STATUS_IGNORED,
) -> None:
    """Read the client's messages until input ends (or ``reader`` is cancelled).

    Stateless requests are served by ``host`` in request actors of their own; the rest
    goes to ``inbox``, which closes once those requests are over (the session then ends).
    When input ends, listen streams end gracefully and the other requests get ``grace``
    seconds. Reports the router it hands stateless requests to.
    """
    framer = LineFramer(max_line_bytes)
    clock = trio.lowlevel.current_clock()
    async with inbox, trio.open_nursery() as requests:
        route = PipeRouter(host, sink, requests, session)
        task_status.started(route)
        with reader:
            while True:
                try:
                    data = await stream.receive_some(_RECEIVE_SIZE)
                except (trio.BrokenResourceError, trio.ClosedResourceError):
                    _log.debug("input stream broke; treating it as end of input")
                    data = b""
                # When these lines arrived: their requests' latency counts from here.
                arrived = clock.current_time()
                if data:
                    METRICS.received("stdio", len(data))
                    frames = framer.feed(data)
                else:
                    last = framer.flush()
                    frames = [] if last is None else [last]
                for handed, frame in enumerate(frames):
                    if handed and not handed % _DISPATCH_RUN:
                        # A schedule point, not a cancel point: a frame read is never
                        # lost to a cancellation before it is handed on.
                        await trio.lowlevel.cancel_shielded_checkpoint()
                    item: JSONValue | ProtocolError
                    if type(frame) is bytes:
                        try:
                            item = decode(frame)
                        except RemoteProtocolError as exc:
                            item = exc
                    else:
                        # An over-long line's report: its class loads with the first one.
                        from ..protocol import FrameTooLong

                        assert type(frame) is FrameTooLong
                        item = frame.to_exception()
                    if route(item, arrived):
                        continue
                    # Within a run, while the inbox has room, a frame costs no trip
                    # through the scheduler.
                    try:
                        inbox.send_nowait((item, arrived))
                    except trio.WouldBlock:
                        await inbox.send((item, arrived))
                if not data:
                    break
        host.stop()
        requests.cancel_scope.deadline = trio.current_time() + grace


def _has_envelope(params: object) -> bool:
    meta = params.get("_meta") if type(params) is dict else None
    return type(meta) is dict and PROTOCOL_VERSION in meta


class PipeRouter:
    """Takes a pipe's stateless requests (and their cancellations) off the session."""

    def __init__(
        self,
        host: StatelessHost,
        sink: PipeSink,
        nursery: trio.Nursery,
        session: SessionActor | None = None,
    ) -> None:
        self.host = host
        self._sink = sink
        self._nursery = nursery
        self._session = session
        # The session was handed a message: its requests count as the pipe's from then.
        self._session_used = False
        self._scopes: dict[RequestId, trio.CancelScope] = {}
        # Bound once: taken for every request.
        self._serve = host.serve
        self._emit = self._notify
        self._request_done = self._done

    @property
    def in_flight(self) -> int:
        """How many stateless requests of this pipe are being served."""
        return len(self._scopes)

    def quiet(self) -> bool:
        """Whether nothing of the pipe's is being served, stateless or in the session."""
        if self._scopes:
            return False
        session = self._session
        return not (self._session_used and session is not None and session.requests_in_flight)

    def __call__(self, item: JSONValue | ProtocolError, arrived: float | None = None) -> bool:
        """Take ``item`` if it is a stateless request or cancels one; else leave it.

        ``arrived``: when it was read (trio's clock), where a request's latency counts from.
        """
        if type(item) is dict:
            params = item.get("params")
            if "id" in item:
                # has_envelope, inline: this runs for every request on the pipe (a
                # session's request has no envelope: its method and id are not read)
                meta = params.get("_meta") if type(params) is dict else None
                if (
                    type(meta) is dict
                    and PROTOCOL_VERSION in meta
                    and type(method := item.get("method")) is str
                    and type(request_id := item["id"]) in (str, int)
                ):
                    if request_id in self._scopes:
                        why = f"request id {describe(request_id)} is in use"
                        refusal = error_message(request_id, INVALID_REQUEST, why)
                        self._nursery.start_soon(self._refuse, Outbound(_RESPONSE, refusal))
                        return True
                    scope = self._scopes[request_id] = trio.CancelScope()
                    # Taken now, served even if the input ends before its task first runs.
                    # The host's serve is the task itself (arguments by position:
                    # start_soon takes no keywords): envelope, principal and keep-alive
                    # are its defaults; its latency counts from when it was read, as a
                    # session's request's does.
                    self._nursery.start_soon(
                        self._serve,
                        Request(request_id, method, params),
                        self._emit,
                        None,
                        None,
                        None,
                        scope,
                        not self.host.stopping,
                        self._request_done,
                        arrived,
                        name=_TASK_NAME,
                    )
                    return True
            elif self._scopes and item.get("method") == _CANCELLED and type(params) is dict:
                cancelled = self._scopes.get(params.get("requestId"))  # type: ignore[arg-type]
                if cancelled is not None:
                    cancelled.cancel("cancelled by the client")
                    return True
            elif type(item.get("method")) is str and (
                not self._session_used or _has_envelope(params)
            ):
                # A 2026-07-28 notification (with an envelope, or on a pipe no session
                # message came through): an extension's handler may receive it.
                notification = Notification(
                    item["method"], params if type(params) is dict else None
                )
                self._nursery.start_soon(self.host.notified, notification, self._emit)
                return True
        self._session_used = True
        return False

    async def _notify(self, message: JSONObject) -> None:
        # A notification of a request's, to the sink (waiting for room there). On a pipe
        # nothing but the bytes matter: the request it belongs to is not named.
        try:
            await self._sink.send(Outbound(_NOTIFICATION, message))
        except trio.ClosedResourceError:
            # The pipe closed: nothing more can be sent for any request of the pipe,
            # which end as cancelled ones do.
            _log.debug("the pipe closed while %d requests ran", len(self._scopes))
            for scope in self._scopes.values():
                scope.cancel("the pipe closed")
            await trio.lowlevel.checkpoint()

    def _done(self, request_id: RequestId, answer: JSONObject | None) -> Awaitable[None] | None:
        # Over: no longer in flight, so that with nothing else in flight the pipe is
        # quiet and the answer is written in the request's task, not the writer's. The
        # id may be in use again from now on. The request waits for room for its answer
        # in the sink, as backpressure.
        del self._scopes[request_id]
        if answer is None:
            return None
        if self._sink.closed:
            _log.debug("the pipe closed before request %s was answered", describe(request_id))
            return None
        return self._sink.send(Outbound(_RESPONSE, answer, request_id))

    async def _refuse(self, refusal: Outbound) -> None:
        try:
            await self._sink.send(refusal)
        except trio.ClosedResourceError:
            _log.debug("the pipe closed before a refusal was sent")
