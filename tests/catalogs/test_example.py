"""``examples/large_catalog.py`` served as its docstring says, searched and called."""

from __future__ import annotations

import sys
from pathlib import Path

from mcpactor.client import connect_stdio

ROOT = Path(__file__).resolve().parents[2]


async def test_the_large_catalog_example() -> None:
    command = [sys.executable, "-m", "mcpactor", "serve", "examples/large_catalog.py"]
    async with connect_stdio(command, cwd=ROOT, initialize=True) as session:
        tools = await session.list_tools()
        assert [tool["name"] for tool in tools] == ["search_tools", "call_tool", "status"]
        found = await session.call_tool(
            "search_tools", {"query": "remove a DNS record", "limit": 3}
        )
        names = [tool["name"] for tool in found["structuredContent"]["tools"]]
        assert names[0] == "ops_delete_dns_record"
        called = await session.call_tool(
            "call_tool", {"name": names[0], "arguments": {"record_id": "www"}}
        )
        assert called.text == "ops_delete_dns_record(www)"
        assert (await session.call_tool("status")).text == "all systems up"
