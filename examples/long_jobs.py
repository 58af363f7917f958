"""Long jobs: tasks, worker processes and deadlines.

A client of 2025-11-25 may call ``crawl`` and ``proof_of_work`` as tasks: the call is
answered at once with a task id, the job runs on in the server, and the client polls
``tasks/get`` and fetches ``tasks/result`` (or cancels with ``tasks/cancel``).
``proof_of_work`` is CPU-bound and never checks for cancellation, so it runs in a worker
process that is killed when the call is cancelled or runs out of time. Every tool has a
deadline: its own ``timeout`` or the server's ``tool_timeout``.

    mcpactor serve examples/long_jobs.py
"""

from __future__ import annotations

import hashlib

import trio

from mcpactor import Context, Server

server = Server("long-jobs", version="1.0.0", tool_timeout=60)


@server.tool(task_support="optional", timeout=600)
async def crawl(pages: int, ctx: Context) -> str:
    """Fetch pages one at a time (simulated), reporting progress."""
    for page in range(1, pages + 1):
        await trio.sleep(0.5)
        await ctx.report_progress(page, pages, f"page {page} of {pages}")
    return f"crawled {pages} pages"


@server.tool(offload="process", task_support="optional", timeout=120)
def proof_of_work(prefix: str, zeros: int = 5) -> int:
    """Find the nonce whose SHA-256 with the prefix starts with that many hex zeros."""
    target = "0" * zeros
    nonce = 0
    while not hashlib.sha256(f"{prefix}{nonce}".encode()).hexdigest().startswith(target):
        nonce += 1
    return nonce


@server.tool(task_support="required")
async def archive(folder: str, ctx: Context) -> str:
    """Archive a folder after the user confirms; only runs as a task."""
    answer = await ctx.elicit(
        f"Archive {folder}?",
        {"type": "object", "properties": {"confirm": {"type": "boolean"}}},
    )
    if answer.action != "accept" or not (answer.content or {}).get("confirm"):
        return "left as it was"
    await trio.sleep(2)
    return f"archived {folder}"
