"""Two small servers served as one: each under its own prefix, with its own lifespan.

The weather server's tools and prompts are exposed as ``weather_*``, the notes server's as
``notes_*``; resource URIs stay as they are. Serve it with either of::

    mcpactor serve examples/compose.py
    python examples/compose.py

(``mcpactor serve weather.py notes.py`` does the same for servers kept in two files, and
``mcpactor serve`` alone does it for every installed plugin.)
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import trio

from mcpactor import Server
from mcpactor.transports import serve_stdio

weather = Server("weather", version="1.0.0", instructions="Forecasts for a few cities.")

_FORECASTS = {"Oslo": "snow", "Lisbon": "sun", "Lima": "fog"}


@weather.tool()
async def forecast(city: str) -> str:
    """Tomorrow's weather in a city."""
    return f"{_FORECASTS.get(city, 'unknown')} in {city}"


@weather.resource("weather://cities", mime_type="text/plain")
async def cities() -> str:
    """The cities there are forecasts for."""
    return "\n".join(sorted(_FORECASTS))


notes = Server("notes", version="1.0.0", instructions="Keeps short notes in memory.")

_notes: list[str] = []


@notes.lifespan
@asynccontextmanager
async def keep_notes(_: Server) -> AsyncIterator[None]:
    # Started after the parent's own lifespans, stopped before them. If it raised (or a
    # task it started in a nursery here did), only the notes server would fail.
    _notes.clear()
    yield
    _notes.clear()


@notes.tool()
async def add(text: str) -> int:
    """Keep a note; returns how many there are."""
    _notes.append(text)
    return len(_notes)


@notes.prompt()
async def summarize() -> str:
    """Ask the model to summarize the notes."""
    return "Summarize these notes:\n" + "\n".join(f"- {note}" for note in _notes)


server = Server("assistant", version="1.0.0")
server.mount(weather, "weather")
server.mount(notes, "notes", max_concurrent=4)


if __name__ == "__main__":
    trio.run(serve_stdio, server)
