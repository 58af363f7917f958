"""The process's counters: what request actors, sessions and tasks report, bounded labels.

``METRICS`` is one per process and other tests add to it too, so the tests through a
session compare what changed while they ran.
"""

from __future__ import annotations

from typing import Any

import trio
import trio.testing

from mcpactor import RequestError, ToolError
from mcpactor.runtime._metrics import (
    BUCKETS,
    MAX_LABEL,
    MAX_METHODS,
    MAX_NAMES,
    METRICS,
    OTHER,
    Metrics,
)
from mcpactor.server import Server

from .conftest import open_session, tool_text
from .test_tasks import TASKS, create_task, status_of


def _server() -> Server:
    server = Server("metered")

    @server.tool()
    async def nap(seconds: float) -> str:
        """Sleep, then answer."""
        await trio.sleep(seconds)
        return "rested"

    @server.tool()
    async def refuse() -> str:
        """Fail as a tool."""
        raise ToolError("not today")

    @server.tool()
    async def reject() -> str:
        """Fail with a JSON-RPC error of its own."""
        raise RequestError(-32001, "rejected")

    @server.prompt()
    async def crash() -> str:
        """Raise an unexpected exception."""
        raise ZeroDivisionError("boom")

    @server.tool()
    async def forever() -> str:
        """Wait until cancelled."""
        await trio.sleep_forever()
        return "never"

    return server


def _snapshot() -> dict[str, Any]:
    latency = {
        method: (list(counts), total) for method, (counts, total) in METRICS.latency().items()
    }
    return {
        "requests": METRICS.requests(),
        "latency": latency,
        "errors": dict(METRICS.errors),
        "cancellations": dict(METRICS.cancellations),
        "opened": METRICS.sessions_opened,
        "closed": METRICS.sessions_closed,
        "tasks_created": METRICS.tasks_created,
        "tasks_finished": dict(METRICS.tasks_finished),
    }


def _delta(before: dict[Any, int], after: dict[Any, int]) -> dict[Any, int]:
    changed = {key: after[key] - before.get(key, 0) for key in after}
    return {key: count for key, count in changed.items() if count}


async def test_each_request_is_counted_by_method_tool_and_outcome(
    autojump_clock: trio.testing.MockClock,
) -> None:
    before = _snapshot()
    async with open_session(_server()) as h:
        await h.initialize()
        assert tool_text(await h.call_tool("nap", {"seconds": 2})) == "rested"
        assert (await h.call_tool("refuse"))["isError"] is True
        assert (await h.error_of(await h.start_tool("reject")))["code"] == -32001
        crashed = await h.send_request("prompts/get", {"name": "crash"})
        assert (await h.error_of(crashed))["code"] == -32603
        doomed = await h.start_tool("forever")
        await trio.testing.wait_all_tasks_blocked()
        await h.cancel(doomed)
        await h.request("tools/list")
        await h.expect_nothing()
    after = _snapshot()
    assert _delta(before["requests"], after["requests"]) == {
        ("tools/call", "nap", "ok"): 1,
        ("tools/call", "refuse", "error"): 1,
        ("tools/call", "reject", "error"): 1,
        ("prompts/get", "crash", "error"): 1,
        ("tools/call", "forever", "cancelled"): 1,
        ("tools/list", "", "ok"): 1,
    }
    assert _delta(before["errors"], after["errors"]) == {
        ("tools/call", "tool"): 1,
        ("tools/call", "request"): 1,
        ("prompts/get", "internal"): 1,
    }
    assert _delta(before["cancellations"], after["cancellations"]) == {"request": 1}
    # The nap took 2 s of (virtual) time: it is in the bucket up to 2.5 s; the others
    # took none and are in the first.
    counts, total = after["latency"]["tools/call"]
    old_counts, old_total = before["latency"].get("tools/call", ([0] * len(counts), 0.0))
    moved = [new - old for new, old in zip(counts, old_counts, strict=True)]
    assert moved[BUCKETS.index(2.5)] == 1
    assert moved[0] == 3
    assert sum(moved) == 4
    assert total - old_total == 2.0
    # One session opened and closed.
    assert after["opened"] - before["opened"] == 1
    assert after["closed"] - before["closed"] == 1


async def test_tasks_are_counted_by_their_terminal_status(
    autojump_clock: trio.testing.MockClock,
) -> None:
    server = Server("tasked")

    @server.tool(task_support="optional")
    async def slow(seconds: float) -> str:
        """Sleep as a task."""
        await trio.sleep(seconds)
        return "done"

    before = _snapshot()
    async with open_session(server) as h:
        result = await h.initialize("2025-11-25", {"tasks": TASKS})
        assert "tasks" in result["capabilities"]
        finishing = await create_task(h, "slow", {"seconds": 1})
        assert (await status_of(h, finishing["taskId"]))["status"] == "completed"
        cancelled = await create_task(h, "slow", {"seconds": 100})
        await h.request("tasks/cancel", {"taskId": cancelled["taskId"]})
        await trio.testing.wait_all_tasks_blocked()
    after = _snapshot()
    assert after["tasks_created"] - before["tasks_created"] == 2
    assert _delta(before["tasks_finished"], after["tasks_finished"]) == {
        "completed": 1,
        "cancelled": 1,
    }
    assert _delta(before["cancellations"], after["cancellations"]) == {"task": 1}


def test_names_and_methods_from_the_wire_are_bounded_labels() -> None:
    metrics = Metrics()
    for index in range(MAX_NAMES + 50):
        metrics.request_ended("tools/call", {"name": f"tool-{index}"}, "error", 0.0, "request")
    metrics.request_ended("tools/call", {"name": "x" * (MAX_LABEL + 1)}, "ok", 0.0)
    metrics.request_ended("tools/call", {"name": ["not", "a", "name"]}, "ok", 0.0)
    metrics.request_ended("tools/call", {"name": {"a": 1}}, "ok", 0.0)
    for index in range(MAX_METHODS + 10):
        metrics.request_ended(f"made/up/{index}", None, "error", 0.0, "request")
    requests = metrics.requests()
    names = {name for method, name, _ in requests if method == "tools/call"}
    assert len(names) == MAX_NAMES + 1
    assert OTHER in names
    assert requests["tools/call", OTHER, "error"] == 50
    assert requests["tools/call", OTHER, "ok"] == 3
    methods = {method for method, _, _ in requests}
    assert len(methods) == MAX_METHODS + 1
    assert requests[OTHER, "", "error"] == 11  # made/up/63 … made/up/73
    # Every request is counted once, whatever its labels.
    assert sum(requests.values()) == MAX_NAMES + 50 + 3 + MAX_METHODS + 10
    assert sum(metrics.errors.values()) == MAX_NAMES + 50 + MAX_METHODS + 10
    # A name seen once keeps its label: no second series for it.
    metrics.request_ended("tools/call", {"name": "tool-0"}, "error", 0.0, "request")
    assert metrics.requests()["tools/call", "tool-0", "error"] == 2


def test_latency_buckets_hold_what_is_at_most_their_bound() -> None:
    metrics = Metrics()
    for seconds in (0.0, BUCKETS[0], BUCKETS[0] * 1.01, 1.0, 299.0, 301.0, 10_000.0):
        metrics.request_ended("ping", None, "ok", seconds)
    counts, total = metrics.latency()["ping"]
    assert len(counts) == len(BUCKETS) + 1
    assert counts[0] == 2
    assert counts[1] == 1
    assert counts[BUCKETS.index(1.0)] == 1
    assert counts[BUCKETS.index(300.0)] == 1
    assert counts[-1] == 2
    assert total == sum((0.0, BUCKETS[0], BUCKETS[0] * 1.01, 1.0, 299.0, 301.0, 10_000.0))
