"""Serve over HTTP with a process pool of eight workers for offload="process" tools."""

import trio

import mcpactor.runtime
from mcpactor import Server, SessionOptions
from mcpactor.transports import serve_http

server = Server("work", version="1.0.0")


@server.tool(offload="process")
def square(n: int) -> int:
    """The square of a number, computed in a worker process."""
    return n * n


# --8<-- [start:sample]
async def main() -> None:
    """Serve ``server`` over HTTP, its sessions sharing one pool."""
    async with mcpactor.runtime.open_process_pool(max_workers=8) as pool:
        options = SessionOptions(process_pool=pool)
        await serve_http(server, port=8000, session_options=options)


# --8<-- [end:sample]


if __name__ == "__main__":
    trio.run(main)
