"""Streamable HTTP at a stateless revision (2026-07-28), beside the session era."""

from __future__ import annotations

from typing import Any

import orjson
import pytest
import trio
import trio.testing

from mcpactor import Context, Server
from mcpactor.runtime import StatelessOptions
from mcpactor.runtime.http._session_manager import STATELESS_WATCH_AFTER
from mcpactor.transports import HttpOptions, open_http_app

from ..runtime.conftest import live_tasks
from ..spec_schema import check, check_server_message
from ._http_client import ACCEPT_BOTH, AsgiClient, Response
from ._http_server import Probe, asgi_client, initialized, make_server

REVISION = "2026-07-28"
ENVELOPE: dict[str, Any] = {
    "io.modelcontextprotocol/protocolVersion": REVISION,
    "io.modelcontextprotocol/clientCapabilities": {"elicitation": {}},
    "io.modelcontextprotocol/clientInfo": {"name": "test", "version": "1"},
}


@pytest.fixture
def probe() -> Probe:
    return Probe()


class Client:
    """Sends 2026-07-28 requests: an envelope in each, the headers that mirror it."""

    def __init__(self, http: AsgiClient) -> None:
        self.http = http
        self.next_id = 100

    def message(
        self, method: str, params: dict[str, Any] | None = None, **meta: Any
    ) -> dict[str, Any]:
        self.next_id += 1
        params = dict(params or {})
        params["_meta"] = {**ENVELOPE, **meta}
        return {"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params}

    def headers(self, message: dict[str, Any], **extra: str) -> dict[str, str]:
        headers = {
            "accept": ACCEPT_BOTH,
            "content-type": "application/json",
            "mcp-protocol-version": REVISION,
            "mcp-method": message["method"],
        }
        params = message.get("params") or {}
        name = params.get("name", params.get("uri"))
        if isinstance(name, str):
            headers["mcp-name"] = name
        headers.update(extra)
        return headers

    async def post(self, message: dict[str, Any], **extra: str) -> Response:
        return await self.http.request(
            "POST", "/mcp", self.headers(message, **extra), orjson.dumps(message)
        )

    async def call(self, method: str, params: dict[str, Any] | None = None) -> Any:
        message = self.message(method, params)
        response = await self.post(message)
        assert response.status == 200, (response.status, await response.body())
        assert "mcp-session-id" not in response.headers
        reply = await response.json()
        if reply.get("result", {}).get("resultType") == "input_required":
            check(reply["result"], REVISION, "InputRequiredResult")
        else:
            check_server_message(reply, REVISION, request_method=method)
        assert reply["id"] == message["id"]
        return reply


def changing_server(probe: Probe) -> Server:
    server = make_server(probe)

    @server.tool()
    async def confirm(ctx: Context) -> str:
        """Ask the user to confirm; answer with what they said."""
        answer = await ctx.elicit("sure?", {"type": "object", "properties": {}})
        return f"user said {answer.action}"

    return server


async def test_a_tool_call_is_served_without_a_session(probe: Probe) -> None:
    async with asgi_client(make_server(probe)) as (app, http):
        client = Client(http)
        reply = await client.call("tools/call", {"name": "add", "arguments": {"a": 2, "b": 5}})
        result = reply["result"]
        assert result["structuredContent"] == {"result": 7}
        assert result["resultType"] == "complete"
        assert result["_meta"]["io.modelcontextprotocol/serverInfo"]["name"] == "http-test"
        listed = await client.call("tools/list")
        assert [tool["name"] for tool in listed["result"]["tools"]]
        discovered = await client.call("server/discover")
        assert REVISION in discovered["result"]["supportedVersions"]
        await trio.testing.wait_all_tasks_blocked()
        assert app.manager.statistics().sessions == 0
        assert app.stateless.statistics().requests_in_flight == 0
        # Answered at once: no task watched for the client leaving.
        assert app.manager.late_watch.watching == 0


async def test_refusals_keep_the_id_and_have_their_status(probe: Probe) -> None:
    async with asgi_client(make_server(probe)) as (_, http):
        client = Client(http)
        # No envelope keys at all: -32602 and 400.
        message = client.message("tools/list")
        message["params"]["_meta"] = {}
        response = await client.post(message)
        body = await response.json()
        assert response.status == 400
        assert (body["id"], body["error"]["code"]) == (message["id"], -32602)
        # A revision we do not serve, in the body (the header agrees).
        message = client.message(
            "tools/list", **{"io.modelcontextprotocol/protocolVersion": "2099-01-01"}
        )
        response = await client.post(message, **{"mcp-protocol-version": "2099-01-01"})
        body = await response.json()
        assert response.status == 400
        assert body["error"]["code"] == -32022
        assert body["error"]["data"]["requested"] == "2099-01-01"
        assert REVISION in body["error"]["data"]["supported"]
        # The header names this revision, the body an unknown one: the mismatch comes first.
        message = client.message(
            "tools/list", **{"io.modelcontextprotocol/protocolVersion": "v999.0.0"}
        )
        response = await client.post(message)
        body = await response.json()
        assert response.status == 400
        assert (body["id"], body["error"]["code"]) == (message["id"], -32020)
        # The header says another thing than the body.
        message = client.message("tools/call", {"name": "add", "arguments": {"a": 1, "b": 1}})
        response = await client.post(message, **{"mcp-name": "other"})
        body = await response.json()
        assert response.status == 400
        assert (body["id"], body["error"]["code"]) == (message["id"], -32020)
        # Whitespace around a header value is no part of it.
        message = client.message("tools/call", {"name": "add", "arguments": {"a": 1, "b": 1}})
        response = await client.post(message, **{"mcp-name": "  add \t"})
        assert response.status == 200
        assert (await response.json())["result"]["structuredContent"] == {"result": 2}
        # A method of the session era only.
        for method in ("ping", "initialize", "logging/setLevel", "no/such"):
            message = client.message(method)
            response = await client.post(message)
            body = await response.json()
            assert response.status == 404, method
            assert (body["id"], body["error"]["code"]) == (message["id"], -32601)
            check(body, REVISION, "JSONRPCErrorResponse")
        # Only POST at this revision.
        for method in ("GET", "DELETE"):
            response = await http.request(
                method, "/mcp", {"accept": ACCEPT_BOTH, "mcp-protocol-version": REVISION}
            )
            assert response.status == 405
            await response.body()


async def test_progress_streams_as_sse_without_event_ids(probe: Probe) -> None:
    async with asgi_client(make_server(probe)) as (_, http):
        client = Client(http)
        message = client.message(
            "tools/call", {"name": "count", "arguments": {"steps": 2}}, progressToken="p"
        )
        response = await client.post(message)
        assert response.status == 200
        assert response.content_type == "text/event-stream"
        events = await response.events()
        assert all(event.id is None for event in events)
        messages = [event.message() for event in events]
        assert [m.get("method") for m in messages[:2]] == ["notifications/progress"] * 2
        for notice in messages[:2]:
            check_server_message(notice, REVISION)
        assert messages[-1]["id"] == message["id"]
        assert messages[-1]["result"]["content"][0]["text"] == "counted 2"


async def test_closing_the_response_cancels_the_handler(probe: Probe) -> None:
    async with asgi_client(make_server(probe)) as (app, http):
        client = Client(http)
        baseline = len(live_tasks())
        message = client.message("tools/call", {"name": "hold", "arguments": {}}, progressToken=1)
        response = await client.post(message)
        event = await response.next_event()
        assert event is not None
        assert event.message()["method"] == "notifications/progress"
        await probe.started.wait()
        await response.disconnect()
        with trio.fail_after(5):
            await probe.cancelled.wait()
        await trio.testing.wait_all_tasks_blocked()
        assert app.stateless.statistics().requests_in_flight == 0
        assert len(live_tasks()) <= baseline


async def test_a_session_and_stateless_requests_side_by_side(probe: Probe) -> None:
    async with asgi_client(make_server(probe)) as (app, http):
        session = await initialized(http)
        stateless = Client(http)
        first = await session.call("tools/call", {"name": "add", "arguments": {"a": 1, "b": 2}})
        second = await stateless.call("tools/call", {"name": "add", "arguments": {"a": 3, "b": 4}})
        third = await session.call("tools/call", {"name": "add", "arguments": {"a": 5, "b": 6}})
        assert first["result"]["structuredContent"] == {"result": 3}
        assert "resultType" not in first["result"]
        assert second["result"]["structuredContent"] == {"result": 7}
        assert third["result"]["structuredContent"] == {"result": 11}
        assert app.manager.statistics().named_sessions == 1


async def test_an_elicitation_takes_a_retry(probe: Probe) -> None:
    async with asgi_client(changing_server(probe)) as (_, http):
        client = Client(http)
        first = await client.call("tools/call", {"name": "confirm", "arguments": {}})
        result = first["result"]
        assert result["resultType"] == "input_required"
        (key,) = result["inputRequests"]
        retry = await client.call(
            "tools/call",
            {
                "name": "confirm",
                "arguments": {},
                "inputResponses": {key: {"action": "accept", "content": {}}},
                "requestState": result["requestState"],
            },
        )
        assert retry["result"]["content"][0]["text"] == "user said accept"
        forged = await client.post(
            client.message(
                "tools/call",
                {
                    "name": "confirm",
                    "arguments": {},
                    "inputResponses": {key: {"action": "accept", "content": {}}},
                    "requestState": result["requestState"] + "x",
                },
            )
        )
        assert (await forged.json())["error"]["code"] == -32602


async def test_a_listen_stream_carries_tagged_changes_until_left(
    probe: Probe, autojump_clock: trio.testing.MockClock
) -> None:
    async with asgi_client(make_server(probe)) as (app, http):
        client = Client(http)
        baseline = len(live_tasks())
        listen = client.message(
            "subscriptions/listen",
            {"notifications": {"toolsListChanged": True, "promptsListChanged": True}},
        )
        stream = await client.post(listen)
        assert stream.content_type == "text/event-stream"
        first = await stream.next_event()
        assert first is not None
        ack = first.message()
        check(ack, REVISION, "SubscriptionsAcknowledgedNotification")
        assert ack["method"] == "notifications/subscriptions/acknowledged"
        meta = ack["params"]["_meta"]
        assert meta["io.modelcontextprotocol/subscriptionId"] == listen["id"]
        # Tools change (the server offers tools listChanged): the stream hears it, tagged.
        await client.call("tools/call", {"name": "change_tools", "arguments": {}})
        changed = await stream.next_event()
        assert changed is not None
        notice = changed.message()
        check_server_message(notice, REVISION)
        assert notice["method"] == "notifications/tools/list_changed"
        assert notice["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"] == listen["id"]
        assert app.stateless.statistics().listen_streams == 1
        await stream.disconnect()
        # The stream outlasted the moment before its client is watched: leaving ends it.
        await trio.sleep(STATELESS_WATCH_AFTER * 2)
        await trio.testing.wait_all_tasks_blocked()
        assert app.stateless.statistics().listen_streams == 0
        assert app.manager.late_watch.watching == 0
        assert len(live_tasks()) <= baseline


async def test_a_listen_stream_ends_with_its_result_on_shutdown(probe: Probe) -> None:
    async with asgi_client(make_server(probe)) as (app, http):
        client = Client(http)
        listen = client.message("subscriptions/listen", {"notifications": {}})
        stream = await client.post(listen)
        ack = await stream.next_event()
        assert ack is not None
        app.manager.stop()
        rest = await stream.messages()
        assert rest[-1]["id"] == listen["id"]
        assert rest[-1]["result"]["resultType"] == "complete"
        check(rest[-1], REVISION, "SubscriptionsListenResultResponse")


async def test_a_listen_stream_is_a_stream_on_a_server_answering_json(probe: Probe) -> None:
    # JSON answers are for one-off requests: the revision says a listen request's answer
    # is an SSE stream, so it streams whatever the server's response mode.
    options = HttpOptions(response_mode="json")
    async with asgi_client(make_server(probe), options=options) as (_, http):
        client = Client(http)
        reply = await client.call("tools/call", {"name": "add", "arguments": {"a": 1, "b": 1}})
        assert reply["result"]["structuredContent"] == {"result": 2}
        listen = client.message(
            "subscriptions/listen", {"notifications": {"toolsListChanged": True}}
        )
        stream = await client.post(listen)
        assert stream.content_type == "text/event-stream"
        first = await stream.next_event()
        assert first is not None
        check(first.message(), REVISION, "SubscriptionsAcknowledgedNotification")
        await client.call("tools/call", {"name": "change_tools", "arguments": {}})
        changed = await stream.next_event()
        assert changed is not None
        assert changed.message()["method"] == "notifications/tools/list_changed"
        await stream.disconnect()


async def test_a_listen_request_that_takes_no_events_is_refused_at_once(probe: Probe) -> None:
    # A server answering JSON takes a POST accepting JSON alone; a listen request cannot
    # be answered that way, so it is refused at once rather than held without an answer.
    options = HttpOptions(response_mode="json")
    async with asgi_client(make_server(probe), options=options) as (app, http):
        client = Client(http)
        listen = client.message("subscriptions/listen", {"notifications": {}})
        response = await client.post(listen, accept="application/json")
        assert response.status == 406
        reply = await response.json()
        assert reply["id"] == listen["id"]
        assert reply["error"]["code"] == -32600
        assert "text/event-stream" in reply["error"]["message"]
        assert app.stateless.statistics().listen_streams == 0
        # The refusal gave back the client's share: its next request is served.
        again = await client.call("tools/list")
        assert again["result"]["tools"]


async def test_keepalive_comments_on_an_idle_listen_stream(
    probe: Probe, autojump_clock: trio.testing.MockClock
) -> None:
    async with asgi_client(make_server(probe)) as (app, http):
        client = Client(http)
        stream = await client.post(client.message("subscriptions/listen", {"notifications": {}}))
        assert await stream.next_event() is not None
        # Quiet for longer than the interval: a comment keeps the connection alive.
        interval = app.stateless.options.keepalive
        assert interval is not None
        await trio.sleep(interval + 1)
        chunk = await stream._chunks.receive()
        assert chunk == b": keep-alive\n\n"
        assert app.stateless.statistics().listen_streams == 1
        await stream.disconnect()


async def test_a_task_tool_runs_as_a_task_for_a_client_that_declares_it(probe: Probe) -> None:
    server = make_server(probe)

    @server.tool(task_support="required")
    async def slow_job(ctx: Context) -> str:
        """Wait for the test, then finish."""
        await probe.release.wait()
        return "job done"

    async with asgi_client(server) as (_, http):
        client = Client(http)
        tasks = {"extensions": {"io.modelcontextprotocol/tasks": {}}}
        message = client.message(
            "tools/call",
            {"name": "slow_job", "arguments": {}},
            **{"io.modelcontextprotocol/clientCapabilities": tasks},
        )
        created = await (await client.post(message)).json()
        assert created["result"]["resultType"] == "task"
        task_id = created["result"]["taskId"]
        listen = client.message(
            "subscriptions/listen",
            {"notifications": {"taskIds": [task_id, "unknown"]}},
            **{"io.modelcontextprotocol/clientCapabilities": tasks},
        )
        stream = await client.post(listen)
        ack = await stream.next_event()
        assert ack is not None
        assert ack.message()["params"]["notifications"]["taskIds"] == [task_id]
        probe.release.set()
        notice = await stream.next_event()
        assert notice is not None
        status = notice.message()
        assert status["method"] == "notifications/tasks"
        assert status["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"] == listen["id"]
        assert status["params"]["taskId"] == task_id
        await stream.disconnect()
        get = client.message(
            "tasks/get",
            {"taskId": task_id},
            **{"io.modelcontextprotocol/clientCapabilities": tasks},
        )
        response = await client.post(get, **{"mcp-name": task_id})
        answer = await response.json()
        assert answer["result"]["status"] == "completed", answer
        # Without the extension declared, a tool that needs a task is refused.
        response = await client.post(
            client.message("tools/call", {"name": "slow_job", "arguments": {}})
        )
        refused = await response.json()
        assert response.status == 400
        assert refused["error"]["code"] == -32021
        assert refused["error"]["data"]["requiredCapabilities"] == tasks


async def test_requests_beyond_the_in_flight_limit_are_refused(probe: Probe) -> None:
    async with (
        trio.open_nursery() as nursery,
        open_http_app(make_server(probe), stateless=StatelessOptions(max_in_flight=1)) as app,
    ):
        client = Client(AsgiClient(app, nursery))
        held = client.message("tools/call", {"name": "hold_quietly", "arguments": {}})
        nursery.start_soon(client.post, held)
        await probe.started.wait()
        message = client.message("tools/call", {"name": "add", "arguments": {"a": 1, "b": 1}})
        refused = await (await client.post(message)).json()
        assert (refused["id"], refused["error"]["code"]) == (message["id"], -32603)
        assert "too many requests in flight" in refused["error"]["message"]
        assert refused["error"]["data"] == {"limit": 1}
        probe.release.set()
        await trio.testing.wait_all_tasks_blocked()
        again = await client.call("tools/call", {"name": "add", "arguments": {"a": 1, "b": 1}})
        assert again["result"]["structuredContent"] == {"result": 2}
        nursery.cancel_scope.cancel()
