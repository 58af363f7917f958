"""Rates and latency per tool and per client: what the load sent, read back.

Time is trio's MockClock (``autojump_clock``): a load generator sends calls at known
rates with known durations, and the rates the server kept must match them within
10 % (the issue's bar); nothing depends on how fast the machine is.
"""

from __future__ import annotations

import math
from collections.abc import AsyncIterator
from typing import Any

import pytest
import trio

from mcpactor import Server, ToolError
from mcpactor.client import connect_memory
from mcpactor.protocol import CLIENT_INFO, Request
from mcpactor.runtime import METRICS, Observatory, StatelessHost, StatelessOptions
from mcpactor.runtime._rates import GRID, MAX_CELLS, MAX_CLIENTS, SLOT, SLOTS, Rates, percentile

STATELESS = "2026-07-28"


def make_server() -> Server:
    server = Server("rated", "1.0.0")

    @server.tool()
    async def echo(text: str) -> str:
        """Answer at once."""
        return text

    @server.tool()
    async def slow(seconds: float, fail: bool = False) -> str:
        """Take ``seconds``, then fail if asked."""
        await trio.sleep(seconds)
        if fail:
            raise ToolError("asked to fail")
        return "done"

    return server


@pytest.fixture
async def rates() -> AsyncIterator[Rates]:
    METRICS.keep_history()
    assert METRICS.rates is not None
    try:
        yield METRICS.rates
    finally:
        METRICS.drop_history()


ENVELOPE: dict[str, Any] = {
    "io.modelcontextprotocol/protocolVersion": STATELESS,
    "io.modelcontextprotocol/clientCapabilities": {},
}


async def _nothing(message: Any) -> None:
    pass


async def _load(
    host: StatelessHost,
    client: str,
    tool: str,
    arguments: dict[str, Any],
    every: float,
    until: float,
) -> int:
    # Start one 2026-07-28 call of ``client`` every ``every`` seconds until ``until``.
    meta = {**ENVELOPE, CLIENT_INFO: {"name": client, "version": "1.0"}}
    sent = 0
    async with trio.open_nursery() as nursery:
        while trio.current_time() < until:
            sent += 1
            params = {"name": tool, "arguments": arguments, "_meta": meta}
            nursery.start_soon(
                host.serve, Request(f"{client}-{sent}", "tools/call", params), _nothing
            )
            await trio.sleep(every)
    return sent


def _row(rows: list[dict[str, Any]], **match: Any) -> dict[str, Any]:
    for row in rows:
        if all(row[key] == value for key, value in match.items()):
            return row
    raise AssertionError(f"no row {match} in {rows}")


async def test_rates_and_latency_match_what_the_load_sent(
    autojump_clock: trio.testing.MockClock, rates: Rates
) -> None:
    host = StatelessHost(make_server(), options=StatelessOptions(keepalive=None))
    start = trio.current_time()
    until = start + 90.0
    sent: dict[str, int] = {}

    async def run(key: str, *args: Any) -> None:
        sent[key] = await _load(host, *args)

    async with trio.open_nursery() as nursery:
        # alpha: 20 quick calls a second; beta: 4 calls of 0.2 s and 1 failing call of
        # 0.05 s a second.
        nursery.start_soon(run, "echo", "alpha", "echo", {"text": "hi"}, 0.05, until)
        nursery.start_soon(run, "slow", "beta", "slow", {"seconds": 0.2}, 0.25, until)
        nursery.start_soon(
            run, "fail", "beta", "slow", {"seconds": 0.05, "fail": True}, 1.0, until
        )
    now = trio.current_time()
    read = rates.read(now, window=60.0)
    assert read["window"] == 60.0
    echo = _row(read["tools"], method="tools/call", name="echo")
    slow = _row(read["tools"], method="tools/call", name="slow")
    assert echo["rate"] == pytest.approx(20.0, rel=0.1)
    assert echo["error_rate"] == 0
    assert slow["rate"] == pytest.approx(5.0, rel=0.1)
    assert slow["error_rate"] == pytest.approx(1.0, rel=0.1)
    # Four of five calls of slow take 0.2 s, one 0.05 s: its p50 and p95 are 0.2 s.
    assert slow["p50"] == pytest.approx(0.2, rel=0.1)
    assert slow["p95"] == pytest.approx(0.2, rel=0.1)
    assert slow["p99"] == pytest.approx(0.2, rel=0.1)
    assert len(slow["chart"]) == 60 / SLOT
    # Every whole slot of the window ran at the load's rate.
    assert all(rate == pytest.approx(5.0, rel=0.2) for rate in slow["chart"][:-1])
    by_client = {row["client"]: row for row in read["clients"]}
    assert by_client["alpha 1.0"]["rate"] == pytest.approx(20.0, rel=0.1)
    assert by_client["beta 1.0"]["rate"] == pytest.approx(5.0, rel=0.1)
    assert by_client["beta 1.0"]["error_rate"] == pytest.approx(1.0, rel=0.1)
    # Against what was sent over the whole load, too.
    assert sent["echo"] / 90.0 == pytest.approx(echo["rate"], rel=0.1)


async def test_a_session_s_requests_count_under_its_client(
    autojump_clock: trio.testing.MockClock, rates: Rates
) -> None:
    observatory = Observatory()
    observatory.install()
    info = {"name": "gamma", "version": "3"}
    async with connect_memory(make_server(), initialize=True, client_info=info) as client:
        for _ in range(10):
            await client.call_tool("slow", {"seconds": 1.0})
        read = observatory.rates(window=60.0)
    # Counted before the client was named, named when read.
    row = _row(read["clients"], client="gamma 3")
    assert row["requests"] == 10
    slow = _row(read["tools"], name="slow")
    assert slow["requests"] == 10
    assert slow["p50"] == pytest.approx(1.0, rel=0.1)
    # Ten calls in ten seconds: one a second.
    assert slow["rate"] == pytest.approx(1.0, rel=0.1)
    assert max(slow["chart"]) <= 1.0


async def test_the_window_forgets_what_is_older(
    autojump_clock: trio.testing.MockClock, rates: Rates
) -> None:
    async with connect_memory(make_server(), initialize=True) as client:
        await client.call_tool("echo", {"text": "old"})
        await trio.sleep(120.0)
        await client.call_tool("echo", {"text": "new"})
        now = trio.current_time()
    within = rates.read(now, window=60.0)
    assert _row(within["tools"], name="echo")["requests"] == 1
    longer = rates.read(now, window=300.0)
    assert _row(longer["tools"], name="echo")["requests"] == 2
    later = rates.read(now + SLOT * SLOTS + 1, window=300.0)
    assert later["tools"] == []


def test_memory_is_bounded_whatever_the_wire_sends() -> None:
    bounded = Rates(0.0)
    labels = {bounded.client_label({"name": f"client-{index}"}) for index in range(500)}
    assert len(labels) == MAX_CLIENTS + 1
    assert "other" in labels
    assert bounded.client_label({"name": "x" * 1000}) == "other"
    assert bounded.client_label("not an object") == "unknown"
    bounded.turn(1.0)
    for index in range(MAX_CELLS * 3):
        bounded.cell(("tools/call", f"tool-{index}", "c"))[0] += 1
    assert len(bounded.cells) == MAX_CELLS + 1
    assert bounded.cells["other", "other", "other"][0] == MAX_CELLS * 2
    for step in range(SLOTS * 3):
        bounded.turn(1.0 + step * SLOT)
        bounded.cell(("ping", "", "c"))
    assert len(bounded._past) == SLOTS - 1


def test_percentiles_are_read_within_the_grid_s_step() -> None:
    step = 2 ** (1 / 8)
    for value in (0.00002, 0.0013, 0.2, 3.7, 61.0):
        buckets: dict[int, int] = {}
        import bisect

        buckets[bisect.bisect_left(GRID, value)] = 100
        for fraction in (0.5, 0.95, 0.99):
            found = percentile(buckets, fraction)
            assert found is not None
            assert value / step <= found <= value * step
    assert percentile({}, 0.5) is None
    assert math.isclose(GRID[8] / GRID[0], 2.0)


async def test_a_request_without_a_session_keeps_its_client_and_principal(
    autojump_clock: trio.testing.MockClock, rates: Rates
) -> None:
    host = StatelessHost(make_server(), options=StatelessOptions(keepalive=None))
    meta = {**ENVELOPE, CLIENT_INFO: {"name": "delta", "version": "7"}}
    params = {"name": "slow", "arguments": {"seconds": 0.5}, "_meta": meta}
    await host.serve(Request("d-1", "tools/call", params), _nothing, principal="carol")
    history = METRICS.history
    assert history is not None
    (item,) = [item for item in history.items() if item["request"] == "d-1"]
    assert item["session"] is None
    assert item["client"] == "delta 7"
    assert item["principal"] == "carol"
    assert item["seconds"] == pytest.approx(0.5)
    assert [item["request"] for item in history.items(find="carol")] == ["d-1"]
