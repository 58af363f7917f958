"""The official SDK's client at 2026-07-28 against ``mcpactor serve`` (stdio and HTTP).

The SDK's ``Client`` in ``auto`` mode probes ``server/discover`` and adopts the newest
revision we list; forced to ``legacy`` it opens a session instead. Both run against one
server process per transport here: the two eras side by side.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from typing import Any

import anyio
import mcp.types as types
import pytest
from mcp import StdioServerParameters
from mcp.client import Client

from ._sdk_client import EVERYTHING, TIMEOUT, serving_http

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")

REVISION = "2026-07-28"


@pytest.fixture(scope="module")
def http_url() -> Iterator[str]:
    with serving_http(str(EVERYTHING)) as port:
        yield f"http://127.0.0.1:{port}/mcp"


def _stdio() -> StdioServerParameters:
    return StdioServerParameters(
        command=sys.executable, args=["-m", "mcpactor", "serve", str(EVERYTHING)]
    )


async def _elicit(context: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
    return types.ElicitResult(action="accept", content={"guests": 4, "terrace": True})


async def _exercise(server: Any, mode: str) -> tuple[str, list[str]]:
    seen: list[str] = []
    with anyio.fail_after(TIMEOUT):
        async with Client(server, mode=mode, elicitation_callback=_elicit) as client:  # type: ignore[arg-type]
            tools = await client.list_tools()
            names = {tool.name for tool in tools.tools}
            assert {"echo", "book_table"} <= names
            echoed = await client.call_tool("echo", {"text": "hi"})
            seen.append(echoed.content[0].text)  # type: ignore[union-attr]
            # An elicitation: a server→client request in a session, an input_required
            # round answered by the SDK's retry at 2026-07-28. Same handler, same answer.
            booked = await client.call_tool("book_table", {"restaurant": "Chez Nous"})
            seen.append(booked.content[0].text)  # type: ignore[union-attr]
            about = await client.read_resource("everything://about")
            assert about.contents
            return client.protocol_version, seen


@pytest.mark.parametrize("mode", ["auto", "legacy"])
def test_the_sdk_client_over_http_in_either_era(http_url: str, mode: str) -> None:
    version, seen = anyio.run(_exercise, http_url, mode)
    assert (version == REVISION) is (mode == "auto")
    assert seen == ["hi", "Booked Chez Nous for 4 on the terrace."]


@pytest.mark.parametrize("mode", ["auto", "legacy"])
def test_the_sdk_client_over_stdio_in_either_era(mode: str) -> None:
    version, seen = anyio.run(_exercise, _stdio(), mode)
    assert (version == REVISION) is (mode == "auto")
    assert seen == ["hi", "Booked Chez Nous for 4 on the terrace."]


async def _listen(server: Any) -> str:
    with anyio.fail_after(TIMEOUT):
        async with Client(server, mode="auto") as client:
            assert client.protocol_version == REVISION
            async with client.listen(resource_subscriptions=["everything://counter"]) as events:
                await client.call_tool("increment", {"by": 1})
                async for event in events:
                    return type(event).__name__
    raise AssertionError("the listen stream ended without an event")


def test_the_sdk_client_hears_resource_updates_on_a_listen_stream(http_url: str) -> None:
    assert "Resource" in anyio.run(_listen, http_url)


def test_the_sdk_client_hears_resource_updates_on_stdio() -> None:
    assert "Resource" in anyio.run(_listen, _stdio())
