"""The plugin's first test: the server in memory, called as a client will call it."""

from mcpactor_weather import server

import mcpactor.testing


async def test_forecast() -> None:
    async with mcpactor.testing.client(server) as client:
        result = await client.call_tool("forecast", {"city": "Oslo"})
        assert "Oslo" in result.text
