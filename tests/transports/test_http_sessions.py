"""Session lifetimes over HTTP: idle expiry, limits, ownership, many sessions at once."""

from __future__ import annotations

import pytest
import trio
import trio.testing

from mcpactor.runtime import SessionOptions
from mcpactor.transports import HttpOptions, MemoryEventStore

from ._http_client import McpClient, start_post
from ._http_server import Probe, asgi_client, initialized, make_server, served_app

IDLE = 30 * 60.0


@pytest.fixture
def probe() -> Probe:
    return Probe()


async def test_an_idle_session_expires_after_the_timeout(
    probe: Probe, autojump_clock: trio.testing.MockClock
) -> None:
    async with asgi_client(make_server(probe)) as (app, http):
        client = await initialized(http)
        await trio.testing.wait_all_tasks_blocked()
        idle_since = trio.current_time()
        await trio.sleep(IDLE - 1)
        assert app.manager.get(client.session_id or "") is not None
        # Any request restarts the clock.
        await client.call("ping")
        await trio.testing.wait_all_tasks_blocked()
        touched = trio.current_time()
        assert touched - idle_since == pytest.approx(IDLE - 1)
        await trio.sleep(IDLE - 1)
        assert app.manager.get(client.session_id or "") is not None
        await trio.sleep(1.5)
        assert app.manager.get(client.session_id or "") is None
        assert (await client.post(client.request("ping"))).status == 404
        await trio.testing.wait_all_tasks_blocked()
        assert app.manager.statistics().sessions == 0


async def test_a_session_with_a_listener_or_a_running_request_is_not_idle(
    probe: Probe, autojump_clock: trio.testing.MockClock
) -> None:
    async with asgi_client(make_server(probe)) as (app, http):
        listening = await initialized(http)
        stream = await listening.get()
        working = await initialized(http)
        pending = start_post(working, working.request("tools/call", {"name": "hold_quietly"}))
        await probe.started.wait()
        await trio.sleep(3 * IDLE)
        assert app.manager.get(listening.session_id or "") is not None
        assert app.manager.get(working.session_id or "") is not None
        await stream.disconnect()
        probe.release.set()
        assert (await (await pending.wait()).json())["result"]["content"][0]["text"] == "released"
        await trio.testing.wait_all_tasks_blocked()
        ended = trio.current_time()
        await trio.sleep(IDLE + 1)
        assert app.manager.get(listening.session_id or "") is None
        assert app.manager.get(working.session_id or "") is None
        assert trio.current_time() - ended == pytest.approx(IDLE + 1)


async def test_the_session_limit_gives_503_until_a_session_ends(
    probe: Probe, autojump_clock: trio.testing.MockClock
) -> None:
    options = HttpOptions(max_sessions=2, session_idle_timeout=60)
    async with asgi_client(make_server(probe), options=options) as (app, http):
        first = await initialized(http)
        await initialized(http)
        third = await McpClient(http).post(first.request("initialize", {}))
        assert third.status == 503
        assert "limit of 2 sessions" in (await third.json())["error"]["message"]
        assert (await first.delete()).status == 204
        await initialized(http)
        # Expired sessions make room too.
        await trio.sleep(61)
        await initialized(http)
        await initialized(http)
        assert app.manager.statistics().open_sessions == 2


async def test_sessions_own_their_tasks_and_leave_nothing_behind(probe: Probe) -> None:
    store = MemoryEventStore()
    options = HttpOptions(event_store=store)
    async with asgi_client(make_server(probe), options=options) as (app, http):
        clients = [await initialized(http) for _ in range(5)]
        streams = [await client.get() for client in clients]
        for client in clients:
            await client.call("tools/call", {"name": "count", "arguments": {"steps": 2}})
        await trio.testing.wait_all_tasks_blocked()
        assert app.manager.statistics().connections == 5
        for client in clients:
            assert (await client.delete()).status == 204
        for stream in streams:
            await stream.events()
        await trio.testing.wait_all_tasks_blocked()
        assert app.manager.statistics().sessions == 0
        assert app.manager.statistics().connections == 0
        manager_nursery = app.manager._nursery
        assert manager_nursery is not None
        assert manager_nursery.child_tasks == frozenset()
        assert store.statistics().streams == 0


async def test_a_thousand_concurrent_sessions(probe: Probe) -> None:
    session_options = SessionOptions(shutdown_grace=1.0)
    async with served_app(make_server(probe), session_options=session_options) as (app, http):
        clients: list[McpClient] = []

        async def open_sessions(count: int) -> None:
            for _ in range(count):
                clients.append(await initialized(http))

        with trio.fail_after(120):
            async with trio.open_nursery() as nursery:
                for _ in range(50):
                    nursery.start_soon(open_sessions, 20)
            assert app.manager.statistics().named_sessions == 1000
            assert len({client.session_id for client in clients}) == 1000

            results: list[int] = []

            async def add(client: McpClient, number: int) -> None:
                reply = await client.call(
                    "tools/call", {"name": "add", "arguments": {"a": number, "b": 1}}
                )
                results.append(reply["result"]["structuredContent"]["result"])

            async def add_each(start: int) -> None:
                for number in range(start, start + 20):
                    await add(clients[number], number)

            async with trio.open_nursery() as nursery:
                for start in range(0, 1000, 20):
                    nursery.start_soon(add_each, start)
            assert sorted(results) == list(range(1, 1001))


async def test_requests_during_shutdown_get_503_not_404(probe: Probe) -> None:
    async with asgi_client(make_server(probe)) as (app, http):
        client = await initialized(http)
        app.manager.stop()
        response = await client.post(client.request("ping"))
        assert response.status == 503
        assert (await response.json())["error"]["code"] == -32603
        fresh = McpClient(http)
        refused = await fresh.post(
            {
                "jsonrpc": "2.0",
                "id": 1,
                "method": "initialize",
                "params": {"protocolVersion": "2025-11-25", "capabilities": {}},
            }
        )
        assert refused.status == 503


async def test_finished_streams_are_kept_only_a_bounded_while(probe: Probe) -> None:
    store = MemoryEventStore(max_events_per_stream=3)
    async with asgi_client(make_server(probe), options=HttpOptions(event_store=store)) as (
        _,
        http,
    ):
        client = await initialized(http)
        for _ in range(40):
            await client.call(
                "tools/call",
                {"name": "count", "arguments": {"steps": 5}, "_meta": {"progressToken": 1}},
            )
        await trio.testing.wait_all_tasks_blocked()
        # The newest 16 finished streams, 3 events each at most; the standalone stream
        # has nothing stored until something is sent on it or a GET opens it.
        held = store.statistics()
        assert (held.streams, held.events) == (16, 16 * 3)
