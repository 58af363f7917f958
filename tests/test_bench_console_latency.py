"""bench/console_latency.py: the admin console's figures beside the load driver's.

The timing comparison is the script's (its exit status); here, a short real run checks
that the console counts every call the driver made under its tool, and the judging
names what differs.
"""

from __future__ import annotations

import trio

from .bench_scripts import load_bench_script

console_latency = load_bench_script("console_latency.py", "bench_console_latency")


def _figures(console_p95: float | None, console_calls: int = 100) -> dict[str, object]:
    sides = {
        "driver": {"calls": 100, "rate": 10.0, "p50_ms": 1.0, "p95_ms": 2.0, "p99_ms": 3.0},
        "console": {
            "calls": console_calls,
            "rate": 10.0,
            "p50_ms": 1.0,
            "p95_ms": console_p95,
            "p99_ms": 3.0,
        },
    }
    return {"connections": 2, "seconds": 10.0, "errors": 0, "tools": {"echo": sides}}


def test_the_judging_names_a_p95_or_a_count_that_differs() -> None:
    assert console_latency.judged(_figures(2.1), 0.10) == []
    (wrong,) = console_latency.judged(_figures(1.5), 0.10)
    assert wrong.startswith("echo: p95 1.5 ms on the console")
    assert len(console_latency.judged(_figures(None, 99), 0.10)) == 2
    assert "| echo | 100 / 100 |" in console_latency.table(_figures(2.0))


async def test_the_console_counts_every_call_the_driver_made() -> None:
    figures = await trio.to_thread.run_sync(
        lambda: console_latency.asyncio.run(console_latency.measure(2, 1.5))
    )
    assert figures["errors"] == 0
    for tool in ("echo", "sleep"):
        sides = figures["tools"][tool]
        assert sides["driver"]["calls"] > 0
        assert sides["console"]["calls"] == sides["driver"]["calls"], tool
        assert sides["console"]["p95_ms"] is not None
