"""Faults of a deployment of three replicas behind nginx: a replica killed, Redis gone a while.

Each test has a deployment of its own (replicas.py), since each breaks it. What is held
to: no request hangs — each is answered, or fails with a clear error (nginx's 502 for a
replica that died under it, a JSON-RPC error from a replica that cannot reach the store)
within its own timeout; the replicas that were not killed stay up; and once the fault is
over, requests are served again.
"""

from __future__ import annotations

from collections.abc import Iterator
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
) -> None:
    # Answered while Redis is still stopped, or it counts as hung.
    with trio.move_on_after(OUTAGE - 0.5) as scope:
        try:
            answer = await post(http, url, message, session=session)
        except httpx.TransportError as exc:
            outcome.error = repr(exc)
            return
        outcome.status = answer.status
        outcome.body = answer.messages[-1] if answer.messages else None
    outcome.hung = scope.cancelled_caught


async def test_the_replicas_outlive_a_redis_outage_and_serve_after_it(
    deployed: Deployment,
) -> None:
    initialize = request(
        1,
        "initialize",
        {
            "protocolVersion": "2025-11-25",
            "capabilities": {},
            "clientInfo": {"name": "outage", "version": "1.0"},
        },
    )
    whoami = request(2, "tools/call", {"name": "whoami", "arguments": {}})
    async with httpx.AsyncClient(timeout=REQUEST_TIMEOUT) as http:
        with trio.fail_after(REQUEST_TIMEOUT):
            session = await open_session(http, deployed.url)
        opened = Outcome(label="initialize")
        called = [Outcome(label=f"whoami-{turn}") for turn in range(3)]
        deployed.pause_redis()
        try:
            async with trio.open_nursery() as nursery:
                nursery.start_soon(_try, http, deployed.url, initialize, None, opened)
                for outcome in called:
                    nursery.start_soon(_try, http, deployed.url, whoami, session, outcome)
                # The outage itself: Redis stays stopped this long, whatever was answered.
                await trio.sleep(OUTAGE)
        finally:
            deployed.resume_redis()
        assert deployed.alive() == [True, True, True], deployed.logs()
        # A new session needs the store: its initialize fails, clearly and in time.
        assert not opened.hung, f"initialize hung while Redis was stopped\n{deployed.logs()}"
        assert _clear_failure(opened), opened
        # A session's calls either fail as clearly or are served from a replica's copy.
        for outcome in called:
            assert not outcome.hung, f"{outcome.label} hung while Redis was stopped"
            assert _clear_failure(outcome) or outcome.status == 200, outcome
        # Once Redis is back, new sessions open and every replica serves them.
        with trio.fail_after(REQUEST_TIMEOUT):
            served = set()
            while len(served) < 3:
                fresh = await open_session(http, deployed.url)
                answer = await post(http, deployed.url, whoami, session=fresh)
                served.add(answer.response(2)["result"]["structuredContent"]["result"])
        assert served == {replica.pid for replica in deployed.replicas}
