"""Task-augmented requests end to end: a real subprocess over stdio, real sockets over HTTP.

The server is ``tasks_server.py``: its jobs wait until the test releases them with
another tool call, so nothing here waits on the clock. Every message the server sends
is checked against the 2025-11-25 schema (the stdio client's hook, the HTTP client's
replies and the GET stream's events).
"""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, Final

import pytest
import trio
import trio.testing

from mcpactor import RequestError
from mcpactor.client import ClientSession, connect_stdio
from mcpactor.protocol import JSONValue, Notification
from mcpactor.transports import HttpOptions

from ..spec_schema import check_server_message
from ._http_client import McpClient, Response, SocketClient, read_reply
from ._http_server import asgi_client, initialized, socket_client
from .tasks_server import make_server

SERVER_FILE: Final = Path(__file__).with_name("tasks_server.py")
COMMAND: Final = [sys.executable, "-m", "mcpactor", "serve", str(SERVER_FILE)]
REVISION: Final = "2025-11-25"
RELATED: Final = "io.modelcontextprotocol/related-task"
TASKS: Final[dict[str, Any]] = {"list": {}, "cancel": {}, "requests": {"tools": {"call": {}}}}
# Real processes and sockets: a guard against hangs, never a wait.
GUARD: Final = 30


def text_of(result: Any) -> str:
    content = result["content"]
    assert len(content) == 1, result
    text: str = content[0]["text"]
    return text


# --- stdio ----------------------------------------------------------------------------


class Checked:
    """Checks every message the stdio server sends; remembers the notifications' methods."""

    def __init__(self) -> None:
        self.revision = REVISION
        self.methods: list[str] = []

    def __call__(self, message: JSONValue, request_method: str | None) -> None:
        check_server_message(message, self.revision, request_method=request_method)
        if isinstance(message, dict) and isinstance(message.get("method"), str):
            self.methods.append(message["method"])


@asynccontextmanager
async def stdio_client() -> AsyncIterator[tuple[ClientSession, Checked]]:
    checked = Checked()
    with trio.fail_after(GUARD):
        async with connect_stdio(
            COMMAND, initialize=True, protocol_version=REVISION, on_server_message=checked
        ) as client:
            assert client.server.protocol_version == REVISION
            assert client.server.capabilities["tasks"] == TASKS
            yield client, checked


async def wait_status(client: ClientSession, task_id: str, status: str) -> dict[str, Any]:
    def matches(note: Notification) -> bool:
        params = note.params or {}
        return params.get("taskId") == task_id and params.get("status") == status

    note = await client.notifications.wait_for("notifications/tasks/status", matches)
    assert note.params is not None
    return note.params


async def test_over_stdio_a_task_is_polled_announced_and_its_result_fetched() -> None:
    async with stdio_client() as (client, checked):
        task = await client.tasks.call_tool(
            "job", {"key": "a"}, ttl=600_000, meta={"progressToken": "a"}
        )
        task_id = task["taskId"]
        assert task["status"] == "working"
        assert task["ttl"] == 600_000
        assert text_of(await client.call_tool("wait_started", {"key": "a"})) == "started"
        polled = await client.tasks.get(task_id)
        assert polled["status"] == "working"
        assert [t["taskId"] for t in await client.tasks.list()] == [task_id]

        await client.call_tool("release", {"key": "a"})
        done = await wait_status(client, task_id, "completed")
        assert done["createdAt"] == task["createdAt"]
        assert (await client.tasks.get(task_id))["status"] == "completed"
        result = await client.tasks.result(task_id)
        # The job is released for good, so the plain call answers at once.
        plain = await client.call_tool("job", {"key": "a"})
        assert result == {**plain, "_meta": {RELATED: {"taskId": task_id}}}
        assert text_of(result) == "job a done"
        assert text_of(await client.call_tool("wait_ended", {"key": "a"})) == "finished"
        assert "notifications/progress" in checked.methods
        assert "notifications/tasks/status" in checked.methods


async def test_over_stdio_a_cancelled_task_runs_its_finally() -> None:
    async with stdio_client() as (client, _):
        task_id = (await client.tasks.call_tool("job", {"key": "b"}))["taskId"]
        other_id = (await client.tasks.call_tool("job", {"key": "c"}))["taskId"]
        await client.call_tool("wait_started", {"key": "b"})
        cancelled = await client.tasks.cancel(task_id)
        assert (cancelled["taskId"], cancelled["status"]) == (task_id, "cancelled")
        assert text_of(await client.call_tool("wait_ended", {"key": "b"})) == "cancelled"
        await wait_status(client, task_id, "cancelled")
        with pytest.raises(RequestError) as error:
            await client.tasks.result(task_id)
        assert error.value.code == -32602
        assert error.value.data == {"taskId": task_id, "status": "cancelled"}
        with pytest.raises(RequestError, match="already in terminal status"):
            await client.tasks.cancel(task_id)
        # The other task was left alone.
        assert (await client.tasks.get(other_id))["status"] == "working"
        await client.call_tool("release", {"key": "c"})
        assert text_of(await client.tasks.result(other_id)) == "job c done"


# --- HTTP -----------------------------------------------------------------------------


async def call_tool(client: McpClient, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    reply = await client.call("tools/call", {"name": name, "arguments": arguments})
    assert "result" in reply, reply
    result: dict[str, Any] = reply["result"]
    return result


async def create_task(client: McpClient, key: str) -> dict[str, Any]:
    reply = await client.call("tools/call", {"name": "job", "arguments": {"key": key}, "task": {}})
    task: dict[str, Any] = reply["result"]["task"]
    return task


async def tasks_call(client: McpClient, method: str, task_id: str) -> dict[str, Any]:
    reply: dict[str, Any] = await client.call(method, {"taskId": task_id})
    return reply


async def next_notification(stream: Response) -> dict[str, Any]:
    """The next message on a GET stream (skipping the priming event), checked."""
    while True:
        event = await stream.next_event()
        assert event is not None, "the GET stream ended"
        if event.data:
            message: dict[str, Any] = event.message()
            check_server_message(message, REVISION)
            return message


async def test_over_http_a_task_is_polled_announced_and_its_result_fetched() -> None:
    with trio.fail_after(GUARD):
        async with socket_client(make_server()) as http:
            client = await initialized(http, REVISION)
            listening = await client.get()
            assert listening.content_type == "text/event-stream"
            task = await create_task(client, "a")
            task_id = task["taskId"]
            assert text_of(await call_tool(client, "wait_started", {"key": "a"})) == "started"
            polled = await tasks_call(client, "tasks/get", task_id)
            assert polled["result"]["status"] == "working"
            listed = await client.call("tools/list")
            assert {"name": "job", "taskSupport": "optional"} in [
                {"name": t["name"], **t.get("execution", {})} for t in listed["result"]["tools"]
            ]
            await call_tool(client, "release", {"key": "a"})

            status = await next_notification(listening)
            assert status["method"] == "notifications/tasks/status"
            assert (status["params"]["taskId"], status["params"]["status"]) == (
                task_id,
                "completed",
            )
            polled = await tasks_call(client, "tasks/get", task_id)
            assert polled["result"]["status"] == "completed"
            result = (await tasks_call(client, "tasks/result", task_id))["result"]
            plain = await call_tool(client, "job", {"key": "a"})
            assert result == {**plain, "_meta": {RELATED: {"taskId": task_id}}}
            page = (await client.call("tasks/list"))["result"]
            assert [t["taskId"] for t in page["tasks"]] == [task_id]
            await listening.disconnect()


async def test_over_http_a_cancelled_task_runs_its_finally() -> None:
    with trio.fail_after(GUARD):
        async with socket_client(make_server()) as http:
            client = await initialized(http, REVISION)
            task_id = (await create_task(client, "b"))["taskId"]
            await call_tool(client, "wait_started", {"key": "b"})
            cancelled = await tasks_call(client, "tasks/cancel", task_id)
            assert cancelled["result"]["status"] == "cancelled"
            assert text_of(await call_tool(client, "wait_ended", {"key": "b"})) == "cancelled"
            error = (await tasks_call(client, "tasks/result", task_id))["error"]
            assert error["code"] == -32602
            assert error["data"] == {"taskId": task_id, "status": "cancelled"}
            listening = await client.get()
            status = await next_notification(listening)
            assert status["params"]["status"] == "cancelled"
            await listening.disconnect()


async def test_over_http_a_task_survives_its_connection_being_dropped() -> None:
    with trio.fail_after(GUARD):
        async with socket_client(make_server()) as http:
            client = await initialized(http, REVISION)
            # The task is created on a connection of its own, which is then closed.
            dropped = SocketClient(http.host, http.port, http.nursery)
            creator = McpClient(dropped)
            creator.session_id = client.session_id
            creator.protocol_version = client.protocol_version
            response = await creator.post(
                creator.request(
                    "tools/call", {"name": "job", "arguments": {"key": "d"}, "task": {}}
                )
            )
            reply = await read_reply(response)
            check_server_message(reply, REVISION, request_method="tools/call")
            task_id = reply["result"]["task"]["taskId"]
            await response.disconnect()
            await dropped.aclose()

            # Polled from other connections of the same session, the task lives on.
            await call_tool(client, "wait_started", {"key": "d"})
            polled = await tasks_call(client, "tasks/get", task_id)
            assert polled["result"]["status"] == "working"
            await call_tool(client, "release", {"key": "d"})
            result = (await tasks_call(client, "tasks/result", task_id))["result"]
            assert text_of(result) == "job d done"
            assert text_of(await call_tool(client, "wait_ended", {"key": "d"})) == "finished"


async def test_over_http_another_session_can_neither_see_nor_cancel_a_task() -> None:
    with trio.fail_after(GUARD):
        async with socket_client(make_server()) as http:
            owner = await initialized(http, REVISION)
            other = await initialized(http, REVISION)
            assert owner.session_id != other.session_id
            task_id = (await create_task(owner, "e"))["taskId"]
            for method in ("tasks/get", "tasks/result", "tasks/cancel"):
                error = (await tasks_call(other, method, task_id))["error"]
                assert error["code"] == -32602
                assert "Task not found" in error["message"]
            assert (await other.call("tasks/list"))["result"]["tasks"] == []
            assert (await tasks_call(owner, "tasks/get", task_id))["result"]["status"] == (
                "working"
            )
            await call_tool(owner, "release", {"key": "e"})
            result = (await tasks_call(owner, "tasks/result", task_id))["result"]
            assert text_of(result) == "job e done"


async def test_stateless_http_offers_no_tasks() -> None:
    # Each POST is a session of its own there: a task would end with it.
    server = make_server()
    initialize = {
        "protocolVersion": REVISION,
        "capabilities": {},
        "clientInfo": {"name": "t", "version": "1"},
    }
    async with asgi_client(server) as (_, http):
        stateful = await McpClient(http).initialize(REVISION)
        assert stateful["result"]["capabilities"]["tasks"] == TASKS
    async with asgi_client(server, options=HttpOptions(stateless=True)) as (app, http):
        client = McpClient(http)
        client.protocol_version = REVISION
        answer = await client.call("initialize", initialize)
        assert "tools" in answer["result"]["capabilities"]
        assert "tasks" not in answer["result"]["capabilities"]
        # Task metadata is ignored: the call is served the plain way.
        await call_tool(client, "release", {"key": "f"})
        reply = await client.call(
            "tools/call", {"name": "job", "arguments": {"key": "f"}, "task": {"ttl": 1000}}
        )
        assert text_of(reply["result"]) == "job f done"
        for method, params in (("tasks/list", {}), ("tasks/get", {"taskId": "x"})):
            error = (await client.call(method, params))["error"]
            assert error["code"] == -32601
        await trio.testing.wait_all_tasks_blocked()
        assert app.manager.statistics().sessions == 0
