"""The resource server of the end-to-end authorization tests, served by ``mcpactor serve``.

Nothing in it sleeps: a ``job`` waits until ``release`` is called with its key, so a test
holds a task running for as long as it needs one.
"""

from __future__ import annotations

import collections
import os

import trio

from mcpactor import Context, Server
from mcpactor.auth import JwtVerifier, TokenVerifier

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


def eager_verifier() -> TokenVerifier:
    """The JwtVerifier serve builds, fetching the keys again on any unknown kid at once.

    For ``--auth-verifier``: the issuer and the resource come from ``GUARDED_ISSUER`` and
    ``GUARDED_RESOURCE``. The verifier refetches an issuer's keys for an unknown kid at
    most every 30 s by default; a test that rotates the keys a moment after the server's
    first fetch would otherwise wait that long for the new kid to be looked up.
    """
    issuer, resource = os.environ["GUARDED_ISSUER"], os.environ["GUARDED_RESOURCE"]
    return JwtVerifier(issuer, resource, min_refresh_interval=0)
