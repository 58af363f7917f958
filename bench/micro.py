"""Micro-benchmarks of mcpactor's hot path, in process (not part of the unit tests).

    python bench/micro.py [--calls N] [--window W] [--size BYTES] [--revision R] [--profile]

Measures the server's own CPU cost per tools/call: framing, classification, dispatch,
validation, the handler, result conversion and serialisation, driven through a real
SessionActor and the stdio pump over a socket pair with 64 requests in flight.
``--revision 2026-07-28`` sends each request with its envelope in ``params._meta``
instead (no initialize), served by the stdio host's stateless path.
"""

from __future__ import annotations

import argparse
import cProfile
import pstats
import socket
import time
from typing import Any

import orjson
import trio

from mcpactor import Server
from mcpactor.transports import serve_streams

server = Server("micro")


@server.tool()
async def echo(text: str) -> str:
    """Return text unchanged."""
    return text


INIT = (
    orjson.dumps(
        {
            "jsonrpc": "2.0",
            "id": 0,
            "method": "initialize",
            "params": {
                "protocolVersion": "2025-11-25",
                "capabilities": {},
                "clientInfo": {"name": "bench", "version": "1"},
            },
        }
    )
    + b"\n"
    + b'{"jsonrpc":"2.0","method":"notifications/initialized"}\n'
)


def call(i: int, text: bytes = b"hello, mcp benchmark") -> bytes:
    """One tools/call request line."""
    return (
        b'{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":'
        b'{"name":"echo","arguments":{"text":"%s"}}}\n' % (i, text)
    )


def call_envelope(i: int, text: bytes, revision: bytes) -> bytes:
    """One tools/call request line of a stateless revision: the envelope in ``_meta``.

    The envelope is the one the harness's client sends (clientInfo too), so the frame
    is as long as a real client's: frame length decides some of the reader's work.
    """
    return (
        b'{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":'
        b'{"name":"echo","arguments":{"text":"%s"},"_meta":'
        b'{"io.modelcontextprotocol/protocolVersion":"%s",'
        b'"io.modelcontextprotocol/clientCapabilities":{},'
        b'"io.modelcontextprotocol/clientInfo":{"name":"mcpbench","version":"0.1"}}}}\n'
        % (i, text, revision)
    )


async def run(calls: int, window: int = 64, size: int = 0, revision: str | None = None) -> float:
    """Return CPU seconds per call for ``calls`` pipelined tools/call requests.

    CPU time, not wall time: on a shared machine other processes' load does not count.
    The client is kept cheap (one write per batch of requests, newline counting for the
    answers) and talks to the server over a socket pair, as a pipe would. ``size``: the
    length of the echoed text in bytes (0: the harness's 20-byte text); ``revision``: a
    stateless revision to send every request at (no initialize), None for a session.
    """
    text = b"x" * size if size else b"hello, mcp benchmark"
    client_sock, server_sock = socket.socketpair()
    client = trio.SocketStream(trio.socket.from_stdlib_socket(client_sock))
    server_stream = trio.SocketStream(trio.socket.from_stdlib_socket(server_sock))
    async with trio.open_nursery() as nursery:
        await nursery.start(serve_streams, server, server_stream, server_stream)
        pending = 0
        if revision is None:
            await client.send_all(INIT)
            buffer = b""
            while b"\n" not in buffer:
                buffer += await client.receive_some()
            pending = buffer.split(b"\n", 1)[1].count(b"\n")
        envelope = revision.encode() if revision is not None else None
        start = time.process_time()
        sent = answered = 0
        while answered < calls:
            batch = []
            while sent < calls and sent - answered < window:
                sent += 1
                batch.append(
                    call(sent, text) if envelope is None else call_envelope(sent, text, envelope)
                )
            if batch:
                await client.send_all(b"".join(batch))
            answered += (await client.receive_some()).count(b"\n") + pending
            pending = 0
        elapsed = time.process_time() - start
        await client.send_eof()
    return elapsed / calls


async def passing(call: Any, call_next: Any) -> Any:
    """A middleware that passes every message through unchanged (``--middleware pass``)."""
    async for message in call_next(call):
        yield message


def main() -> None:
    """Run the benchmark and print µs per call (optionally the top of a profile)."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--calls", type=int, default=20000)
    parser.add_argument("--size", type=int, default=0, help="bytes of echoed text")
    parser.add_argument("--window", type=int, default=64, help="requests in flight")
    parser.add_argument("--revision", default=None, help="a stateless revision, no session")
    parser.add_argument("--profile", action="store_true")
    parser.add_argument(
        "--middleware",
        choices=["none", "pass"],
        default="none",
        help="pass: one middleware that passes every message through",
    )
    args = parser.parse_args()
    if args.middleware == "pass":
        server.middleware.use(passing)
    if args.profile:
        profiler = cProfile.Profile()
        profiler.enable()
    per_call = trio.run(run, args.calls, args.window, args.size, args.revision)
    if args.profile:
        profiler.disable()
        pstats.Stats(profiler).sort_stats("tottime").print_stats(25)
    print(f"{per_call * 1e6:.1f} µs of CPU per tools/call ({1 / per_call:,.0f} calls per CPU s)")


if __name__ == "__main__":
    main()
