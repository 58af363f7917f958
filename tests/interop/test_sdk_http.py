"""The official SDK's Streamable HTTP and legacy SSE clients against ``mcpactor serve --http``.

One server process (``examples/everything.py`` on a free loopback port) serves every test
here; each test opens its own SDK session on an asyncio loop of its own.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterator

import anyio
import mcp.types as types
import pytest
from mcp import ClientSession
from mcp.client.session import ClientRequestContext
from mcp.client.sse import sse_client
from mcp.client.streamable_http import streamable_http_client

from ._sdk_client import EVERYTHING, MODEL, MODEL_ANSWER, TIMEOUT, serving_http

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")


# Both HTTP servers mcpactor can run in front of the same app.
@pytest.fixture(scope="module", params=["builtin", "hypercorn"])
def base_url(request: pytest.FixtureRequest) -> Iterator[str]:
    with serving_http(str(EVERYTHING), "--http-server", request.param, check_exit=True) as port:
        yield f"http://127.0.0.1:{port}"


async def _sampling(
    context: ClientRequestContext, params: types.CreateMessageRequestParams
) -> types.CreateMessageResult:
    return types.CreateMessageResult(
        role="assistant",
        content=types.TextContent(type="text", text=MODEL_ANSWER),
        model=MODEL,
        stop_reason="endTurn",
    )


def _run(main: Callable[[], Awaitable[None]]) -> None:
    anyio.run(main, backend="asyncio")


def test_streamable_http_client_calls_tools_with_progress_and_sampling(base_url: str) -> None:
    progress: list[float] = []

    async def on_progress(value: float, total: float | None, message: str | None) -> None:
        progress.append(value)

    async def main() -> None:
        with anyio.fail_after(TIMEOUT):
            async with (
                streamable_http_client(f"{base_url}/mcp") as (read, write, *_),
                ClientSession(read, write, sampling_callback=_sampling) as session,
            ):
                init = await session.initialize()
                assert init.protocol_version == "2025-11-25"
                names = {tool.name for tool in (await session.list_tools()).tools}
                assert {"echo", "count_to", "ask_model"} <= names
                echoed = await session.call_tool("echo", {"text": "over http"})
                assert echoed.structured_content == {"result": "over http"}
                counted = await session.call_tool(
                    "count_to", {"n": 3}, progress_callback=on_progress
                )
                assert not counted.is_error
                asked = await session.call_tool("ask_model", {"question": "Why is the sky blue?"})
                text = asked.content[0]
                assert isinstance(text, types.TextContent)
                assert text.text == f"{MODEL} answered: {MODEL_ANSWER}"
                read_back = await session.read_resource("everything://about")
                assert read_back.contents

    _run(main)
    assert progress == sorted(progress)
    assert len(progress) == 3


def test_legacy_sse_client_is_served(base_url: str) -> None:
    async def main() -> None:
        with anyio.fail_after(TIMEOUT):
            async with (
                sse_client(f"{base_url}/sse") as (read, write),
                ClientSession(read, write, sampling_callback=_sampling) as session,
            ):
                await session.initialize()
                echoed = await session.call_tool("echo", {"text": "over sse"})
                first = echoed.content[0]
                assert isinstance(first, types.TextContent)
                assert first.text == "over sse"
                asked = await session.call_tool("ask_model", {"question": "?"})
                answer = asked.content[0]
                assert isinstance(answer, types.TextContent)
                assert MODEL_ANSWER in answer.text

    _run(main)
