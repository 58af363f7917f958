"""A server whose Server Card names it for discovery behind a public URL."""

from mcpactor import Server
from mcpactor.transports import HttpOptions, ServerCardOptions

server = Server(
    "weather",
    "2.1.0",
    title="Weather",
    description="Forecasts for any city",
    website_url="https://weather.example.com",
)


@server.tool()
async def forecast(city: str) -> str:
    """Tomorrow's weather in a city."""
    return f"sunny in {city}"


options = HttpOptions(
    server_card=ServerCardOptions(
        url="https://mcp.example.com/mcp",
        name="com.example/weather",
        repository={"url": "https://github.com/example/weather", "source": "github"},
        catalog_entries={
            "urn:air:example.com:mcp:mail": "https://mail.example.com/mcp/server-card",
        },
    )
)
