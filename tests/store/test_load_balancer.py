"""Three ``serve --http --store`` replicas behind nginx (plain round robin), as clients meet them.

nginx sends each request to the next replica, so one client's requests are served by
several: a session's calls, the answer to a server's question, the cancel of a running
call, the polls of a task, the resumption of an SSE stream and the changes a stream
carries each reach a replica other than the one holding what they concern. The official
SDK's client drives what it can express; raw HTTP (httpx) the rest. Each answer names the
replica that ran it (its process id), and nginx names the one that answered each HTTP
request (``X-Replica``).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

import anyio
import httpx
import mcp.types as types
import orjson
import pytest
import trio
from mcp import ClientSession
from mcp.client import Client
from mcp.client.streamable_http import streamable_http_client

from .replicas import (
    ACCEPT,
    SESSION_REVISION,
    Deployment,
    deployment,
    open_session,
    post,
    request,
    sse_events,
    stateless_call,
    tool_text,
)

pytestmark = [
    pytest.mark.filterwarnings("ignore::DeprecationWarning"),
    # httpx's own byte generators under a stream left early (a resumed or held SSE
    # stream) are finalized by trio's GC hook, which warns; the streams themselves are
    # closed by their ``async with``.
    pytest.mark.filterwarnings(
        "ignore:Exception ignored in. <async_generator object:"
        "pytest.PytestUnraisableExceptionWarning"
    ),
]

#: seconds any one scenario may take
TIMEOUT = 20.0


@pytest.fixture(scope="module")
def deployed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Deployment]:
    for name in ("_bus", "_events", "_relay", "_sessions"):
        pytest.importorskip(f"mcpactor.store.{name}")
    with deployment(tmp_path_factory.mktemp("replicas")) as running:
        yield running


async def _elicit(context: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
    return types.ElicitResult(action="accept", content={"seats": 2})


def _pids(deployed: Deployment) -> set[int]:
    return {replica.pid for replica in deployed.replicas}


# --- the official SDK's client -----------------------------------------------------------


def test_a_sessions_calls_are_served_by_several_replicas(deployed: Deployment) -> None:
    async def main() -> list[int]:
        with anyio.fail_after(TIMEOUT):
            async with (
                streamable_http_client(deployed.url) as (read, write, *_),
                ClientSession(read, write) as session,
            ):
                await session.initialize()
                served = []
                for _ in range(6):
                    result = await session.call_tool("whoami", {})
                    assert not result.is_error, result
                    assert result.structured_content is not None
                    served.append(int(result.structured_content["result"]))
                return served

    served = anyio.run(main, backend="asyncio")
    assert set(served) <= _pids(deployed), deployed.logs()
    # Round robin with no stickiness: one session, several replicas serving it (the
    # SDK's own GET stream may take a turn, so not always all three).
    assert len(set(served)) >= 2, served


def test_an_elicitation_answered_to_another_replica_completes(deployed: Deployment) -> None:
    async def main() -> list[str]:
        with anyio.fail_after(TIMEOUT):
            async with (
                streamable_http_client(deployed.url) as (read, write, *_),
                ClientSession(read, write, elicitation_callback=_elicit) as session,
            ):
                await session.initialize()
                texts = []
                # The question and its answer are consecutive requests: with three
                # replicas in turn, the answer never reaches the one that asked.
                for _ in range(3):
                    asked = await session.call_tool("ask", {"question": "how many seats?"})
                    assert not asked.is_error, asked
                    first = asked.content[0]
                    assert isinstance(first, types.TextContent)
                    texts.append(first.text)
                return texts

    texts = anyio.run(main, backend="asyncio")
    for text in texts:
        assert text.startswith("accept: 2 seats, asked on "), texts
        assert int(text.rsplit(" ", 1)[1]) in _pids(deployed)


def test_a_stateless_elicitation_retry_completes_on_another_replica(
    deployed: Deployment,
) -> None:
    async def main() -> tuple[str, str]:
        with anyio.fail_after(TIMEOUT):
            async with Client(deployed.url, mode="auto", elicitation_callback=_elicit) as client:  # type: ignore[arg-type]
                asked = await client.call_tool("ask", {"question": "how many seats?"})
                assert not asked.is_error, asked
                first = asked.content[0]
                assert isinstance(first, types.TextContent)
                return client.protocol_version, first.text

    revision, text = anyio.run(main, backend="asyncio")
    assert revision == "2026-07-28"
    assert text.startswith("accept: 2 seats, asked on "), text


def test_a_call_cancelled_through_another_replica_stops_its_handler(
    deployed: Deployment,
) -> None:
    async def main() -> int:
        with anyio.fail_after(TIMEOUT):
            async with (
                streamable_http_client(deployed.url) as (read, write, *_),
                ClientSession(read, write) as session,
            ):
                await session.initialize()
                async with anyio.create_task_group() as group:

                    async def call() -> None:
                        await session.call_tool("slow", {"seconds": 30, "label": "cancel-me"})

                    group.start_soon(call)
                    await anyio.to_thread.run_sync(deployed.wait_noted, "started cancel-me ")
                    # Cancelling the SDK's wait sends notifications/cancelled: a request
                    # of its own, so nginx hands it to the next replica.
                    group.cancel_scope.cancel()
                (ended,) = await anyio.to_thread.run_sync(
                    deployed.wait_noted, "cancelled cancel-me "
                )
                # The session goes on.
                result = await session.call_tool("whoami", {})
                assert not result.is_error
                return int(ended.rsplit(" ", 1)[1])

    ran_on = anyio.run(main, backend="asyncio")
    assert ran_on in _pids(deployed)
    assert not any(line.startswith("finished cancel-me") for line in deployed.noted())


def test_a_listen_stream_hears_a_change_made_on_every_replica(deployed: Deployment) -> None:
    async def main() -> int:
        with anyio.fail_after(TIMEOUT):
            async with (
                Client(deployed.url, mode="auto") as client,
                client.listen(resource_subscriptions=["replica://counter"]) as subscription,
                httpx.AsyncClient(timeout=TIMEOUT) as http,
            ):
                assert client.protocol_version == "2026-07-28"
                heard = 0
                # Each replica in turn, straight to its port: the stream is held by one of
                # them (through nginx), so two of these changes are made elsewhere.
                for number, replica in enumerate(deployed.replicas):
                    bumped = await stateless_call(
                        http, f"http://{replica.address}/mcp", number, "bump", {}
                    )
                    assert bumped.status_code == 200, bumped.text
                    event = await subscription.__anext__()
                    assert "replica://counter" in repr(event), event
                    heard += 1
                return heard

    assert anyio.run(main, backend="asyncio") == 3


# --- raw HTTP through nginx -----------------------------------------------------------------


async def test_a_task_is_polled_and_its_result_read_on_other_replicas(
    deployed: Deployment,
) -> None:
    with trio.fail_after(TIMEOUT):
        async with httpx.AsyncClient(timeout=TIMEOUT) as http:
            session = await open_session(http, deployed.url, {"tasks": {}})
            params = {"name": "chore", "arguments": {"seconds": 1.0}, "task": {"ttl": 60_000}}
            created = await post(
                http, deployed.url, request(1, "tools/call", params), session=session
            )
            task = created.response(1)["result"]["task"]
            owner = deployed.replica_at(created.replica)
            polled_by = set()
            number = 2
            status = task["status"]
            while status not in ("completed", "failed", "cancelled"):
                got = await post(
                    http,
                    deployed.url,
                    request(number, "tasks/get", {"taskId": task["taskId"]}),
                    session=session,
                )
                status = got.response(number)["result"]["status"]
                polled_by.add(deployed.replica_at(got.replica))
                number += 1
                await trio.sleep(0.1)  # the pace of a client's polls, not a wait for work
            assert status == "completed", deployed.logs()
            assert polled_by - {owner}, "every poll reached the replica running the task"
            result = await post(
                http,
                deployed.url,
                request(number, "tasks/result", {"taskId": task["taskId"]}),
                session=session,
            )
            done = result.response(number)["result"]
            assert tool_text(done) == f"chore done on {deployed.replicas[owner].pid}"


async def test_an_sse_stream_resumes_on_another_replica(deployed: Deployment) -> None:
    with trio.fail_after(TIMEOUT):
        async with httpx.AsyncClient(timeout=TIMEOUT) as http:
            session = await open_session(http, deployed.url)
            headers = {
                **ACCEPT,
                "content-type": "application/json",
                "mcp-session-id": session,
                "mcp-protocol-version": SESSION_REVISION,
            }
            call = request(
                1,
                "tools/call",
                {
                    "name": "steps",
                    "arguments": {"count": 4, "pause": 0.3},
                    "_meta": {"progressToken": "p"},
                },
            )
            async with http.stream(
                "POST", deployed.url, content=orjson.dumps(call), headers=headers
            ) as first:
                assert first.headers["content-type"].startswith("text/event-stream")
                started_on = deployed.replica_at(first.headers["x-replica"])
                async with contextlib.aclosing(sse_events(first)) as events:
                    async for event_id, message in events:
                        if message.get("method") == "notifications/progress":
                            last_id = event_id
                            break
            # The connection is gone after the first progress; the rest waits for the client.
            assert last_id is not None
            resume = {**headers, "accept": "text/event-stream", "last-event-id": last_id}
            del resume["content-type"]
            progress = []
            async with http.stream("GET", deployed.url, headers=resume) as resumed:
                assert resumed.status_code == 200, await resumed.aread()
                resumed_on = deployed.replica_at(resumed.headers["x-replica"])
                async with contextlib.aclosing(sse_events(resumed)) as events:
                    async for _, message in events:
                        if message.get("method") == "notifications/progress":
                            progress.append(message["params"]["progress"])
                        if message.get("id") == 1:
                            answer = message
                            break
            assert resumed_on != started_on
            assert progress == [2, 3, 4]
            assert tool_text(answer["result"]) == f"4 steps on {deployed.replicas[started_on].pid}"


async def test_a_get_stream_hears_a_change_made_on_another_replica(
    deployed: Deployment,
) -> None:
    with trio.fail_after(TIMEOUT):
        async with httpx.AsyncClient(timeout=TIMEOUT) as http:
            session = await open_session(http, deployed.url)
            subscribed = await post(
                http,
                deployed.url,
                request(1, "resources/subscribe", {"uri": "replica://counter"}),
                session=session,
            )
            assert "result" in subscribed.response(1), subscribed
            headers = {
                "accept": "text/event-stream",
                "mcp-session-id": session,
                "mcp-protocol-version": SESSION_REVISION,
            }
            async with http.stream("GET", deployed.url, headers=headers) as stream:
                assert stream.status_code == 200, await stream.aread()
                holder = deployed.replica_at(stream.headers["x-replica"])
                number = 2
                while True:
                    bumped = await post(
                        http,
                        deployed.url,
                        request(number, "tools/call", {"name": "bump", "arguments": {}}),
                        session=session,
                    )
                    number += 1
                    if deployed.replica_at(bumped.replica) != holder:
                        break
                async with contextlib.aclosing(sse_events(stream)) as events:
                    async for _, message in events:
                        if message.get("method") == "notifications/resources/updated":
                            assert message["params"]["uri"] == "replica://counter"
                            break
