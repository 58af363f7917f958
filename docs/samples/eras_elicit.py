"""A tool that asks the user in either era: reads first, one write after the last question."""

from typing import Any

from mcpactor import Context, Server

server = Server("trips", version="1.0.0")
NAME_FORM: dict[str, Any] = {
    "type": "object",
    "properties": {"name": {"type": "string"}},
    "required": ["name"],
}
booked: list[tuple[str, str]] = []


async def search_flights(city: str) -> list[str]:
    return [f"AB123 to {city}"]


async def reserve(flight: str, name: str) -> str:
    booked.append((flight, name))
    return f"{name} on {flight}"


# --8<-- [start:sample]
@server.tool
async def book(city: str, ctx: Context) -> str:
    """Book a trip to a city."""
    flights = await search_flights(city)  # read-only: safe to repeat
    who = await ctx.elicit(f"Who travels to {city}?", NAME_FORM)
    if who.action != "accept" or who.content is None:
        return "cancelled"
    return await reserve(flights[0], who.content["name"])  # the one write, after the last question


# --8<-- [end:sample]
