"""The framework-free ceiling on stdio, on trio itself: what mcpactor's stdio could cost at best.

    trio_stdio.py stdio

trio's fd streams over stdin and stdout, newline framing, orjson, canned answers spliced
from bytes, one write per answer: the least a trio program does to serve MCP over stdio.
Answers initialize, tools/list, tools/call of echo, echo_sync and add, and at 2026-07-28
(the request's ``_meta`` names the revision) server/discover and results tagged
``resultType: complete``; an empty result for any other request, nothing for a
notification, a JSON-RPC error for a line that is not a request. Requests are answered
in the order they come, however many are written at once; no sleep, progress or
cancellation (the targets file skips those tests), and echo_sync is no worker thread.

    trio_stdio.py stdio --actors

The same answers in the shape mcpactor's design requires, and nothing else: each
request served in a task of its own (started in the session's nursery, inside a cancel
scope of its own, as a request actor is), its answer sent on a memory channel to the
one writer task of the pipe, which joins whatever is queued into one write. What this
costs over the plain loop is the floor of that shape; what mcpactor costs over it is
its own.
"""

from __future__ import annotations

import contextlib
import os
import sys

import orjson
import trio
from contract import ECHO_TOOLS, init_result
from splice import ECHO_BEFORE, call_result

STATELESS_VERSION = "2026-07-28"
PROTOCOL_VERSION_KEY = "io.modelcontextprotocol/protocolVersion"
ECHO_AFTER = b'}],"isError":false}'
ECHO_AFTER_2026 = b'}],"isError":false,"resultType":"complete"}'
COMPLETE = b',"resultType":"complete"}'
MAX_LINE = 4 * 1024 * 1024  # a longer line without a newline is dropped, not buffered

TOOLS = orjson.dumps(
    {
        "tools": [
            {
                "name": name,
                "description": "Return text unchanged.",
                "inputSchema": {
                    "type": "object",
                    "properties": {"text": {"type": "string"}},
                    "required": ["text"],
                },
            }
            for name in ECHO_TOOLS
        ]
        + [
            {
                "name": "add",
                "description": "Add two integers.",
                "inputSchema": {
                    "type": "object",
                    "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
                    "required": ["a", "b"],
                },
            }
        ]
    }
)
INITIALIZE = orjson.dumps(init_result("trio-stdio"))
DISCOVER = orjson.dumps(
    {
        "supportedVersions": [STATELESS_VERSION],
        "capabilities": {"tools": {}},
        "serverInfo": {"name": "trio-stdio", "version": "0"},
        "cacheScope": "public",
        "ttlMs": 0,
        "resultType": "complete",
    }
)
PARSE_ERROR = b'{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error"}}\n'
INVALID = b'{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Invalid Request"}}\n'


def at_2026(params: object) -> bool:
    """Whether a request's params carry the 2026-07-28 envelope."""
    if not isinstance(params, dict):
        return False
    meta = params.get("_meta")
    return isinstance(meta, dict) and meta.get(PROTOCOL_VERSION_KEY) == STATELESS_VERSION


def tagged(result: bytes) -> bytes:
    """A serialised result object with resultType complete added (2026-07-28 requires it)."""
    return result[:-1] + (COMPLETE if len(result) > 2 else COMPLETE[1:])


def answer(line: bytes | bytearray) -> bytes | None:
    """The reply line to one line, or None for a notification."""
    try:
        message = orjson.loads(line)
    except orjson.JSONDecodeError:
        return PARSE_ERROR
    if not isinstance(message, dict) or not isinstance(message.get("method"), str):
        return INVALID
    if "id" not in message:
        return None
    head = b'{"jsonrpc":"2.0","id":' + orjson.dumps(message["id"]) + b',"result":'
    method = message["method"]
    params = message.get("params")
    modern = at_2026(params)
    if method == "tools/call" and isinstance(params, dict):
        arguments = params.get("arguments")
        if params.get("name") in ECHO_TOOLS and isinstance(arguments, dict):
            text = orjson.dumps(str(arguments.get("text", "")))
            return head + ECHO_BEFORE + text + (ECHO_AFTER_2026 if modern else ECHO_AFTER) + b"}\n"
        result = call_result(params)
    elif method == "initialize":
        result = INITIALIZE
    elif method == "server/discover":
        return head + DISCOVER + b"}\n"
    elif method == "tools/list":
        result = TOOLS
    else:
        result = b"{}"
    return head + (tagged(result) if modern else result) + b"}\n"


def complete_lines(buffer: bytearray, data: bytes) -> list[bytearray]:
    """Add ``data`` to ``buffer``; take out the lines it completes (blank ones dropped)."""
    buffer += data
    lines = []
    start = 0
    while (end := buffer.find(b"\n", start)) >= 0:
        line = buffer[start:end]
        start = end + 1
        if line.strip():
            lines.append(line)
    del buffer[:start]
    if len(buffer) > MAX_LINE:
        buffer.clear()
    return lines


async def serve(receive: trio.abc.ReceiveStream, send: trio.abc.SendStream) -> None:
    """Answer each line of receive on send until receive ends."""
    buffer = bytearray()
    while data := await receive.receive_some(65536):
        for line in complete_lines(buffer, data):
            reply = answer(line)
            if reply is not None:
                await send.send_all(reply)


async def serve_actors(receive: trio.abc.ReceiveStream, send: trio.abc.SendStream) -> None:
    """Answer each line in a task of its own; one writer task joins the answers queued."""
    sink_in, sink = trio.open_memory_channel[bytes](256)

    async def request(line: bytes | bytearray) -> None:
        with trio.CancelScope():
            reply = answer(line)
            if reply is not None:
                await sink_in.send(reply)

    async def writer() -> None:
        async for frame in sink:
            frames = [frame]
            while len(frames) < 256:
                try:
                    frames.append(sink.receive_nowait())
                except trio.WouldBlock:
                    break
            await send.send_all(b"".join(frames))

    async with trio.open_nursery() as outer:
        outer.start_soon(writer)
        async with sink_in, trio.open_nursery() as nursery:
            buffer = bytearray()
            while data := await receive.receive_some(65536):
                for line in complete_lines(buffer, data):
                    nursery.start_soon(request, line)


async def main(actors: bool) -> None:
    """Serve stdin and stdout until stdin ends or stdout is closed."""
    stdin = trio.lowlevel.FdStream(os.dup(0))
    stdout = trio.lowlevel.FdStream(os.dup(1))
    async with stdin, stdout:
        with contextlib.suppress(trio.BrokenResourceError, trio.ClosedResourceError):
            await (serve_actors if actors else serve)(stdin, stdout)


if __name__ == "__main__":
    if sys.argv[1:] not in (["stdio"], ["stdio", "--actors"]):
        sys.exit(f"usage: {sys.argv[0]} stdio [--actors]")
    with contextlib.suppress(KeyboardInterrupt):  # trio imports contextlib anyway
        trio.run(main, sys.argv[2:] == ["--actors"])
