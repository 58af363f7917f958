"""Three replicas behind HAProxy sharing one Redis, as replicas stop, die and Redis restarts.

Each test has a deployment of its own (replicas.py, with HAProxy in round robin), since
each breaks it: a replica stopped gracefully leaves its sessions to the others; a client
resuming a call whose replica was killed is answered with an error within a lease, not
left waiting; after Redis restarts, every replica subscribes again, so task cancels and
completions cross replicas; and a replica whose table is full during an outage stays up
and hands out no session for an initialize it refuses.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import coredis
import httpx
import orjson
import pytest
import trio

from mcpactor.runtime.http._follow import LOST, WAIT_STEP
from mcpactor.runtime.http._leases import REQUEST_LEASE

from .replicas import (
    ACCEPT,
    SESSION_REVISION,
    Deployment,
    deployment,
    open_session,
    post,
    request,
    sse_events,
    tool_text,
)
from .test_replica_faults import INITIALIZE, WHOAMI, _served_by_all_again

pytestmark = [
    pytest.mark.filterwarnings("ignore::DeprecationWarning"),
    pytest.mark.filterwarnings(
        "ignore:Exception ignored in. <async_generator object:"
        "pytest.PytestUnraisableExceptionWarning"
    ),
]

#: seconds one request may take before it counts as hung
TIMEOUT = 15.0
#: what the scheduling of a busy machine may add to a bound the replicas promise
SLACK = 3.0


@pytest.fixture
def deployed(tmp_path: Path) -> Iterator[Deployment]:
    with deployment(tmp_path, balancer="haproxy") as running:
        yield running


def _pid(answer: Any) -> int:
    pid: int = answer.response(2)["result"]["structuredContent"]["result"]
    return pid


async def test_a_replica_stopped_gracefully_leaves_its_sessions_to_the_others(
    deployed: Deployment,
) -> None:
    async with httpx.AsyncClient(timeout=TIMEOUT) as http:
        with trio.fail_after(TIMEOUT):
            sessions = [await open_session(http, deployed.url) for _ in range(3)]
            # Every replica serves every session: each holds a copy of each.
            for session in sessions:
                for index in range(3):
                    answer = await post(http, deployed.replica_url(index), WHOAMI, session=session)
                    assert _pid(answer) == deployed.replicas[index].pid
        stopped = deployed.replicas[0].pid
        # SIGTERM: the replica finishes what it runs and exits cleanly.
        assert await trio.to_thread.run_sync(deployed.terminate, 0) == 0, deployed.logs()
        with trio.fail_after(TIMEOUT):
            for session in sessions:
                served = set()
                for _ in range(4):
                    answer = await post(http, deployed.url, WHOAMI, session=session)
                    assert answer.status == 200, (answer, deployed.logs())
                    served.add(_pid(answer))
                assert stopped not in served
    assert deployed.alive() == [False, True, True]


async def test_a_client_resuming_a_call_whose_replica_died_is_answered_within_a_lease(
    deployed: Deployment,
) -> None:
    async with httpx.AsyncClient(timeout=TIMEOUT) as http:
        session = await open_session(http, deployed.url)
        headers = {
            **ACCEPT,
            "content-type": "application/json",
            "mcp-session-id": session,
            "mcp-protocol-version": SESSION_REVISION,
        }
        # Progress now, then nothing for half a minute: a stream to resume.
        call = request(
            1,
            "tools/call",
            {
                "name": "steps",
                "arguments": {"count": 2, "pause": 30},
                "_meta": {"progressToken": "p"},
            },
        )
        last_id = None
        with trio.fail_after(TIMEOUT):
            async with http.stream(
                "POST", deployed.url, content=orjson.dumps(call), headers=headers
            ) as first:
                owner = deployed.replica_at(first.headers["x-replica"])
                async with contextlib.aclosing(sse_events(first)) as events:
                    async for event_id, message in events:
                        if message.get("method") == "notifications/progress":
                            last_id = event_id
                            break
        assert last_id is not None
        # The replica running the call dies; the client resumes on another.
        deployed.kill(owner)
        died = time.monotonic()
        resume = {
            "accept": "text/event-stream",
            "mcp-session-id": session,
            "mcp-protocol-version": SESSION_REVISION,
            "last-event-id": last_id,
        }
        answer: dict[str, Any] | None = None
        bound = REQUEST_LEASE + WAIT_STEP + SLACK
        with trio.move_on_after(bound + SLACK):
            async with http.stream("GET", deployed.url, headers=resume) as resumed:
                assert resumed.status_code == 200, await resumed.aread()
                assert deployed.replica_at(resumed.headers["x-replica"]) != owner
                async with contextlib.aclosing(sse_events(resumed)) as events:
                    async for _, message in events:
                        if message.get("id") == 1:
                            answer = message
                            break
        waited = time.monotonic() - died
        assert answer == {
            "jsonrpc": "2.0",
            "id": 1,
            "error": {"code": -32603, "message": LOST},
        }, f"no answer after {waited:.1f} s\n{deployed.logs()}"
        assert waited < bound


async def _subscribers(client: coredis.Redis[bytes]) -> dict[str, int]:
    # Who listens on each of the deployment's channels now.
    counts = await client.pubsub_numsub(
        "mcpactor:relay", "mcpactor:changes", "mcpactor:task-changed"
    )
    found = {key.decode() if isinstance(key, bytes) else key: n for key, n in counts.items()}
    found["task-commands"] = len(await client.pubsub_channels("mcpactor:task-commands:*"))
    return found


async def test_after_redis_restarts_task_cancels_and_results_cross_the_replicas(
    deployed: Deployment,
) -> None:
    deployed.stop_redis()
    deployed.start_redis()  # empty: every session and task is gone with the old one
    client: coredis.Redis[bytes] = coredis.Redis(host="127.0.0.1", port=deployed.redis_port)
    async with client:
        # Every replica's relay, change bus and task store subscribe again by themselves.
        everyone = {
            "mcpactor:relay": 3,
            "mcpactor:changes": 3,
            "mcpactor:task-changed": 3,
            "task-commands": 3,
        }
        with trio.move_on_after(TIMEOUT):
            while await _subscribers(client) != everyone:  # noqa: ASYNC110
                await trio.sleep(0.1)  # the replicas' backoff, not work to wait for
        assert await _subscribers(client) == everyone, deployed.logs()
    async with httpx.AsyncClient(timeout=TIMEOUT) as http:
        with trio.fail_after(TIMEOUT):
            session = await open_session(http, deployed.url, {"tasks": {}})
            # A task on replica 0, cancelled through replica 1: its handler stops.
            params = {
                "name": "slow",
                "arguments": {"seconds": 30, "label": "restarted"},
                "task": {"ttl": 60_000},
            }
            one, two = deployed.replica_url(0), deployed.replica_url(1)
            created = await post(http, one, request(1, "tools/call", params), session=session)
            task_id = created.response(1)["result"]["task"]["taskId"]
            await trio.to_thread.run_sync(deployed.wait_noted, "started restarted ")
            cancel = request(2, "tasks/cancel", {"taskId": task_id})
            cancelled = await post(http, two, cancel, session=session)
            assert cancelled.response(2)["result"]["status"] == "cancelled"
        (ended,) = await trio.to_thread.run_sync(deployed.wait_noted, "cancelled restarted ")
        assert ended.endswith(f" {deployed.replicas[0].pid}")
        with trio.fail_after(TIMEOUT):
            # A task's result through another replica comes when the task is done, not a
            # task lease later (15 s): the change reached it.
            params = {"name": "chore", "arguments": {"seconds": 1}, "task": {"ttl": 60_000}}
            created = await post(http, one, request(3, "tools/call", params), session=session)
            task_id = created.response(3)["result"]["task"]["taskId"]
            began = time.monotonic()
            result = request(4, "tasks/result", {"taskId": task_id})
            done = await post(http, two, result, session=session)
            took = time.monotonic() - began
        assert tool_text(done.response(4)["result"]) == f"chore done on {deployed.replicas[0].pid}"
        assert took < 1 + 2 * SLACK
    assert not any(line.startswith("finished restarted") for line in deployed.noted())


@pytest.fixture
def small_tables(tmp_path: Path) -> Iterator[Deployment]:
    with deployment(tmp_path, balancer="haproxy", arguments=("--max-sessions", "2")) as running:
        yield running


async def test_a_full_replica_during_an_outage_stays_up_and_hands_out_no_session(
    small_tables: Deployment,
) -> None:
    deployed = small_tables
    full = deployed.replica_url(0)
    async with httpx.AsyncClient(timeout=TIMEOUT) as http:
        with trio.fail_after(TIMEOUT):
            # Replica 0's table fills with sessions that have seen only their initialize.
            for _ in range(2):
                opened = await post(http, full, INITIALIZE)
                assert opened.session is not None, opened
            deployed.stop_redis()
            try:
                # The full table makes room, and the new session cannot be recorded: the
                # initialize is refused, and nothing of the session is handed out.
                refused = [await post(http, full, INITIALIZE) for _ in range(3)]
                refused += [await post(http, deployed.url, INITIALIZE) for _ in range(3)]
                # Served after the teardowns above ran: the replica is still there.
                alive = await post(http, full, INITIALIZE)
            finally:
                deployed.start_redis()
        for answer in [*refused, alive]:
            assert answer.status == 200, answer
            assert answer.session is None, answer
            error = answer.response(1)["error"]
            assert error["code"] == -32603
            assert "session store is unavailable" in error["message"]
        assert deployed.alive() == [True, True, True], deployed.logs()
        await _served_by_all_again(http, deployed)
