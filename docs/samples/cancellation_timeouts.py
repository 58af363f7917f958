"""A server-wide tool timeout and a longer one for a tool that may run as a task."""

import trio

from mcpactor import Context, Server

# --8<-- [start:sample]
server = Server("long-jobs", version="1.0.0", tool_timeout=60)


@server.tool(task_support="optional", timeout=600)
async def crawl(pages: int, ctx: Context) -> str:
    """Fetch pages one at a time (simulated)."""
    for page in range(1, pages + 1):
        await trio.sleep(0.5)
        await ctx.report_progress(page, pages)
    return f"crawled {pages} pages"


# --8<-- [end:sample]
