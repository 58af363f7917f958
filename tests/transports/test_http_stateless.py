"""Stateless Streamable HTTP: every POST is served on its own, no session ids."""

from __future__ import annotations

import contextlib
import logging
from collections.abc import AsyncIterator
from typing import Any

import pytest
import trio
import trio.testing

from mcpactor import Context, Server
from mcpactor.runtime import Outbound, SessionOptions
from mcpactor.runtime.http import WATCH_AFTER, Routing
from mcpactor.transports import HttpOptions

from ..runtime.conftest import live_tasks
from ..spec_schema import check_server_message
from ._http_client import Later, McpClient, read_reply, start_post
from ._http_server import Probe, asgi_client, make_server

STATELESS = HttpOptions(stateless=True)
GRACE = SessionOptions(shutdown_grace=3.0)
HOLD_QUIETLY: dict[str, Any] = {"name": "hold_quietly", "arguments": {}}


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


async def test_a_request_runs_in_its_sessions_actor_and_ends_with_it(probe: Probe) -> None:
    async with asgi_client(make_server(probe), options=STATELESS) as (app, http):
        client = McpClient(http)
        client.protocol_version = "2025-11-25"
        await trio.testing.wait_all_tasks_blocked()
        before = live_tasks()
        later = start_post(client, client.request("tools/call", HOLD_QUIETLY))
        await probe.started.wait()
        await trio.testing.wait_all_tasks_blocked()
        manager_nursery = app.manager._nursery
        assert manager_nursery is not None
        # One session task in the manager's nursery; the request's actor runs under it.
        (session_task,) = manager_nursery.child_tasks
        (request_task,) = [task for task in live_tasks() if task.name == "mcpactor.request"]
        task = request_task
        while task is not session_task:
            assert task.parent_nursery is not None
            task = task.parent_nursery.parent_task
        assert app.manager.statistics().sessions == 1
        probe.release.set()
        reply = await (await later.wait()).json()
        assert reply["result"]["content"][0]["text"] == "released"
        await trio.testing.wait_all_tasks_blocked()
        assert live_tasks() == before
        assert app.manager.statistics().sessions == 0


@contextlib.asynccontextmanager
async def _stopped_while_holding(probe: Probe) -> AsyncIterator[tuple[Later, float]]:
    # A stateless request is running when the server stops; on exit every session ended.
    server = make_server(probe)
    async with asgi_client(server, options=STATELESS, session_options=GRACE) as (app, http):
        client = McpClient(http)
        client.protocol_version = "2025-11-25"
        later = start_post(client, client.request("tools/call", HOLD_QUIETLY))
        await probe.started.wait()
        stopped = trio.current_time()
        app.manager.stop()
        yield later, stopped
        with trio.fail_after(1):
            await app.manager.wait_sessions(0)
        assert app.manager.statistics().sessions == 0


async def test_stopping_lets_a_running_request_answer_within_the_grace(
    probe: Probe, autojump_clock: trio.testing.MockClock
) -> None:
    async with _stopped_while_holding(probe) as (later, _):
        await trio.sleep(GRACE.shutdown_grace / 2)
        assert not probe.finished.is_set()
        probe.release.set()
        reply = await (await later.wait()).json()
        assert reply["result"]["content"][0]["text"] == "released"


async def test_stopping_cancels_a_request_still_running_after_the_grace(
    probe: Probe, autojump_clock: trio.testing.MockClock
) -> None:
    async with _stopped_while_holding(probe) as (later, stopped):
        await probe.cancelled.wait()
        assert trio.current_time() - stopped == pytest.approx(GRACE.shutdown_grace)
        reply = await (await later.wait()).json()
        assert reply["error"]["message"] == "the session ended before the request was answered"
        check_server_message(reply, "2025-11-25")


async def test_a_client_that_leaves_has_its_request_cancelled_after_the_grace(
    probe: Probe, autojump_clock: trio.testing.MockClock
) -> None:
    server = make_server(probe)
    async with asgi_client(server, options=STATELESS, session_options=GRACE) as (app, http):
        client = McpClient(http)
        client.protocol_version = "2025-11-25"
        await trio.testing.wait_all_tasks_blocked()
        before = live_tasks()
        request = client.request("tools/call", {"name": "hold", "arguments": {}})
        request["params"]["_meta"] = {"progressToken": 1}
        stream = await client.post(request)
        assert (await stream.next_event()) is not None  # the progress notification
        left = trio.current_time()
        await stream.disconnect()
        await probe.cancelled.wait()
        # Noticed once the stream watches for it; then the shutdown grace, as for any
        # stateless session that closes while a request runs: nobody can resume it.
        assert trio.current_time() - left == pytest.approx(WATCH_AFTER + GRACE.shutdown_grace)
        with trio.fail_after(1):
            await app.manager.wait_sessions(0)
        await trio.testing.wait_all_tasks_blocked()
        assert live_tasks() == before


async def test_a_batch_of_calls_is_answered_in_one_array(probe: Probe) -> None:
    async with asgi_client(make_server(probe), options=STATELESS) as (_, http):
        client = McpClient(http)
        client.protocol_version = "2025-03-26"  # the last revision with batches
        batch = [
            client.request("tools/call", {"name": "add", "arguments": {"a": 1, "b": 2}}),
            client.request("tools/call", {"name": "count", "arguments": {"steps": 1}}),
            client.request("ping"),
        ]
        replies = await read_reply(await client.post(batch))
        by_id = {reply["id"]: reply for reply in replies}
        assert sorted(by_id) == sorted(message["id"] for message in batch)
        assert by_id[batch[0]["id"]]["result"]["content"][0]["text"] == '{"result":3}'
        assert by_id[batch[1]["id"]]["result"]["content"][0]["text"] == "counted 1"
        assert by_id[batch[2]["id"]]["result"] == {}
        check_server_message(replies, "2025-03-26")
        malformed = await client.post([1, {"foo": 1}])
        assert malformed.status == 400
        assert [e["error"]["code"] for e in await malformed.json()] == [-32600, -32600]


async def test_a_stream_longer_than_a_connection_holds_keeps_its_order() -> None:
    server = Server("chatty")
    steps = 300  # several times what one connection queues

    @server.tool()
    async def chatter(ctx: Context) -> str:
        """Report progress many times without waiting in between."""
        for step in range(steps):
            await ctx.report_progress(step + 1, steps)
        return "done"

    async with asgi_client(server, options=STATELESS) as (app, http):
        client = McpClient(http)
        client.protocol_version = "2025-11-25"
        request = client.request("tools/call", {"name": "chatter", "arguments": {}})
        request["params"]["_meta"] = {"progressToken": "p"}
        messages = await (await client.post(request)).messages()
        progress = [m["params"]["progress"] for m in messages if "method" in m]
        assert progress == list(range(1, steps + 1))
        assert messages[-1]["result"]["content"][0]["text"] == "done"
        await trio.testing.wait_all_tasks_blocked()
        assert app.manager.statistics().sessions == 0


async def test_stateless_posts_share_one_pool_of_worker_processes() -> None:
    from ..runtime import offload_functions

    server = Server("offloading")
    server.add_tool(offload_functions.worker_pid, name="pid", offload="process")
    async with asgi_client(server, options=STATELESS) as (app, http):
        client = McpClient(http)
        client.protocol_version = "2025-11-25"
        pool = app.manager.stateless_session_options.process_pool
        assert pool is not None
        pids = set()
        for _ in range(3):
            reply = await client.call("tools/call", {"name": "pid", "arguments": {}})
            pids.add(reply["result"]["structuredContent"]["result"])
        # One worker, started once and kept between POSTs, not one per POST.
        assert len(pids) == 1
        assert pool.statistics().started == 1
        assert pool.statistics().idle == 1
        await trio.testing.wait_all_tasks_blocked()
        assert app.manager.statistics().sessions == 0
    # The manager closed it when it stopped.
    assert pool.statistics().idle == 0


async def test_a_request_actor_that_fails_ends_only_its_session(
    probe: Probe, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    route = Routing.route
    failures = ["the router broke"]

    async def breaks_once(self: Routing, item: Outbound) -> None:
        if failures:
            raise RuntimeError(failures.pop())
        await route(self, item)

    monkeypatch.setattr(Routing, "route", breaks_once)
    async with asgi_client(make_server(probe), options=STATELESS) as (app, http):
        client = McpClient(http)
        client.protocol_version = "2025-11-25"
        call = {"name": "add", "arguments": {"a": 1, "b": 1}}
        with caplog.at_level(logging.ERROR, logger="mcpactor"):
            broken = await client.call("tools/call", call)
        # Its POST is answered with an error, the failure is logged, and the server (the
        # manager's nursery the session ran in) keeps serving.
        assert broken["error"]["message"] == "the session ended before the request was answered"
        assert "the router broke" in caplog.text
        reply = await client.call("tools/call", call)
        assert reply["result"]["structuredContent"] == {"result": 2}
        await trio.testing.wait_all_tasks_blocked()
        assert app.manager.statistics().sessions == 0
