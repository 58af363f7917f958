"""Search mode through the real ``mcpactor serve``: the project's client and the SDK's."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

from mcpactor.client import connect_stdio
from tests.catalogs.test_search_mode import FLOOR, QUERIES, tokens
from tests.spec_schema import check

ROOT = Path(__file__).resolve().parents[2]
TARGET = "tests/catalogs/catalog_server.py:server"
SERVE = [sys.executable, "-m", "mcpactor", "serve"]


@pytest.mark.parametrize("version", ["2025-11-25", "2026-07-28"])
async def test_serve_tool_search_over_stdio(version: str) -> None:
    command = [*SERVE, TARGET, "--tool-search", "--pin", "ping"]
    async with connect_stdio(
        command, cwd=ROOT, initialize=True, protocol_version=version
    ) as session:
        listing = await session.request("tools/list", {})
        assert [tool["name"] for tool in listing["tools"]] == ["search_tools", "call_tool", "ping"]
        check(listing, version, "ListToolsResult")
        print(f"search mode over stdio at {version}: tools/list is {tokens(listing)} tokens")
        assert tokens(listing) < 2000
        hits = 0
        for query, wanted in QUERIES:
            result = await session.call_tool("search_tools", {"query": query, "limit": 3})
            hits += wanted in [tool["name"] for tool in result["structuredContent"]["tools"]]
        print(f"search mode over stdio at {version}: {hits}/{len(QUERIES)} in the top 3")
        assert hits / len(QUERIES) >= FLOOR[1]
        check(result, version, "CallToolResult")
        result = await session.call_tool(
            "call_tool", {"name": "travel_get_itinerary", "arguments": {"itinerary_id": "t-9"}}
        )
        assert result.text == "travel_get_itinerary called with [('itinerary_id', 't-9')]"


async def test_serve_reads_tool_search_from_the_config_file(tmp_path: Path) -> None:
    config = tmp_path / "mcpactor.toml"
    config.write_text(
        "[servers.catalog]\n"
        f'target = "{ROOT / TARGET}"\n'
        "prefix = false\n"
        "[tool_search]\n"
        'pinned = ["ping"]\n'
        "limit = 2\n"
    )
    async with connect_stdio(
        [*SERVE, "--config", str(config)], cwd=ROOT, initialize=True
    ) as session:
        tools = await session.list_tools()
        assert [tool["name"] for tool in tools] == ["search_tools", "call_tool", "ping"]
        result = await session.call_tool("search_tools", {"query": "book a flight"})
        assert len(result["structuredContent"]["tools"]) == 2


def test_the_official_sdk_client_uses_search_mode() -> None:
    anyio = pytest.importorskip("anyio")
    mcp = pytest.importorskip("mcp")
    from mcp.client.stdio import StdioServerParameters, stdio_client

    parameters = StdioServerParameters(
        command=sys.executable,
        args=["-m", "mcpactor", "serve", TARGET, "--tool-search", "--pin", "ping"],
        cwd=str(ROOT),
        env=dict(os.environ),
    )

    async def scenario() -> tuple[list[str], str, str, bool]:
        async with (
            stdio_client(parameters) as (read, write),
            mcp.ClientSession(read, write) as session,
        ):
            await session.initialize()
            listed = await session.list_tools()
            found = await session.call_tool(
                "search_tools", {"query": "roll out a new build to production"}
            )
            called = await session.call_tool(
                "call_tool", {"name": "devops_get_deployment", "arguments": {"deployment_id": "7"}}
            )
            invalid = await session.call_tool(
                "call_tool", {"name": "devops_get_deployment", "arguments": {}}
            )
            return (
                [tool.name for tool in listed.tools],
                found.content[0].text,
                called.content[0].text,
                bool(invalid.is_error),
            )

    names, found, called, invalid_is_error = anyio.run(scenario, backend="asyncio")
    assert names == ["search_tools", "call_tool", "ping"]
    assert json.loads(found)["tools"][0]["name"] == "devops_create_deployment"
    assert called == "devops_get_deployment called with [('deployment_id', '7')]"
    assert invalid_is_error


def test_pin_without_search_mode_is_refused(capsys: pytest.CaptureFixture[str]) -> None:
    from mcpactor.cli import main

    assert main(["serve", str(ROOT / TARGET), "--pin", "ping"]) != 0
    assert "--pin needs --tool-search" in capsys.readouterr().err
