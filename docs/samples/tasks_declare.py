"""Tools that may, or must, run as tasks."""

import trio

from mcpactor import Context, Server

server = Server("long-jobs", version="1.0.0")


# --8<-- [start:sample]
@server.tool(task_support="optional", timeout=600)
async def crawl(pages: int, ctx: Context) -> str:
    """Fetch pages one at a time (simulated), reporting progress."""
    for page in range(1, pages + 1):
        await trio.sleep(0.5)
        await ctx.report_progress(page, pages, f"page {page} of {pages}")
    return f"crawled {pages} pages"


@server.tool(task_support="required")
async def archive(folder: str, ctx: Context) -> str:
    """Archive a folder after the user confirms; only runs as a task."""
    # --8<-- [end:sample]
    return f"archived {folder}"
