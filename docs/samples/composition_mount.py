"""Two servers mounted in a third, each under its own prefix."""

from mcpactor import Server

weather = Server("weather", version="1.0.0")
notes = Server("notes", version="1.0.0")


@weather.tool()
async def forecast(city: str) -> str:
    """Tomorrow's weather in a city."""
    return f"sun in {city}"


@notes.tool()
async def add(text: str) -> str:
    """Keep a note."""
    return f"noted: {text}"


# --8<-- [start:sample]
server = Server("assistant", version="1.0.0")
server.mount(weather, "weather")
server.mount(notes, "notes", max_concurrent=4)
# --8<-- [end:sample]
