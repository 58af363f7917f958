"""Task-augmented requests (2025-11-25) served by a session actor.

The client is the raw harness of ``conftest.py``: every message the actor sends is
checked against the official schema (``CreateTaskResult`` for a task-augmented
``tools/call``, ``TaskStatusNotification``, the ``tasks/*`` results). Time is virtual
(``autojump_clock``), so TTLs and sleeps are exact.
"""

from __future__ import annotations

import gc
import weakref
from typing import Any

import pytest
import trio
import trio.testing

from mcpactor import Context, RequestError, Server, SessionOptions, ToolError
from mcpactor.protocol import JSONObject
from mcpactor.runtime import TaskOptions
from tests.spec_schema import check

from .conftest import SessionHarness, assert_idle, live_tasks, open_session, tool_text

RELATED = "io.modelcontextprotocol/related-task"
TASKS = {"list": {}, "cancel": {}, "requests": {"tools": {"call": {}}}}
SCHEMA = {"type": "object", "properties": {"name": {"type": "string"}}}


def jobs_server(log: list[str]) -> Server:
    server = Server("jobs")

    @server.tool(task_support="optional")
    async def slow(seconds: int, ctx: Context) -> str:
        """Sleep a second at a time, reporting progress."""
        try:
            for step in range(seconds):
                await trio.sleep(1)
                await ctx.report_progress(step + 1, seconds, f"second {step + 1}")
        finally:
            log.append(f"slow {seconds} ended at {trio.current_time():g}")
        return f"slept {seconds}"

    @server.tool(task_support="required")
    async def batch(size: int) -> str:
        """A job that only runs as a task."""
        await trio.sleep(size)
        return f"batch of {size}"

    @server.tool()
    async def quick() -> str:
        """A tool that never runs as a task."""
        return "quick"

    @server.tool(task_support="optional")
    async def fail(how: str) -> str:
        """Fail after a second, in the way asked."""
        await trio.sleep(1)
        if how == "tool":
            raise ToolError("the disk is full")
        if how == "request":
            raise RequestError(-32000, "the backend refused", {"backend": "db"})
        raise ValueError("a bug")

    @server.tool(task_support="optional")
    async def ask(ctx: Context) -> str:
        """Ask the user for a name, logging around it."""
        await ctx.info("asking")
        answer = await ctx.elicit("Who are you?", SCHEMA)
        await ctx.info("answered")
        return f"{answer.action} {answer.content}"

    @server.tool(task_support="optional")
    async def forever() -> str:
        """Wait until cancelled."""
        try:
            await trio.sleep_forever()
        finally:
            log.append(f"forever ended at {trio.current_time():g}")

    return server


async def create_task(
    h: SessionHarness,
    name: str,
    arguments: JSONObject | None = None,
    *,
    ttl: int | None = None,
    meta: JSONObject | None = None,
) -> JSONObject:
    """Call a tool as a task; return the ``Task`` of its ``CreateTaskResult``."""
    params: JSONObject = {
        "name": name,
        "arguments": arguments or {},
        "task": {} if ttl is None else {"ttl": ttl},
    }
    if meta is not None:
        params["_meta"] = meta
    result = await h.request("tools/call", params)
    assert set(result) == {"task"}, result
    task: JSONObject = result["task"]
    return task


async def status_of(h: SessionHarness, task_id: str) -> JSONObject:
    """Wait for the next ``notifications/tasks/status`` of one task; return its params."""
    item = await h.item_where(
        lambda m: (
            m.get("method") == "notifications/tasks/status" and m["params"]["taskId"] == task_id
        )
    )
    assert item.related_request_id is None
    params: JSONObject = item.payload["params"]
    assert RELATED not in params.get("_meta", {})
    return params


async def error_for(h: SessionHarness, method: str, params: JSONObject) -> JSONObject:
    return await h.error_of(await h.send_request(method, params))


async def assert_no_task_actors(h: SessionHarness) -> None:
    await trio.testing.wait_all_tasks_blocked()
    assert h.actor.tasks.statistics().running == 0
    assert_idle(h.actor)


# --- negotiation ----------------------------------------------------------------------


async def test_tasks_are_advertised_at_2025_11_25_with_each_tools_task_support() -> None:
    async with open_session(jobs_server([])) as h:
        initialized = await h.initialize("2025-11-25")
        assert initialized["capabilities"]["tasks"] == TASKS
        tools = {t["name"]: t for t in (await h.request("tools/list"))["tools"]}
        assert tools["slow"]["execution"] == {"taskSupport": "optional"}
        assert tools["batch"]["execution"] == {"taskSupport": "required"}
        assert "execution" not in tools["quick"]  # forbidden is the default


@pytest.mark.parametrize("revision", ["2024-11-05", "2025-03-26", "2025-06-18"])
async def test_earlier_revisions_see_no_tasks_and_task_metadata_is_ignored(
    revision: str, autojump_clock: trio.testing.MockClock
) -> None:
    async with open_session(jobs_server([])) as h:
        initialized = await h.initialize(revision)
        assert "tasks" not in initialized["capabilities"]
        tools = (await h.request("tools/list"))["tools"]
        assert all("execution" not in tool for tool in tools)
        # Without the capability the request is processed normally (spec "Task Support
        # and Handling"): a plain result, even for a tool that requires tasks at 2025-11-25.
        result = await h.request(
            "tools/call", {"name": "slow", "arguments": {"seconds": 1}, "task": {"ttl": 1000}}
        )
        assert tool_text(result) == "slept 1"
        assert tool_text(await h.call_tool("batch", {"size": 1})) == "batch of 1"
        for method in ("tasks/get", "tasks/result", "tasks/cancel"):
            error = await error_for(h, method, {"taskId": "x"})
            assert error["code"] == -32601
        assert (await error_for(h, "tasks/list", {}))["code"] == -32601


async def test_a_server_without_task_tools_declares_no_tasks() -> None:
    server = Server("plain")

    @server.tool()
    async def quick() -> str:
        """Answer at once."""
        return "quick"

    async with open_session(server) as h:
        initialized = await h.initialize("2025-11-25")
        assert "tasks" not in initialized["capabilities"]
        result = await h.request("tools/call", {"name": "quick", "task": {}})
        assert tool_text(result) == "quick"
        assert (await error_for(h, "tasks/list", {}))["code"] == -32601


async def test_tool_level_negotiation_errors() -> None:
    async with open_session(jobs_server([])) as h:
        await h.initialize("2025-11-25")
        required = await error_for(h, "tools/call", {"name": "batch", "arguments": {"size": 1}})
        assert required["code"] == -32601
        assert "task augmentation required" in required["message"]
        forbidden = await error_for(h, "tools/call", {"name": "quick", "task": {}})
        assert forbidden["code"] == -32601
        assert "does not support task-augmented calls" in forbidden["message"]
        for task in ({"ttl": -1}, {"ttl": 1.5}, {"ttl": "soon"}, "yes"):
            bad = await error_for(h, "tools/call", {"name": "slow", "task": task})
            assert bad["code"] == -32602, task
        unknown = await error_for(h, "tools/call", {"name": "nope", "task": {}})
        assert unknown["code"] == -32602
        assert h.actor.tasks.statistics().stored == 0


# --- the life of a task ------------------------------------------------------------------


async def test_a_task_outlives_its_request_reports_progress_and_delivers_its_result(
    autojump_clock: trio.testing.MockClock,
) -> None:
    log: list[str] = []
    async with open_session(jobs_server(log)) as h:
        await h.initialize("2025-11-25")
        task = await create_task(h, "slow", {"seconds": 3}, meta={"progressToken": "p1"})
        # The CreateTaskResult comes at once; the work goes on without a request.
        assert trio.current_time() == 0
        task_id = task["taskId"]
        assert task["status"] == "working"
        assert task["ttl"] == 3_600_000  # the default
        assert task["pollInterval"] == 1000
        assert task["createdAt"] == task["lastUpdatedAt"]
        assert len(task_id) >= 22  # 128 random bits
        assert h.actor.statistics().requests_in_flight == 0
        assert h.actor.tasks.statistics().running == 1

        polled = await h.request("tasks/get", {"taskId": task_id})
        assert polled == task

        # The progress token stays valid for the task's life; its messages name the task.
        for step in (1, 2, 3):
            item = await h.notification("notifications/progress")
            params = item.payload["params"]
            assert params["progressToken"] == "p1"
            assert params["progress"] == step
            assert params["_meta"] == {RELATED: {"taskId": task_id}}
            assert trio.current_time() == step

        done = await status_of(h, task_id)
        assert done["status"] == "completed"
        assert done["createdAt"] == task["createdAt"]
        assert done["lastUpdatedAt"] > task["lastUpdatedAt"]
        assert log == ["slow 3 ended at 3"]

        polled = await h.request("tasks/get", {"taskId": task_id})
        assert polled["status"] == "completed"
        result = await h.request("tasks/result", {"taskId": task_id})
        check(result, "2025-11-25", "CallToolResult")
        assert result["_meta"] == {RELATED: {"taskId": task_id}}
        plain = await h.call_tool("slow", {"seconds": 0})
        assert set(result) == set(plain) | {"_meta"}
        assert tool_text(result) == "slept 3"
        assert result["structuredContent"] == {"result": "slept 3"}
        await assert_no_task_actors(h)


async def test_tasks_result_waits_until_the_task_is_terminal(
    autojump_clock: trio.testing.MockClock,
) -> None:
    async with open_session(jobs_server([])) as h:
        await h.initialize("2025-11-25")
        task_id = (await create_task(h, "batch", {"size": 5}))["taskId"]
        waiting = await h.send_request("tasks/result", {"taskId": task_id})
        await trio.testing.wait_all_tasks_blocked()
        assert h.actor.tasks.statistics().waiting == 1
        result = await h.result_of(waiting)
        assert trio.current_time() == 5
        assert tool_text(result) == "batch of 5"
        # Asking again answers at once, with the same result.
        assert await h.request("tasks/result", {"taskId": task_id}) == result
        assert trio.current_time() == 5
        assert h.actor.tasks.statistics().waiting == 0


async def test_cancelling_a_task_stops_its_handler_and_is_final(
    autojump_clock: trio.testing.MockClock,
) -> None:
    log: list[str] = []
    async with open_session(jobs_server(log)) as h:
        await h.initialize("2025-11-25")
        task_id = (await create_task(h, "slow", {"seconds": 10}))["taskId"]
        other_id = (await create_task(h, "slow", {"seconds": 3}))["taskId"]
        waiting = await h.send_request("tasks/result", {"taskId": task_id})
        await trio.sleep(2.5)

        cancelled = await h.request("tasks/cancel", {"taskId": task_id})
        assert cancelled["status"] == "cancelled"
        assert cancelled["taskId"] == task_id
        assert cancelled["statusMessage"] == "The task was cancelled by request."
        assert (await status_of(h, task_id))["status"] == "cancelled"
        # The handler's finally ran, at once; the other task is untouched.
        await trio.testing.wait_all_tasks_blocked()
        assert log == ["slow 10 ended at 2.5"]
        assert (await h.request("tasks/get", {"taskId": other_id}))["status"] == "working"

        # The waiting tasks/result learns the outcome; so does a later one.
        error = await h.error_of(waiting)
        assert error["code"] == -32602
        assert error["data"] == {"taskId": task_id, "status": "cancelled"}
        assert await error_for(h, "tasks/result", {"taskId": task_id}) == error

        again = await error_for(h, "tasks/cancel", {"taskId": task_id})
        assert again["code"] == -32602
        assert again["message"] == "Cannot cancel task: already in terminal status 'cancelled'"
        assert (await status_of(h, other_id))["status"] == "completed"
        finished = await error_for(h, "tasks/cancel", {"taskId": other_id})
        assert "already in terminal status 'completed'" in finished["message"]
        assert (await h.request("tasks/get", {"taskId": task_id}))["status"] == "cancelled"
        await assert_no_task_actors(h)


async def test_the_create_task_result_comes_before_anything_the_task_sends() -> None:
    server = Server("instant")

    @server.tool(task_support="optional")
    async def instant(ctx: Context) -> str:
        """Report progress and fail before the first checkpoint."""
        await ctx.report_progress(1)
        raise ToolError("nothing to do")

    async with open_session(server) as h:
        await h.initialize("2025-11-25")
        request_id = await h.send_request(
            "tools/call", {"name": "instant", "task": {}, "_meta": {"progressToken": 1}}
        )
        items = [item.payload for item in await h.pending()]
        assert [item.get("method", "response") for item in items] == [
            "response",
            "notifications/progress",
            "notifications/tasks/status",
        ]
        assert items[0]["id"] == request_id
        assert items[2]["params"]["status"] == "failed"


async def test_a_cancelled_tasks_result_leaves_the_task_running(
    autojump_clock: trio.testing.MockClock,
) -> None:
    async with open_session(jobs_server([])) as h:
        await h.initialize("2025-11-25")
        task_id = (await create_task(h, "batch", {"size": 2}))["taskId"]
        waiting = await h.send_request("tasks/result", {"taskId": task_id})
        await trio.sleep(1)
        await h.cancel(waiting)
        await trio.testing.wait_all_tasks_blocked()
        assert h.actor.tasks.statistics().waiting == 0
        assert (await status_of(h, task_id))["status"] == "completed"
        assert tool_text(await h.request("tasks/result", {"taskId": task_id})) == "batch of 2"
        await h.expect_nothing()  # the cancelled tasks/result got no response


async def test_notifications_cancelled_does_not_reach_a_task(
    autojump_clock: trio.testing.MockClock,
) -> None:
    log: list[str] = []
    async with open_session(jobs_server(log)) as h:
        await h.initialize("2025-11-25")
        request_id = await h.send_request(
            "tools/call", {"name": "slow", "arguments": {"seconds": 2}, "task": {}}
        )
        task_id = (await h.result_of(request_id))["task"]["taskId"]
        # The request was answered; tasks are cancelled with tasks/cancel (spec).
        await h.cancel(request_id)
        assert (await status_of(h, task_id))["status"] == "completed"
        assert log == ["slow 2 ended at 2"]


@pytest.mark.parametrize(
    ("how", "status_message"),
    [
        ("tool", "the disk is full"),
        ("bug", "tool 'fail' failed: ValueError: a bug"),
    ],
)
async def test_a_failing_tool_fails_its_task_and_the_result_is_the_plain_calls(
    how: str, status_message: str, autojump_clock: trio.testing.MockClock
) -> None:
    async with open_session(jobs_server([])) as h:
        await h.initialize("2025-11-25")
        task_id = (await create_task(h, "fail", {"how": how}))["taskId"]
        failed = await status_of(h, task_id)
        assert failed["status"] == "failed"
        assert failed["statusMessage"] == status_message
        result = await h.request("tasks/result", {"taskId": task_id})
        plain = await h.call_tool("fail", {"how": how})
        assert plain["isError"] is True
        assert result == {**plain, "_meta": {RELATED: {"taskId": task_id}}}


async def test_a_task_whose_call_fails_with_a_json_rpc_error_returns_that_error(
    autojump_clock: trio.testing.MockClock,
) -> None:
    async with open_session(jobs_server([])) as h:
        await h.initialize("2025-11-25")
        task_id = (await create_task(h, "fail", {"how": "request"}))["taskId"]
        failed = await status_of(h, task_id)
        assert failed["status"] == "failed"
        assert failed["statusMessage"] == "the backend refused"
        error = await error_for(h, "tasks/result", {"taskId": task_id})
        plain = await error_for(h, "tools/call", {"name": "fail", "arguments": {"how": "request"}})
        expected = {"code": -32000, "message": "the backend refused", "data": {"backend": "db"}}
        assert error == expected
        assert plain == expected


async def test_unknown_task_ids_and_bad_params_are_invalid_params() -> None:
    async with open_session(jobs_server([])) as h:
        await h.initialize("2025-11-25")
        for method in ("tasks/get", "tasks/result", "tasks/cancel"):
            missing = await error_for(h, method, {"taskId": "no-such-task"})
            assert missing["code"] == -32602
            assert missing["message"].startswith("Failed to retrieve task: Task not found")
            assert (await error_for(h, method, {"taskId": 7}))["code"] == -32602
            assert (await error_for(h, method, {}))["code"] == -32602
        for cursor in ("garbage", 5, "WyJ0b29scyIsMV0="):
            assert (await error_for(h, "tasks/list", {"cursor": cursor}))["code"] == -32602


# --- input_required ----------------------------------------------------------------------


async def test_a_task_waiting_on_the_client_is_input_required(
    autojump_clock: trio.testing.MockClock,
) -> None:
    async with open_session(jobs_server([])) as h:
        await h.initialize("2025-11-25", {"elicitation": {}})
        await h.request("logging/setLevel", {"level": "info"})
        task_id = (await create_task(h, "ask"))["taskId"]
        related = {RELATED: {"taskId": task_id}}
        logged = await h.notification("notifications/message")
        assert logged.payload["params"]["_meta"] == related
        assert (await status_of(h, task_id))["status"] == "input_required"
        asked = await h.server_request("elicitation/create")
        assert asked["params"]["_meta"] == related
        assert asked["params"]["message"] == "Who are you?"
        polled = await h.request("tasks/get", {"taskId": task_id})
        assert polled["status"] == "input_required"

        await h.answer(asked, {"action": "accept", "content": {"name": "Ada"}})
        assert (await status_of(h, task_id))["status"] == "working"
        assert (await status_of(h, task_id))["status"] == "completed"
        result = await h.request("tasks/result", {"taskId": task_id})
        assert tool_text(result) == "accept {'name': 'Ada'}"


async def test_a_waiting_tasks_result_carries_the_tasks_requests(
    autojump_clock: trio.testing.MockClock,
) -> None:
    server = jobs_server([])

    @server.tool(task_support="required")
    async def ask_later(ctx: Context) -> str:
        """Ask the user once the client is waiting for the result."""
        await trio.sleep(1)
        answer = await ctx.elicit("Again?", SCHEMA)
        return answer.action

    async with open_session(server) as h:
        await h.initialize("2025-11-25", {"elicitation": {}})
        task_id = (await create_task(h, "ask_later"))["taskId"]
        waiting = await h.send_request("tasks/result", {"taskId": task_id})
        # The elicitation goes on the stream of the waiting tasks/result (spec flow for
        # input_required); over HTTP that is the stream the client is reading.
        item = await h.item_where(lambda m: m.get("method") == "elicitation/create")
        assert item.related_request_id == waiting
        await h.answer(item.payload, {"action": "decline"})
        assert tool_text(await h.result_of(waiting)) == "decline"


async def test_a_failed_client_request_returns_the_task_to_working(
    autojump_clock: trio.testing.MockClock,
) -> None:
    async with open_session(jobs_server([])) as h:
        await h.initialize("2025-11-25", {"elicitation": {}})
        task_id = (await create_task(h, "ask"))["taskId"]
        assert (await status_of(h, task_id))["status"] == "input_required"
        asked = await h.server_request("elicitation/create")
        await h.answer_error(asked, -1, "the user closed the dialog")
        assert (await status_of(h, task_id))["status"] == "working"
        failed = await status_of(h, task_id)
        assert failed["status"] == "failed"
        assert "the user closed the dialog" in failed["statusMessage"]


async def test_a_handler_that_stops_waiting_on_the_client_is_working_again(
    autojump_clock: trio.testing.MockClock,
) -> None:
    server = Server("impatient")

    @server.tool(task_support="optional")
    async def impatient(ctx: Context) -> str:
        """Ask for five seconds, then carry on without an answer."""
        with trio.move_on_after(5):
            await ctx.elicit("Quick?", SCHEMA)
        await trio.sleep(10)
        return "went ahead"

    async with open_session(server) as h:
        await h.initialize("2025-11-25", {"elicitation": {}})
        task_id = (await create_task(h, "impatient"))["taskId"]
        assert (await status_of(h, task_id))["status"] == "input_required"
        asked = await h.server_request("elicitation/create")
        withdrawn = await h.notification("notifications/cancelled")
        assert withdrawn.payload["params"]["requestId"] == asked["id"]
        assert trio.current_time() == 5
        assert (await h.request("tasks/get", {"taskId": task_id}))["status"] == "working"
        assert (await status_of(h, task_id))["status"] == "completed"
        assert trio.current_time() == 15


# --- TTL and limits ----------------------------------------------------------------------


async def test_a_finished_task_is_kept_until_its_ttl_then_freed(
    autojump_clock: trio.testing.MockClock,
) -> None:
    async with open_session(jobs_server([])) as h:
        await h.initialize("2025-11-25")
        before = live_tasks()
        task = await create_task(h, "batch", {"size": 1}, ttl=5000)
        assert task["ttl"] == 5000
        assert (await status_of(h, task["taskId"]))["status"] == "completed"
        await trio.sleep(3.9)
        assert trio.current_time() == pytest.approx(4.9)
        assert (await h.request("tasks/get", {"taskId": task["taskId"]}))["status"] == "completed"
        await trio.sleep(0.1)
        await trio.testing.wait_all_tasks_blocked()
        gone = await error_for(h, "tasks/get", {"taskId": task["taskId"]})
        assert gone["code"] == -32602
        assert (await h.request("tasks/list"))["tasks"] == []
        assert h.actor.tasks.statistics().stored == 0
        # Nothing is left behind: no task actor, no reaper.
        await trio.testing.wait_all_tasks_blocked()
        assert live_tasks() == before


async def test_a_running_task_is_cancelled_when_its_ttl_passes(
    autojump_clock: trio.testing.MockClock,
) -> None:
    log: list[str] = []
    async with open_session(jobs_server(log)) as h:
        await h.initialize("2025-11-25")
        task_id = (await create_task(h, "forever", ttl=2500))["taskId"]
        waiting = await h.send_request("tasks/result", {"taskId": task_id})
        expired = await status_of(h, task_id)
        assert expired["status"] == "cancelled"
        assert expired["statusMessage"] == "the task's ttl passed"
        error = await h.error_of(waiting)
        assert error["code"] == -32602
        assert error["message"].startswith("Failed to retrieve task: Task has expired")
        assert log == ["forever ended at 2.5"]
        assert (await error_for(h, "tasks/get", {"taskId": task_id}))["code"] == -32602
        await assert_no_task_actors(h)


async def test_requested_ttls_are_capped_and_unlimited_ones_are_null() -> None:
    options = SessionOptions(tasks=TaskOptions(max_ttl=60, default_ttl=None))
    async with open_session(jobs_server([]), options) as h:
        await h.initialize("2025-11-25")
        assert (await create_task(h, "forever", ttl=10**9))["ttl"] == 60_000
        assert (await create_task(h, "forever", ttl=1_500_000))["ttl"] == 60_000
        assert (await create_task(h, "forever", ttl=1500))["ttl"] == 1500
        unlimited = await create_task(h, "forever")
        assert unlimited["ttl"] is None
        for listed in (await h.request("tasks/list"))["tasks"]:
            await h.request("tasks/cancel", {"taskId": listed["taskId"]})


async def test_running_and_stored_tasks_are_limited_per_session(
    autojump_clock: trio.testing.MockClock,
) -> None:
    options = SessionOptions(tasks=TaskOptions(max_running=2, max_stored=3, default_ttl=10))
    async with open_session(jobs_server([]), options) as h:
        await h.initialize("2025-11-25")
        first = await create_task(h, "batch", {"size": 1})
        await create_task(h, "batch", {"size": 1})
        busy = await error_for(h, "tools/call", {"name": "batch", "arguments": {}, "task": {}})
        assert busy["code"] == -32603
        assert "too many tasks running (limit 2 per session)" in busy["message"]
        assert (await status_of(h, first["taskId"]))["status"] == "completed"
        await create_task(h, "batch", {"size": 1})
        full = await error_for(h, "tools/call", {"name": "batch", "arguments": {}, "task": {}})
        assert "too many tasks kept (limit 3 per session)" in full["message"]
        await trio.sleep(9.5)  # the first two expire
        await create_task(h, "batch", {"size": 1})
        assert h.actor.tasks.statistics().stored == 2


async def test_tasks_list_pages_through_the_sessions_tasks_in_creation_order() -> None:
    options = SessionOptions(tasks=TaskOptions(page_size=2))
    async with open_session(jobs_server([]), options) as h:
        await h.initialize("2025-11-25")
        created = [(await create_task(h, "forever"))["taskId"] for _ in range(5)]
        await h.request("tasks/cancel", {"taskId": created[1]})
        listed: list[JSONObject] = []
        params: JSONObject = {}
        pages = 0
        while True:
            page = await h.request("tasks/list", params)
            pages += 1
            assert len(page["tasks"]) <= 2
            listed.extend(page["tasks"])
            if "nextCursor" not in page:
                break
            params = {"cursor": page["nextCursor"]}
        assert pages == 3
        assert [t["taskId"] for t in listed] == created
        assert [t["status"] for t in listed].count("cancelled") == 1
        for task_id in created:
            if task_id != created[1]:
                await h.request("tasks/cancel", {"taskId": task_id})


# --- isolation and ownership ---------------------------------------------------------------


async def test_another_session_can_neither_see_nor_cancel_a_task(
    autojump_clock: trio.testing.MockClock,
) -> None:
    server = jobs_server([])
    async with open_session(server) as owner, open_session(server) as other:
        await owner.initialize("2025-11-25")
        await other.initialize("2025-11-25")
        task_id = (await create_task(owner, "batch", {"size": 3}))["taskId"]
        for method in ("tasks/get", "tasks/result", "tasks/cancel"):
            error = await error_for(other, method, {"taskId": task_id})
            assert error["code"] == -32602
            assert "Task not found" in error["message"]
        assert (await other.request("tasks/list"))["tasks"] == []
        assert (await status_of(owner, task_id))["status"] == "completed"
        assert tool_text(await owner.request("tasks/result", {"taskId": task_id})) == (
            "batch of 3"
        )


async def test_a_task_ends_with_its_session(autojump_clock: trio.testing.MockClock) -> None:
    log: list[str] = []
    before = live_tasks()
    async with open_session(jobs_server(log), SessionOptions(shutdown_grace=5)) as h:
        await h.initialize("2025-11-25")
        await create_task(h, "slow", {"seconds": 3})
        await create_task(h, "forever")
        await h.close()
        # Running tasks get the shutdown grace, like requests; then they are cancelled.
        assert await h.wait_ended() == 5
    assert log == ["slow 3 ended at 3", "forever ended at 5"]
    assert live_tasks() == before


async def test_a_thousand_tasks_leave_nothing_behind(
    autojump_clock: trio.testing.MockClock,
) -> None:
    options = SessionOptions(tasks=TaskOptions(max_running=1000, max_stored=1000, default_ttl=60))
    async with open_session(jobs_server([]), options, outbox_size=8192) as h:
        await h.initialize("2025-11-25")
        before = live_tasks()
        kinds = ("batch", "fail", "forever")
        ids: list[tuple[str, str]] = []
        for number in range(1000):
            kind = kinds[number % 3]
            arguments: dict[str, Any] = {"size": 1} if kind == "batch" else {}
            if kind == "fail":
                arguments = {"how": "tool"}
            ids.append((kind, (await create_task(h, kind, arguments))["taskId"]))
        assert h.actor.tasks.statistics().running == 1000
        for kind, task_id in ids:
            if kind == "forever":
                await h.request("tasks/cancel", {"taskId": task_id})
        await trio.sleep(1)
        await trio.testing.wait_all_tasks_blocked()
        stats = h.actor.tasks.statistics()
        assert (stats.running, stats.stored) == (0, 1000)
        statuses = [t["status"] for t in await list_all(h)]
        assert sorted(set(statuses)) == ["cancelled", "completed", "failed"]
        records = [weakref.ref(task) for task in h.actor.tasks._table.tasks.values()]
        await h.pending()  # drain the status notifications
        await trio.sleep(60)
        await trio.testing.wait_all_tasks_blocked()
        assert h.actor.tasks.statistics().stored == 0
        assert live_tasks() == before
        gc.collect()
        assert [ref for ref in records if ref() is not None] == []
        assert_idle(h.actor)


async def list_all(h: SessionHarness) -> list[JSONObject]:
    tasks: list[JSONObject] = []
    params: JSONObject = {}
    while True:
        page = await h.request("tasks/list", params)
        tasks.extend(page["tasks"])
        if "nextCursor" not in page:
            return tasks
        params = {"cursor": page["nextCursor"]}
