"""The client's task API (2025-11-25) against real Servers in memory.

Every message the server sends is checked against the official schema (``connect`` of
``conftest.py``); time is virtual, so the tools' sleeps and the tasks' TTLs are exact.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path
from typing import Any

import pytest
import trio
import trio.testing

from mcpactor import (
    CapabilityError,
    Context,
    ProtocolError,
    RemoteProtocolError,
    RequestError,
    Server,
    SessionOptions,
    ToolError,
)
from mcpactor.cli import load_server
from mcpactor.client import ClientSession, open_client_session
from mcpactor.protocol import JSONObject, JSONValue, Notification
from mcpactor.runtime import TaskOptions
from tests.doc_includes import expanded

from .conftest import GUARD, checker_of, connect, text_of

RELATED = "io.modelcontextprotocol/related-task"
ROOT = Path(__file__).resolve().parents[2]


def jobs_server(log: list[str]) -> Server:
    server = Server("jobs")

    @server.tool(task_support="optional")
    async def slow(seconds: int, ctx: Context) -> str:
        """Sleep a second at a time, reporting progress."""
        for step in range(seconds):
            await trio.sleep(1)
            await ctx.report_progress(step + 1, seconds)
        return f"slept {seconds}"

    @server.tool(task_support="optional")
    async def forever() -> str:
        """Wait until cancelled, noting when it stopped."""
        try:
            await trio.sleep_forever()
        finally:
            log.append(f"forever ended at {trio.current_time():g}")

    @server.tool(task_support="optional")
    async def fail(how: str) -> str:
        """Fail after a second, as a tool or with a JSON-RPC error."""
        await trio.sleep(1)
        if how == "tool":
            raise ToolError("the disk is full")
        raise RequestError(-32000, "the backend refused", {"backend": "db"})

    @server.tool()
    async def quick() -> str:
        """A tool that never runs as a task."""
        return "quick"

    return server


def status_is(task_id: str, status: str) -> Any:
    """A predicate for the ``notifications/tasks/status`` of one task reaching ``status``."""

    def matches(notification: Notification) -> bool:
        params = notification.params or {}
        return params.get("taskId") == task_id and params.get("status") == status

    return matches


async def wait_status(client: ClientSession, task_id: str, status: str) -> JSONObject:
    with trio.fail_after(GUARD):
        note = await client.notifications.wait_for(
            "notifications/tasks/status", status_is(task_id, status)
        )
    assert note.params is not None
    return note.params


async def test_a_task_is_created_polled_announced_and_its_result_fetched(
    autojump_clock: trio.testing.MockClock,
) -> None:
    async with connect(jobs_server([])) as client:
        task = await client.tasks.call_tool(
            "slow", {"seconds": 3}, ttl=60_000, meta={"progressToken": "p"}
        )
        task_id = task["taskId"]
        assert task["status"] == "working"
        assert task["ttl"] == 60_000
        assert trio.current_time() == 0
        assert (await client.tasks.get(task_id))["status"] == "working"
        assert [t["taskId"] for t in await client.tasks.list()] == [task_id]

        done = await wait_status(client, task_id, "completed")
        assert trio.current_time() == 3
        polled = await client.tasks.get(task_id)
        assert polled["status"] == "completed"
        assert polled["lastUpdatedAt"] == done["lastUpdatedAt"]
        result = await client.tasks.result(task_id)
        plain = await client.call_tool("slow", {"seconds": 3})
        assert result == {**plain, "_meta": {RELATED: {"taskId": task_id}}}
        assert text_of(result) == "slept 3"
        # The progress token of the call stayed valid for the task's life.
        progress = [
            m["params"]
            for m, _ in checker_of(client).seen
            if isinstance(m, dict) and m.get("method") == "notifications/progress"
        ]
        assert [p["progress"] for p in progress if p["progressToken"] == "p"] == [1, 2, 3]
        assert checker_of(client).answered()[2:6] == [
            "tools/call",
            "tasks/get",
            "tasks/list",
            "tasks/get",
        ]


async def test_a_task_result_waits_for_a_running_task(
    autojump_clock: trio.testing.MockClock,
) -> None:
    async with connect(jobs_server([])) as client:
        task_id = (await client.tasks.call_tool("slow", {"seconds": 5}))["taskId"]
        result = await client.tasks.result(task_id)
        assert trio.current_time() == 5
        assert text_of(result) == "slept 5"


async def test_a_task_result_that_times_out_leaves_the_task_running(
    autojump_clock: trio.testing.MockClock,
) -> None:
    async with connect(jobs_server([])) as client:
        task_id = (await client.tasks.call_tool("slow", {"seconds": 5}))["taskId"]
        with pytest.raises(trio.TooSlowError):
            await client.tasks.result(task_id, timeout=2)
        assert (await client.tasks.get(task_id))["status"] == "working"
        assert text_of(await client.tasks.result(task_id)) == "slept 5"
        assert trio.current_time() == 5


async def test_cancelling_a_task_stops_the_handler_and_its_result_is_an_error(
    autojump_clock: trio.testing.MockClock,
) -> None:
    log: list[str] = []
    async with connect(jobs_server(log)) as client:
        task_id = (await client.tasks.call_tool("forever"))["taskId"]
        await trio.sleep(4)
        cancelled = await client.tasks.cancel(task_id)
        assert cancelled["taskId"] == task_id
        assert cancelled["status"] == "cancelled"
        await wait_status(client, task_id, "cancelled")
        assert log == ["forever ended at 4"]
        with pytest.raises(RequestError) as result_error:
            await client.tasks.result(task_id)
        assert result_error.value.code == -32602
        assert result_error.value.data == {"taskId": task_id, "status": "cancelled"}
        with pytest.raises(RequestError, match="already in terminal status") as again:
            await client.tasks.cancel(task_id)
        assert again.value.code == -32602


async def test_a_failed_tasks_result_is_what_the_plain_call_gives(
    autojump_clock: trio.testing.MockClock,
) -> None:
    async with connect(jobs_server([])) as client:
        tool_task = (await client.tasks.call_tool("fail", {"how": "tool"}))["taskId"]
        failed = await wait_status(client, tool_task, "failed")
        assert failed["statusMessage"] == "the disk is full"
        result = await client.tasks.result(tool_task)
        assert result["isError"] is True
        assert text_of(result) == "the disk is full"

        rpc_task = (await client.tasks.call_tool("fail", {"how": "rpc"}))["taskId"]
        with pytest.raises(RequestError) as from_task:
            await client.tasks.result(rpc_task)
        with pytest.raises(RequestError) as from_call:
            await client.call_tool("fail", {"how": "rpc"})
        for error in (from_task.value, from_call.value):
            assert (error.code, error.message, error.data) == (
                -32000,
                "the backend refused",
                {"backend": "db"},
            )


async def test_the_tasks_list_follows_every_page(autojump_clock: trio.testing.MockClock) -> None:
    options = SessionOptions(tasks=TaskOptions(page_size=2))
    async with connect(jobs_server([]), options=options) as client:
        created = [(await client.tasks.call_tool("forever"))["taskId"] for _ in range(5)]
        listed = await client.tasks.list()
        assert [t["taskId"] for t in listed] == created
        assert checker_of(client).answered()[-3:] == ["tasks/list"] * 3
        for task_id in created:
            await client.tasks.cancel(task_id)


async def test_another_session_can_neither_see_nor_cancel_a_task(
    autojump_clock: trio.testing.MockClock,
) -> None:
    server = jobs_server([])
    async with connect(server) as owner, connect(server) as other:
        task_id = (await owner.tasks.call_tool("slow", {"seconds": 3}))["taskId"]
        for attempt in (other.tasks.get, other.tasks.result, other.tasks.cancel):
            with pytest.raises(RequestError, match="Task not found") as error:
                await attempt(task_id)
            assert error.value.code == -32602
        assert await other.tasks.list() == []
        assert text_of(await owner.tasks.result(task_id)) == "slept 3"


@pytest.mark.parametrize("revision", ["2025-06-18", "2025-11-25"])
async def test_no_task_is_asked_of_a_server_that_did_not_declare_tasks(
    revision: str, autojump_clock: trio.testing.MockClock
) -> None:
    server = jobs_server([]) if revision != "2025-11-25" else Server("plain")

    @server.tool()
    async def plain() -> str:
        """A tool that never runs as a task."""
        return "plain"

    async with connect(server, protocol_version=revision) as client:
        assert "tasks" not in client.server.capabilities
        with pytest.raises(CapabilityError, match=r"'tasks\.requests\.tools\.call'"):
            await client.tasks.call_tool("plain")
        # Refused before anything was sent.
        assert checker_of(client).answered() == ["initialize", "ping"]


async def test_the_status_notification_is_logged_like_any_other(
    autojump_clock: trio.testing.MockClock,
) -> None:
    async with connect(jobs_server([])) as client:
        task_id = (await client.tasks.call_tool("slow", {"seconds": 1}))["taskId"]
        await client.tasks.result(task_id)
        await trio.testing.wait_all_tasks_blocked()
        statuses = [
            n.params
            for n in client.notifications.received
            if n.method == "notifications/tasks/status" and n.params is not None
        ]
        assert [(s["taskId"], s["status"]) for s in statuses] == [(task_id, "completed")]


async def test_a_create_task_answer_without_a_task_is_a_protocol_error(
    autojump_clock: trio.testing.MockClock,
) -> None:
    # A server that ignores the task metadata (as one that declared no tasks may) answers
    # with a plain result; the client says so instead of returning it as a task.
    to_server_send, to_server_receive = trio.open_memory_channel[JSONValue](4)
    to_client_send, to_client_receive = trio.open_memory_channel[JSONValue | ProtocolError](4)

    async def plain_server() -> None:
        async with to_server_receive, to_client_send:
            request: Any = await to_server_receive.receive()
            assert request["params"]["task"] == {"ttl": 5}
            result = {"content": [{"type": "text", "text": "done"}]}
            await to_client_send.send({"jsonrpc": "2.0", "id": request["id"], "result": result})

    async with (
        trio.open_nursery() as nursery,
        open_client_session(to_server_send, to_client_receive) as client,
    ):
        nursery.start_soon(plain_server)
        with pytest.raises(RemoteProtocolError, match="answered without a task"):
            await client.tasks.call_tool("anything", ttl=5)


async def test_the_client_sample_of_the_tasks_page_runs(
    monkeypatch: pytest.MonkeyPatch, autojump_clock: trio.testing.MockClock
) -> None:
    page = expanded(ROOT / "docs" / "tasks.md")
    found = re.search(r"With the mcpactor client:\n\n```python\n(.*?)```", page, re.DOTALL)
    assert found is not None
    namespace: dict[str, Any] = {}
    exec(compile(found.group(1), "docs/tasks.md", "exec"), namespace)
    # ``mcpactor serve FILE`` imports the example under a name of its own; forget it after.
    monkeypatch.setattr(sys, "path", list(sys.path))
    server = load_server(str(ROOT / "examples" / "long_jobs.py"))
    try:
        async with connect(server) as client:
            assert await namespace["crawl_two"](client) == "crawled 4 pages"
            assert trio.current_time() == 2
            statuses = [t["status"] for t in await client.tasks.list()]
            assert statuses == ["completed", "cancelled"]
    finally:
        sys.modules.pop("_mcpactor_target_long_jobs", None)
