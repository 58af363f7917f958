"""A first test: call a tool of the server in memory."""

from myserver import server

import mcpactor.testing


async def test_add() -> None:
    async with mcpactor.testing.client(server) as client:
        result = await client.call_tool("add", {"a": 1, "b": 2})
        assert result.data == 3
        assert not result.is_error
