"""Faults of a deployment of three replicas behind nginx: a replica killed, Redis gone a while.

Each test has a deployment of its own (replicas.py), since each breaks it. What is held
to: no request hangs — each is answered, or fails with a clear error (nginx's 502 for a
replica that died under it, a JSON-RPC error from a replica that cannot reach the store)
within its own timeout; the replicas that were not killed stay up; and once the fault is
over, requests are served again.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import attrs
import httpx
import orjson
import pytest
import trio

from .replicas import (
    Deployment,
    deployment,
    open_session,
    post,
    request,
    stateless_call,
    tool_text,
)

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")

#: how many calls are in flight when the replica is killed
IN_FLIGHT = 50
#: how long each of those calls sleeps (far past the kill)
SLEEP = 4.0
#: seconds one request may take before it counts as hung
REQUEST_TIMEOUT = 15.0
#: how long Redis stays stopped
OUTAGE = 5.0


@pytest.fixture
def deployed(tmp_path: Path) -> Iterator[Deployment]:
    for name in ("_bus", "_events", "_relay", "_sessions"):
        pytest.importorskip(f"mcpactor.store.{name}")
    with deployment(tmp_path) as running:
        yield running


@attrs.define
class Outcome:
    """How one request ended."""

    label: str
    status: int | None = None
    body: Any = None
    error: str | None = None
    hung: bool = False


def _clear_failure(outcome: Outcome) -> bool:
    # A failure a client can act on: a gateway status from nginx, or a JSON-RPC error.
    if outcome.status in (502, 503, 504):
        return True
    return isinstance(outcome.body, dict) and "error" in outcome.body


async def _call_slow(http: httpx.AsyncClient, url: str, number: int, outcome: Outcome) -> None:
    with trio.move_on_after(REQUEST_TIMEOUT) as scope:
        try:
            answer = await stateless_call(
                http, url, number, "slow", {"seconds": SLEEP, "label": outcome.label}
            )
        except httpx.TransportError as exc:
            outcome.error = repr(exc)
            return
        outcome.status = answer.status_code
        try:
            outcome.body = orjson.loads(answer.content) if answer.content else None
        except orjson.JSONDecodeError:
            outcome.body = answer.text[:500]
    outcome.hung = scope.cancelled_caught


async def test_a_replica_killed_under_fifty_calls_leaves_none_hanging(
    deployed: Deployment,
) -> None:
    outcomes = [Outcome(label=f"load-{number}") for number in range(IN_FLIGHT)]
    victim = deployed.replicas[0]
    limits = httpx.Limits(max_connections=IN_FLIGHT + 10)
    async with (
        httpx.AsyncClient(timeout=REQUEST_TIMEOUT, limits=limits) as http,
        trio.open_nursery() as nursery,
    ):
        for number, outcome in enumerate(outcomes):
            nursery.start_soon(_call_slow, http, deployed.url, number, outcome)
        # Every call is running on some replica (each noted its start) before the kill.
        started = await trio.to_thread.run_sync(deployed.wait_noted, "started load-", IN_FLIGHT)
        on_victim = sum(line.endswith(f" {victim.pid}") for line in started)
        assert on_victim > 0, "round robin gave the doomed replica nothing"
        deployed.kill(0)
    hung = [outcome.label for outcome in outcomes if outcome.hung]
    assert not hung, f"{len(hung)} calls hung: {hung}"
    answered = [
        outcome
        for outcome in outcomes
        if outcome.status == 200 and isinstance(outcome.body, dict) and "result" in outcome.body
    ]
    failed = [outcome for outcome in outcomes if outcome not in answered]
    unclear = [outcome for outcome in failed if not _clear_failure(outcome)]
    assert not unclear, f"failures without a clear error: {unclear}"
    # The calls the dead replica held are the ones lost; the others were answered by theirs.
    assert len(failed) == on_victim, (failed, deployed.logs())
    for outcome in answered:
        assert not tool_text(outcome.body["result"]).endswith(f" {victim.pid}")
    assert deployed.alive() == [False, True, True]
    # After the kill, the deployment serves on with the two replicas left.
    with trio.fail_after(REQUEST_TIMEOUT):
        async with httpx.AsyncClient(timeout=REQUEST_TIMEOUT) as http:
            for number in range(4):
                answer = await stateless_call(http, deployed.url, 100 + number, "whoami", {})
                assert answer.status_code == 200, answer.text
                assert answer.json()["result"]["structuredContent"]["result"] != victim.pid


async def _try(
    http: httpx.AsyncClient,
    url: str,
    message: dict[str, Any],
    session: str | None,
    outcome: Outcome,
    budget: float,
) -> None:
    # Answered within ``budget`` seconds, or it counts as hung.
    with trio.move_on_after(budget) as scope:
        try:
            answer = await post(http, url, message, session=session)
        except httpx.TransportError as exc:
            outcome.error = repr(exc)
            return
        outcome.status = answer.status
        outcome.body = answer.messages[-1] if answer.messages else None
    outcome.hung = scope.cancelled_caught


INITIALIZE = request(
    1,
    "initialize",
    {
        "protocolVersion": "2025-11-25",
        "capabilities": {},
        "clientInfo": {"name": "outage", "version": "1.0"},
    },
)
WHOAMI = request(2, "tools/call", {"name": "whoami", "arguments": {}})
TASK = request(
    3, "tools/call", {"name": "chore", "arguments": {"seconds": 0}, "task": {"ttl": 60_000}}
)


async def _during_outage(
    http: httpx.AsyncClient,
    url: str,
    session: str,
    budget: float,
    begin: Callable[[], None],
    end: Callable[[], None],
) -> tuple[Outcome, list[Outcome]]:
    """Send a new session's initialize and an open session's calls while Redis is away.

    Redis is away (``begin`` to ``end``) for OUTAGE seconds, whatever was answered; each
    request has ``budget`` seconds from the start of the outage.
    """
    opened = Outcome(label="initialize")
    called = [Outcome(label=f"whoami-{turn}") for turn in range(3)] + [Outcome(label="task")]
    begin()
    ended = False
    try:
        async with trio.open_nursery() as nursery:
            nursery.start_soon(_try, http, url, INITIALIZE, None, opened, budget)
            for outcome in called[:3]:
                nursery.start_soon(_try, http, url, WHOAMI, session, outcome, budget)
            nursery.start_soon(_try, http, url, TASK, session, called[3], budget)
            # The outage itself: its length is the scenario, not a wait for work.
            await trio.sleep(OUTAGE)
            ended = True
            end()
    finally:
        if not ended:
            end()
    return opened, called


async def _served_by_all_again(http: httpx.AsyncClient, deployed: Deployment) -> None:
    # New sessions open once Redis is back, and every replica serves them.
    with trio.fail_after(REQUEST_TIMEOUT):
        fresh = await open_session(http, deployed.url)
        served = set()
        # Consecutive calls go to the replicas in turn.
        for _ in range(2 * len(deployed.replicas)):
            answer = await post(http, deployed.url, WHOAMI, session=fresh)
            served.add(answer.response(2)["result"]["structuredContent"]["result"])
    assert served == {replica.pid for replica in deployed.replicas}


async def test_requests_while_redis_is_down_fail_clearly_and_work_after_it_restarts(
    deployed: Deployment,
) -> None:
    async with httpx.AsyncClient(timeout=REQUEST_TIMEOUT) as http:
        with trio.fail_after(REQUEST_TIMEOUT):
            session = await open_session(http, deployed.url)
        # A refused connection is known at once: answers come within the outage.
        opened, called = await _during_outage(
            http, deployed.url, session, OUTAGE - 0.5, deployed.stop_redis, deployed.start_redis
        )
        assert deployed.alive() == [True, True, True], deployed.logs()
        # A new session needs the store: its initialize fails, clearly and in time.
        assert not opened.hung, f"initialize hung while Redis was down\n{deployed.logs()}"
        assert _clear_failure(opened), opened
        # An open session's calls fail as clearly, or are served from a replica's copy.
        for outcome in called:
            assert not outcome.hung, f"{outcome.label} hung while Redis was down"
            assert _clear_failure(outcome) or outcome.status == 200, outcome
        await _served_by_all_again(http, deployed)


async def test_requests_while_redis_is_stopped_end_within_the_store_timeout(
    deployed: Deployment,
) -> None:
    async with httpx.AsyncClient(timeout=REQUEST_TIMEOUT) as http:
        with trio.fail_after(REQUEST_TIMEOUT):
            session = await open_session(http, deployed.url)
        # A stopped Redis accepts and never answers: a request waits for the store's read
        # timeout or for Redis to go on, and not past either.
        opened, called = await _during_outage(
            http,
            deployed.url,
            session,
            REQUEST_TIMEOUT,
            deployed.pause_redis,
            deployed.resume_redis,
        )
        assert deployed.alive() == [True, True, True], deployed.logs()
        for outcome in [opened, *called]:
            assert not outcome.hung, f"{outcome.label} hung while Redis was stopped"
            assert _clear_failure(outcome) or outcome.status == 200, outcome
        await _served_by_all_again(http, deployed)
