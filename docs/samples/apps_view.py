"""A tool with an MCP Apps view, the view's CSP and permissions, and an app-only tool."""

from mcpactor import Server
from mcpactor.ext import apps

# --8<-- [start:enable]
server = Server("weather", version="1.0.0", extensions=[apps.extension])
# --8<-- [end:enable]

FORECAST = {"Oslo": "sun", "Bergen": "rain"}
# --8<-- [start:view]
VIEW = """<!doctype html>
<html><head><meta charset="utf-8"><title>Forecast</title></head>
<body><p id="forecast">…</p><script type="module">/* the App, bundled */</script></body>
</html>"""

apps.add_ui_resource(
    server,
    "ui://weather/forecast.html",
    VIEW,  # or a Path: read once, now
    title="Forecast",
    csp=apps.Csp(
        connect_domains=["https://api.weather.example"],
        resource_domains=["https://*.tiles.example"],
    ),
    permissions=apps.Permissions(geolocation=True),
    prefers_border=True,
)
# --8<-- [end:view]


# --8<-- [start:tools]
@server.tool(meta=apps.ui("ui://weather/forecast.html"))
async def show_forecast(city: str) -> str:
    """Show the forecast for a city, on a map."""
    return f"{FORECAST.get(city, 'no forecast')} in {city}"


@server.tool(meta=apps.ui("ui://weather/forecast.html", visibility=["app"]))
async def forecast_at(latitude: float, longitude: float) -> str:
    """The forecast where the user clicked on the map (called by the view)."""
    return "sun" if latitude > 59 else "rain"


# --8<-- [end:tools]
