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
    head = [b"HTTP/1.1 %d %s\r\n" % (status, REASONS.get(status, b""))]
    if session is not None:
        head.append(b"Mcp-Session-Id: " + session + b"\r\n")
    if body:
        body = framed(body, sse and status == 200)
        kind = SSE_CONTENT_TYPE if sse and status == 200 else JSON_CONTENT_TYPE
        head.append(b"Content-Type: " + kind + b"\r\n")
    head.append(b"Content-Length: %d\r\n\r\n" % len(body))
    return b"".join(head) + body


async def serve_connection(mcp: CannedMcp, sse: bool, stream: trio.SocketStream) -> None:
    """Answer the requests of one connection, one after the other, until it closes."""
    buffer = bytearray()

    async def fill(size: int) -> bool:
        while len(buffer) < size:
            data = await stream.receive_some(65536)
            if not data:
                return False
            buffer.extend(data)
        return True

    try:
        while True:
            while (end := buffer.find(b"\r\n\r\n")) < 0:
                if not await fill(len(buffer) + 1):
                    return
            lines = bytes(buffer[:end]).split(b"\r\n")
            headers = {}
            for line in lines[1:]:
                name, _, value = line.partition(b":")
                headers[name.strip().lower()] = value.strip()
            total = end + 4 + int(headers.get(b"content-length", 0))
            if not await fill(total):
                return
            body = bytes(buffer[end + 4 : total])
            del buffer[:total]
            verb = lines[0].split(b" ", 1)[0]
            status, out, session = await mcp.handle(verb, headers.get(b"mcp-session-id"), body)
            await stream.send_all(response(status, out, session, sse))
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
