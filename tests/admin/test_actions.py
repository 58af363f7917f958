"""The admin listener over real sockets: the credential, the tree, and each action's effect
on a real client."""

from __future__ import annotations

from typing import Any

import httpx
import pytest
import trio
from trio.testing import wait_all_tasks_blocked

from mcpactor import RequestError
from mcpactor.client import ClientSession, connect_http

from .harness import TOKEN, Served, open_served

AUTH = {"Authorization": f"Bearer {TOKEN}"}


async def _call_slow(client: ClientSession, outcome: dict[str, Any]) -> None:
    async def progress(value: float, total: float | None, message: str | None) -> None:
        outcome.setdefault("progress", []).append(value)
        await trio.lowlevel.checkpoint()

    try:
        outcome["result"] = await client.call_tool(
            "slow", {"every": 0.05}, progress_handler=progress
        )
    except RequestError as exc:
        outcome["error"] = exc


async def _tree(admin: httpx.AsyncClient, **params: str) -> dict[str, Any]:
    response = await admin.get("api/tree", params=params, headers=AUTH)
    assert response.status_code == 200
    return response.json()  # type: ignore[no-any-return]


async def _act(admin: httpx.AsyncClient, action: str, body: dict[str, Any]) -> httpx.Response:
    return await admin.post(f"api/actions/{action}", json=body, headers=AUTH)


async def _admin(served: Served) -> httpx.AsyncClient:
    return httpx.AsyncClient(base_url=served.admin_url, timeout=10)


async def test_nothing_without_the_token_over_the_wire() -> None:
    async with open_served() as served, await _admin(served) as admin:
        assert served.admin_url.startswith("http://127.0.0.1:")
        for method, path in (("GET", "api/tree"), ("GET", "api/stream"), ("GET", "static/app.js")):
            response = await admin.request(method, path)
            assert response.status_code == 401, path
        for action in ("cancel-request", "cancel-task", "close-session", "cancel-stateless"):
            response = await admin.post(f"api/actions/{action}", json={})
            assert response.status_code == 401
        # Not even with a cookie of the wrong value.
        response = await admin.get("api/tree", headers={"Cookie": f"mcpactor-admin={TOKEN}"})
        assert response.status_code == 401


async def test_cancelling_a_request_over_http_answers_the_client() -> None:
    outcome: dict[str, Any] = {}
    async with (
        open_served() as served,
        await _admin(served) as admin,
        connect_http(served.mcp_url, initialize=True, protocol_version="2025-11-25") as client,
    ):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(_call_slow, client, outcome)
            with trio.fail_after(10):
                await served.started.wait()
            tree = await _tree(admin, tool="slow")
            (session,) = tree["sessions"]["items"]
            assert session["transport"] == "streamable HTTP"
            assert session["state"] == "awake"
            (request,) = session["requests"]
            assert request["name"] == "slow"
            assert request["progress"] is not None
            assert any(stream["kind"] == "POST" for stream in session["streams"])
            response = await _act(
                admin, "cancel-request", {"session": session["id"], "request": request["id"]}
            )
            assert response.status_code == 200
            assert response.json() == {"action": "cancel-request", "done": True}
        assert "cancelled by the server's operator" in outcome["error"].message
        assert outcome["progress"]
        tree = await _tree(admin)
        assert tree["counts"]["requests"] == 0
        # The session itself goes on.
        assert await client.list_tools()


async def test_closing_a_session_ends_it_for_the_client() -> None:
    async with (
        open_served() as served,
        await _admin(served) as admin,
        connect_http(served.mcp_url, initialize=True, protocol_version="2025-11-25") as client,
    ):
        (session,) = (await _tree(admin))["sessions"]["items"]
        response = await _act(admin, "close-session", {"session": session["id"]})
        assert response.json()["done"] is True
        # The manager forgets the id at once: the client's next request finds no session.
        with pytest.raises(Exception) as raised:  # noqa: PT011 - whatever the client raises
            await client.list_tools()
        assert raised.value is not None
        response = await _act(admin, "close-session", {"session": session["id"]})
        assert response.status_code == 409


async def test_cancelling_a_task_over_http_brings_the_count_back() -> None:
    async with (
        open_served() as served,
        await _admin(served) as admin,
        connect_http(served.mcp_url, initialize=True, protocol_version="2025-11-25") as client,
    ):
        baseline = (await _tree(admin))["counts"]["tasks_running"]
        task = await client.tasks.call_tool("job", {})
        tree = await _tree(admin)
        assert tree["counts"]["tasks_running"] == baseline + 1
        response = await _act(admin, "cancel-task", {"task": task["taskId"]})
        assert response.json()["done"] is True
        assert (await client.tasks.get(task["taskId"]))["status"] == "cancelled"
        # The task actor ends in its own task, after the cancel: once everything is blocked.
        await wait_all_tasks_blocked()
        assert (await _tree(admin))["counts"]["tasks_running"] == baseline


async def test_cancelling_a_stateless_request_ends_its_stream() -> None:
    outcome: dict[str, Any] = {}
    async with (
        open_served() as served,
        await _admin(served) as admin,
        connect_http(served.mcp_url, initialize=True, protocol_version="2026-07-28") as client,
    ):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(_call_slow, client, outcome)
            with trio.fail_after(10):
                await served.started.wait()
            tree = await _tree(admin)
            (flight,) = tree["stateless"]["requests"]
            assert flight["name"] == "slow"
            assert tree["counts"]["stateless"] == 1
            response = await _act(admin, "cancel-stateless", {"key": flight["key"]})
            assert response.json()["done"] is True
            again = await _act(admin, "cancel-stateless", {"key": flight["key"]})
            assert again.status_code == 409
        # As when its client leaves: the response stream ends without an answer.
        assert "ended the response without answering" in outcome["error"].message
        assert (await _tree(admin))["counts"]["stateless"] == 0


async def test_the_stream_sends_snapshots_while_connected() -> None:
    async with open_served() as served:
        port = int(served.admin_url.rstrip("/").rpartition(":")[2])
        stream = await trio.open_tcp_stream("127.0.0.1", port)
        async with stream:
            await stream.send_all(
                b"GET /api/stream?interval=0.25 HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                + f"Authorization: Bearer {TOKEN}\r\n\r\n".encode()
            )
            received = b""
            with trio.fail_after(10):
                while received.count(b"data: ") < 2:
                    chunk = await stream.receive_some(65536)
                    assert chunk, "the stream ended early"
                    received += chunk
        head = received.partition(b"\r\n\r\n")[0].lower()
        assert head.startswith(b"http/1.1 200")
        assert b"content-type: text/event-stream" in head
        assert b"event: tree" in received


async def test_metrics_count_the_requests_in_flight() -> None:
    outcome: dict[str, Any] = {}

    async def in_flight(admin: httpx.AsyncClient) -> float:
        response = await admin.get("metrics", headers=AUTH)
        assert response.status_code == 200
        (line,) = [
            line
            for line in response.text.splitlines()
            if line.startswith("mcpactor_requests_in_flight ")
        ]
        return float(line.split()[1])

    async with (
        open_served() as served,
        await _admin(served) as admin,
        connect_http(served.mcp_url, initialize=True, protocol_version="2025-11-25") as client,
    ):
        assert await in_flight(admin) == 0
        async with trio.open_nursery() as nursery:
            nursery.start_soon(_call_slow, client, outcome)
            with trio.fail_after(10):
                await served.started.wait()
            assert await in_flight(admin) == 1
            tree = await _tree(admin, tool="slow")
            (session,) = tree["sessions"]["items"]
            (request,) = session["requests"]
            await _act(
                admin, "cancel-request", {"session": session["id"], "request": request["id"]}
            )
        assert await in_flight(admin) == 0
