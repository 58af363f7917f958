"""The framework-free ceiling on HTTP: a bare trio HTTP/1.1 keep-alive server.

    raw_http.py http HOST PORT [--sse] [--stateless]

One task per connection reads a request head and its Content-Length body and answers
with canned.CannedMcp, as application/json or, with --sse, as one text/event-stream event.
"""

from __future__ import annotations

import contextlib
import functools
import sys

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


async def serve_connection(mcp: CannedMcp, sse: bool, stream: trio.SocketStream) -> None:
    """Answer the requests of one connection, one after the other, until it closes."""
    buffer = bytearray()
    receive = stream.receive_some
    try:
        while True:
            while (end := buffer.find(b"\r\n\r\n")) < 0:
                data = await receive(65536)
                if not data:
                    return
                buffer += data
            verb, length, session = request_head(bytes(buffer[:end]))
            total = end + 4 + length
            while len(buffer) < total:
                data = await receive(65536)
                if not data:
                    return
                buffer += data
            body = bytes(buffer[end + 4 : total])
            del buffer[:total]
            status, out, new = await mcp.handle(verb, session, body)
            await stream.send_all(response(status, out, new, sse))
    except (trio.BrokenResourceError, trio.ClosedResourceError, ConnectionError):
        return


def main() -> None:
    """Serve until interrupted."""
    opts = parse_argv(sys.argv)
    mcp = CannedMcp("raw-http", stateless=opts["stateless"])
    handler = functools.partial(serve_connection, mcp, opts["sse"])
    trio.run(
        functools.partial(trio.serve_tcp, handler, opts["port"], host=opts["host"], backlog=4096)
    )


if __name__ == "__main__":
    with contextlib.suppress(KeyboardInterrupt):
        main()
