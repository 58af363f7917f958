"""Stateless Streamable HTTP: every POST is served on its own, no session ids."""

from __future__ import annotations

import pytest
import trio
import trio.testing

from mcpactor.transports import HttpOptions

from ..spec_schema import check_server_message
from ._http_client import McpClient, read_reply
from ._http_server import Probe, asgi_client, make_server

STATELESS = HttpOptions(stateless=True)


@pytest.fixture
def probe() -> Probe:
    return Probe()


async def test_requests_need_no_handshake_and_get_no_session(probe: Probe) -> None:
    async with asgi_client(make_server(probe), options=STATELESS) as (app, http):
        client = McpClient(http)
        client.protocol_version = "2025-06-18"
        reply = await client.call("tools/call", {"name": "add", "arguments": {"a": 3, "b": 4}})
        assert reply["result"]["structuredContent"] == {"result": 7}
        # Served at the header's revision: output schemas exist since 2025-06-18.
        listed = await client.call("tools/list")
        add = next(t for t in listed["result"]["tools"] if t["name"] == "add")
        assert "outputSchema" in add
        client.protocol_version = "2025-03-26"
        listed = await client.call("tools/list")
        add = next(t for t in listed["result"]["tools"] if t["name"] == "add")
        assert "outputSchema" not in add
        response = await client.post(client.request("ping"))
        assert "mcp-session-id" not in response.headers
        await response.body()
        await trio.testing.wait_all_tasks_blocked()
        assert app.manager.statistics().sessions == 0


async def test_the_revision_comes_from_the_header(probe: Probe) -> None:
    async with asgi_client(make_server(probe), options=STATELESS) as (_, http):
        client = McpClient(http)
        # No header: 2025-03-26, which allows batches.
        response = await client.post([client.request("ping"), client.request("ping")])
        replies = await read_reply(response)
        assert [r["result"] for r in replies] == [{}, {}]
        check_server_message(replies, "2025-03-26")
        refused = await client.post([client.request("ping")], mcp_protocol_version="2025-06-18")
        assert refused.status == 400
        unknown = await client.post(client.request("ping"), mcp_protocol_version="2000-01-01")
        assert unknown.status == 400


async def test_progress_streams_and_client_requests_are_refused(probe: Probe) -> None:
    async with asgi_client(make_server(probe), options=STATELESS) as (_, http):
        client = McpClient(http)
        client.protocol_version = "2025-11-25"
        request = client.request(
            "tools/call",
            {"name": "count", "arguments": {"steps": 2}, "_meta": {"progressToken": 5}},
        )
        response = await client.post(request)
        assert response.content_type == "text/event-stream"
        events = await response.events()
        # Nothing to resume without a session: no ids, no priming event.
        assert all(event.id is None and event.data for event in events)
        assert [e.message().get("method") for e in events] == [
            "notifications/progress",
            "notifications/progress",
            None,
        ]
        asked = await client.call("tools/call", {"name": "ask", "arguments": {"prompt": "x"}})
        text = asked["result"]["content"][0]["text"]
        assert asked["result"]["isError"] is True
        assert "stateless mode" in text


async def test_sse_mode_answers_with_a_stream_here_too(probe: Probe) -> None:
    options = HttpOptions(stateless=True, response_mode="sse")
    async with asgi_client(make_server(probe), options=options) as (_, http):
        client = McpClient(http)
        client.protocol_version = "2025-11-25"
        response = await client.post(
            client.request("tools/call", {"name": "add", "arguments": {"a": 1, "b": 2}})
        )
        assert response.content_type == "text/event-stream"
        events = await response.events()
        assert [event.id for event in events] == [None]
        assert events[0].message()["result"]["structuredContent"] == {"result": 3}


async def test_sessions_only_methods_and_notifications(probe: Probe) -> None:
    async with asgi_client(make_server(probe), options=STATELESS) as (app, http):
        client = McpClient(http)
        get = await client.get()
        assert get.status == 405
        assert get.headers["allow"] == "POST"
        assert (await client.delete()).status == 405
        note = await client.post({"jsonrpc": "2.0", "method": "notifications/initialized"})
        assert note.status == 202
        initialize = await client.post(
            {
                "jsonrpc": "2.0",
                "id": 1,
                "method": "initialize",
                "params": {
                    "protocolVersion": "2025-11-25",
                    "capabilities": {},
                    "clientInfo": {"name": "t", "version": "1"},
                },
            }
        )
        assert "mcp-session-id" not in initialize.headers
        result = await initialize.json()
        check_server_message(result, "2025-11-25", request_method="initialize")
        await trio.testing.wait_all_tasks_blocked()
        assert app.manager.statistics().sessions == 0
