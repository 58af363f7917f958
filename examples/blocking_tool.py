"""Blocking tools: plain ``def`` functions run in worker threads.

The event loop never waits on a ``def`` tool: it runs in a worker thread, so other
requests are served meanwhile. Trio cannot interrupt a thread, so a long blocking tool
calls ``mcpactor.check_cancelled()`` between units of work; when the client cancels
the request (or the server shuts down) that call raises and the tool stops.

    mcpactor serve examples/blocking_tool.py
    python examples/blocking_tool.py        # at most 4 blocking tools at once
"""

from __future__ import annotations

import hashlib
import time

import trio

import mcpactor
from mcpactor import Server, SessionOptions
from mcpactor.transports import serve_stdio

server = Server("blocking", version="1.0.0")


@server.tool()
def count_primes(below: int) -> int:
    """Count the primes below a number, by trial division (slow on purpose)."""
    count = 0
    for n in range(2, below):
        if n % 10_000 == 0:
            mcpactor.check_cancelled()
        if all(n % d for d in range(2, int(n**0.5) + 1)):
            count += 1
    return count


@server.tool()
def stretch_hash(text: str, rounds: int = 100_000) -> str:
    """Hash text many times over, as password-stretching does."""
    digest = text.encode()
    for i in range(rounds):
        if i % 1_000 == 0:
            mcpactor.check_cancelled()
        digest = hashlib.sha256(digest).digest()
    return digest.hex()


@server.tool()
def slow_lookup(key: str) -> str:
    """Look a key up in a slow, blocking store (a stand-in for a database driver)."""
    for _ in range(10):
        mcpactor.check_cancelled()
        time.sleep(0.1)
    return f"{key}: not found"


if __name__ == "__main__":
    options = SessionOptions(thread_limiter=trio.CapacityLimiter(4))
    trio.run(lambda: serve_stdio(server, options=options))
