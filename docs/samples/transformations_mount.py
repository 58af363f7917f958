"""A weather server mounted with its forecast tool transformed and its debug tool hidden."""

from mcpactor import Server
from mcpactor.transform import ArgTransform, ToolTransform

weather = Server("weather", version="1.0.0")


@weather.tool()
async def get_forecast(q: str, days: int = 3, units: str = "imperial") -> str:
    """Weather in a city."""
    return f"{days} day(s) of sun in {q} ({units})"


@weather.tool()
async def debug_dump() -> str:
    """Internal state."""
    return "state"


# --8<-- [start:sample]
server = Server("assistant")
server.mount(
    weather,
    "weather",
    tools={
        "get_forecast": ToolTransform(
            name="forecast",  # listed as weather_forecast
            description="The forecast for a city, in metric units.",
            arguments={
                "days": ArgTransform(constraints={"minimum": 1, "maximum": 7}),
                "units": ArgTransform(hide=True, value="metric"),
                "q": ArgTransform(name="city", description="The city, e.g. 'Lisbon'."),
            },
        ),
        "debug_dump": ToolTransform(hide=True),
    },
)
# --8<-- [end:sample]
