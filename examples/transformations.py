"""Tool transformations: an existing server's tools exposed the way a model needs them.

``weather`` is written as its author wanted: a forecast tool with units, a caller field
for the audit log, and a debugging tool. Served through ``transformed``, the model sees
``forecast`` with a city and at most seven days; the units are fixed, the caller is
filled in from the request (the token's subject over HTTP with authorization, else the
client's name), the city is tidied before the call, the answer gets a source line after
it, and the debugging tool is gone. The same is written in ``mcpactor.toml`` as
``[servers.weather.tools.get_forecast]`` tables (docs/transformations.md).

Serve it with ``mcpactor serve examples/transformations.py`` (stdio) or with ``--http 8000``.
"""

from __future__ import annotations

from typing import Any

from mcpactor import Context, Server
from mcpactor.transform import ArgTransform, ToolTransform, transformed

weather = Server("weather", instructions="Weather forecasts.")


@weather.tool
def get_forecast(city: str, days: int = 3, units: str = "imperial", caller: str = "") -> str:
    """Forecast for a city."""
    degrees = 21 if units == "metric" else 70
    unit = "°C" if units == "metric" else "°F"
    return f"{city}: {days} day(s) of sun, {degrees}{unit} (asked by {caller or 'nobody'})"


@weather.tool
def debug_dump() -> str:
    """Everything the server holds (for its developers)."""
    return "internal state"


def who_asks(ctx: Context) -> str:
    """The caller: the access token's subject, else the client's name."""
    if ctx.principal is not None:
        return ctx.principal.subject
    return str((ctx.client_info or {}).get("name", "unknown"))


def tidy_city(arguments: dict[str, Any], ctx: Context) -> dict[str, Any]:
    """Before the call: the city in title case, whatever the model typed."""
    return {**arguments, "city": arguments["city"].strip().title()}


def cite(result: dict[str, Any], ctx: Context) -> dict[str, Any]:
    """After the call: a source line under the answer."""
    source = {"type": "text", "text": "Source: the example weather service."}
    return {**result, "content": [*result["content"], source]}


server = transformed(
    weather,
    {
        "get_forecast": ToolTransform(
            name="forecast",
            description="The forecast for a city, in metric units.",
            annotations={"readOnlyHint": True},
            arguments={
                "city": ArgTransform(description="The city, e.g. 'Lisbon'."),
                "days": ArgTransform(constraints={"minimum": 1, "maximum": 7}),
                "units": ArgTransform(hide=True, value="metric"),
                "caller": ArgTransform(hide=True, value=who_asks),
            },
            before=tidy_city,
            after=cite,
        ),
        "debug_dump": ToolTransform(hide=True),
    },
)
