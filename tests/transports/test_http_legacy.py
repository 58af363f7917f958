"""The HTTP+SSE transport of 2024-11-05, served beside Streamable HTTP."""

from __future__ import annotations

import orjson
import pytest
import trio
import trio.testing

from mcpactor.transports import HttpOptions

from ..spec_schema import check_server_message
from ._http_server import Probe, asgi_client, make_server, served_app

JSON = {"content-type": "application/json"}


@pytest.fixture
def probe() -> Probe:
    return Probe()


async def test_endpoint_event_then_replies_on_the_stream(probe: Probe) -> None:
    async with served_app(make_server(probe)) as (app, http):
        stream = await http.request("GET", "/sse", {"accept": "text/event-stream"})
        assert stream.status == 200
        assert stream.content_type == "text/event-stream"
        endpoint = await stream.next_event()
        assert endpoint is not None
        assert endpoint.event == "endpoint"
        assert endpoint.data is not None
        assert endpoint.data.startswith("/messages?session_id=")

        async def post(message: dict[str, object]) -> None:
            response = await http.request("POST", endpoint.data, JSON, orjson.dumps(message))
            assert response.status == 202
            assert await response.body() == b"Accepted"

        await post(
            {
                "jsonrpc": "2.0",
                "id": 1,
                "method": "initialize",
                "params": {
                    "protocolVersion": "2024-11-05",
                    "capabilities": {},
                    "clientInfo": {"name": "old", "version": "1"},
                },
            }
        )
        initialized = await stream.next_event()
        assert initialized is not None
        assert initialized.event == "message"
        result = initialized.message()
        check_server_message(result, "2024-11-05", request_method="initialize")
        assert result["result"]["protocolVersion"] == "2024-11-05"
        await post({"jsonrpc": "2.0", "method": "notifications/initialized"})
        await post(
            {
                "jsonrpc": "2.0",
                "id": 2,
                "method": "tools/call",
                "params": {
                    "name": "count",
                    "arguments": {"steps": 1},
                    "_meta": {"progressToken": 1},
                },
            }
        )
        progress = await stream.next_event()
        reply = await stream.next_event()
        assert progress is not None
        assert reply is not None
        assert progress.message()["method"] == "notifications/progress"
        check_server_message(reply.message(), "2024-11-05", request_method="tools/call")
        assert reply.message()["result"]["content"][0]["text"] == "counted 1"

        # The stream is the session: closing it ends the session.
        await stream.disconnect()
        with trio.fail_after(5):
            await app.manager.wait_sessions(0)
        gone = await http.request("POST", endpoint.data, JSON, b'{"jsonrpc":"2.0","id":3}')
        assert gone.status == 404


async def test_legacy_posts_are_checked(probe: Probe) -> None:
    async with asgi_client(make_server(probe)) as (_, http):
        assert (await http.request("POST", "/messages", JSON, b"{}")).status == 400
        unknown = await http.request("POST", "/messages?session_id=nope", JSON, b"{}")
        assert unknown.status == 404
        stream = await http.request("GET", "/sse", {})
        endpoint = await stream.next_event()
        assert endpoint is not None
        assert endpoint.data is not None
        bad = await http.request("POST", endpoint.data, JSON, b"{nope")
        assert bad.status == 400
        assert (await bad.json())["error"]["code"] == -32700
        deep = b'{"jsonrpc": "2.0", "id": 3, "method": "ping", "params": {"a": %s}}' % (
            b"[" * 300 + b"]" * 300
        )
        too_deep = await http.request("POST", endpoint.data, JSON, deep)
        assert too_deep.status == 400
        assert (await too_deep.json())["error"] == {
            "code": -32600,
            "message": "the message nests deeper than 128 levels",
            "data": {"maxDepth": 128},
        }
        # A Streamable HTTP client cannot use a legacy session id, nor the reverse.
        headers = {
            "accept": "application/json, text/event-stream",
            "mcp-session-id": endpoint.data.partition("=")[2],
            **JSON,
        }
        crossed = await http.request(
            "POST", "/mcp", headers, b'{"jsonrpc":"2.0","id":1,"method":"ping"}'
        )
        assert crossed.status == 404
        assert (await http.request("GET", "/sse", {"origin": "http://evil.example"})).status == 403
        await stream.disconnect()


async def test_legacy_transport_can_be_switched_off(probe: Probe) -> None:
    options = HttpOptions(sse_path=None, messages_path=None)
    async with asgi_client(make_server(probe), options=options) as (app, http):
        assert (await http.request("GET", "/sse", {})).status == 404
        assert (await http.request("POST", "/messages?session_id=x", JSON, b"{}")).status == 404
        await trio.testing.wait_all_tasks_blocked()
        assert app.manager.statistics().sessions == 0
