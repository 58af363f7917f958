"""The HTTP front of ``mcpactor dev``: the address clients use, in front of each child.

``dev`` listens on the address it was given and forwards every request to the child of
the current generation, which serves on a listening socket of its own (one per start).
Because the front stays while children come and go:

- A request that arrives while the server starts again waits until it serves (at most
  ``START_WAIT`` seconds). While the edited server cannot start, requests are answered
  at once: 503 with a JSON-RPC error (for each request the body carried) whose message
  names the file and line, its ``data.report`` the whole report. A GET stream of a known
  session is held open instead (an SSE comment says why) and ends when the next start
  begins, so clients reconnect rather than give up on it.
- A session outlives the child that opened it. The front remembers each session's
  ``initialize`` (its body and headers) and what followed (``Opening``: whether
  ``notifications/initialized`` did, the log level, the resource subscriptions). The
  first request of that session to reach a newer child replays them there and from then
  on sends the new child's session id in place of the client's, which the client keeps:
  it never has to initialize again. A session the new child refuses is 404,
  as the protocol says for a session that is gone, and the client starts a new one.
- SSE event ids carry the generation (``N/id``): a ``Last-Event-ID`` from an earlier
  child is dropped (that child's streams are gone), one of the current child is passed
  on as the child wrote it.
- A request the child stopped before answering — the stream broke, or ended with the
  child replaced — gets an error, not silence.

Stateless requests (2026-07-28) carry no session and are forwarded as they are. A
WebSocket (each connection is its session) is relayed message by message by
``_dev_messages``, which replays ``initialize`` on the new child the same way.
"""

from __future__ import annotations

import collections
import ssl
from collections.abc import Awaitable, Callable, Sequence
from typing import TYPE_CHECKING, Any, Final, final

import attrs
import trio

from .._exceptions import INVALID_REQUEST, RemoteProtocolError, TransportBroken
from ..protocol import (
    Batch,
    Body,
    ErrorResponse,
    JSONValue,
    Notification,
    Request,
    RequestId,
    classify_body,
    decode,
    owed_ids,
    serialize,
)
from ._dev_child import START_WAIT, STOPPED, Children, Failure, Generation, Opening
from ._dev_events import EventRelay

if TYPE_CHECKING:
    # The http extra's (h11): imported where a child is first reached.
    from ..client import HttpPool, HttpResponse

__all__ = ["EventRelay", "HttpFront"]

Scope = dict[str, Any]
Receive = Callable[[], Awaitable[dict[str, Any]]]
Send = Callable[[dict[str, Any]], Awaitable[None]]

#: sessions remembered for replay at most (the least recently used is forgotten)
_MAX_SESSIONS: Final = 1000
#: times a request that never reached a child is sent to the next one
_ATTEMPTS: Final = 3
#: the longest comment of a held GET stream
_MAX_COMMENT: Final = 500
# Hop-by-hop headers (RFC 9110 §7.6.1) and those the front sets itself on each side.
_NOT_FORWARDED: Final = frozenset(
    {
        "connection",
        "content-length",
        "expect",
        "keep-alive",
        "proxy-connection",
        "te",
        "trailer",
        "transfer-encoding",
        "upgrade",
    }
)
# What the front's own HTTP server writes on each response.
_NOT_RELAYED: Final = _NOT_FORWARDED | {"date", "server"}
_JSON: Final = [(b"content-type", b"application/json")]


@attrs.define(eq=False)
class _Session:
    # A Streamable HTTP session as the client knows it, and where it lives now.
    client_id: str
    child_id: str
    generation: int
    #: the initialize request as the client sent it: where, its headers and body
    target: str
    headers: list[tuple[str, str]]
    body: bytes
    #: what followed it, that a new child is told too
    opening: Opening = attrs.field(factory=Opening)
    lock: trio.Lock = attrs.field(factory=trio.Lock)


@attrs.frozen
class _Request:
    method: str
    #: path and query, as sent in the request line
    target: str
    headers: list[tuple[str, str]]
    body: bytes

    def header(self, name: str) -> str | None:
        for key, value in self.headers:
            if key == name:
                return value
        return None


class _NotSent(Exception):
    # The child went away before the request was written: another child may take it.
    pass


@final
class HttpFront:
    """The ASGI app ``mcpactor dev`` serves: each request forwarded to the current child."""

    def __init__(
        self,
        children: Children,
        *,
        max_message_bytes: int,
        child_ssl: ssl.SSLContext | None = None,
        on_websocket: Callable[[Scope, Receive, Send], Awaitable[None]] | None = None,
    ) -> None:
        self.children = children
        #: the most read of one answer or event of a child (its own limit, and a margin)
        self.limit = max_message_bytes + 64 * 1024
        self.child_ssl = child_ssl
        self.on_websocket = on_websocket
        self.sessions: collections.OrderedDict[str, _Session] = collections.OrderedDict()
        self._pools: dict[int, HttpPool] = {}

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        kind = scope["type"]
        if kind == "http":
            await self._http(scope, receive, send)
        elif kind == "websocket":
            if self.on_websocket is not None:
                await self.on_websocket(scope, receive, send)
            else:
                await receive()
                await send({"type": "websocket.close", "code": 1011})

    async def aclose(self) -> None:
        """Close the connections kept to children."""
        pools, self._pools = self._pools, {}
        for pool in pools.values():
            await pool.aclose()

    # --- one request -------------------------------------------------------------------

    async def _http(self, scope: Scope, receive: Receive, send: Send) -> None:
        body = await _read_body(receive, self.limit)
        if body is None:
            return  # the client left (the HTTP server holds the body to its own limit)
        query = scope.get("query_string", b"")
        raw_path = scope.get("raw_path") or scope["path"].encode()
        request = _Request(
            scope["method"],
            (raw_path + (b"?" + query if query else b"")).decode("latin-1"),
            [
                (name.decode("latin-1"), value.decode("latin-1"))
                for name, value in scope["headers"]
            ],
            body,
        )
        for _ in range(_ATTEMPTS):
            generation = None
            with trio.move_on_after(START_WAIT):
                generation = await self.children.settled()
            if generation is None:
                waited = Failure((f"the server has not started within {START_WAIT:.0f} s",))
                await _refuse(send, request, waited)
                return
            if generation.failure is not None:
                await self._broken(generation, generation.failure, request, receive, send)
                return
            try:
                await self._forward(generation, request, receive, send)
            except _NotSent:
                # Its child is going away: the next one takes the request.
                with trio.move_on_after(START_WAIT):
                    await generation.ended.wait()
                continue
            return
        await _refuse(send, request, STOPPED)

    async def _broken(
        self,
        generation: Generation,
        failure: Failure,
        request: _Request,
        receive: Receive,
        send: Send,
    ) -> None:
        # No server: say why, at once.
        client_id = request.header("mcp-session-id")
        session = self.sessions.get(client_id) if client_id is not None else None
        if session is not None and request.method == "GET" and not self.children.closed:
            await _hold(generation, failure, receive, send)
            return
        if session is not None and request.method == "DELETE":
            self._forget(session)
            await _reply(send, 204, b"")
            return
        await _refuse(send, request, failure)

    async def _forward(
        self, generation: Generation, request: _Request, receive: Receive, send: Send
    ) -> None:
        assert generation.url is not None
        headers = [(name, value) for name, value in request.headers if name not in _NOT_FORWARDED]
        client_id = request.header("mcp-session-id")
        session = self.sessions.get(client_id) if client_id is not None else None
        if session is not None:
            self.sessions.move_to_end(session.client_id)
            if session.generation != generation.number:
                if request.method == "DELETE":
                    # Its child is gone, and the session with it: nothing to replay.
                    self._forget(session)
                    await _reply(send, 204, b"")
                    return
                why = await self._reopen(session, generation, request)
                if why is not None:
                    self._forget(session)
                    gone = ErrorResponse(
                        None,
                        INVALID_REQUEST,
                        "session not found: the server restarted and did not take the "
                        f"session again ({why})",
                    )
                    await _reply(send, 404, _json(gone.to_json()), _JSON)
                    return
            headers = _replaced(headers, "mcp-session-id", session.child_id)
        last_event_id = request.header("last-event-id")
        if last_event_id is not None:
            tag, slash, own = last_event_id.partition("/")
            if slash and tag == str(generation.number):
                headers = _replaced(headers, "last-event-id", own)
            elif slash and tag.isdigit():
                # An event of an earlier child: its streams went with it.
                headers = _replaced(headers, "last-event-id", None)
        body = _classify(request.body) if request.method == "POST" else None
        owed = owed_ids(body) if body is not None else ()
        sent = False

        def on_sent() -> None:
            nonlocal sent
            sent = True

        downstream = _Downstream(send)
        url = attrs.evolve(generation.url, target=request.target)
        try:
            pool = await self._pool(generation)
            async with pool.request(
                request.method, url, headers, request.body, sent=on_sent
            ) as response:
                await self._relay(
                    generation, session, request, body, owed, response, receive, downstream
                )
        except TransportBroken:
            if not sent and not downstream.started:
                raise _NotSent from None
            if not downstream.started:
                await _refuse(send, request, STOPPED)

    async def _relay(
        self,
        generation: Generation,
        session: _Session | None,
        request: _Request,
        body: Body | None,
        owed: tuple[RequestId, ...],
        response: HttpResponse,
        receive: Receive,
        send: _Downstream,
    ) -> None:
        status = response.status
        headers: list[tuple[bytes, bytes]] = []
        for name, value in response.headers.items():
            if name in _NOT_RELAYED:
                continue
            if name == "mcp-session-id":
                if session is not None:
                    value = session.client_id
                elif status == 200 and _opens_session(body, request):
                    session = self._remember(value, generation, request)
            headers.append((name.encode("latin-1"), value.encode("latin-1")))
        if session is not None:
            if status == 404 or (request.method == "DELETE" and 200 <= status < 300):
                self._forget(session)  # ended, by the child or by the client
            elif 200 <= status < 300 and body is not None:
                session.opening.note(body)
        if response.content_type == "text/event-stream":
            await self._relay_events(generation, owed, response, status, headers, receive, send)
        elif owed:
            # A JSON answer is read whole: a child that stops half way through it gets
            # its requests an error rather than a cut body.
            data = await response.read(self.limit)
            await _reply(send, status, data, headers)
        else:
            await send({"type": "http.response.start", "status": status, "headers": headers})
            while chunk := await response.receive_some():
                await send({"type": "http.response.body", "body": chunk, "more_body": True})
            await send({"type": "http.response.body", "body": b""})

    async def _relay_events(
        self,
        generation: Generation,
        owed: tuple[RequestId, ...],
        response: HttpResponse,
        status: int,
        headers: list[tuple[bytes, bytes]],
        receive: Receive,
        send: _Downstream,
    ) -> None:
        events = EventRelay(generation.number, owed, self.limit)
        await send({"type": "http.response.start", "status": status, "headers": headers})
        async with trio.open_nursery() as nursery:
            # A client that leaves closes the stream to the child too.
            nursery.start_soon(_cancel_on_disconnect, receive, nursery.cancel_scope)
            broken = False
            with trio.CancelScope() as reading:
                if not owed:
                    # A stream that answers nothing (GET) ends once a newer child is
                    # begun: the client listens again, and reaches that one.
                    nursery.start_soon(_cancel_when_set, generation.superseded, reading)
                try:
                    while chunk := await response.receive_some():
                        data = events.feed(chunk)
                        if data:
                            await send(
                                {"type": "http.response.body", "body": data, "more_body": True}
                            )
                except (TransportBroken, RemoteProtocolError):
                    broken = True
            # Unanswered, from a child that is gone: nowhere to resume, so say so.
            gone = broken or generation.superseded.is_set() or generation.failure is not None
            tail = events.unanswered(STOPPED) if gone else b""
            await send({"type": "http.response.body", "body": tail})
            nursery.cancel_scope.cancel()

    # --- sessions ----------------------------------------------------------------------

    def _remember(self, child_id: str, generation: Generation, request: _Request) -> _Session:
        headers = [
            (name, value)
            for name, value in request.headers
            if name not in _NOT_FORWARDED and name not in ("mcp-session-id", "last-event-id")
        ]
        session = _Session(
            client_id=child_id,
            child_id=child_id,
            generation=generation.number,
            target=request.target,
            headers=headers,
            body=request.body,
        )
        self.sessions[child_id] = session
        while len(self.sessions) > _MAX_SESSIONS:
            self.sessions.popitem(last=False)
        return session

    def _forget(self, session: _Session) -> None:
        if self.sessions.get(session.client_id) is session:
            del self.sessions[session.client_id]

    async def _reopen(
        self, session: _Session, generation: Generation, request: _Request
    ) -> str | None:
        # Replay the session's opening on the child of ``generation``; None once done,
        # else why not.
        async with session.lock:
            if session.generation == generation.number:
                return None  # another request of the session did it meanwhile
            assert generation.url is not None
            pool = await self._pool(generation)
            url = attrs.evolve(generation.url, target=session.target)
            try:
                async with pool.request("POST", url, session.headers, session.body) as response:
                    child_id = response.headers.get("mcp-session-id")
                    await response.read(self.limit)
                    if response.status != 200 or child_id is None:
                        return f"it answered initialize with HTTP {response.status}"
                headers = _replaced(session.headers, "mcp-session-id", child_id)
                version = request.header("mcp-protocol-version")
                if version is not None:
                    headers = _replaced(headers, "mcp-protocol-version", version)
                prefix = f"mcpactor-dev/{generation.number}"
                for message in session.opening.after_initialize(prefix):
                    async with pool.request(
                        "POST", url, headers, _json(message.to_json())
                    ) as response:
                        await response.read(self.limit)
                    # What it set since is set again where it can be (a resource the
                    # edit removed stays unsubscribed); without initialized, no session.
                    if type(message) is Notification and response.status not in (200, 202):
                        status = response.status
                        return f"it answered {message.method} with HTTP {status}"
            except TransportBroken as exc:
                return str(exc)
            session.child_id = child_id
            session.generation = generation.number
            return None

    async def _pool(self, generation: Generation) -> HttpPool:
        # One pool per child: a connection never outlives the child it went to.
        pool = self._pools.get(generation.number)
        if pool is None:
            from ..client import HttpPool

            pool = self._pools[generation.number] = HttpPool(ssl_context=self.child_ssl)
            for number in [number for number in self._pools if number < generation.number]:
                # Busy connections close when their response is done.
                await self._pools.pop(number).aclose()
        return pool


class _Downstream:
    # The ASGI ``send`` of the client's response, remembering whether it has begun.
    __slots__ = ("send", "started")

    def __init__(self, send: Send) -> None:
        self.send = send
        self.started = False

    async def __call__(self, message: dict[str, Any]) -> None:
        self.started = True
        await self.send(message)


def _classify(data: bytes) -> Body:
    try:
        return classify_body(decode(data))
    except RemoteProtocolError as exc:
        return exc


def _opens_session(body: Body | None, request: _Request) -> bool:
    return (
        type(body) is Request
        and body.method == "initialize"
        and request.header("mcp-session-id") is None
    )


def _replaced(
    headers: list[tuple[str, str]], name: str, value: str | None
) -> list[tuple[str, str]]:
    kept = [(key, old) for key, old in headers if key != name]
    return kept if value is None else [*kept, (name, value)]


def _json(value: JSONValue) -> bytes:
    data = serialize(value)
    assert data is not None  # error responses of ours, ids the client's
    return data


async def _refuse(send: Send, request: _Request, failure: Failure) -> None:
    # 503, with an error for each request the body carried (or one without an id).
    body = _classify(request.body) if request.method == "POST" else None
    owed = owed_ids(body) if body is not None else ()
    errors = [failure.error(request_id).to_json() for request_id in owed]
    payload: JSONValue
    if type(body) is Batch and errors:
        payload = errors
    else:
        payload = errors[0] if errors else failure.error(None).to_json()
    await _reply(send, 503, _json(payload), _JSON)


async def _hold(generation: Generation, failure: Failure, receive: Receive, send: Send) -> None:
    # A GET stream while no server runs: open, quiet, until the next start begins.
    comment = failure.summary.encode("utf-8", "replace")[:_MAX_COMMENT]
    comment = comment.replace(b"\r", b" ").replace(b"\n", b" ")
    await send(
        {
            "type": "http.response.start",
            "status": 200,
            "headers": [(b"content-type", b"text/event-stream"), (b"cache-control", b"no-cache")],
        }
    )
    async with trio.open_nursery() as nursery:
        nursery.start_soon(_cancel_on_disconnect, receive, nursery.cancel_scope)
        await send(
            {"type": "http.response.body", "body": b": " + comment + b"\n\n", "more_body": True}
        )
        await generation.superseded.wait()
        await send({"type": "http.response.body", "body": b""})
        nursery.cancel_scope.cancel()


async def _reply(
    send: Send, status: int, body: bytes, headers: Sequence[tuple[bytes, bytes]] = ()
) -> None:
    # A complete response (a 204 has no Content-Length at all, RFC 9110 §8.6).
    head = [*headers] if status == 204 else [(b"content-length", b"%d" % len(body)), *headers]
    await send({"type": "http.response.start", "status": status, "headers": head})
    await send({"type": "http.response.body", "body": body})


async def _read_body(receive: Receive, limit: int) -> bytes | None:
    chunks = []
    size = 0
    while True:
        message = await receive()
        if message["type"] != "http.request":
            return None
        chunk = message.get("body", b"")
        size += len(chunk)
        if size > limit:
            return None
        chunks.append(chunk)
        if not message.get("more_body", False):
            return b"".join(chunks)


async def _cancel_when_set(event: trio.Event, scope: trio.CancelScope) -> None:
    await event.wait()
    scope.cancel()


async def _cancel_on_disconnect(receive: Receive, scope: trio.CancelScope) -> None:
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            scope.cancel()
            return
