"""The session actor: one task per request, cancellation, contained failures, limits."""

from __future__ import annotations

import trio
import trio.testing

from mcpactor import RequestError, Server
from mcpactor.runtime import SessionOptions

from .conftest import assert_idle, live_tasks, open_session, tool_text


def slow_server() -> Server:
    server = Server("slow")

    @server.tool()
    async def slow(seconds: float, label: str = "") -> str:
        """Sleep, then say so."""
        await trio.sleep(seconds)
        return f"{label} slept {seconds:g}"

    return server


async def test_every_request_runs_in_its_own_task_of_the_session_nursery() -> None:
    server = Server("tasks")
    tasks: list[trio.lowlevel.Task] = []
    both_running = trio.Event()

    @server.tool()
    async def whoami() -> str:
        """Record the task serving this call."""
        tasks.append(trio.lowlevel.current_task())
        if len(tasks) == 2:
            both_running.set()
        await both_running.wait()
        return "ok"

    async with open_session(server) as h:
        await h.initialize()
        first = await h.start_tool("whoami")
        second = await h.start_tool("whoami")
        assert tool_text(await h.result_of(first)) == "ok"
        assert tool_text(await h.result_of(second)) == "ok"
        assert len(tasks) == 2
        assert tasks[0] is not tasks[1]
        assert all(task.parent_nursery is h.actor._nursery for task in tasks)
        await trio.testing.wait_all_tasks_blocked()
        assert_idle(h.actor)


async def test_slow_requests_overlap_and_answer_out_of_order(
    autojump_clock: trio.testing.MockClock,
) -> None:
    async with open_session(slow_server()) as h:
        await h.initialize()
        start = trio.current_time()
        long = await h.start_tool("slow", {"seconds": 2, "label": "long"})
        short = await h.start_tool("slow", {"seconds": 1, "label": "short"})
        first = await h.next_item()
        assert first.payload["id"] == short
        assert trio.current_time() - start == 1
        assert tool_text(first.payload["result"]) == "short slept 1"
        second = await h.next_item()
        assert second.payload["id"] == long
        # Served side by side: 2 s in all, not 3.
        assert trio.current_time() - start == 2
        await trio.testing.wait_all_tasks_blocked()
        assert_idle(h.actor)


async def test_cancelled_request_runs_its_finally_and_gets_no_response(
    autojump_clock: trio.testing.MockClock,
) -> None:
    server = slow_server()
    entered = trio.Event()
    cleaned_up: list[str] = []

    @server.tool()
    async def forever() -> str:
        """Wait until cancelled."""
        try:
            entered.set()
            await trio.sleep_forever()
        finally:
            cleaned_up.append("finally")

    async with open_session(server) as h:
        await h.initialize()
        doomed = await h.start_tool("forever")
        with trio.fail_after(1):
            await entered.wait()
        assert h.actor.statistics().requests_in_flight == 1
        await h.cancel(doomed, "changed my mind")
        await h.expect_nothing()
        assert cleaned_up == ["finally"]
        assert_idle(h.actor)
        # The session keeps serving, and the cancelled id can be used again.
        await h.request("ping")
        assert tool_text(await h.call_tool("slow", {"seconds": 1})) == " slept 1"
        again = await h.send_request(
            "tools/call", {"name": "slow", "arguments": {"seconds": 0}}, request_id=doomed
        )
        assert tool_text(await h.result_of(again)) == " slept 0"
        answers = [i for i in h.received if i.payload.get("id") == doomed]
        assert len(answers) == 1  # only the second use of the id was answered


async def test_request_finished_before_the_cancel_arrives_is_still_answered() -> None:
    async with open_session(slow_server()) as h:
        await h.initialize()
        quick = await h.start_tool("slow", {"seconds": 0, "label": "quick"})
        # The handler has finished and its response is queued, unread.
        await trio.testing.wait_all_tasks_blocked()
        assert h.actor.statistics().requests_in_flight == 0
        await h.cancel(quick)
        assert tool_text(await h.result_of(quick)) == "quick slept 0"
        await h.expect_nothing()
        assert_idle(h.actor)


async def test_cancelling_an_unknown_id_does_nothing(
    autojump_clock: trio.testing.MockClock,
) -> None:
    async with open_session(slow_server()) as h:
        await h.initialize()
        running = await h.start_tool("slow", {"seconds": 5, "label": "kept"})
        await h.cancel(999)
        await h.cancel("no-such-request")
        await h.cancel(str(running))  # same digits, different JSON type: another id
        await h.expect_nothing()
        assert h.actor.statistics().requests_in_flight == 1
        assert tool_text(await h.result_of(running)) == "kept slept 5"


async def test_cancelling_a_handler_ends_every_task_it_started(
    autojump_clock: trio.testing.MockClock,
) -> None:
    server = Server("spawner")
    children_started = trio.Event()
    ended: list[int] = []

    @server.tool()
    async def fan_out() -> str:
        """Start three helpers that never finish."""

        async def helper(n: int, task_status: trio.TaskStatus[None]) -> None:
            task_status.started()
            try:
                await trio.sleep_forever()
            finally:
                ended.append(n)

        async with trio.open_nursery() as nursery:
            for n in range(3):
                await nursery.start(helper, n)
            children_started.set()
        return "unreachable"  # pragma: no cover

    async with open_session(server) as h:
        await h.initialize()
        await trio.testing.wait_all_tasks_blocked()
        before = live_tasks()
        request = await h.start_tool("fan_out")
        with trio.fail_after(1):
            await children_started.wait()
        assert len(live_tasks() - before) == 4  # the request actor and its three helpers
        await h.cancel(request)
        await h.expect_nothing()
        assert sorted(ended) == [0, 1, 2]
        assert live_tasks() == before
        assert_idle(h.actor)


async def test_a_failing_handler_never_takes_down_the_session(
    autojump_clock: trio.testing.MockClock,
) -> None:
    server = slow_server()

    @server.tool()
    async def broken_tool() -> str:
        """Fail."""
        raise ValueError("tool exploded")

    @server.resource("mem://broken")
    async def broken_resource() -> str:
        """Fail."""
        raise KeyError("resource exploded")

    @server.resource("mem://refused")
    async def refused_resource() -> str:
        """Fail on purpose with a JSON-RPC error."""
        raise RequestError(-32002, "not today", {"uri": "mem://refused"})

    @server.prompt()
    async def broken_prompt() -> str:
        """Fail."""
        raise RuntimeError("prompt exploded")

    async with open_session(server) as h:
        await h.initialize()
        survivor = await h.start_tool("slow", {"seconds": 3, "label": "survivor"})

        result = await h.call_tool("broken_tool")
        assert result["isError"] is True
        assert "ValueError: tool exploded" in tool_text(result)

        error = await h.error_of(await h.send_request("resources/read", {"uri": "mem://broken"}))
        assert error["code"] == -32603
        assert "KeyError" in error["message"]
        assert "resource exploded" in error["message"]

        error = await h.error_of(await h.send_request("resources/read", {"uri": "mem://refused"}))
        assert error == {"code": -32002, "message": "not today", "data": {"uri": "mem://refused"}}

        error = await h.error_of(await h.send_request("prompts/get", {"name": "broken_prompt"}))
        assert error["code"] == -32603
        assert "RuntimeError: prompt exploded" in error["message"]

        await h.request("ping")
        assert tool_text(await h.result_of(survivor)) == "survivor slept 3"
        assert trio.current_time() == 3
        await trio.testing.wait_all_tasks_blocked()
        assert_idle(h.actor)


async def test_requests_beyond_max_in_flight_are_refused_and_the_rest_served(
    autojump_clock: trio.testing.MockClock,
) -> None:
    options = SessionOptions(max_in_flight=2)
    async with open_session(slow_server(), options) as h:
        await h.initialize()
        first = await h.start_tool("slow", {"seconds": 2, "label": "first"})
        second = await h.start_tool("slow", {"seconds": 2, "label": "second"})
        extra = await h.start_tool("slow", {"seconds": 2, "label": "extra"})
        error = await h.error_of(extra)
        assert error["code"] == -32603
        assert error["message"] == "server busy: too many requests in flight (limit 2)"
        assert error["data"] == {"limit": 2}
        assert trio.current_time() == 0
        # Requests the session answers itself do not count against the limit.
        await h.request("ping")
        assert tool_text(await h.result_of(first)) == "first slept 2"
        assert tool_text(await h.result_of(second)) == "second slept 2"
        # Once the others are done there is room again.
        assert tool_text(await h.call_tool("slow", {"seconds": 1, "label": "later"})) == (
            "later slept 1"
        )
        await trio.testing.wait_all_tasks_blocked()
        assert_idle(h.actor)


async def test_refusing_a_request_waits_for_room_in_a_full_outbox(
    autojump_clock: trio.testing.MockClock,
) -> None:
    options = SessionOptions(max_in_flight=1)
    async with open_session(slow_server(), options, outbox_size=1) as h:
        await h.initialize()
        running = await h.start_tool("slow", {"seconds": 5, "label": "running"})
        ping = await h.send_request("ping")
        await trio.testing.wait_all_tasks_blocked()  # the pong fills the outbox
        refused = await h.start_tool("slow", {"seconds": 1})
        assert (await h.next_item()).payload["id"] == ping
        error = await h.error_of(refused)
        assert "too many requests in flight" in error["message"]
        assert tool_text(await h.result_of(running)) == "running slept 5"
        assert trio.current_time() == 5


async def test_a_reused_in_flight_id_is_refused_without_disturbing_the_first(
    autojump_clock: trio.testing.MockClock,
) -> None:
    async with open_session(slow_server()) as h:
        await h.initialize()
        params = {"name": "slow", "arguments": {"seconds": 2, "label": "first"}}
        await h.send_request("tools/call", params, request_id="job")
        await h.send(
            {
                "jsonrpc": "2.0",
                "id": "job",
                "method": "tools/call",
                "params": {"name": "slow", "arguments": {"seconds": 1}},
            }
        )
        refused = await h.next_item()
        assert refused.payload["error"]["code"] == -32600
        assert trio.current_time() == 0
        assert tool_text(await h.result_of("job")) == "first slept 2"
        assert trio.current_time() == 2
        await trio.testing.wait_all_tasks_blocked()
        assert_idle(h.actor)


async def test_a_batch_is_answered_once_its_last_request_ends(
    autojump_clock: trio.testing.MockClock,
) -> None:
    async with open_session(slow_server()) as h:
        await h.initialize("2025-03-26")
        calls = [
            {
                "jsonrpc": "2.0",
                "id": request_id,
                "method": "tools/call",
                "params": {"name": "slow", "arguments": {"seconds": seconds, "label": label}},
            }
            for request_id, seconds, label in [(10, 1, "quick"), (11, 60, "stuck")]
        ]
        await h.send_batch([*calls, {"jsonrpc": "2.0", "id": 12, "method": "ping"}])
        await trio.sleep(2)
        await h.expect_nothing()  # the quick answer waits for the rest of its batch
        await h.cancel(11)
        batch = (await h.next_item()).payload
        assert isinstance(batch, list)
        assert sorted(reply["id"] for reply in batch) == [10, 12]
        assert trio.current_time() == 2
        await trio.testing.wait_all_tasks_blocked()
        assert_idle(h.actor)
