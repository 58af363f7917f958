"""A session's tasks (2025-11-25) over Streamable HTTP, served by two replicas.

The replicas share session records and a relay (a MemoryHub) and a task store (an
InMemoryTaskStore), as they would share Redis; one client sends each request to the
replica a test names, as a load balancer without stickiness would.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from typing import Any

import trio
import trio.testing

from mcpactor import SessionOptions, TaskOptions
from mcpactor.runtime.http import MemoryHub
from mcpactor.runtime.tasks import InMemoryTaskStore
from mcpactor.transports import HttpOptions, open_http_app

from ..transports._http_client import AsgiClient, McpClient
from ..transports._http_server import Probe, make_server


@contextlib.asynccontextmanager
async def cluster(gate: trio.Event) -> AsyncIterator[list[AsgiClient]]:
    hub = MemoryHub()
    store = InMemoryTaskStore()
    server = make_server(Probe())

    @server.tool(task_support="optional")
    async def gated() -> str:
        """Wait for the test's gate."""
        await gate.wait()
        return "through"

    options = SessionOptions(tasks=TaskOptions(store=store))
    async with trio.open_nursery() as nursery, contextlib.AsyncExitStack() as stack:
        clients = []
        for name in "ab":
            app = await stack.enter_async_context(
                open_http_app(
                    server,
                    options=HttpOptions(replicas=hub.replica(name)),
                    session_options=options,
                )
            )
            clients.append(AsgiClient(app, nursery))
        yield clients
        nursery.cancel_scope.cancel()


def on(client: McpClient, replicas: list[AsgiClient], replica: int) -> McpClient:
    client.http = replicas[replica]
    return client


async def test_a_task_created_on_one_replica_is_followed_on_the_other() -> None:
    gate = trio.Event()
    async with cluster(gate) as replicas:
        client = McpClient(replicas[0])
        await client.initialize(capabilities={})
        created = await client.call(
            "tools/call", {"name": "gated", "arguments": {}, "task": {"ttl": 60_000}}
        )
        task = created["result"]["task"]
        task_id = task["taskId"]
        assert task["status"] == "working"

        got = await on(client, replicas, 1).call("tasks/get", {"taskId": task_id})
        assert got["result"]["status"] == "working"
        listed = await client.call("tasks/list", {})
        assert [t["taskId"] for t in listed["result"]["tasks"]] == [task_id]

        async with trio.open_nursery() as nursery:
            answers: list[Any] = []

            async def wait_result() -> None:
                answers.append(await client.call("tasks/result", {"taskId": task_id}))

            nursery.start_soon(wait_result)
            await trio.testing.wait_all_tasks_blocked()
            assert answers == []
            gate.set()
        result = answers[0]["result"]
        assert result["content"] == [{"type": "text", "text": "through"}]
        assert result["_meta"]["io.modelcontextprotocol/related-task"] == {"taskId": task_id}


async def test_a_task_cancelled_on_the_other_replica_stops_where_it_runs() -> None:
    gate = trio.Event()
    async with cluster(gate) as replicas:
        client = McpClient(replicas[0])
        await client.initialize(capabilities={})
        created = await client.call(
            "tools/call", {"name": "gated", "arguments": {}, "task": {"ttl": 60_000}}
        )
        task_id = created["result"]["task"]["taskId"]
        await trio.testing.wait_all_tasks_blocked()
        session = replicas[0].app.manager.sessions.get(client.session_id or "")
        assert session is not None
        assert session.actor.tasks.statistics().running == 1
        cancelled = await on(client, replicas, 1).call("tasks/cancel", {"taskId": task_id})
        assert cancelled["result"]["status"] == "cancelled"
        await trio.testing.wait_all_tasks_blocked()
        owner = on(client, replicas, 0)
        got = await owner.call("tasks/get", {"taskId": task_id})
        assert got["result"]["status"] == "cancelled"
        # The cancel reached the owner's Task actor: nothing runs there any more.
        assert session.actor.tasks.statistics().running == 0
        failed = await owner.call("tasks/result", {"taskId": task_id})
        assert "was cancelled" in failed["error"]["message"]
