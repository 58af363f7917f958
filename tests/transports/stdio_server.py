"""A tiny server that the stdio tests run with ``python -m mcpactor serve``."""

from __future__ import annotations

import os
import sys

import trio

from mcpactor import Server

server = Server("stdio-test", version="1.0.0")


@server.tool()
async def echo(text: str) -> str:
    """Echo the text, writing to stdout on the way (which must not reach the protocol)."""
    print(f"print: {text}")
    sys.stdout.flush()
    os.write(1, f"fd1: {text}\n".encode())
    return text


@server.tool()
async def slow(seconds: float) -> str:
    """Say on stderr that the call started, then sleep."""
    print("slow: started", file=sys.stderr, flush=True)
    await trio.sleep(seconds)
    return f"slept {seconds:g}"
