"""What the server writes is held to the transport's message limit (issue 43, item 17).

A result larger than the largest message the transport takes (``--max-message-bytes``,
the limit its peer is held to) used to be written whole, however large. It now goes out
as an error for its request: -32603, a message naming the limit, ``data: {"limit": …}``,
on every transport and in both eras; the session goes on.
"""

from __future__ import annotations

from typing import Any

import pytest
import trio

from mcpactor import Context, LocalProtocolError, RequestError, Server
from mcpactor.client import connect_websocket
from mcpactor.transports import HttpOptions

from ..spec_schema import check
from ._http_server import asgi_client, initialized, socket_client
from .test_http_2026 import Client as StatelessClient
from .test_stdio import serving
from .test_stdio_2026 import PipeClient

LIMIT = 64 * 1024


def big_server() -> Server:
    server = Server("big", "1.0.0")

    @server.tool()
    async def text(count: int) -> str:
        """Answer with ``count`` two-byte characters (it goes out twice: text and JSON)."""
        return "é" * count

    @server.tool()
    async def ask(count: int, ctx: Context) -> str:
        """Ask the client to sample a prompt of ``count`` characters."""
        try:
            await ctx.sample("x" * count, max_tokens=1)
        except LocalProtocolError as exc:
            return f"refused: {exc.data}"
        return "sent"

    return server


def over_limit(reply: dict[str, Any]) -> dict[str, Any]:
    error: dict[str, Any] = reply["error"]
    assert error["code"] == -32603
    assert error["data"] == {"limit": LIMIT}
    assert f"over the {LIMIT}-byte message limit" in error["message"]
    return error


async def test_stdio_answers_an_over_long_result_with_an_error_and_goes_on() -> None:
    async with serving(big_server(), max_line_bytes=LIMIT) as line:
        await line.initialize()
        # Written by the sender itself (the pipe is quiet)…
        big = await line.request("tools/call", {"name": "text", "arguments": {"count": 20_000}})
        reply = await line.receive()
        assert reply["id"] == big
        over_limit(reply)
        # … and by the writer, behind other frames: both held to the limit.
        calls = [line.tool_call("text", {"count": n}) for n in (10, 20_000, 10, 20_000, 10)]
        for call in calls:
            await line.send(call)
        replies = {(m := await line.receive())["id"]: m for _ in calls}
        for call in calls:
            answer = replies[call["id"]]
            if call["params"]["arguments"]["count"] == 10:
                assert answer["result"]["content"][0]["text"] == "é" * 10
            else:
                over_limit(answer)


async def test_a_stateless_request_on_the_pipe_is_held_to_the_limit_too() -> None:
    async with serving(big_server(), max_line_bytes=LIMIT) as line:
        client = PipeClient(line)
        call = await client.post("tools/call", {"name": "text", "arguments": {"count": 20_000}})
        reply = await client.receive()
        assert reply["id"] == call
        over_limit(reply)


async def test_a_request_to_the_client_over_the_limit_is_refused_before_it_is_sent() -> None:
    async with serving(big_server(), max_line_bytes=LIMIT) as line:
        await line.send(
            line.request_message(
                "initialize",
                {
                    "protocolVersion": "2025-06-18",
                    "capabilities": {"sampling": {}},
                    "clientInfo": {"name": "c", "version": "1"},
                },
            )
        )
        await line.receive()
        await line.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        ask = await line.request("tools/call", {"name": "ask", "arguments": {"count": LIMIT}})
        reply = await line.receive()
        assert reply["id"] == ask
        assert reply["result"]["content"][0]["text"] == f"refused: {{'limit': {LIMIT}}}"


@pytest.mark.parametrize("response_mode", ["json", "sse"])
async def test_http_answers_an_over_long_result_with_an_error(response_mode: str) -> None:
    options = HttpOptions(max_body_bytes=LIMIT, response_mode=response_mode)  # type: ignore[arg-type]
    async with asgi_client(big_server(), options=options) as (_, http):
        client = await initialized(http)
        over_limit(
            await client.call("tools/call", {"name": "text", "arguments": {"count": 20_000}})
        )
        small = await client.call("tools/call", {"name": "text", "arguments": {"count": 10}})
        assert small["result"]["content"][0]["text"] == "é" * 10


async def test_a_stateless_http_request_is_held_to_the_limit() -> None:
    async with asgi_client(big_server(), options=HttpOptions(max_body_bytes=LIMIT)) as (_, http):
        client = StatelessClient(http)
        message = client.message("tools/call", {"name": "text", "arguments": {"count": 20_000}})
        response = await client.post(message)
        reply = await response.json()
        check(reply, "2026-07-28", "JSONRPCErrorResponse")
        assert reply["id"] == message["id"]
        over_limit(reply)


async def test_websocket_answers_an_over_long_result_with_an_error() -> None:
    options = HttpOptions(max_body_bytes=LIMIT)
    async with socket_client(big_server(), options=options) as http:
        url = f"ws://{http.host}:{http.port}/ws"
        async with connect_websocket(url, initialize=True, max_message_bytes=LIMIT) as client:
            with trio.fail_after(5), pytest.raises(RequestError) as refused:
                await client.call_tool("text", {"count": 20_000})
            assert (refused.value.code, refused.value.data) == (-32603, {"limit": LIMIT})
            assert (await client.call_tool("text", {"count": 10}))["content"][0]["text"]


async def test_tasks_results_are_held_to_the_transports_limit() -> None:
    async with serving(big_server(), max_line_bytes=LIMIT) as line:
        assert line.actor is not None
        assert line.actor.options.tasks.max_result_bytes == LIMIT
    async with asgi_client(big_server(), options=HttpOptions(max_body_bytes=LIMIT)) as (app, _):
        assert app.manager.effective_session_options.tasks.max_result_bytes == LIMIT
        stateless_tasks = app.manager.stateless.session_options.tasks
        assert stateless_tasks.max_result_bytes == LIMIT
