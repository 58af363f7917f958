"""The live tree from your own code: an Observatory installed in the trio run."""

from typing import Any

import trio
import trio.testing

import mcpactor.testing
from mcpactor import Context, Server
from mcpactor.runtime import Observatory

server = Server("search")


@server.tool()
async def search(query: str, ctx: Context) -> str:
    """Search, slowly, reporting progress."""
    await ctx.report_progress(1, 2)
    await trio.sleep(10)
    return f"found {query}"


async def tree_while_searching() -> dict[str, Any]:
    """The tree as it is while one search runs."""
    observatory = Observatory()
    observatory.install()  # this trio run's: session owners started later register
    observatory.serve(server)
    async with mcpactor.testing.client(server) as client, trio.open_nursery() as nursery:
        nursery.start_soon(client.call_tool, "search", {"query": "trio"})
        await trio.testing.wait_all_tasks_blocked()
        tree = observatory.snapshot(limit=200, tool="search")
        nursery.cancel_scope.cancel()
    return tree
