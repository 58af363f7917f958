"""The framework-free ceiling on HTTP: a bare trio HTTP/1.1 keep-alive server.

    raw_http.py http HOST PORT [--sse] [--stateless] [--actors]

One task per connection reads a request head and its Content-Length body and answers
with canned.CannedMcp, as application/json or, with --sse, as one text/event-stream event.

With --actors, the same answers in the shape mcpactor's design requires, and nothing
else: the connection hands each request to its session's actor (a task per session id,
through its inbox, a memory channel), which serves it in a task of its own inside a
cancel scope; the answer comes back to the connection through the response's sink (a
memory channel) and the connection writes it. What this costs over the plain server is
the floor of that shape.
"""

from __future__ import annotations

import contextlib
import functools
import sys
from typing import Any

import trio
from canned import JSON_CONTENT_TYPE, SSE_CONTENT_TYPE, CannedMcp, framed
from contract import parse_argv

REASONS = {200: b"OK", 202: b"Accepted", 404: b"Not Found", 405: b"Method Not Allowed"}


def response(status: int, body: bytes, session: bytes | None, sse: bool) -> bytes:
    """The bytes of one HTTP/1.1 response."""
    head = b"HTTP/1.1 %d %s\r\n" % (status, REASONS.get(status, b""))
    if session is not None:
        head += b"Mcp-Session-Id: " + session + b"\r\n"
    if body:
        streaming = sse and status == 200
        body = framed(body, streaming)
        kind = SSE_CONTENT_TYPE if streaming else JSON_CONTENT_TYPE
        head += b"Content-Type: " + kind + b"\r\n"
    return head + b"Content-Length: %d\r\n\r\n" % len(body) + body


def request_head(head: bytes) -> tuple[bytes, int, bytes | None]:
    """(verb, Content-Length, Mcp-Session-Id) of a request head; the rest is not looked at."""
    lines = head.split(b"\r\n")
    length, session = 0, None
    for line in lines[1:]:
        name, _, value = line.partition(b":")
        name = name.strip().lower()
        if name == b"content-length":
            length = int(value)
        elif name == b"mcp-session-id":
            session = value.strip()
    return lines[0].split(b" ", 1)[0], length, session


async def next_request(
    stream: trio.SocketStream, buffer: bytearray
) -> tuple[bytes, bytes | None, bytes] | None:
    """(verb, Mcp-Session-Id, body) of the connection's next request; None once it closes."""
    while (end := buffer.find(b"\r\n\r\n")) < 0:
        data = await stream.receive_some(65536)
        if not data:
            return None
        buffer += data
    verb, length, session = request_head(bytes(buffer[:end]))
    total = end + 4 + length
    while len(buffer) < total:
        data = await stream.receive_some(65536)
        if not data:
            return None
        buffer += data
    body = bytes(buffer[end + 4 : total])
    del buffer[:total]
    return verb, session, body


async def serve_connection(mcp: CannedMcp, sse: bool, stream: trio.SocketStream) -> None:
    """Answer the requests of one connection, one after the other, until it closes."""
    buffer = bytearray()
    try:
        while (request := await next_request(stream, buffer)) is not None:
            verb, session, body = request
            status, out, new = await mcp.handle(verb, session, body)
            await stream.send_all(response(status, out, new, sse))
    except (trio.BrokenResourceError, trio.ClosedResourceError, ConnectionError):
        return


Reply = trio.MemorySendChannel[tuple[int, bytes, bytes | None]]
Job = tuple[bytes, bytes | None, bytes, Reply]


class Actors:
    """The session actors of the --actors shape: one task and one inbox per session id."""

    def __init__(self, mcp: CannedMcp, nursery: trio.Nursery) -> None:
        self.mcp = mcp
        self.nursery = nursery
        self.inboxes: dict[bytes | None, trio.MemorySendChannel[Job]] = {}

    def inbox(self, session: bytes | None) -> trio.MemorySendChannel[Job]:
        """The inbox of a session's actor, started on the session's first request."""
        inbox = self.inboxes.get(session)
        if inbox is None:
            inbox, jobs = trio.open_memory_channel[Job](64)
            self.inboxes[session] = inbox
            self.nursery.start_soon(self.session, jobs)
        return inbox

    async def session(self, jobs: trio.MemoryReceiveChannel[Job]) -> None:
        """A session actor: each request it receives runs in a task of its own."""
        async with trio.open_nursery() as requests:
            async for job in jobs:
                requests.start_soon(self.request, *job)

    async def request(self, verb: bytes, session: bytes | None, body: bytes, reply: Reply) -> None:
        """A request actor: the answer, in a cancel scope of its own, to the response's sink."""
        with trio.CancelScope():
            await reply.send(await self.mcp.handle(verb, session, body))


async def serve_connection_actors(actors: Actors, sse: bool, stream: trio.SocketStream) -> None:
    """As serve_connection, each request served by its session's actor."""
    buffer = bytearray()
    reply, replies = trio.open_memory_channel[tuple[int, bytes, bytes | None]](1)
    try:
        while (request := await next_request(stream, buffer)) is not None:
            verb, session, body = request
            await actors.inbox(session).send((verb, session, body, reply))
            status, out, new = await replies.receive()
            await stream.send_all(response(status, out, new, sse))
    except (trio.BrokenResourceError, trio.ClosedResourceError, ConnectionError):
        return


async def serve_actors(mcp: CannedMcp, opts: dict[str, Any]) -> None:
    """Serve in the --actors shape until cancelled."""
    async with trio.open_nursery() as nursery:
        actors = Actors(mcp, nursery)
        handler = functools.partial(serve_connection_actors, actors, opts["sse"])
        await trio.serve_tcp(handler, opts["port"], host=opts["host"], backlog=4096)


def main() -> None:
    """Serve until interrupted."""
    actors = "--actors" in sys.argv
    opts = parse_argv([arg for arg in sys.argv if arg != "--actors"])
    mcp = CannedMcp("raw-http", stateless=opts["stateless"])
    if actors:
        trio.run(serve_actors, mcp, opts)
        return
    handler = functools.partial(serve_connection, mcp, opts["sse"])
    trio.run(
        functools.partial(trio.serve_tcp, handler, opts["port"], host=opts["host"], backlog=4096)
    )


if __name__ == "__main__":
    with contextlib.suppress(KeyboardInterrupt):
        main()
