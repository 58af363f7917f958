"""A rolling deploy under load: every replica restarted in turn, twice, and nothing lost.

Three ``serve --store`` replicas behind HAProxy, which takes a replica out as soon as its
``/readyz`` says 503 (checked every half second) and puts it back at the first 200.
Each replica drains on SIGTERM: not ready at once, its listener open one more second
(``--drain-delay``) while HAProxy notices, then its work in flight gets ``--grace``.

The load, all through the balancer and all at once, for the whole deploy:

- sessions of the official SDK's client (2025-11-25) calling ``slow`` with a label of
  its own each time, which the replica notes when it starts and finishes;
- SSE calls with progress (``steps``) from the SDK's client: three progress
  notifications and the answer, on a POST's stream;
- tasks (session era, raw HTTP: the SDK's client has no tasks API), created on one
  replica, polled with ``tasks/get`` on others, their result read with ``tasks/result``;
- the SDK's client at 2026-07-28: a ``subscriptions/listen`` stream, listened to again
  each time a draining replica ends it, beside stateless calls of ``slow``;
- a session's GET stream (raw HTTP, to see its event ids), resumed with
  ``Last-Event-ID`` each time a draining replica ends it.

Counted, all asserted zero: requests that failed, calls lost (a label sent and never
finished), duplicated results (a label run twice, or answered with another's label),
streams that did not resume (a progress stream short of its notifications, a listen
stream dropped without its closing result or not opened again), and tasks lost. The
p99 latency of the calls during the deploy is printed, not asserted.
"""

from __future__ import annotations

import functools
import itertools
import math
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import attrs
import httpx
import mcp.types as types
import pytest
from mcp import ClientSession
from mcp.client import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.client.subscriptions import SubscriptionLost

from .replicas import SESSION_REVISION, Deployment, deployment, open_session, post, request

pytestmark = [
    pytest.mark.filterwarnings("ignore::DeprecationWarning"),
    pytest.mark.filterwarnings(
        "ignore:Exception ignored in. <async_generator object:"
        "pytest.PytestUnraisableExceptionWarning"
    ),
]

#: each replica restarted in turn, this many times
ROUNDS = 2
#: seconds a draining replica keeps its listener open (HAProxy checks every 0.5 s)
DRAIN_DELAY = "1"
#: seconds any one operation of the load may take before it counts as failed
TIMEOUT = 30.0
#: seconds the ``slow`` calls take: short of the grace, as a deploy's calls should be
CALL_SECONDS = 0.05
#: SDK sessions calling ``slow`` at once
SESSIONS = 2
#: seconds each client pauses between two calls: a steady load, not a flood that would
#: starve the restarting replicas of the two cores CI has
THINK = 0.02


@attrs.define
class Tally:
    """What the load saw."""

    #: labels sent to ``slow``, and the answers that came back for them
    sent: set[str] = attrs.Factory(set)
    answered: dict[str, str] = attrs.Factory(dict)
    failed: list[str] = attrs.Factory(list)
    #: (monotonic end, seconds) of every call
    latencies: list[tuple[float, float]] = attrs.Factory(list)
    progress_calls: int = 0
    short_streams: list[str] = attrs.Factory(list)
    listens: int = 0
    listens_lost: list[str] = attrs.Factory(list)
    tasks: int = 0
    tasks_lost: list[str] = attrs.Factory(list)
    #: GET streams opened: the first, then one per resumption
    get_streams: int = 0
    #: what ends the GET stream's worker once the deploy is over
    get_scope: anyio.CancelScope = attrs.Factory(anyio.CancelScope)

    def fail(self, what: str, error: BaseException | str) -> None:
        """Count one failed request, with what it was."""
        detail = error if isinstance(error, str) else f"{type(error).__name__}: {error}"
        self.failed.append(f"{what}: {detail}"[:500])


_labels = itertools.count()


def _label(kind: str) -> str:
    return f"{kind}-{next(_labels)}"


async def _timed_call(tally: Tally, call: Any, label: str) -> None:
    # One ``slow`` call: sent, answered with its own label, timed.
    await anyio.sleep(THINK)
    tally.sent.add(label)
    began = time.monotonic()
    try:
        with anyio.fail_after(TIMEOUT):
            result = await call("slow", {"seconds": CALL_SECONDS, "label": label})
    except Exception as exc:
        tally.fail(label, exc)
        return
    ended = time.monotonic()
    tally.latencies.append((ended, ended - began))
    first = result.content[0] if result.content else None
    if result.is_error or not isinstance(first, types.TextContent):
        tally.fail(label, repr(result)[:300])
        return
    tally.answered[label] = first.text


async def _session_calls(url: str, tally: Tally, stop: anyio.Event) -> None:
    async with (
        streamable_http_client(url) as (read, write, *_),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        while not stop.is_set():
            await _timed_call(tally, session.call_tool, _label("session"))


async def _heard(
    heard: list[float], value: float, total: float | None, message: str | None
) -> None:
    # The SDK's progress callback: what a steps call reported, in order.
    heard.append(value)


async def _progress_calls(url: str, tally: Tally, stop: anyio.Event) -> None:
    async with (
        streamable_http_client(url) as (read, write, *_),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        while not stop.is_set():
            heard: list[float] = []
            progress = functools.partial(_heard, heard)
            await anyio.sleep(THINK)
            tally.progress_calls += 1
            try:
                with anyio.fail_after(TIMEOUT):
                    result = await session.call_tool(
                        "steps", {"count": 3, "pause": 0.05}, progress_callback=progress
                    )
            except Exception as exc:
                tally.fail("steps", exc)
                continue
            if result.is_error:
                tally.fail("steps", repr(result)[:300])
            elif sorted(heard) != [1, 2, 3]:
                tally.short_streams.append(f"progress {heard} of a steps call")


async def _task_round(http: httpx.AsyncClient, url: str, session: str, tally: Tally) -> None:
    # One task: created, polled until done, its result read; every step through the
    # balancer, so on several replicas.
    seconds = 0.2
    params = {"name": "chore", "arguments": {"seconds": seconds}, "task": {"ttl": 120_000}}
    created = await post(http, url, request(1, "tools/call", params), session=session)
    if created.status != 200 or "result" not in created.response(1):
        tally.fail("a task's tools/call", repr(created)[:300])
        return
    task_id = created.response(1)["result"]["task"]["taskId"]
    tally.tasks += 1
    with anyio.fail_after(TIMEOUT):
        while True:
            polled = await post(
                http, url, request(2, "tasks/get", {"taskId": task_id}), session=session
            )
            status = polled.response(2).get("result", {}).get("status")
            if status == "completed":
                break
            if status != "working":
                tally.tasks_lost.append(f"task {task_id}: {polled.messages}"[:300])
                return
            await anyio.sleep(0.05)  # a client's polling interval, not a race
        result = await post(
            http, url, request(3, "tasks/result", {"taskId": task_id}), session=session
        )
    text = result.response(3).get("result", {}).get("content", [{}])[0].get("text", "")
    if not text.startswith("chore done on "):
        tally.tasks_lost.append(f"task {task_id}: {result.messages}"[:300])


async def _tasks(url: str, tally: Tally, stop: anyio.Event) -> None:
    async with httpx.AsyncClient(timeout=TIMEOUT) as http:
        session = await open_session(http, url, {"tasks": {}})
        while not stop.is_set():
            try:
                await _task_round(http, url, session, tally)
            except Exception as exc:
                tally.fail("a task", exc)


async def _listen_and_call(url: str, tally: Tally, stop: anyio.Event) -> None:
    async with Client(url, mode="auto") as client:  # type: ignore[arg-type]
        assert client.protocol_version == "2026-07-28"
        async with anyio.create_task_group() as group:

            async def calls() -> None:
                while not stop.is_set():
                    await _timed_call(tally, client.call_tool, _label("stateless"))
                group.cancel_scope.cancel()

            group.start_soon(calls)
            while True:
                # A draining replica ends its listen streams with their closing result:
                # listen again, through the balancer, to another.
                tally.listens += 1
                try:
                    async with client.listen(resource_subscriptions=["replica://counter"]) as sub:
                        async for _ in sub:
                            pass
                except SubscriptionLost as exc:
                    tally.listens_lost.append(f"listen: {exc}"[:300])
                except Exception as exc:
                    tally.listens_lost.append(f"listen: {type(exc).__name__}: {exc}"[:300])


async def _get_stream(url: str, tally: Tally) -> None:
    # A session's GET stream, resumed from its last event id whenever it ends.
    async with httpx.AsyncClient(timeout=httpx.Timeout(TIMEOUT, read=None)) as http:
        session = await open_session(http, url)
        headers = {
            "accept": "text/event-stream",
            "mcp-session-id": session,
            "mcp-protocol-version": SESSION_REVISION,
        }
        with tally.get_scope:
            while True:
                tally.get_streams += 1
                try:
                    async with http.stream("GET", url, headers=headers) as got:
                        if got.status_code != 200:
                            body = (await got.aread())[:300]
                            tally.listens_lost.append(f"GET {got.status_code} {body!r}")
                            return
                        async for line in got.aiter_lines():
                            if line.startswith("id:"):
                                headers["last-event-id"] = line[3:].strip()
                except httpx.HTTPError as exc:
                    tally.listens_lost.append(f"GET stream: {type(exc).__name__}: {exc}"[:300])
                    return
                if "last-event-id" not in headers:
                    tally.listens_lost.append("a GET stream ended before its first event")
                    return


def _p99(seconds: list[float]) -> float:
    ordered = sorted(seconds)
    return ordered[max(0, math.ceil(0.99 * len(ordered)) - 1)] if ordered else math.nan


async def _deploy_under_load(deployed: Deployment) -> tuple[Tally, float, float]:
    tally = Tally()
    stop = anyio.Event()
    url = deployed.url
    async with anyio.create_task_group() as load:
        for _ in range(SESSIONS):
            load.start_soon(_session_calls, url, tally, stop)
        load.start_soon(_progress_calls, url, tally, stop)
        load.start_soon(_tasks, url, tally, stop)
        load.start_soon(_listen_and_call, url, tally, stop)
        load.start_soon(_get_stream, url, tally)
        with anyio.fail_after(TIMEOUT):
            while len(tally.answered) < 20 or not tally.tasks:  # noqa: ASYNC110
                await anyio.sleep(0.05)  # the load warming up
        began = time.monotonic()
        for _ in range(ROUNDS):
            for index in range(len(deployed.replicas)):
                await anyio.to_thread.run_sync(deployed.restart, index)
        ended = time.monotonic()
        stop.set()
        tally.get_scope.cancel()
    return tally, began, ended


@pytest.fixture
def deployed(tmp_path: Path) -> Iterator[Deployment]:
    arguments = ("--drain-delay", DRAIN_DELAY, "--grace", "20")
    with deployment(tmp_path, balancer="haproxy", check="/readyz", arguments=arguments) as running:
        yield running


def test_a_rolling_deploy_under_load_loses_nothing(deployed: Deployment) -> None:
    tally, began, ended = anyio.run(_deploy_under_load, deployed, backend="asyncio")
    during = [seconds for at, seconds in tally.latencies if began <= at <= ended]
    notes = deployed.noted()
    started: dict[str, int] = {}
    finished: set[str] = set()
    for line in notes:
        kind, label, _ = line.split(" ", 2)
        if kind == "started":
            started[label] = started.get(label, 0) + 1
        elif kind == "finished":
            finished.add(label)
    lost = sorted(label for label in tally.sent if label not in finished)
    duplicated = sorted(label for label, runs in started.items() if runs > 1)
    duplicated += sorted(
        label for label, text in tally.answered.items() if not text.startswith(f"{label} slept ")
    )
    print(
        f"\nrolling deploy: {ROUNDS} rounds of {len(deployed.replicas)} restarts in "
        f"{ended - began:.1f} s; {len(tally.answered)} calls answered ({len(during)} during "
        f"the deploy, p99 {_p99(during) * 1000:.0f} ms), {tally.progress_calls} progress "
        f"calls, {tally.tasks} tasks, {tally.listens} listen streams, "
        f"{tally.get_streams} GET streams"
    )
    assert deployed.restarts == [ROUNDS] * len(deployed.replicas)
    report = {
        "requests failed": tally.failed,
        "calls lost": lost,
        "duplicated results": duplicated,
        "streams that did not resume": tally.short_streams + tally.listens_lost,
        "tasks lost": tally.tasks_lost,
    }
    assert {name: len(found) for name, found in report.items()} == dict.fromkeys(report, 0), (
        report,
        deployed.logs(),
    )
    assert during, "no call was answered during the deploy"
    assert tally.listens > 1, "no listen stream was ended by a draining replica"
    assert tally.get_streams > 1, "no GET stream was ended by a draining replica"
