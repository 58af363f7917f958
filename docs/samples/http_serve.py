"""Serve over Streamable HTTP from Python, with a host and origin allow-list."""

import functools

import trio

from mcpactor import Server
from mcpactor.transports import HttpOptions, serve_http

server = Server("notes", version="1.0.0")


@server.tool()
async def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


OPTIONS = HttpOptions(
    allowed_hosts=["mcp.example.com", "localhost"],
    cors_origins=["https://app.example.com"],
    session_idle_timeout=10 * 60,
)


async def main() -> None:
    async with trio.open_nursery() as nursery:
        _host, port = await nursery.start(
            functools.partial(serve_http, server, port=8000, options=OPTIONS, handle_signals=True)
        )
        # The allow-list above replaces the loopback defaults: 127.0.0.1 is not on it,
        # so the URL to give a local client names localhost.
        print(f"serving http://localhost:{port}/mcp", flush=True)


if __name__ == "__main__":
    trio.run(main)
