"""Hibernating Streamable HTTP sessions: asleep they are state only, awake they own tasks.

A session is created asleep and answers what its protocol core answers alone
(initialize, notifications/initialized, ping, logging/setLevel) without a task; a
request, a stream to resume, or a change for a GET listener wakes it, and it falls
asleep again once nothing is left in it and it has been quiet for ``SLEEP_AFTER``
seconds. Everything here
runs on virtual time.
"""

from __future__ import annotations

from typing import Any

import orjson
import pytest
import trio
import trio.testing

from mcpactor import Context, Server
from mcpactor.runtime import SessionOptions
from mcpactor.runtime.http import SLEEP_AFTER, HttpSession
from mcpactor.transports import HttpOptions, McpHttpApp, MemoryEventStore
from mcpactor.transports.http import EventStoreStatistics

from ..runtime.conftest import live_tasks
from ._http_client import McpClient, Response, start_post
from ._http_server import Probe, asgi_client, initialized, make_server

IDLE = 30 * 60.0


class Jobs:
    """What the ``job`` tool (a task) waits on and reports."""

    def __init__(self) -> None:
        self.started = trio.Event()
        self.release = trio.Event()


def make_test_server(probe: Probe, jobs: Jobs | None = None) -> Server:
    server = make_server(probe)
    jobs = jobs or Jobs()

    @server.tool()
    async def log_both(ctx: Context) -> str:
        """Log once at info and once at error."""
        await ctx.info("an info line")
        await ctx.error("an error line")
        return "logged"

    @server.tool(task_support="optional")
    async def job() -> str:
        """Wait until the test releases the job."""
        jobs.started.set()
        await jobs.release.wait()
        return "job done"

    @server.resource("mem://doc")
    async def doc() -> str:
        """A document."""
        return "text"

    return server


@pytest.fixture
def probe() -> Probe:
    return Probe()


def awake(app: McpHttpApp) -> int:
    return app.manager.statistics().awake_sessions


def session_of(app: McpHttpApp, client: McpClient) -> HttpSession:
    session = app.manager.get(client.session_id or "")
    assert session is not None
    return session


async def settle() -> None:
    """Let a quiet session fall asleep: what the manager does after SLEEP_AFTER."""
    await trio.sleep(2 * SLEEP_AFTER)
    await trio.testing.wait_all_tasks_blocked()


async def messages_until(response: Response, count: int) -> list[Any]:
    """The first ``count`` messages of an SSE stream (priming events skipped)."""
    found = []
    while len(found) < count:
        event = await response.next_event()
        assert event is not None, found
        if event.data:
            found.append(event.message())
    return found


async def test_a_new_session_runs_no_task_until_its_first_request(
    probe: Probe, autojump_clock: trio.testing.MockClock
) -> None:
    async with asgi_client(make_test_server(probe)) as (app, http):
        await trio.testing.wait_all_tasks_blocked()
        before = live_tasks()
        clients = [await initialized(http) for _ in range(20)]
        # What the protocol core answers alone needs no task either.
        for client in clients:
            assert (await client.call("ping"))["result"] == {}
            assert (await client.call("logging/setLevel", {"level": "error"}))["result"] == {}
        await trio.testing.wait_all_tasks_blocked()
        assert live_tasks() == before
        assert app.manager.statistics().sessions == 20
        assert awake(app) == 0

        # The first real request wakes its session, and only that one; everything the
        # session runs is owned by one task in the manager's nursery.
        first = clients[0]
        reply = await first.call("tools/call", {"name": "add", "arguments": {"a": 2, "b": 3}})
        assert reply["result"]["structuredContent"] == {"result": 5}
        await trio.testing.wait_all_tasks_blocked()
        assert awake(app) == 1
        new = live_tasks() - before
        manager_nursery = app.manager._nursery
        assert manager_nursery is not None
        (session_task,) = manager_nursery.child_tasks
        for task in new:
            while task is not session_task:
                assert task.parent_nursery is not None
                parent = task.parent_nursery.parent_task
                assert parent in new, task
                task = parent

        # Quiet for a moment, it sleeps: every one of its tasks has ended.
        await trio.sleep(SLEEP_AFTER / 2)
        assert awake(app) == 1
        await settle()
        assert awake(app) == 0
        assert live_tasks() == before

        # Asleep, it kept what the core settled: the log level chosen before it first
        # woke still filters what the next request logs.
        response = await first.post(first.request("tools/call", {"name": "log_both"}))
        messages = await response.messages()
        logged = [m["params"]["data"] for m in messages if "method" in m]
        assert logged == ["an error line"]
        assert messages[-1]["result"]["content"][0]["text"] == "logged"
        await settle()
        assert live_tasks() == before


async def test_a_session_stays_awake_while_anything_runs_in_it(
    probe: Probe, autojump_clock: trio.testing.MockClock
) -> None:
    jobs = Jobs()
    async with asgi_client(make_test_server(probe, jobs)) as (app, http):
        client = await initialized(http)
        # A request in flight, even with its connection gone.
        hold = {"name": "hold", "arguments": {}, "_meta": {"progressToken": 1}}
        response = await client.post(client.request("tools/call", hold))
        await probe.started.wait()
        await response.disconnect()
        await trio.sleep(10 * SLEEP_AFTER)
        assert awake(app) == 1
        probe.release.set()
        await probe.finished.wait()
        await trio.testing.wait_all_tasks_blocked()
        assert awake(app) == 1
        await settle()
        assert awake(app) == 0

        # A GET listener alone runs nothing: a change wakes the session for it (below).
        listening = await client.get()
        await trio.testing.wait_all_tasks_blocked()
        assert awake(app) == 0
        await listening.disconnect()
        await settle()
        assert awake(app) == 0

        # A task, which outlives the request that created it.
        created = await client.call(
            "tools/call", {"name": "job", "arguments": {}, "task": {"ttl": 60_000}}
        )
        task_id = created["result"]["task"]["taskId"]
        await jobs.started.wait()
        await trio.sleep(10 * SLEEP_AFTER)
        assert awake(app) == 1
        jobs.release.set()
        await settle()
        assert awake(app) == 0
        # Its record survived the sleep; asking for it wakes the session.
        result = await client.call("tasks/result", {"taskId": task_id})
        assert result["result"]["content"][0]["text"] == "job done"
        listed = await client.call("tasks/list")
        assert [task["status"] for task in listed["result"]["tasks"]] == ["completed"]

        # Its TTL passes while it sleeps: the record is gone when it next wakes.
        await settle()
        assert awake(app) == 0
        await trio.sleep(60)
        gone = await client.call("tasks/get", {"taskId": task_id})
        assert "Task not found" in gone["error"]["message"]
        assert (await client.call("tasks/list"))["result"]["tasks"] == []


async def test_a_change_wakes_a_sleeping_session_that_a_get_listens_on(
    probe: Probe, autojump_clock: trio.testing.MockClock
) -> None:
    server = make_test_server(probe)
    async with asgi_client(server) as (app, http):
        listener = await initialized(http)
        assert (await listener.call("resources/subscribe", {"uri": "mem://doc"}))["result"] == {}
        listening = await listener.get()
        await settle()
        # The stream is held however long it lasts, with the session asleep.
        await trio.sleep(10 * SLEEP_AFTER)
        assert not session_of(app, listener).runs.awake
        assert app.manager.get(listener.session_id or "") is not None

        other = await initialized(http)
        await other.call("tools/call", {"name": "change_tools", "arguments": {}})
        assert await messages_until(listening, 1) == [
            {"jsonrpc": "2.0", "method": "notifications/tools/list_changed", "params": {}}
        ]
        await settle()
        assert not session_of(app, listener).runs.awake
        server.notify_resource_updated("mem://doc")
        assert await messages_until(listening, 1) == [
            {
                "jsonrpc": "2.0",
                "method": "notifications/resources/updated",
                "params": {"uri": "mem://doc"},
            }
        ]
        await settle()
        assert not session_of(app, listener).runs.awake
        await listening.disconnect()


async def test_changes_reach_a_sleeping_session_when_it_next_listens(
    probe: Probe, autojump_clock: trio.testing.MockClock
) -> None:
    server = make_test_server(probe)
    async with asgi_client(server) as (app, http):
        sleeper = await initialized(http)
        assert (await sleeper.call("resources/subscribe", {"uri": "mem://doc"}))["result"] == {}
        await settle()
        assert not session_of(app, sleeper).runs.awake

        other = await initialized(http)
        for _ in range(3):
            await other.call("tools/call", {"name": "change_tools", "arguments": {}})
        server.notify_resource_updated("mem://doc")
        server.notify_resource_updated("mem://doc")
        server.notify_resource_updated("mem://elsewhere")
        await trio.testing.wait_all_tasks_blocked()
        # Kept, coalesced, without waking the session.
        assert not session_of(app, sleeper).runs.awake

        listening = await sleeper.get()
        assert await messages_until(listening, 2) == [
            {"jsonrpc": "2.0", "method": "notifications/tools/list_changed", "params": {}},
            {
                "jsonrpc": "2.0",
                "method": "notifications/resources/updated",
                "params": {"uri": "mem://doc"},
            },
        ]
        await listening.disconnect()
        await trio.testing.wait_all_tasks_blocked()

        # A client that resumes its GET stream after a sleep gets what changed meanwhile.
        listening = await sleeper.get()
        primed = await listening.next_event()
        assert primed is not None
        assert primed.id is not None
        assert not primed.data
        await listening.disconnect()
        await settle()
        assert not session_of(app, sleeper).runs.awake
        await other.call("tools/call", {"name": "change_tools", "arguments": {}})
        await trio.testing.wait_all_tasks_blocked()
        resumed = await sleeper.get(last_event_id=primed.id)
        assert resumed.status == 200
        assert await messages_until(resumed, 1) == [
            {"jsonrpc": "2.0", "method": "notifications/tools/list_changed", "params": {}}
        ]
        await resumed.disconnect()


async def test_a_change_while_asleep_is_stored_for_the_next_get(
    probe: Probe, autojump_clock: trio.testing.MockClock
) -> None:
    # No GET was ever opened: the notice waits in the event store like any other.
    server = make_test_server(probe)
    store = MemoryEventStore()
    async with asgi_client(server, options=HttpOptions(event_store=store)) as (_, http):
        sleeper = await initialized(http)
        other = await initialized(http)
        await other.call("tools/call", {"name": "change_tools", "arguments": {}})
        await settle()
        # The next request wakes the session, which sends what it kept before serving
        # anything; nobody listens, so the notice waits in the store.
        reply = await sleeper.call("tools/call", {"name": "add", "arguments": {"a": 1, "b": 1}})
        assert reply["result"]["structuredContent"] == {"result": 2}
        await settle()
        assert sleeper.session_id is not None
        stored = await store.replay_after(sleeper.session_id, "0.1")
        assert stored is not None
        assert [orjson.loads(data)["method"] for _, data in stored.events] == [
            "notifications/tools/list_changed"
        ]
        listening = await sleeper.get()
        assert await messages_until(listening, 1) == [
            {"jsonrpc": "2.0", "method": "notifications/tools/list_changed", "params": {}}
        ]
        await listening.disconnect()


async def test_a_sleeping_session_expires_and_its_events_are_forgotten(
    probe: Probe, autojump_clock: trio.testing.MockClock
) -> None:
    store = MemoryEventStore()
    options = HttpOptions(event_store=store, response_mode="sse")
    async with asgi_client(make_test_server(probe), options=options) as (app, http):
        client = await initialized(http)
        await client.call("tools/call", {"name": "add", "arguments": {"a": 1, "b": 2}})
        await settle()
        assert awake(app) == 0
        # The finished SSE streams are kept for resumption, asleep as awake.
        assert store.statistics().streams > 0
        await trio.sleep(IDLE - 10)
        assert app.manager.get(client.session_id or "") is not None
        await trio.sleep(15)
        await trio.testing.wait_all_tasks_blocked()
        assert app.manager.get(client.session_id or "") is None
        assert app.manager.statistics().sessions == 0
        assert store.statistics() == EventStoreStatistics(streams=0, events=0)
        assert (await client.post(client.request("ping"))).status == 404
        manager_nursery = app.manager._nursery
        assert manager_nursery is not None
        assert manager_nursery.child_tasks == frozenset()


async def test_delete_ends_a_sleeping_session(probe: Probe) -> None:
    store = MemoryEventStore()
    options = HttpOptions(event_store=store, response_mode="sse")
    async with asgi_client(make_test_server(probe), options=options) as (app, http):
        client = await initialized(http)
        await trio.testing.wait_all_tasks_blocked()
        assert awake(app) == 0
        assert (await client.delete()).status == 204
        await trio.testing.wait_all_tasks_blocked()
        assert app.manager.statistics().sessions == 0
        assert store.statistics() == EventStoreStatistics(streams=0, events=0)
        assert (await client.post(client.request("ping"))).status == 404


async def test_a_request_while_the_session_falls_asleep_wakes_it_again(
    probe: Probe, autojump_clock: trio.testing.MockClock
) -> None:
    async with asgi_client(make_test_server(probe)) as (app, http):
        client = await initialized(http)
        await client.call("tools/call", {"name": "add", "arguments": {"a": 1, "b": 2}})
        await trio.testing.wait_all_tasks_blocked()
        session = session_of(app, client)
        assert session.runs.may_sleep()
        # What the manager does once the session has been quiet for a while; its task
        # has not ended yet when the next request arrives.
        session.runs.sleep()
        assert session.runs.awake
        request = client.request("tools/call", {"name": "add", "arguments": {"a": 20, "b": 22}})
        attachment = await session.post(request, [request["id"]], sse=False)
        assert attachment is not None
        _, data, final = await attachment.get()
        assert final
        assert orjson.loads(data)["result"]["structuredContent"] == {"result": 42}
        await session.release(attachment)
        await trio.testing.wait_all_tasks_blocked()
        assert session.runs.awake

        # Falling asleep again, a message waits for the sleep to end, then wakes the
        # session just for what the core answers alone.
        await settle()
        await client.call("tools/call", {"name": "add", "arguments": {"a": 1, "b": 2}})
        await trio.testing.wait_all_tasks_blocked()
        session.runs.sleep()
        assert await session.feed({"jsonrpc": "2.0", "method": "notifications/initialized"})
        assert session.runs.awake
        await trio.testing.wait_all_tasks_blocked()
        assert not session.runs.awake
        assert (await client.call("ping"))["result"] == {}
        await trio.testing.wait_all_tasks_blocked()
        assert awake(app) == 0


async def test_bad_input_to_a_sleeping_session_is_answered_without_waking_it(
    probe: Probe,
) -> None:
    async with asgi_client(make_test_server(probe)) as (app, http):
        client = await initialized(http)
        again = await client.post(
            client.request(
                "initialize",
                {"protocolVersion": "2025-11-25", "capabilities": {}},
            )
        )
        assert (await again.json())["error"]["code"] == -32600
        for message in (
            {"jsonrpc": "2.0", "id": 99, "result": {}},
            {"jsonrpc": "2.0", "id": 98, "error": {"code": -1, "message": "no"}},
            {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 7}},
            {"jsonrpc": "2.0", "method": "notifications/unheard_of"},
        ):
            assert (await client.post(message)).status == 202
        bad_level = await client.call("logging/setLevel", {"level": "loud"})
        assert bad_level["error"]["code"] == -32602
        await trio.testing.wait_all_tasks_blocked()
        assert awake(app) == 0
        # An unknown method needs the server's dispatch: it wakes the session, which
        # answers it and lives on.
        unknown = await client.call("no/such/method")
        assert unknown["error"]["code"] == -32601
        reply = await client.call("tools/call", {"name": "add", "arguments": {"a": 1, "b": 2}})
        assert reply["result"]["structuredContent"] == {"result": 3}


async def test_roots_hooks_wake_a_sleeping_session(probe: Probe) -> None:
    server = make_test_server(probe)
    heard = trio.Event()

    @server.on_roots_changed
    async def hook(ctx: Context) -> None:
        heard.set()

    async with asgi_client(server) as (app, http):
        client = await initialized(http)
        await trio.testing.wait_all_tasks_blocked()
        assert awake(app) == 0
        response = await client.post(
            {"jsonrpc": "2.0", "method": "notifications/roots/list_changed"}
        )
        assert response.status == 202
        with trio.fail_after(5):
            await heard.wait()
        assert awake(app) == 1


async def test_shutdown_ends_sleeping_sessions_and_gives_requests_their_grace(
    probe: Probe, autojump_clock: trio.testing.MockClock
) -> None:
    store = MemoryEventStore()
    options = HttpOptions(event_store=store, response_mode="sse")
    session_options = SessionOptions(shutdown_grace=5.0)
    async with asgi_client(
        make_test_server(probe), options=options, session_options=session_options
    ) as (app, http):
        sleepers = [await initialized(http) for _ in range(3)]
        await sleepers[0].call("tools/call", {"name": "add", "arguments": {"a": 1, "b": 2}})
        await settle()
        worker = await initialized(http)
        pending = start_post(
            worker, worker.request("tools/call", {"name": "hold_quietly", "arguments": {}})
        )
        await probe.started.wait()
        assert app.manager.statistics().awake_sessions == 1

        app.manager.stop()
        await trio.testing.wait_all_tasks_blocked()
        # The sleeping sessions ended at once; the request in flight runs on.
        assert app.manager.statistics().sessions == 1
        for client in sleepers:
            assert (await client.post(client.request("ping"))).status == 503
        await trio.sleep(3)
        probe.release.set()
        response = await pending.wait()
        assert (await response.messages())[-1]["result"]["content"][0]["text"] == "released"
        with trio.fail_after(1):
            await app.manager.wait_sessions(0)
        assert store.statistics() == EventStoreStatistics(streams=0, events=0)
        manager_nursery = app.manager._nursery
        assert manager_nursery is not None
        assert manager_nursery.child_tasks == frozenset()


async def test_cancelling_the_manager_ends_sleeping_sessions_too(probe: Probe) -> None:
    async with asgi_client(make_test_server(probe)) as (app, http):
        for _ in range(3):
            await initialized(http)
        await initialized(http)
        start_post(
            McpClient(http),
            {"jsonrpc": "2.0", "id": 1, "method": "ping"},
        )
        await trio.testing.wait_all_tasks_blocked()
        app.manager.cancel()
        with trio.fail_after(1):
            await app.manager.wait_sessions(0)
        assert app.manager.statistics().sessions == 0


async def test_a_stateless_session_leaves_no_task_behind_its_post(probe: Probe) -> None:
    options = HttpOptions(stateless=True)
    async with asgi_client(make_test_server(probe), options=options) as (app, http):
        client = McpClient(http)
        client.protocol_version = "2025-11-25"
        await trio.testing.wait_all_tasks_blocked()
        before = live_tasks()
        started: list[int] = []
        manager_nursery = app.manager._nursery
        assert manager_nursery is not None
        for _ in range(5):
            assert (await client.call("ping"))["result"] == {}
            await trio.testing.wait_all_tasks_blocked()
            started.append(len(manager_nursery.child_tasks))
        assert started == [0] * 5
        reply = await client.call("tools/call", {"name": "add", "arguments": {"a": 1, "b": 2}})
        assert reply["result"]["structuredContent"] == {"result": 3}
        await trio.testing.wait_all_tasks_blocked()
        assert live_tasks() == before
        assert app.manager.statistics().sessions == 0
