"""Test a server as a client launches it: over stdio, in a subprocess."""

import sys

from mcpactor.client import connect_stdio


async def test_over_stdio() -> None:
    command = [sys.executable, "-m", "mcpactor", "serve", "myserver.py"]
    async with connect_stdio(command, initialize=True) as client:
        tools = await client.list_tools()
        assert [tool["name"] for tool in tools] == ["add", "greet"]
