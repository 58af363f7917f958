"""Blocking (``def``) handlers: worker threads, the limiter, cooperative cancellation.

These tests run on the real clock (worker threads and an autojumping clock do not mix:
the clock would jump while a thread works) and synchronise with events, never sleeps.
"""

from __future__ import annotations

import threading
from typing import Any

import trio
import trio.testing

import mcpactor
from mcpactor import Context, Server
from mcpactor.runtime import SessionOptions

from .conftest import assert_idle, live_tasks, open_session, tool_text


class WatchedLimiter:
    """A CapacityLimiter that tells the test when a worker thread has been handed back."""

    def __init__(self, total_tokens: int = 4) -> None:
        self.limiter = trio.CapacityLimiter(total_tokens)
        self.released = trio.Event()

    async def acquire_on_behalf_of(self, borrower: object) -> None:
        await self.limiter.acquire_on_behalf_of(borrower)

    def release_on_behalf_of(self, borrower: object) -> None:
        self.limiter.release_on_behalf_of(borrower)
        self.released.set()

    def statistics(self) -> Any:
        return self.limiter.statistics()


def spinning_server(finished: threading.Event) -> tuple[Server, trio.Event]:
    server = Server("spinning")
    started = trio.Event()

    @server.tool()
    def spin() -> str:
        """Work in small steps until cancelled."""
        trio.from_thread.run_sync(started.set)
        try:
            while True:
                mcpactor.check_cancelled()
        finally:
            finished.set()

    return server, started


async def test_sync_handlers_run_in_worker_threads() -> None:
    server = Server("sync")
    main = threading.get_ident()

    @server.tool()
    def tool_thread() -> bool:
        """Say whether this runs off the event loop's thread."""
        return threading.get_ident() != main

    @server.resource("mem://thread")
    def resource_thread() -> str:
        """Say whether this runs off the event loop's thread."""
        return str(threading.get_ident() != main)

    @server.prompt()
    def prompt_thread() -> str:
        """Say whether this runs off the event loop's thread."""
        return str(threading.get_ident() != main)

    async with open_session(server) as h:
        await h.initialize()
        assert (await h.call_tool("tool_thread"))["structuredContent"] == {"result": True}
        read = await h.request("resources/read", {"uri": "mem://thread"})
        assert read["contents"][0]["text"] == "True"
        prompt = await h.request("prompts/get", {"name": "prompt_thread"})
        assert prompt["messages"][0]["content"]["text"] == "True"
        await trio.testing.wait_all_tasks_blocked()
        assert_idle(h.actor)


async def test_sync_handlers_share_the_session_thread_limiter() -> None:
    server = Server("limited")
    gate = threading.Event()
    running: list[str] = []

    @server.tool()
    def block(name: str) -> str:
        """Wait at the gate."""
        running.append(name)
        gate.wait()
        return name

    limiter = trio.CapacityLimiter(1)
    async with open_session(server, SessionOptions(thread_limiter=limiter)) as h:
        await h.initialize()
        first = await h.start_tool("block", {"name": "first"})
        second = await h.start_tool("block", {"name": "second"})
        await trio.testing.wait_all_tasks_blocked()
        stats = limiter.statistics()
        assert stats.borrowed_tokens == 1
        assert stats.tasks_waiting == 1
        gate.set()
        assert tool_text(await h.result_of(first)) == "first"
        assert tool_text(await h.result_of(second)) == "second"
        assert sorted(running) == ["first", "second"]


async def test_a_cancelled_sync_handler_stops_at_check_cancelled() -> None:
    finished = threading.Event()
    server, started = spinning_server(finished)
    limiter = WatchedLimiter()
    async with open_session(server, SessionOptions(thread_limiter=limiter)) as h:  # type: ignore[arg-type]
        await h.initialize()
        before = live_tasks()
        spin = await h.start_tool("spin")
        with trio.fail_after(10):
            await started.wait()
        assert not finished.is_set()
        await h.cancel(spin)
        with trio.fail_after(10):
            await limiter.released.wait()
        assert finished.is_set()  # its finally ran
        await h.expect_nothing()  # and it got no response
        assert live_tasks() == before
        assert_idle(h.actor)
        await h.request("ping")


async def test_check_cancelled_outside_a_worker_thread_does_nothing() -> None:
    mcpactor.check_cancelled()
    passed = False
    with trio.CancelScope() as scope:
        scope.cancel()
        mcpactor.check_cancelled()  # only worker threads poll; async code has checkpoints
        passed = True
        await trio.lowlevel.checkpoint()
    assert passed
    assert scope.cancelled_caught


async def test_a_sync_handler_changing_the_registry_sends_list_changed() -> None:
    server = Server("sync-grow")

    @server.tool()
    def grow(ctx: Context) -> str:
        """Add a tool from a worker thread."""

        def extra() -> str:
            return "extra"

        ctx.server.add_tool(extra)
        return "grown"

    async with open_session(server) as h:
        await h.initialize()
        assert tool_text(await h.call_tool("grow")) == "grown"
        items = await h.pending()
        assert [item.payload["method"] for item in items] == ["notifications/tools/list_changed"]


async def test_shutdown_cancels_a_sync_handler_after_the_grace_period(
    mock_clock: trio.testing.MockClock,
) -> None:
    finished = threading.Event()
    server, started = spinning_server(finished)
    async with open_session(server, SessionOptions(shutdown_grace=5)) as h:
        await h.initialize()
        await h.start_tool("spin")
        await started.wait()
        await h.close()
        await trio.testing.wait_all_tasks_blocked()
        mock_clock.jump(4.5)
        await trio.testing.wait_all_tasks_blocked()
        assert not h.ended.is_set()
        assert not finished.is_set()
        mock_clock.jump(0.5)
        assert await h.wait_ended() == 5
        assert finished.is_set()
        assert not h.received[1:]  # nothing after the initialize response
