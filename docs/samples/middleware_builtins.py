"""The built-in layers, on a server of their own."""

# --8<-- [start:builtins]
from mcpactor import CacheHint, Server
from mcpactor.middleware import RateLimit, ResponseCache, ToolFilter, timing

server = Server("catalog", cache=CacheHint(ttl_ms=60_000, scope="public"))


@server.tool()
async def search(query: str) -> str:
    """Search the catalog."""
    return f"3 results for {query}"


@server.tool()
async def reindex() -> str:
    """Rebuild the index (operators only)."""
    return "reindexed"


server.middleware.use(timing())  # logs method, outcome and duration
server.middleware.use(RateLimit(rate=5, burst=10))  # per principal, else per client
server.middleware.use(ToolFilter(deny={"reindex"}))  # hidden, and refused as unknown
server.middleware.use(ResponseCache())  # what the cache hints allow (2026-07-28)
# --8<-- [end:builtins]
