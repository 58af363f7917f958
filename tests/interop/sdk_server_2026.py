"""An official SDK (``mcp``) server for the client's 2026-07-28 tests, over stdio or HTTP.

``python sdk_server_2026.py`` serves stdio; ``python sdk_server_2026.py --http`` serves
Streamable HTTP on a free loopback port and prints ``serving http://…/mcp`` to stderr
once it listens.
"""

from __future__ import annotations

import socket
import sys
from typing import Annotated

import anyio
from mcp.server.mcpserver import Context, Elicit, MCPServer, Resolve
from pydantic import BaseModel, Field


class Booking(BaseModel):
    """What the elicitation asks for."""

    guests: int
    terrace: bool


server = MCPServer("sdk-2026", instructions="An SDK server for mcpactor's client tests.")


@server.tool()
def echo(text: str) -> str:
    """Return the text."""
    return text


@server.tool()
def regional(
    region: Annotated[str, Field(json_schema_extra={"x-mcp-header": "Region"})],
    query: str,
) -> str:
    """Say which region answered; ``region`` is mirrored into a header."""
    return f"{region}: {query}"


def ask_booking() -> Elicit[Booking]:
    """Ask the user for a booking."""
    return Elicit("How many guests, and a terrace?", Booking)


@server.tool()
def book(table: str, booking: Annotated[Booking, Resolve(ask_booking)]) -> str:
    """Book a table after asking the user."""
    return f"{table}: {booking.guests} guests, terrace={booking.terrace}"


@server.tool()
async def add_tool(name: str, ctx: Context) -> str:
    """Register a tool and tell listeners the list changed."""
    server.add_tool(lambda: name, name=name, description="added at run time")
    await ctx.notify_tools_changed()
    return name


@server.resource("memo://greeting")
def greeting() -> str:
    """A fixed text resource."""
    return "hello from the SDK"


@server.prompt()
def summarize(topic: str) -> str:
    """A one-message prompt."""
    return f"Summarize {topic}."


async def _serve_http() -> None:
    import uvicorn

    # Bound and listening before it is announced: connections wait in the backlog.
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(64)
    port = listener.getsockname()[1]
    config = uvicorn.Config(server.streamable_http_app(), log_level="warning")
    print(f"serving http://127.0.0.1:{port}/mcp", file=sys.stderr, flush=True)
    await uvicorn.Server(config).serve(sockets=[listener])


if __name__ == "__main__":
    if sys.argv[1:] == ["--http"]:
        anyio.run(_serve_http)
    else:
        server.run("stdio")
