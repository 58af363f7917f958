"""Cache hints: a server-wide default, and one per resource and per tool."""

# --8<-- [start:sample]
from mcpactor.server import CacheHint, Server

server = Server("weather", cache=CacheHint(ttl_ms=60_000))  # the default hint


@server.resource("weather://stations", cache=CacheHint(3_600_000, "public"))
async def stations() -> list[str]:
    return ["Oslo-Blindern", "Bergen-Florida"]


@server.tool(cache=CacheHint(300_000))
async def forecast(city: str) -> str:
    return f"sun in {city}"


# --8<-- [end:sample]
