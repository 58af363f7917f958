"""How a session ends: grace for running handlers, then cancellation; nothing outlives it."""

from __future__ import annotations

import pytest
import trio
import trio.testing

from mcpactor import Context, RequestError, Server, TransportClosed
from mcpactor.protocol import Phase
from mcpactor.runtime import SessionOptions

from .conftest import SessionHarness, live_tasks, open_session, tool_text


def shutdown_server(log: list[str]) -> Server:
    server = Server("shutdown")

    @server.tool()
    async def slow(seconds: float) -> str:
        """Sleep, then answer."""
        try:
            await trio.sleep(seconds)
        finally:
            log.append(f"slow {seconds:g} ended at {trio.current_time():g}")
        return f"slept {seconds:g}"

    @server.tool()
    async def ask_twice(ctx: Context) -> str:
        """Ask the client twice; report how each attempt failed."""
        try:
            await ctx.sample("first", max_tokens=5)
        except RequestError as exc:
            first = f"{exc.code} {exc.message}"
        try:
            await ctx.sample("second", max_tokens=5)
        except TransportClosed as exc:
            second = str(exc)
        return f"{first} | {second}"

    return server


async def expect_closed(h: SessionHarness) -> None:
    """The actor closed its outbox: nothing more will come."""
    with pytest.raises(trio.EndOfChannel):
        await h.next_item()


async def test_an_idle_session_ends_as_soon_as_the_inbox_closes(
    autojump_clock: trio.testing.MockClock,
) -> None:
    log: list[str] = []
    server = shutdown_server(log)
    before = live_tasks()
    async with open_session(server) as h:
        await h.initialize()
        await h.close()
        assert await h.wait_ended() == 0
        await expect_closed(h)
        assert h.actor.statistics().phase is Phase.CLOSED
        assert live_tasks() == before
        assert not server._changes.listeners  # the dead session hears no more changes


async def test_running_handlers_finish_within_the_grace_period(
    autojump_clock: trio.testing.MockClock,
) -> None:
    log: list[str] = []
    before = live_tasks()
    async with open_session(shutdown_server(log), SessionOptions(shutdown_grace=5)) as h:
        await h.initialize()
        first = await h.start_tool("slow", {"seconds": 3})
        second = await h.start_tool("slow", {"seconds": 1})
        await trio.testing.wait_all_tasks_blocked()
        await h.close()
        assert tool_text(await h.result_of(second)) == "slept 1"
        assert trio.current_time() == 1
        assert tool_text(await h.result_of(first)) == "slept 3"
        assert trio.current_time() == 3
        # The session does not wait out the rest of the grace period.
        await expect_closed(h)
        assert await h.wait_ended() == 3
        assert log == ["slow 1 ended at 1", "slow 3 ended at 3"]
        assert live_tasks() == before


async def test_handlers_still_running_after_the_grace_period_are_cancelled(
    autojump_clock: trio.testing.MockClock,
) -> None:
    log: list[str] = []
    before = live_tasks()
    async with open_session(shutdown_server(log), SessionOptions(shutdown_grace=5)) as h:
        await h.initialize()
        quick = await h.start_tool("slow", {"seconds": 2})
        await h.start_tool("slow", {"seconds": 60})
        await trio.testing.wait_all_tasks_blocked()
        await h.close()
        assert tool_text(await h.result_of(quick)) == "slept 2"
        # The 60-second call never gets an answer: the outbox closes at the deadline.
        await expect_closed(h)
        assert trio.current_time() == 5
        assert await h.wait_ended() == 5
        assert log == ["slow 2 ended at 2", "slow 60 ended at 5"]
        assert live_tasks() == before


async def test_a_zero_grace_period_cancels_at_once(autojump_clock: trio.testing.MockClock) -> None:
    log: list[str] = []
    async with open_session(shutdown_server(log), SessionOptions(shutdown_grace=0)) as h:
        await h.initialize()
        await h.start_tool("slow", {"seconds": 1})
        await trio.testing.wait_all_tasks_blocked()
        await h.close()
        await expect_closed(h)
        assert await h.wait_ended() == 0
        assert log == ["slow 1 ended at 0"]


async def test_requests_waiting_on_the_client_fail_at_once(
    autojump_clock: trio.testing.MockClock,
) -> None:
    log: list[str] = []
    async with open_session(shutdown_server(log), SessionOptions(shutdown_grace=5)) as h:
        await h.initialize(capabilities={"sampling": {}})
        call = await h.start_tool("ask_twice")
        await h.server_request("sampling/createMessage")
        assert h.actor.statistics().client_requests_pending == 1
        await h.close()
        result = await h.result_of(call)
        assert tool_text(result) == (
            "-32603 the client went away before answering"
            " | the session is closing: the client cannot answer"
        )
        assert trio.current_time() == 0
        await expect_closed(h)
        assert await h.wait_ended() == 0
        assert h.actor.statistics().client_requests_pending == 0


async def test_answers_waiting_for_room_in_the_outbox_get_the_grace_period(
    autojump_clock: trio.testing.MockClock,
) -> None:
    log: list[str] = []
    async with open_session(
        shutdown_server(log), SessionOptions(shutdown_grace=5), outbox_size=1
    ) as h:
        await h.initialize()
        first = await h.start_tool("slow", {"seconds": 1})
        second = await h.start_tool("slow", {"seconds": 1})
        await h.close()
        await trio.sleep(3)
        # Both handlers finished at 1 s; one answer sits in the outbox, the other waits
        # for room in it. The client reads them late, but within the grace period.
        ids = {(await h.next_item()).payload["id"], (await h.next_item()).payload["id"]}
        assert ids == {first, second}
        await expect_closed(h)
        assert await h.wait_ended() == 3


async def test_a_client_that_stops_reading_cannot_hold_the_session_open(
    autojump_clock: trio.testing.MockClock,
) -> None:
    log: list[str] = []
    async with open_session(
        shutdown_server(log), SessionOptions(shutdown_grace=5), outbox_size=1
    ) as h:
        await h.initialize()
        first = await h.start_tool("slow", {"seconds": 1})
        second = await h.start_tool("slow", {"seconds": 1})
        await h.close()
        assert await h.wait_ended() == 5
        # One answer made it into the outbox; the one that never found room was dropped
        # at the deadline.
        assert (await h.next_item()).payload["id"] in {first, second}
        await expect_closed(h)
