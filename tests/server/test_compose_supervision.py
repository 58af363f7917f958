"""Supervision of mounted servers: lifespans in order, failures contained, limits, statistics."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Final

import pytest
import trio
import trio.testing

from mcpactor import PluginError, RequestError, Server
from mcpactor.server import MountStatistics
from tests.client.conftest import connect, text_of

# In memory, a test takes milliseconds: a hang fails in seconds, not never.
GUARD: Final = 10.0


def recording_server(name: str, events: list[str]) -> Server:
    server = Server(name)
    server.add_tool(lambda: name, name="ping")

    @server.lifespan
    @asynccontextmanager
    async def life(_: Server) -> AsyncIterator[None]:
        events.append(f"start {name}")
        try:
            yield
        finally:
            events.append(f"stop {name}")

    return server


async def test_lifespans_start_in_mount_order_and_stop_in_reverse() -> None:
    events: list[str] = []
    app = recording_server("app", events)
    for name in ("a", "b", "c"):
        app.mount(recording_server(name, events), name)
    async with app.running():
        assert events == ["start app", "start a", "start b", "start c"]
        assert [mount.state for mount in app.mounts] == ["running"] * 3
    assert events[4:] == ["stop c", "stop b", "stop a", "stop app"]
    assert [mount.state for mount in app.mounts] == ["stopped"] * 3


def crashing_server(name: str, *, crash: trio.Event) -> Server:
    """A server whose lifespan starts a background task that raises once ``crash`` is set."""
    server = Server(name)
    server.add_tool(lambda: "still here", name="ping")
    server.add_resource(lambda: "r", f"{name}://r")

    @server.lifespan
    @asynccontextmanager
    async def life(_: Server) -> AsyncIterator[None]:
        async def background() -> None:
            await crash.wait()
            raise RuntimeError(f"{name} background task broke")

        async with trio.open_nursery() as nursery:
            nursery.start_soon(background)
            yield
            nursery.cancel_scope.cancel()

    return server


async def test_a_crash_after_start_fails_only_that_server(
    caplog: pytest.LogCaptureFixture,
) -> None:
    crash = trio.Event()
    good = Server("good")
    good.add_tool(lambda: "good answer", name="ping")
    app = Server("app")
    app.mount(good, "good")
    bad_mount = app.mount(crashing_server("bad", crash=crash), "bad")
    async with connect(app) as client:
        assert text_of(await client.call_tool("bad_ping")) == "still here"
        assert bad_mount.state == "running"
        with caplog.at_level(logging.ERROR, logger="mcpactor"):
            crash.set()
            await trio.testing.wait_all_tasks_blocked()
        assert bad_mount.failed
        assert bad_mount.statistics().error == "RuntimeError: bad background task broke"
        with pytest.raises(RequestError) as info:
            await client.call_tool("bad_ping")
        assert info.value.code == -32603
        assert "server 'bad' has failed (RuntimeError: bad background task broke)" in str(
            info.value
        )
        assert info.value.data == {
            "server": "bad",
            "error": "RuntimeError: bad background task broke",
        }
        with pytest.raises(RequestError, match="server 'bad' has failed"):
            await client.read_resource("bad://r")
        # The others keep answering, and the failed one is still listed.
        assert text_of(await client.call_tool("good_ping")) == "good answer"
        assert [tool["name"] for tool in await client.list_tools()] == ["good_ping", "bad_ping"]
    assert app.mounts[0].state == "stopped"
    assert bad_mount.state == "failed"
    logged = [r for r in caplog.records if "'bad' failed while serving" in r.getMessage()]
    assert len(logged) == 1
    assert "bad background task broke" in logged[0].getMessage()


async def test_a_lifespan_that_fails_to_start_fails_only_that_server(
    caplog: pytest.LogCaptureFixture,
) -> None:
    events: list[str] = []
    broken = Server("broken")
    broken.add_tool(lambda: "x", name="ping")

    @broken.lifespan
    @asynccontextmanager
    async def life(_: Server) -> AsyncIterator[None]:
        raise OSError("no database")
        yield  # pragma: no cover

    app = Server("app")
    app.mount(recording_server("first", events), "first")
    mount = app.mount(broken, "broken")
    app.mount(recording_server("last", events), "last")
    with caplog.at_level(logging.ERROR, logger="mcpactor"):
        async with connect(app) as client:
            assert events == ["start first", "start last"]
            assert mount.statistics().state == "failed"
            with pytest.raises(
                RequestError, match=r"'broken' has failed \(OSError: no database\)"
            ):
                await client.call_tool("broken_ping")
            assert text_of(await client.call_tool("last_ping")) == "last"
    assert events[2:] == ["stop last", "stop first"]
    assert any("'broken' failed to start" in r.getMessage() for r in caplog.records)


async def test_a_server_failing_while_stopping_is_logged_by_name(
    caplog: pytest.LogCaptureFixture,
) -> None:
    child = Server("child")

    @child.lifespan
    @asynccontextmanager
    async def life(_: Server) -> AsyncIterator[None]:
        yield
        raise ValueError("cleanup broke")

    app = Server("app")
    mount = app.mount(child, "child")
    with caplog.at_level(logging.ERROR, logger="mcpactor"):
        async with app.running():
            pass
    assert mount.failed
    assert any("'child' failed while stopping" in r.getMessage() for r in caplog.records)


async def test_a_limit_queues_calls_beyond_it() -> None:
    release = trio.Event()
    started: list[int] = []
    slow = Server("slow")

    @slow.tool()
    async def work(n: int) -> int:
        started.append(n)
        await release.wait()
        return n

    app = Server("app")
    mount = app.mount(slow, "slow", max_concurrent=2)
    results: list[int] = []
    async with connect(app) as client:

        async def call(n: int) -> None:
            result = await client.call_tool("slow_work", {"n": n})
            results.append(result["structuredContent"]["result"])

        with trio.fail_after(GUARD):
            async with trio.open_nursery() as nursery:
                for n in range(3):
                    nursery.start_soon(call, n)
                await trio.testing.wait_all_tasks_blocked()
                assert len(started) == 2
                assert mount.statistics() == MountStatistics(
                    name="slow",
                    prefix="slow",
                    state="running",
                    error=None,
                    calls_in_flight=2,
                    calls_waiting=1,
                    calls_total=3,
                    max_concurrent=2,
                )
                release.set()
    assert sorted(results) == [0, 1, 2]
    assert mount.statistics().calls_in_flight == 0
    assert mount.statistics().calls_waiting == 0


async def test_a_cancelled_call_waiting_for_room_leaves_no_trace() -> None:
    release = trio.Event()
    slow = Server("slow")

    @slow.tool()
    async def work() -> str:
        await release.wait()
        return "done"

    app = Server("app")
    mount = app.mount(slow, "slow", max_concurrent=1)
    async with connect(app) as client:
        with trio.fail_after(GUARD):
            async with trio.open_nursery() as nursery:
                nursery.start_soon(client.call_tool, "slow_work")
                await trio.testing.wait_all_tasks_blocked()
                with trio.CancelScope() as waiting:
                    nursery.start_soon(_cancel_when_queued, waiting, mount)
                    await client.call_tool("slow_work")
                assert waiting.cancelled_caught
                await trio.testing.wait_all_tasks_blocked()
                assert mount.statistics().calls_waiting == 0
                release.set()
    assert mount.statistics().calls_in_flight == 0


async def _cancel_when_queued(scope: trio.CancelScope, mount: object) -> None:
    await trio.testing.wait_all_tasks_blocked()
    scope.cancel()


async def test_mounting_while_serving_is_refused() -> None:
    app = Server("app")
    app.mount(Server("a"), "a")
    async with app.running():
        with pytest.raises(PluginError, match="already serving"):
            app.mount(Server("b"), "b")
    app.mount(Server("b"), "b")
    assert [mount.name for mount in app.mounts] == ["a", "b"]


async def test_running_twice_at_once_is_refused() -> None:
    app = Server("app")
    app.mount(Server("a"), "a")
    async with app.running():
        with pytest.raises(RuntimeError, match="already serving"):
            async with app.running():
                pass  # pragma: no cover


async def test_names_that_collide_only_once_started_stop_the_start() -> None:
    late = Server("late")

    @late.lifespan
    @asynccontextmanager
    async def life(server: Server) -> AsyncIterator[None]:
        # Like a proxy: what it serves is known only once it runs.
        server.add_tool(lambda: "x", name="ping")
        yield

    events: list[str] = []
    app = Server("app")
    app.mount(recording_server("early", events), name="early")
    app.mount(late, name="late")
    with pytest.raises(PluginError) as info:
        async with app.running():
            pytest.fail("the composed server must not start")  # pragma: no cover
    assert "tool 'ping' is served twice: by 'early'" in str(info.value)
    assert "'late' (its tool 'ping')" in str(info.value)
    assert events == ["start early", "stop early"]


async def test_an_error_inside_the_running_block_comes_back_as_itself() -> None:
    app = Server("app")
    app.mount(Server("a"), "a")
    with pytest.raises(KeyError, match="mine"):
        async with app.running():
            raise KeyError("mine")
    assert app.mounts[0].state == "stopped"


async def test_cancelling_around_a_running_server_stops_every_child(
    autojump_clock: trio.testing.MockClock,
) -> None:
    events: list[str] = []
    app = Server("app")
    for name in ("a", "b"):
        app.mount(recording_server(name, events), name)
    with trio.move_on_after(5) as scope:
        async with app.running():
            await trio.sleep_forever()
    assert scope.cancelled_caught
    assert trio.current_time() == 5
    assert sorted(events) == ["start a", "start b", "stop a", "stop b"]
    assert [mount.state for mount in app.mounts] == ["stopped", "stopped"]
