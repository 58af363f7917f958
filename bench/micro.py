"""Micro-benchmarks of mcpactor's hot path, in process (not part of the unit tests).

    python bench/micro.py [--calls N] [--profile]

Measures the server's own cost per tools/call: framing, classification, dispatch,
validation, the handler, result conversion and serialisation, driven through a real
SessionActor and the stdio pump over in-memory streams with 64 requests in flight.
"""

from __future__ import annotations

import argparse
import cProfile
import pstats
import time

import orjson
import trio
import trio.testing

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


def call(i: int) -> bytes:
    """One tools/call request line."""
    return (
        b'{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":'
        b'{"name":"echo","arguments":{"text":"hello, mcp benchmark"}}}\n' % i
    )


async def run(calls: int, window: int = 64) -> float:
    """Return seconds per call for ``calls`` pipelined tools/call requests."""
    to_server_send, to_server_receive = trio.testing.memory_stream_one_way_pair()
    from_server_send, from_server_receive = trio.testing.memory_stream_one_way_pair()
    async with trio.open_nursery() as nursery:
        await nursery.start(serve_streams, server, to_server_receive, from_server_send)
        await to_server_send.send_all(INIT)
        buffer = b""
        while b"\n" not in buffer:
            buffer += await from_server_receive.receive_some()
        buffer = buffer.split(b"\n", 1)[1]
        start = time.perf_counter()
        sent = answered = 0
        while answered < calls:
            while sent < calls and sent - answered < window:
                sent += 1
                await to_server_send.send_all(call(sent))
            data = await from_server_receive.receive_some()
            answered += (buffer + data).count(b"\n") - buffer.count(b"\n")
            buffer = (buffer + data).rsplit(b"\n", 1)[1]
        elapsed = time.perf_counter() - start
        await to_server_send.aclose()
    return elapsed / calls


def main() -> None:
    """Run the benchmark and print µs per call (optionally the top of a profile)."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--calls", type=int, default=20000)
    parser.add_argument("--profile", action="store_true")
    args = parser.parse_args()
    if args.profile:
        profiler = cProfile.Profile()
        profiler.enable()
    per_call = trio.run(run, args.calls)
    if args.profile:
        profiler.disable()
        pstats.Stats(profiler).sort_stats("tottime").print_stats(25)
    print(f"{per_call * 1e6:.1f} µs per tools/call ({1 / per_call:,.0f} calls/s)")


if __name__ == "__main__":
    main()
