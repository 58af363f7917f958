"""The resource server of the end-to-end authorization tests, served by ``mcpactor serve``.

Nothing in it sleeps: a ``job`` waits until ``release`` is called with its key, so a test
holds a task running for as long as it needs one.
"""

from __future__ import annotations

import collections

import trio

from mcpactor import Context, Server

server = Server("guarded", version="1.0.0")
_released: collections.defaultdict[str, trio.Event] = collections.defaultdict(trio.Event)


@server.tool()
async def whoami(ctx: Context) -> str:
    """Who the token names: subject, client and scopes."""
    principal = ctx.principal
    if principal is None:
        return "nobody"
    scopes = " ".join(sorted(principal.scopes))
    return f"{principal.subject} by {principal.client_id} with {scopes}"


@server.tool(scopes=["tools:admin"])
async def reset() -> str:
    """An administrative action: only a token with tools:admin may call it."""
    return "reset done"


@server.tool(task_support="optional")
async def job(key: str) -> str:
    """Run until ``release`` is called with ``key``."""
    await _released[key].wait()
    return f"job {key} done"


@server.tool()
async def release(key: str) -> str:
    """Let the job ``key`` finish."""
    _released[key].set()
    return f"released {key}"


@server.tool()
async def confirm(ctx: Context) -> str:
    """Ask the user to confirm, then say what they answered."""
    answer = await ctx.elicit("sure?", {"type": "object", "properties": {}})
    return f"user said {answer.action}"
