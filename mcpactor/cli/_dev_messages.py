"""The message fronts of ``mcpactor dev``: stdio, and each WebSocket, in front of each child.

Over stdio and over a WebSocket the client's connection is its session, and it stays
with ``dev`` while children come and go: each message goes to the child of the current
generation through a *link* (the child's stdin and stdout, or a WebSocket to the child),
opened when the first message after a start needs it. Opening a link replays on the new
child what opened the session and what it set since — the client's ``initialize``,
``notifications/initialized``, its log level and resource subscriptions (``Opening``),
each request under an id of the front's own, whose answer the client never sees — so
the client goes on as if nothing had happened.

While no child can serve, each request is answered at once with the child's report (the
file and line of the error). A request the child stopped before answering is answered
with an error when its link ends. An answer to a request of an earlier child is dropped:
that child is gone.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import TYPE_CHECKING, Any, Final, Protocol, final

import attrs
import trio

from .._exceptions import RemoteProtocolError
from ..protocol import (
    Body,
    ErrorResponse,
    FrameTooLong,
    LineFramer,
    Request,
    RequestId,
    Response,
    classify_body,
    decode,
    error_message_for,
    owed_ids,
    serialize,
)
from ._dev_child import START_WAIT, STOPPED, Children, Failure, Generation, Opening

if TYPE_CHECKING:
    import trio_websocket

__all__ = ["MessageFront", "serve_stdio_front", "serve_websocket_front"]

#: seconds a link's end waits for its child's exit to be known (to tell why it ended)
_EXIT_WAIT: Final = 10.0
#: seconds a WebSocket to a child is given for its closing handshake
_CLOSE_WAIT: Final = 1.0
#: frames queued for the client's side at most
_QUEUE: Final = 64
_READ_SIZE: Final = 65536


class Link(Protocol):
    """One generation's end of the client's message stream."""

    async def send(self, frame: bytes) -> None:
        """Send one message to the child.

        Raises:
            trio.BrokenResourceError: the child's side is gone.
        """
        ...

    def frames(self) -> AsyncIterator[bytes]:
        """The child's messages, until its side ends."""
        ...

    async def close_sending(self) -> None:
        """Tell the child that no more messages come (the client is done)."""
        ...


@attrs.define(eq=False)
class _Attached:
    # A link in use, and what is due on it.
    link: Link
    generation: Generation
    #: requests sent to the child, not answered yet
    pending: set[RequestId] = attrs.field(factory=set)
    #: requests of the child to the client, not answered yet
    asked: set[RequestId] = attrs.field(factory=set)
    #: the id of the replayed initialize, and of every replayed request: answers the
    #: client does not see
    replay_id: str | None = None
    replayed: trio.Event = attrs.field(factory=trio.Event)
    swallowed: set[RequestId] = attrs.field(factory=set)
    #: the child's side ended; ``failure`` says why
    closed: bool = False
    failure: Failure = STOPPED


@final
class MessageFront:
    """One client's message stream, in front of whichever child serves now."""

    def __init__(
        self,
        children: Children,
        connect: Callable[[Generation], Awaitable[Link | None]],
        to_client: Callable[[bytes], Awaitable[None]],
        nursery: trio.Nursery,
    ) -> None:
        self.children = children
        self._connect = connect
        self._to_client = to_client
        self._nursery = nursery
        #: the client's initialize and what followed: what a new child is told before
        #: anything else
        self.initialize: Request | None = None
        self.opening = Opening()
        self.attached: _Attached | None = None
        self._attaching = trio.Lock()
        #: the links whose child's side has not ended yet
        self.relays = 0
        self._relays_done = trio.Event()
        self._relays_done.set()

    async def from_client(self, frame: bytes) -> None:
        """Pass on one message of the client, or answer it if no child can."""
        body = _classify(frame)
        owed = owed_ids(body)
        target = await self.current()
        if isinstance(target, Failure):
            await self._refuse(body, owed, target)
            return
        kind = type(body)
        if kind is Request and body.method == "initialize":  # type: ignore[union-attr]
            assert isinstance(body, Request)
            self.initialize, self.opening = body, Opening()
        elif kind is Response or kind is ErrorResponse:
            answered = body.id  # type: ignore[union-attr]
            if answered not in target.asked:
                return  # the child that asked is gone
            target.asked.discard(answered)
        self.opening.note(body)
        target.pending.update(owed)
        with contextlib.suppress(trio.BrokenResourceError, trio.ClosedResourceError):
            await target.link.send(frame)
        if target.closed:
            # Its relay has told the client what it owed already: these came after.
            late = [request_id for request_id in owed if request_id in target.pending]
            target.pending.difference_update(late)
            await self._answer(late, target.failure)

    async def end_input(self) -> None:
        """The client is done: tell the child, and wait for what it still sends."""
        attached = self.attached
        if attached is not None and not attached.closed:
            await _close(attached.link)
        await self._relays_done.wait()

    async def current(self) -> _Attached | Failure:
        """The link to the current child (opened, and replayed on, if need be), or why none."""
        with trio.move_on_after(START_WAIT):
            generation = await self.children.settled()
            if generation.failure is not None:
                return generation.failure
            attached = self.attached
            if attached is None or attached.generation is not generation:
                attached = await self._attach(generation)
                if attached is None:
                    return generation.failure or STOPPED
            if attached.closed:
                return attached.failure
            return attached
        return Failure((f"the server has not started within {START_WAIT:.0f} s",))

    async def _attach(self, generation: Generation) -> _Attached | None:
        async with self._attaching:
            attached = self.attached
            if attached is not None and attached.generation is generation:
                return attached
            link = await self._connect(generation)
            if link is None:
                return None
            previous = self.attached
            if previous is not None and not previous.closed:
                # Its child is stopping or gone: what it still owes is told when its
                # side ends, as it now does.
                await _close(previous.link)
            attached = _Attached(link, generation)
            self.relays += 1
            self._relays_done = trio.Event()
            self._nursery.start_soon(self._relay, attached)
            if self.initialize is not None:
                await self._replay(attached, self.initialize)
            self.attached = attached
            return attached

    async def _replay(self, attached: _Attached, initialize: Request) -> None:
        # The session's opening, again, on a new child; the answers are the front's.
        prefix = f"mcpactor-dev/{attached.generation.number}"
        attached.replay_id = prefix
        attached.swallowed.add(prefix)
        with contextlib.suppress(trio.BrokenResourceError, trio.ClosedResourceError):
            await attached.link.send(
                _frame(Request(prefix, "initialize", initialize.params).to_json())
            )
            with trio.move_on_after(START_WAIT):
                await attached.replayed.wait()
            for message in self.opening.after_initialize(prefix):
                if attached.closed:
                    return
                if type(message) is Request:
                    attached.swallowed.add(message.id)
                await attached.link.send(_frame(message.to_json()))

    async def _relay(self, attached: _Attached) -> None:
        # The child's messages to the client, until its side ends.
        try:
            async for frame in attached.link.frames():
                if self._note(attached, frame):
                    await self._to_client(frame)
        finally:
            generation = attached.generation
            # Why it ended: its exit says, once known (a child that failed to start has
            # a report naming the file and line).
            with trio.move_on_after(_EXIT_WAIT):
                await generation.ended.wait()
            attached.failure = generation.failure or STOPPED
            attached.closed = True
            attached.replayed.set()
            owed = sorted(attached.pending, key=str)
            attached.pending.clear()
            with contextlib.suppress(trio.BrokenResourceError, trio.ClosedResourceError):
                await self._answer(owed, attached.failure)
            self.relays -= 1
            if not self.relays:
                self._relays_done.set()

    def _note(self, attached: _Attached, frame: bytes) -> bool:
        # Keep track of what the child answers and asks; False: not for the client.
        try:
            value: Any = decode(frame)
        except RemoteProtocolError:
            return True
        for item in value if type(value) is list else [value]:
            if type(item) is not dict:
                continue
            request_id = item.get("id")
            if "method" in item:
                if type(request_id) is str or type(request_id) is int:
                    attached.asked.add(request_id)
            elif type(request_id) is str and request_id in attached.swallowed:
                attached.swallowed.discard(request_id)
                if request_id == attached.replay_id:
                    attached.replayed.set()
                return False
            elif type(request_id) is str or type(request_id) is int:
                attached.pending.discard(request_id)
        return True

    async def _refuse(self, body: Body, owed: tuple[RequestId, ...], failure: Failure) -> None:
        if type(body) is RemoteProtocolError and not owed:
            await self._to_client(_frame(error_message_for(body)))
            return
        await self._answer(owed, failure)

    async def _answer(
        self, owed: list[RequestId] | tuple[RequestId, ...], failure: Failure
    ) -> None:
        for request_id in owed:
            await self._to_client(_frame(failure.error(request_id).to_json()))


async def _close(link: Link) -> None:
    with contextlib.suppress(trio.BrokenResourceError, trio.ClosedResourceError):
        await link.close_sending()


def _frame(value: Any) -> bytes:
    data = serialize(value)
    assert data is not None  # messages of ours, ids the client's
    return data


def _classify(frame: bytes) -> Body:
    try:
        return classify_body(decode(frame))
    except RemoteProtocolError as exc:
        return exc


# --- stdio -------------------------------------------------------------------------------


@final
class _PipeLink:
    # A stdio child's stdin and stdout.

    def __init__(self, process: trio.Process, max_message_bytes: int) -> None:
        assert process.stdin is not None
        assert process.stdout is not None
        self._stdin = process.stdin
        self._stdout = process.stdout
        self._limit = max_message_bytes

    async def send(self, frame: bytes) -> None:
        await self._stdin.send_all(frame + b"\n")

    async def frames(self) -> AsyncIterator[bytes]:
        framer = LineFramer(self._limit)
        try:
            with contextlib.suppress(trio.BrokenResourceError, trio.ClosedResourceError):
                while chunk := await self._stdout.receive_some(_READ_SIZE):
                    for frame in framer.feed(chunk):
                        if type(frame) is bytes:
                            yield frame
        finally:
            with trio.CancelScope(shield=True):
                await self._stdout.aclose()

    async def close_sending(self) -> None:
        await self._stdin.aclose()


async def serve_stdio_front(
    children: Children,
    *,
    max_message_bytes: int,
    task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED,
) -> None:
    """Serve this process's stdin/stdout to the children until the input ends.

    Returns once the child has sent all it had to send after the input ended.
    """

    async def connect(generation: Generation) -> Link | None:
        process = generation.process
        if process is None or process.stdin is None or process.stdout is None:
            return None
        generation.claimed = True
        return _PipeLink(process, max_message_bytes)

    send, queue = trio.open_memory_channel[bytes](_QUEUE)
    stdin = trio.lowlevel.FdStream(os.dup(0))
    stdout = trio.lowlevel.FdStream(os.dup(1))
    async with stdin, stdout, trio.open_nursery() as nursery:
        nursery.start_soon(_write_lines, stdout, queue)
        async with send, trio.open_nursery() as relays:
            front = MessageFront(children, connect, send.send, relays)
            task_status.started()
            framer = LineFramer(max_message_bytes)
            with contextlib.suppress(trio.BrokenResourceError, trio.ClosedResourceError):
                while chunk := await stdin.receive_some(_READ_SIZE):
                    for frame in framer.feed(chunk):
                        await _take(front, frame, send)
            last = framer.flush()
            if last is not None:
                await _take(front, last, send)
            await front.end_input()


async def _take(
    front: MessageFront, frame: bytes | FrameTooLong, send: trio.MemorySendChannel[bytes]
) -> None:
    if type(frame) is bytes:
        await front.from_client(frame)
    else:
        assert isinstance(frame, FrameTooLong)
        await send.send(_frame(error_message_for(frame.to_exception())))


async def _write_lines(
    stdout: trio.abc.SendStream, queue: trio.MemoryReceiveChannel[bytes]
) -> None:
    async with queue:
        with contextlib.suppress(trio.BrokenResourceError, trio.ClosedResourceError):
            async for frame in queue:
                await stdout.send_all(frame + b"\n")
        # A client that stopped reading: what is left has nowhere to go.
        async for _ in queue:
            pass


# --- WebSocket ---------------------------------------------------------------------------

#: the subprotocol of MCP over WebSocket
_SUBPROTOCOL: Final = "mcp"
# Headers of the client's handshake not passed on to the child's: the handshake's own.
_HANDSHAKE: Final = frozenset(
    {"connection", "host", "upgrade", "content-length", "transfer-encoding"}
)


@final
class _SocketLink:
    # A WebSocket to one child.

    def __init__(self, socket: trio_websocket.WebSocketConnection) -> None:
        self._socket = socket

    async def send(self, frame: bytes) -> None:
        import trio_websocket

        try:
            await self._socket.send_message(frame.decode("utf-8", "replace"))
        except trio_websocket.ConnectionClosed as exc:
            raise trio.BrokenResourceError("the child closed the WebSocket") from exc

    async def frames(self) -> AsyncIterator[bytes]:
        import trio_websocket

        while True:
            try:
                message = await self._socket.get_message()
            except trio_websocket.ConnectionClosed:
                return
            yield message.encode() if isinstance(message, str) else message

    async def close_sending(self) -> None:
        # The closing handshake, briefly (cancelled, it still closes the connection).
        with trio.move_on_after(_CLOSE_WAIT):
            await self._socket.aclose()


async def serve_websocket_front(
    children: Children,
    scope: dict[str, Any],
    receive: Callable[[], Awaitable[dict[str, Any]]],
    send: Callable[[dict[str, Any]], Awaitable[None]],
    *,
    max_message_bytes: int,
    child_ssl: Any = None,
) -> None:
    """Serve one WebSocket of a client (an ASGI connection) to the children."""
    connect_message = await receive()
    if connect_message["type"] != "websocket.connect":
        return
    queue_send, queue = trio.open_memory_channel[bytes](_QUEUE)

    async def to_client(frame: bytes) -> None:
        await queue_send.send(frame)

    async with trio.open_nursery() as sockets, trio.open_nursery() as relays:
        dialer = _Dialer(scope, sockets, max_message_bytes=max_message_bytes, child_ssl=child_ssl)
        front = MessageFront(children, dialer.connect, to_client, relays)
        # A child there now decides the handshake (its Host, Origin and token checks);
        # with none, the client is let in and told why at each request.
        await front.current()
        if dialer.refused:
            await send({"type": "websocket.close", "code": 1008})
            sockets.cancel_scope.cancel()
            return
        await send(
            {
                "type": "websocket.accept",
                "subprotocol": _SUBPROTOCOL if _SUBPROTOCOL in dialer.offered else None,
            }
        )
        relays.start_soon(_write_messages, send, queue)
        async with queue_send:
            while True:
                message = await receive()
                if message["type"] != "websocket.receive":
                    break
                text = message.get("text")
                frame = text.encode() if text is not None else message.get("bytes") or b""
                await front.from_client(frame)
            attached = front.attached
            if attached is not None and not attached.closed:
                await _close(attached.link)
        relays.cancel_scope.cancel()
        sockets.cancel_scope.cancel()


@final
class _Dialer:
    # Opens the client's WebSocket on a child as the client asked for it: the same
    # target, subprotocols and headers (but the handshake's own), in ``sockets``.

    def __init__(
        self,
        scope: dict[str, Any],
        sockets: trio.Nursery,
        *,
        max_message_bytes: int,
        child_ssl: Any,
    ) -> None:
        query = scope.get("query_string", b"")
        target = scope.get("raw_path") or scope["path"].encode()
        self._target = target + (b"?" + query if query else b"")
        self.offered = list(scope.get("subprotocols", ()))
        self._headers = [
            (name, value)
            for name, value in scope["headers"]
            if name.decode("latin-1").lower() not in _HANDSHAKE
            and not name.lower().startswith(b"sec-websocket-")
        ]
        self._sockets = sockets
        self._max_message_bytes = max_message_bytes
        self._child_ssl = child_ssl
        #: a child refused the handshake (its answer is the client's)
        self.refused = False

    async def connect(self, generation: Generation) -> Link | None:
        import trio_websocket

        url = generation.url
        assert url is not None
        scheme = "wss" if url.scheme == "https" else "ws"
        try:
            socket = await trio_websocket.connect_websocket_url(
                self._sockets,
                f"{scheme}://{url.authority}{self._target.decode('latin-1')}",
                ssl_context=self._child_ssl,
                subprotocols=self.offered,
                extra_headers=self._headers,
                max_message_size=self._max_message_bytes,
            )
        except trio_websocket.HandshakeError:
            self.refused = True
            return None
        except OSError:
            return None
        return _SocketLink(socket)


async def _write_messages(
    send: Callable[[dict[str, Any]], Awaitable[None]], queue: trio.MemoryReceiveChannel[bytes]
) -> None:
    async with queue:
        async for frame in queue:
            await send({"type": "websocket.send", "text": frame.decode("utf-8", "replace")})
