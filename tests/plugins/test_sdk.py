"""The official MCP Python SDK client, driving ``mcpactor serve`` of two throwaway plugins.

The SDK runs on anyio/asyncio, so this test runs it in an event loop of its own
(``anyio.run``), outside the trio tests around it.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

import anyio
import mcp.types as types
from mcp import ClientSession, StdioServerParameters, stdio_client

from .conftest import Site

#: seconds any one wait may take (the servers answer in milliseconds)
TIMEOUT = 30.0


async def drive(parameters: StdioServerParameters) -> dict[str, Any]:
    seen: dict[str, Any] = {}
    with anyio.fail_after(TIMEOUT):
        async with (
            stdio_client(parameters) as (read, write),
            ClientSession(read, write) as session,
        ):
            initialized = await session.initialize()
            seen["server"] = initialized.server_info.name
            seen["tools"] = [tool.name for tool in (await session.list_tools()).tools]
            result = await session.call_tool("beta_echo", {"text": "hi"})
            content = result.content[0]
            assert isinstance(content, types.TextContent)
            seen["echo"] = content.text
            read_result = await session.read_resource("alpha://items/5")
            resource = read_result.contents[0]
            assert isinstance(resource, types.TextResourceContents)
            seen["resource"] = resource.text
            prompt = await session.get_prompt("alpha_greet", {"who": "Ada"})
            message = prompt.messages[0].content
            assert isinstance(message, types.TextContent)
            seen["prompt"] = message.text
    return seen


def test_the_official_client_drives_two_plugins_served_as_one(site: Site, tmp_path: Path) -> None:
    site.install_plugin("alpha")
    site.install_plugin("beta")
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(site.root), *sys.path])
    parameters = StdioServerParameters(
        command=sys.executable,
        args=["-m", "mcpactor", "serve", "alpha", "beta"],
        env=env,
        cwd=tmp_path,
    )
    seen = anyio.run(drive, parameters, backend="asyncio")
    assert seen == {
        "server": "mcpactor",
        "tools": ["alpha_echo", "beta_echo"],
        "echo": "beta: hi",
        "resource": "alpha item 5",
        "prompt": "hello Ada",
    }
