"""A small HTTP/1.1 server on loopback that serves what a verifier fetches.

Each test sets the answer of a path (a JSON document, a status, or a handler that may
wait forever) and reads back what was asked of it: the requests per path, their headers
and bodies. One request per connection, as the verifiers' fetches make them.
"""

from __future__ import annotations

import functools
import json
from collections import Counter
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Any

import attrs
import h11
import trio

MAX_REQUEST = 64 * 1024


@attrs.frozen
class Request:
    """One request the server received."""

    method: str
    path: str
    headers: dict[str, str]
    body: bytes


@attrs.frozen
class Answer:
    """What the server sends for a path."""

    status: int = 200
    body: bytes = b""
    content_type: str = "application/json"


Handler = Callable[[Request], Awaitable[Answer]]


def json_answer(document: Any, status: int = 200) -> Answer:
    """A JSON answer."""
    return Answer(status, json.dumps(document).encode())


@attrs.define
class DocumentServer:
    """The routes of a running server and what it was asked."""

    url: str = ""
    routes: dict[str, Answer | Handler] = attrs.field(factory=dict)
    requests: list[Request] = attrs.field(factory=list)
    hits: Counter[str] = attrs.field(factory=Counter)

    def serve(self, path: str, answer: Answer | Handler | Any) -> None:
        """Answer ``path`` with ``answer`` (a JSON-able document is sent as JSON)."""
        if not isinstance(answer, Answer) and not callable(answer):
            answer = json_answer(answer)
        self.routes[path] = answer

    async def _answer(self, request: Request) -> Answer:
        self.requests.append(request)
        self.hits[request.path] += 1
        route = self.routes.get(request.path)
        if route is None:
            return Answer(404, b'{"error": "not found"}')
        if isinstance(route, Answer):
            return route
        return await route(request)

    async def _connection(self, stream: trio.SocketStream) -> None:
        try:
            await self._exchange(stream)
        except (h11.RemoteProtocolError, trio.BrokenResourceError):
            # a client that gave up (a timeout test) or sent something broken
            return

    async def _exchange(self, stream: trio.SocketStream) -> None:
        connection = h11.Connection(h11.SERVER, max_incomplete_event_size=MAX_REQUEST)
        head: h11.Request | None = None
        body = bytearray()
        async with stream:
            while True:
                event = connection.next_event()
                if event is h11.NEED_DATA:
                    data = await stream.receive_some(65536)
                    if not data:
                        return
                    connection.receive_data(data)
                elif isinstance(event, h11.Request):
                    head = event
                elif isinstance(event, h11.Data):
                    body += event.data
                elif isinstance(event, h11.EndOfMessage):
                    break
                else:
                    return
            assert head is not None
            request = Request(
                method=head.method.decode(),
                path=head.target.decode().split("?", 1)[0],
                headers={k.decode().lower(): v.decode() for k, v in head.headers},
                body=bytes(body),
            )
            answer = await self._answer(request)
            headers = [
                ("content-type", answer.content_type),
                ("content-length", str(len(answer.body))),
                ("connection", "close"),
            ]
            out = connection.send(h11.Response(status_code=answer.status, headers=headers))
            out += connection.send(h11.Data(data=answer.body))
            out += connection.send(h11.EndOfMessage())
            await stream.send_all(out)


@asynccontextmanager
async def serving_documents() -> AsyncIterator[DocumentServer]:
    """A DocumentServer listening on a free loopback port until the block ends."""
    server = DocumentServer()
    async with trio.open_nursery() as nursery:
        serve = functools.partial(trio.serve_tcp, host="127.0.0.1")
        listeners = await nursery.start(serve, server._connection, 0)
        port = listeners[0].socket.getsockname()[1]
        server.url = f"http://127.0.0.1:{port}"
        yield server
        nursery.cancel_scope.cancel()


async def unused_port() -> int:
    """A loopback port nothing listens on (bound, then closed)."""
    sock = trio.socket.socket()
    await sock.bind(("127.0.0.1", 0))
    port: int = sock.getsockname()[1]
    sock.close()
    return port
