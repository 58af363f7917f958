"""The weather plugin's module: ``src/mcpactor_weather/__init__.py``."""

# --8<-- [start:sample]
from mcpactor import Server

server = Server("weather", version="1.0.0", instructions="Forecasts for a few cities.")


@server.tool()
async def forecast(city: str) -> str:
    """Tomorrow's weather in a city."""
    return f"Sunny in {city}"


# --8<-- [end:sample]
